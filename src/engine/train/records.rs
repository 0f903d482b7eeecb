//! What a run records: one [`StepRecord`] per step, one [`EvalRecord`] per evaluation, and the
//! [`Summary`] derived from them. Field names are a contract of timeline.json and `--json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::config::{MemorySampling, RunConfig, Strategies};
use crate::engine::data::TableSummary;
use crate::engine::device::AdapterInfo;
use crate::engine::memory::meter::StepMemory;
use crate::engine::memory::{Categories, HighWater, MemoryPrediction, MemoryReading, StepTrace};
use crate::engine::models::Op;
use crate::engine::outcome::Fallback;
use crate::engine::phase::Phase;
use crate::engine::strategies::Report;
use crate::engine::strategies::trainable::ParamCounts;
use crate::engine::strategies::weight_dtype::QuantizedWeights;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StepRecord {
    /// 1-based step number.
    pub step: usize,
    /// Training loss of the step; read back in groups, so `None` until the next readback.
    pub loss: Option<f32>,
    /// Wall time of forward, backward and optimizer (and of the readings in `phase` mode).
    pub ms: f64,
    /// Each sampled phase's largest allocator reading at its check points.
    pub phases: BTreeMap<Phase, MemoryReading>,
    /// The largest of the step's readings (eval included when it ran): what a reading at each
    /// check point saw, not the high-water mark.
    pub peak_in_use_bytes: u64,
    /// The most the allocator held during the step (eval included when it ran), between and at
    /// its check points (see `Summary::high_water_is`).
    pub high_water: HighWater,
    /// Each phase's high-water mark, for the phases check points bound: all of them with
    /// per-phase sampling, the evaluation always.
    pub phase_high_water: BTreeMap<Phase, HighWater>,
    /// The loss scale the step's backward used (`mixed_precision` = `f16` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_scale: Option<f32>,
    /// The loss scaler found inf or NaN in the gradients and skipped the optimizer step.
    #[serde(default)]
    pub skipped: bool,
    /// The training step's high-water mark by what held it (see `memory::categories`); `None`
    /// when no check point inside the step was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categories: Option<Categories>,
    /// Each category's own size in the step, where it was largest (see
    /// `memory::categories::sizes_of_step`): what a frozen weight's missing gradient or a smaller
    /// optimizer's state saves, even where the high-water mark does not see it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category_sizes: Option<Categories>,
    /// Kernels the training step compiled (upload, forward, backward and optimizer; not the
    /// loss read-back or the evaluation after it), as cubecl counts its compilations
    /// (process-wide: nothing else compiles while a run steps).
    #[serde(default)]
    pub kernels_compiled: usize,
}

impl StepRecord {
    pub(crate) fn new(step: usize, ms: f64, memory: StepMemory) -> Self {
        let mut record = Self {
            step,
            loss: None,
            ms,
            phases: memory.readings,
            peak_in_use_bytes: 0,
            high_water: memory.step_high_water,
            phase_high_water: memory.high_water,
            loss_scale: None,
            skipped: false,
            categories: None,
            category_sizes: None,
            kernels_compiled: 0,
        };
        record.refresh_peak();
        record
    }

    /// Add the evaluation that ended the step: its largest reading and its high-water mark.
    pub(crate) fn add_eval(&mut self, reading: MemoryReading, high_water: HighWater) {
        self.phases.insert(Phase::Eval, reading);
        self.phase_high_water.insert(Phase::Eval, high_water);
        self.high_water = self.high_water.max(high_water);
        self.refresh_peak();
    }

    fn refresh_peak(&mut self) {
        self.peak_in_use_bytes = self
            .phases
            .values()
            .map(|r| r.in_use_bytes)
            .max()
            .unwrap_or(0);
    }
}

/// JSON has no NaN: serde_json writes it as `null`, so read `null` back as NaN.
fn nan_from_null<'de, D: serde::Deserializer<'de>>(reader: D) -> Result<f32, D::Error> {
    Option::<f32>::deserialize(reader).map(|value| value.unwrap_or(f32::NAN))
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct EvalRecord {
    /// The step after which the test split was evaluated.
    pub step: usize,
    /// NaN when training diverged (written as `null`).
    #[serde(deserialize_with = "nan_from_null")]
    pub loss: f32,
    #[serde(deserialize_with = "nan_from_null")]
    pub accuracy: f32,
    pub ms: f64,
    /// Test samples this evaluation read (`eval_batches` bounds them), of `split_samples`.
    #[serde(default)]
    pub samples: usize,
    #[serde(default)]
    pub split_samples: usize,
    /// Largest reading over the evaluation batches.
    pub memory: MemoryReading,
    /// The most the allocator held while evaluating.
    pub high_water: HighWater,
    /// The evaluation's high-water mark by what held it, from its first batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub categories: Option<Categories>,
}

/// Bytes by category, as the analytic model predicts them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PredictedBytes {
    pub params: u64,
    pub grads: u64,
    pub optimizer_state: u64,
    pub activations: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    pub name: String,
    pub adapter: AdapterInfo,
    /// The model's parameters, counted from its tensors (LoRA adapters not included).
    pub params: u64,
    /// Parameters that train: get a gradient and optimizer state (`strategies.trainable`).
    #[serde(default)]
    pub trainable_params: u64,
    /// Parameters of LoRA adapters (`strategies.trainable` = `lora`).
    #[serde(default)]
    pub adapter_params: u64,
    pub steps: usize,
    pub first_loss: Option<f32>,
    pub final_loss: Option<f32>,
    /// Accuracy on the test split at the last evaluation (per token for sequence tasks).
    pub eval_accuracy: Option<f32>,
    pub eval_loss: Option<f32>,
    /// The test samples the last evaluation read (`eval_batches`), of the split's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval_coverage: Option<EvalCoverage>,
    /// Largest in-use reading over all sampled phases: a maximum of samples, not the
    /// high-water mark (temporaries between two readings are not seen).
    pub peak_in_use_bytes: u64,
    /// The most bytes in use the allocator held over the run, training and evaluation: see
    /// `high_water_is` for how it was read.
    pub high_water_in_use_bytes: u64,
    /// The most bytes the allocator's pools held over the run.
    pub high_water_reserved_bytes: u64,
    /// Each phase's high-water of bytes in use, over the steps whose check points bound it.
    pub high_water_in_use_by_phase: BTreeMap<Phase, u64>,
    /// How the high-water figures were taken: at every kernel launch, or (where the device has
    /// no launch observer) the largest reading.
    pub high_water_is: String,
    /// Largest reserved reading over all sampled phases.
    pub peak_reserved_bytes: u64,
    /// Largest padding inside live allocations over the readings.
    pub peak_padding_bytes: u64,
    /// At the reading with the most reserved: the share of reserved bytes not in use. cubecl
    /// does not expose its free blocks, so this stands in for a fragmentation figure (it
    /// counts cached pages as well as holes).
    pub unused_reserved_fraction: f64,
    /// cubecl's own page high-water mark, summed over pools (see `sampler`).
    pub paged_high_water_bytes: u64,
    /// In use when the run started, before its model existed.
    pub baseline_in_use_bytes: u64,
    pub peak_in_use_by_phase: BTreeMap<Phase, u64>,
    pub predicted_peak_bytes: u64,
    pub predicted: PredictedBytes,
    /// Median over steps 2.. (the first step compiles kernels) of each step's `ms`: to the
    /// step's end-of-step sync natively, to its queueing in the browser.
    pub median_step_ms: f64,
    /// Median ms per step of finished work, timed between awaited loss readbacks (see
    /// `train::pace`); `None` when the run had fewer than two readbacks.
    #[serde(default)]
    pub completed_step_ms: Option<f64>,
    pub first_step_ms: f64,
    /// Where the run's wall time went.
    #[serde(default)]
    pub wall: WallTime,
    pub memory_sampling: MemorySampling,
    pub peak_is: String,
    /// The strategies the run had on, as configured.
    pub strategies: Strategies,
    /// Each configured strategy that could not run as asked, and why (empty when all did).
    pub fallbacks: Vec<Fallback>,
    /// The loss scaler's scale at the end (`mixed_precision` = `f16` only).
    pub loss_scale: Option<f32>,
    /// Steps the loss scaler skipped because a gradient was inf or NaN.
    pub skipped_steps: usize,
    /// Bytes `loss_bookkeeping` = `outputs` holds on purpose at the end of the run.
    pub leaked_bytes: u64,
    /// Per activated layer, in use right after its activation in a no-grad forward pass of
    /// one training batch, minus in use before that pass (MLP and CNN; see
    /// `strategies::inplace_activation`).
    pub activation_layers_in_use: Vec<u64>,
    /// In use once the parameters exist, minus the baseline: the weights as stored.
    #[serde(default)]
    pub weight_bytes: u64,
    /// `weight_dtype` = `int8`: bytes of the quantized copy the last evaluation ran on.
    #[serde(default)]
    pub eval_weight_bytes: Option<u64>,
    /// `weight_dtype` = `q4` or `q8`: what the quantized base stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantized: Option<QuantizedWeights>,
    /// `gpus` above 1: what this GPU holds of the sharded run (every figure is this GPU's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharded: Option<crate::engine::strategies::sharding::ShardedRun>,
    /// `strategies.offload`: the most bytes this GPU's run held in host memory, counted as
    /// tensors moved there (not an allocator's figure: the host has no cubecl pool).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_bytes: Option<u64>,
    /// The training step with the highest high-water mark, by what held it.
    #[serde(default)]
    pub high_water_by_category: Option<Categories>,
    /// The same step's categories at their own sizes (see `StepRecord::category_sizes`): the
    /// gradients and optimizer state whole, where the high-water mark came before them.
    #[serde(default)]
    pub category_sizes: Option<Categories>,
    /// A transformer's training forward pass: the bytes it leaves for backward, by the op that
    /// made them, largest first (allocator readings after each op of one forward pass over a
    /// training batch, through autodiff). Empty for other models.
    #[serde(default)]
    pub kept_by_op: Vec<KeptBytes>,
    /// A run on a user's table: the file (name, size, SHA-256), its classes and how each
    /// feature was standardised. `None` for the built-in sets.
    #[serde(default)]
    pub table: Option<TableSummary>,
}

/// How much of the test split an evaluation read.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct EvalCoverage {
    pub samples: usize,
    pub split_samples: usize,
}

/// A run's wall time by what it was spent on, in milliseconds. Kernels compile when a shape
/// first runs: mostly in the first step, some in the second (the optimizer's first update)
/// and in the first evaluation; no figure here isolates them.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct WallTime {
    /// Generating the data, building and uploading the model, the strategies' set-up.
    pub setup_ms: f64,
    /// The first step: where most kernels compile.
    pub first_step_ms: f64,
    /// Every later step (the readings `memory_sampling` takes included).
    pub later_steps_ms: f64,
    /// Every evaluation of the test split.
    pub eval_ms: f64,
    /// The end: losses still pending read back, and the probes the summary needs.
    pub finish_ms: f64,
}

/// Bytes an op left alive for backward.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct KeptBytes {
    pub op: Op,
    pub bytes: u64,
}

/// What the run measured besides its steps, and what the strategies report.
pub(crate) struct Measured {
    pub report: Report,
    /// Whether the high-water marks were read at every kernel launch.
    pub launches_watched: bool,
    pub completed_step_ms: Option<f64>,
    pub activation_layers_in_use: Vec<u64>,
    pub kept_by_op: Vec<(Op, u64)>,
    pub weight_bytes: u64,
    /// In use when the run started.
    pub baseline: MemoryReading,
    pub paged_high_water_bytes: u64,
}

/// What the summary needs of the step records, folded one record at a time in step order. A run
/// folds each record once it is final (its loss read back, its evaluation added), so a front may
/// drop records it has drawn (`Run::thin_records`) without changing any figure of the summary.
#[derive(Clone, Debug, Default)]
pub(crate) struct StepFigures {
    steps: usize,
    by_phase: BTreeMap<Phase, u64>,
    high_water_by_phase: BTreeMap<Phase, u64>,
    high_water: HighWater,
    peak: MemoryReading,
    most_reserved: MemoryReading,
    first_loss: Option<f32>,
    final_loss: Option<f32>,
    /// The training step with the highest high-water mark by category (the last of equals).
    highest: Option<(Categories, Option<Categories>)>,
    first_step_ms: f64,
    /// Every step's `ms` but the first's (8 bytes a step), for the median.
    later_ms: Vec<f64>,
}

impl StepFigures {
    /// How many steps' records were folded: the first this many.
    pub(crate) fn steps(&self) -> usize {
        self.steps
    }

    /// Fold the next step's final record.
    pub(crate) fn add(&mut self, record: &StepRecord) {
        self.steps += 1;
        self.high_water = self.high_water.max(record.high_water);
        for (&phase, mark) in &record.phase_high_water {
            let slot = self.high_water_by_phase.entry(phase).or_default();
            *slot = (*slot).max(mark.in_use_bytes);
        }
        for (&phase, &reading) in &record.phases {
            let slot = self.by_phase.entry(phase).or_default();
            *slot = (*slot).max(reading.in_use_bytes);
            self.peak = self.peak.max(reading);
            if reading.reserved_bytes > self.most_reserved.reserved_bytes {
                self.most_reserved = reading;
            }
        }
        if let Some(loss) = record.loss {
            self.first_loss.get_or_insert(loss);
            self.final_loss = Some(loss);
        }
        if let Some(categories) = record.categories {
            // `>=`: the last of equal totals, as `Iterator::max_by_key` picks.
            if self
                .highest
                .is_none_or(|(best, _)| categories.total() >= best.total())
            {
                self.highest = Some((categories, record.category_sizes));
            }
        }
        if self.steps == 1 {
            self.first_step_ms = record.ms;
        } else {
            self.later_ms.push(record.ms);
        }
    }
}

impl Summary {
    pub(crate) fn build(
        config: &RunConfig,
        adapter: &AdapterInfo,
        prediction: &MemoryPrediction,
        figures: &StepFigures,
        evals: &[EvalRecord],
        measured: Measured,
    ) -> Self {
        let most_reserved = figures.most_reserved;
        let peak = figures.peak;
        let high_water = figures.high_water;
        let unused_reserved_fraction = if most_reserved.reserved_bytes == 0 {
            0.0
        } else {
            1.0 - most_reserved.in_use_bytes as f64 / most_reserved.reserved_bytes as f64
        };
        let last_eval = evals.last();
        let params = measured.report.params.unwrap_or(ParamCounts {
            model: prediction.param_count,
            trainable: prediction.param_count,
            adapters: 0,
            trainable_tensors: 0,
        });
        Self {
            name: config.name.clone(),
            adapter: adapter.clone(),
            params: params.model,
            trainable_params: params.trainable,
            adapter_params: params.adapters,
            steps: figures.steps,
            first_loss: figures.first_loss,
            final_loss: figures.final_loss,
            eval_accuracy: last_eval.map(|e| e.accuracy),
            eval_loss: last_eval.map(|e| e.loss),
            eval_coverage: last_eval.map(|e| EvalCoverage {
                samples: e.samples,
                split_samples: e.split_samples,
            }),
            peak_in_use_bytes: peak.in_use_bytes,
            high_water_in_use_bytes: high_water.in_use_bytes,
            high_water_reserved_bytes: high_water.reserved_bytes,
            high_water_in_use_by_phase: figures.high_water_by_phase.clone(),
            high_water_is: if measured.launches_watched {
                "the allocator read at every kernel launch and check point (misses only an \
                 allocation freed before any later launch)"
            } else {
                "the largest reading (step sampling without a budget does not read at every launch)"
            }
            .into(),
            peak_reserved_bytes: peak.reserved_bytes,
            peak_padding_bytes: peak.padding_bytes,
            unused_reserved_fraction,
            paged_high_water_bytes: measured.paged_high_water_bytes,
            baseline_in_use_bytes: measured.baseline.in_use_bytes,
            peak_in_use_by_phase: figures.by_phase.clone(),
            predicted_peak_bytes: prediction.peak,
            predicted: PredictedBytes {
                params: prediction.params,
                grads: prediction.grads,
                optimizer_state: prediction.optimizer_state,
                activations: prediction.activations,
            },
            median_step_ms: median(figures.later_ms.iter().copied()),
            completed_step_ms: measured.completed_step_ms,
            first_step_ms: figures.first_step_ms,
            // Set by the run, which timed its set-up and its end.
            wall: WallTime {
                first_step_ms: figures.first_step_ms,
                later_steps_ms: figures.later_ms.iter().sum(),
                eval_ms: evals.iter().map(|eval| eval.ms).sum(),
                ..WallTime::default()
            },
            memory_sampling: config.memory_sampling,
            peak_is: match config.memory_sampling {
                MemorySampling::Phase => "largest allocator reading after each phase of each step",
                MemorySampling::Step => "largest allocator reading at the end of each step",
            }
            .into(),
            strategies: config.strategies.clone(),
            fallbacks: measured.report.fallbacks,
            loss_scale: measured.report.loss_scale,
            skipped_steps: measured.report.skipped_steps,
            leaked_bytes: measured.report.leaked_bytes,
            activation_layers_in_use: measured.activation_layers_in_use,
            weight_bytes: measured.weight_bytes,
            eval_weight_bytes: measured.report.eval_weight_bytes,
            quantized: measured.report.quantized,
            sharded: measured.report.sharded,
            host_bytes: measured.report.host_bytes,
            high_water_by_category: figures.highest.map(|(categories, _)| categories),
            category_sizes: figures.highest.and_then(|(_, sizes)| sizes),
            kept_by_op: measured
                .kept_by_op
                .into_iter()
                .map(|(op, bytes)| KeptBytes { op, bytes })
                .collect(),
            // Set by the run, which holds the data set.
            table: None,
        }
    }
}

fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// Steps `first..=last`, 1-based.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct StepRange {
    pub first: usize,
    pub last: usize,
}

impl StepRange {
    /// How many steps the range holds.
    pub fn count(&self) -> usize {
        self.last + 1 - self.first
    }
}

/// Everything a finished run leaves: what timeline.json holds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Timeline {
    pub summary: Summary,
    pub config: RunConfig,
    pub predicted_layers: Vec<crate::engine::memory::LayerEstimate>,
    /// The steps' records, but for those in `steps_left_out`.
    pub steps: Vec<StepRecord>,
    /// Steps whose records the page dropped once its charts had drawn them (`Run::thin_records`,
    /// runs past [`crate::engine::train::KEEP_RECORDS_WHOLE`] steps); the summary counts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps_left_out: Option<StepRange>,
    pub evals: Vec<EvalRecord>,
    /// The memory of the last step (its evaluation included), at most
    /// [`crate::engine::memory::trace::MAX_TRACE_POINTS`] points.
    #[serde(default)]
    pub one_step: Option<StepTrace>,
    /// A mixture of experts: the tokens its routing sent each expert (measured in a real run,
    /// assumed in a plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expert_load: Option<crate::engine::models::ExpertLoad>,
}

impl Timeline {
    /// Read a run exported as JSON (timeline.json, the page's export), naming the field where
    /// the text is not one.
    pub fn from_json(text: &str) -> Result<Self, String> {
        let mut de = serde_json::Deserializer::from_str(text);
        serde_path_to_error::deserialize(&mut de).map_err(|err| {
            let path = err.path().to_string();
            match path.as_str() {
                "" | "." => err.into_inner().to_string(),
                _ => format!("{path}: {}", err.into_inner()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_import_names_the_field() {
        let err = Timeline::from_json(r#"{"summary": {"name": 3}}"#).unwrap_err();
        assert!(err.starts_with("summary.name: invalid type"), "{err}");
        let err = Timeline::from_json("3").unwrap_err();
        assert!(err.starts_with("invalid type: integer"), "{err}");
    }

    #[test]
    fn a_diverged_evaluation_round_trips_through_json() {
        let eval = EvalRecord {
            step: 3,
            loss: f32::NAN,
            accuracy: 0.5,
            ms: 1.0,
            samples: 8,
            split_samples: 1024,
            memory: MemoryReading::default(),
            high_water: HighWater::default(),
            categories: None,
        };
        let json = serde_json::to_string(&eval).unwrap();
        assert!(json.contains("\"loss\":null"), "{json}");
        let back: EvalRecord = serde_json::from_str(&json).unwrap();
        assert!(back.loss.is_nan());
        assert_eq!(back.accuracy, 0.5);
    }
}
