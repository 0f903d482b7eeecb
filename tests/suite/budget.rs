//! The memory budget: a run that needs more stops with a typed out-of-memory error naming
//! where, and the device is left as a fresh process would find it.

use vramlab::engine::config::Budget;
use vramlab::engine::outcome::Site;
use vramlab::engine::phase::Phase;
use vramlab::engine::{self, EngineError, Run};

use crate::suite::support::{config, gpu, mib, run};

fn budgeted(name: &str, sets: &[&str], budget: &str) -> vramlab::engine::RunConfig {
    let mut config = config(name, sets);
    config.budget = Some(Budget::parse(budget).unwrap());
    config
}

#[test]
fn an_over_budget_run_stops_with_where_and_how_much_and_the_next_run_starts_from_baseline() {
    let (_lock, gpu) = gpu();
    let sets = ["steps=3"];
    let fits = run(&gpu, config("spiral-mlp", &sets));
    let peak = fits.summary.peak_in_use_bytes;
    let tight = budgeted("spiral-mlp", &sets, &format!("{}", peak / 2));
    let err = match pollster::block_on(engine::train(tight, &gpu, |_| {})) {
        Err(EngineError::OutOfMemory(oom)) => oom,
        other => panic!(
            "expected out of memory, got {:?}",
            other.map(|t| t.summary.name)
        ),
    };
    println!("{err}");
    assert_eq!(err.step, Some(1), "the first step already needs more");
    assert!(
        [
            Phase::Upload,
            Phase::Forward,
            Phase::Backward,
            Phase::Optimizer
        ]
        .contains(&err.phase),
        "{err}"
    );
    assert_eq!(err.budget_bytes, peak / 2);
    let needed = (err.in_use_bytes + err.asked_bytes).max(err.reserved_bytes);
    assert!(needed > err.budget_bytes, "{err}");
    assert!(!err.suggestions.is_empty(), "{err}");

    // Same device, next run: nothing of the failed run is left, and it measures as before.
    let again = run(&gpu, config("spiral-mlp", &sets));
    assert_eq!(again.summary.baseline_in_use_bytes, 0);
    assert_eq!(again.summary.peak_in_use_bytes, peak);
}

#[test]
fn a_run_within_its_budget_trains_and_never_passes_it() {
    let (_lock, gpu) = gpu();
    let sets = ["steps=4"];
    let unbudgeted = run(&gpu, config("digits-cnn", &sets));
    let budget = unbudgeted.summary.peak_reserved_bytes * 2;
    let timeline = run(&gpu, budgeted("digits-cnn", &sets, &budget.to_string()));
    println!(
        "digits-cnn: peak in use {:.3} MiB, reserved {:.3} MiB, budget {:.3} MiB",
        mib(timeline.summary.peak_in_use_bytes),
        mib(timeline.summary.peak_reserved_bytes),
        mib(budget)
    );
    assert_eq!(timeline.steps.len(), 4);
    assert!(timeline.summary.peak_reserved_bytes <= budget);
    assert!(timeline.summary.high_water_in_use_bytes <= budget);
    // The checks sync the device more often, which can move fusion's boundaries by a few
    // bytes, never more.
    let (with, without) = (
        timeline.summary.peak_in_use_bytes as f64,
        unbudgeted.summary.peak_in_use_bytes as f64,
    );
    assert!(
        (with - without).abs() / without < 1e-3,
        "checking the budget changed the peak: {with} vs {without}"
    );
}

#[test]
fn a_budget_below_the_parameters_fails_while_setting_up() {
    let (_lock, gpu) = gpu();
    let config = budgeted("spiral-mlp", &["steps=2"], "64KiB");
    let err = match Run::new(config, &gpu) {
        Err(EngineError::OutOfMemory(oom)) => oom,
        Err(other) => panic!("expected out of memory, got {other}"),
        Ok(_) => panic!("a 64 KiB budget cannot hold 0.26 MiB of parameters"),
    };
    println!("{err}");
    assert_eq!(err.step, None);
    assert_eq!(err.phase, Phase::Setup);
    assert_eq!(err.site, Site::ModelParameters);
}
