//! `vramlab claims`: every memory-saving tip run without it and with it (same seed, a few
//! steps) and a verdict from what was measured. Each run is its own `vramlab train --json`
//! process: the allocator's pools are fixed when a device starts, so a tip like the pool choice
//! needs a fresh process, and a run stopped by its budget must not share one with the next.

use std::path::Path;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use vramlab::engine::RunConfig;
use vramlab::engine::claims::{Verdict, judge, judge_budget};
use vramlab::engine::config::Budget;
use vramlab::engine::overrides::apply_overrides;
use vramlab::engine::presets::preset;
use vramlab::engine::strategies::catalog::{self, Claim, Entry, Metric};
use vramlab::engine::train::Summary;

use crate::report::mib;
use crate::subprocess::{self, Trained};

/// Steps per run: enough for the second and later steps to set the peaks and the timing.
const STEPS: usize = 12;

/// One line of the report; the JSON form is one of these per claim.
#[derive(Serialize, Debug)]
pub struct Row {
    pub strategy: String,
    pub claim: String,
    pub metric: String,
    pub metric_off: Option<f64>,
    pub metric_on: Option<f64>,
    pub peak_in_use_off: Option<u64>,
    pub peak_in_use_on: Option<u64>,
    pub peak_reserved_off: Option<u64>,
    pub peak_reserved_on: Option<u64>,
    pub ms_per_step_off: Option<f64>,
    pub ms_per_step_on: Option<f64>,
    pub final_loss_off: Option<f32>,
    pub final_loss_on: Option<f32>,
    pub verdict: Verdict,
    pub reason: String,
    /// The adapter the runs used, for the report's heading.
    #[serde(skip)]
    pub adapter: String,
}

/// The claim's preset with `sets` applied, run for [`STEPS`] steps and evaluated at the end.
fn config(claim: &Claim, sets: &[&str], budget: Option<u64>) -> anyhow::Result<RunConfig> {
    let mut config = apply_overrides(preset(claim.preset)?, sets.iter().copied())?;
    config.steps = STEPS;
    config.eval_every = 0;
    config.budget = budget.map(Budget::Bytes);
    config.validate()?;
    Ok(config)
}

/// A run that must fit: the claims run without budgets, except the budget claim's own.
fn fitted(entry: &Entry, config: &RunConfig) -> anyhow::Result<Box<Summary>> {
    match subprocess::train(config)? {
        Trained::Fit(summary) => Ok(summary),
        Trained::OutOfMemory(oom) => anyhow::bail!(
            "{}: out of memory without a budget: {}",
            entry.field,
            oom.headline()
        ),
    }
}

fn run_claim(entry: &Entry, claim: &Claim) -> anyhow::Result<Row> {
    let off = fitted(entry, &config(claim, claim.off, None)?)?;
    let (on, judgement) = if claim.metric == Metric::StopsUnderBudget {
        // Half of what the run reserved at its peak: a GPU half as large.
        let budget = off.peak_reserved_bytes / 2;
        let stopped = match subprocess::train(&config(claim, claim.on, Some(budget))?)? {
            Trained::OutOfMemory(oom) => Some(oom),
            Trained::Fit(_) => None,
        };
        let after = fitted(entry, &config(claim, claim.off, None)?)?;
        (None, judge_budget(budget, stopped.as_deref(), &after))
    } else {
        let on = fitted(entry, &config(claim, claim.on, None)?)?;
        let judgement = judge(claim, &off, &on);
        (Some(on), judgement)
    };
    Ok(Row {
        strategy: entry.field.to_string(),
        claim: claim.folklore.to_string(),
        metric: claim.metric.name().to_string(),
        metric_off: judgement.metric_off,
        metric_on: judgement.metric_on,
        peak_in_use_off: Some(off.peak_in_use_bytes),
        peak_in_use_on: on.as_ref().map(|s| s.peak_in_use_bytes),
        peak_reserved_off: Some(off.peak_reserved_bytes),
        peak_reserved_on: on.as_ref().map(|s| s.peak_reserved_bytes),
        ms_per_step_off: Some(off.median_step_ms),
        ms_per_step_on: on.as_ref().map(|s| s.median_step_ms),
        final_loss_off: off.final_loss,
        final_loss_on: on.as_ref().and_then(|s| s.final_loss),
        verdict: judgement.verdict,
        reason: judgement.reason,
        adapter: format!(
            "{} ({}, shader-f16 {})",
            off.adapter.name,
            off.adapter.backend,
            if off.adapter.shader_f16 { "yes" } else { "no" }
        ),
    })
}

/// Run every claim of the catalog, with a progress bar on stderr.
pub fn run_all() -> anyhow::Result<Vec<Row>> {
    let claims: Vec<(&Entry, &Claim)> = catalog::claims().collect();
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
        rows.push(run_claim(entry, claim)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(rows)
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
pub fn markdown(rows: &[Row]) -> String {
    let adapter = rows.first().map_or("", |row| row.adapter.as_str());
    let mut out = format!(
        "# vramlab claims report\n\nAdapter: {adapter}. Each claim: the same preset and seed, \
         {STEPS} steps, without the tip (off) and with it (on). Memory in MiB from the GPU \
         allocator.\n\n| strategy | claim | peak in use off / on | peak reserved off / on | \
         ms/step on/off | final loss off / on | verdict |\n|---|---|---|---|---|---|---|\n"
    );
    let loss = |l: Option<f32>| l.map_or("-".into(), |l| format!("{l:.4}"));
    for row in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} / {} | **{}**: {} |\n",
            row.strategy,
            row.claim,
            mib_pair(row.peak_in_use_off, row.peak_in_use_on),
            mib_pair(row.peak_reserved_off, row.peak_reserved_on),
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
