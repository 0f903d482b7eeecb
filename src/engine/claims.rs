//! Verdicts on the folklore claims of the catalog: each claim's runs without the tip and with
//! it, judged on the figure the claim is about. The CLI's `claims` report and the page's
//! lessons both judge here, so they cannot disagree on the rule.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::engine::outcome::OutOfMemory;
use crate::engine::phase::Phase;
use crate::engine::strategies::catalog::{Claim, Metric};
use crate::engine::train::{LOSS_READBACK_EVERY, StepRecord, Summary, Timeline};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Holds,
    HoldsPartly,
    DoesNotHoldHere,
    /// The adapter could not run the tip (it fell back); nothing was measured.
    NotRunHere,
    /// A figure the verdict needs was missing.
    NotMeasured,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Holds => "holds",
            Self::HoldsPartly => "holds partly",
            Self::DoesNotHoldHere => "does not hold here",
            Self::NotRunHere => "not run here",
            Self::NotMeasured => "not measured",
        })
    }
}

/// One side's figure: the median of its samples (steps, evaluations or runs) and their spread.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    pub median: f64,
    /// The first and third quartiles of the samples: a difference must exceed their spread.
    pub q1: f64,
    pub q3: f64,
    pub samples: usize,
    /// Runs the samples came from.
    pub runs: usize,
}

impl Measure {
    /// The median and quartiles of `samples` (nearest rank); `None` when there are none.
    pub fn of(mut samples: Vec<f64>, runs: usize) -> Option<Self> {
        samples.retain(|v| v.is_finite());
        if samples.is_empty() {
            return None;
        }
        samples.sort_by(f64::total_cmp);
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Some(Self {
            median: at(0.5),
            q1: at(0.25),
            q3: at(0.75),
            samples: samples.len(),
            runs,
        })
    }

    fn spread(&self) -> f64 {
        self.q3 - self.q1
    }
}

/// A verdict, why, and the figures it was decided on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub verdict: Verdict,
    pub reason: String,
    pub off: Option<Measure>,
    pub on: Option<Measure>,
}

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
        Metric::PeakReserved => steady
            .iter()
            .map(|s| s.high_water.reserved_bytes as f64)
            .collect(),
        Metric::EvalPeak => timeline
            .evals
            .iter()
            .map(|e| e.high_water.in_use_bytes as f64)
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

fn diverged(timelines: &[Timeline]) -> bool {
    timelines.iter().any(|t| {
        samples(t, Metric::FinalLoss, false)
            .iter()
            .any(|l| !l.is_finite())
    })
}

fn measure(timelines: &[Timeline], metric: Metric, on_side: bool) -> Option<Measure> {
    let all = timelines
        .iter()
        .flat_map(|t| samples(t, metric, on_side))
        .collect();
    Measure::of(all, timelines.len())
}

/// A figure in its unit, for a reason line.
fn show(metric: Metric, value: f64) -> String {
    match metric {
        Metric::MsPerStep => format!("{value:.1} ms"),
        Metric::FinalLoss => format!("{value:.4}"),
        _ if value.abs() >= (1u64 << 20) as f64 => {
            format!("{:.2} MiB", value / (1u64 << 20) as f64)
        }
        _ => format!("{:.2} KiB", value / 1024.0),
    }
}

/// Judge `claim` from its runs without the tip (`off`) and with it (`on`), each side's figure
/// taken over its steps (and runs). A verdict needs the difference to exceed the larger side's
/// interquartile spread and 1% of the figure; anything within that is no difference.
pub fn judge(claim: &Claim, off: &[Timeline], on: &[Timeline]) -> Judgement {
    let metric = claim.metric;
    let (a, b) = (measure(off, metric, false), measure(on, metric, true));
    let judged = |verdict, reason: String| Judgement {
        verdict,
        reason,
        off: a.clone(),
        on: b.clone(),
    };
    let fell_back = |side: &[Timeline]| {
        side.iter()
            .find_map(|t| t.summary.fallbacks.first())
            .cloned()
    };
    if let (None, Some(fallback)) = (fell_back(off), fell_back(on)) {
        return judged(Verdict::NotRunHere, fallback.to_string());
    }
    if metric == Metric::FinalLoss && diverged(on) && !diverged(off) {
        let before = a.as_ref().map_or(f64::NAN, |a| a.median);
        return judged(
            Verdict::DoesNotHoldHere,
            format!("final loss {before:.4} -> NaN: training diverged"),
        );
    }
    let (Some(x), Some(y)) = (&a, &b) else {
        return judged(Verdict::NotMeasured, format!("no {} figure", metric.name()));
    };
    let noise = x.spread().max(y.spread()).max(0.01 * x.median.abs());
    let saved = x.median - y.median;
    let figures = format!(
        "{} {} -> {} (spread {} / {}, {} samples a side)",
        metric.name(),
        show(metric, x.median),
        show(metric, y.median),
        show(metric, x.spread()),
        show(metric, y.spread()),
        x.samples.min(y.samples),
    );
    let ratio = if x.median > 0.0 {
        y.median / x.median
    } else {
        f64::INFINITY
    };
    let (mut verdict, mut reason) = if saved.abs() <= noise {
        (
            Verdict::DoesNotHoldHere,
            format!("{figures}: no difference beyond the spread"),
        )
    } else if saved < 0.0 {
        (
            Verdict::DoesNotHoldHere,
            format!("{figures}: worse with the tip"),
        )
    } else if ratio <= claim.holds_at {
        (
            Verdict::Holds,
            format!("{figures}: {ratio:.2}x (needs <= {:.2}x)", claim.holds_at),
        )
    } else {
        (
            Verdict::HoldsPartly,
            format!(
                "{figures}: {ratio:.2}x, less than the {:.2}x claimed",
                claim.holds_at
            ),
        )
    };
    if claim.same_training && verdict == Verdict::Holds {
        let last = |side: &[Timeline]| side.first().and_then(|t| t.summary.final_loss);
        let worse = match (last(off), last(on)) {
            (Some(p), Some(q)) => (q > p * 1.25 + 0.05).then(|| format!("{p:.4} -> {q:.4}")),
            _ => diverged(on).then(|| "NaN: training diverged".to_string()),
        };
        if let Some(worse) = worse {
            verdict = Verdict::HoldsPartly;
            reason = format!("{reason}, but the final loss got worse ({worse})");
        }
    }
    judged(verdict, reason)
}

/// The budget claim: a run given half of what the unbudgeted run reserved at its peak must
/// stop with out-of-memory (`stopped`), and the run after it on the same device must train
/// as before (`after`).
pub fn judge_budget(
    budget_bytes: u64,
    stopped: Option<&OutOfMemory>,
    after: &Summary,
) -> Judgement {
    let (verdict, reason) = match stopped {
        Some(oom) => (
            Verdict::Holds,
            format!(
                "at half its peak reserved the run stopped: {}",
                oom.headline()
            ),
        ),
        None => (
            Verdict::DoesNotHoldHere,
            "the run fit a budget of half its peak".to_string(),
        ),
    };
    Judgement {
        verdict,
        reason: format!(
            "{reason}; the next run trained, high-water {:.2} MiB as before",
            after.high_water_in_use_bytes as f64 / (1u64 << 20) as f64
        ),
        off: Measure::of(vec![budget_bytes as f64], 1),
        on: None,
    }
}
