//! The analytic estimate (`memory::analytic`) set against a plan, category by category: the
//! comparison `vramlab bench-analytic` prints for its grid and the suite holds for small shapes.
//! It sits beside `plan`, above `memory`, because it needs both.

use super::config::RunConfig;
use super::device::Gpu;
use super::error::EngineError;
use super::memory::predict;
use super::plan::{self, PLAN_STEPS};

/// A predicted figure within this share of the planned one counts as agreeing.
pub const TOLERANCE: f64 = 0.10;

/// Planned figures below this are reported but not compared: the check points' differences carry
/// a few KiB of the step's own scalars (a frozen body's gradient reads 64 B for 2 KiB).
pub const SMALLEST_COMPARED: u64 = 64 << 10;

/// One category's estimate beside the plan's figure for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Figure {
    pub category: &'static str,
    pub predicted: u64,
    pub planned: u64,
}

impl Figure {
    /// Estimate over plan.
    pub fn ratio(&self) -> f64 {
        self.predicted as f64 / self.planned.max(1) as f64
    }

    /// Whether the planned figure is large enough to compare (see [`SMALLEST_COMPARED`]).
    pub fn compared(&self) -> bool {
        self.planned >= SMALLEST_COMPARED
    }

    /// Whether the estimate is within [`TOLERANCE`] of the plan.
    pub fn agrees(&self) -> bool {
        (self.ratio() - 1.0).abs() <= TOLERANCE
    }
}

/// Plan `config`'s first [`PLAN_STEPS`] steps and an evaluation on `planner`, and set beside the
/// estimate: the second step's parameter, optimizer state and activation categories (the steady
/// step), the gradients as read after backward, the evaluation's high-water mark and the run's.
pub async fn against_plan(
    mut config: RunConfig,
    planner: &Gpu,
) -> Result<Vec<Figure>, EngineError> {
    config.steps = PLAN_STEPS;
    config.eval_every = 0;
    let predicted = predict(&config);
    let timeline = plan::follow(config, planner, &mut |_| {}).await?;
    let second = &timeline.steps[PLAN_STEPS - 1];
    // A plan reads every check point, so each step has its categories.
    let planned = second.categories.expect("a plan reads every check point");
    // The gradients as read after backward: the stacked category is cut at the high-water
    // mark, which backward reaches before every gradient exists when activations dominate
    // (GPT-2 small), or which a frozen body's few gradients come after.
    let gradients = second
        .category_sizes
        .expect("a plan reads every check point")
        .gradient;
    let eval = timeline
        .evals
        .last()
        .map_or(0, |eval| eval.high_water.in_use_bytes);
    let figure = |category, predicted, planned| Figure {
        category,
        predicted,
        planned,
    };
    Ok(vec![
        figure("parameter", predicted.params, planned.parameter),
        figure(
            "optimizer_state",
            predicted.optimizer_state,
            planned.optimizer_state,
        ),
        figure("activation", predicted.activations, planned.activation),
        figure("gradient", predicted.grads, gradients),
        figure(
            "eval",
            predicted.params
                + predicted.optimizer_state
                + predicted.eval_batch
                + predicted.eval_resident,
            eval,
        ),
        figure(
            "peak",
            predicted.peak,
            timeline.summary.high_water_in_use_bytes,
        ),
    ])
}
