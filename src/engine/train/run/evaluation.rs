//! Evaluations of the test split during a run, with their memory by category, and the decision
//! grid the page draws behind the 2-D sets.

use web_time::Instant;

use crate::engine::config::InputKind;
use crate::engine::error::EngineError;
use crate::engine::memory::categories;
use crate::engine::memory::{Categories, StepTrace};
use crate::engine::train::records::EvalRecord;

use super::Run;

impl Run {
    /// The evaluation after `step`, and the step's trace with it.
    pub(super) async fn evaluate(
        &mut self,
        step: usize,
    ) -> Result<(EvalRecord, StepTrace), EngineError> {
        let started = Instant::now();
        let done = self.trainer.evaluate(&mut self.ctx).await?;
        let memory = self.ctx.meter.take_step();
        let high_water = memory.step_high_water;
        // The step's record is the last kept (the last record is never thinned).
        let carried = self.steps.last().and_then(|record| record.categories);
        let carried = carried.unwrap_or(Categories {
            parameter: self.setup.parameter,
            ..Categories::default()
        });
        let categories = done.first_batch.map(|batch| {
            categories::of_eval(
                batch.before,
                batch.after_upload,
                batch.with_logits,
                batch.logits_bytes,
                carried,
                high_water.in_use_bytes,
            )
        });
        let record = EvalRecord {
            step,
            loss: done.loss,
            accuracy: done.accuracy,
            ms: started.elapsed().as_secs_f64() * 1e3,
            samples: self.ctx.config.evaluated_samples(self.ctx.data.test.len),
            split_samples: self.ctx.data.test.len,
            memory: done.memory,
            high_water,
            categories,
        };
        Ok((record, memory.trace))
    }

    /// For the 2-D sets: the current model's probability of class 1 on an `n` x `n` grid over
    /// `[-extent, extent]`^2, row by row from the top (y = extent) down. `None` for other data.
    pub async fn decision_grid(
        &mut self,
        n: usize,
        extent: f32,
    ) -> Result<Option<Vec<f32>>, EngineError> {
        if self.ctx.config.data.input_kind() != InputKind::Points || n == 0 {
            return Ok(None);
        }
        let points = grid_points(n, extent);
        let probability = self.trainer.class_one_probability(&self.ctx, points);
        probability.await.map(Some)
    }
}

/// The centres of an `n` x `n` grid over `[-extent, extent]`^2 as (x, y) pairs, row by row from
/// the top (y = extent) down.
fn grid_points(n: usize, extent: f32) -> Vec<f32> {
    let cell = 2.0 * extent / n as f32;
    let mut values = Vec::with_capacity(n * n * 2);
    for row in 0..n {
        for col in 0..n {
            values.push(-extent + (col as f32 + 0.5) * cell);
            values.push(extent - (row as f32 + 0.5) * cell);
        }
    }
    values
}
