//! `vramlab claims`: every folklore claim of the catalog run without the tip and with it (same
//! base run and seed) and judged by the engine from what was measured: each side's figure is the
//! median over its steps (and, for timing, over three runs), and a verdict needs a difference
//! beyond their spread. Each run is its own `vramlab train` process: the allocator's pools are
//! fixed when a device starts, so a tip like the pool choice needs a fresh process, and a run
//! stopped by its budget must not share one with the next.

use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use vramlab::engine::claims::{
    Bench, Judgement, Measure, PartJudgement, Side, Verdict, budget_for, judge, judge_budget,
    runs_per_side, side_config_on,
};
use vramlab::engine::config::DataConfig;
use vramlab::engine::strategies::catalog::{self, Claim, Entry, Metric};
use vramlab::engine::{ConfigError, RunConfig, Timeline};

use crate::report::mib;
use crate::subprocess::{self, Trained};

/// One line of the report; the JSON form is one of these per claim.
#[derive(Serialize, Debug)]
pub struct Row {
    /// The config field the claim is about.
    pub field: String,
    pub claim: String,
    /// The run both sides start from: a preset and the changes that size it.
    pub base: String,
    pub metric: String,
    pub steps: usize,
    pub runs_per_side: usize,
    /// The claim's figure without and with the tip: median, quartiles, samples.
    pub off: Option<Measure>,
    pub on: Option<Measure>,
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
    /// Parts not measured here, each as "figure: why" (none natively).
    pub unjudged: Vec<String>,
    /// Why it came out this way.
    pub mechanism: String,
    /// The adapter the runs used, for the report's heading.
    #[serde(skip)]
    pub adapter: String,
}

/// The whole report: the rows and what they took.
#[derive(Serialize, Debug)]
pub struct Report {
    pub adapter: String,
    pub seconds: f64,
    pub rows: Vec<Row>,
}

/// A run that must fit: the claims run without budgets, except the budget claim's own.
fn fitted(entry: &Entry, config: &RunConfig) -> anyhow::Result<Timeline> {
    match subprocess::train(config, false)? {
        Trained::Fit(timeline) => Ok(*timeline),
        Trained::OutOfMemory(oom) => anyhow::bail!(
            "{}: out of memory without a budget: {}",
            entry.field,
            oom.headline()
        ),
    }
}

/// The runs of one side.
fn side(
    entry: &Entry,
    claim: &Claim,
    sets: &[&str],
    table: Option<&DataConfig>,
) -> anyhow::Result<Vec<Timeline>> {
    let config = side_config_on(claim, sets, None, table)?;
    (0..runs_per_side(claim, Bench::NATIVE))
        .map(|_| fitted(entry, &config))
        .collect()
}

/// A claim whose runs cannot take the user's table: a row that says why, with nothing measured.
fn not_run(entry: &Entry, claim: &Claim, table: &DataConfig, reason: String) -> Row {
    Row {
        field: entry.field.to_string(),
        claim: claim.folklore.to_string(),
        base: base_label(claim, Some(table)),
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
        verdict: Verdict::NotRunHere,
        reason,
        parts: Vec::new(),
        unjudged: Vec::new(),
        mechanism: claim.mechanism.to_string(),
        adapter: String::new(),
    }
}

/// The base run as the report names it: on a table, its data replaced by the file.
fn base_label(claim: &Claim, table: Option<&DataConfig>) -> String {
    match table {
        Some(data) => format!("{} on {}", claim.base.label(), data.path),
        None => claim.base.label(),
    }
}

fn run_claim(entry: &Entry, claim: &Claim, table: Option<&DataConfig>) -> anyhow::Result<Row> {
    if table.is_some() {
        // Both sides must take the table before anything runs.
        for sets in [claim.off, claim.on] {
            if let Err(err) = side_config_on(claim, sets, None, table) {
                let reason = format!("not on this table: {err}");
                return Ok(not_run(
                    entry,
                    claim,
                    table.unwrap_or(&DataConfig::default()),
                    reason,
                ));
            }
        }
    }
    let off = side(entry, claim, claim.off, table)?;
    let (on, judgement): (Vec<Timeline>, Judgement) = if claim.metric == Metric::StopsUnderBudget {
        let budget = budget_for(&off[0].summary);
        let stopped = match subprocess::train(
            &side_config_on(claim, claim.on, Some(budget), table)?,
            false,
        )? {
            Trained::OutOfMemory(oom) => Some(oom),
            Trained::Fit(_) => None,
        };
        // The run after the stop, as the report's "on" side: it must train as `off` did.
        let after = vec![fitted(
            entry,
            &side_config_on(claim, claim.off, None, table)?,
        )?];
        let judgement = judge_budget(
            budget,
            stopped.as_deref(),
            &Side::of(claim, &off, false),
            &Side::of(claim, &after, false),
        );
        (after, judgement)
    } else {
        let on = side(entry, claim, claim.on, table)?;
        let judgement = judge(claim, &off, &on, Bench::NATIVE);
        (on, judgement)
    };
    let first = |side: &[Timeline]| side.first().map(|t| t.summary.clone());
    let (a, b) = (first(&off), first(&on));
    let adapter = a.as_ref().map_or(String::new(), |s| {
        format!(
            "{} ({}, shader-f16 {})",
            s.adapter.name,
            s.adapter.backend,
            if s.adapter.shader_f16 { "yes" } else { "no" }
        )
    });
    Ok(Row {
        field: entry.field.to_string(),
        claim: claim.folklore.to_string(),
        base: base_label(claim, table),
        metric: claim.metric.name().to_string(),
        steps: claim.steps,
        runs_per_side: runs_per_side(claim, Bench::NATIVE),
        off: judgement.off,
        on: judgement.on,
        high_water_in_use_off: a.as_ref().map(|s| s.high_water_in_use_bytes),
        high_water_in_use_on: b.as_ref().map(|s| s.high_water_in_use_bytes),
        high_water_reserved_off: a.as_ref().map(|s| s.high_water_reserved_bytes),
        high_water_reserved_on: b.as_ref().map(|s| s.high_water_reserved_bytes),
        ms_per_step_off: a.as_ref().map(|s| s.median_step_ms),
        ms_per_step_on: b.as_ref().map(|s| s.median_step_ms),
        final_loss_off: a.as_ref().and_then(|s| s.final_loss),
        final_loss_on: b.as_ref().and_then(|s| s.final_loss),
        verdict: judgement.verdict,
        reason: judgement.reason,
        parts: judgement.parts,
        unjudged: judgement.unjudged,
        mechanism: claim.mechanism.to_string(),
        adapter,
    })
}

/// Run every claim of the catalog (or those about the `only` fields), with a progress bar on
/// stderr; on `table` (a data section with its table read) instead of each claim's data.
pub fn run_all(only: &[String], table: Option<&DataConfig>) -> anyhow::Result<Report> {
    let started = Instant::now();
    if let Some(unknown) = only.iter().find(|field| catalog::find(field).is_none()) {
        let known: Vec<&str> = catalog::CATALOG.iter().map(|e| e.field).collect();
        return Err(ConfigError::invalid(
            "--only",
            format!(
                "{unknown} has no claims; fields with claims: {}",
                known.join(", ")
            ),
        )
        .into());
    }
    let claims: Vec<(&Entry, &Claim)> = catalog::claims()
        .filter(|(entry, _)| only.is_empty() || only.iter().any(|f| f == entry.field))
        .collect();
    let bar =
        ProgressBar::with_draw_target(Some(claims.len() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} claims  {msg}",
        )
        .expect("the template is valid"),
    );
    let mut rows = Vec::new();
    for (entry, claim) in claims {
        bar.set_message(format!("{}: {}", entry.field, claim.folklore));
        rows.push(run_claim(entry, claim, table)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(Report {
        adapter: rows
            .iter()
            .find(|r| !r.adapter.is_empty())
            .map_or(String::new(), |r| r.adapter.clone()),
        seconds: started.elapsed().as_secs_f64(),
        rows,
    })
}

fn ratio(off: Option<f64>, on: Option<f64>) -> String {
    match (off, on) {
        (Some(a), Some(b)) if a > 0.0 => format!("{:.2}x", b / a),
        _ => "-".into(),
    }
}

fn mib_pair(off: Option<u64>, on: Option<u64>) -> String {
    let show = |b: Option<u64>| b.map_or("-".into(), |b| format!("{:.2}", mib(b)));
    format!(
        "{} / {} ({})",
        show(off),
        show(on),
        ratio(off.map(|b| b as f64), on.map(|b| b as f64))
    )
}

/// The report as a Markdown table.
pub fn markdown(report: &Report) -> String {
    let mut bases: Vec<&str> = Vec::new();
    for row in &report.rows {
        if !bases.contains(&row.base.as_str()) {
            bases.push(&row.base);
        }
    }
    let mut out = format!(
        "# vramlab claims report\n\nAdapter: {}. Each claim: the same base run and seed without \
         the tip (off) and with it (on); the claim's figure is the median over the steps after \
         the first (timing: over three runs a side), and a verdict needs a difference beyond \
         the interquartile spread and 1% of the figure. Memory in MiB from the GPU allocator, at \
         its high-water mark. Base runs: `{}`. {} claims in {:.0} s.\n\n| field | claim | \
         high-water in use off / on | high-water reserved off / on | ms/step on/off | final loss \
         off / on | verdict |\n|---|---|---|---|---|---|---|\n",
        report.adapter,
        bases.join("`, `"),
        report.rows.len(),
        report.seconds
    );
    let loss = |l: Option<f32>| l.map_or("-".into(), |l| format!("{l:.4}"));
    for row in &report.rows {
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} / {} | **{}**: {} |\n",
            row.field,
            row.claim,
            mib_pair(row.high_water_in_use_off, row.high_water_in_use_on),
            mib_pair(row.high_water_reserved_off, row.high_water_reserved_on),
            ratio(row.ms_per_step_off, row.ms_per_step_on),
            loss(row.final_loss_off),
            loss(row.final_loss_on),
            row.verdict,
            row.reason
        ));
    }
    out
}

pub fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
