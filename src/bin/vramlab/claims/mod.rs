//! `vramlab claims`: every memory-saving tip run without it and with it (same seed, a few
//! steps) and a verdict from what was measured. Each run is its own `vramlab train --json`
//! process: the allocator's pools are fixed when a device starts, so a tip like the pool choice
//! needs a fresh process, and a run stopped by its budget must not share one with the next.

mod rows;

use std::path::Path;
use std::process::Command;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use vramlab::engine::memory::Phase;
use vramlab::engine::train::Summary;

use crate::report::mib;
use rows::{CLAIMS, Claim, Metric};

/// Steps per run: enough for the second and later steps to set the peaks and the timing.
const STEPS: &str = "12";

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
    pub verdict: String,
    pub reason: String,
    /// The adapter the runs used, for the report's heading.
    #[serde(skip)]
    pub adapter: String,
}

/// What one `vramlab train` process gave: its summary, or the out-of-memory message.
enum Outcome {
    Trained(Box<Summary>),
    OutOfMemory(String),
}

fn train(claim: &Claim, sets: &[&str], budget: Option<&str>) -> anyhow::Result<Outcome> {
    let exe = std::env::current_exe().context("finding the vramlab binary")?;
    let mut command = Command::new(exe);
    command.args([
        "train",
        "--json",
        "--preset",
        claim.preset,
        "--steps",
        STEPS,
    ]);
    command.args(["--set", "eval_every=0"]);
    for set in sets {
        command.args(["--set", set]);
    }
    if let Some(budget) = budget {
        command.args(["--budget", budget]);
    }
    let out = command.output().context("running vramlab train")?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => Ok(Outcome::Trained(Box::new(
            serde_json::from_slice(&out.stdout).context("reading the run's JSON summary")?,
        ))),
        Some(3) => Ok(Outcome::OutOfMemory(
            stderr.lines().next().unwrap_or_default().to_string(),
        )),
        _ => anyhow::bail!("{} {:?}: {stderr}", claim.strategy, sets),
    }
}

fn metric(summary: &Summary, metric: Metric, on_side: bool) -> Option<f64> {
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

fn verdict(
    claim: &Claim,
    off: &Summary,
    on: &Summary,
) -> (String, String, Option<f64>, Option<f64>) {
    let (a, b) = (
        metric(off, claim.metric, false),
        metric(on, claim.metric, true),
    );
    if let Some(note) = on.fallbacks.first().filter(|_| off.fallbacks.is_empty()) {
        return ("not run here".into(), note.clone(), a, b);
    }
    // A NaN loss is written as null: the run with the tip diverged.
    let diverged = off.final_loss.is_some() && on.final_loss.is_none();
    if claim.metric == Metric::FinalLoss && diverged {
        return (
            "does not hold here".into(),
            format!(
                "final loss {:.4} -> NaN: training diverged",
                a.unwrap_or(f64::NAN)
            ),
            a,
            None,
        );
    }
    let (Some(a), Some(b)) = (a, b) else {
        return (
            "not measured".into(),
            format!("no {} figure", claim.metric.name()),
            a,
            b,
        );
    };
    let ratio = if a > 0.0 { b / a } else { f64::INFINITY };
    let shown = if claim.metric == Metric::FinalLoss {
        format!("final loss {a:.4} -> {b:.4}")
    } else {
        format!("{} {ratio:.2}x", claim.metric.name())
    };
    let (mut verdict, mut reason) = if !ratio.is_finite() && claim.metric == Metric::FinalLoss {
        ("does not hold here", format!("{shown}: training diverged"))
    } else if ratio <= claim.holds_at {
        (
            "holds",
            format!("{shown} (needs <= {:.2}x)", claim.holds_at),
        )
    } else if ratio < 0.97 {
        (
            "holds partly",
            format!("{shown}, less than the {:.2}x claimed", claim.holds_at),
        )
    } else {
        ("does not hold here", format!("{shown}: no saving measured"))
    };
    if claim.same_training && verdict == "holds" {
        let worse = match (off.final_loss, on.final_loss) {
            (Some(x), Some(y)) => (y > x * 1.25 + 0.05).then(|| format!("{x:.4} -> {y:.4}")),
            _ => diverged.then(|| "NaN: training diverged".to_string()),
        };
        if let Some(worse) = worse {
            verdict = "holds partly";
            reason = format!("{reason}, but the final loss got worse ({worse})");
        }
    }
    (verdict.into(), reason, Some(a), Some(b))
}

fn run_claim(claim: &Claim) -> anyhow::Result<Row> {
    let Outcome::Trained(off) = train(claim, claim.off, None)? else {
        anyhow::bail!(
            "{}: the run without the tip ran out of memory without a budget",
            claim.strategy
        );
    };
    let (on, verdict, reason, metric_off, metric_on) = if claim.metric == Metric::StopsUnderBudget {
        // Half of what the run reserved at its peak: a GPU half as large.
        let budget = (off.peak_reserved_bytes / 2).to_string();
        let (verdict, reason) = match train(claim, claim.on, Some(&budget))? {
            Outcome::OutOfMemory(message) => (
                "holds",
                format!("at half its peak reserved the run stopped (exit 3): {message}"),
            ),
            Outcome::Trained(_) => (
                "does not hold here",
                "the run fit a budget of half its peak".into(),
            ),
        };
        let after = match train(claim, claim.off, None)? {
            Outcome::Trained(after) => after,
            Outcome::OutOfMemory(m) => anyhow::bail!("the run after the budget failed: {m}"),
        };
        let reason = format!(
            "{reason}; the next run trained, peak {:.2} MiB as before",
            mib(after.peak_in_use_bytes)
        );
        (
            None,
            verdict.to_string(),
            reason,
            Some(off.peak_reserved_bytes as f64 / 2.0),
            None,
        )
    } else {
        let Outcome::Trained(on) = train(claim, claim.on, None)? else {
            anyhow::bail!("{}: out of memory without a budget", claim.strategy);
        };
        let (verdict, reason, a, b) = verdict(claim, &off, &on);
        (Some(on), verdict, reason, a, b)
    };
    Ok(Row {
        strategy: claim.strategy.to_string(),
        claim: claim.claim.to_string(),
        metric: claim.metric.name().to_string(),
        metric_off,
        metric_on,
        peak_in_use_off: Some(off.peak_in_use_bytes),
        peak_in_use_on: on.as_ref().map(|s| s.peak_in_use_bytes),
        peak_reserved_off: Some(off.peak_reserved_bytes),
        peak_reserved_on: on.as_ref().map(|s| s.peak_reserved_bytes),
        ms_per_step_off: Some(off.median_step_ms),
        ms_per_step_on: on.as_ref().map(|s| s.median_step_ms),
        final_loss_off: off.final_loss,
        final_loss_on: on.as_ref().and_then(|s| s.final_loss),
        verdict,
        reason,
        adapter: format!(
            "{} ({}, shader-f16 {})",
            off.adapter.name,
            off.adapter.backend,
            if off.adapter.shader_f16 { "yes" } else { "no" }
        ),
    })
}

/// Run every claim, with a progress bar on stderr.
pub fn run_all() -> anyhow::Result<Vec<Row>> {
    let bar =
        ProgressBar::with_draw_target(Some(CLAIMS.len() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} claims  {msg}",
        )
        .expect("the template is valid"),
    );
    let mut rows = Vec::new();
    for claim in CLAIMS {
        bar.set_message(format!("{}: {}", claim.strategy, claim.claim));
        rows.push(run_claim(claim)?);
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
