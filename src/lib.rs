//! vramlab: train real models on a GPU through burn's wgpu backend and measure, with the
//! allocator's own figures, what each memory-saving trick does.
//!
//! The [`engine`] is the whole library; the `vramlab` binary and the web page (`www/`) are thin
//! fronts over it.

pub mod engine;
