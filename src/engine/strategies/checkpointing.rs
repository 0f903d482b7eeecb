//! `strategies.checkpointing`: gradient checkpointing is a property of burn's autodiff device,
//! so the strategy is the choice of device the model trains on. burn's balanced strategy keeps
//! the outputs of compute-bound ops (matmuls, convolutions) and recomputes memory-bound ones
//! (activations, element-wise maths) in backward.

use burn::tensor::Device;

use crate::engine::config::{Checkpointing as Mode, RunConfig};

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
            Mode::None => device,
            Mode::Balanced => device.gradient_checkpointing(),
        }
    }
}
