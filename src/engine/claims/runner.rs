//! One claim run as both fronts run it: the side without the tip, then the side with it (for
//! the budget claim, the budgeted run and the run after it), judged, into one [`Row`]. The CLI's
//! report and the page's cards only say how a run trains (a [`Runner`]) and present the rows.

use serde::{Deserialize, Serialize};

use crate::engine::config::{DataConfig, RunConfig};
use crate::engine::strategies::catalog::{Claim, Entry, Metric};
use crate::engine::train::{RunOutcome, Runner, Summary, Timeline};

use super::{
    Bench, Judgement, Measure, PartJudgement, Side, Verdict, budget_for, cannot_run, judge,
    judge_budget, runs_per_side, side_config_on,
};

/// One claim's line of a report, the same on both fronts; the JSON form is one of these a claim.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    /// The config field the claim is about.
    pub field: String,
    pub claim: String,
    /// The run both sides start from: a preset and the changes that size it (on a user's table,
    /// "... on FILE").
    pub base: String,
    /// The claim's main figure; its other parts are in `parts`.
    pub metric: String,
    pub steps: usize,
    /// Runs a side took (0 when nothing ran).
    pub runs_per_side: usize,
    /// The claim's main figure without and with the tip: median, quartiles, samples.
    pub off: Option<Measure>,
    pub on: Option<Measure>,
    /// The first run of each side (the budget claim: the run after the stop as `on`).
    pub high_water_in_use_off: Option<u64>,
    pub high_water_in_use_on: Option<u64>,
    pub high_water_reserved_off: Option<u64>,
    pub high_water_reserved_on: Option<u64>,
    pub ms_per_step_off: Option<f64>,
    pub ms_per_step_on: Option<f64>,
    pub final_loss_off: Option<f32>,
    pub final_loss_on: Option<f32>,
    pub verdict: Verdict,
    pub reason: String,
    /// The claim's further parts ("same accuracy", "trades time"), each on its own figure.
    pub parts: Vec<PartJudgement>,
    /// Parts this front could not measure, each as "figure: why".
    pub unjudged: Vec<String>,
    /// Why it came out this way.
    pub mechanism: String,
    /// Seconds the claim took on its front (the front holds the clock).
    pub seconds: f64,
    /// The adapter the runs used, in words; empty when nothing ran.
    #[serde(skip)]
    pub adapter: String,
}

impl Row {
    /// A claim that was not measured (`verdict` not run here, or not measured): why, and no
    /// figures.
    pub fn unmeasured(
        entry: &Entry,
        claim: &Claim,
        base: String,
        verdict: Verdict,
        reason: String,
    ) -> Self {
        Self {
            field: entry.field.to_string(),
            claim: claim.folklore.to_string(),
            base,
            metric: claim.metric.name().to_string(),
            steps: claim.steps,
            runs_per_side: 0,
            off: None,
            on: None,
            high_water_in_use_off: None,
            high_water_in_use_on: None,
            high_water_reserved_off: None,
            high_water_reserved_on: None,
            ms_per_step_off: None,
            ms_per_step_on: None,
            final_loss_off: None,
            final_loss_on: None,
            verdict,
            reason,
            parts: Vec::new(),
            unjudged: Vec::new(),
            mechanism: claim.mechanism.to_string(),
            seconds: 0.0,
            adapter: String::new(),
        }
    }
}

/// A whole report: the rows, what they took, and what its front measured (the page's export
/// and `vramlab claims --json` alike, so one can be held to the other: `compare`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub adapter: String,
    pub bench: Bench,
    pub seconds: f64,
    pub rows: Vec<Row>,
}

/// A claim's row, and the first run of each side for a chart (the budget claim: the run after
/// the stop as `on`); no runs when nothing ran.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub row: Row,
    pub off: Option<Timeline>,
    pub on: Option<Timeline>,
}

/// The base run as a report names it: on a table, its data replaced by the file.
pub fn base_label(claim: &Claim, table: Option<&DataConfig>) -> String {
    match table {
        Some(data) => format!("{} on {}", claim.base.label(), data.path),
        None => claim.base.label(),
    }
}

/// The adapter of a run, in words.
fn adapter_words(summary: &Summary) -> String {
    let adapter = &summary.adapter;
    format!(
        "{} ({}, shader-f16 {})",
        adapter.name,
        adapter.backend,
        if adapter.shader_f16 { "yes" } else { "no" }
    )
}

/// A run a claim needs to fit: every one but the budget claim's own.
async fn fitted<R: Runner>(runner: &mut R, config: RunConfig) -> Result<Timeline, String> {
    match runner.train(config).await.map_err(|err| err.to_string())? {
        RunOutcome::Fit(timeline) => Ok(*timeline),
        RunOutcome::OutOfMemory(oom) => Err(format!(
            "out of memory without a budget: {}",
            oom.headline()
        )),
    }
}

/// The runs of one side: `sets` on the claim's base, as many as `bench` measures.
async fn side<R: Runner>(
    runner: &mut R,
    claim: &Claim,
    sets: &[&str],
    bench: Bench,
    table: Option<&DataConfig>,
) -> Result<Vec<Timeline>, String> {
    let config = side_config_on(claim, sets, None, table).map_err(|err| err.to_string())?;
    let mut runs = Vec::new();
    for _ in 0..runs_per_side(claim, bench) {
        runs.push(fitted(runner, config.clone()).await?);
    }
    Ok(runs)
}

/// The claim's runs and the verdict on them: the side without the tip, then the side with it,
/// or for the budget claim the budgeted run and the run after it (as `on`).
async fn measured<R: Runner>(
    runner: &mut R,
    claim: &Claim,
    bench: Bench,
    table: Option<&DataConfig>,
) -> Result<(Judgement, Vec<Timeline>, Vec<Timeline>), String> {
    let off = side(runner, claim, claim.off, bench, table).await?;
    if claim.metric == Metric::StopsUnderBudget {
        let budget = budget_for(&off[0].summary);
        let config =
            side_config_on(claim, claim.on, Some(budget), table).map_err(|err| err.to_string())?;
        let stopped = match runner.train(config).await.map_err(|err| err.to_string())? {
            RunOutcome::OutOfMemory(oom) => Some(oom),
            RunOutcome::Fit(_) => None,
        };
        let after = side(runner, claim, claim.off, bench, table).await?;
        let judgement = judge_budget(
            budget,
            stopped.as_deref(),
            &Side::of(claim, &off, false),
            &Side::of(claim, &after, false),
        );
        return Ok((judgement, off, after));
    }
    let on = side(runner, claim, claim.on, bench, table).await?;
    let judgement = judge(claim, &off, &on, bench);
    Ok((judgement, off, on))
}

/// Run `claim` (of `entry`) with `runner` on `bench`, on `table` (a data section with its table
/// read) instead of the claim's data if given. A claim `bench` cannot measure, or whose runs
/// cannot take the table, is a row that says why; a run that fails is a row "not measured"
/// with the error.
pub async fn run_claim<R: Runner>(
    runner: &mut R,
    entry: &Entry,
    claim: &Claim,
    bench: Bench,
    table: Option<&DataConfig>,
) -> Outcome {
    let base = base_label(claim, table);
    let not_run = |verdict, reason| Outcome {
        row: Row::unmeasured(entry, claim, base.clone(), verdict, reason),
        off: None,
        on: None,
    };
    if let Some(why) = cannot_run(entry, claim, bench) {
        return not_run(Verdict::NotRunHere, why);
    }
    // Both sides must take the table before anything runs.
    if table.is_some() {
        for sets in [claim.off, claim.on] {
            if let Err(err) = side_config_on(claim, sets, None, table) {
                return not_run(Verdict::NotRunHere, format!("not on this table: {err}"));
            }
        }
    }
    let (judgement, off, on) = match measured(runner, claim, bench, table).await {
        Ok(measured) => measured,
        Err(err) => return not_run(Verdict::NotMeasured, err),
    };
    let (sa, sb) = (
        off.first().map(|t| &t.summary),
        on.first().map(|t| &t.summary),
    );
    let row = Row {
        runs_per_side: runs_per_side(claim, bench),
        off: judgement.off,
        on: judgement.on,
        high_water_in_use_off: sa.map(|s| s.high_water_in_use_bytes),
        high_water_in_use_on: sb.map(|s| s.high_water_in_use_bytes),
        high_water_reserved_off: sa.map(|s| s.high_water_reserved_bytes),
        high_water_reserved_on: sb.map(|s| s.high_water_reserved_bytes),
        ms_per_step_off: sa.map(|s| s.median_step_ms),
        ms_per_step_on: sb.map(|s| s.median_step_ms),
        final_loss_off: sa.and_then(|s| s.final_loss),
        final_loss_on: sb.and_then(|s| s.final_loss),
        parts: judgement.parts,
        unjudged: judgement.unjudged,
        adapter: sa.map_or(String::new(), adapter_words),
        ..Row::unmeasured(entry, claim, base, judgement.verdict, judgement.reason)
    };
    Outcome {
        row,
        off: off.into_iter().next(),
        on: on.into_iter().next(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::EngineError;
    use crate::engine::outcome::{OutOfMemory, Site};
    use crate::engine::phase::Phase;
    use crate::engine::strategies::catalog::claims;

    /// Answers every run the same way, counting them.
    struct Staged {
        answer: fn() -> Result<RunOutcome, EngineError>,
        runs: usize,
    }

    impl Runner for Staged {
        async fn train(&mut self, _: RunConfig) -> Result<RunOutcome, EngineError> {
            self.runs += 1;
            (self.answer)()
        }
    }

    fn lesson(folklore: &str) -> (&'static Entry, &'static Claim) {
        claims()
            .find(|(_, c)| c.folklore.starts_with(folklore))
            .expect("the claim")
    }

    fn run(
        answer: fn() -> Result<RunOutcome, EngineError>,
        folklore: &str,
        bench: Bench,
    ) -> (Row, usize) {
        let (entry, claim) = lesson(folklore);
        let mut runner = Staged { answer, runs: 0 };
        let outcome = pollster::block_on(run_claim(&mut runner, entry, claim, bench, None));
        assert!(outcome.off.is_none() && outcome.on.is_none());
        (outcome.row, runner.runs)
    }

    const PAGE_WITHOUT_F16: Bench = Bench::page(false);

    #[test]
    fn a_claim_the_front_cannot_measure_runs_nothing_and_says_why() {
        let (row, runs) = run(
            || panic!("nothing should run"),
            "model.half()",
            PAGE_WITHOUT_F16,
        );
        assert_eq!(runs, 0);
        assert_eq!(row.verdict, Verdict::NotRunHere);
        assert!(row.reason.contains("shader-f16"), "{}", row.reason);
        assert_eq!(row.field, "strategies.weight_dtype");
    }

    #[test]
    fn a_run_that_fails_is_a_row_not_measured_with_the_error() {
        let (row, runs) = run(
            || {
                Err(EngineError::Device {
                    phase: "run".into(),
                    message: "the process crashed".into(),
                })
            },
            "halve the batch",
            Bench::NATIVE,
        );
        assert_eq!(runs, 1);
        assert_eq!(row.verdict, Verdict::NotMeasured);
        assert!(row.reason.contains("the process crashed"), "{}", row.reason);
        let (row, _) = run(
            || {
                Ok(RunOutcome::OutOfMemory(Box::new(OutOfMemory {
                    step: Some(1),
                    phase: Phase::Forward,
                    site: Site::LogitsAndLoss,
                    kernel: None,
                    asked_bytes: 1 << 20,
                    in_use_bytes: 1 << 20,
                    reserved_bytes: 2 << 20,
                    budget_bytes: 1 << 20,
                    suggestions: Vec::new(),
                    estimated_parameter_bytes: 1 << 16,
                })))
            },
            "halve the batch",
            Bench::NATIVE,
        );
        assert_eq!(row.verdict, Verdict::NotMeasured);
        assert!(
            row.reason.starts_with("out of memory without a budget: "),
            "{}",
            row.reason
        );
    }
}
