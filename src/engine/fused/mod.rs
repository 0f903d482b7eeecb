//! `strategies.kernels = fused`: an MLP's whole training step in vramlab's own WGSL kernels
//! (shaders/fused_mlp), on the same device and memory pool as burn.

mod kernels;
mod mlp;

pub use mlp::{ForwardPass, FusedMlp};
