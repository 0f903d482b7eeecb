//! Verdicts on the folklore claims of the catalog: each claim's runs without the tip and with
//! it, judged on the figure the claim is about. The CLI's `claims` report and the page's
//! lessons both judge here, so they cannot disagree on the rule.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::engine::config::{Budget, DataConfig, RunConfig};
use crate::engine::error::ConfigError;
use crate::engine::outcome::OutOfMemory;
use crate::engine::overrides::apply_overrides;
use crate::engine::phase::Phase;
use crate::engine::presets::{fit_batch, preset};
use crate::engine::strategies::catalog::{Claim, Entry, Metric};
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

/// One side of `claim`: its base run with `sets` (the claim's `off` or `on`) applied, for the
/// claim's steps, evaluated at the end unless `sets` say otherwise, under `budget` bytes if given.
/// Both fronts run exactly these configs, so their verdicts can be compared.
pub fn side_config(
    claim: &Claim,
    sets: &[&str],
    budget: Option<u64>,
) -> Result<RunConfig, ConfigError> {
    side_config_on(claim, sets, budget, None)
}

/// [`side_config`] on a user's table (`table`: a data section with its table read): the base
/// run's data replaced by the table and its batch cut to the table's training split, before
/// the claim's `sets`. A claim about the data's own fields, or whose runs cannot take the
/// table, is refused with the reason.
pub fn side_config_on(
    claim: &Claim,
    sets: &[&str],
    budget: Option<u64>,
    table: Option<&DataConfig>,
) -> Result<RunConfig, ConfigError> {
    let mut config = preset(claim.base.preset)?;
    config.steps = claim.steps;
    config.eval_every = 0;
    let mut config = apply_overrides(config, claim.base.sets.iter().copied())?;
    if let Some(data) = table {
        let about_data = claim
            .off
            .iter()
            .chain(claim.on)
            .find(|s| s.starts_with("data."));
        if let Some(set) = about_data {
            return Err(ConfigError::invalid(
                "--data",
                format!("the claim's runs set {set}, which a table does not have"),
            ));
        }
        config.data = data.clone();
        fit_batch(&mut config);
    }
    let mut config = apply_overrides(config, sets.iter().copied())?;
    config.budget = budget.map(Budget::Bytes);
    config.validate()?;
    Ok(config)
}

/// What a front can measure, which decides the claims it can run.
#[derive(Clone, Copy, Debug)]
pub struct Bench {
    /// The adapter has shader-f16 (without it f16 runs as f32).
    pub shader_f16: bool,
    /// A step's time is the time the device took (natively), not the time to queue it (the
    /// page, which cannot wait for the GPU inside a step).
    pub synced_steps: bool,
    /// Each run may start its own device, so each side can have its own pools (the CLI runs
    /// each side in its own process; a page keeps one device for its life).
    pub device_per_run: bool,
}

/// Why `claim` (of `entry`) cannot be measured on `bench`, or `None` when it can.
pub fn cannot_run(entry: &Entry, claim: &Claim, bench: Bench) -> Option<String> {
    let needs_f16 = claim.off.iter().chain(claim.on).any(|set| {
        set.split_once('=').is_some_and(|(field, value)| {
            field == entry.field && entry.f16_choices.contains(&value)
        })
    });
    if needs_f16 && !bench.shader_f16 {
        return Some(
            "this adapter has no shader-f16: the tip would run in f32, the same as without it"
                .into(),
        );
    }
    if claim.metric == Metric::MsPerStep && !bench.synced_steps {
        return Some(
            "a step's time here is the time to queue it: the page cannot wait for the GPU \
             inside a step, so it cannot time one"
                .into(),
        );
    }
    if entry.field == "strategies.memory_pool" && !bench.device_per_run {
        return Some(
            "the allocator's pools are fixed when the device starts, and the page keeps one \
             device: both sides would run on the same pools"
                .into(),
        );
    }
    None
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
    // A timing claim whose bar is above 1 is about a cost (the tip makes steps slower, by at
    // most that much): it holds when the time grows and stays within the bar.
    let (mut verdict, mut reason) = if metric == Metric::MsPerStep && claim.holds_at > 1.0 {
        if saved.abs() <= noise {
            (
                Verdict::HoldsPartly,
                format!("{figures}: no cost beyond the spread, less than claimed"),
            )
        } else if ratio <= claim.holds_at {
            (
                Verdict::Holds,
                format!(
                    "{figures}: costs {ratio:.2}x (claimed at most {:.2}x)",
                    claim.holds_at
                ),
            )
        } else {
            (
                Verdict::DoesNotHoldHere,
                format!(
                    "{figures}: costs {ratio:.2}x, more than the {:.2}x claimed",
                    claim.holds_at
                ),
            )
        }
    } else if saved.abs() <= noise {
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
    if let Some(law) = growth_law(off, on) {
        reason = format!("{reason}; {law}");
    }
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

/// For two runs that differ only in sequence length: how the activations at each run's
/// high-water mark scale with it, as the exponent `e` in bytes ~ L^e (measured categories; none
/// without them).
fn growth_law(off: &[Timeline], on: &[Timeline]) -> Option<String> {
    let (a, b) = (off.first()?, on.first()?);
    let (la, lb) = (a.config.data.seq_len as f64, b.config.data.seq_len as f64);
    if la == lb {
        return None;
    }
    let activation = |t: &Timeline| {
        let bytes = t.summary.high_water_by_category?.activation as f64;
        (bytes > 0.0).then_some(bytes)
    };
    let exponent = (activation(a)? / activation(b)?).ln() / (la / lb).ln();
    let law = if exponent >= 1.5 {
        "closer to quadratic"
    } else {
        "closer to linear"
    };
    Some(format!(
        "activations at the high-water mark grow as L^{exponent:.2} ({law})"
    ))
}

/// The budget claim's cap: half the unbudgeted run's high-water mark of bytes in use, a GPU
/// too small for what the run holds at once whatever its allocator's pages (half of what it
/// reserved would fit where pages are small and a budgeted run hands cached ones back).
pub fn budget_for(unbudgeted: &Summary) -> u64 {
    unbudgeted.high_water_in_use_bytes / 2
}

/// The budget claim: a run given [`budget_for`] its unbudgeted run must stop with
/// out-of-memory (`stopped`), and the run after it on the same device must train as before
/// (`after`).
pub fn judge_budget(
    budget_bytes: u64,
    stopped: Option<&OutOfMemory>,
    after: &Summary,
) -> Judgement {
    let (verdict, reason) = match stopped {
        Some(oom) => (
            Verdict::Holds,
            format!(
                "at half its high-water in use the run stopped: {}",
                oom.headline()
            ),
        ),
        None => (
            Verdict::DoesNotHoldHere,
            "the run fit a budget of half its high-water in use".to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::strategies::catalog::claims;

    const PAGE_ON_SWIFTSHADER: Bench = Bench {
        shader_f16: false,
        synced_steps: false,
        device_per_run: false,
    };

    fn refused_on(bench: Bench) -> Vec<(&'static str, &'static str)> {
        claims()
            .filter(|(entry, claim)| cannot_run(entry, claim, bench).is_some())
            .map(|(entry, claim)| (entry.field, claim.folklore))
            .collect()
    }

    #[test]
    fn a_page_without_shader_f16_refuses_the_f16_timing_and_pool_claims_and_no_other() {
        let fields: Vec<&str> = refused_on(PAGE_ON_SWIFTSHADER)
            .iter()
            .map(|(field, _)| *field)
            .collect();
        assert_eq!(
            fields,
            [
                "strategies.mixed_precision",
                "strategies.mixed_precision",
                // Per-layer checkpointing's step time.
                "strategies.checkpointing",
                "strategies.data_residency",
                "strategies.memory_pool",
                "strategies.weight_dtype",
                "strategies.weight_dtype",
            ]
        );
        // int8 weights need no f16: model.half() and the q4 base (whose rest is f16) are
        // refused, the int8 claim is not.
        assert!(
            refused_on(PAGE_ON_SWIFTSHADER)
                .iter()
                .all(|(_, folklore)| !folklore.starts_with("int8"))
        );
    }

    #[test]
    fn a_native_run_with_shader_f16_refuses_nothing() {
        let native = Bench {
            shader_f16: true,
            synced_steps: true,
            device_per_run: true,
        };
        assert!(refused_on(native).is_empty());
    }
}
