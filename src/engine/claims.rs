//! Verdicts on the folklore claims of the catalog: each claim's runs without the tip and with
//! it, judged on the figure the claim is about. The CLI's `claims` report and the page's
//! lessons both judge here, so they cannot disagree on the rule.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::engine::outcome::OutOfMemory;
use crate::engine::phase::Phase;
use crate::engine::strategies::catalog::{Claim, Metric};
use crate::engine::train::Summary;

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

/// A verdict, why, and the figures it was decided on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub verdict: Verdict,
    pub reason: String,
    pub metric_off: Option<f64>,
    pub metric_on: Option<f64>,
}

/// The figure `metric` reads from a run; `on_side` picks the int8 copy over the weights.
pub fn metric(summary: &Summary, metric: Metric, on_side: bool) -> Option<f64> {
    let bytes = |b: u64| Some(b as f64);
    match metric {
        Metric::PeakInUse | Metric::StopsUnderBudget => bytes(summary.peak_in_use_bytes),
        Metric::PeakReserved => bytes(summary.peak_reserved_bytes),
        Metric::EvalPeak => summary
            .peak_in_use_by_phase
            .get(&Phase::Eval)
            .and_then(|&b| bytes(b)),
        Metric::WeightBytes => bytes(summary.weight_bytes),
        Metric::EvalWeightBytes if on_side => summary.eval_weight_bytes.and_then(bytes),
        Metric::EvalWeightBytes => bytes(summary.weight_bytes),
        Metric::MsPerStep => Some(summary.median_step_ms),
        Metric::FinalLoss => summary.final_loss.map(f64::from),
    }
}

/// Judge `claim` from its run without the tip (`off`) and with it (`on`).
pub fn judge(claim: &Claim, off: &Summary, on: &Summary) -> Judgement {
    let (a, b) = (
        metric(off, claim.metric, false),
        metric(on, claim.metric, true),
    );
    let judged = |verdict, reason: String| Judgement {
        verdict,
        reason,
        metric_off: a,
        metric_on: b,
    };
    if let Some(fallback) = on.fallbacks.first().filter(|_| off.fallbacks.is_empty()) {
        return judged(Verdict::NotRunHere, fallback.to_string());
    }
    // A NaN loss is written as null: the run with the tip diverged.
    let diverged = off.final_loss.is_some() && on.final_loss.is_none();
    if claim.metric == Metric::FinalLoss && diverged {
        let reason = format!(
            "final loss {:.4} -> NaN: training diverged",
            a.unwrap_or(f64::NAN)
        );
        return Judgement {
            metric_on: None,
            ..judged(Verdict::DoesNotHoldHere, reason)
        };
    }
    let (Some(x), Some(y)) = (a, b) else {
        return judged(
            Verdict::NotMeasured,
            format!("no {} figure", claim.metric.name()),
        );
    };
    let ratio = if x > 0.0 { y / x } else { f64::INFINITY };
    let shown = if claim.metric == Metric::FinalLoss {
        format!("final loss {x:.4} -> {y:.4}")
    } else {
        format!("{} {ratio:.2}x", claim.metric.name())
    };
    let (mut verdict, mut reason) = if !ratio.is_finite() && claim.metric == Metric::FinalLoss {
        (
            Verdict::DoesNotHoldHere,
            format!("{shown}: training diverged"),
        )
    } else if ratio <= claim.holds_at {
        (
            Verdict::Holds,
            format!("{shown} (needs <= {:.2}x)", claim.holds_at),
        )
    } else if ratio < 0.97 {
        (
            Verdict::HoldsPartly,
            format!("{shown}, less than the {:.2}x claimed", claim.holds_at),
        )
    } else {
        (
            Verdict::DoesNotHoldHere,
            format!("{shown}: no saving measured"),
        )
    };
    if claim.same_training && verdict == Verdict::Holds {
        let worse = match (off.final_loss, on.final_loss) {
            (Some(p), Some(q)) => (q > p * 1.25 + 0.05).then(|| format!("{p:.4} -> {q:.4}")),
            _ => diverged.then(|| "NaN: training diverged".to_string()),
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
            "{reason}; the next run trained, peak {:.2} MiB as before",
            after.peak_in_use_bytes as f64 / (1u64 << 20) as f64
        ),
        metric_off: Some(budget_bytes as f64),
        metric_on: None,
    }
}
