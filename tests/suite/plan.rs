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
    let planned: Plan = pollster::block_on(plan::plan(&config("digits-cnn", &sets), &gpu, |_| {}))
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
    assert!(planned.high_water_in_use_bytes > planned.adapter.max_buffer_size);
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
fn tensors_over_the_adapters_binding_limit_mark_a_plan_incomplete() {
    let gpt2 = vramlab::engine::presets::preset("gpt2-small").unwrap();
    let largest = vramlab::engine::memory::largest::largest_tensors(&gpt2);
    let logits = largest.iter().find(|t| t.tensor == "logits").unwrap();
    assert_eq!(logits.bytes, 8 * 1024 * 50257 * 4);
    assert_eq!(largest[0], *logits);
}
