//! Families added through the one-module `Family` trait (`engine::families`): each builds what
//! its estimate counts, trains natively, and takes the fine-tuning recipes its base family does.

use super::support::{TINY_BATCH, config, gpu, loss_ends, run, shared_run};
use burn::module::{Initializer, Module, ModuleVisitor, Param};
use burn::nn::LinearConfig;
use burn::tensor::{DType, FloatDType, Tensor};
use vramlab::engine::config::ModelKind;
use vramlab::engine::data::Dataset;
use vramlab::engine::device::planner;
use vramlab::engine::memory::predict;
use vramlab::engine::models::{Drawn, Model};
use vramlab::engine::{Purpose, Run};

#[test]
fn the_tiny_qwen3_builds_what_its_estimate_counts() {
    // A plan's dry run is the whole process's: no run may train beside it.
    let (_lock, _) = gpu();
    let small = config("sort-qwen3", &[]);
    assert_eq!(small.model.kind, ModelKind::Qwen3);
    // Its heads are their own width: 4 x 32 = 128 query outputs over a width of 64.
    assert_eq!(small.model.head_dim(), 32);
    let gpu = planner().expect("the planning device");
    let built = Run::plan(small.clone(), &gpu)
        .expect("the model builds")
        .param_counts()
        .model;
    assert_eq!(built, predict(&small).param_count);
    // The same llama without the per-head norms (2 x 32 a block) and with heads of
    // width / heads: q and o shrink from 64 x 128 to 64 x 64, k and v from 64 x 64 to 64 x 32.
    let mut llama = small.clone();
    llama.model.kind = ModelKind::Llama;
    llama.model.head_dim = 0;
    let blocks = 2;
    let per_block = 2 * 32 + 2 * 64 * (128 - 64) + 2 * 64 * (64 - 32);
    assert_eq!(
        predict(&llama).param_count + blocks * per_block,
        predict(&small).param_count
    );
}

#[test]
fn the_tiny_qwen3_trains_with_falling_loss() {
    let (_lock, gpu) = gpu();
    let timeline = shared_run(
        &gpu,
        config("sort-qwen3", &["steps=20", "eval_every=0", TINY_BATCH]),
    );
    let (first, last) = loss_ends(&timeline, 4);
    println!("sort-qwen3: loss {first:.4} -> {last:.4}");
    assert!(last < 0.9 * first, "loss {first} -> {last}");
}

/// The CI tier's family with LoRA, QLoRA and per-layer checkpointing; Gemma's, Phi-3's and
/// Mixtral's are the full tier's.
#[test]
fn qwen3_takes_lora_qlora_and_per_layer_checkpointing() {
    let (_lock, gpu) = gpu();
    let short = ["steps=8", "eval_every=0", TINY_BATCH];
    let with = |extra: &[&str]| {
        let sets: Vec<&str> = short.iter().chain(extra).copied().collect();
        config("sort-qwen3", &sets)
    };
    let lora = with(&["strategies.trainable=lora"]);
    let timeline = run(&gpu, lora);
    assert!(timeline.summary.trainable_params < timeline.summary.params / 4);
    let (first, last) = loss_ends(&timeline, 2);
    println!("sort-qwen3 lora: loss {first:.4} -> {last:.4}");
    assert!(last < first, "lora: loss {first} -> {last}");
    let layers = run(&gpu, with(&["strategies.checkpointing=layers"]));
    let (first, last) = loss_ends(&layers, 2);
    assert!(last < first, "checkpointing layers: loss {first} -> {last}");
    // QLoRA: a 4-bit base under LoRA's adapters, valid for a run and for a plan.
    let qlora = with(&["strategies.trainable=lora", "strategies.weight_dtype=q4"]);
    qlora.validate_for(Purpose::Run).expect("QLoRA on a Qwen3");
    let planner = planner().expect("the planning device");
    Run::plan(qlora, &planner).expect("the QLoRA model builds");
}

#[test]
fn the_tiny_gemmas_build_what_their_estimates_count() {
    // A plan's dry run is the whole process's: no run may train beside it.
    let (_lock, _) = gpu();
    let gpu = planner().expect("the planning device");
    for (name, kind) in [
        ("sort-gemma2", ModelKind::Gemma2),
        ("sort-gemma3", ModelKind::Gemma3),
    ] {
        let small = config(name, &[]);
        assert_eq!(small.model.kind, kind);
        let built = Run::plan(small.clone(), &gpu)
            .expect("the model builds")
            .param_counts()
            .model;
        assert_eq!(built, predict(&small).param_count, "{name}");
        // The same llama (heads as wide, the same window and caps) has neither the norms
        // after each sublayer (2 x 64 a block) nor, for Gemma 3, the per-head norms (2 x 32).
        let mut llama = small.clone();
        llama.model.kind = ModelKind::Llama;
        let per_block = match kind {
            ModelKind::Gemma3 => 2 * 64 + 2 * 32,
            _ => 2 * 64,
        };
        let llama_built = Run::plan(llama, &gpu)
            .expect("the llama builds")
            .param_counts()
            .model;
        assert_eq!(llama_built + 2 * per_block, built, "{name}");
    }
}

#[test]
fn the_tiny_gemmas_train_with_falling_loss() {
    let (_lock, gpu) = gpu();
    for name in ["sort-gemma2", "sort-gemma3"] {
        let timeline = shared_run(
            &gpu,
            config(name, &["steps=20", "eval_every=0", TINY_BATCH]),
        );
        let (first, last) = loss_ends(&timeline, 4);
        println!("{name}: loss {first:.4} -> {last:.4}");
        assert!(last < 0.9 * first, "{name}: loss {first} -> {last}");
    }
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn gemma_takes_lora_qlora_and_per_layer_checkpointing() {
    let (_lock, gpu) = gpu();
    let short = ["steps=8", "eval_every=0", TINY_BATCH];
    let with = |extra: &[&str]| {
        let sets: Vec<&str> = short.iter().chain(extra).copied().collect();
        config("sort-gemma3", &sets)
    };
    let timeline = run(&gpu, with(&["strategies.trainable=lora"]));
    assert!(timeline.summary.trainable_params < timeline.summary.params / 4);
    let (first, last) = loss_ends(&timeline, 2);
    println!("sort-gemma3 lora: loss {first:.4} -> {last:.4}");
    assert!(last < first, "lora: loss {first} -> {last}");
    let layers = run(&gpu, with(&["strategies.checkpointing=layers"]));
    let (first, last) = loss_ends(&layers, 2);
    println!("sort-gemma3 checkpointing layers: loss {first:.4} -> {last:.4}");
    assert!(last < first, "checkpointing layers: loss {first} -> {last}");
    let qlora = with(&["strategies.trainable=lora", "strategies.weight_dtype=q4"]);
    qlora
        .validate_for(Purpose::Run)
        .expect("QLoRA on a Gemma 3");
    let planner = planner().expect("the planning device");
    Run::plan(qlora, &planner).expect("the QLoRA model builds");
}

/// The shapes of a module's weight matrices, in the order burn visits them.
struct Matrices(Vec<Vec<usize>>);

impl ModuleVisitor for Matrices {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if D == 2 {
            self.0.push(param.lazy_shape().dims::<D>().to_vec());
        }
    }
}

#[test]
fn the_tiny_phi3_holds_its_projections_fused_as_phi3_does() {
    // A plan's dry run is the whole process's: no run may train beside it.
    let (_lock, _) = gpu();
    let phi3 = config("sort-phi3", &[]);
    assert_eq!(phi3.model.kind, ModelKind::Phi3);
    let gpu = planner().expect("the planning device");
    let data = Dataset::build(&phi3.data, phi3.seed).unwrap();
    let mut matrices = Matrices(Vec::new());
    Model::build(&phi3, &data, &gpu.device, FloatDType::F32).visit(&mut matrices);
    // Width 64, four heads of 16, two key/value heads, ff 176: one [64, (4 + 2 x 2) x 16]
    // matrix for Q, K and V, one [64, 2 x 176] for the gate and up, as Phi-3's checkpoints.
    let tokens = phi3.token_rows();
    let block = [vec![64, 128], vec![64, 64], vec![64, 352], vec![176, 64]];
    let mut expected = vec![vec![tokens, 64]];
    expected.extend(block.iter().chain(&block).cloned());
    expected.push(vec![64, tokens]);
    assert_eq!(matrices.0, expected);
    // The parameters of the llama of the same shape, in four matrices a block, not seven.
    let built = Run::plan(phi3.clone(), &gpu)
        .expect("the model builds")
        .param_counts()
        .model;
    assert_eq!(built, predict(&phi3).param_count);
    let mut llama = phi3.clone();
    llama.model.kind = ModelKind::Llama;
    assert_eq!(predict(&llama).param_count, built);
    // LoRA adapts the four: rank 8 x (64 + 128, 64 + 64, 64 + 352, 176 + 64) a block.
    let lora = config("sort-phi3", &["strategies.trainable=lora"]);
    let adapters = Run::plan(lora.clone(), &gpu)
        .expect("the LoRA model builds")
        .param_counts()
        .adapters;
    assert_eq!(adapters, 2 * 8 * (192 + 128 + 416 + 240));
    assert_eq!(predict(&lora).trainable_count, adapters);
}

#[test]
fn the_tiny_phi3_trains_with_falling_loss() {
    let (_lock, gpu) = gpu();
    let timeline = shared_run(
        &gpu,
        config("sort-phi3", &["steps=20", "eval_every=0", TINY_BATCH]),
    );
    let (first, last) = loss_ends(&timeline, 4);
    println!("sort-phi3: loss {first:.4} -> {last:.4}");
    assert!(last < 0.9 * first, "loss {first} -> {last}");
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn phi3_takes_lora_and_per_layer_checkpointing() {
    let (_lock, gpu) = gpu();
    let short = ["steps=8", "eval_every=0", TINY_BATCH];
    let with = |extra: &[&str]| {
        let sets: Vec<&str> = short.iter().chain(extra).copied().collect();
        config("sort-phi3", &sets)
    };
    let timeline = run(&gpu, with(&["strategies.trainable=lora"]));
    assert!(timeline.summary.trainable_params < timeline.summary.params / 4);
    let (first, last) = loss_ends(&timeline, 2);
    println!("sort-phi3 lora: loss {first:.4} -> {last:.4}");
    assert!(last < first, "lora: loss {first} -> {last}");
    let layers = run(
        &gpu,
        with(&[
            "strategies.checkpointing=layers",
            "strategies.attention=fused",
        ]),
    );
    let (first, last) = loss_ends(&layers, 2);
    println!("sort-phi3 checkpointing layers: loss {first:.4} -> {last:.4}");
    assert!(last < first, "checkpointing layers: loss {first} -> {last}");
}

/// `models::Drawn` in f16 draws from the distribution burn's f32 initializer uses: a linear
/// layer's Kaiming-uniform weights inside `1 / sqrt(d_input)`, their mean magnitude half of it;
/// a norm's ones are ones. In f32 it is burn's own draw.
#[test]
fn a_llamas_parameters_are_drawn_in_their_stored_type_from_burns_distribution() {
    let (_lock, gpu) = gpu();
    let config = LinearConfig::new(256, 64);
    let half = Drawn::new(FloatDType::F16, &gpu.device).linear(&config);
    let weight = half.weight.val();
    assert_eq!(weight.dtype(), DType::F16);
    assert_eq!(weight.dims(), [256, 64]);
    let values = weight
        .cast(FloatDType::F32)
        .into_data()
        .try_to_vec::<f32>()
        .unwrap();
    let bound = 1.0 / 16.0;
    assert!(values.iter().all(|v| v.abs() <= bound * 1.001));
    let mean_abs = values.iter().map(|v| v.abs()).sum::<f32>() / values.len() as f32;
    assert!((mean_abs - bound / 2.0).abs() < 0.002, "{mean_abs}");

    let ones = Drawn::new(FloatDType::F16, &gpu.device)
        .param::<1>(&Initializer::Ones, [8], None, None)
        .val();
    assert_eq!(ones.dtype(), DType::F16);
    let ones = ones
        .cast(FloatDType::F32)
        .into_data()
        .try_to_vec::<f32>()
        .unwrap();
    assert_eq!(ones, vec![1.0; 8]);

    let full = Drawn::new(FloatDType::F32, &gpu.device).linear(&config.with_bias(true));
    assert_eq!(full.weight.val().dtype(), DType::F32);
    assert_eq!(full.bias.expect("a bias").val().dims(), [64]);
}
