//! The budget claim ("cap the memory fraction to behave like a smaller GPU"): a run given half
//! what its unbudgeted run held must stop with out-of-memory, and the run after it must train
//! as the unbudgeted run did, so the stop left nothing behind.

use crate::engine::outcome::OutOfMemory;
use crate::engine::strategies::catalog::Metric;
use crate::engine::train::Summary;

use super::judge::{show, worse_training};
use super::side::Side;
use super::{Judgement, Verdict};

/// The budget claim's cap: half the unbudgeted run's high-water mark of bytes in use, a GPU
/// too small for what the run holds at once whatever its allocator's pages (half of what it
/// reserved would fit where pages are small and a budgeted run hands cached ones back).
pub fn budget_for(unbudgeted: &Summary) -> u64 {
    unbudgeted.high_water_in_use_bytes / 2
}

/// How the run after the stop compares with the unbudgeted run: `Ok` with the figures when it
/// trained alike (each step's high-water in use the same within the spread and 1%, the loss not
/// clearly worse), `Err` with what differs.
fn as_before(unbudgeted: &Side, after: &Side) -> Result<String, String> {
    let metric = Metric::StopsUnderBudget;
    let (Some(x), Some(y)) = (unbudgeted.figure(metric), after.figure(metric)) else {
        return Err("no high-water figure to compare".to_string());
    };
    let high_water = format!(
        "high-water in use {} against {} without a budget",
        show(Metric::PeakInUse, y.median),
        show(Metric::PeakInUse, x.median)
    );
    let noise = x.spread().max(y.spread()).max(0.01 * x.median.abs());
    if (x.median - y.median).abs() > noise {
        return Err(high_water);
    }
    if let Some(worse) = worse_training(unbudgeted, after) {
        return Err(format!(
            "{high_water}, but the final loss got worse ({worse})"
        ));
    }
    let loss = |side: &Side| {
        side.final_loss
            .map_or("-".to_string(), |l| format!("{l:.4}"))
    };
    Ok(format!(
        "{high_water}, final loss {} against {}",
        loss(after),
        loss(unbudgeted)
    ))
}

/// The budget claim: the run given `budget_bytes` ([`budget_for`] its unbudgeted run) must
/// stop with out-of-memory (`stopped`), and the next run on the same device (`after`) must
/// train as the run without a budget did (`unbudgeted`). Sides are read for
/// `Metric::StopsUnderBudget` (each step's high-water mark of bytes in use).
pub fn judge_budget(
    budget_bytes: u64,
    stopped: Option<&OutOfMemory>,
    unbudgeted: &Side,
    after: &Side,
) -> Judgement {
    let next = as_before(unbudgeted, after);
    let (verdict, reason) = match (stopped, next) {
        (None, next) => (
            Verdict::DoesNotHoldHere,
            format!(
                "a budget of {} (half its high-water in use) did not stop the run; next run: {}",
                show(Metric::PeakInUse, budget_bytes as f64),
                next.unwrap_or_else(|differs| differs)
            ),
        ),
        (Some(oom), Ok(same)) => (
            Verdict::Holds,
            format!(
                "at half its high-water in use the run stopped: {}; the next run trained as the \
                 one without a budget: {same}",
                oom.headline()
            ),
        ),
        (Some(oom), Err(differs)) => (
            Verdict::HoldsPartly,
            format!(
                "at half its high-water in use the run stopped: {}; but the next run did not \
                 train as the one without a budget: {differs}",
                oom.headline()
            ),
        ),
    };
    let figure = |side: &Side| side.figure(Metric::StopsUnderBudget).cloned();
    Judgement {
        verdict,
        reason,
        off: figure(unbudgeted),
        on: figure(after),
        parts: Vec::new(),
        unjudged: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::claims::Measure;
    use crate::engine::outcome::Site;
    use crate::engine::phase::Phase;

    /// A run whose steps all reached `high_water` bytes in use, ending at `loss`.
    fn run(high_water: f64, loss: f32) -> Side {
        Side {
            figures: vec![(
                Metric::StopsUnderBudget,
                Measure::of(vec![high_water; 11], 1).expect("a figure"),
            )],
            final_loss: Some(loss),
            diverged: !loss.is_finite(),
            ..Side::default()
        }
    }

    fn stop(budget: u64) -> OutOfMemory {
        OutOfMemory {
            step: Some(1),
            phase: Phase::Upload,
            site: Site::BatchUpload,
            kernel: None,
            asked_bytes: 6_000,
            in_use_bytes: 69_000,
            reserved_bytes: 8_456_000,
            budget_bytes: budget,
            suggestions: Vec::new(),
            estimated_parameter_bytes: 68_000,
        }
    }

    const HIGH_WATER: f64 = 1_538_608.0;
    const BUDGET: u64 = 769_304;

    #[test]
    fn the_budget_lesson_holds_when_the_run_after_the_stop_trains_as_the_unbudgeted_one() {
        let unbudgeted = run(HIGH_WATER, 0.6694);
        let judged = judge_budget(
            BUDGET,
            Some(&stop(BUDGET)),
            &unbudgeted,
            &run(HIGH_WATER, 0.6694),
        );
        assert_eq!(judged.verdict, Verdict::Holds, "{}", judged.reason);
        assert!(
            judged
                .reason
                .contains("high-water in use 1.47 MiB against 1.47 MiB without a budget"),
            "{}",
            judged.reason
        );
    }

    #[test]
    fn a_stop_that_leaves_memory_behind_or_spoils_training_holds_only_partly() {
        let unbudgeted = run(HIGH_WATER, 0.6694);
        // The stop left a quarter of a MiB held: the next run's high-water mark is above the
        // unbudgeted run's.
        let leaked = judge_budget(
            BUDGET,
            Some(&stop(BUDGET)),
            &unbudgeted,
            &run(HIGH_WATER + 262_144.0, 0.6694),
        );
        assert_eq!(leaked.verdict, Verdict::HoldsPartly, "{}", leaked.reason);
        assert!(leaked.reason.contains("but the next run did not train as"));
        // Same memory, training diverged.
        let diverged = judge_budget(
            BUDGET,
            Some(&stop(BUDGET)),
            &unbudgeted,
            &run(HIGH_WATER, f32::NAN),
        );
        assert_eq!(
            diverged.verdict,
            Verdict::HoldsPartly,
            "{}",
            diverged.reason
        );
        // No stop at all.
        let fit = judge_budget(BUDGET, None, &unbudgeted, &run(HIGH_WATER, 0.6694));
        assert_eq!(fit.verdict, Verdict::DoesNotHoldHere, "{}", fit.reason);
    }
}
