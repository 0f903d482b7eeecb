//! `optimizer = adamw8bit`: its moments round-trip through 8-bit blocks within the code's error
//! bound, its step is AdamW's, its state measures to the byte what its layout says, the analytic
//! model predicts that layout, and it trains as AdamW does.

use burn::optim::{AdamWConfig, Optimizer};
use burn::tensor::{DType, Device, Tensor, TensorData};
use vramlab::engine::Timeline;
use vramlab::engine::config::OptimizerKind;
use vramlab::engine::device::cube_client;
use vramlab::engine::memory::predict;
use vramlab::engine::train::adamw8bit::{
    AdamW8bit, AdamW8bitState, BLOCK, MIN_8BIT_SIZE, Moment, MomentLayout, blocks_scheme,
};

use super::support::{config, gpu, loss_ends, run};

/// Blocks of values whose largest magnitudes run from 1e-6 to 1e3 (each block's own), with
/// values down to 1e-6 of their block's largest inside each, an all-zero block, and a partial
/// last block: `n` values.
fn spread(n: usize, signed: bool) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let block = i / BLOCK;
            if block == 3 {
                return 0.0;
            }
            let top = 10f32.powi((block % 10) as i32 - 6);
            // Within a block: 1, 0.3, 0.1, ... down to 1e-6 of the top, and exact zeros.
            let within = match i % 16 {
                15 => 0.0,
                k => 10f32.powf(-(k as f32) * 0.4),
            };
            let sign = if signed && (i * 7) % 3 == 0 {
                -1.0
            } else {
                1.0
            };
            sign * top * within
        })
        .collect()
}

fn upload(values: &[f32], device: &Device) -> Tensor<1> {
    Tensor::from_data(TensorData::new(values.to_vec(), [values.len()]), device)
}

fn download<const D: usize>(tensor: Tensor<D>) -> Vec<f32> {
    tensor.into_data().try_to_vec::<f32>().unwrap()
}

/// `values` through `moment`'s 8-bit store and back.
fn round_trip(moment: Moment, values: &[f32], device: &Device) -> Vec<f32> {
    let layout = MomentLayout::of(values.len());
    let stored = layout.store(moment, upload(values, device));
    assert_eq!(stored.blocks.dtype(), DType::QFloat(blocks_scheme()));
    assert_eq!(stored.tail.is_some(), !values.len().is_multiple_of(BLOCK));
    download(layout.load(moment, stored))
}

/// The most a value `x` may move, in a block whose largest magnitude is `top`: the companded
/// value `y` is rounded to a step `s` of the block's largest `y` / 127, so it moves at most
/// `s / 2`, and the expanded value moves by that times the expansion's slope over the interval.
fn bound(moment: Moment, x: f32, top: f32) -> f64 {
    let (x, top) = (f64::from(x.abs()), f64::from(top));
    let half = match moment {
        Moment::First => top.sqrt() / 127.0 / 2.0,
        Moment::Second => top.sqrt().sqrt() / 127.0 / 2.0,
    };
    let slop = 1e-5 * top;
    match moment {
        // x = y^2: |y'^2 - y^2| <= |y' - y| (2 y + |y' - y|).
        Moment::First => half * (2.0 * x.sqrt() + half) + slop,
        // x = y^4: |y'^4 - y^4| <= |y' - y| 4 (y + |y' - y|)^3.
        Moment::Second => half * 4.0 * (x.powf(0.25) + half).powi(3) + slop,
    }
}

fn check_round_trip(moment: Moment, values: &[f32], back: &[f32]) {
    assert_eq!(back.len(), values.len());
    let mut worst = 0f64;
    for (block, (xs, ys)) in values.chunks(BLOCK).zip(back.chunks(BLOCK)).enumerate() {
        let top = xs.iter().fold(0f32, |m, x| m.max(x.abs()));
        for (&x, &y) in xs.iter().zip(ys) {
            let err = f64::from((y - x).abs());
            let allowed = bound(moment, x, top);
            assert!(
                err <= allowed,
                "{moment:?} block {block} (largest {top:e}): {x:e} came back {y:e}, off by \
                 {err:e} > {allowed:e}"
            );
            assert!(y == 0.0 || y.signum() == x.signum(), "{x:e} -> {y:e}");
            if x == 0.0 {
                assert_eq!(y, 0.0, "zeros stay zeros");
            }
            if top > 0.0 {
                worst = worst.max(err / f64::from(top));
            }
        }
    }
    println!("{moment:?}: worst error {worst:.2e} of its block's largest");
}

#[test]
fn moments_round_trip_through_8_bit_blocks_within_the_codes_bound() {
    let (_lock, gpu) = gpu();
    // 17 whole blocks and 44 values of an 18th: more than MIN_8BIT_SIZE, so quantized.
    let n = 17 * BLOCK + 44;
    assert!(n >= MIN_8BIT_SIZE);
    let signed = spread(n, true);
    let back = round_trip(Moment::First, &signed, &gpu.device);
    check_round_trip(Moment::First, &signed, &back);
    let squares: Vec<f32> = spread(n, false).iter().map(|g| g * g).collect();
    let back = round_trip(Moment::Second, &squares, &gpu.device);
    check_round_trip(Moment::Second, &squares, &back);
}

#[test]
fn a_second_moment_far_below_its_blocks_largest_keeps_a_denominator() {
    // A linear 8-bit code would round v = 1e-8 (a gradient 1e-4 of the block's largest) to 0,
    // and the step would divide by epsilon. Its fourth root is 1.27 steps of the code.
    let (_lock, gpu) = gpu();
    let mut v = vec![1e-8f32; MIN_8BIT_SIZE];
    v[0] = 1.0;
    let back = round_trip(Moment::Second, &v, &gpu.device);
    let (got, want) = (back[1].sqrt(), v[1].sqrt());
    println!("sqrt(v): {want:e} came back {got:e}");
    assert!(got > want / 2.0 && got < want * 2.0, "{got:e} vs {want:e}");
}

/// Three steps of `optimizer` on one parameter of `n` values from the same gradients.
fn three_steps<O: Optimizer>(optimizer: &O, n: usize, device: &Device) -> Vec<f32> {
    let start: Vec<f32> = (0..n)
        .map(|i| ((i * 37) % 101) as f32 / 101.0 - 0.5)
        .collect();
    let mut weight = upload(&start, device);
    let mut state = None;
    for step in 0..3 {
        let grad: Vec<f32> = (0..n)
            .map(|i| (((i * 13 + step * 7) % 29) as f32 - 14.0) * 1e-3)
            .collect();
        let (next, kept) = optimizer.step(0.01, weight, upload(&grad, device), state);
        weight = next;
        state = kept;
    }
    download(weight)
}

#[test]
fn its_step_is_adamws() {
    let (_lock, gpu) = gpu();
    let (beta_1, beta_2) = OptimizerKind::ADAM_BETAS;
    let adamw = AdamWConfig::new()
        .with_beta_1(beta_1)
        .with_beta_2(beta_2)
        .with_epsilon(OptimizerKind::ADAM_EPSILON)
        .with_weight_decay(OptimizerKind::ADAMW_WEIGHT_DECAY)
        .build();
    let eight = AdamW8bit::new();
    // Under MIN_8BIT_SIZE the moments stay f32: the same arithmetic as burn's AdamW.
    let small = MIN_8BIT_SIZE - 1;
    let (want, got) = (
        three_steps(&adamw, small, &gpu.device),
        three_steps(&eight, small, &gpu.device),
    );
    let most = want
        .iter()
        .zip(&got)
        .map(|(a, b)| (a - b).abs())
        .fold(0f32, f32::max);
    println!("f32 moments: largest difference from AdamW {most:e}");
    assert!(most < 1e-6, "{most:e}");
    // Quantized: each step moves a weight by about the learning rate, 0.01; the moments'
    // rounding moves the steps after the first by a small share of that.
    let large = 4 * MIN_8BIT_SIZE + 100;
    let (want, got) = (
        three_steps(&adamw, large, &gpu.device),
        three_steps(&eight, large, &gpu.device),
    );
    let diffs: Vec<f32> = want.iter().zip(&got).map(|(a, b)| (a - b).abs()).collect();
    let most = diffs.iter().copied().fold(0f32, f32::max);
    let mean = diffs.iter().sum::<f32>() / diffs.len() as f32;
    println!("8-bit moments: difference from AdamW after 3 steps: mean {mean:e}, largest {most:e}");
    assert!(
        mean < 2e-4 && most < 2e-3,
        "mean {mean:e}, largest {most:e}"
    );
}

#[test]
fn its_state_round_trips_through_a_record() {
    use burn::optim::{RecordState, StateSink, StateSource};
    use std::collections::BTreeMap;
    let (_lock, gpu) = gpu();
    let n = MIN_8BIT_SIZE + 1;
    let eight = AdamW8bit::new();
    let weight = upload(&vec![0.5; n], &gpu.device);
    let grad = upload(&spread(n, true), &gpu.device);
    let (_, state) = eight.step(0.01, weight.clone(), grad.clone(), None);
    let state: AdamW8bitState = state.unwrap();
    let mut sink = StateSink::default();
    state.state_flatten("p", &mut sink);
    let mut source = StateSource::new(sink.scalars.into_iter().collect::<BTreeMap<_, _>>());
    for (name, data) in sink.tensors {
        source.insert_tensor(name, data);
    }
    let restored = AdamW8bitState::state_unflatten("p", &mut source, &gpu.device).unwrap();
    let (a, _) = eight.step(0.01, weight.clone(), grad.clone(), Some(state));
    let (b, _) = eight.step(0.01, weight, grad, Some(restored));
    assert_eq!(download(a), download(b));
}

/// The spiral MLP with a 100 x 300 middle layer: one weight of 30,000 values (117 whole blocks
/// and 48 values of an 118th), the rest under 4,096 values.
const SPIRAL: [&str; 3] = ["steps=3", "eval_every=0", "model.hidden=[100,300]"];
const SPIRAL_TENSORS: [&[usize]; 6] = [&[2, 100], &[100], &[100, 300], &[300], &[300, 2], &[2]];

fn train(optimizer: &str) -> Timeline {
    let (_lock, gpu) = gpu();
    let sets: Vec<String> = SPIRAL
        .iter()
        .map(|s| s.to_string())
        .chain([format!("optimizer={optimizer}")])
        .collect();
    let sets: Vec<&str> = sets.iter().map(String::as_str).collect();
    run(&gpu, config("spiral-mlp", &sets))
}

/// The optimizer's state at the second step, at its own size.
fn state(timeline: &Timeline) -> u64 {
    timeline.steps[1]
        .category_sizes
        .expect("per-phase sampling")
        .optimizer_state
}

/// One moment's bytes as the allocator holds them: the whole blocks' codes and scales as two
/// regions of one allocation, the last partial block's likewise, or f32 values; each region
/// rounded up to the allocator's `align`.
fn moment_bytes(values: usize, align: u64) -> u64 {
    let up = |bytes: usize| (bytes as u64).div_ceil(align) * align;
    if values < MIN_8BIT_SIZE {
        return up(4 * values);
    }
    let (whole, tail) = (values / BLOCK, values % BLOCK);
    let tail = if tail == 0 {
        0
    } else {
        up(tail.next_multiple_of(4)) + up(4)
    };
    up(BLOCK * whole) + up(4 * whole) + tail
}

#[test]
fn the_measured_state_is_the_layouts_bytes() {
    let align = {
        let (_lock, gpu) = gpu();
        cube_client(&gpu.device)
            .expect("a cubecl device")
            .properties()
            .memory
            .alignment
    };
    let sgd = train("sgd");
    let adamw = train("adamw");
    let eight = train("adamw8bit");
    let counts: Vec<usize> = SPIRAL_TENSORS.iter().map(|d| d.iter().product()).collect();
    assert_eq!(eight.summary.params, counts.iter().sum::<usize>() as u64);
    let f32_state: u64 = counts
        .iter()
        .map(|&n| 2 * (4 * n as u64).div_ceil(align) * align)
        .sum();
    let want: u64 = counts.iter().map(|&n| 2 * moment_bytes(n, align)).sum();
    let (sgd, adamw, eight) = (state(&sgd), state(&adamw), state(&eight));
    println!(
        "optimizer state (alignment {align} B): sgd {sgd}, adamw {adamw}, adamw8bit {eight} B; \
         adamw8bit's layout {want} B, adamw's {f32_state} B"
    );
    // What SGD's step leaves beside the weights (a few scalars) is every optimizer's.
    assert_eq!(adamw - sgd, f32_state, "adamw: two f32 moments");
    assert_eq!(
        eight - sgd,
        want,
        "adamw8bit: codes, scales and small f32 moments"
    );
}

#[test]
fn the_analytic_estimate_is_the_layouts_bytes() {
    let spiral = config(
        "spiral-mlp",
        &["model.hidden=[100,300]", "optimizer=adamw8bit"],
    );
    // 30,000 values: a byte each and a 4-byte scale per 256 (118 of them), twice; the rest
    // f32, twice.
    let small: u64 = [200, 100, 300, 600, 2].iter().sum();
    assert_eq!(
        predict(&spiral).optimizer_state,
        2 * (30_000 + 4 * 118) + 2 * 4 * small
    );
    // The digits MLP: bitsandbytes' n + 4 ceil(n / 256) for each matrix.
    let digits = config("digits-mlp", &["optimizer=adamw8bit"]);
    let matrices: [u64; 3] = [64 * 512, 512 * 512, 512 * 10];
    let codes: u64 = matrices
        .iter()
        .map(|&n| 2 * (n + 4 * n.div_ceil(256)))
        .sum();
    assert_eq!(
        predict(&digits).optimizer_state,
        codes + 2 * 4 * (512 + 512 + 10)
    );
    let adamw = config("digits-mlp", &["optimizer=adamw"]);
    println!(
        "digits-mlp optimizer state estimated: adamw {} B, adamw8bit {} B",
        predict(&adamw).optimizer_state,
        predict(&digits).optimizer_state
    );
}

/// 200 steps, a long measurement: the full tier's. The CI tier holds 8-bit AdamW's step to
/// AdamW's (`its_step_is_adamws`) and its state to its layout's bytes.
#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn it_trains_as_adamw_does() {
    let train = |optimizer: &str| {
        let (_lock, gpu) = gpu();
        let timeline = run(
            &gpu,
            config(
                "digits-mlp",
                &[
                    "steps=200",
                    "eval_every=0",
                    "memory_sampling=step",
                    &format!("optimizer={optimizer}"),
                ],
            ),
        );
        loss_ends(&timeline, 10)
    };
    let (first, adamw) = train("adamw");
    let (_, eight) = train("adamw8bit");
    println!(
        "digits-mlp, 200 steps, mean of the last 10 losses: adamw {adamw:.4}, adamw8bit {eight:.4} (from {first:.4})"
    );
    assert!(adamw < first / 4.0, "adamw trained: {first} -> {adamw}");
    assert!(
        (eight - adamw).abs() <= 0.05 * adamw,
        "adamw8bit {eight} vs adamw {adamw}"
    );
}
