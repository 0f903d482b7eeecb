//! A claim's verdict from its two sides: the main figure against the claim's bar, then each
//! further part ("same accuracy", "trades time") against its own. The claim holds only where
//! every part does; a part this front cannot measure is named, never passed over.

use serde::{Deserialize, Serialize};

use crate::engine::format::ByteFormat;
use crate::engine::strategies::catalog::{Bar, Claim, Metric, Part};
use crate::engine::train::Timeline;

use super::side::Side;
use super::{Bench, Measure, Verdict, unmeasurable};

/// A part of a claim beyond its main figure, judged on its own figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartJudgement {
    /// The figure, as `Metric::name` gives it.
    pub metric: String,
    pub verdict: Verdict,
    pub reason: String,
    pub off: Option<Measure>,
    pub on: Option<Measure>,
}

/// A verdict, why, and the figures it was decided on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub verdict: Verdict,
    pub reason: String,
    /// The claim's main figure without and with the tip.
    pub off: Option<Measure>,
    pub on: Option<Measure>,
    /// The claim's further parts, each judged on its own figure.
    #[serde(default)]
    pub parts: Vec<PartJudgement>,
    /// Parts the front could not measure, each as "figure: why": the verdict is on the rest.
    #[serde(default)]
    pub unjudged: Vec<String>,
}

/// Judge `claim` from its runs without the tip (`off`) and with it (`on`) on `bench`.
pub fn judge(claim: &Claim, off: &[Timeline], on: &[Timeline], bench: Bench) -> Judgement {
    judge_sides(
        claim,
        &Side::of(claim, off, false),
        &Side::of(claim, on, true),
        bench,
    )
}

/// A figure in its unit, for a reason line.
pub(super) fn show(metric: Metric, value: f64) -> String {
    match metric {
        Metric::MsPerStep => format!("{value:.1} ms"),
        Metric::FinalLoss => format!("{value:.4}"),
        Metric::EvalAccuracy => format!("{:.2}%", value * 100.0),
        _ => ByteFormat::KIB_OR_MIB.of_f64(value),
    }
}

/// The two sides' medians compared: the line that shows them, what the tip saved (off less
/// on), the difference within which they count as the same (the larger side's interquartile
/// spread, and at least 1% of the figure), and on / off.
struct Compared {
    figures: String,
    saved: f64,
    noise: f64,
    ratio: f64,
}

fn compare(metric: Metric, x: &Measure, y: &Measure) -> Compared {
    let figures = format!(
        "{} {} -> {} (spread {} / {}, {} samples a side)",
        metric.name(),
        show(metric, x.median),
        show(metric, y.median),
        show(metric, x.spread()),
        show(metric, y.spread()),
        x.samples.min(y.samples),
    );
    Compared {
        figures,
        saved: x.median - y.median,
        noise: x.spread().max(y.spread()).max(0.01 * x.median.abs()),
        ratio: if x.median > 0.0 {
            y.median / x.median
        } else {
            f64::INFINITY
        },
    }
}

/// A saving: on / off at or below `bar` holds, a smaller saving beyond the spread holds partly.
fn saves(metric: Metric, x: &Measure, y: &Measure, bar: f64) -> (Verdict, String) {
    let c = compare(metric, x, y);
    let figures = c.figures;
    if c.saved.abs() <= c.noise {
        (
            Verdict::DoesNotHoldHere,
            format!("{figures}: no difference beyond the spread"),
        )
    } else if c.saved < 0.0 {
        (
            Verdict::DoesNotHoldHere,
            format!("{figures}: worse with the tip"),
        )
    } else if c.ratio <= bar {
        (
            Verdict::Holds,
            format!("{figures}: {:.2}x (needs <= {bar:.2}x)", c.ratio),
        )
    } else {
        (
            Verdict::HoldsPartly,
            format!(
                "{figures}: {:.2}x, less than the {bar:.2}x claimed",
                c.ratio
            ),
        )
    }
}

/// A figure the tip must keep within `bar` (lower is better: a final loss): the same within
/// the spread, lower, or at most `bar` times the other holds; worse than that but within twice
/// the margin (`1 + 2 (bar - 1)`) holds partly; worse still does not hold.
fn within(metric: Metric, x: &Measure, y: &Measure, bar: f64) -> (Verdict, String) {
    let c = compare(metric, x, y);
    let (figures, ratio) = (c.figures, c.ratio);
    if c.saved.abs() <= c.noise {
        (
            Verdict::Holds,
            format!("{figures}: the same within the spread"),
        )
    } else if c.saved > 0.0 {
        (
            Verdict::Holds,
            format!("{figures}: {ratio:.2}x, lower with the tip"),
        )
    } else if ratio <= bar {
        (
            Verdict::Holds,
            format!("{figures}: {ratio:.2}x, within the {bar:.2}x allowed"),
        )
    } else if ratio <= 1.0 + 2.0 * (bar - 1.0) {
        (
            Verdict::HoldsPartly,
            format!("{figures}: {ratio:.2}x, past the {bar:.2}x allowed"),
        )
    } else {
        (
            Verdict::DoesNotHoldHere,
            format!("{figures}: {ratio:.2}x, far past the {bar:.2}x allowed"),
        )
    }
}

/// A cost (the tip makes the figure grow, by at most `bar`): it holds when the figure grows
/// beyond the spread and stays within the bar. No growth is less than claimed; a figure that
/// falls beyond the spread is no cost at all.
fn costs(metric: Metric, x: &Measure, y: &Measure, bar: f64) -> (Verdict, String) {
    let c = compare(metric, x, y);
    let (figures, ratio) = (c.figures, c.ratio);
    if c.saved.abs() <= c.noise {
        (
            Verdict::HoldsPartly,
            format!("{figures}: no cost beyond the spread, less than claimed"),
        )
    } else if c.saved > 0.0 {
        (
            Verdict::DoesNotHoldHere,
            format!("{figures}: {ratio:.2}x, faster with the tip, not the cost claimed"),
        )
    } else if ratio <= bar {
        (
            Verdict::Holds,
            format!("{figures}: costs {ratio:.2}x (claimed at most {bar:.2}x)"),
        )
    } else {
        (
            Verdict::DoesNotHoldHere,
            format!("{figures}: costs {ratio:.2}x, more than the {bar:.2}x claimed"),
        )
    }
}

/// A figure the tip must keep (higher is better): on may fall below off by `allowed` (or the
/// spread, if larger); falling by up to twice that holds partly, further does not hold.
fn keeps(metric: Metric, x: &Measure, y: &Measure, allowed: f64) -> (Verdict, String) {
    let c = compare(metric, x, y);
    let allowed = allowed.max(x.spread()).max(y.spread());
    let lost = c.saved;
    if lost <= allowed {
        (
            Verdict::Holds,
            format!(
                "{}: within the {} allowed",
                c.figures,
                show(metric, allowed)
            ),
        )
    } else if lost <= 2.0 * allowed {
        (
            Verdict::HoldsPartly,
            format!(
                "{}: {} lower, past the {} allowed",
                c.figures,
                show(metric, lost),
                show(metric, allowed)
            ),
        )
    } else {
        (
            Verdict::DoesNotHoldHere,
            format!(
                "{}: {} lower, more than the {} allowed",
                c.figures,
                show(metric, lost),
                show(metric, allowed)
            ),
        )
    }
}

/// Training clearly worse with the tip: its final loss more than 1.25x and 0.05 above the
/// other's, or diverged. `Some` says how, for a reason line.
pub(super) fn worse_training(before: &Side, after: &Side) -> Option<String> {
    if after.diverged && !before.diverged {
        return Some("NaN: training diverged".to_string());
    }
    match (before.final_loss, after.final_loss) {
        (Some(p), Some(q)) => (q > p * 1.25 + 0.05).then(|| format!("{p:.4} -> {q:.4}")),
        _ => None,
    }
}

fn judge_part(part: &Part, off: &Side, on: &Side) -> PartJudgement {
    let metric = part.metric;
    let (a, b) = (off.figure(metric).cloned(), on.figure(metric).cloned());
    let (verdict, reason) = match (&a, &b) {
        (Some(x), Some(y)) => match part.bar {
            Bar::CostsAtMost(bar) => costs(metric, x, y, bar),
            Bar::KeepsWithin(allowed) => keeps(metric, x, y, allowed),
        },
        _ => (Verdict::NotMeasured, format!("no {} figure", metric.name())),
    };
    PartJudgement {
        metric: metric.name().to_string(),
        verdict,
        reason,
        off: a,
        on: b,
    }
}

/// Judge `claim` from its two sides, each figure taken over its steps (and runs). A verdict
/// needs the difference to exceed the larger side's interquartile spread and 1% of the figure;
/// anything within that is no difference. Each further part must hold for the claim to: one
/// that does not makes a held claim hold partly. A part `bench` cannot measure is listed in
/// `unjudged` and said in the reason.
pub fn judge_sides(claim: &Claim, off: &Side, on: &Side, bench: Bench) -> Judgement {
    let metric = claim.metric;
    let (a, b) = (off.figure(metric).cloned(), on.figure(metric).cloned());
    let judged = |verdict, reason: String| Judgement {
        verdict,
        reason,
        off: a.clone(),
        on: b.clone(),
        parts: Vec::new(),
        unjudged: Vec::new(),
    };
    // A fallback one side met and the other did not (f16 without shader-f16 on the tip's side)
    // means that side did not run what the claim compares: judging it would judge the fallback.
    let unshared = |a: &Side, b: &Side| {
        a.fallbacks
            .iter()
            .find(|f| !b.fallbacks.contains(f))
            .cloned()
    };
    if let Some(fallback) = unshared(on, off).or_else(|| unshared(off, on)) {
        return judged(Verdict::NotRunHere, fallback);
    }
    if metric == Metric::FinalLoss && on.diverged && !off.diverged {
        let before = a.as_ref().map_or(f64::NAN, |a| a.median);
        return judged(
            Verdict::DoesNotHoldHere,
            format!("final loss {before:.4} -> NaN: training diverged"),
        );
    }
    let (Some(x), Some(y)) = (&a, &b) else {
        return judged(Verdict::NotMeasured, format!("no {} figure", metric.name()));
    };
    // A timing claim whose bar is above 1 is about a cost (the tip makes steps slower, by at
    // most that much).
    // A final-loss claim ("trains as well") is about keeping the loss within its bar.
    let (mut verdict, mut reason) = if metric == Metric::MsPerStep && claim.holds_at > 1.0 {
        costs(metric, x, y, claim.holds_at)
    } else if metric == Metric::FinalLoss {
        within(metric, x, y, claim.holds_at)
    } else {
        saves(metric, x, y, claim.holds_at)
    };
    if let Some(law) = growth_law(off, on) {
        reason = format!("{reason}; {law}");
    }
    if claim.same_training
        && verdict == Verdict::Holds
        && let Some(worse) = worse_training(off, on)
    {
        verdict = Verdict::HoldsPartly;
        reason = format!("{reason}, but the final loss got worse ({worse})");
    }
    let mut parts = Vec::new();
    let mut unjudged = Vec::new();
    for part in claim.also {
        match unmeasurable(part.metric, bench) {
            Some(why) => unjudged.push(format!("{}: {why}", part.metric.name())),
            None => parts.push(judge_part(part, off, on)),
        }
    }
    let held = matches!(verdict, Verdict::Holds | Verdict::HoldsPartly);
    for part in &parts {
        if part.verdict == Verdict::Holds {
            reason = format!("{reason}; {}", part.reason);
        } else {
            if held {
                verdict = Verdict::HoldsPartly;
            }
            reason = format!("{reason}; but {}", part.reason);
        }
    }
    if !unjudged.is_empty() {
        reason = format!(
            "{reason}; partly judged, not measured here: {}",
            unjudged.join("; ")
        );
    }
    // A fallback both sides met alike (the page's pools) is the bench's: judged, and named.
    if !on.fallbacks.is_empty() {
        reason = format!(
            "{reason}; both sides ran with a fallback: {}",
            on.fallbacks.join("; ")
        );
    }
    Judgement {
        parts,
        unjudged,
        ..judged(verdict, reason)
    }
}

/// For two sides that differ only in sequence length: how the activations at each run's
/// high-water mark scale with it, as the exponent `e` in bytes ~ L^e (measured categories; none
/// without them).
fn growth_law(off: &Side, on: &Side) -> Option<String> {
    let (la, lb) = (off.seq_len as f64, on.seq_len as f64);
    if la == lb {
        return None;
    }
    let activation = |side: &Side| {
        let bytes = side.high_water_activation? as f64;
        (bytes > 0.0).then_some(bytes)
    };
    let exponent = (activation(off)? / activation(on)?).ln() / (la / lb).ln();
    let law = if exponent >= 1.5 {
        "closer to quadratic"
    } else {
        "closer to linear"
    };
    Some(format!(
        "activations at the high-water mark grow as L^{exponent:.2} ({law})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::strategies::catalog::claims;

    const PAGE: Bench = Bench::page(true);

    /// The catalog's claim that starts with `folklore`.
    fn claim(folklore: &str) -> &'static Claim {
        claims()
            .find(|(_, c)| c.folklore.starts_with(folklore))
            .unwrap_or_else(|| panic!("no claim \"{folklore}\""))
            .1
    }

    /// A side staged by hand: each figure exact over 11 samples, the same final loss.
    fn staged(figures: &[(Metric, f64)]) -> Side {
        Side {
            figures: figures
                .iter()
                .map(|&(metric, value)| {
                    (metric, Measure::of(vec![value; 11], 1).expect("a figure"))
                })
                .collect(),
            final_loss: Some(0.5),
            ..Side::default()
        }
    }

    const MIB: f64 = (1u64 << 20) as f64;

    fn verdict(folklore: &str, off: &[(Metric, f64)], on: &[(Metric, f64)]) -> Judgement {
        judge_sides(claim(folklore), &staged(off), &staged(on), Bench::NATIVE)
    }

    #[test]
    fn a_final_loss_claim_holds_within_its_bar_partly_past_it_and_not_far_past_it() {
        use Metric::FinalLoss;
        let unscaled = "fp16 without a scaler";
        assert_eq!(claim(unscaled).metric, FinalLoss);
        assert_eq!(claim(unscaled).holds_at, 1.1);
        let judged = |on: f64| verdict(unscaled, &[(FinalLoss, 0.5)], &[(FinalLoss, on)]);
        // The same loss, a lower one, and one 8% higher (within the 1.1x bar) all hold.
        for on in [0.5, 0.4, 0.54] {
            let j = judged(on);
            assert_eq!(j.verdict, Verdict::Holds, "{on}: {}", j.reason);
        }
        // 1.16x: past the bar, within twice its margin.
        let past = judged(0.58);
        assert_eq!(past.verdict, Verdict::HoldsPartly, "{}", past.reason);
        // 1.4x: far past it.
        let far = judged(0.7);
        assert_eq!(far.verdict, Verdict::DoesNotHoldHere, "{}", far.reason);
        // Diverged with the tip: does not hold.
        let mut diverged = staged(&[]);
        diverged.diverged = true;
        let nan = judge_sides(
            claim(unscaled),
            &staged(&[(FinalLoss, 0.5)]),
            &diverged,
            Bench::NATIVE,
        );
        assert_eq!(nan.verdict, Verdict::DoesNotHoldHere, "{}", nan.reason);
    }

    /// A side whose every sample is `median`: no spread.
    fn exactly(median: f64) -> Measure {
        Measure {
            median,
            q1: median,
            q3: median,
            samples: 10,
            runs: 1,
        }
    }

    #[test]
    fn every_rule_can_say_holds_holds_partly_and_does_not_hold() {
        let verdicts =
            |rule: &dyn Fn(&Measure, &Measure) -> (Verdict, String), off: f64, ons: [f64; 3]| {
                ons.map(|on| rule(&exactly(off), &exactly(on)).0)
            };
        let all = [
            Verdict::Holds,
            Verdict::HoldsPartly,
            Verdict::DoesNotHoldHere,
        ];
        // A saving to at most 0.6x: 0.5x holds, 0.8x is less than claimed, none does not hold.
        let saving = |x: &Measure, y: &Measure| saves(Metric::Activations, x, y, 0.6);
        assert_eq!(verdicts(&saving, 100.0, [50.0, 80.0, 100.0]), all);
        // A final loss kept within 1.1x: 1.05x holds, 1.15x holds partly, 1.3x does not.
        let loss = |x: &Measure, y: &Measure| within(Metric::FinalLoss, x, y, 1.1);
        assert_eq!(verdicts(&loss, 1.0, [1.05, 1.15, 1.3]), all);
        // A cost of at most 1.6x: 1.4x holds, no cost is less than claimed, 2x does not hold.
        let cost = |x: &Measure, y: &Measure| costs(Metric::MsPerStep, x, y, 1.6);
        assert_eq!(verdicts(&cost, 100.0, [140.0, 100.0, 200.0]), all);
        // An accuracy kept within one point: half a point lower holds, 1.5 points partly, 5 not.
        let accuracy = |x: &Measure, y: &Measure| keeps(Metric::EvalAccuracy, x, y, 0.01);
        assert_eq!(verdicts(&accuracy, 0.95, [0.945, 0.935, 0.90]), all);
    }

    #[test]
    fn a_fallback_on_one_side_is_not_run_here_and_one_both_share_is_named() {
        use Metric::Activations;
        let f16 = "fp16 with a loss scaler";
        let no_f16 = "no shader-f16 on this adapter: ran in f32";
        let pools = "memory_pool subslices: ran with exclusive";
        let side = |fallbacks: &[&str], activations: f64| Side {
            fallbacks: fallbacks.iter().map(ToString::to_string).collect(),
            ..staged(&[(Activations, activations)])
        };
        // The tip fell back on its side, or the base on the other: the comparison is not the
        // claim's, whatever both sides share besides.
        for (off, on) in [
            (side(&[], 100.0), side(&[no_f16], 100.0)),
            (side(&[no_f16], 100.0), side(&[], 50.0)),
            (side(&[pools], 100.0), side(&[pools, no_f16], 100.0)),
        ] {
            let j = judge_sides(claim(f16), &off, &on, Bench::NATIVE);
            assert_eq!(j.verdict, Verdict::NotRunHere, "{}", j.reason);
            assert_eq!(j.reason, no_f16);
        }
        // Both sides fell back alike (the page's pools): judged, the fallback named.
        let shared = judge_sides(
            claim(f16),
            &side(&[pools], 100.0),
            &side(&[pools], 50.0),
            Bench::NATIVE,
        );
        assert_eq!(shared.verdict, Verdict::Holds, "{}", shared.reason);
        assert!(
            shared
                .reason
                .ends_with(&format!("both sides ran with a fallback: {pools}"))
        );
        let clean = judge_sides(
            claim(f16),
            &side(&[], 100.0),
            &side(&[], 50.0),
            Bench::NATIVE,
        );
        assert!(!clean.reason.contains("fallback"), "{}", clean.reason);
    }

    #[test]
    fn int8_is_judged_on_the_copys_accuracy_as_well_as_its_bytes() {
        use Metric::{EvalAccuracy, EvalWeightBytes};
        let int8 = "int8 weights";
        let off = [(EvalWeightBytes, 68_640.0), (EvalAccuracy, 0.5894)];
        // A quarter of the bytes, the same accuracy (as measured on the spiral MLP).
        let same = verdict(
            int8,
            &off,
            &[(EvalWeightBytes, 17_112.0), (EvalAccuracy, 0.5894)],
        );
        assert_eq!(same.verdict, Verdict::Holds, "{}", same.reason);
        assert_eq!(same.parts.len(), 1);
        assert_eq!(same.parts[0].metric, "eval accuracy");
        // Within the point allowed.
        let close = verdict(
            int8,
            &off,
            &[(EvalWeightBytes, 17_112.0), (EvalAccuracy, 0.5804)],
        );
        assert_eq!(close.verdict, Verdict::Holds, "{}", close.reason);
        // A quarter of the bytes, but ten points of accuracy lost, with training the same on
        // both sides (the final losses are equal): the accuracy half fails.
        let worse = verdict(
            int8,
            &off,
            &[(EvalWeightBytes, 17_112.0), (EvalAccuracy, 0.4894)],
        );
        assert_eq!(worse.verdict, Verdict::HoldsPartly, "{}", worse.reason);
        assert_eq!(worse.parts[0].verdict, Verdict::DoesNotHoldHere);
        assert!(
            worse.reason.contains("but eval accuracy 58.94% -> 48.94%"),
            "{}",
            worse.reason
        );
        // No accuracy recorded: the part says so, and the claim does not hold whole.
        let unmeasured = verdict(int8, &off, &[(EvalWeightBytes, 17_112.0)]);
        assert_eq!(unmeasured.verdict, Verdict::HoldsPartly);
        assert_eq!(unmeasured.parts[0].verdict, Verdict::NotMeasured);
    }

    #[test]
    fn balanced_checkpointing_is_judged_on_activations_and_on_step_time() {
        use Metric::{Activations, MsPerStep};
        let checkpointing = "checkpointing trades time";
        let off = [(Activations, 1_054_752.0), (MsPerStep, 40.0)];
        let slower = |ms: f64| [(Activations, 536_640.0), (MsPerStep, ms)];
        // Half the activations for a quarter more time: the trade as claimed.
        let trade = verdict(checkpointing, &off, &slower(50.0));
        assert_eq!(trade.verdict, Verdict::Holds, "{}", trade.reason);
        // Twice the time: more than one more forward pass.
        let dear = verdict(checkpointing, &off, &slower(84.0));
        assert_eq!(dear.verdict, Verdict::HoldsPartly, "{}", dear.reason);
        assert!(dear.reason.contains("but ms/step 40.0 ms -> 84.0 ms"));
        // No time paid, or less: not the trade claimed either.
        for ms in [40.0, 28.0] {
            let free = verdict(checkpointing, &off, &slower(ms));
            assert_eq!(free.verdict, Verdict::HoldsPartly, "{}", free.reason);
            assert_ne!(free.parts[0].verdict, Verdict::Holds, "{}", free.reason);
        }
        // A claim that is only about the cost does not hold when the step gets faster.
        let faster = judge_sides(
            claim("checkpoint every layer: costs"),
            &staged(&[(MsPerStep, 40.0)]),
            &staged(&[(MsPerStep, 28.0)]),
            Bench::NATIVE,
        );
        assert_eq!(
            faster.verdict,
            Verdict::DoesNotHoldHere,
            "{}",
            faster.reason
        );
        // The whole peak may fall while the activations do not: they are what is judged.
        let kept = verdict(
            checkpointing,
            &off,
            &[(Activations, 1_000_000.0), (MsPerStep, 50.0)],
        );
        assert_eq!(kept.verdict, Verdict::HoldsPartly, "{}", kept.reason);
    }

    #[test]
    fn a_part_the_page_cannot_time_is_named_on_the_card_not_passed() {
        use Metric::Activations;
        let claim = claim("checkpointing trades time");
        let off = staged(&[(Activations, 1_054_752.0)]);
        let on = staged(&[(Activations, 536_640.0)]);
        let page = judge_sides(claim, &off, &on, PAGE);
        assert_eq!(page.verdict, Verdict::Holds, "{}", page.reason);
        assert!(page.parts.is_empty());
        assert_eq!(page.unjudged.len(), 1);
        assert!(
            page.unjudged[0].starts_with("ms/step: "),
            "{:?}",
            page.unjudged
        );
        assert!(
            page.reason
                .contains("partly judged, not measured here: ms/step"),
            "{}",
            page.reason
        );
        // The same sides natively: the missing time is a part that was not measured.
        let native = judge_sides(claim, &off, &on, Bench::NATIVE);
        assert_eq!(native.verdict, Verdict::HoldsPartly, "{}", native.reason);
        assert!(native.unjudged.is_empty());
        // The page runs one run a side (it times nothing); natively timing takes three.
        assert_eq!(super::super::runs_per_side(claim, PAGE), 1);
        assert_eq!(super::super::runs_per_side(claim, Bench::NATIVE), 3);
    }

    #[test]
    fn halving_the_batch_or_fp16_is_judged_on_activations_against_half() {
        use Metric::Activations;
        for folklore in ["halve the batch", "fp16 with a loss scaler"] {
            let off = [(Activations, 1_054_752.0)];
            // As measured: 0.50x for half the batch, 0.54x in f16 (its copy of the weights).
            for on in [527_392.0, 565_792.0] {
                let halved = verdict(folklore, &off, &[(Activations, on)]);
                assert_eq!(halved.verdict, Verdict::Holds, "{}", halved.reason);
                assert!(
                    halved.reason.starts_with("activations "),
                    "{}",
                    halved.reason
                );
            }
            // 0.6x: a saving, but not the half claimed.
            let short = verdict(folklore, &off, &[(Activations, 0.6 * 1_054_752.0)]);
            assert_eq!(short.verdict, Verdict::HoldsPartly, "{}", short.reason);
            assert!(short.reason.contains("less than the 0.55x claimed"));
            // Activations that do not move do not hold, whatever else fell.
            let same = verdict(
                folklore,
                &[(Activations, 1_054_752.0), (Metric::PeakInUse, MIB)],
                &[(Activations, 1_054_752.0), (Metric::PeakInUse, 0.5 * MIB)],
            );
            assert_eq!(same.verdict, Verdict::DoesNotHoldHere, "{}", same.reason);
        }
    }

    #[test]
    fn every_claims_parts_are_other_figures_than_its_own() {
        for (entry, claim) in claims() {
            for part in claim.also {
                assert_ne!(
                    part.metric, claim.metric,
                    "{}: {}",
                    entry.field, claim.folklore
                );
            }
        }
    }
}
