//! The three optimizers, built from the config's choice.

use burn::optim::momentum::MomentumConfig;
use burn::optim::{AdamConfig, ModuleOptimizer, SgdConfig};

use crate::engine::config::OptimizerKind;

pub fn build(kind: OptimizerKind) -> ModuleOptimizer {
    match kind {
        OptimizerKind::Sgd => SgdConfig::new().init(),
        // PyTorch's default dampening (0), so "momentum" means what its users expect.
        OptimizerKind::Momentum => SgdConfig::new()
            .with_momentum(Some(
                MomentumConfig::new()
                    .with_momentum(OptimizerKind::MOMENTUM)
                    .with_dampening(0.0),
            ))
            .init(),
        OptimizerKind::Adam => AdamConfig::new()
            .with_beta_1(OptimizerKind::ADAM_BETAS.0)
            .with_beta_2(OptimizerKind::ADAM_BETAS.1)
            .with_epsilon(OptimizerKind::ADAM_EPSILON)
            .init(),
    }
}
