//! The max-batch finder, checked from outside: its answer fits a training run under the same
//! budget and one step more does not; it needs few trials; the comparison lists every method.

use crate::suite::support::{vramlab, vramlab_json};

use serde_json::Value;

fn find(preset: &str, budget: &str, sets: &[&str]) -> Value {
    let mut args = vec![
        "find-batch",
        "--preset",
        preset,
        "--budget",
        budget,
        "--json",
    ];
    for set in sets {
        args.extend(["--set", set]);
    }
    vramlab_json(&args)
}

/// A training run as the finder's trials run it: two steps, the evaluation at the end.
fn train_at(preset: &str, batch: u64, budget: &str, sets: &[&str]) -> Option<i32> {
    let batch = format!("batch_size={batch}");
    let mut args = vec![
        "train",
        "--preset",
        preset,
        "--steps",
        "2",
        "--set",
        "eval_every=0",
        "--set",
        &batch,
        "--budget",
        budget,
    ];
    for set in sets {
        args.extend(["--set", set]);
    }
    vramlab(&args).status.code()
}

/// The finder's answer for `preset` under `budget`: found in few trials, it trains under the
/// budget, and one more sample does not.
fn largest_batch_fits_and_the_next_does_not(preset: &str, budget: &str, sets: &[&str]) {
    let found = find(preset, budget, sets);
    let max = found["max_batch"].as_u64().expect("a batch fits");
    let trials = found["trials"].as_u64().unwrap();
    let bound = (max as f64).log2().ceil() as u64 + 2;
    let log: Vec<String> = found["trials_log"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            format!(
                "{}{}",
                t["batch"],
                if t["fits"] == true { "+" } else { "-" }
            )
        })
        .collect();
    println!(
        "{preset} under {budget}: max batch {max}, predicted {}, {trials} trials (bound {bound}), {} OOMs, {:.1} s: {}",
        found["predicted_batch"],
        found["ooms"],
        found["seconds"].as_f64().unwrap(),
        log.join(" ")
    );
    assert!(trials <= bound, "{preset}: {trials} trials, bound {bound}");
    assert_eq!(
        train_at(preset, max, budget, sets),
        Some(0),
        "{preset}: batch {max} must fit"
    );
    assert_eq!(
        train_at(preset, max + 1, budget, sets),
        Some(3),
        "{preset}: batch {} must not",
        max + 1
    );
}

// Small evaluation batches and a narrowed transformer keep each trial to a few seconds; the
// MLP's search is covered in-process below.

#[test]
fn the_largest_batch_fits_the_next_does_not_and_few_trials_find_it() {
    largest_batch_fits_and_the_next_does_not(
        "sort-transformer",
        "12MiB",
        &["model.width=32", "eval_batch_size=64"],
    );
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn the_largest_batch_of_a_convolution_fits_and_the_next_does_not() {
    largest_batch_fits_and_the_next_does_not("digits-cnn", "16MiB", &["eval_batch_size=64"]);
}

#[test]
fn the_comparison_lists_all_five_methods() {
    // Two trials a method keep it short (each trial is a process); the table says when a
    // search stopped at the limit.
    let out = vramlab(&[
        "find-batch",
        "--preset",
        "circle-tiny",
        "--budget",
        "9MiB",
        "--compare",
        "--max-trials",
        "2",
    ]);
    let table = String::from_utf8_lossy(&out.stdout);
    println!("{table}");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for method in [
        "seed-linear",
        "accelerate",
        "lightning-power",
        "lightning-binsearch",
        "vramlab",
    ] {
        assert!(
            table.lines().any(|l| l.starts_with(method)),
            "{method} missing:\n{table}"
        );
    }
}

#[test]
fn bad_finder_input_is_refused_naming_the_flag() {
    let out = vramlab(&["find-batch", "--preset", "spiral-mlp", "--budget", "64KiB"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--budget") && stderr.contains("parameters"),
        "{stderr}"
    );
    let out = vramlab(&[
        "find-batch",
        "--preset",
        "spiral-mlp",
        "--budget",
        "8MiB",
        "--multiple-of",
        "0",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--multiple-of"), "{stderr}");
    let out = vramlab(&["find-batch", "--preset", "spiral-mlp"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--budget"), "{stderr}");
}

#[test]
fn trials_in_one_process_survive_their_out_of_memory_and_leave_the_device_at_baseline() {
    use vramlab::engine::Purpose;
    use vramlab::engine::finder::{self, Method, Question};
    use vramlab::engine::train::InProcess;

    use crate::suite::support::{config, gpu, run};

    let (_lock, gpu) = gpu();
    let config = config("spiral-mlp", &[]);
    let question = Question {
        config: &config,
        axis: finder::Axis::Batch,
        budget_bytes: 16 << 20,
        multiple_of: 8,
        max_trials: None,
        purpose: Purpose::Run,
        bound: None,
    };
    let mut seen = Vec::new();
    let found = pollster::block_on(finder::find(
        &question,
        Method::Vramlab,
        &mut InProcess { gpu: &gpu },
        &mut |trial| seen.push((trial.batch, trial.fits)),
    ))
    .expect("the search completes");
    println!("in process: {seen:?} -> {:?}", found.max_batch);
    let max = found.max_batch.expect("a batch fits");
    assert!(
        found.ooms > 0,
        "the search must have met out-of-memory trials"
    );
    assert_eq!(max % 8, 0);
    assert_eq!(seen.len(), found.trials);
    assert!(seen.iter().any(|&(b, fits)| b == max && fits));
    // The next multiple of 8 was tried and did not fit, unless the answer is the training
    // split's size (no larger batch exists).
    let split = vramlab::engine::data::split_sizes(&config.data).0 / 8 * 8;
    assert!(seen.iter().any(|&(b, fits)| b == max + 8 && !fits) || max == split);
    // run() asserts the baseline: nothing of the trials, failed or not, is left in use.
    let after = run(
        &gpu,
        crate::suite::support::config("spiral-mlp", &["steps=2"]),
    );
    assert_eq!(after.summary.baseline_in_use_bytes, 0);
}

#[test]
fn planned_trials_find_what_real_trials_find() {
    let both: Value = vramlab_json(&[
        "find-batch",
        "--preset",
        "digits-cnn",
        "--budget",
        "16MiB",
        "--set",
        "eval_batch_size=64",
        "--plan",
        "--compare",
        "--json",
    ]);
    let (plans, runs) = (&both["plans"], &both["runs"]);
    println!(
        "digits-cnn under 16 MiB: plans found {} in {:.1} s, runs {} in {:.1} s",
        plans["max_batch"], plans["seconds"], runs["max_batch"], runs["seconds"]
    );
    assert_eq!(plans["max_batch"], runs["max_batch"]);
}

#[test]
fn the_longest_sequence_planned_fits_and_the_next_does_not() {
    // The search over data.seq_len at the preset's batch, each trial a plan; its answer planned
    // as the trials plan it (two steps, the evaluation at the end) fits, one token more does not.
    let found: Value = vramlab_json(&[
        "find-batch",
        "--plan",
        "--longest-sequence",
        "--preset",
        "sort-llama",
        "--set",
        "batch_size=32",
        "--budget",
        "48MiB",
        "--json",
    ]);
    assert_eq!(found["axis"], "seq-len", "{found}");
    assert!(found["max_batch"].is_null(), "{found}");
    let longest = found["max_seq_len"].as_u64().expect("a sequence fits");
    let log = found["trials_log"].as_array().unwrap();
    let tried: Vec<String> = log
        .iter()
        .map(|t| {
            format!(
                "{}{}",
                t["seq_len"],
                if t["fits"] == true { "+" } else { "-" }
            )
        })
        .collect();
    println!(
        "sort-llama at batch 32 under 48 MiB: longest sequence {longest} in {} trials: {}",
        found["trials"],
        tried.join(" ")
    );
    assert!(
        log.iter()
            .any(|t| t["seq_len"] == longest && t["fits"] == true)
    );
    assert!(
        log.iter()
            .filter(|t| t["seq_len"].as_u64().unwrap() > longest)
            .all(|t| t["fits"] == false)
    );
    let planned = |seq_len: u64| {
        let seq_len = format!("data.seq_len={seq_len}");
        vramlab(&[
            "train",
            "--dry-run",
            "--preset",
            "sort-llama",
            "--steps",
            "2",
            "--set",
            "batch_size=32",
            "--set",
            "eval_every=0",
            "--set",
            &seq_len,
            "--budget",
            "48MiB",
        ])
        .status
        .code()
    };
    assert_eq!(planned(longest), Some(0), "{longest} tokens must fit");
    assert_eq!(
        planned(longest + 1),
        Some(3),
        "{} tokens must not",
        longest + 1
    );

    // Samples without a sequence are refused naming the field.
    let out = vramlab(&[
        "find-batch",
        "--plan",
        "--longest-sequence",
        "--preset",
        "spiral-mlp",
        "--budget",
        "8MiB",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("data.kind"), "{stderr}");
}
