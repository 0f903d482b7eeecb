//! The playground page: Leptos (client-side rendering) over the same engine the CLI drives,
//! training on the browser's WebGPU adapter.

mod app;
mod charts;
mod config_panel;
mod session;
mod url_state;

/// Runs when the module is instantiated. The page is a library (a "reactor" module): a
/// wasm32 binary is a "command", whose every export re-runs the static constructors (cubecl's
/// `inventory` registrations), which made each step take seconds.
#[wasm_bindgen::prelude::wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
}
