//! The three optimizers, built from the config's choice.

use burn::optim::momentum::MomentumConfig;
use burn::optim::{AdamConfig, ModuleOptimizer, SgdConfig};

use crate::engine::config::OptimizerKind;

/// Momentum's coefficient, as PyTorch's users set it. The fused kernels use the same.
pub const MOMENTUM: f64 = 0.9;
/// Adam's betas (burn's and PyTorch's defaults) and epsilon. The fused kernels use the same.
pub const ADAM_BETAS: (f32, f32) = (0.9, 0.999);
pub const ADAM_EPSILON: f32 = 1e-8;

pub fn build(kind: OptimizerKind) -> ModuleOptimizer {
    match kind {
        OptimizerKind::Sgd => SgdConfig::new().init(),
        // PyTorch's default dampening (0), so "momentum" means what its users expect.
        OptimizerKind::Momentum => SgdConfig::new()
            .with_momentum(Some(
                MomentumConfig::new()
                    .with_momentum(MOMENTUM)
                    .with_dampening(0.0),
            ))
            .init(),
        OptimizerKind::Adam => AdamConfig::new()
            .with_beta_1(ADAM_BETAS.0)
            .with_beta_2(ADAM_BETAS.1)
            .with_epsilon(ADAM_EPSILON)
            .init(),
    }
}
