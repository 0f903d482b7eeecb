//! `strategies.kernels`: whose kernels run a training step. `burn` runs it through burn's ops
//! and autodiff (`train::trainer::burn`); `fused` runs a ReLU MLP's whole step, forward,
//! cross-entropy, backward and the optimizer, in vramlab's own WGSL kernels
//! (`shaders/fused_mlp`, launched by `engine::fused`, trained by `train::trainer::fused`): 3L + 1
//! dispatches for L layers and no autodiff graph, from the same memory pool burn uses.
//!
//! The fused kernels implement one thing, a ReLU MLP's f32 step on float inputs with the plain
//! strategies; [`check`] names every other choice with what it needs.

use crate::engine::config::{
    Activation, Checkpointing, DataResidency, EvalMode, InputKind, Kernels, LossBookkeeping,
    MixedPrecision, OpPath, OptimizerKind, RunConfig, Trainable, WeightDtype,
};
use crate::engine::error::ConfigError;

pub(crate) fn check(config: &RunConfig) -> Result<(), ConfigError> {
    if config.strategies.kernels != Kernels::Fused {
        return Ok(());
    }
    let needs = |field: &str, what: &str| {
        Err(ConfigError::invalid(
            field,
            format!("strategies.kernels = fused needs {what}, or use kernels = burn"),
        ))
    };
    let s = &config.strategies;
    if !config.model.kind.family().has_fused_kernels() {
        return needs(
            "strategies.kernels",
            &format!("model.kind = mlp (got {})", config.model.kind.name()),
        );
    }
    if config.model.activation != Activation::Relu {
        return needs("model.activation", "activation = relu");
    }
    if config.data.input_kind() == InputKind::Tokens {
        return needs("data.kind", "a data set of points, images or a table");
    }
    if s.grad_accumulation != 1 {
        return needs("strategies.grad_accumulation", "grad_accumulation = 1");
    }
    if s.mixed_precision != MixedPrecision::Off {
        return needs(
            "strategies.mixed_precision",
            "mixed_precision = off (f32 kernels)",
        );
    }
    if s.weight_dtype != WeightDtype::F32 {
        return needs("strategies.weight_dtype", "weight_dtype = f32");
    }
    if s.checkpointing != Checkpointing::None {
        return needs(
            "strategies.checkpointing",
            "checkpointing = none (no graph to checkpoint)",
        );
    }
    if s.loss_bookkeeping != LossBookkeeping::Scalar {
        return needs(
            "strategies.loss_bookkeeping",
            "loss_bookkeeping = scalar (its step reads losses back itself)",
        );
    }
    if s.eval_mode != EvalMode::NoGrad {
        return needs(
            "strategies.eval_mode",
            "eval_mode = no_grad (no graph to record)",
        );
    }
    if !s.inplace_activation {
        return needs(
            "strategies.inplace_activation",
            "inplace_activation = true (ReLU is fused)",
        );
    }
    if s.cross_entropy != OpPath::Naive {
        return needs(
            "strategies.cross_entropy",
            "cross_entropy = naive (the fused step computes its loss in its own kernel)",
        );
    }
    if s.data_residency != DataResidency::Host {
        return needs("strategies.data_residency", "data_residency = host");
    }
    if !matches!(
        config.optimizer,
        OptimizerKind::Sgd | OptimizerKind::Momentum | OptimizerKind::Adam
    ) {
        return needs(
            "optimizer",
            "optimizer = sgd, momentum or adam (its kernel's three)",
        );
    }
    if s.trainable != Trainable::All {
        return needs(
            "strategies.trainable",
            "trainable = all (the fused step updates every weight)",
        );
    }
    Ok(())
}
