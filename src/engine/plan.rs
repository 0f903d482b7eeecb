//! Plans: what the allocator would hold for a config, found by running its first steps under
//! cubecl's dry run (every launch compiled and dropped, pages carved without device memory) on
//! batches of zeros. The pools, burn's fusion and the strategies are the real ones, so the
//! figures are the allocator's own, for models far bigger than this device; nothing is executed,
//! so there are no losses.

pub mod card;
pub mod compare;
pub mod fewest;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use web_time::Instant;

use super::config::RunConfig;
use super::device::{AdapterInfo, Gpu};
use super::error::EngineError;
use super::memory::Categories;
use super::memory::largest::{Oversized, oversized};
use super::models::{RoutedCounts, RoutingSource};
use super::outcome::{Fallback, OutOfMemory, Suggestion};
use super::overrides::apply_overrides;
use super::phase::Phase;
use super::recipe::write_back::{Fitting, Written, write_back};
use super::recipe::{Reading, Recipe};
use super::strategies::weight_dtype::QuantizedWeights;
use super::train::{KeptBytes, PredictedBytes, Run, Timeline};
use super::validate::Purpose;

/// Training steps a plan follows: the optimizer's state first exists in the first, and the
/// second is the steady state every later step repeats. Two evaluation batches follow them (one
/// where the test split is one): a real run's second batch overlaps the first's pending sums.
pub const PLAN_STEPS: usize = 2;

/// What the allocator would hold for a config, and whether that fits its budget.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Plan {
    pub name: String,
    pub adapter: AdapterInfo,
    /// The adapter the planning device modelled: `vramlab plan --model-adapter` of this plan
    /// models it again, so a plan made elsewhere (the page's) can be made here to the byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modelled: Option<crate::engine::device::ModelledAdapter>,
    /// The config as planned: its first [`PLAN_STEPS`] steps and two evaluation batches.
    pub config: RunConfig,
    /// The model's parameters (LoRA adapters not included).
    pub params: u64,
    /// Parameters that train (`strategies.trainable`).
    #[serde(default)]
    pub trainable_params: u64,
    /// Parameters of LoRA adapters.
    #[serde(default)]
    pub adapter_params: u64,
    /// In use once the parameters exist: the weights as stored.
    pub weight_bytes: u64,
    /// `weight_dtype` = `q4` or `q8`: what the quantized base stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantized: Option<QuantizedWeights>,
    /// `gpus` above 1: what this GPU holds of the sharded run; every figure is this GPU's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharded: Option<crate::engine::strategies::sharding::ShardedRun>,
    /// `strategies.offload`: the most bytes one GPU's run holds in host memory, counted as
    /// tensors move there (the host has no pool to read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_bytes: Option<u64>,
    /// The most bytes in use at any kernel launch or check point, training and evaluation.
    pub high_water_in_use_bytes: u64,
    /// The most bytes the pools held (pages carved, none of them backed by device memory).
    pub high_water_reserved_bytes: u64,
    /// Each phase's high-water of bytes in use.
    pub high_water_in_use_by_phase: BTreeMap<Phase, u64>,
    /// The training step with the highest high-water mark, by what held it.
    #[serde(default)]
    pub high_water_by_category: Option<Categories>,
    /// That step's categories at their own sizes (`Summary::category_sizes`).
    #[serde(default)]
    pub category_sizes: Option<Categories>,
    /// Each phase's largest reserved reading at its check points.
    pub reserved_by_phase: BTreeMap<Phase, u64>,
    /// How the high-water figures were taken (see `Summary::high_water_is`).
    pub high_water_is: String,
    /// The analytic model's estimate for the same config, for comparison.
    pub predicted_peak_bytes: u64,
    pub predicted: PredictedBytes,
    /// A mixture of experts: the routing the plan assumed (even, `source` "balanced"), its
    /// passes and the tokens each expert received.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expert_load: Option<crate::engine::models::ExpertLoad>,
    /// The budget in bytes, when one was given.
    pub budget_bytes: Option<u64>,
    /// Whether the plan passed the budget's checks (the same as a run's); `None` without one.
    pub fits: Option<bool>,
    /// Where a run would stop under the budget.
    pub out_of_memory: Option<Box<OutOfMemory>>,
    /// The out-of-memory's suggestions, each planned under the same budget.
    pub suggestions: Vec<CheckedSuggestion>,
    pub fallbacks: Vec<Fallback>,
    /// A transformer's forward pass: what each op leaves for backward (`Summary::kept_by_op`).
    #[serde(default)]
    pub kept_by_op: Vec<KeptBytes>,
    /// Tensors of this config larger than one page of this adapter's pools (its largest
    /// binding): the pools refuse them in a dry run as in a real one, so when this is not
    /// empty the figures leave them out and are a lower bound.
    pub oversized: Vec<Oversized>,
    /// Under a budget it does not fit: the fewest GPUs it fits on at each sharding that applies
    /// to it, each count planned (`plan::fewest`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fewest_gpus: Vec<fewest::FewestGpus>,
    /// Wall time of all the plans this one took (its own and its suggestions').
    pub seconds: f64,
}

/// A suggested change and what its own plan found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckedSuggestion {
    pub suggestion: Suggestion,
    /// The outcome of planning it, or why it could not be planned.
    pub checked: Checked,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Checked {
    /// Planned under the budget: it fits, with this high-water in use and reserved. The budget
    /// holds the pages at the check points (`reserved_at_checks_bytes`, after releasing the
    /// cache when they pass it); between two, the pools may carve pages past it while the live
    /// bytes fit, as an allocator that frees its cache and retries would.
    Fits {
        high_water_in_use_bytes: u64,
        high_water_reserved_bytes: u64,
        #[serde(default)]
        reserved_at_checks_bytes: u64,
    },
    /// Planned under the budget: it still runs out.
    DoesNotFit { out_of_memory: Box<OutOfMemory> },
    /// Not planned: a plan cannot follow it (the reason names the field).
    NotPlanned { reason: String },
}

impl Checked {
    pub fn fits(&self) -> Option<bool> {
        match self {
            Self::Fits { .. } => Some(true),
            Self::DoesNotFit { .. } => Some(false),
            Self::NotPlanned { .. } => None,
        }
    }
}

impl Plan {
    /// `recipe` (read as `reading`, and planned here) written back to fit this plan's budget:
    /// nothing to write when the plan fits as it is, else the first of its suggestions that
    /// fits and that the recipe's format can say, in the order they were tried. The command
    /// line's `--write-recipe` and the page's Export recipe both ask here.
    pub fn write_back(&self, recipe: &Recipe, reading: &Reading) -> Result<WriteBack, String> {
        let budget = self
            .budget_bytes
            .ok_or_else(|| "the plan has no GPU memory to fit".to_string())?;
        if self.fits == Some(true) {
            return Ok(WriteBack::FitsAsItIs { budget });
        }
        let fitting = self
            .suggestions
            .iter()
            .filter_map(|checked| match checked.checked {
                Checked::Fits {
                    high_water_in_use_bytes,
                    ..
                } => Some(Fitting {
                    assignments: checked.suggestion.assignments(),
                    high_water_in_use_bytes,
                }),
                _ => None,
            });
        write_back(recipe, reading, &self.config, budget, fitting).map(WriteBack::Written)
    }
}

/// What a plan writes a recipe back as.
#[derive(Debug)]
pub enum WriteBack {
    /// The plan fits `budget` bytes as the recipe stands: nothing to change.
    FitsAsItIs { budget: u64 },
    /// The recipe with the change that fits.
    Written(Written),
}

/// The config as a plan runs it.
fn planned(config: &RunConfig) -> RunConfig {
    let mut config = config.clone();
    config.steps = PLAN_STEPS;
    config.eval_every = 0;
    config
}

/// Follow `config` to its end under a dry run (`vramlab train --dry-run`, a finder's planned
/// trial); `on_step` hears each step finish.
pub async fn follow(
    config: RunConfig,
    gpu: &Gpu,
    on_step: &mut dyn FnMut(usize),
) -> Result<Timeline, EngineError> {
    follow_routed(config, gpu, on_step, None).await
}

/// [`follow`], a mixture of experts routed as `replayed` (the passes a real run logged, in
/// order) rather than evenly: the plan of that routing.
pub async fn follow_routed(
    config: RunConfig,
    gpu: &Gpu,
    on_step: &mut dyn FnMut(usize),
    replayed: Option<Vec<RoutedCounts>>,
) -> Result<Timeline, EngineError> {
    let mut run = Run::plan(config, gpu)?;
    if let (Some(passes), Some(routing)) = (replayed, run.routing()) {
        routing.set_source(RoutingSource::Replayed(passes));
    }
    while !run.is_finished() {
        run.step().await?;
        on_step(run.steps_done());
    }
    run.finish().await
}

/// Plan `config`: its figures without a budget, then (when it has a budget those figures pass)
/// where a budgeted run would stop, and each suggestion planned under the same budget. `on_step` hears each
/// step of each plan.
pub async fn plan(
    config: &RunConfig,
    gpu: &Gpu,
    mut on_step: impl FnMut(usize),
) -> Result<Plan, EngineError> {
    config.validate_for(Purpose::Plan)?;
    let started = Instant::now();
    let config = planned(config);
    let budget_bytes = config
        .budget
        .map(|budget| budget.bytes(gpu.adapter.max_buffer_size));
    let mut unbounded = config.clone();
    unbounded.budget = None;
    let timeline = follow(unbounded, gpu, &mut on_step).await?;
    let summary = &timeline.summary;
    let mut out_of_memory = None;
    let mut suggestions = Vec::new();
    let within = |budget: u64| {
        summary.high_water_in_use_bytes <= budget && summary.high_water_reserved_bytes <= budget
    };
    let fits = match budget_bytes {
        None => None,
        // Below the budget at every launch, so every check a budgeted run makes passes.
        Some(budget) if within(budget) => Some(true),
        Some(_) => match follow(config.clone(), gpu, &mut on_step).await {
            Ok(_) => Some(true),
            Err(EngineError::OutOfMemory(oom)) => {
                for suggestion in &oom.suggestions {
                    let checked = check(&config, suggestion, gpu, &mut on_step).await?;
                    suggestions.push(CheckedSuggestion {
                        suggestion: suggestion.clone(),
                        checked,
                    });
                }
                out_of_memory = Some(oom);
                Some(false)
            }
            Err(other) => return Err(other),
        },
    };
    let fewest_gpus = match (fits, budget_bytes) {
        (Some(false), Some(budget)) => fewest::search(&config, gpu, budget, &mut on_step).await?,
        _ => Vec::new(),
    };
    Ok(Plan {
        name: config.name.clone(),
        adapter: summary.adapter.clone(),
        modelled: gpu.modelled.clone(),
        params: summary.params,
        trainable_params: summary.trainable_params,
        adapter_params: summary.adapter_params,
        high_water_by_category: summary.high_water_by_category,
        category_sizes: summary.category_sizes,
        weight_bytes: summary.weight_bytes,
        quantized: summary.quantized,
        sharded: summary.sharded,
        host_bytes: summary.host_bytes,
        high_water_in_use_bytes: summary.high_water_in_use_bytes,
        high_water_reserved_bytes: summary.high_water_reserved_bytes,
        high_water_in_use_by_phase: summary.high_water_in_use_by_phase.clone(),
        reserved_by_phase: reserved_by_phase(&timeline),
        high_water_is: summary.high_water_is.clone(),
        predicted_peak_bytes: summary.predicted_peak_bytes,
        predicted: summary.predicted.clone(),
        fallbacks: summary.fallbacks.clone(),
        kept_by_op: summary.kept_by_op.clone(),
        oversized: oversized(&config, &gpu.adapter),
        expert_load: timeline.expert_load.clone(),
        budget_bytes,
        fits,
        out_of_memory,
        suggestions,
        fewest_gpus,
        seconds: started.elapsed().as_secs_f64(),
        config,
    })
}

/// Plan `config` with `suggestion` applied, under the same budget.
async fn check(
    config: &RunConfig,
    suggestion: &Suggestion,
    gpu: &Gpu,
    on_step: &mut dyn FnMut(usize),
) -> Result<Checked, EngineError> {
    let changed = match apply_overrides(
        config.clone(),
        suggestion.assignments().iter().map(String::as_str),
    )
    .and_then(|changed| changed.validate_for(Purpose::Plan).map(|()| changed))
    {
        Ok(changed) => changed,
        Err(err) => {
            return Ok(Checked::NotPlanned {
                reason: err.to_string(),
            });
        }
    };
    match follow(changed, gpu, on_step).await {
        Ok(timeline) => Ok(Checked::Fits {
            high_water_in_use_bytes: timeline.summary.high_water_in_use_bytes,
            high_water_reserved_bytes: timeline.summary.high_water_reserved_bytes,
            reserved_at_checks_bytes: reserved_by_phase(&timeline)
                .into_values()
                .max()
                .unwrap_or(0),
        }),
        Err(EngineError::OutOfMemory(oom)) => Ok(Checked::DoesNotFit { out_of_memory: oom }),
        Err(other) => Err(other),
    }
}

fn reserved_by_phase(timeline: &Timeline) -> BTreeMap<Phase, u64> {
    let mut by_phase = BTreeMap::new();
    for step in &timeline.steps {
        for (phase, reading) in &step.phases {
            let largest = by_phase.entry(*phase).or_insert(0);
            *largest = (*largest).max(reading.reserved_bytes);
        }
    }
    by_phase
}
