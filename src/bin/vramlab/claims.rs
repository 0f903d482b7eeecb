//! `vramlab claims`: every folklore claim of the catalog run without the tip and with it (same
//! base run and seed) and judged by the engine (`engine::claims::run_claim`, the flow the page's
//! lessons run too): each side's figure is the median over its steps (and, for timing, over
//! three runs), and a verdict needs a difference beyond their spread. Here each run is its own
//! `vramlab train` process: the allocator's pools are fixed when a device starts, so a tip like
//! the pool choice needs a fresh process, and a run stopped by its budget must not share one
//! with the next: the report says what a user's `vramlab train` sees. Judged as the page judges
//! (`--as-page`, no pool claim), every run trains on one device in this process, as the page's
//! runs do on its one device: a stopped run is dropped with its tensors and the next starts from
//! the device's baseline. This module picks the claims, shows progress and writes the report,
//! and holds the page's exported lessons to a native report (`engine::claims::compare`).

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use vramlab::engine::ConfigError;
use vramlab::engine::claims::{
    Bench, Cards, Report, Row, Verdict, base_label, compare, left_out_of_run_all, run_claim,
};
use vramlab::engine::config::DataConfig;
use vramlab::engine::format::ByteFormat;
use vramlab::engine::strategies::catalog::{self, Claim, Entry};
use vramlab::engine::train::InProcess;

use crate::args::LiveArgs;
use crate::live::{self, relay};
use crate::subprocess::Subprocess;

/// A report, and why it stopped short when the page stopped it.
pub struct Judged {
    pub report: Report,
    pub stopped: Option<String>,
}

/// Run every claim of the catalog (or those about the `only` fields, and of those the ones whose
/// folklore contains one of `texts`), with a progress bar on stderr; on `table` (a data section
/// with its table read) instead of each claim's data. `as_page`: judged on what a page
/// measures ([`Bench::as_page`]), and the claims a page's "Run all lessons" leaves to their own
/// card not run, with its reason: the report the page's table is compared with. With `--live`:
/// each run shown on the page and each verdict noted there; a stop from the page ends the
/// report at the claims judged before it.
pub fn run_all(
    only: &[String],
    texts: &[String],
    table: Option<&DataConfig>,
    as_page: bool,
    live: &LiveArgs,
) -> anyhow::Result<Judged> {
    let bench = if as_page {
        Bench::as_page()
    } else {
        Bench::NATIVE
    };
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
        .filter(|(_, claim)| texts.is_empty() || texts.iter().any(|t| claim.folklore.contains(t)))
        .collect();
    if claims.is_empty() {
        return Err(ConfigError::invalid(
            "--claim",
            format!(
                "no claim{} contains {}",
                if only.is_empty() {
                    ""
                } else {
                    " about those fields"
                },
                texts.join(" or ")
            ),
        )
        .into());
    }
    let bar =
        ProgressBar::with_draw_target(Some(claims.len() as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} claims  {msg}",
        )
        .expect("the template is valid"),
    );
    let hub = if live.live {
        Some(live::open(live, "these claims")?)
    } else {
        None
    };
    let live = hub.as_ref();
    relay::note(
        live,
        &format!(
            "claims: {} claim(s), each run without the tip and with it on the same base run; \
             every run is shown here in turn, and each verdict is listed",
            claims.len()
        ),
    );
    let mut rows = Vec::new();
    let mut runner = Subprocess::new(false, live.cloned());
    // As the page (`Bench::page`: one device for its life), unless each run is shown on the
    // page, which its own process relays. A process a run costs lavapipe about a second and a
    // half (the device and every kernel again), most of a page-sized claim's time here.
    let one_device = if as_page && live.is_none() {
        Some(pollster::block_on(vramlab::engine::acquire())?)
    } else {
        None
    };
    let total = claims.len();
    let mut stopped = None;
    for (entry, claim) in claims {
        bar.set_message(format!("{}: {}", entry.field, claim.folklore));
        let claim_started = Instant::now();
        let mut row = match left_out_of_run_all(entry, claim).filter(|_| as_page) {
            Some(why) => Row::unmeasured(
                entry,
                claim,
                base_label(claim, table),
                Verdict::NotRunHere,
                why,
            ),
            None => match &one_device {
                Some(gpu) => {
                    let mut runner = InProcess { gpu };
                    pollster::block_on(run_claim(&mut runner, entry, claim, bench, table)).row
                }
                None => pollster::block_on(run_claim(&mut runner, entry, claim, bench, table)).row,
            },
        };
        row.seconds = claim_started.elapsed().as_secs_f64();
        if runner.cut_short {
            // The claim in flight was cut short: it has no verdict.
            let why = format!(
                "stopped from the page: the report has the {} of {total} claims judged before",
                rows.len()
            );
            relay::note(live, &why);
            stopped = Some(why);
            break;
        }
        relay::note(
            live,
            &format!(
                "{}: {}: {}: {}",
                row.field, row.claim, row.verdict, row.reason
            ),
        );
        rows.push(row);
        bar.inc(1);
    }
    bar.finish_and_clear();
    if let Some(hub) = live {
        live::close(hub);
    }
    let report = Report {
        adapter: rows
            .iter()
            .find(|r| !r.adapter.is_empty())
            .map_or(String::new(), |r| r.adapter.clone()),
        bench,
        seconds: started.elapsed().as_secs_f64(),
        rows,
    };
    Ok(Judged { report, stopped })
}

fn ratio(off: Option<f64>, on: Option<f64>) -> String {
    match (off, on) {
        (Some(a), Some(b)) if a > 0.0 => format!("{:.2}x", b / a),
        _ => "-".into(),
    }
}

fn mib_pair(off: Option<u64>, on: Option<u64>) -> String {
    let show = |b: Option<u64>| b.map_or("-".into(), |b| ByteFormat::MIB.number(b));
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

fn read_report(path: &Path, what: &str) -> anyhow::Result<Report> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text)
        .with_context(|| format!("{} is not {what}", path.display()))
        .map_err(|err| ConfigError::invalid("--compare-page", format!("{err:#}")).into())
}

/// `--compare-page PAGE --native NATIVE`: print how the page's lessons compare with the native
/// report, card by card, and fail naming each difference. `some_cards`: the page ran some cards
/// on their own buttons instead of "Run all lessons" ([`Cards::Some`]).
pub fn compare_page(page: &Path, native: &Path, some_cards: bool) -> anyhow::Result<()> {
    let ours = read_report(page, "the page's exported lessons (a report with a bench)")?;
    let theirs = read_report(native, "a report of `vramlab claims --json`")?;
    let cards = if some_cards { Cards::Some } else { Cards::All };
    let out = compare(&ours.rows, ours.bench, &theirs.rows, theirs.bench, cards);
    println!(
        "the page ({}; {}) against {} ({}; {}): {} of the {} cards the page ran have the native \
         verdict",
        // Browsers may keep the adapter's name to themselves.
        if ours.adapter.is_empty() {
            "adapter not disclosed by the browser"
        } else {
            ours.adapter.as_str()
        },
        ours.bench,
        native.display(),
        theirs.adapter,
        theirs.bench,
        out.same,
        out.ran
    );
    for allowed in &out.allowed {
        println!("  differs where the claim allows it: {allowed}");
    }
    for difference in &out.differences {
        println!("  differs: {difference}");
    }
    if !out.differences.is_empty() {
        bail!(
            "{} card(s) of the page differ from the native report",
            out.differences.len()
        );
    }
    Ok(())
}

pub fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
