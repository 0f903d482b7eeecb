//! The binary as a user runs it: exit codes, messages, files, and the summary's contract.

use crate::suite::support::vramlab;

#[test]
fn presets_lists_one_line_each() {
    let out = vramlab(&["presets"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    use vramlab::engine::presets::{for_plans, playground};
    // One line each, the plan presets under a heading after a blank line.
    assert_eq!(
        text.lines().filter(|l| !l.is_empty()).count(),
        playground().count() + 1 + for_plans().count()
    );
    for preset in playground().chain(for_plans()) {
        assert!(
            text.lines().any(|l| l.starts_with(preset.name)),
            "{}",
            preset.name
        );
    }
}

#[test]
fn bad_config_exits_2_naming_the_field() {
    let out = vramlab(&["train", "--set", "batch_size=0"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("batch_size: 0 is out of range 1..=65536"),
        "{err}"
    );

    let out = vramlab(&["train", "--preset", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("spiral-mlp")
    );

    let out = vramlab(&["train", "--set", "model.depth=2"]);
    assert_eq!(out.status.code(), Some(2));

    let out = vramlab(&["train", "--config", "/nonexistent/run.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr).unwrap().contains("--config"));

    let out = vramlab(&["train", "--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));

    // A claims filter that keeps nothing is refused before anything runs.
    let out = vramlab(&[
        "claims",
        "--only",
        "batch_size",
        "--claim",
        "no such folklore",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("--claim: no claim about those fields contains no such folklore"),
        "{err}"
    );
}

#[test]
fn live_refuses_a_missing_page_and_a_taken_port_naming_the_flag() {
    let out = vramlab(&[
        "train",
        "--steps",
        "1",
        "--live",
        "--page",
        "/nonexistent/dist",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("--page: /nonexistent/dist: no built page there (index.html is missing)"),
        "{err}"
    );

    let page = std::env::temp_dir().join(format!("vramlab-live-page-{}", std::process::id()));
    std::fs::create_dir_all(&page).unwrap();
    std::fs::write(page.join("index.html"), "<!doctype html>").unwrap();
    let taken = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let page_arg = page.to_str().unwrap();
    let out = vramlab(&[
        "train", "--steps", "1", "--live", "--port", &port, "--page", page_arg,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(&format!("--port: could not listen on 127.0.0.1:{port}")),
        "{err}"
    );
    std::fs::remove_dir_all(&page).unwrap();

    // A plan has no run to watch; a port without --live is a mistake.
    let out = vramlab(&["train", "--dry-run", "--live"]);
    assert_eq!(out.status.code(), Some(2));
    let out = vramlab(&["train", "--port", "9000"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn train_writes_the_timeline_files_and_a_json_summary() {
    let out_dir = std::env::temp_dir().join(format!("vramlab-cli-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out_dir);
    // As a user runs it outside the scripts, with no XDG_RUNTIME_DIR: Mesa's Wayland probe
    // printed "XDG_RUNTIME_DIR is invalid or not set" twice a device before the binary set one.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vramlab"))
        .args([
            "train",
            "--preset",
            "circle-tiny",
            "--steps",
            "12",
            "--set",
            "eval_every=5",
            "--json",
            "--out",
            out_dir.to_str().unwrap(),
        ])
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("XDG_RUNTIME_DIR"),
        "a plain run warns about XDG_RUNTIME_DIR: {stderr}"
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    for key in [
        "adapter",
        "params",
        "first_loss",
        "final_loss",
        "eval_accuracy",
        "peak_in_use_bytes",
        "peak_reserved_bytes",
        "peak_in_use_by_phase",
        "predicted_peak_bytes",
        "predicted",
        "median_step_ms",
        "first_step_ms",
        "steps",
        "strategies",
        "fallbacks",
    ] {
        assert!(summary.get(key).is_some(), "summary lacks {key}: {summary}");
    }
    for key in ["name", "backend", "shader_f16"] {
        assert!(summary["adapter"].get(key).is_some(), "adapter lacks {key}");
    }
    for key in ["upload", "forward", "backward", "optimizer", "eval"] {
        assert!(
            summary["peak_in_use_by_phase"][key].as_u64().unwrap() > 0,
            "phase {key}"
        );
    }
    for key in ["params", "grads", "optimizer_state", "activations"] {
        assert!(
            summary["predicted"].get(key).is_some(),
            "predicted lacks {key}"
        );
    }
    assert_eq!(summary["steps"], 12);

    let timeline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("timeline.json")).unwrap())
            .unwrap();
    assert_eq!(timeline["summary"], summary);
    let steps = timeline["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 12);
    let phase = &steps[3]["phases"]["forward"];
    for key in ["in_use_bytes", "reserved_bytes", "padding_bytes", "allocs"] {
        assert!(phase.get(key).is_some(), "phase reading lacks {key}");
    }
    assert!(steps[4]["phases"].get("eval").is_some(), "step 5 evaluated");
    let step_peak = steps[3]["peak_in_use_bytes"].as_u64().unwrap();
    let phase_max = steps[3]["phases"]
        .as_object()
        .unwrap()
        .values()
        .map(|r| r["in_use_bytes"].as_u64().unwrap())
        .max()
        .unwrap();
    assert_eq!(step_peak, phase_max, "a step's peak is its largest reading");
    let csv = std::fs::read_to_string(out_dir.join("timeline.csv")).unwrap();
    assert_eq!(csv.lines().count(), 13);
    assert!(csv.starts_with("step,loss,ms,upload_in_use_bytes"));
    let svg = std::fs::read_to_string(out_dir.join("memory.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("predicted peak"));
    std::fs::remove_dir_all(&out_dir).unwrap();
}

/// The pools are fixed when the device starts, so each choice is its own process.
#[test]
fn the_memory_pool_changes_reserved_memory_not_bytes_in_use() {
    let summary = |pool: &str| -> serde_json::Value {
        let set = format!("strategies.memory_pool={pool}");
        let out = vramlab(&[
            "train",
            "--preset",
            "digits-mlp",
            "--steps",
            "4",
            "--set",
            "eval_every=0",
            "--set",
            "batch_size=1024",
            "--set",
            &set,
            "--json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("one JSON summary")
    };
    let (sub, exclusive) = (summary("subslices"), summary("exclusive"));
    let field = |v: &serde_json::Value, k: &str| v[k].as_f64().unwrap();
    for (name, v) in [("subslices", &sub), ("exclusive", &exclusive)] {
        println!(
            "memory_pool {name}: peak in use {:.2} MiB, peak reserved {:.2} MiB, padding {:.0} B, unused reserved {:.2}",
            field(v, "peak_in_use_bytes") / 1048576.0,
            field(v, "peak_reserved_bytes") / 1048576.0,
            field(v, "peak_padding_bytes"),
            field(v, "unused_reserved_fraction")
        );
        assert!(v["fallbacks"].as_array().unwrap().is_empty(), "{v}");
    }
    let in_use = field(&sub, "peak_in_use_bytes") / field(&exclusive, "peak_in_use_bytes");
    assert!(
        (0.98..=1.02).contains(&in_use),
        "in use should not depend on the pools: {in_use}"
    );
    assert_ne!(
        field(&sub, "peak_reserved_bytes"),
        field(&exclusive, "peak_reserved_bytes"),
        "the pools should reserve differently"
    );
}

#[test]
fn out_of_memory_exits_3_naming_the_phase_the_kernel_and_what_would_fit() {
    // Exclusive pages (a new process may pick its pools): what the pool keeps is close to what
    // is live, so a 2 MiB budget binds on the live bytes, which pass it inside the forward pass
    // (2.8 MiB at its high-water mark at batch 512).
    let args = [
        "train",
        "--preset",
        "spiral-mlp",
        "--steps",
        "3",
        "--set",
        "strategies.memory_pool=exclusive",
        "--set",
        "eval_batch_size=256",
        "--budget",
        "2MiB",
    ];
    let out = vramlab(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(
            "out of memory at step 1, forward (logits and loss, in use peaking at kernel"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("budget 2.000 MiB"), "{stderr}");
    assert!(
        stderr.contains("what would fit") && stderr.contains("--set "),
        "{stderr}"
    );

    // The changes it offers are estimates; at least one, taken, must make the same budget fit.
    let offered: Vec<String> = stderr
        .lines()
        .filter_map(|line| line.trim().strip_prefix("--set "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert!(!offered.is_empty(), "{stderr}");
    let fitting = offered.iter().find(|change| {
        let mut fitted = args.to_vec();
        fitted.extend(["--set", change.as_str()]);
        vramlab(&fitted).status.success()
    });
    println!("offered {offered:?}; fits under 2 MiB: {fitting:?}");
    assert!(fitting.is_some(), "none of {offered:?} fits under 2 MiB");
}

#[test]
fn a_tensor_larger_than_the_adapter_binds_is_refused_before_the_run() {
    // The evaluation batch's logits, 512 x 16 positions x 50,000 classes: 1.6 GB in one
    // buffer, over lavapipe's 128 MiB binding limit; the run would otherwise fail mid-step.
    let logits = 512 * 16 * 50_000 * 4;
    let binds = crate::suite::support::gpu().1.adapter.max_binding_size;
    if binds >= logits {
        println!("skipped: this adapter binds {binds} bytes, the logits fit");
        return;
    }
    let out = vramlab(&[
        "train",
        "--preset",
        "sort-transformer",
        "--set",
        "data.vocab=50000",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    println!("{err}");
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("eval_batch_size") && err.contains("logits"),
        "{err}"
    );
}

/// `claims --as-page` trains every run on one device in the `vramlab` process, as the page does
/// on its one device: the runs after the budget claim's (one stopped out of memory) must measure
/// what they measure in a process of their own, every in-use figure to the byte.
#[test]
fn claims_as_the_page_judges_them_measure_a_run_after_a_stop_as_alone() {
    let report = |only: &[&str]| -> serde_json::Value {
        let mut args = vec!["claims", "--as-page", "--json"];
        for field in only {
            args.extend(["--only", field]);
        }
        let out = vramlab(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("the report as JSON")
    };
    let after_stop = report(&["budget", "model.hidden"]);
    let alone = report(&["model.hidden"]);
    assert_eq!(after_stop["bench"]["device_per_run"], false);
    let rows = after_stop["rows"].as_array().unwrap();
    assert_eq!(rows[0]["field"], "budget");
    assert_eq!(rows[0]["verdict"], "holds", "{}", rows[0]["reason"]);
    let (smaller, alone) = (&rows[1], &alone["rows"][0]);
    assert_eq!(smaller["field"], "model.hidden");
    for figure in ["off", "on", "high_water_in_use_off", "high_water_in_use_on"] {
        assert_eq!(smaller[figure], alone[figure], "{figure}");
    }
}

/// `bench-gpu --smoke`, as CI runs it on lavapipe: the matmul limit in each type the adapter
/// has, then each model's timed steps, their rates following from the median step and the
/// model FLOPs counted from the shapes (`engine::flops`).
#[test]
fn bench_gpu_smoke_times_the_matmul_limit_and_each_model() {
    let report: serde_json::Value =
        crate::suite::support::vramlab_json(&["bench-gpu", "--smoke", "--json", "--steps", "3"]);
    assert_eq!(report["settings"], "smoke");
    // The default build writes WGSL; a `--features spirv` build on Vulkan compiles SPIR-V.
    let compiler = if cfg!(feature = "spirv") && report["backend"] == "vulkan" {
        "wgpu<spirv>"
    } else {
        "wgpu<wgsl>"
    };
    assert_eq!(report["compiler"], compiler, "{report}");
    let limit = report["limit_f32"].as_f64().unwrap();
    assert!(limit > 0.0, "{report}");
    let products = report["matmul"].as_array().unwrap();
    assert!(products.iter().any(|row| row["dtype"] == "f32"));
    let models = report["models"].as_array().unwrap();
    let names: Vec<&str> = models.iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["gpt2-small", "tinyllama-1.1b", "sort-mixtral"]);
    for model in models {
        assert!(model.get("error").is_none(), "{model}");
        assert_eq!(
            model["steps_timed"], 1,
            "three steps, the first two untimed: {model}"
        );
        let seconds = model["median_step_ms"].as_f64().unwrap() / 1e3;
        let tokens = model["tokens_per_step"].as_f64().unwrap();
        let flops = model["model_flops_per_step"].as_f64().unwrap();
        assert!(
            seconds > 0.0 && tokens > 0.0 && flops > 6.0 * tokens,
            "{model}"
        );
        let rate = |field: &str| model[field].as_f64().unwrap();
        assert!((rate("tokens_per_s") - tokens / seconds).abs() < 1e-6 * rate("tokens_per_s"));
        assert!((rate("achieved_flops_per_s") - flops / seconds).abs() < 1e-6 * flops / seconds);
        assert!(
            (rate("share_of_limit") - flops / seconds / limit).abs() < 1e-9,
            "{model}"
        );
    }
}
