//! Who runs a training step: burn's ops and autodiff, or vramlab's fused kernels
//! (`strategies.kernels`). Both take their batches, readings and strategies from the same
//! [`Context`], so the records a run keeps do not depend on which one ran.

mod burn;
mod fused;

use ::burn::tensor::{Device, Tensor};

use crate::engine::config::{Kernels, RunConfig};
use crate::engine::data::Dataset;
use crate::engine::device::Gpu;
use crate::engine::error::EngineError;
use crate::engine::memory::MemoryReading;
use crate::engine::memory::meter::Meter;
use crate::engine::models::Model;
use crate::engine::strategies::Hooks;

/// What a trainer works with; the run owns it.
pub(crate) struct Context {
    pub config: RunConfig,
    pub gpu: Gpu,
    /// The autodiff device training runs on.
    pub device: Device,
    pub data: Dataset,
    pub hooks: Hooks,
    pub meter: Meter,
    /// A plan: launches are dropped, so nothing read back means anything and no decision may
    /// rest on it (no gradient checks, losses or accuracies).
    pub plan: bool,
}

/// A finished evaluation of the test split.
pub(crate) struct Evaluation {
    pub loss: f32,
    pub accuracy: f32,
    /// Largest reading over the evaluation.
    pub memory: MemoryReading,
    /// In use around the first batch, for the evaluation's categories.
    pub first_batch: Option<FirstEvalBatch>,
}

/// In use around an evaluation's first batch (pooled bytes, see `MemoryReading`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FirstEvalBatch {
    pub before: u64,
    pub after_upload: u64,
    pub with_logits: u64,
    pub logits_bytes: u64,
}

pub(crate) enum Trainer {
    Burn(Box<burn::BurnTrainer>),
    Fused(Box<fused::FusedTrainer>),
}

impl Trainer {
    /// The trainer `config.strategies.kernels` asks for, starting from `model`.
    pub fn new(config: &RunConfig, model: Model, device: &Device, inner: &Device) -> Self {
        match config.strategies.kernels {
            Kernels::Burn => Self::Burn(Box::new(burn::BurnTrainer::new(
                config, model, device, inner,
            ))),
            Kernels::Fused => Self::Fused(Box::new(fused::FusedTrainer::new(model))),
        }
    }

    /// Forward, backward and the optimizer over the samples `picked`, as step `index` (0-based).
    pub async fn step(
        &mut self,
        ctx: &mut Context,
        index: usize,
        picked: &[usize],
    ) -> Result<(), EngineError> {
        match self {
            Self::Burn(t) => t.step(ctx, index, picked).await,
            Self::Fused(t) => t.step(ctx, index, picked).await,
        }
    }

    /// Steps whose loss has not been read back yet.
    pub fn pending_losses(&self) -> usize {
        match self {
            Self::Burn(t) => t.pending_losses(),
            Self::Fused(t) => t.pending_losses(),
        }
    }

    /// Read back the losses still pending: `(step index, loss)`.
    pub async fn read_back_losses(&mut self) -> Result<Vec<(usize, f32)>, EngineError> {
        match self {
            Self::Burn(t) => t.read_back_losses().await,
            Self::Fused(t) => t.read_back_losses().await,
        }
    }

    /// Loss and accuracy on the whole test split, in batches of `eval_batch_size`.
    pub async fn evaluate(&mut self, ctx: &mut Context) -> Result<Evaluation, EngineError> {
        match self {
            Self::Burn(t) => t.evaluate(ctx).await,
            Self::Fused(t) => t.evaluate(ctx).await,
        }
    }

    /// In use after each activation of a no-grad forward pass over one (micro-)batch of
    /// training samples, above in use before it: what `inplace_activation` changes.
    pub async fn probe_activations(&mut self, ctx: &mut Context) -> Result<Vec<u64>, EngineError> {
        match self {
            Self::Burn(t) => t.probe_activations(ctx).await,
            Self::Fused(t) => t.probe_activations(ctx).await,
        }
    }

    /// A transformer's training forward pass: the bytes each op leaves for backward (see
    /// `Summary::kept_by_op`). Empty for other models and for the fused MLP, which keeps no
    /// graph.
    pub async fn probe_kept_by_op(
        &mut self,
        ctx: &mut Context,
    ) -> Result<Vec<(crate::engine::models::Op, u64)>, EngineError> {
        match self {
            Self::Burn(t) => t.probe_kept_by_op(ctx).await,
            Self::Fused(_) => Ok(Vec::new()),
        }
    }

    /// For the 2-D sets: the model's probability of class 1 at each of `points` (x, y pairs).
    pub async fn class_one_probability(
        &mut self,
        ctx: &Context,
        points: Vec<f32>,
    ) -> Result<Vec<f32>, EngineError> {
        match self {
            Self::Burn(t) => t.class_one_probability(ctx, points).await,
            Self::Fused(t) => t.class_one_probability(ctx, points).await,
        }
    }
}

pub(crate) fn device_error(phase: &str, err: impl std::fmt::Display) -> EngineError {
    EngineError::Device {
        phase: phase.into(),
        message: err.to_string(),
    }
}

pub(crate) async fn read_floats(tensor: Tensor<1>, phase: &str) -> Result<Vec<f32>, EngineError> {
    tensor
        .into_data_async()
        .await
        .map_err(|err| EngineError::from_execution(phase, err))?
        .try_to_vec_as::<f32>()
        .map_err(|err| device_error(phase, format!("{err:?}")))
}

/// A running sum that starts at its first term (device tensors have no cheap zero of the right
/// shape and dtype at hand).
pub(crate) fn add_to<T: std::ops::Add<Output = T>>(sum: Option<T>, term: T) -> T {
    match sum {
        Some(sum) => sum + term,
        None => term,
    }
}
