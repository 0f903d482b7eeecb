//! The page's link step: a larger shadow stack for the wasm module.
//!
//! wasm-ld gives a module 1 MiB of stack by default. A plan that runs out of its budget unwinds
//! out of a step in the middle of burn's fusion streams, and the polls of the plan's nested
//! futures (plan, follow, step, forward, a block) with the error on its way out took more than
//! that: Chromium reported "memory access out of bounds" in burn-fusion's `to_relative` (the
//! stack had grown over the data below it). Natively the thread has 8 MiB.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg-cdylib=-zstack-size=8388608");
    }
}
