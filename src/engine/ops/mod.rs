//! Ops vramlab writes itself, each one autodiff node with a handwritten backward, so that what a
//! training step keeps for backward is what the op chose and no more: fused attention and fused
//! cross-entropy (`strategies.attention`, `strategies.cross_entropy`), and the dense layer over
//! a quantized frozen weight (`strategies.weight_dtype` = `q4`, `q8`). Each has the path people
//! run beside it, and the tests hold both to the same outputs and gradients.

pub mod attention;
mod attention_kernel;
mod bridge;
pub mod cross_entropy;
pub mod grouped_matmul;
pub mod host;
mod quantized_buffer;
pub mod quantized_linear;
pub mod recompute;
pub mod shard;
pub mod walk;
