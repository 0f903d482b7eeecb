//! Fine-tuning's memory as the allocator measures it: frozen weights get no gradient and no
//! optimizer state, LoRA's adapters are all that trains, each optimizer keeps the state it
//! says; and the Llama-style family builds at its published sizes.

use vramlab::engine::Timeline;
use vramlab::engine::device::planner;
use vramlab::engine::memory::{Categories, predict};
use vramlab::engine::presets::preset;
use vramlab::engine::{Run, RunConfig};

use super::support::{TINY_BATCH, config, gpu, loss_ends, run};

const SHORT: [&str; 3] = ["steps=3", "eval_every=0", "model.hidden=[256,256]"];

fn train(sets: &[&str]) -> Timeline {
    let (_lock, gpu) = gpu();
    let sets: Vec<&str> = SHORT.iter().chain(sets).copied().collect();
    run(&gpu, config("spiral-mlp", &sets))
}

/// The second step's categories at their own sizes: the optimizer's state exists from its
/// start; the gradients are read when backward ends.
fn second_step(timeline: &Timeline) -> Categories {
    let categories = timeline.steps[1]
        .category_sizes
        .expect("per-phase sampling");
    println!(
        "{} ({} of {} parameters train): {categories:?}",
        timeline.summary.strategies.trainable.name(),
        timeline.summary.trainable_params,
        timeline.summary.params
    );
    categories
}

/// `measured` is `want` within 5%, plus what the allocator rounds: each tensor's bytes are
/// padded to a 32-byte boundary, and burn keeps a few scalars beside them.
fn near(what: &str, measured: u64, want: u64, tensors: u64) {
    let slack = want / 20 + 32 * tensors + 256;
    assert!(
        measured.abs_diff(want) <= slack,
        "{what}: measured {measured} B, the trainable share is {want} B (slack {slack} B)"
    );
}

/// The gradient figure is in use when backward ends above the step's start and batch; by then
/// the step has freed a few values the previous step left (its loss among them). With every
/// weight training, that offset is what the figure falls short of the parameters' bytes.
fn gradient_offset(all: &Timeline) -> u64 {
    let params = all.summary.params * 4;
    let gradient = second_step(all).gradient;
    assert!(
        params - gradient < 4096,
        "{gradient} B of gradients for {params} B of weights"
    );
    params - gradient
}

#[test]
fn training_only_the_head_keeps_gradients_and_state_for_the_head_alone() {
    let all = train(&[]);
    let head = train(&["strategies.trainable=head"]);
    assert_eq!(head.summary.params, all.summary.params);
    // The output layer of 256 -> 2: its weight and bias.
    assert_eq!(head.summary.trainable_params, 256 * 2 + 2);
    let offset = gradient_offset(&all);
    let (all, head_step) = (second_step(&all), second_step(&head));
    let share = head.summary.trainable_params * 4;
    near("gradients", head_step.gradient + offset, share, 2);
    near(
        "Adam's two moments",
        head_step.optimizer_state,
        2 * share,
        4,
    );
    assert_eq!(
        head_step.parameter, all.parameter,
        "the frozen weights stay stored"
    );
    assert!(
        head_step.activation < all.activation / 2,
        "no graph before the head: {} vs {} B",
        head_step.activation,
        all.activation
    );
}

#[test]
fn lora_trains_only_its_adapters() {
    let all = train(&[]);
    let lora = train(&["strategies.trainable=lora", "strategies.lora_rank=4"]);
    // Three weight matrices (2x256, 256x256, 256x2), each with A (d_in x 4) and B (4 x d_out).
    let adapters = 4 * ((2 + 256) + (256 + 256) + (256 + 2));
    assert_eq!(lora.summary.adapter_params, adapters);
    assert_eq!(lora.summary.trainable_params, adapters);
    assert_eq!(lora.summary.params, all.summary.params);
    let offset = gradient_offset(&all);
    let (all, lora_step) = (second_step(&all), second_step(&lora));
    let share = adapters * 4;
    near("gradients", lora_step.gradient + offset, share, 6);
    near(
        "Adam's two moments",
        lora_step.optimizer_state,
        2 * share,
        12,
    );
    near(
        "frozen weights and their adapters",
        lora_step.parameter,
        all.parameter + share,
        6,
    );
}

#[test]
fn adafactor_and_lion_keep_less_state_than_adam() {
    let state = |optimizer: &str| {
        let timeline = train(&[&format!("optimizer={optimizer}")]);
        let params = timeline.summary.params * 4;
        (second_step(&timeline).optimizer_state, params)
    };
    let (adam, params) = state("adam");
    let (adamw, _) = state("adamw");
    let (lion, _) = state("lion");
    let (adafactor, _) = state("adafactor");
    println!("optimizer state: adam {adam}, adamw {adamw}, lion {lion}, adafactor {adafactor} B");
    near("adam: two moments", adam, 2 * params, 12);
    near("adamw: two moments", adamw, 2 * params, 12);
    near("lion: one moment", lion, params, 6);
    // A row and a column per matrix, a full moment per bias: 2 x 256 + 256 x 256 + 256 x 2
    // matrices keep 258 + 512 + 258 values, the biases 256 + 256 + 2.
    near(
        "adafactor: factored",
        adafactor,
        (258 + 512 + 258 + 514) * 4,
        6,
    );
    assert!(lion < adam && adafactor < lion);
}

#[test]
fn a_frozen_body_still_learns_through_its_head_and_its_adapters() {
    // The digits: a random frozen body's features still separate them (the spiral's barely).
    for trainable in ["head", "lora"] {
        let (_lock, gpu) = gpu();
        let timeline = run(
            &gpu,
            config(
                "digits-mlp",
                &[
                    "steps=30",
                    "eval_every=0",
                    "model.hidden=[128,128]",
                    "learning_rate=0.01",
                    &format!("strategies.trainable={trainable}"),
                ],
            ),
        );
        let (first, last) = loss_ends(&timeline, 5);
        println!("digits-mlp trainable={trainable}: loss {first:.4} -> {last:.4}");
        assert!(last < 0.9 * first, "{trainable}: loss {first} -> {last}");
    }
}

#[test]
fn a_lora_llama_trains_and_moves_its_categories() {
    let (_lock, gpu) = gpu();
    let short = ["steps=12", "eval_every=0", TINY_BATCH];
    let all = run(&gpu, config("sort-llama", &short));
    let sets: Vec<&str> = short
        .iter()
        .copied()
        .chain(["strategies.trainable=lora", "strategies.attention=fused"])
        .collect();
    let lora = run(&gpu, config("sort-llama", &sets));
    let (first, last) = loss_ends(&lora, 3);
    println!("sort-llama lora: loss {first:.4} -> {last:.4}");
    assert!(last < first, "loss {first} -> {last}");
    let (all, lora) = (second_step(&all), second_step(&lora));
    assert!(lora.gradient < all.gradient / 2, "{lora:?} vs {all:?}");
    assert!(lora.optimizer_state < all.optimizer_state / 2);
}

fn planned_params(config: RunConfig) -> u64 {
    // A plan's dry run is the whole process's: no run may train beside it.
    let (_lock, _) = gpu();
    let gpu = planner().expect("the planning device");
    let run = Run::plan(config, &gpu).expect("the model builds");
    run.param_counts().model
}

#[test]
fn llama_presets_have_their_published_parameter_counts() {
    for (name, published) in [
        ("tinyllama-1.1b", 1_100_048_384),
        ("llama2-7b", 6_738_415_616),
    ] {
        let config = preset(name).unwrap();
        assert_eq!(
            predict(&config).param_count,
            published,
            "{name}: the estimate"
        );
        assert_eq!(planned_params(config), published, "{name}: the model built");
    }
    let small = config("sort-llama", &[]);
    assert_eq!(
        planned_params(small.clone()),
        predict(&small).param_count,
        "the estimate counts what the model builds"
    );
}
