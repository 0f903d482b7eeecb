//! `strategies.offload`: what a run keeps in host memory instead of on the GPU.
//!
//! - `activations`: each checkpointed block's input (all that per-layer checkpointing keeps for
//!   backward) is moved to the host once the block's forward pass has run and brought back
//!   before its recomputation, as torchtune's `enable_activation_offloading` does under
//!   activation checkpointing (and Unsloth's offloaded checkpointing). The device then holds
//!   one block's input at a time beside the working set; the host holds every block's input at
//!   the end of forward, counted byte for byte as they move (`ops::host`). The copies' streams
//!   and their overlap with compute are timing, not memory, and are not planned.
//! - `optimizer` (ZeRO-Offload) is planned by the sharding strategy, under `full` or
//!   `gradients` above one GPU (`strategies::sharding`); `parameters` (FSDP2's
//!   `CPUOffloadPolicy`: the shards, their gradients and the optimizer state on the host) by it
//!   too, under `full` sharding on any number of GPUs (`ops::shard`).
//!
//! Offloading is planned, not run: `vramlab train` refuses it (`validate`).

use std::sync::Arc;

use crate::engine::config::{Checkpointing, Offload as Mode, RunConfig, Sharding, Trainable};
use crate::engine::error::ConfigError;
use crate::engine::models::Model;
use crate::engine::ops::host::HostStash;

use super::{Report, Strategy};

pub struct Offload {
    host: Option<Arc<HostStash>>,
}

impl Offload {
    pub fn new(config: &RunConfig) -> Self {
        let host = (config.strategies.offload == Mode::Activations)
            .then(|| Arc::new(HostStash::default()));
        Self { host }
    }
}

impl Strategy for Offload {
    fn finish_model(&mut self, mut model: Model) -> Model {
        if let Some(host) = &self.host {
            model.set_host_stash(host.clone());
        }
        model
    }

    fn report(&self, report: &mut Report) {
        if let Some(host) = &self.host {
            report.host_bytes = Some(host.peak_bytes());
        }
    }
}

/// What `offload` refuses, naming the field.
pub(crate) fn check(config: &RunConfig) -> Result<(), ConfigError> {
    let s = &config.strategies;
    match s.offload {
        Mode::None => Ok(()),
        Mode::Parameters if s.sharding != Sharding::Full => Err(ConfigError::invalid(
            "strategies.offload",
            format!(
                "parameters on the host are planned under full sharding (FSDP2's \
                 CPUOffloadPolicy over fully_shard, DeepSpeed's offload_param over ZeRO-3), on \
                 one GPU or more, where each block is gathered to the GPU before it runs; got \
                 sharding = {}",
                s.sharding.name()
            ),
        )),
        Mode::Parameters => Ok(()),
        Mode::Optimizer if !(s.sharding.shards_parameters() && config.gpus > 1) => {
            Err(ConfigError::invalid(
                "strategies.offload",
                format!(
                    "optimizer is planned under full or gradients sharding above one GPU \
                     (ZeRO-3 or ZeRO-2 with offload_optimizer), where each gradient leaves \
                     the GPU after its reduce-scatter; got sharding = {} on {} GPU(s)",
                    s.sharding.name(),
                    config.gpus
                ),
            ))
        }
        Mode::Optimizer => Ok(()),
        Mode::Activations if s.checkpointing != Checkpointing::Layers => Err(ConfigError::invalid(
            "strategies.offload",
            format!(
                "activations offloads what per-layer checkpointing keeps (each block's \
                     input), so it needs strategies.checkpointing = layers (the transformer and \
                     llama families' blocks); got {}",
                s.checkpointing.name()
            ),
        )),
        Mode::Activations if s.trainable == Trainable::Head => Err(ConfigError::invalid(
            "strategies.offload",
            "activations has nothing to move when only the head trains (trainable = head): \
             the blocks keep nothing for backward. Use none"
                .to_string(),
        )),
        Mode::Activations => Ok(()),
    }
}
