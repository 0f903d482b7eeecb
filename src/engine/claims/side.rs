//! One side of a claim as a verdict reads it: each figure the claim names, taken per step (or
//! per evaluation, or per run) over the side's runs, and what says whether the tip ran and
//! trained. Judging reads only a [`Side`], so a verdict can be tested on figures staged by hand.

use crate::engine::phase::Phase;
use crate::engine::strategies::catalog::{Claim, Metric};
use crate::engine::train::{LOSS_READBACK_EVERY, StepRecord, Timeline};

use super::Measure;

/// The training losses of the last this many steps judge a claim about training quality.
const LAST_LOSSES: usize = 10;

/// A metric's samples from one run. `on_side` picks the int8 copy over the weights.
pub fn samples(timeline: &Timeline, metric: Metric, on_side: bool) -> Vec<f64> {
    let summary = &timeline.summary;
    // The first step creates the optimizer's state; the steps after it are alike.
    let steady = match timeline.steps.get(1..) {
        Some(rest) if !rest.is_empty() => rest,
        _ => &timeline.steps,
    };
    let end_in_use = |s: &StepRecord| s.phases.get(&Phase::Optimizer).map(|r| r.in_use_bytes);
    match metric {
        Metric::PeakInUse | Metric::StopsUnderBudget => steady
            .iter()
            .map(|s| s.high_water.in_use_bytes as f64)
            .collect(),
        Metric::Activations => steady
            .iter()
            .filter_map(|s| s.category_sizes)
            .map(|c| c.activation as f64)
            .collect(),
        Metric::PeakReserved => steady
            .iter()
            .map(|s| s.high_water.reserved_bytes as f64)
            .collect(),
        Metric::EvalPeak => timeline
            .evals
            .iter()
            .map(|e| e.high_water.in_use_bytes as f64)
            .collect(),
        Metric::EvalAccuracy => timeline
            .evals
            .iter()
            .map(|e| f64::from(e.accuracy))
            .collect(),
        Metric::WeightBytes => vec![summary.weight_bytes as f64],
        Metric::EvalWeightBytes if on_side => summary
            .eval_weight_bytes
            .map(|b| b as f64)
            .into_iter()
            .collect(),
        Metric::EvalWeightBytes => vec![summary.weight_bytes as f64],
        Metric::MsPerStep => steady.iter().map(|s| s.ms).collect(),
        Metric::FinalLoss => {
            let from = timeline.steps.len().saturating_sub(LAST_LOSSES);
            // A NaN loss is written as null: it stays NaN here, and counts as diverged.
            timeline.steps[from..]
                .iter()
                .map(|s| s.loss.map_or(f64::NAN, f64::from))
                .collect()
        }
        Metric::GrowthPerStep => {
            // Losses wait for their readback in groups, a sawtooth in the bytes in use: compare
            // steps a whole group apart, so only what stays grows.
            let ends: Vec<u64> = steady.iter().filter_map(end_in_use).collect();
            let apart = LOSS_READBACK_EVERY;
            ends.iter()
                .zip(ends.iter().skip(apart))
                .map(|(&early, &late)| (late as f64 - early as f64) / apart as f64)
                .collect()
        }
        Metric::TrainingState => steady
            .iter()
            .filter_map(|s| s.category_sizes)
            .map(|c| (c.gradient + c.optimizer_state) as f64)
            .collect(),
        Metric::OptimizerState => {
            let weights = (summary.weight_bytes + summary.baseline_in_use_bytes) as f64;
            steady
                .iter()
                .filter_map(end_in_use)
                .map(|end| end as f64 - weights)
                .collect()
        }
    }
}

/// One side's runs as a verdict reads them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Side {
    /// Each figure the claim names (its metric, then its parts'), over the side's runs; one the
    /// runs did not record is left out.
    pub figures: Vec<(Metric, Measure)>,
    /// What the side's runs could not run on this adapter and ran instead (each fallback once,
    /// in the order met): the tip's own (f16 without shader-f16), or the bench's (the pools a
    /// WebGPU device cannot carve), which both sides then share.
    pub fallbacks: Vec<String>,
    /// A training loss of the last steps was not finite.
    pub diverged: bool,
    /// The first run's final training loss.
    pub final_loss: Option<f32>,
    /// The first run's sequence length, and its activations at the high-water mark: how
    /// activations grow with the sequence, where two sides differ in it.
    pub seq_len: usize,
    pub high_water_activation: Option<u64>,
}

impl Side {
    /// The figures `claim` names from `runs`; `on_side` picks the int8 copy over the weights.
    pub fn of(claim: &Claim, runs: &[Timeline], on_side: bool) -> Self {
        let figures = claim
            .metrics()
            .filter_map(|metric| {
                let all = runs
                    .iter()
                    .flat_map(|t| samples(t, metric, on_side))
                    .collect();
                Measure::of(all, runs.len()).map(|m| (metric, m))
            })
            .collect();
        let first = runs.first();
        Self {
            figures,
            fallbacks: runs
                .iter()
                .flat_map(|t| t.summary.fallbacks.iter().map(ToString::to_string))
                .fold(Vec::new(), |mut seen, fallback| {
                    if !seen.contains(&fallback) {
                        seen.push(fallback);
                    }
                    seen
                }),
            diverged: runs.iter().any(|t| {
                samples(t, Metric::FinalLoss, false)
                    .iter()
                    .any(|l| !l.is_finite())
            }),
            final_loss: first.and_then(|t| t.summary.final_loss),
            seq_len: first.map_or(0, |t| t.config.data.seq_len),
            high_water_activation: first
                .and_then(|t| t.summary.high_water_by_category)
                .map(|c| c.activation),
        }
    }

    /// The side's figure for `metric`, if its runs recorded one.
    pub fn figure(&self, metric: Metric) -> Option<&Measure> {
        self.figures
            .iter()
            .find(|(m, _)| *m == metric)
            .map(|(_, measure)| measure)
    }
}
