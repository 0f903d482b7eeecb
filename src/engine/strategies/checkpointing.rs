//! `strategies.checkpointing`: what backward recomputes instead of keeping.
//!
//! - `balanced`: burn's own policy, an op-level one. Gradient checkpointing is a property of
//!   burn's autodiff device, so this is the choice of device the model trains on: it keeps the
//!   outputs of compute-bound ops (matmuls, convolutions) and recomputes memory-bound ones
//!   (activations, element-wise maths) in backward.
//! - `layers`: per-layer recompute, as PyTorch users checkpoint whole blocks
//!   (`torch.utils.checkpoint` per block, Hugging Face's `gradient_checkpointing_enable()`).
//!   The transformer and llama models run each block as one node of `ops::recompute`, which
//!   keeps the block's input and recomputes the block in backward; the device stays plain.
//!   The other families have no blocks of that kind, so it is refused for them.

use burn::tensor::Device;

use crate::engine::config::{Checkpointing as Mode, RunConfig};
use crate::engine::error::ConfigError;

use super::Strategy;

pub struct Checkpointing(Mode);

impl Checkpointing {
    pub fn new(config: &RunConfig) -> Self {
        Self(config.strategies.checkpointing)
    }
}

impl Strategy for Checkpointing {
    fn training_device(&self, device: Device) -> Device {
        match self.0 {
            Mode::None | Mode::Layers => device,
            Mode::Balanced => device.gradient_checkpointing(),
        }
    }
}

/// `layers` needs a model made of blocks: the transformer and llama families.
pub(crate) fn check(config: &RunConfig) -> Result<(), ConfigError> {
    let kind = config.model.kind;
    if config.strategies.checkpointing == Mode::Layers && !kind.family().attends() {
        return Err(ConfigError::invalid(
            "strategies.checkpointing",
            format!(
                "layers recomputes each transformer block in backward; model.kind = {} has no                  such blocks. Models for it: transformer, llama; for {} use none or balanced",
                kind.name(),
                kind.name()
            ),
        ));
    }
    Ok(())
}
