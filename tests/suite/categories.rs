//! Measured categories move the way their strategy says, and the memory of one step is the
//! allocator's own trace: short real runs of the default preset, three steps each (the second
//! has the optimizer's state from its start and no evaluation; the last evaluates).

use vramlab::engine::Timeline;
use vramlab::engine::memory::Categories;
use vramlab::engine::phase::Phase;

use super::support::{config, gpu, run};

const SHORT: [&str; 2] = ["steps=3", "eval_every=0"];

fn train(sets: &[&str]) -> Timeline {
    let (_lock, gpu) = gpu();
    let sets: Vec<&str> = SHORT.iter().chain(sets).copied().collect();
    run(&gpu, config("spiral-mlp", &sets))
}

/// The second step's categories: the optimizer's state exists from its start.
fn second_step(timeline: &Timeline) -> Categories {
    let categories = timeline.steps[1].categories.expect("per-phase sampling");
    println!("{}: {categories:?}", timeline.summary.name);
    assert_eq!(
        categories.total(),
        timeline.steps[1].high_water.in_use_bytes,
        "the stack sums to the high-water mark"
    );
    categories
}

#[test]
fn accumulating_over_four_passes_keeps_about_a_quarter_of_the_activations() {
    let whole = second_step(&train(&[]));
    let passes = second_step(&train(&["strategies.grad_accumulation=4"]));
    let ratio = passes.activation as f64 / whole.activation as f64;
    println!("activation with k=4 / k=1: {ratio:.3}");
    assert!((0.22..=0.30).contains(&ratio), "{ratio}");
    assert_eq!(passes.parameter, whole.parameter);
    assert_eq!(passes.optimizer_state, whole.optimizer_state);
    let gradients = passes.gradient as f64 / whole.gradient as f64;
    assert!(
        (0.99..=1.01).contains(&gradients),
        "the summed gradients are one set: {gradients}"
    );
}

#[test]
fn adam_keeps_two_copies_of_the_parameters_that_sgd_does_not() {
    let adam = train(&["optimizer=adam"]);
    let sgd = second_step(&train(&["optimizer=sgd"]));
    let params = adam.summary.params * 4;
    let adam = second_step(&adam);
    // Within a few bytes: burn allocates a few scalars beside the tensors counted here.
    let near = |got: u64, want: u64| got.abs_diff(want) < 256;
    assert!(
        near(adam.parameter, params),
        "f32 parameters as stored: {} vs {params}",
        adam.parameter
    );
    let adam_state = adam.optimizer_state - sgd.optimizer_state;
    assert!(
        near(adam_state, 2 * params),
        "two moments: {adam_state} vs {}",
        2 * params
    );
    assert!(sgd.optimizer_state < 1024, "{}", sgd.optimizer_state);
    // Beside the gradients at that check point: the step's loss; the targets are gone.
    let gradients = adam.gradient as f64 / params as f64;
    assert!(
        (0.99..=1.01).contains(&gradients),
        "one gradient per parameter: {gradients}"
    );
}

#[test]
fn f16_weights_halve_the_parameters() {
    let f32_weights = second_step(&train(&[]));
    let f16_weights = second_step(&train(&["strategies.weight_dtype=f16"]));
    let ratio = f16_weights.parameter as f64 / f32_weights.parameter as f64;
    println!("parameter bytes f16 / f32: {ratio:.5}");
    assert!((0.499..=0.501).contains(&ratio), "{ratio}");
}

#[test]
fn a_no_grad_evaluation_keeps_no_activations_and_an_autodiff_one_does() {
    let eval = |mode: &str| {
        let timeline = train(&[&format!("strategies.eval_mode={mode}")]);
        let categories = timeline.evals[0]
            .categories
            .expect("the last step evaluates");
        println!("eval {mode}: {categories:?}");
        assert_eq!(
            categories.total(),
            timeline.evals[0].high_water.in_use_bytes
        );
        categories
    };
    let no_grad = eval("no_grad");
    let autodiff = eval("autodiff");
    assert_eq!(no_grad.activation, 0);
    assert!(autodiff.activation > 1 << 20, "{}", autodiff.activation);
    assert_eq!(no_grad.input, autodiff.input, "the same evaluation batch");
}

#[test]
fn the_memory_of_one_step_peaks_at_its_high_water_mark_and_checkpointing_lowers_the_hill() {
    let hill = |timeline: &Timeline| {
        let trace = timeline.one_step.as_ref().expect("the last step's trace");
        let last = timeline.steps.last().unwrap();
        assert_eq!(trace.step, last.step);
        assert!(trace.launches, "per-phase sampling reads every launch");
        assert_eq!(trace.peak(), last.high_water.in_use_bytes);
        let mut phases: Vec<Phase> = trace.marks.iter().map(|mark| mark.phase).collect();
        phases.dedup();
        assert_eq!(
            phases,
            [
                Phase::Upload,
                Phase::Forward,
                Phase::Backward,
                Phase::Optimizer,
                Phase::Eval
            ]
        );
        trace.peak()
    };
    let plain = hill(&train(&[]));
    let checkpointed = hill(&train(&["strategies.checkpointing=balanced"]));
    println!("one step's peak: {plain} B plain, {checkpointed} B checkpointed");
    assert!(checkpointed < plain);
}
