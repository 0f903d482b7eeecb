//! `vramlab soak`: long runs that must not creep. Each preset trains with Adam for many steps,
//! reading the allocator once at the end of each step; it prints bytes in use at every step's
//! end and reserved every 100 steps, then a verdict: from `--from` on, in use may vary by at
//! most [`IN_USE_SLACK`] bytes (a group of pending loss scalars comes and goes) and reserved not
//! at all. A benchmark that prints, not a timed test: 10,000 steps take minutes to hours.

use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use vramlab::engine::config::{MemorySampling, OptimizerKind};
use vramlab::engine::overrides::apply_overrides;
use vramlab::engine::phase::Phase;
use vramlab::engine::presets::preset;
use vramlab::engine::{self, Run, RunConfig};

use crate::args::SoakArgs;

/// How much in use at a step's end may vary once the run has settled.
pub const IN_USE_SLACK: u64 = 4096;
/// Reserved is printed (and judged) every this many steps.
const RESERVED_EVERY: usize = 100;

/// One preset's end-of-step readings.
struct Soaked {
    name: String,
    in_use: Vec<u64>,
    /// (step, reserved) every [`RESERVED_EVERY`] steps.
    reserved: Vec<(usize, u64)>,
    seconds: f64,
}

pub fn run(args: &SoakArgs) -> anyhow::Result<()> {
    let mut soaked = Vec::new();
    for name in &args.presets {
        let config = soak_config(name, args)?;
        soaked.push(soak(config)?);
    }
    println!();
    let mut creeping = Vec::new();
    for run in &soaked {
        let (line, flat) = verdict(run, args.from);
        println!("{line}");
        if !flat {
            creeping.push(run.name.clone());
        }
    }
    if creeping.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("not flat: {}", creeping.join(", "))
    }
}

fn soak_config(name: &str, args: &SoakArgs) -> anyhow::Result<RunConfig> {
    let mut config = preset(name)?;
    config.optimizer = OptimizerKind::Adam;
    config.steps = args.steps;
    config.memory_sampling = MemorySampling::Step;
    // Evaluations allocate their own batches; the soak is about the training step.
    config.eval_every = 0;
    let config = apply_overrides(config, args.sets.iter().map(String::as_str))?;
    config.validate()?;
    Ok(config)
}

fn soak(config: RunConfig) -> anyhow::Result<Soaked> {
    let gpu = pollster::block_on(engine::acquire_with(config.strategies.memory_pool))?;
    let name = config.name.clone();
    println!(
        "{name}: {} steps, {} optimizer, batch {}, learning rate {}",
        config.steps,
        config.optimizer.name(),
        config.batch_size,
        config.learning_rate
    );
    let bar =
        ProgressBar::with_draw_target(Some(config.steps as u64), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} steps {msg}",
        )
        .expect("the template is valid"),
    );
    let started = Instant::now();
    let mut run = Run::new(config, &gpu)?;
    let mut soaked = Soaked {
        name,
        in_use: Vec::new(),
        reserved: Vec::new(),
        seconds: 0.0,
    };
    while !run.is_finished() {
        let outcome = pollster::block_on(run.step())?;
        let step = outcome.record.step;
        let end = outcome
            .record
            .phases
            .get(&Phase::Optimizer)
            .copied()
            .unwrap_or_default();
        soaked.in_use.push(end.in_use_bytes);
        // cubecl's own memories (launch info uniforms, staging) are in use but not in the
        // pools the tensors live in: print both, so a creep can be told apart.
        let mut line = format!(
            "{} step {step}: in use {} B (tensors' pools {} B)",
            soaked.name, end.in_use_bytes, end.pooled_in_use_bytes
        );
        if step == 1 || step.is_multiple_of(RESERVED_EVERY) {
            soaked.reserved.push((step, end.reserved_bytes));
            line.push_str(&format!(", reserved {} B", end.reserved_bytes));
        }
        // stdout, beside the bar on stderr (`println` on a hidden bar prints nothing).
        bar.suspend(|| println!("{line}"));
        bar.set_message(format!("in use {} B", end.in_use_bytes));
        bar.inc(1);
    }
    bar.finish_and_clear();
    soaked.seconds = started.elapsed().as_secs_f64();
    Ok(soaked)
}

/// The verdict line, and whether the run stayed flat from step `from` on.
fn verdict(run: &Soaked, from: usize) -> (String, bool) {
    let at = |step: usize| run.in_use.get(step.saturating_sub(1)).copied().unwrap_or(0);
    let settled = run.in_use.get(from.saturating_sub(1)..).unwrap_or(&[]);
    let spread = |values: &mut dyn Iterator<Item = u64>| {
        let (lo, hi) = values.fold((u64::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
        hi.saturating_sub(lo)
    };
    let in_use_spread = spread(&mut settled.iter().copied());
    let reserved_spread = spread(
        &mut run
            .reserved
            .iter()
            .filter(|(step, _)| *step >= from)
            .map(|&(_, bytes)| bytes),
    );
    let steps = run.in_use.len();
    let flat = !settled.is_empty() && in_use_spread <= IN_USE_SLACK && reserved_spread == 0;
    let marks: Vec<String> = [1, 2, 10, 100, from, steps]
        .into_iter()
        .filter(|&s| s <= steps)
        .map(|s| format!("{} B at step {s}", at(s)))
        .collect();
    let line = format!(
        "{}: {steps} steps in {:.0} s; in use at the step's end: {}; from step {from} to {steps} \
         it varies by {in_use_spread} B (at most {IN_USE_SLACK}), reserved by {reserved_spread} B \
         (at most 0): {}",
        run.name,
        run.seconds,
        marks.join(", "),
        if flat { "flat" } else { "NOT FLAT" }
    );
    (line, flat)
}
