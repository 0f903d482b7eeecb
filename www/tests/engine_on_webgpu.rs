//! The engine in the browser, on WebGPU (headless Chromium, SwiftShader here): it trains, the
//! allocator's records are non-zero and grow with the batch, and an adapter without shader-f16
//! runs f16 in f32 and says so. Run by `.ci/wasm-tests` (wasm-bindgen-test-runner with
//! chromedriver; `webdriver.json` beside Cargo.toml passes `--enable-unsafe-webgpu`).

#![cfg(target_arch = "wasm32")]

use vramlab::engine::config::MixedPrecision;
use vramlab::engine::overrides::apply_overrides;
use vramlab::engine::presets::preset;
use vramlab::engine::{Gpu, RunConfig, Timeline, acquire, train};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

unsafe extern "C" {
    fn __wasm_call_ctors();
}

fn config(sets: &[&str]) -> RunConfig {
    let base = preset("spiral-mlp").expect("a preset");
    let config = apply_overrides(base, sets.iter().copied()).expect("valid overrides");
    config.validate().expect("a valid config");
    config
}

async fn run(gpu: &Gpu, sets: &[&str]) -> Timeline {
    train(config(sets), gpu, |_| {})
        .await
        .expect("the run completes")
}

#[wasm_bindgen_test]
async fn trains_on_webgpu_with_memory_that_grows_with_the_batch_and_reports_the_f16_fallback() {
    // SAFETY: the linker-made constructors, called once before anything uses what they
    // register; calling them explicitly stops wasm-ld re-running them on every call into the
    // module (see www/src/lib.rs).
    unsafe { __wasm_call_ctors() };
    let gpu = acquire()
        .await
        .expect("WebGPU adapter (--enable-unsafe-webgpu)");
    let small = run(&gpu, &["steps=3", "batch_size=64", "model.hidden=[64,64]"]).await;
    let large = run(&gpu, &["steps=3", "batch_size=512", "model.hidden=[64,64]"]).await;
    for timeline in [&small, &large] {
        assert_eq!(timeline.steps.len(), 3);
        assert!(
            timeline
                .steps
                .iter()
                .all(|s| s.loss.is_some_and(f32::is_finite))
        );
        assert!(
            timeline.summary.peak_in_use_bytes > 0,
            "allocator records are non-zero"
        );
        assert!(timeline.summary.peak_reserved_bytes >= timeline.summary.peak_in_use_bytes);
        // The launch observer works in the browser too: the high-water mark is read at every
        // kernel launch and is never below a reading.
        let summary = &timeline.summary;
        assert!(
            summary.high_water_is.contains("every kernel launch"),
            "{}",
            summary.high_water_is
        );
        assert!(summary.high_water_in_use_bytes >= summary.peak_in_use_bytes);
    }
    let (a, b) = (
        small.summary.peak_in_use_bytes,
        large.summary.peak_in_use_bytes,
    );
    web_sys_log(&format!(
        "adapter {:?}: largest reading in use batch 64 {a} B, batch 512 {b} B; high-water {} B, {} B",
        gpu.adapter.name,
        small.summary.high_water_in_use_bytes,
        large.summary.high_water_in_use_bytes
    ));
    assert!(b > a, "a larger batch needs more memory: {a} vs {b}");

    let f16 = run(&gpu, &["steps=2", "strategies.mixed_precision=f16"]).await;
    if gpu.adapter.shader_f16 {
        assert!(
            f16.summary
                .fallbacks
                .iter()
                .all(|f| !f.to_string().contains("shader-f16"))
        );
    } else {
        assert!(
            f16.summary
                .fallbacks
                .iter()
                .map(ToString::to_string)
                .any(|f| f.starts_with("mixed_precision f16") && f.contains("no shader-f16")),
            "{:?}",
            f16.summary.fallbacks
        );
        assert_eq!(f16.config.strategies.mixed_precision, MixedPrecision::F16);
    }
}

fn web_sys_log(message: &str) {
    wasm_bindgen_test::console_log!("{message}");
}
