//! Verdicts on the folklore claims of the catalog: each claim's runs without the tip and with
//! it, judged on every figure the claim names. The CLI's `claims` report and the page's
//! lessons both judge here, so they cannot disagree on the rule.
//!
//! - `side`: one side's runs as a verdict reads them (figures, fallback, divergence).
//! - `judge`: a claim's verdict from its two sides, part by part.
//! - `budget`: the budget claim, whose sides are a stopped run and the run after it.
//! - `runner`: a claim's runs as both fronts run them, into one report row.
//! - `compare`: the page's rows held to the native report's, card by card.

mod budget;
mod compare;
mod judge;
mod runner;
mod side;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::engine::config::{Budget, DataConfig, RunConfig};
use crate::engine::error::ConfigError;
use crate::engine::overrides::apply_overrides;
use crate::engine::presets::{fit_batch, preset};
use crate::engine::strategies::catalog::{Claim, Entry, Metric};

pub use budget::{budget_for, judge_budget};
pub use compare::{Cards, Comparison, Difference, compare};
pub use judge::{Judgement, PartJudgement, judge, judge_sides};
pub use runner::{Outcome, Report, Row, base_label, run_claim};
pub use side::{Side, samples};

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

    pub fn spread(&self) -> f64 {
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

/// What a front can measure, which decides the claims it can run and the parts it judges.
/// Reports carry it, so two fronts' verdicts can be held to each other (`compare`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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

impl Bench {
    /// The CLI: each run its own process, steps timed to the device's end. It refuses nothing
    /// up front for shader-f16: a run whose adapter lacks it says so with a fallback, and the
    /// claim is then not run here.
    pub const NATIVE: Self = Self {
        shader_f16: true,
        synced_steps: true,
        device_per_run: true,
    };

    /// A page: one device for its life, steps only queued (so never timed), shader-f16 as its
    /// adapter has it.
    pub const fn page(shader_f16: bool) -> Self {
        Self {
            shader_f16,
            synced_steps: false,
            device_per_run: false,
        }
    }

    /// The CLI judging as a page does (`vramlab claims --as-page`): no step timing and no claim
    /// about the pools, so one run a side; shader-f16 as [`Bench::NATIVE`] presumes it. Its
    /// verdicts are on the same figures as the page's, to be compared with them.
    pub const fn as_page() -> Self {
        Self::page(Self::NATIVE.shader_f16)
    }
}

impl fmt::Display for Bench {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "shader-f16 {}, steps {}, {}",
            if self.shader_f16 { "yes" } else { "no" },
            if self.synced_steps {
                "timed"
            } else {
                "only queued"
            },
            if self.device_per_run {
                "a device per run"
            } else {
                "one device"
            }
        )
    }
}

/// Why `metric` cannot be measured on `bench`, or `None` when it can.
pub fn unmeasurable(metric: Metric, bench: Bench) -> Option<&'static str> {
    (metric == Metric::MsPerStep && !bench.synced_steps).then_some(
        "a step's time here is the time to queue it: the page cannot wait for the GPU inside a \
         step, so it cannot time one",
    )
}

/// Runs a side of `claim` takes on `bench`: as many as its most demanding figure that `bench`
/// measures (timing takes three).
pub fn runs_per_side(claim: &Claim, bench: Bench) -> usize {
    claim
        .metrics()
        .filter(|&metric| unmeasurable(metric, bench).is_none())
        .map(Metric::runs_per_side)
        .max()
        .unwrap_or(1)
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
    if let Some(why) = unmeasurable(claim.metric, bench) {
        return Some(why.into());
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

/// Why a page's "Run all lessons" leaves `claim` to its own card's button, or `None`: a
/// transformer's kernels take a software GPU (SwiftShader) minutes a card to compile for each
/// of their shapes. The only reason besides [`cannot_run`]'s for which a card of "Run all" may
/// be "not run here" (`compare` holds the page to it).
pub fn left_out_of_run_all(entry: &Entry, claim: &Claim) -> Option<String> {
    let transformer = matches!(
        claim.base.preset,
        "sort-transformer" | "sort-gpt" | "sort-llama"
    );
    transformer.then(|| {
        format!(
            "left out of Run all: a transformer's kernels take a software GPU minutes to \
             compile; run it with this card's button, or natively with `vramlab claims --only \
             {}`",
            entry.field
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::strategies::catalog::claims;

    const PAGE_ON_SWIFTSHADER: Bench = Bench::page(false);

    #[test]
    fn every_claim_runs_a_valid_config_on_both_sides() {
        for (entry, claim) in claims() {
            for sets in [claim.off, claim.on] {
                side_config(claim, sets, None)
                    .unwrap_or_else(|err| panic!("{} {sets:?}: {err}", entry.field));
            }
        }
    }

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
