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

use crate::engine::config::{Checkpointing as Mode, ModelKind, RunConfig, Trainable};
use crate::engine::error::ConfigError;
use crate::engine::ops::recompute::MOST_PARENTS;

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

/// Matrices in a mixture of experts' block besides its experts': Q, K, V, the attention's
/// output and the router.
const MOE_BLOCK_MATRICES: usize = 5;

/// The autodiff parents a checkpointed block's node takes where they can pass
/// [`MOST_PARENTS`]: under LoRA, a mixture of experts' block tracks two adapter factors for
/// each of its matrices (`MOE_BLOCK_MATRICES` and, run as the loop, three an expert), beside
/// its input. Grouped experts' stacked matrices are three whatever the experts, and every
/// other block tracks at most its own parameter tensors, fewer than 1,600 with
/// `model.experts` at its most. `None` where it cannot pass.
pub fn lora_expert_block_parents(config: &RunConfig) -> Option<usize> {
    let model = &config.model;
    if config.strategies.trainable != Trainable::Lora
        || model.experts == 0
        || config.strategies.grouped_experts()
    {
        return None;
    }
    Some(1 + 2 * (MOE_BLOCK_MATRICES + 3 * model.experts))
}

/// `layers` needs a model made of blocks: the transformer and llama families; and a block whose
/// node takes its tracked tensors.
pub(crate) fn check(config: &RunConfig) -> Result<(), ConfigError> {
    if config.strategies.checkpointing == Mode::Layers
        && let Some(parents) = lora_expert_block_parents(config)
        && parents > MOST_PARENTS
    {
        return Err(ConfigError::invalid(
            "strategies.checkpointing",
            format!(
                "layers makes each block one autodiff node, of at most {MOST_PARENTS} parents; \
                 a block of model.experts = {} under LoRA tracks {parents} tensors (its input \
                 and two adapter factors a matrix). Fewer experts (at most {}), \
                 strategies.experts = grouped (three stacked matrices whatever the experts), or \
                 checkpointing = none or balanced",
                config.model.experts,
                ((MOST_PARENTS - 1) / 2 - MOE_BLOCK_MATRICES) / 3
            ),
        ));
    }
    let kind = config.model.kind;
    if config.strategies.checkpointing == Mode::Layers && !kind.family().attends() {
        return Err(ConfigError::invalid(
            "strategies.checkpointing",
            format!(
                "layers recomputes each transformer block in backward; model.kind = {} has no \
                 such blocks. Models for it: {}; for {} use none or balanced",
                kind.name(),
                ModelKind::names_where(|family| family.attends()),
                kind.name()
            ),
        ));
    }
    Ok(())
}
