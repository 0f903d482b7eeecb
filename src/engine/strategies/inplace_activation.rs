//! `strategies.inplace_activation`: whether an activation may take its input's buffer.
//!
//! burn moves tensors into ops, and an op whose input handle is the only one left may write its
//! output into that buffer: that is what "in place" means here. The opposite (`false`) keeps the
//! input alive until the activation's output exists, as a non-inplace `ReLU` does. In training
//! burn's ReLU keeps its input for backward anyway, so the choice can only matter where no
//! graph is recorded: evaluation, and the per-layer probe below.

use burn::nn::activation::Activation;
use burn::tensor::{Device, Tensor};

use crate::engine::error::EngineError;
use crate::engine::memory::{BudgetWatch, Phase, sampler};

/// What a forward pass does at each activation; passed down through the models.
#[derive(Default)]
pub struct Tap {
    /// Let the activation reuse its input's buffer.
    pub inplace: bool,
    /// Layer outputs kept on purpose (see `loss_bookkeeping`), flattened to `[batch, -1]`.
    pub held: Option<Vec<Tensor<2>>>,
    /// When set, the allocator is read after every activation (while a kept input is still
    /// alive): in use, in bytes, one entry per activated layer.
    pub probe: Option<(Device, Vec<Result<u64, EngineError>>)>,
    /// The run's budget and the phase to blame, checked after every activation.
    pub watch: Option<(BudgetWatch, &'static str)>,
    /// The first budget check that failed; the forward pass runs on and the caller returns it.
    pub breach: Option<EngineError>,
    activations: usize,
}

impl Tap {
    pub fn plain(inplace: bool) -> Self {
        Self {
            inplace,
            ..Self::default()
        }
    }

    /// Check the run's budget after every activation of the next forward pass, blaming
    /// `phase`; the run's watch is lent until [`Self::return_watch`].
    pub fn lend_watch(&mut self, watch: &mut Option<BudgetWatch>, phase: Phase) {
        self.watch = watch.take().map(|watch| (watch, phase.name()));
    }

    /// Give the watch back to the run, and fail with the first budget check that failed.
    pub fn return_watch(&mut self, watch: &mut Option<BudgetWatch>) -> Result<(), EngineError> {
        *watch = self.watch.take().map(|(watch, _)| watch);
        self.breach.take().map_or(Ok(()), Err)
    }

    pub fn activate<const D: usize>(&mut self, activation: &Activation, x: Tensor<D>) -> Tensor<D> {
        let (output, kept_input) = if self.inplace {
            (activation.forward(x), None)
        } else {
            (activation.forward(x.clone()), Some(x))
        };
        self.activations += 1;
        if let Some((device, readings)) = &mut self.probe {
            readings.push(sampler::read(device, "probe").map(|r| r.in_use_bytes));
        }
        if let Some((watch, phase)) = &mut self.watch
            && self.breach.is_none()
        {
            let site = format!("layer {} output", self.activations);
            self.breach = watch.check(phase, &site).err();
        }
        drop(kept_input);
        if let Some(held) = &mut self.held {
            let batch = output.dims()[0] as i32;
            held.push(output.clone().reshape([batch, -1]));
        }
        output
    }
}
