//! The configuration in the URL hash: read and written by `vramlab::engine::link::hash` (plain
//! text, parsed and fuzzed natively); here only the browser's side of it.

pub use vramlab::engine::link::hash::{parse, render};

pub fn current_hash() -> String {
    web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .unwrap_or_default()
}

/// Replace the hash without adding a history entry per keystroke.
pub fn store(hash: &str) {
    if let Some(window) = web_sys::window()
        && let Ok(history) = window.history()
    {
        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(hash));
    }
}
