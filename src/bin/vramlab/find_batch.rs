//! `vramlab find-batch`: the engine's max-batch finder with a progress line per trial, and the
//! comparison of the five search methods; with `--longest-sequence`, the same search over
//! `data.seq_len` at the configured batch.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use vramlab::engine::finder::{self, Axis, Method, Question, Search, Trial};
use vramlab::engine::{ConfigError, Gpu, Purpose, RunConfig};

use vramlab::engine::format::{ByteFormat, mib};

use std::sync::Arc;

use crate::args::{FindArgs, MethodArg};
use crate::live::{self, Hub, relay};
use crate::report;
use crate::subprocess::Subprocess;

fn method(arg: MethodArg) -> Method {
    match arg {
        MethodArg::SeedLinear => Method::SeedLinear,
        MethodArg::Accelerate => Method::Accelerate,
        MethodArg::LightningPower => Method::LightningPower,
        MethodArg::LightningBinsearch => Method::LightningBinsearch,
        MethodArg::Vramlab => Method::Vramlab,
    }
}

/// One search, its trials as runs or as plans (`purpose`); each trial shown on the page of
/// `live`, and its outcome noted there, when given.
fn search(
    question: &Question,
    method: Method,
    purpose: Purpose,
    live: Option<&Arc<Hub>>,
) -> anyhow::Result<Search> {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {prefix}: {pos} trials  {msg}")
            .expect("the template is valid"),
    );
    bar.set_prefix(method.name());
    let mut on_trial = |trial: &Trial| {
        bar.inc(1);
        let line = format!(
            "  {}: {} {:>6} {} (peak in use {:.2} MiB, reserved {:.2} MiB)",
            method.name(),
            match trial.seq_len {
                Some(_) => "seq_len",
                None => "batch",
            },
            trial.value(),
            if trial.fits { "fits" } else { "out of memory" },
            mib(trial.peak_in_use_bytes),
            mib(trial.peak_reserved_bytes)
        );
        relay::note(live, line.trim_start());
        bar.println(line);
    };
    let bound = match purpose {
        Purpose::Run => None,
        Purpose::Plan => question.bound.clone(),
    };
    let question = Question {
        config: question.config,
        axis: question.axis,
        budget_bytes: question.budget_bytes,
        multiple_of: question.multiple_of,
        max_trials: question.max_trials,
        purpose,
        bound,
    };
    // As plans, `train --dry-run`: in-process plans would inherit the earlier trials' pages and
    // fused shapes, and differ by those.
    let mut runner = Subprocess::new(purpose == Purpose::Plan, live.cloned());
    let found = pollster::block_on(finder::find(&question, method, &mut runner, &mut on_trial));
    bar.finish_and_clear();
    if let Some(hub) = live {
        // The page hears why the search ended without an answer, and its stream closes.
        let why = if runner.cut_short {
            Some("stopped from the page: the search has no answer".to_string())
        } else {
            found
                .as_ref()
                .err()
                .map(|err| format!("the search failed: {err}"))
        };
        if let Some(why) = why {
            relay::note(Some(hub), &why);
            live::close(hub);
        }
    }
    if runner.cut_short {
        anyhow::bail!(
            "find-batch stopped from the page: the search has no answer (the trials above are \
             what it measured)"
        );
    }
    Ok(found?)
}

pub fn run(args: &FindArgs, config: &RunConfig, gpu: &Gpu) -> anyhow::Result<()> {
    let budget = config.budget.ok_or_else(|| {
        ConfigError::invalid("--budget", "find-batch needs a budget, e.g. --budget 64MiB")
    })?;
    let axis = if args.longest_sequence {
        Axis::SeqLen
    } else {
        Axis::Batch
    };
    let question = Question {
        config,
        axis,
        budget_bytes: budget.bytes(gpu.adapter.max_buffer_size),
        multiple_of: args.multiple_of,
        max_trials: args.max_trials,
        purpose: if args.plan {
            Purpose::Plan
        } else {
            Purpose::Run
        },
        bound: None,
    };
    let question = if args.plan {
        Question {
            bound: Some(finder::plan_bound(config, &gpu.adapter, axis)?),
            ..question
        }
    } else {
        question
    };
    finder::check(&question)?;
    if args.live.live && (args.plan || args.run.dry_run) {
        return Err(ConfigError::invalid(
            "--live",
            "trials as plans have no steps to watch: pass --live or --plan, not both",
        )
        .into());
    }
    if args.plan && args.compare {
        return compare_plans_and_runs(&question, args.run.json);
    }
    let live = if args.live.live {
        let hub = live::open(&args.live, "this search")?;
        relay::note(Some(&hub), &introduction(&question, args.compare));
        Some(hub)
    } else {
        None
    };
    if !args.compare {
        let found = search(
            &question,
            method(args.method),
            question.purpose,
            live.as_ref(),
        )?;
        let answer = answer(&found, question.budget_bytes);
        finish(live.as_ref(), &answer);
        if args.run.json {
            println!("{}", serde_json::to_string_pretty(&found)?);
        } else {
            print!("{answer}");
        }
        return Ok(());
    }
    // vramlab's search first: its answer is the true maximum the others are held to.
    let mut searches = vec![search(
        &question,
        Method::Vramlab,
        question.purpose,
        live.as_ref(),
    )?];
    for other in Method::ALL.into_iter().filter(|m| *m != Method::Vramlab) {
        searches.push(search(&question, other, question.purpose, live.as_ref())?);
    }
    let table = table(&searches, question.budget_bytes);
    finish(live.as_ref(), &table);
    if args.run.json {
        println!("{}", serde_json::to_string_pretty(&searches)?);
    } else {
        print!("{table}");
    }
    Ok(())
}

/// What a live search's page says first: what is searched, and that each trial is a run.
fn introduction(question: &Question, compare: bool) -> String {
    let what = match question.axis {
        Axis::Batch => "the largest batch",
        Axis::SeqLen => "the longest sequence (data.seq_len)",
    };
    format!(
        "find-batch: {} for {what} within {} of {}; each trial is a run of its own, shown \
         here in turn, and its outcome is listed",
        if compare {
            "five search methods, one after another,"
        } else {
            "a search"
        },
        ByteFormat::MIB_OR_GIB.of(question.budget_bytes),
        question.config.name
    )
}

/// The search's answer on its page, and the page's stream closed.
fn finish(live: Option<&Arc<Hub>>, answer: &str) {
    if let Some(hub) = live {
        for line in answer.lines() {
            relay::note(Some(hub), line);
        }
        live::close(hub);
    }
}

/// vramlab's search with its trials as plans, then as runs: the two answers side by side.
fn compare_plans_and_runs(question: &Question, json: bool) -> anyhow::Result<()> {
    let planned = search(question, Method::Vramlab, Purpose::Plan, None)?;
    let measured = search(question, Method::Vramlab, Purpose::Run, None)?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "plans": planned,
                "runs": measured,
            }))?
        );
        return Ok(());
    }
    println!(
        "budget {}",
        ByteFormat::MIB_OR_GIB.of(question.budget_bytes)
    );
    println!(
        "{:<18} {:>8} {:>7} {:>5} {:>9}  notes",
        "trials as", "found", "trials", "OOMs", "seconds"
    );
    for (label, s) in [("plans (dry runs)", &planned), ("runs", &measured)] {
        println!(
            "{:<18} {:>8} {:>7} {:>5} {:>9.1}  {}",
            label,
            batch(s.found()),
            s.trials,
            s.ooms,
            s.seconds,
            s.notes.join("; ")
        );
    }
    Ok(())
}

fn batch(found: Option<usize>) -> String {
    found.map_or("none".into(), |b| b.to_string())
}

/// The search's answer, as printed (one line or a few, each ending in a newline).
fn answer(found: &Search, budget: u64) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let (largest, smallest) = match found.axis {
        Axis::Batch => ("largest batch", "batch"),
        Axis::SeqLen => ("longest sequence (data.seq_len)", "data.seq_len"),
    };
    let _ = match found.found() {
        Some(b) => writeln!(
            out,
            "{largest} within {:.2} MiB: {b} ({} trials, {} out of memory, {:.1} s)",
            mib(budget),
            found.trials,
            found.ooms,
            found.seconds
        ),
        None => match found.smallest_failure() {
            Some((value, oom)) => writeln!(
                out,
                "no {smallest} fits {:.2} MiB: even {smallest} {value} ran out of memory.\n{}",
                mib(budget),
                oom.describe(report::as_set_flag)
            ),
            None => writeln!(out, "no {smallest} fits {}", ByteFormat::MIB.of(budget)),
        },
    };
    if let Some(guess) = found.predicted_batch {
        let _ = writeln!(out, "calibrated prediction: {guess}");
    }
    for note in &found.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

/// The five searches side by side, as printed.
fn table(searches: &[Search], budget: u64) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let truth = searches[0].max_batch;
    let _ = writeln!(
        out,
        "budget {:.2} MiB; true max from vramlab's search: {}",
        mib(budget),
        batch(truth)
    );
    let _ = writeln!(
        out,
        "{:<20} {:>8} {:>8} {:>7} {:>5} {:>9}  notes",
        "method", "found", "true max", "trials", "OOMs", "seconds"
    );
    for s in searches {
        let _ = writeln!(
            out,
            "{:<20} {:>8} {:>8} {:>7} {:>5} {:>9.1}  {}",
            s.method.name(),
            batch(s.max_batch),
            batch(truth),
            s.trials,
            s.ooms,
            s.seconds,
            s.notes.join("; ")
        );
    }
    out
}
