//! The optimizers, built from the config's choice, with the settings PyTorch's users get by
//! default where burn's differ.

use burn::optim::momentum::MomentumConfig;
use burn::optim::{
    AdafactorConfig, AdamConfig, AdamWConfig, LionConfig, ModuleOptimizer, SgdConfig,
};

use crate::engine::config::OptimizerKind;
use crate::engine::train::adamw8bit::AdamW8bit;

pub fn build(kind: OptimizerKind) -> ModuleOptimizer {
    let (beta_1, beta_2) = OptimizerKind::ADAM_BETAS;
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
            .with_beta_1(beta_1)
            .with_beta_2(beta_2)
            .with_epsilon(OptimizerKind::ADAM_EPSILON)
            .init(),
        OptimizerKind::Adamw => AdamWConfig::new()
            .with_beta_1(beta_1)
            .with_beta_2(beta_2)
            .with_epsilon(OptimizerKind::ADAM_EPSILON)
            .with_weight_decay(OptimizerKind::ADAMW_WEIGHT_DECAY)
            .init(),
        // AdamW's hyper-parameters, its moments kept in 8 bits between steps.
        OptimizerKind::Adamw8bit => AdamW8bit::new().init(),
        // Its paper's schedule: the learning rate caps a relative step of 1/sqrt(step).
        OptimizerKind::Adafactor => AdafactorConfig::new().init(),
        OptimizerKind::Lion => LionConfig::new().init(),
    }
}
