//! Plans: a dry run's allocator figures match a real run's where both can run, a model far
//! bigger than this device plans in seconds, and a plan's suggestions are themselves planned.

use vramlab::engine::phase::Phase;
use vramlab::engine::plan::{self, Checked, Plan};

use crate::suite::support::{config, gpu, mib, run, vramlab_json};

/// Relative difference of two byte counts.
fn off(a: u64, b: u64) -> f64 {
    (a as f64 - b as f64).abs() / b.max(1) as f64
}

#[test]
fn a_plan_reproduces_a_real_runs_high_water_marks() {
    let (_lock, gpu) = gpu();
    // The whole test split (449 digits) as one evaluation batch, as the plan evaluates.
    let sets = ["batch_size=256", "eval_batch_size=449", "eval_every=0"];
    let planner = vramlab::engine::device::planner().expect("the planning device");
    let planned: Plan =
        pollster::block_on(plan::plan(&config("digits-cnn", &sets), &planner, |_| {}))
            .expect("the plan completes");
    let mut real = config("digits-cnn", &sets);
    real.steps = plan::PLAN_STEPS;
    let measured = run(&gpu, real).summary;
    println!(
        "digits-cnn b256: high-water in use planned {} B, measured {} B; reserved {} vs {} B",
        planned.high_water_in_use_bytes,
        measured.high_water_in_use_bytes,
        planned.high_water_reserved_bytes,
        measured.high_water_reserved_bytes
    );
    assert!(
        off(
            planned.high_water_in_use_bytes,
            measured.high_water_in_use_bytes
        ) < 0.01
    );
    for phase in [
        Phase::Forward,
        Phase::Backward,
        Phase::Optimizer,
        Phase::Eval,
    ] {
        let (p, m) = (
            planned.high_water_in_use_by_phase[&phase],
            measured.high_water_in_use_by_phase[&phase],
        );
        println!("  {}: planned {p} B, measured {m} B", phase.name());
        assert!(off(p, m) < 0.01, "{}: {p} vs {m}", phase.name());
    }
    // Pages are carved in the same sizes; a run may keep a page more or less cached.
    assert!(
        off(
            planned.high_water_reserved_bytes,
            measured.high_water_reserved_bytes
        ) < 0.15
    );
    // The dry run left nothing behind: the next real run starts from the baseline.
    run(&gpu, config("spiral-mlp", &["steps=2", "eval_every=0"]));
}

/// `vramlab plan --json`, parsed.
fn plan_cli(args: &[&str]) -> Plan {
    let mut all = vec!["plan", "--json"];
    all.extend(args);
    vramlab_json(&all)
}

#[test]
fn a_model_bigger_than_the_device_plans_in_seconds() {
    // big-mlp: 0.25 billion parameters in 4096-wide layers, each weight under this adapter's
    // largest binding, the whole far over its largest buffer.
    let planned = plan_cli(&["--preset", "big-mlp"]);
    let params = planned.params;
    println!(
        "big-mlp: {params} parameters, high-water {:.0} MiB in use, {:.0} MiB reserved, \
         estimate {:.0} MiB, {:.1} s",
        mib(planned.high_water_in_use_bytes),
        mib(planned.high_water_reserved_bytes),
        mib(planned.predicted_peak_bytes),
        planned.seconds
    );
    assert!(planned.oversized.is_empty(), "{:?}", planned.oversized);
    let (_lock, gpu) = gpu();
    assert!(planned.high_water_in_use_bytes > gpu.adapter.max_buffer_size);
    // Weights, gradients and Adam's two moments are all alive during the optimizer's step.
    assert!(planned.high_water_in_use_by_phase[&Phase::Optimizer] >= 4 * 4 * params);
}

#[test]
fn a_plans_suggestions_are_planned_too() {
    let planned = plan_cli(&["--preset", "wide-cnn", "--budget", "480MiB"]);
    assert_eq!(planned.fits, Some(false));
    let oom = planned.out_of_memory.as_ref().expect("where it ran out");
    println!("wide-cnn under 480 MiB: {}", oom.headline());
    let budget = planned.budget_bytes.unwrap();
    let mut fitting = 0;
    for checked in &planned.suggestions {
        println!(
            "  {}={}: {:?}",
            checked.suggestion.field,
            checked.suggestion.value,
            checked.checked.fits()
        );
        if let Checked::Fits {
            high_water_in_use_bytes,
            high_water_reserved_bytes,
        } = checked.checked
        {
            assert!(high_water_in_use_bytes <= budget && high_water_reserved_bytes <= budget);
            fitting += 1;
        }
    }
    assert!(fitting > 0, "no suggestion was planned to fit");
}

#[test]
fn gpt2_small_plans_whole_on_the_planning_device() {
    let planned = plan_cli(&["--preset", "gpt2-small"]);
    println!(
        "gpt2-small: {} parameters, high-water {:.2} GiB in use, {:.2} GiB reserved, estimate \
         {:.2} GiB, {:.1} s",
        planned.params,
        mib(planned.high_water_in_use_bytes) / 1024.0,
        mib(planned.high_water_reserved_bytes) / 1024.0,
        mib(planned.predicted_peak_bytes) / 1024.0,
        planned.seconds
    );
    // GPT-2 small's 124,439,808, with the classifier untied (768 x 50,257 + 50,257), one more
    // embedding row (the sort task's query token) and no final layer norm (burn's encoder has
    // none: 1,536).
    assert_eq!(
        planned.params,
        124_439_808 + 768 * 50_257 + 50_257 + 768 - 1_536
    );
    // The logits (1.5 GiB at batch 8) are over lavapipe's 128 MiB binding, not the planner's.
    let logits = 8 * 1024 * 50_257 * 4;
    assert!(planned.adapter.max_binding_size > logits);
    assert!(planned.oversized.is_empty(), "{:?}", planned.oversized);
    // Weights, gradients, Adam's moments and the logits are alive at once in the backward pass.
    assert!(planned.high_water_in_use_by_phase[&Phase::Backward] > 4 * 4 * planned.params + logits);
}
