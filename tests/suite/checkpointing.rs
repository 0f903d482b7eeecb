//! Per-layer checkpointing (`strategies.checkpointing = layers`): the same training as without
//! it, step by step and gradient by gradient, with less kept; and plans of it equal real runs.

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Tensor;
use vramlab::engine::data::Dataset;
use vramlab::engine::models::{Model, Plain};
use vramlab::engine::strategies::Hooks;

use super::support::{TINY_BATCH, config, gpu, run, shared_run};

/// Every float parameter's gradient (zeros where it gets none), flattened, in visiting order.
struct Grads<'a> {
    grads: &'a burn::tensor::Gradients,
    found: Vec<(Vec<f32>, bool)>,
}

impl ModuleVisitor for Grads<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let tensor = param.base();
        let trains = tensor.is_require_grad();
        let grad = tensor
            .grad(self.grads)
            .map(|g| g.into_data().try_to_vec::<f32>().unwrap())
            .unwrap_or_default();
        self.found.push((grad, trains));
    }
}

/// One forward and backward of `preset` with `sets`, from the same seed: the loss and every
/// parameter's gradient.
fn loss_and_grads(preset: &str, sets: &[&str]) -> (f32, Vec<(Vec<f32>, bool)>) {
    let (_lock, gpu) = gpu();
    let config = config(preset, sets);
    gpu.device.seed(config.seed);
    let mut hooks = Hooks::new(&config, &gpu, None);
    let device = hooks.training_device(gpu.device.clone().autodiff());
    let data = Dataset::build(&config.data, config.seed).unwrap();
    let data = match config.model.is_decoder() {
        true => data.next_token(),
        false => data,
    };
    let stored = hooks.stored_dtype();
    let model = hooks.prepare_model(Model::build(&config, &data, &device, stored));
    let indices: Vec<usize> = (0..config.batch_size).collect();
    let batch = data.train.batch(&indices, data.targets_per_sample, &device);
    let logits = pollster::block_on(model.forward(&batch.inputs, &mut Plain));
    let loss = burn::nn::loss::CrossEntropyLossConfig::new()
        .init(&device)
        .forward(logits, batch.targets);
    let value = loss.clone().into_scalar::<f32>();
    let grads = loss.backward();
    let mut visitor = Grads {
        grads: &grads,
        found: Vec::new(),
    };
    model.visit(&mut visitor);
    (value, visitor.found)
}

/// The largest gap between two gradient lists, relative to the largest gradient magnitude of
/// the model: a gradient that is zero in exact arithmetic (a key bias's: softmax ignores what is
/// added to every score of a row) is rounding noise on both sides, so its own scale says nothing.
fn largest_gap(a: &[(Vec<f32>, bool)], b: &[(Vec<f32>, bool)]) -> (f32, usize) {
    assert_eq!(a.len(), b.len(), "the same parameters");
    let scale = a
        .iter()
        .chain(b)
        .flat_map(|(values, _)| values)
        .fold(0f32, |m, v| m.max(v.abs()));
    let mut worst = 0f32;
    let mut trained = 0;
    for ((a, trains_a), (b, trains_b)) in a.iter().zip(b) {
        assert_eq!(trains_a, trains_b);
        assert_eq!(a.len(), b.len(), "a gradient on one side only");
        if !trains_a {
            continue;
        }
        trained += 1;
        let gap = a.iter().zip(b).fold(0f32, |m, (x, y)| m.max((x - y).abs()));
        worst = worst.max(gap / scale.max(f32::MIN_POSITIVE));
    }
    (worst, trained)
}

/// One step's loss and every gradient, with and without per-layer checkpointing.
fn same_loss_and_gradients(preset: &str, sets: &[&str]) {
    let (loss, grads) = loss_and_grads(preset, sets);
    let with: Vec<&str> = sets
        .iter()
        .copied()
        .chain(["strategies.checkpointing=layers"])
        .collect();
    let (loss_layers, grads_layers) = loss_and_grads(preset, &with);
    let (gap, trained) = largest_gap(&grads, &grads_layers);
    println!(
        "{preset} {sets:?}: loss {loss} vs {loss_layers}; {trained} trained tensors, largest \
         gradient gap {gap:.2e}"
    );
    assert!(trained > 0, "something trains");
    assert!(
        (loss - loss_layers).abs() <= 1e-6 * loss.abs(),
        "loss {loss} vs {loss_layers}"
    );
    assert!(gap < 1e-5, "gradients differ by {gap}");
}

#[test]
fn layer_checkpointing_gives_the_same_loss_and_gradients() {
    for attention in ["strategies.attention=naive", "strategies.attention=fused"] {
        same_loss_and_gradients("sort-llama", &["batch_size=16", attention]);
        same_loss_and_gradients(
            "sort-llama",
            &[
                "batch_size=16",
                attention,
                "strategies.trainable=lora",
                "strategies.lora_rank=4",
            ],
        );
        same_loss_and_gradients("sort-gpt", &["batch_size=16", attention]);
        same_loss_and_gradients("sort-transformer", &["batch_size=16", attention]);
    }
    // f16 compute from f32 master weights, where the adapter has it: the recomputed blocks'
    // f16 copies must pass their gradients to the f32 masters through the casts.
    if adapter_has_shader_f16() {
        same_loss_and_gradients(
            "sort-llama",
            &["batch_size=16", "strategies.mixed_precision=f16"],
        );
    }
}

/// The other families' blocks, recomputed: Gemma's extra norms, windows and soft caps,
/// Qwen3's query and key norms, Phi-3's fused projections, and both mixtures of experts (a
/// recomputed block routes its tokens as its forward pass did), under LoRA too for one of them.
#[test]
fn layer_checkpointing_gives_the_same_loss_and_gradients_in_every_family() {
    for preset in [
        "sort-gemma2",
        "sort-gemma3",
        "sort-qwen3",
        "sort-phi3",
        "sort-mixtral",
        "sort-qwen3-moe",
    ] {
        same_loss_and_gradients(preset, &["batch_size=16"]);
    }
    same_loss_and_gradients(
        "sort-mixtral",
        &[
            "batch_size=16",
            "strategies.trainable=lora",
            "strategies.lora_rank=4",
        ],
    );
}

/// Whether this machine's adapter computes in f16 (lavapipe does; an f16 run elsewhere falls
/// back to f32, and a comparison of it would compare f32 runs).
fn adapter_has_shader_f16() -> bool {
    let (_lock, gpu) = gpu();
    gpu.adapter.shader_f16
}

/// Twenty steps with and without per-layer checkpointing: the losses agree step by step, and
/// the run with it holds less at its peak.
fn run_follows(preset: &str, sets: &[&str]) {
    let (_lock, gpu) = gpu();
    let mut base = vec!["steps=20", "eval_every=0"];
    base.extend(sets);
    // Every weight trained, this is also the naive side of fused_ops' llama comparison.
    let plain = shared_run(&gpu, config(preset, &base));
    base.push("strategies.checkpointing=layers");
    let layers = run(&gpu, config(preset, &base));
    for (a, b) in plain.steps.iter().zip(&layers.steps) {
        let (a, b) = (a.loss.unwrap(), b.loss.unwrap());
        let gap = (a - b).abs() / a.abs();
        assert!(
            gap < 1e-4,
            "{preset} {sets:?}: step losses {a} vs {b} ({gap:.1e})"
        );
    }
    println!(
        "{preset} {sets:?}: 20 steps agree within 1e-4; peak in use {} -> {} B",
        plain.summary.peak_in_use_bytes, layers.summary.peak_in_use_bytes
    );
    assert!(layers.summary.peak_in_use_bytes < plain.summary.peak_in_use_bytes);
}

#[test]
fn a_run_with_layer_checkpointing_follows_the_run_without() {
    // The preset's two blocks, in the suite's tiny batches: each block is recomputed on its own
    // in backward, and the peak holds one block's activations instead of both (four blocks
    // checked the same in twice the time). LoRA's and f16's gradients through the recompute
    // are held to the plain run's in the CI tier by one step each (above); their 20 steps are
    // the full tier's (below).
    run_follows("sort-llama", &[TINY_BATCH]);
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn a_run_with_layer_checkpointing_follows_the_run_without_under_lora_and_f16() {
    run_follows(
        "sort-llama",
        &[
            TINY_BATCH,
            "strategies.trainable=lora",
            "strategies.lora_rank=4",
        ],
    );
    // f16 compute from f32 master weights: the blocks' parameters are f16 copies (tracked
    // non-leaves), whose gradients must reach the masters through the casts.
    if adapter_has_shader_f16() {
        run_follows(
            "sort-llama",
            &[TINY_BATCH, "strategies.mixed_precision=f16"],
        );
    }
}

#[test]
fn layer_checkpointing_is_refused_for_models_without_blocks() {
    let mut config = config("spiral-mlp", &[]);
    config.strategies.checkpointing = vramlab::engine::config::Checkpointing::Layers;
    let err = config.validate().unwrap_err().to_string();
    assert!(err.contains("strategies.checkpointing"), "{err}");
    assert!(
        err.contains(
            "Models for it: transformer, llama, qwen3, gemma2, gemma3, phi3, mixtral, qwen3_moe;"
        ),
        "{err}"
    );
}
