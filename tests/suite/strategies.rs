//! Each strategy's measured effect on allocator memory, in the expected direction and roughly
//! the expected size, printed beside the analytic prediction.

use vramlab::engine::config::OptimizerKind;
use vramlab::engine::memory::{Phase, predict};
use vramlab::engine::{Gpu, RunConfig, Timeline};

use super::support::{config, gpu, mib, run};

/// The largest reading of `phase` over the steps after the first (which has no optimizer state).
fn phase_peak(timeline: &Timeline, phase: Phase) -> u64 {
    timeline.steps[1..]
        .iter()
        .filter_map(|s| s.phases.get(&phase))
        .map(|r| r.in_use_bytes)
        .max()
        .expect("the phase was sampled")
}

/// Activation bytes as measured: in use after forward minus in use after upload.
fn measured_activations(timeline: &Timeline) -> u64 {
    phase_peak(timeline, Phase::Forward) - phase_peak(timeline, Phase::Upload)
}

fn both(gpu: &Gpu, base: &[&str], on: &[&str]) -> (RunConfig, Timeline, RunConfig, Timeline) {
    let off_cfg = config("spiral-mlp", base);
    let mut on_sets = base.to_vec();
    on_sets.extend_from_slice(on);
    let on_cfg = config("spiral-mlp", &on_sets);
    let off = run(gpu, off_cfg.clone());
    let on = run(gpu, on_cfg.clone());
    (off_cfg, off, on_cfg, on)
}

/// A strategy's effect on activation bytes: measured and predicted, off and on.
struct ActivationEffect {
    measured: (u64, u64),
    predicted: (u64, u64),
    off: Timeline,
    on: Timeline,
}

fn activation_effect(gpu: &Gpu, base: &[&str], on: &[&str]) -> ActivationEffect {
    let (off_cfg, off, on_cfg, on) = both(gpu, base, on);
    ActivationEffect {
        measured: (measured_activations(&off), measured_activations(&on)),
        predicted: (predict(&off_cfg).activations, predict(&on_cfg).activations),
        off,
        on,
    }
}

impl ActivationEffect {
    fn print(&self, label: &str) {
        println!(
            "{label}: activations {:.2} -> {:.2} MiB (predicted {:.2} -> {:.2}); peak in use {:.2} -> {:.2} MiB; ms/step {:.1} -> {:.1}",
            mib(self.measured.0),
            mib(self.measured.1),
            mib(self.predicted.0),
            mib(self.predicted.1),
            mib(self.off.summary.peak_in_use_bytes),
            mib(self.on.summary.peak_in_use_bytes),
            self.off.summary.median_step_ms,
            self.on.summary.median_step_ms
        );
    }
}

#[test]
fn grad_accumulation_cuts_activations_about_k_fold() {
    let (_lock, gpu) = gpu();
    let base = ["steps=3", "eval_every=0", "batch_size=2048"];
    let effect = activation_effect(&gpu, &base, &["strategies.grad_accumulation=4"]);
    effect.print("grad_accumulation 1 -> 4");
    let (a_off, a_on) = effect.measured;
    let ratio = a_on as f64 / a_off as f64;
    assert!(
        (0.15..=0.35).contains(&ratio),
        "activations fell to {ratio:.3} of off, expected ~0.25"
    );
    assert!(effect.on.summary.peak_in_use_bytes < effect.off.summary.peak_in_use_bytes);
}

#[test]
fn grad_accumulation_with_sgd_matches_one_big_batch() {
    let (_lock, gpu) = gpu();
    let base = [
        "steps=6",
        "eval_every=0",
        "batch_size=256",
        "optimizer=sgd",
        "learning_rate=0.1",
    ];
    let (_, off, _, on) = both(&gpu, &base, &["strategies.grad_accumulation=4"]);
    for (a, b) in off.steps.iter().zip(&on.steps) {
        let (a, b) = (a.loss.unwrap(), b.loss.unwrap());
        assert!(
            (a - b).abs() <= 1e-4 * a.abs().max(1.0),
            "step loss {a} vs {b}"
        );
    }
    let (a, b) = (
        off.summary.eval_loss.unwrap(),
        on.summary.eval_loss.unwrap(),
    );
    println!("sgd, 1 batch of 256 vs 4 micro-batches of 64: final test loss {a} vs {b}");
    assert!(
        (a - b).abs() <= 1e-4 * a.abs().max(1.0),
        "parameters diverged: test loss {a} vs {b}"
    );
}

#[test]
fn grad_accumulation_is_refused_beyond_the_batch() {
    let cfg = config("spiral-mlp", &["batch_size=64"]);
    for bad in [0, 65] {
        let mut c = cfg.clone();
        c.strategies.grad_accumulation = bad;
        let err = c.validate().unwrap_err().to_string();
        assert!(
            err.contains("strategies.grad_accumulation") && err.contains("1..=64"),
            "{err}"
        );
    }
}

#[test]
fn evaluating_through_autodiff_keeps_a_graph_per_eval_batch() {
    let (_lock, gpu) = gpu();
    let base = [
        "steps=2",
        "eval_every=0",
        "batch_size=256",
        "eval_batch_size=2048",
    ];
    let (off_cfg, off, on_cfg, on) = both(&gpu, &base, &["strategies.eval_mode=autodiff"]);
    let eval = |t: &Timeline| t.evals.last().unwrap().memory.in_use_bytes;
    let extra = eval(&on) as f64 - eval(&off) as f64;
    let predicted = predict(&on_cfg).eval_batch as f64 - predict(&off_cfg).eval_batch as f64;
    println!(
        "eval_mode no_grad -> autodiff: eval in use {:.2} -> {:.2} MiB (predicted extra {:.2} MiB)",
        mib(eval(&off)),
        mib(eval(&on)),
        predicted / 1048576.0
    );
    assert!(
        extra > 0.5 * predicted,
        "autodiff eval kept only {extra} extra bytes"
    );
    assert!((off.summary.eval_loss.unwrap() - on.summary.eval_loss.unwrap()).abs() < 1e-4);
}

#[test]
fn one_huge_eval_batch_spikes_memory() {
    let (_lock, gpu) = gpu();
    let base = [
        "steps=2",
        "eval_every=0",
        "batch_size=256",
        "eval_batch_size=64",
    ];
    let (_, small, _, whole) = both(&gpu, &base, &["eval_batch_size=2048"]);
    let eval = |t: &Timeline| t.evals.last().unwrap().memory.in_use_bytes;
    println!(
        "eval_batch_size 64 -> 2048 (the whole test split): eval in use {:.3} -> {:.3} MiB",
        mib(eval(&small)),
        mib(eval(&whole))
    );
    assert!(eval(&whole) > eval(&small) + 2048 * 2 * 4, "no spike");
}

#[test]
fn checkpointing_keeps_fewer_activations() {
    let (_lock, gpu) = gpu();
    let base = ["steps=3", "eval_every=0", "batch_size=2048"];
    let effect = activation_effect(&gpu, &base, &["strategies.checkpointing=balanced"]);
    effect.print("checkpointing none -> balanced");
    let ((a_off, a_on), (p_off, p_on)) = (effect.measured, effect.predicted);
    let saved = a_off as f64 - a_on as f64;
    let predicted_saved = p_off as f64 - p_on as f64;
    assert!(
        saved > 0.5 * predicted_saved,
        "saved {saved} bytes, predicted {predicted_saved}"
    );
    for (a, b) in effect.off.steps.iter().zip(&effect.on.steps) {
        let (a, b) = (a.loss.unwrap(), b.loss.unwrap());
        assert!(
            (a - b).abs() <= 1e-4 * a.abs().max(1.0),
            "same maths: {a} vs {b}"
        );
    }
}

#[test]
fn optimizer_state_is_zero_one_and_two_copies_of_the_parameters() {
    let (_lock, gpu) = gpu();
    let resident = |optimizer: OptimizerKind| {
        let name = format!("{optimizer:?}").to_lowercase();
        let cfg = config(
            "digits-mlp",
            &["steps=3", "eval_every=0", &format!("optimizer={name}")],
        );
        let timeline = run(&gpu, cfg.clone());
        (phase_peak(&timeline, Phase::Optimizer), predict(&cfg))
    };
    let (sgd, prediction) = resident(OptimizerKind::Sgd);
    let (momentum, _) = resident(OptimizerKind::Momentum);
    let (adam, _) = resident(OptimizerKind::Adam);
    let params = prediction.params as f64;
    println!(
        "after the optimizer step: sgd {:.2}, momentum {:.2}, adam {:.2} MiB; parameters {:.2} MiB",
        mib(sgd),
        mib(momentum),
        mib(adam),
        params / 1048576.0
    );
    let momentum_state = (momentum as f64 - sgd as f64) / params;
    let adam_state = (adam as f64 - sgd as f64) / params;
    assert!(
        (0.75..=1.25).contains(&momentum_state),
        "momentum state {momentum_state:.3}x params"
    );
    assert!(
        (1.5..=2.5).contains(&adam_state),
        "adam state {adam_state:.3}x params"
    );
}
