//! A quantized base (`strategies.weight_dtype` = `q4`, `q8`): the quantized dense op against
//! burn's product with the dequantized weight, what it keeps for backward, a QLoRA run that
//! learns, its parameter bytes to the byte from the shapes, and the refusals.

use burn::tensor::module::linear;
use burn::tensor::{Device, Distribution, FloatDType, Tensor, TensorData};
use vramlab::engine::config::WeightDtype;
use vramlab::engine::memory::sampler;
use vramlab::engine::ops::quantized_linear;
use vramlab::engine::overrides::apply_overrides;
use vramlab::engine::presets::preset;
use vramlab::engine::strategies::weight_dtype::{BlockFormat, QuantizedWeights};

use super::support::{TINY_BATCH, config, gpu, loss_ends, relative_gap, run};

fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.cast(FloatDType::F32)
        .into_data()
        .try_to_vec::<f32>()
        .unwrap()
}

/// A `[d_in, d_out]` weight whose rows differ in magnitude by up to 16x (row `i` scaled by
/// `2^(i mod 5)`), so a block read against another block's scale shows.
fn uneven_weight(d_in: usize, d_out: usize, device: &Device) -> Tensor<2> {
    let scales: Vec<f32> = (0..d_in).map(|i| (1 << (i % 5)) as f32).collect();
    let rows = Tensor::<2>::from_data(TensorData::new(scales, [d_in, 1]), device);
    Tensor::<2>::random([d_in, d_out], Distribution::Normal(0.0, 1.0), device) * rows
}

/// Each value of the dequantized weight within half a step of its block's grid: the step is the
/// block's largest magnitude over the format's largest integer (7 or 127), its scale rounded up
/// to f16.
fn assert_within_half_a_step(
    weight: &[f32],
    dequantized: &[f32],
    d_out: usize,
    tile: [usize; 2],
    format: BlockFormat,
) {
    let largest = if format.bits == 4 { 7.0 } else { 127.0 };
    let [rows, cols] = tile;
    let d_in = weight.len() / d_out;
    for block_row in (0..d_in).step_by(rows) {
        for block_col in (0..d_out).step_by(cols) {
            let members = || {
                (block_row..block_row + rows)
                    .flat_map(move |i| (block_col..block_col + cols).map(move |j| i * d_out + j))
            };
            let absmax = members().map(|k| weight[k].abs()).fold(0.0f32, f32::max);
            let half_step = absmax / largest * 0.5 * 1.002 + 1e-6;
            for k in members() {
                let error = (weight[k] - dequantized[k]).abs();
                assert!(
                    error <= half_step,
                    "tile {tile:?}, value {k}: {} -> {} (error {error}, half a step {half_step})",
                    weight[k],
                    dequantized[k]
                );
            }
        }
    }
}

#[test]
fn the_quantized_dense_op_equals_the_layer_on_its_dequantized_weight() {
    let (_lock, gpu) = gpu();
    let device = gpu.device.clone().autodiff();
    device.seed(11);
    // Blocks along a row (64 or 32 wide), and the narrower rectangles of a kv projection 32 wide
    // and a feed-forward 176 wide (sort-llama's): 2 x 32 and 4 x 16 for q4.
    let shapes = [[64, 128], [64, 32], [64, 176], [176, 64]];
    for dtype in [WeightDtype::Q4, WeightDtype::Q8] {
        let format = BlockFormat::of(dtype, true).unwrap();
        for [d_in, d_out] in shapes {
            let tile = format.tile(d_in, d_out).expect("these shapes tile");
            let weight = uneven_weight(d_in, d_out, &device);
            let quantized = weight.clone().quantize_dynamic(&format.scheme(tile));
            let dequantized = quantized.clone().dequantize();
            assert_within_half_a_step(
                &values(weight),
                &values(dequantized.clone()),
                d_out,
                tile,
                format,
            );
            for compute in [FloatDType::F32, FloatDType::F16] {
                let x = Tensor::<3>::random([3, 5, d_in], Distribution::Normal(0.0, 1.0), &device)
                    .cast(compute);
                let upstream =
                    Tensor::<3>::random([3, 5, d_out], Distribution::Normal(0.0, 1.0), &device)
                        .cast(compute);
                let through = |product: &dyn Fn(Tensor<3>) -> Tensor<3>| {
                    let x = x.clone().require_grad();
                    let out = product(x.clone());
                    let grads = (out.clone() * upstream.clone()).sum().backward();
                    (out.inner(), x.grad(&grads).expect("x is tracked"))
                };
                let (op_out, op_grad) =
                    through(&|x| quantized_linear::forward(x, quantized.clone()));
                let (burn_out, burn_grad) =
                    through(&|x| linear(x, dequantized.clone().cast(compute), None));
                let (out_gap, grad_gap) = (
                    relative_gap(op_out.clone(), burn_out.clone()),
                    relative_gap(op_grad, burn_grad),
                );
                // Without autodiff (a no-grad evaluation): the op's plain path.
                let plain_gap = relative_gap(
                    quantized_linear::forward(x.clone().inner(), quantized.clone().inner()),
                    burn_out,
                );
                println!(
                    "{} {d_in}x{d_out} (blocks {tile:?}) in {compute:?}: output {out_gap:.1e}, \
                     input gradient {grad_gap:.1e}, no-grad output {plain_gap:.1e}",
                    dtype.name()
                );
                let tolerance = match compute {
                    FloatDType::F16 => 2e-3,
                    _ => 1e-5,
                };
                assert!(out_gap <= tolerance, "output {out_gap}");
                assert!(grad_gap <= tolerance, "input gradient {grad_gap}");
                assert!(plain_gap <= tolerance, "no-grad output {plain_gap}");
            }
        }
    }
}

#[test]
fn the_quantized_dense_op_keeps_nothing_dequantized_for_backward() {
    let (_lock, gpu) = gpu();
    let device = gpu.device.clone().autodiff();
    device.seed(12);
    let (d_in, d_out) = (512, 1024);
    let format = BlockFormat::of(WeightDtype::Q4, true).unwrap();
    let scheme = format.scheme(format.tile(d_in, d_out).unwrap());
    let quantized = Tensor::<2>::random([d_in, d_out], Distribution::Default, &device)
        .quantize_dynamic(&scheme);
    let x = Tensor::<2>::random([8, d_in], Distribution::Default, &device).require_grad();
    let in_use = || {
        sampler::read(&gpu.device, "test")
            .unwrap()
            .pooled_in_use_bytes
    };
    // What each forward pass leaves alive until its backward: the output and its graph.
    let kept = |product: &dyn Fn() -> Tensor<2>| {
        let before = in_use();
        let out = product();
        let after = in_use();
        let _ = out.sum().backward();
        after - before
    };
    let op = kept(&|| quantized_linear::forward(x.clone(), quantized.clone()));
    let burn = kept(&|| linear(x.clone(), quantized.clone().dequantize(), None));
    let weight = (d_in * d_out * 4) as u64;
    println!(
        "kept for backward: the op {op} B, burn's product {burn} B (the f32 weight {weight} B)"
    );
    let output = (8 * d_out * 4) as u64;
    assert!(
        op < output + 1024,
        "the op keeps {op} B beside an output of {output} B"
    );
    assert!(
        burn >= op + weight,
        "burn's product keeps the dequantized weight"
    );
}

#[test]
fn a_q4_lora_llama_learns_and_a_q4_head_run_trains() {
    let (_lock, gpu) = gpu();
    let sets = [
        "steps=30",
        "eval_every=0",
        // Batches of 32 at a learning rate of 0.01: at 16 (the suite's tiny batch) and the
        // preset's 0.003 a q4 LoRA fell 2.18 -> 2.00 in 30 steps, short of the tenth this test
        // asks; at 64 and 0.003 it fell 2.17 -> 1.94 (0.894 of the first) in 40.6 s, at 32 and
        // 0.01 2.16 -> 1.91 (0.883) in 28.2 s, at 32 and 0.02 only to 0.915.
        "batch_size=32",
        "learning_rate=0.01",
        // No evaluation is read: a quarter of the preset's samples, so the one at the end is
        // 256 sequences, not 1,024.
        "data.samples=2048",
        "strategies.trainable=lora",
        "strategies.weight_dtype=q4",
        "strategies.attention=fused",
    ];
    let timeline = run(&gpu, config("sort-llama", &sets));
    let (first, last) = loss_ends(&timeline, 5);
    let summary = &timeline.summary;
    let stored = summary.quantized.expect("a q4 run reports its base");
    println!(
        "sort-llama q4 lora: loss {first:.4} -> {last:.4}; {} matrices ({} values) in {}, {} \
         untiled; {} parameters, {} B stored",
        stored.matrices,
        stored.values,
        stored.format.describe(),
        stored.untiled_matrices,
        summary.params,
        summary.weight_bytes
    );
    assert!(
        last.is_finite() && last < 0.9 * first,
        "loss {first} -> {last}"
    );
    // Two blocks of seven projections, every one tiled (the 32-wide and 176-wide ones too).
    assert_eq!((stored.matrices, stored.untiled_matrices), (14, 0));
    // The head (here the tied token embedding and the final norm) trains in f16, as with
    // weight_dtype = f16: plain SGD, since Adam's epsilon is 0 in f16 and turns a weight whose
    // gradient is 0 (an unused token's row) into NaN.
    let head = run(
        &gpu,
        config(
            "sort-llama",
            &[
                "steps=3",
                "eval_every=3",
                TINY_BATCH,
                "optimizer=sgd",
                "learning_rate=0.1",
                "strategies.trainable=head",
                "strategies.weight_dtype=q8",
            ],
        ),
    );
    let losses: Vec<f32> = head.steps.iter().filter_map(|s| s.loss).collect();
    assert!(losses.iter().all(|l| l.is_finite()), "{losses:?}");
    assert!(head.summary.eval_accuracy.is_some());
}

/// A short QLoRA run of `preset`: every step's loss finite, the quantized base storing its
/// body's matrices, the adapters alone training. What its base stored.
/// The run's stored base, and the fields its fallbacks name.
fn short_qlora_run(
    gpu: &vramlab::engine::device::Gpu,
    preset: &str,
) -> (QuantizedWeights, Vec<String>) {
    let timeline = run(
        gpu,
        config(
            preset,
            &[
                "steps=6",
                "eval_every=0",
                TINY_BATCH,
                "strategies.trainable=lora",
                "strategies.weight_dtype=q4",
            ],
        ),
    );
    let summary = &timeline.summary;
    let stored = summary.quantized.expect("a q4 run reports its base");
    let losses: Vec<f32> = timeline.steps.iter().filter_map(|s| s.loss).collect();
    println!(
        "{preset} q4 lora: losses {losses:?}; {} matrices in {}, {} untiled",
        stored.matrices,
        stored.format.describe(),
        stored.untiled_matrices
    );
    assert_eq!(losses.len(), 6, "{preset}: a loss every step");
    assert!(losses.iter().all(|l| l.is_finite()), "{preset}: {losses:?}");
    assert!(stored.matrices > 0, "{preset}: nothing quantized");
    assert_eq!(
        summary.trainable_params, summary.adapter_params,
        "{preset}: only the adapters train"
    );
    let fallbacks = summary.fallbacks.iter().map(|f| f.field.clone()).collect();
    (stored, fallbacks)
}

/// Mixtral's routers (64 x 4) tile into no block and stay 16-bit: their adapters are f32 as
/// every QLoRA adapter is (in f16 they turned NaN on the first step, Adam's epsilon being 0).
#[test]
fn a_qlora_mixtral_trains_over_the_matrices_it_could_not_quantize() {
    let (_lock, gpu) = gpu();
    let (stored, fallbacks) = short_qlora_run(&gpu, "sort-mixtral");
    assert_eq!(stored.untiled_matrices, 2, "the two blocks' routers");
    // Grouped products asked for (the default) over a 4-bit base: the loop, said so.
    assert_eq!(fallbacks, ["strategies.experts"]);
}

/// QLoRA run for real, briefly, in each other family newer than the Llama.
#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn a_short_qlora_run_trains_in_every_newer_family() {
    let (_lock, gpu) = gpu();
    for preset in [
        "sort-qwen3",
        "sort-gemma2",
        "sort-gemma3",
        "sort-phi3",
        "sort-qwen3-moe",
    ] {
        short_qlora_run(&gpu, preset);
    }
}

/// Bytes the allocator gives a buffer of `bytes`: rounded up to its 32-byte alignment.
fn padded(bytes: u64) -> u64 {
    bytes.next_multiple_of(32)
}

#[test]
fn a_q4_runs_parameters_are_its_blocks_and_its_f16_rest_to_the_byte() {
    let (_lock, gpu) = gpu();
    let rank = 8;
    let sets = [
        "steps=2",
        "eval_every=0",
        "batch_size=16",
        "strategies.trainable=lora",
        "strategies.weight_dtype=q4",
    ];
    let config = config("sort-llama", &sets);
    let m = &config.model;
    let (width, ff) = (m.width, m.ff);
    let head_dim = width / m.heads;
    let kv = head_dim * m.kv_heads();
    let format = BlockFormat::of(WeightDtype::Q4, true).unwrap();
    let f16 = |values: usize| padded(2 * values as u64);
    let f32 = |values: usize| padded(4 * values as u64);
    // The tied token embedding, the final norm and the rotary tables (f32 constants).
    let mut expected = f16(config.token_rows() * width) + f16(width);
    expected += 2 * f32(config.position_rows() * head_dim);
    let projections = [
        (width, width),
        (width, kv),
        (width, kv),
        (width, width),
        (width, ff),
        (width, ff),
        (ff, width),
    ];
    let (mut packed, mut scales) = (0, 0);
    for _ in 0..m.layers {
        expected += 2 * f16(width);
        for (d_in, d_out) in projections {
            // One allocation holds the packed words and the scales, each aligned.
            let (p, s) = format.matrix_bytes(d_in, d_out);
            (packed, scales) = (packed + p, scales + s);
            expected += padded(p) + padded(s);
            // LoRA's factors, f32 beside a quantized base.
            expected += f32(d_in * rank) + f32(rank * d_out);
        }
    }
    let timeline = run(&gpu, config);
    let summary = &timeline.summary;
    let stored = summary.quantized.unwrap();
    println!(
        "sort-llama q4 lora r{rank}: {} B stored; from the shapes {expected} B ({packed} B of \
         packed words, {scales} B of f16 scales)",
        summary.weight_bytes
    );
    assert_eq!((stored.packed_bytes, stored.scale_bytes), (packed, scales));
    assert_eq!(summary.weight_bytes, expected);
    let step = timeline.steps[1].category_sizes.unwrap();
    assert_eq!(step.parameter, expected);
}

#[test]
fn a_quantized_base_refuses_what_it_cannot_run_with_naming_the_field() {
    // (preset, assignments, text the message must hold); every one names weight_dtype.
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "sort-llama",
            &["strategies.weight_dtype=q4"],
            "with trainable = lora",
        ),
        (
            "sort-llama",
            &[
                "strategies.weight_dtype=q8",
                "strategies.trainable=lora",
                "strategies.mixed_precision=f16",
            ],
            "use mixed_precision off",
        ),
        (
            "sort-gru",
            &["strategies.weight_dtype=q4", "strategies.trainable=lora"],
            "models for it: mlp, cnn, transformer, llama",
        ),
        (
            "sort-lstm",
            &["strategies.weight_dtype=q8", "strategies.trainable=head"],
            "models for it: mlp, cnn, transformer, llama",
        ),
        (
            "spiral-mlp",
            &["strategies.weight_dtype=q4", "strategies.kernels=fused"],
            "weight_dtype = f32",
        ),
        (
            "spiral-mlp",
            &["strategies.weight_dtype=int8", "strategies.trainable=lora"],
            "use q4 or q8",
        ),
    ];
    for (base, sets, text) in cases {
        let err = apply_overrides(preset(base).unwrap(), sets.iter().copied())
            .and_then(|config| config.validate())
            .expect_err(&format!("{base} {sets:?} should be refused"));
        let message = err.to_string();
        assert_eq!(
            err.field(),
            Some("strategies.weight_dtype"),
            "{sets:?}: {message}"
        );
        assert!(message.contains(text), "{sets:?}: {text:?} in {message:?}");
    }
    // 16-bit factors beside a quantized base trained to NaN: refused by the adapters' field.
    let err = apply_overrides(
        preset("sort-llama").unwrap(),
        [
            "strategies.weight_dtype=q4",
            "strategies.trainable=lora",
            "strategies.adapter_dtype=base",
        ],
    )
    .and_then(|config| config.validate())
    .expect_err("16-bit factors over q4");
    assert_eq!(err.field(), Some("strategies.adapter_dtype"), "{err}");
    assert!(err.to_string().contains("Use adapter_dtype = f32"), "{err}");
    for ok in ["lora", "head"] {
        let set = format!("strategies.trainable={ok}");
        config("sort-llama", &["strategies.weight_dtype=q4", &set]);
        config("sort-transformer", &["strategies.weight_dtype=q8", &set]);
        config("digits-cnn", &["strategies.weight_dtype=q4", &set]);
    }
}
