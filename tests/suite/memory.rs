//! Memory records are real allocator readings and behave as the phases say they should; the
//! analytic model agrees with them where it claims to.

use burn::tensor::FloatDType;
use vramlab::engine::data::Dataset;
use vramlab::engine::memory::predict;
use vramlab::engine::models::Model;
use vramlab::engine::phase::Phase;
use vramlab::engine::presets::playground;

use super::support::{config, gpu, mib, run};

#[test]
fn forward_allocates_and_the_optimizer_step_frees_the_activations() {
    let (_lock, gpu) = gpu();
    let cfg = config(
        "spiral-mlp",
        &["steps=4", "eval_every=0", "batch_size=2048"],
    );
    let predicted = predict(&cfg);
    let timeline = run(&gpu, cfg);
    for step in &timeline.steps[1..] {
        let read = |p: Phase| step.phases[&p].in_use_bytes;
        let (upload, forward, backward, optimizer) = (
            read(Phase::Upload),
            read(Phase::Forward),
            read(Phase::Backward),
            read(Phase::Optimizer),
        );
        println!(
            "step {}: upload {:.2} forward {:.2} backward {:.2} optimizer {:.2} MiB (activations predicted {:.2})",
            step.step,
            mib(upload),
            mib(forward),
            mib(backward),
            mib(optimizer),
            mib(predicted.activations)
        );
        assert!(
            forward > upload + predicted.activations / 2,
            "forward keeps activations"
        );
        assert!(
            optimizer + predicted.activations / 2 < forward,
            "activations freed after the step"
        );
        assert!(backward > optimizer, "gradients are alive after backward");
        assert!(
            step.phases
                .values()
                .all(|r| r.reserved_bytes >= r.in_use_bytes)
        );
    }
}

#[test]
fn peak_in_use_grows_with_batch_size() {
    let (_lock, gpu) = gpu();
    let peak = |batch: usize| {
        let cfg = config(
            "spiral-mlp",
            &["steps=3", "eval_every=0", &format!("batch_size={batch}")],
        );
        let predicted = predict(&cfg).peak;
        (run(&gpu, cfg).summary.peak_in_use_bytes, predicted)
    };
    let (small, small_predicted) = peak(256);
    let (large, large_predicted) = peak(2048);
    println!(
        "peak in use: batch 256 {:.2} MiB, batch 2048 {:.2} MiB (predicted {:.2}, {:.2})",
        mib(small),
        mib(large),
        mib(small_predicted),
        mib(large_predicted)
    );
    let growth = large as f64 - small as f64;
    let predicted_growth = large_predicted as f64 - small_predicted as f64;
    assert!(
        growth > 0.5 * predicted_growth,
        "grew {growth} bytes, predicted {predicted_growth}"
    );
}

#[test]
fn analytic_peak_matches_the_high_water_mark_within_10_percent() {
    let (_lock, gpu) = gpu();
    let cases: &[(&str, &[&str])] = &[
        ("spiral-mlp", &["batch_size=256"]),
        ("spiral-mlp", &["batch_size=2048"]),
        ("digits-mlp", &["batch_size=512"]),
        ("digits-cnn", &["batch_size=256"]),
        ("digits-cnn", &["batch_size=1024"]),
    ];
    let mut failures = Vec::new();
    for (name, sets) in cases {
        let mut sets = sets.to_vec();
        sets.extend(["steps=3", "eval_every=0"]);
        let cfg = config(name, &sets);
        let summary = run(&gpu, cfg).summary;
        let measured = summary.high_water_in_use_bytes as f64;
        let predicted = summary.predicted_peak_bytes as f64;
        let ratio = predicted / measured;
        println!(
            "{name} {sets:?}: high-water mark {:.2} MiB, predicted {:.2} MiB, ratio {ratio:.3}",
            measured / 1048576.0,
            predicted / 1048576.0
        );
        if !(0.9..=1.1).contains(&ratio) {
            failures.push(format!("{name} {sets:?}: ratio {ratio:.3}"));
        }
    }
    assert!(failures.is_empty(), "off by more than 10%: {failures:?}");
}

#[test]
fn analytic_parameter_count_is_the_models_own() {
    let (_lock, gpu) = gpu();
    for preset in playground() {
        let cfg = config(preset.name, &[]);
        let data = Dataset::build(&cfg.data, cfg.seed).unwrap();
        let model = Model::build(&cfg, &data, &gpu.device, FloatDType::F32);
        assert_eq!(
            predict(&cfg).param_count,
            model.param_count() as u64,
            "{}",
            preset.name
        );
    }
}

#[test]
fn step_sampling_reads_once_per_step() {
    let (_lock, gpu) = gpu();
    let timeline = run(
        &gpu,
        config(
            "circle-tiny",
            &["steps=5", "eval_every=0", "memory_sampling=step"],
        ),
    );
    for step in &timeline.steps[..4] {
        assert_eq!(
            step.phases.keys().copied().collect::<Vec<_>>(),
            vec![Phase::Optimizer]
        );
    }
    let last = &timeline.steps[4];
    assert_eq!(
        last.phases.keys().copied().collect::<Vec<_>>(),
        vec![Phase::Optimizer, Phase::Eval]
    );
    assert!(timeline.summary.peak_in_use_bytes > 0);
}

/// Activation bytes (in use after forward minus after upload) of `preset` at each sequence
/// length, beside the analytic prediction.
fn activations_by_length(preset: &str, extra: &[&str], lengths: &[usize]) -> Vec<(u64, u64)> {
    let (_lock, gpu) = gpu();
    lengths
        .iter()
        .map(|len| {
            let mut sets = vec!["steps=2", "eval_every=0", "batch_size=64"];
            sets.extend_from_slice(extra);
            let set = format!("data.seq_len={len}");
            sets.push(&set);
            let cfg = config(preset, &sets);
            let t = run(&gpu, cfg.clone());
            let at = |p: Phase| t.steps[1].phases[&p].in_use_bytes;
            let measured = at(Phase::Forward) - at(Phase::Upload);
            let predicted = vramlab::engine::memory::predict(&cfg).activations;
            println!(
                "{preset} {} seq_len {len}: activations {:.2} MiB (predicted {:.2})",
                extra.join(" "),
                mib(measured),
                mib(predicted)
            );
            (measured, predicted)
        })
        .collect()
}

/// On the stacked path (`models::stacked_cells`) the GRU and the LSTM both keep twelve
/// [batch, width] tensors a time step for backward: the GRU's new gate reads a view of the
/// whole hidden-state projection, which keeps all three gates' shares. A GRU saves in its
/// weights and in backward's transients (the model.kind lesson measures the peak), not in what
/// forward keeps.
#[test]
fn recurrent_activations_grow_linearly_with_length_and_the_stacked_gru_keeps_what_the_lstm_keeps() {
    let lengths = [4, 8, 16];
    let gru = activations_by_length("sort-gru", &["model.width=64"], &lengths);
    let lstm = activations_by_length("sort-lstm", &["model.width=64"], &lengths);
    for series in [&gru, &lstm] {
        let ratio = series[2].0 as f64 / series[0].0 as f64;
        assert!(
            (3.5..=4.5).contains(&ratio),
            "4x the length gave {ratio:.2}x the activations"
        );
        for (measured, predicted) in series {
            let off = *measured as f64 / *predicted as f64;
            assert!(
                (0.98..=1.02).contains(&off),
                "measured {measured} bytes against the estimate's {predicted}"
            );
        }
    }
    for (g, l) in gru.iter().zip(&lstm) {
        let ratio = g.0 as f64 / l.0 as f64;
        assert!(
            (0.98..=1.0).contains(&ratio),
            "gru {} vs lstm {} bytes",
            g.0,
            l.0
        );
    }
}

#[test]
fn attention_activations_grow_faster_than_linearly_with_length() {
    let lengths = [4, 16];
    let attention = activations_by_length(
        "sort-transformer",
        &[
            "model.layers=1",
            "model.width=32",
            "model.ff=64",
            "model.heads=8",
        ],
        &lengths,
    );
    let ratio = attention[1].0 as f64 / attention[0].0 as f64;
    println!("transformer: 4x the length gave {ratio:.2}x the activations");
    assert!(
        ratio > 5.0,
        "attention scores should make this superlinear: {ratio:.2}x"
    );
}
