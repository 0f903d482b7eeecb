//! The playground page: Leptos (client-side rendering) over the same engine the CLI drives,
//! training on the browser's WebGPU adapter.

mod app;
mod browser;
mod chart_steps;
mod charts;
mod config_panel;
mod data_preview;
mod editor;
mod finder_panel;
mod format;
mod hover;
mod lessons;
mod memory_charts;
mod native_run;
mod plan_panel;
mod plan_worker;
mod published;
mod recipe_input;
mod results;
mod run_charts;
mod run_controls;
mod session;
mod strategies_panel;
mod table_input;
mod table_preview;
mod tour;
mod url_state;

unsafe extern "C" {
    /// The static constructors wasm-ld collects (cubecl registers its IR with `inventory`).
    fn __wasm_call_ctors();
}

/// Runs once when the module is instantiated. Calling the constructors here, explicitly, is
/// what tells wasm-ld not to wrap every export in a call to them: wrapped, each call into the
/// module re-ran all of cubecl's `inventory` registrations, and a step took seconds (profiled
/// in Chromium: most of a step's time in `__wasm_call_ctors` under `*.command_export`).
#[wasm_bindgen::prelude::wasm_bindgen(start)]
pub fn start() {
    // SAFETY: the linker-made constructor function, called once, before anything uses what
    // it registers.
    unsafe { __wasm_call_ctors() };
    console_error_panic_hook::set_once();
    // A planning worker instantiates this module too (plan_worker.rs): it has no page to mount.
    if web_sys::window().is_some() {
        leptos::mount::mount_to_body(app::App);
    }
}
