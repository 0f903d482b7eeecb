//! `strategies.inplace_activation`: whether an activation may take its input's buffer.
//!
//! burn moves tensors into ops, and an op whose input handle is the only one left may write its
//! output into that buffer: that is what "in place" means here. The opposite (`false`) keeps the
//! input alive until the activation's output exists, as a non-inplace `ReLU` does. In training
//! burn's ReLU keeps its input for backward anyway, so the choice can only matter where no
//! graph is recorded: evaluation, and the per-layer probe.

use crate::engine::config::RunConfig;

use super::Strategy;

pub struct InPlace(bool);

impl InPlace {
    pub fn new(config: &RunConfig) -> Self {
        Self(config.strategies.inplace_activation)
    }
}

impl Strategy for InPlace {
    fn keeps_activation_inputs(&self) -> bool {
        !self.0
    }
}
