//! Each strategy's measured effect on allocator memory, in the expected direction and roughly
//! the expected size, printed beside the analytic prediction.

use vramlab::engine::config::OptimizerKind;
use vramlab::engine::memory::predict;
use vramlab::engine::phase::Phase;
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

/// The same maths either way: every step's loss agrees to 1e-4 (relative above 1).
fn assert_same_step_losses(off: &Timeline, on: &Timeline) {
    for (x, y) in off.steps.iter().zip(&on.steps) {
        let (a, b) = (x.loss.unwrap(), y.loss.unwrap());
        assert!(
            (a - b).abs() <= 1e-4 * a.abs().max(1.0),
            "step {}: loss {a} vs {b}",
            x.step
        );
    }
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
    assert_same_step_losses(&off, &on);
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
fn evaluating_through_autodiff_keeps_a_graph_per_eval_batch() {
    let (_lock, gpu) = gpu();
    let base = [
        "steps=2",
        "eval_every=0",
        "batch_size=256",
        "eval_batch_size=2048",
    ];
    let (off_cfg, off, on_cfg, on) = both(&gpu, &base, &["strategies.eval_mode=autodiff"]);
    let eval = |t: &Timeline| t.evals.last().unwrap().high_water.in_use_bytes;
    let extra = eval(&on) as f64 - eval(&off) as f64;
    let predicted = predict(&on_cfg).eval_batch as f64 - predict(&off_cfg).eval_batch as f64;
    println!(
        "eval_mode no_grad -> autodiff: eval high-water {:.2} -> {:.2} MiB (predicted extra {:.2} MiB)",
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
    let eval = |t: &Timeline| t.evals.last().unwrap().high_water.in_use_bytes;
    println!(
        "eval_batch_size 64 -> 2048 (the whole test split): eval high-water {:.3} -> {:.3} MiB",
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
    assert_same_step_losses(&effect.off, &effect.on);
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

#[test]
fn mixed_precision_f16_keeps_at_most_six_tenths_of_the_activations() {
    let (_lock, gpu) = gpu();
    let base = ["steps=12", "eval_every=0", "batch_size=2048"];
    let effect = activation_effect(&gpu, &base, &["strategies.mixed_precision=f16"]);
    effect.print("mixed_precision off -> f16");
    let summary = &effect.on.summary;
    if !gpu.adapter.shader_f16 {
        println!(
            "skipped the f16 measurement: adapter {} has no shader-f16; checked its fallback note",
            gpu.adapter.name
        );
        // The run must fall back to f32 and say why.
        assert!(
            summary
                .fallbacks
                .iter()
                .any(|f| f.to_string().contains("shader-f16")),
            "{:?}",
            summary.fallbacks
        );
        return;
    }
    let (a_off, a_on) = effect.measured;
    let ratio = a_on as f64 / a_off as f64;
    assert!(ratio <= 0.6, "f16 activations are {ratio:.3} of f32");
    assert_eq!(summary.loss_scale, Some(65536.0));
    assert_eq!(summary.skipped_steps, 0);
    assert!(
        effect
            .on
            .steps
            .iter()
            .all(|s| s.loss_scale == Some(65536.0))
    );
    let (f32_loss, f16_loss) = (
        effect.off.summary.final_loss.unwrap(),
        summary.final_loss.unwrap(),
    );
    assert!(
        (f32_loss - f16_loss).abs() < 0.05,
        "f16 with f32 master weights should track f32: {f32_loss} vs {f16_loss}"
    );
}

#[test]
fn pure_f16_with_adam_loses_what_scaled_f16_keeps() {
    let (_lock, gpu) = gpu();
    if !gpu.adapter.shader_f16 {
        println!(
            "skipped: adapter {} has no shader-f16, so there is no f16 run to compare",
            gpu.adapter.name
        );
        return;
    }
    let base = [
        "steps=30",
        "eval_every=0",
        "batch_size=512",
        "optimizer=adam",
    ];
    let runs: Vec<(&str, Timeline)> = ["off", "f16", "f16_unscaled"]
        .into_iter()
        .map(|mode| {
            let mut sets = base.to_vec();
            let set = format!("strategies.mixed_precision={mode}");
            sets.push(&set);
            (mode, run(&gpu, config("spiral-mlp", &sets)))
        })
        .collect();
    for (mode, t) in &runs {
        println!(
            "{mode}: loss {:?} -> {:?}, parameters+batch after upload {:.3} MiB, peak {:.2} MiB",
            t.summary.first_loss,
            t.summary.final_loss,
            mib(phase_peak(t, Phase::Upload)),
            mib(t.summary.peak_in_use_bytes)
        );
    }
    let final_loss = |i: usize| runs[i].1.summary.final_loss.unwrap_or(f32::NAN);
    let (f32_loss, mixed, pure) = (final_loss(0), final_loss(1), final_loss(2));
    assert!((f32_loss - mixed).abs() < 0.05, "{f32_loss} vs {mixed}");
    assert!(
        !pure.is_finite() || pure > f32_loss + 0.1,
        "pure f16 was expected to diverge or lag: {pure} vs {f32_loss}"
    );
    // `model.half()` halves the parameters resident after upload (the batch stays f32).
    let (p_off, p_pure) = (
        phase_peak(&runs[0].1, Phase::Upload),
        phase_peak(&runs[2].1, Phase::Upload),
    );
    assert!(p_pure < p_off, "{p_pure} vs {p_off}");
}

/// In use at the end of each step.
fn resident(t: &Timeline) -> Vec<u64> {
    t.steps
        .iter()
        .map(|s| s.phases[&Phase::Optimizer].in_use_bytes)
        .collect()
}

/// Bytes in use added per step from step 2 to the last.
fn growth_per_step(t: &Timeline) -> f64 {
    let ends = resident(t);
    (ends[ends.len() - 1] as f64 - ends[1] as f64) / (ends.len() - 2) as f64
}

#[test]
fn keeping_each_steps_outputs_grows_memory_and_summing_the_loss_tensor_does_not() {
    let (_lock, gpu) = gpu();
    let base = ["steps=6", "eval_every=0", "batch_size=2048"];
    let runs: Vec<(&str, RunConfig, Timeline)> = ["scalar", "tensor", "outputs"]
        .into_iter()
        .map(|mode| {
            let mut sets = base.to_vec();
            let set = format!("strategies.loss_bookkeeping={mode}");
            sets.push(&set);
            let cfg = config("spiral-mlp", &sets);
            (mode, cfg.clone(), run(&gpu, cfg))
        })
        .collect();
    for (mode, _, t) in &runs {
        println!(
            "loss_bookkeeping {mode}: in use after steps 2..6 {:?} KiB, growth {:.1} KiB/step, high-water {:.2} MiB",
            resident(t)[1..]
                .iter()
                .map(|&b| b / 1024)
                .collect::<Vec<_>>(),
            growth_per_step(t) / 1024.0,
            mib(t.summary.high_water_in_use_bytes)
        );
    }
    let [scalar, tensor, outputs] = [0, 1, 2].map(|i| growth_per_step(&runs[i].2));
    // Flat but for the small loss tensors awaiting their grouped readback.
    assert!(
        scalar.abs() < 2048.0,
        "scalar bookkeeping grew {scalar} B/step"
    );
    // burn frees the graph in backward: the summed loss keeps next to nothing per step.
    assert!(
        (tensor - scalar).abs() < 1024.0,
        "summing the loss tensor grew {tensor} B/step against {scalar} for its value"
    );
    // Each kept output is the step's logits: 2048 samples x 2 classes x 4 bytes.
    let predicted = predict(&runs[2].1).leak_per_step as f64;
    assert_eq!(predicted, 2048.0 * 2.0 * 4.0);
    assert!(
        (0.9..=1.1).contains(&((outputs - scalar) / predicted)),
        "kept outputs grew {outputs} B/step ({scalar} for the value alone), predicted {predicted}"
    );
    assert_eq!(runs[2].2.summary.leaked_bytes as f64, 6.0 * predicted);
    assert!(resident(&runs[2].2).windows(2).all(|w| w[1] > w[0]));
}

#[test]
fn keeping_relus_input_changes_no_peak_in_training_or_evaluation() {
    let (_lock, gpu) = gpu();
    let base = [
        "steps=2",
        "eval_every=0",
        "batch_size=2048",
        "eval_batch_size=2048",
    ];
    let (_, inplace, copy_cfg, copy) = both(&gpu, &base, &["strategies.inplace_activation=false"]);
    let layer_outputs: Vec<u64> = predict(&copy_cfg)
        .layers
        .iter()
        .map(|l| l.output_bytes)
        .filter(|&b| b > 0)
        .collect();
    let training = |t: &Timeline| t.steps[1].high_water.in_use_bytes;
    let forward = |t: &Timeline| t.steps[1].phases[&Phase::Forward].in_use_bytes;
    let eval = |t: &Timeline| t.evals[0].high_water.in_use_bytes;
    println!(
        "inplace_activation true -> false: training high-water {:.2} -> {:.2} MiB, in use after \
         forward {:.2} -> {:.2} MiB; evaluation (no graph) high-water {:.2} -> {:.2} MiB",
        mib(training(&inplace)),
        mib(training(&copy)),
        mib(forward(&inplace)),
        mib(forward(&copy)),
        mib(eval(&inplace)),
        mib(eval(&copy)),
    );
    // ReLU's backward keeps its input, so keeping it too changes nothing in training.
    assert!(training(&inplace).abs_diff(training(&copy)) < 64 << 10);
    assert!(forward(&inplace).abs_diff(forward(&copy)) < 64 << 10);
    // Without a graph the kept input is one more buffer right after each activation (a
    // reading then sees it; moved into ReLU, burn never writes it at all)...
    let (a, b) = (
        &inplace.summary.activation_layers_in_use,
        &copy.summary.activation_layers_in_use,
    );
    assert_eq!(a.len(), layer_outputs.len());
    for (layer, ((&a, &b), &output)) in a.iter().zip(b).zip(&layer_outputs).enumerate() {
        let extra = b as f64 - a as f64;
        println!(
            "  layer {}: in use right after the activation {:.2} -> {:.2} MiB (+{:.2}, one output {:.2})",
            layer + 1,
            mib(a),
            mib(b),
            extra / 1048576.0,
            mib(output)
        );
        assert!(
            (0.75..=1.25).contains(&(extra / output as f64)),
            "layer {}: +{extra} bytes, one layer output is {output}",
            layer + 1
        );
    }
    // ...but never the peak: the next layer holds its input and its output together anyway.
    assert!(eval(&inplace).abs_diff(eval(&copy)) < 64 << 10);
    assert_eq!(inplace.summary.final_loss, copy.summary.final_loss);
}

#[test]
fn freeing_the_cache_drops_reserved_bytes_but_not_bytes_in_use() {
    let (_lock, gpu) = gpu();
    // 6144 training samples in batches of 2048: an epoch is 3 steps.
    let base = ["steps=6", "eval_every=0", "batch_size=2048"];
    let (_, never, _, every_step) = both(&gpu, &base, &["strategies.free_cache=step"]);
    let mut epoch_sets = base.to_vec();
    epoch_sets.push("strategies.free_cache=epoch");
    let per_epoch = run(&gpu, config("spiral-mlp", &epoch_sets));
    let end_of_step = |t: &Timeline| -> Vec<(u64, u64)> {
        t.steps
            .iter()
            .map(|s| {
                let r = s.phases[&Phase::Optimizer];
                (r.in_use_bytes, r.reserved_bytes)
            })
            .collect()
    };
    let (a, b, c) = (
        end_of_step(&never),
        end_of_step(&every_step),
        end_of_step(&per_epoch),
    );
    let show = |v: &[(u64, u64)]| {
        v.iter()
            .map(|&(u, r)| format!("{:.2}/{:.2}", mib(u), mib(r)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!("free_cache, in use/reserved MiB at the end of each step:");
    println!(
        "  never: {}\n  step:  {}\n  epoch: {}",
        show(&a),
        show(&b),
        show(&c)
    );
    println!(
        "  ms/step never {:.1}, step {:.1}, epoch {:.1}",
        never.summary.median_step_ms,
        every_step.summary.median_step_ms,
        per_epoch.summary.median_step_ms
    );
    for i in 1..6 {
        assert!(
            a[i].0.abs_diff(b[i].0) < 64 << 10,
            "in use must not change: {a:?} vs {b:?}"
        );
        assert!(
            b[i].1 < a[i].1,
            "reserved must drop at step {}: {a:?} vs {b:?}",
            i + 1
        );
    }
    // Released at the end of steps 3 and 6 only.
    assert!(c[2].1 < c[1].1 && c[5].1 < c[4].1, "{c:?}");
    assert!(c[3].1 > c[2].1, "pages come back in the next epoch: {c:?}");
}

#[test]
fn a_device_resident_data_set_holds_the_split_and_trains_the_same() {
    let (_lock, gpu) = gpu();
    let base = [
        "steps=4",
        "eval_every=0",
        "data.samples=32768",
        "batch_size=512",
    ];
    let (_, host, device_cfg, device) = both(&gpu, &base, &["strategies.data_residency=device"]);
    let resident = |t: &Timeline| phase_peak(t, Phase::Optimizer);
    let extra = resident(&device) as f64 - resident(&host) as f64;
    let predicted = predict(&device_cfg).resident_data as f64;
    println!(
        "data_residency host -> device: in use between steps {:.3} -> {:.3} MiB (+{:.3}, predicted +{:.3}); ms/step {:.1} -> {:.1}",
        mib(resident(&host)),
        mib(resident(&device)),
        extra / 1048576.0,
        predicted / 1048576.0,
        host.summary.median_step_ms,
        device.summary.median_step_ms
    );
    assert!(
        (0.75..=1.25).contains(&(extra / predicted)),
        "resident split: +{extra} bytes, predicted +{predicted}"
    );
    for (a, b) in host.steps.iter().zip(&device.steps) {
        assert_eq!(a.loss, b.loss, "the same batches either way");
    }
}

#[test]
fn a_run_asking_for_other_pools_than_the_device_has_says_so() {
    let (_lock, gpu) = gpu();
    let other = match gpu.memory_pool {
        vramlab::engine::config::MemoryPool::Subslices => "exclusive",
        vramlab::engine::config::MemoryPool::Exclusive => "subslices",
    };
    let set = format!("strategies.memory_pool={other}");
    let t = run(&gpu, config("circle-tiny", &["steps=2", &set]));
    assert!(
        t.summary
            .fallbacks
            .iter()
            .any(|f| f.to_string().starts_with(&format!("memory_pool {other}"))),
        "{:?}",
        t.summary.fallbacks
    );
}

#[test]
fn f16_weights_take_half_the_bytes_of_f32() {
    let (_lock, gpu) = gpu();
    let (_, f32_run, _, f16_run) = both(&gpu, &["steps=2"], &["strategies.weight_dtype=f16"]);
    let (full, half) = (f32_run.summary.weight_bytes, f16_run.summary.weight_bytes);
    println!(
        "spiral-mlp weights: f32 {:.3} MiB, f16 {:.3} MiB ({:.3}x)",
        mib(full),
        mib(half),
        half as f64 / full as f64
    );
    assert!(
        full >= f32_run.summary.params * 4,
        "f32 weights are 4 bytes each"
    );
    if gpu.adapter.shader_f16 {
        let ratio = half as f64 / full as f64;
        assert!(
            (0.49..=0.52).contains(&ratio),
            "f16/f32 weight bytes {ratio}"
        );
    } else {
        assert_eq!(half, full, "without shader-f16 the weights stay f32");
        assert!(
            f16_run.summary.fallbacks[0]
                .to_string()
                .starts_with("weight_dtype f16")
        );
    }
}

#[test]
fn int8_evaluation_weights_take_a_quarter_and_keep_the_accuracy() {
    let (_lock, gpu) = gpu();
    let (_, f32_run, _, int8_run) = both(&gpu, &["steps=60"], &["strategies.weight_dtype=int8"]);
    let (full, int8) = (
        f32_run.summary.weight_bytes,
        int8_run
            .summary
            .eval_weight_bytes
            .expect("measured at evaluation"),
    );
    let (acc_f32, acc_int8) = (
        f32_run.summary.eval_accuracy.unwrap(),
        int8_run.summary.eval_accuracy.unwrap(),
    );
    println!(
        "spiral-mlp: f32 weights {:.3} MiB, int8 copy {:.3} MiB ({:.3}x); accuracy {acc_f32:.4} -> {acc_int8:.4}",
        mib(full),
        mib(int8),
        int8 as f64 / full as f64
    );
    // The 256x256 and 2x256 matrices become one byte per weight; biases and the 256x2 head
    // (not packable) stay f32: 0.246x here.
    assert!(
        (0.24..=0.30).contains(&(int8 as f64 / full as f64)),
        "{int8} vs {full}"
    );
    // Training is untouched; only the evaluation reads the quantized copy.
    assert_same_step_losses(&f32_run, &int8_run);
    assert!(
        (acc_f32 - acc_int8).abs() <= 0.03,
        "{acc_f32} vs {acc_int8}"
    );
    assert_ne!(
        f32_run.summary.eval_loss, int8_run.summary.eval_loss,
        "the evaluation must really run on other weights"
    );
}

#[test]
fn fused_kernels_train_the_same_mlp_and_hold_less_in_flight() {
    let (_lock, gpu) = gpu();
    let base = [
        "steps=12",
        "eval_every=6",
        "batch_size=2048",
        "model.hidden=[256,256]",
    ];
    let (_, burn, _, fused) = both(&gpu, &base, &["strategies.kernels=fused"]);
    let peaks = |t: &Timeline| [Phase::Forward, Phase::Backward].map(|phase| phase_peak(t, phase));
    let (b, f) = (peaks(&burn), peaks(&fused));
    println!(
        "kernels burn -> fused: in use after forward {:.2} -> {:.2} MiB, after backward {:.2} -> {:.2} MiB; \
         final loss {:.4} -> {:.4}; ms/step {:.1} -> {:.1}",
        mib(b[0]),
        mib(f[0]),
        mib(b[1]),
        mib(f[1]),
        burn.summary.final_loss.unwrap_or(f32::NAN),
        fused.summary.final_loss.unwrap_or(f32::NAN),
        burn.summary.median_step_ms,
        fused.summary.median_step_ms
    );
    // Same initial weights, same batches, same maths: only the summation order differs.
    for (x, y) in burn.steps.iter().zip(&fused.steps) {
        let (a, b) = (x.loss.unwrap(), y.loss.unwrap());
        assert!(
            (a - b).abs() <= 2e-3 * a.abs().max(1.0),
            "step {}: loss {a} vs {b}",
            x.step
        );
    }
    let (ea, eb) = (burn.evals.last().unwrap(), fused.evals.last().unwrap());
    assert!(
        (ea.accuracy - eb.accuracy).abs() <= 0.01,
        "{ea:?} vs {eb:?}"
    );
    // Each layer's output and its gradient are all the fused step keeps: burn also keeps the
    // graph's saved inputs and the intermediates of the unfused ops.
    assert!(f[0] < b[0] && f[1] <= b[1], "fused {f:?} vs burn {b:?}");
}

#[test]
fn fused_kernels_match_burn_with_sgd_momentum_and_on_the_digits() {
    let (_lock, gpu) = gpu();
    let cases: [(&str, &[&str]); 3] = [
        ("spiral-mlp", &["optimizer=sgd", "learning_rate=0.1"]),
        ("spiral-mlp", &["optimizer=momentum", "learning_rate=0.05"]),
        ("digits-mlp", &["optimizer=adam"]),
    ];
    for (preset, sets) in cases {
        let mut base = vec!["steps=6", "eval_every=0", "batch_size=256"];
        base.extend_from_slice(sets);
        let burn = run(&gpu, config(preset, &base));
        base.push("strategies.kernels=fused");
        let fused = run(&gpu, config(preset, &base));
        let losses = |t: &Timeline| t.steps.iter().map(|s| s.loss.unwrap()).collect::<Vec<_>>();
        println!(
            "{preset} {sets:?}: burn {:?}\n  fused {:?}",
            losses(&burn),
            losses(&fused)
        );
        for (x, y) in burn.steps.iter().zip(&fused.steps) {
            let (a, b) = (x.loss.unwrap(), y.loss.unwrap());
            assert!(
                (a - b).abs() <= 2e-3 * a.abs().max(1.0),
                "{preset} {sets:?} step {}: loss {a} vs {b}",
                x.step
            );
        }
    }
}
