//! The high-water mark: the most the allocator held, read at every kernel launch, sees what
//! lives only between two phase-end readings, and the budget is held to it.

use serde_json::Value;

use super::support::{config, gpu, mib, run, vramlab, vramlab_json};

#[test]
fn the_high_water_mark_sees_the_backward_peak_that_phase_end_readings_miss() {
    let (_lock, gpu) = gpu();
    let t = run(
        &gpu,
        config(
            "spiral-mlp",
            &["steps=2", "eval_every=0", "batch_size=2048"],
        ),
    );
    let s = &t.summary;
    let backward = |step: usize| {
        let step = &t.steps[step];
        (
            step.phases[&vramlab::engine::phase::Phase::Backward].in_use_bytes,
            step.phase_high_water[&vramlab::engine::phase::Phase::Backward].in_use_bytes,
        )
    };
    let (reading, mark) = backward(1);
    println!(
        "spiral-mlp b2048: largest reading {:.2} MiB, high-water {:.2} MiB ({}); backward: reading {:.2} MiB, high-water {:.2} MiB",
        mib(s.peak_in_use_bytes),
        mib(s.high_water_in_use_bytes),
        s.high_water_is,
        mib(reading),
        mib(mark)
    );
    // Backward computes the gradients while the forward pass's activations are still alive;
    // by the end of backward they are gone, and so is what a phase-end reading could see.
    assert!(
        mark > reading + (4 << 20),
        "backward {mark} vs reading {reading}"
    );
    assert!(s.high_water_in_use_bytes > s.peak_in_use_bytes + (1 << 20));
    for step in &t.steps {
        let largest = step.phases.values().map(|r| r.in_use_bytes).max().unwrap();
        assert!(
            step.high_water.in_use_bytes >= largest,
            "step {}",
            step.step
        );
        assert!(step.high_water.reserved_bytes >= step.high_water.in_use_bytes);
    }
}

#[test]
fn a_budget_the_phase_readings_fit_but_the_high_water_does_not_stops_the_step() {
    // Exclusive pages (a new process may pick its pools): what the pool keeps is close to what
    // is live, so the budget binds on bytes in use.
    let args = [
        "train",
        "--preset",
        "spiral-mlp",
        "--steps",
        "2",
        "--set",
        "batch_size=2048",
        "--set",
        "eval_batch_size=256",
        "--set",
        "strategies.memory_pool=exclusive",
        "--json",
    ];
    let unbudgeted = vramlab_json::<Value>(&args);
    let reading = unbudgeted["peak_in_use_bytes"].as_u64().unwrap();
    let mark = unbudgeted["high_water_in_use_bytes"].as_u64().unwrap();
    let budget = (reading + mark) / 2;
    let mut budgeted = args.to_vec();
    let budget_text = budget.to_string();
    budgeted.extend(["--budget", &budget_text]);
    let out = vramlab(&budgeted);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!(
        "largest phase reading {:.3} MiB, high-water {:.3} MiB, budget {:.3} MiB:\n{stderr}",
        mib(reading),
        mib(mark),
        mib(budget)
    );
    assert!(reading < budget && budget < mark);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("the out-of-memory as JSON");
    let oom = &report["out_of_memory"];
    assert_eq!(oom["phase"], "backward", "{oom}");
    assert!(
        oom["kernel"].is_string(),
        "the kernel at the peak is named: {oom}"
    );
    assert!(stderr.contains("in use peaking at kernel"), "{stderr}");
}
