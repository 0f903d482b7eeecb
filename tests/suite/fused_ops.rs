//! vramlab's fused ops against the paths people run: the same outputs and the same gradients on
//! small, odd shapes (cross-entropy cut into small, uneven blocks; attention's tiles of four rows
//! or keys ending short and crossing the seams between grouped heads); and whole runs with them
//! agree step by step with burn's.

use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::{Device, Distribution, Int, Tensor, TensorData};
use vramlab::engine::Run;
use vramlab::engine::models::RoutingSource;
use vramlab::engine::ops::grouped_matmul::{Groups, grouped_matmul};
use vramlab::engine::ops::{attention, cross_entropy};

use super::support::{TINY_BATCH, config, gpu, relative_gap, run, shared_run};

fn random<const D: usize>(shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::random(shape, Distribution::Normal(0.0, 1.0), device)
}

/// Outputs and the gradients of Q, K and V, from `attend`, under a random upstream gradient.
fn attention_and_grads(
    inputs: &[Tensor<4>; 3],
    upstream: &Tensor<4>,
    attend: impl Fn(Tensor<4>, Tensor<4>, Tensor<4>) -> Tensor<4>,
) -> (Tensor<4>, [Tensor<4>; 3]) {
    let [q, k, v] = inputs.clone().map(|t| t.require_grad());
    let out = attend(q.clone(), k.clone(), v.clone());
    let grads = (out.clone() * upstream.clone()).sum().backward();
    let grad = |t: &Tensor<4>| t.grad(&grads).expect("every input is tracked");
    (out.inner(), [grad(&q), grad(&k), grad(&v)])
}

#[test]
fn fused_attention_equals_naive_attention_in_outputs_and_gradients() {
    let (_lock, gpu) = gpu();
    let device = gpu.device.clone().autodiff();
    device.seed(7);
    // 37 positions in the kernels' tiles of four rows (or keys): nine full tiles and one row.
    let shape = [2, 3, 37, 8];
    for causal in [false, true] {
        let inputs = [
            random(shape, &device),
            random(shape, &device),
            random(shape, &device),
        ];
        let upstream = random(shape, &device);
        let (naive_out, naive_grads) = attention_and_grads(&inputs, &upstream, |q, k, v| {
            attention::naive(q, k, v, causal)
        });
        let (fused_out, fused_grads) = attention_and_grads(&inputs, &upstream, |q, k, v| {
            attention::fused(q, k, v, causal)
        });
        let out_gap = relative_gap(naive_out, fused_out);
        println!("causal {causal}: output gap {out_gap:.2e}");
        assert!(
            out_gap < 1e-5,
            "causal {causal}: outputs differ by {out_gap}"
        );
        for (name, (naive, fused)) in ["q", "k", "v"]
            .iter()
            .zip(naive_grads.into_iter().zip(fused_grads))
        {
            let gap = relative_gap(naive, fused);
            println!("causal {causal}: d{name} gap {gap:.2e}");
            assert!(gap < 1e-4, "causal {causal}: d{name} differs by {gap}");
        }
        // Without autodiff (a no-grad evaluation) the fused op gives the same output.
        let plain = inputs.clone().map(|t| t.inner());
        let [q, k, v] = plain.clone();
        let [nq, nk, nv] = plain;
        let gap = relative_gap(
            attention::naive(nq, nk, nv, causal),
            attention::fused(q, k, v, causal),
        );
        assert!(
            gap < 1e-5,
            "causal {causal}: no-grad outputs differ by {gap}"
        );
    }
}

/// The experts' grouped product against the loop people run (each expert's rows times its own
/// matrix, burn's matmul): the same output and the same gradients of the rows and of every
/// expert's matrix, with uneven groups, an expert that receives nothing, and the weight trained
/// and frozen (a frozen weight's node keeps no input, and gets no gradient).
#[test]
fn grouped_experts_product_equals_the_per_expert_loop_in_outputs_and_gradients() {
    let (_lock, gpu) = gpu();
    let device = gpu.device.clone().autodiff();
    device.seed(11);
    let counts = [5usize, 0, 9, 2];
    let rows: usize = counts.iter().sum();
    let (inputs, outputs) = (7, 6);
    let x = random([rows, inputs], &device);
    let weights = random([counts.len(), inputs, outputs], &device);
    let upstream = random([rows, outputs], &device);
    let ints = |values: Vec<i64>| {
        let len = values.len();
        Tensor::<1, Int>::from_data(TensorData::new(values, [len]), &device)
    };
    let starts: Vec<usize> = counts
        .iter()
        .scan(0, |at, &n| {
            *at += n;
            Some(*at - n)
        })
        .collect();
    let groups = Groups::new(&counts, ints);
    let looped = |x: Tensor<2>, w: Tensor<3>| {
        let parts: Vec<Tensor<2>> = (0..counts.len())
            .filter(|&e| counts[e] > 0)
            .map(|e| {
                let matrix = w.clone().narrow(0, e, 1).squeeze_dim::<2>(0);
                x.clone().narrow(0, starts[e], counts[e]).matmul(matrix)
            })
            .collect();
        Tensor::cat(parts, 0)
    };
    for weight_trains in [true, false] {
        let run = |product: &dyn Fn(Tensor<2>, Tensor<3>) -> Tensor<2>| {
            let x = x.clone().require_grad();
            let w = if weight_trains {
                weights.clone().require_grad()
            } else {
                weights.clone()
            };
            let out = product(x.clone(), w.clone());
            let grads = (out.clone() * upstream.clone()).sum().backward();
            (
                out.inner(),
                x.grad(&grads).expect("x is tracked"),
                w.grad(&grads),
            )
        };
        let (loop_out, loop_dx, loop_dw) = run(&looped);
        let (out, dx, dw) = run(&|x, w| grouped_matmul(x, w, &groups));
        let gaps = [relative_gap(loop_out, out), relative_gap(loop_dx, dx)];
        println!("weight trains {weight_trains}: output and dx gaps {gaps:?}");
        assert!(gaps.iter().all(|&gap| gap < 1e-5), "{gaps:?}");
        match (loop_dw, dw) {
            (Some(looped), Some(grouped)) => {
                let gap = relative_gap(looped, grouped);
                println!("dW gap {gap:.2e}");
                assert!(weight_trains && gap < 1e-5, "dW differs by {gap}");
            }
            (None, None) => assert!(!weight_trains),
            _ => panic!("one path gave the weight a gradient and the other not"),
        }
    }
    // Without autodiff (a no-grad evaluation): the same product.
    let plain = grouped_matmul(x.clone().inner(), weights.clone().inner(), &groups);
    let gap = relative_gap(looped(x.inner(), weights.inner()), plain);
    assert!(gap < 1e-5, "no-grad outputs differ by {gap}");
}

#[test]
fn grouped_fused_attention_equals_naive_attention_on_repeated_heads() {
    let (_lock, gpu) = gpu();
    let device = gpu.device.clone().autodiff();
    device.seed(9);
    // Six query heads over two key/value heads, 13 positions: tiles of four folded rows cross
    // the seams between a group's heads.
    let (batch, heads, kv_heads, length, head_dim) = (2, 6, 2, 13, 8);
    for causal in [false, true] {
        let inputs = [
            random([batch, heads, length, head_dim], &device),
            random([batch, kv_heads, length, head_dim], &device),
            random([batch, kv_heads, length, head_dim], &device),
        ];
        let upstream = random([batch, heads, length, head_dim], &device);
        let group = heads / kv_heads;
        let (naive_out, naive_grads) = attention_and_grads(&inputs, &upstream, |q, k, v| {
            let (k, v) = (
                attention::repeat_heads(k, group),
                attention::repeat_heads(v, group),
            );
            attention::naive(q, k, v, causal)
        });
        let (fused_out, fused_grads) = attention_and_grads(&inputs, &upstream, |q, k, v| {
            attention::fused_grouped(q, k, v, causal)
        });
        let out_gap = relative_gap(naive_out, fused_out);
        println!("grouped attention (causal {causal}): output gap {out_gap:.2e}");
        assert!(out_gap < 1e-5, "outputs differ by {out_gap}");
        for (name, (a, b)) in ["q", "k", "v"]
            .iter()
            .zip(naive_grads.into_iter().zip(fused_grads))
        {
            let gap = relative_gap(a, b);
            println!("  d{name} gap {gap:.2e}");
            assert!(gap < 1e-5, "d{name} differs by {gap} (causal {causal})");
        }
    }
}

#[test]
fn fused_cross_entropy_equals_burns_loss_in_value_and_gradient() {
    let (_lock, gpu) = gpu();
    let device = gpu.device.clone().autodiff();
    device.seed(11);
    let (rows, classes) = (37, 11);
    let logits = random([rows, classes], &device).mul_scalar(3.0);
    let ids: Vec<i64> = (0..rows as i64)
        .map(|i| (i * 7 + 3) % classes as i64)
        .collect();
    let targets = Tensor::<1, Int>::from_data(TensorData::new(ids, [rows]), &device);
    let loss_and_grad = |loss: &dyn Fn(Tensor<2>, Tensor<1, Int>) -> Tensor<1>| {
        let x = logits.clone().require_grad();
        let value = loss(x.clone(), targets.clone());
        let grads = value.clone().mul_scalar(2.5).backward();
        (
            value.into_scalar::<f32>(),
            x.grad(&grads).expect("logits are tracked"),
        )
    };
    let burn_loss = CrossEntropyLossConfig::new().init(&device);
    let (naive, naive_grad) = loss_and_grad(&|x, t| burn_loss.forward(x, t));
    let (fused, fused_grad) = loss_and_grad(&|x, t| cross_entropy::fused_in_blocks(x, t, 5));
    let value_gap = (naive - fused).abs() / naive.abs();
    let grad_gap = relative_gap(naive_grad, fused_grad);
    println!(
        "cross-entropy {naive} vs {fused}: value gap {value_gap:.2e}, gradient gap {grad_gap:.2e}"
    );
    assert!(value_gap < 1e-5, "loss {naive} vs {fused}");
    assert!(grad_gap < 1e-5, "gradients differ by {grad_gap}");
}

/// Twenty steps of a preset with burn's attention and loss, and with both fused: the losses
/// agree step by step (same seed, same batches, same initial weights).
fn fused_run_follows_naive_run(preset: &str) {
    let (_lock, gpu) = gpu();
    let sets = ["steps=20", "eval_every=0", TINY_BATCH];
    // The naive run is the tiny family's own falling-loss run (tests/suite/families.rs).
    let naive = shared_run(&gpu, config(preset, &sets));
    let fused_sets: Vec<&str> = sets
        .iter()
        .copied()
        .chain([
            "strategies.attention=fused",
            "strategies.cross_entropy=fused",
        ])
        .collect();
    let fused = run(&gpu, config(preset, &fused_sets));
    for (a, b) in naive.steps.iter().zip(&fused.steps) {
        let (a, b) = (a.loss.unwrap(), b.loss.unwrap());
        let gap = (a - b).abs() / a.abs();
        assert!(
            gap < 1e-4,
            "{preset} step losses {a} vs {b} (relative {gap:.1e})"
        );
    }
    let (first, last) = (fused.steps[0].loss.unwrap(), fused.steps[19].loss.unwrap());
    println!(
        "{preset}: 20 steps naive and fused agree within 1e-4; loss {first:.4} -> {last:.4}; peak \
         in use {} -> {} B",
        naive.summary.peak_in_use_bytes, fused.summary.peak_in_use_bytes
    );
    assert!(last < first, "{preset} fused: loss {first} -> {last}");
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn fused_encoder_run_follows_the_naive_run() {
    fused_run_follows_naive_run("sort-transformer");
}

/// The CI tier's 20-step comparison of fused and naive kernels (grouped heads, rotary
/// positions); the other families' comparisons are the full tier's, and each family's fused
/// attention is held to the naive path op by op in the CI tier (the tests above and below).
#[test]
fn fused_llama_run_follows_the_naive_run() {
    fused_run_follows_naive_run("sort-llama");
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn fused_gemma2_run_follows_the_naive_run() {
    fused_run_follows_naive_run("sort-gemma2");
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn fused_gemma3_run_follows_the_naive_run() {
    fused_run_follows_naive_run("sort-gemma3");
}

/// [`fused_run_follows_naive_run`] for a mixture of experts, the fused run routed as the naive
/// one was: a token whose two best experts score within rounding of each other may go one way
/// in one run and the other way in the other, which is the router's discontinuity, not a
/// difference in attention. With the routing held alike, what is left to differ is the two
/// attentions. (sort-qwen3-moe's two runs end 1.0e-4 apart at step 20, and 3.3e-4 routed
/// alike, where sort-mixtral's stay within 3e-6: not diagnosed, so it has no such test.)
fn fused_moe_run_follows_the_naive_run(preset: &str) {
    let (_lock, gpu) = gpu();
    let sets = ["steps=20", "eval_every=0", TINY_BATCH];
    let train = |sets: &[&str], source: Option<RoutingSource>| {
        let mut run = Run::new(config(preset, sets), &gpu).expect("the run starts");
        let routing = run.routing().expect("a mixture of experts").clone();
        routing.record();
        if let Some(source) = source {
            routing.set_source(source);
        }
        while !run.is_finished() {
            pollster::block_on(run.step()).expect("a step");
        }
        let losses: Vec<f32> = pollster::block_on(run.finish())
            .expect("the run ends")
            .steps
            .iter()
            .map(|s| s.loss.unwrap())
            .collect();
        (losses, routing.recorded())
    };
    let (naive, assignments) = train(&sets, None);
    let fused_sets: Vec<&str> = sets
        .iter()
        .copied()
        .chain([
            "strategies.attention=fused",
            "strategies.cross_entropy=fused",
        ])
        .collect();
    let (fused, _) = train(&fused_sets, Some(RoutingSource::Assigned(assignments)));
    for (a, b) in naive.iter().zip(&fused) {
        let gap = (a - b).abs() / a.abs();
        assert!(
            gap < 1e-4,
            "{preset} step losses {a} vs {b} (relative {gap:.1e})"
        );
    }
    let widest = naive
        .iter()
        .zip(&fused)
        .map(|(a, b)| (a - b).abs() / a.abs())
        .fold(0.0f32, f32::max);
    println!(
        "{preset}: 20 steps naive and fused (routed alike) agree within {widest:.1e}; loss {:.4} \
         -> {:.4}",
        fused[0], fused[19]
    );
    assert!(fused[19] < fused[0]);
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn fused_mixtral_run_follows_the_naive_run() {
    fused_run_follows_naive_run("sort-mixtral");
    fused_moe_run_follows_the_naive_run("sort-mixtral");
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn fused_qwen3_run_follows_the_naive_run() {
    fused_run_follows_naive_run("sort-qwen3");
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn fused_phi3_run_follows_the_naive_run() {
    fused_run_follows_naive_run("sort-phi3");
}

/// Gemma's attention: grouped heads, a sliding window and soft-capped scores, fused, on an odd
/// length, against the naive path (repeated heads, capped scores, both masks).
#[test]
fn windowed_capped_fused_attention_equals_the_naive_path() {
    let (_lock, gpu) = gpu();
    let device = gpu.device.clone().autodiff();
    device.seed(11);
    let (q_shape, kv_shape) = ([2, 4, 37, 8], [2, 2, 37, 8]);
    let inputs = [
        random(q_shape, &device),
        random(kv_shape, &device),
        random(kv_shape, &device),
    ];
    let upstream = random(q_shape, &device);
    for (window, cap) in [(6, 0.0), (0, 1.5), (6, 1.5)] {
        let masking = attention::Masking {
            window,
            soft_cap: cap,
        };
        let (naive_out, naive_grads) = attention_and_grads(&inputs, &upstream, |q, k, v| {
            let (k, v) = (attention::repeat_heads(k, 2), attention::repeat_heads(v, 2));
            let scores = q.matmul(k.transpose()).div_scalar(8f32.sqrt());
            let scores = if cap > 0.0 {
                attention::soft_cap(scores, cap)
            } else {
                scores
            };
            let scores = attention::mask_future(scores);
            let scores = match window {
                0 => scores,
                w => attention::mask_outside_window(scores, w),
            };
            burn::tensor::activation::softmax(scores, 3).matmul(v)
        });
        let (fused_out, fused_grads) = attention_and_grads(&inputs, &upstream, |q, k, v| {
            attention::fused_grouped_masked(q, k, v, masking)
        });
        // The window and the cap change the output: the comparison is not of plain attention.
        let [q, k, v] = inputs.clone().map(|t| t.inner());
        let plain = attention::fused_grouped(q, k, v, true);
        let changed = relative_gap(plain, fused_out.clone());
        let scale = fused_out.clone().abs().max().into_scalar::<f32>();
        println!("window {window}, cap {cap}: output scale {scale:.3}, {changed:.2e} from plain");
        assert!(
            changed > 1e-3,
            "window {window}, cap {cap}: changes nothing"
        );
        let gap = relative_gap(naive_out, fused_out);
        println!("window {window}, cap {cap}: output gap {gap:.2e}");
        assert!(
            gap < 1e-5,
            "window {window}, cap {cap}: outputs differ by {gap}"
        );
        for (name, (naive, fused)) in ["q", "k", "v"]
            .iter()
            .zip(naive_grads.into_iter().zip(fused_grads))
        {
            let gap = relative_gap(naive, fused);
            println!("window {window}, cap {cap}: d{name} gap {gap:.2e}");
            assert!(
                gap < 1e-4,
                "window {window}, cap {cap}: d{name} differs by {gap}"
            );
        }
    }
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn fused_decoder_run_follows_the_naive_run() {
    fused_run_follows_naive_run("sort-gpt");
}

#[test]
fn the_naive_block_is_burns_transformer_encoder_op_for_op() {
    use vramlab::engine::config::OpPath;
    use vramlab::engine::models::{Plain, Transformer, TransformerSize};
    let (_lock, gpu) = gpu();
    let device = gpu.device.clone();
    device.seed(5);
    let (batch, length, vocab) = (3, 12, 9);
    let ids: Vec<i64> = (0..(batch * length) as i64)
        .map(|i| (i * 5 + 1) % vocab)
        .collect();
    let tokens = Tensor::<2, Int>::from_data(TensorData::new(ids, [batch, length]), &device);
    for decoder in [false, true] {
        for attention in [OpPath::Naive, OpPath::Fused] {
            let size = TransformerSize {
                width: 16,
                layers: 2,
                heads: 4,
                ff: 32,
                decoder,
                attention,
                recompute: false,
            };
            let model = Transformer::new(vocab as usize, length, &size, vocab as usize, &device);
            let ours = model.forward(tokens.clone(), &mut Plain);
            let burns = model.forward_with_burns_encoder(tokens.clone());
            let gap = relative_gap(ours, burns);
            println!("decoder {decoder}, attention {attention:?}: gap to burn's encoder {gap:.2e}");
            assert!(
                gap < 1e-5,
                "decoder {decoder}, {attention:?}: differs by {gap}"
            );
        }
    }
}
