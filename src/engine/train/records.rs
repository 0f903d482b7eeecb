//! What a run records: one [`StepRecord`] per step, one [`EvalRecord`] per evaluation, and the
//! [`Summary`] derived from them. Field names are a contract of timeline.json and `--json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::config::{MemorySampling, RunConfig, Strategies};
use crate::engine::device::AdapterInfo;
use crate::engine::memory::{MemoryPrediction, MemoryReading};
use crate::engine::outcome::Fallback;
use crate::engine::phase::Phase;
use crate::engine::strategies::Report;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct StepRecord {
    /// 1-based step number.
    pub step: usize,
    /// Training loss of the step; read back in groups, so `None` until the next readback.
    pub loss: Option<f32>,
    /// Wall time of forward, backward and optimizer (and of the readings in `phase` mode).
    pub ms: f64,
    /// The allocator after each sampled phase.
    pub phases: BTreeMap<Phase, MemoryReading>,
    /// The step's peak in use: the largest of its readings (eval included when it ran), not a
    /// true high-water mark.
    pub peak_in_use_bytes: u64,
    /// The loss scale the step's backward used (`mixed_precision` = `f16` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_scale: Option<f32>,
    /// The loss scaler found inf or NaN in the gradients and skipped the optimizer step.
    #[serde(default)]
    pub skipped: bool,
}

impl StepRecord {
    pub(crate) fn new(step: usize, ms: f64, phases: BTreeMap<Phase, MemoryReading>) -> Self {
        let mut record = Self {
            step,
            loss: None,
            ms,
            phases,
            peak_in_use_bytes: 0,
            loss_scale: None,
            skipped: false,
        };
        record.refresh_peak();
        record
    }

    /// Add a reading taken after the step proper (the evaluation).
    pub(crate) fn add_reading(&mut self, phase: Phase, reading: MemoryReading) {
        self.phases.insert(phase, reading);
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

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct EvalRecord {
    /// The step after which the test split was evaluated.
    pub step: usize,
    pub loss: f32,
    pub accuracy: f32,
    pub ms: f64,
    /// Largest reading over the evaluation batches.
    pub memory: MemoryReading,
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
    pub params: u64,
    pub steps: usize,
    pub first_loss: Option<f32>,
    pub final_loss: Option<f32>,
    /// Accuracy on the test split at the last evaluation (per token for sequence tasks).
    pub eval_accuracy: Option<f32>,
    pub eval_loss: Option<f32>,
    /// Largest in-use reading over all sampled phases: a maximum of samples, not a true
    /// high-water mark (temporaries between two readings are not seen).
    pub peak_in_use_bytes: u64,
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
    /// Median over steps 2.. (the first step compiles kernels).
    pub median_step_ms: f64,
    pub first_step_ms: f64,
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
    /// Bytes `loss_bookkeeping` = `graph` holds on purpose at the end of the run.
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
}

/// What the run measured besides its steps, and what the strategies report.
pub(crate) struct Measured {
    pub report: Report,
    pub activation_layers_in_use: Vec<u64>,
    pub weight_bytes: u64,
    /// In use when the run started.
    pub baseline: MemoryReading,
    pub paged_high_water_bytes: u64,
}

impl Summary {
    pub(crate) fn build(
        config: &RunConfig,
        adapter: &AdapterInfo,
        prediction: &MemoryPrediction,
        steps: &[StepRecord],
        evals: &[EvalRecord],
        measured: Measured,
    ) -> Self {
        let mut by_phase: BTreeMap<Phase, u64> = BTreeMap::new();
        let mut peak = MemoryReading::default();
        let mut most_reserved = MemoryReading::default();
        for record in steps {
            for (&phase, &reading) in &record.phases {
                let slot = by_phase.entry(phase).or_default();
                *slot = (*slot).max(reading.in_use_bytes);
                peak = peak.max(reading);
                if reading.reserved_bytes > most_reserved.reserved_bytes {
                    most_reserved = reading;
                }
            }
        }
        let unused_reserved_fraction = if most_reserved.reserved_bytes == 0 {
            0.0
        } else {
            1.0 - most_reserved.in_use_bytes as f64 / most_reserved.reserved_bytes as f64
        };
        let losses: Vec<f32> = steps.iter().filter_map(|r| r.loss).collect();
        let last_eval = evals.last();
        Self {
            name: config.name.clone(),
            adapter: adapter.clone(),
            params: prediction.param_count,
            steps: steps.len(),
            first_loss: losses.first().copied(),
            final_loss: losses.last().copied(),
            eval_accuracy: last_eval.map(|e| e.accuracy),
            eval_loss: last_eval.map(|e| e.loss),
            peak_in_use_bytes: peak.in_use_bytes,
            peak_reserved_bytes: peak.reserved_bytes,
            peak_padding_bytes: peak.padding_bytes,
            unused_reserved_fraction,
            paged_high_water_bytes: measured.paged_high_water_bytes,
            baseline_in_use_bytes: measured.baseline.in_use_bytes,
            peak_in_use_by_phase: by_phase,
            predicted_peak_bytes: prediction.peak,
            predicted: PredictedBytes {
                params: prediction.params,
                grads: prediction.grads,
                optimizer_state: prediction.optimizer_state,
                activations: prediction.activations,
            },
            median_step_ms: median(steps.iter().skip(1).map(|r| r.ms)),
            first_step_ms: steps.first().map_or(0.0, |r| r.ms),
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

/// Everything a finished run leaves: what timeline.json holds.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Timeline {
    pub summary: Summary,
    pub config: RunConfig,
    pub predicted_layers: Vec<crate::engine::memory::LayerEstimate>,
    pub steps: Vec<StepRecord>,
    pub evals: Vec<EvalRecord>,
}
