//! `strategies.eval_mode`: which model and device evaluation runs on.

use burn::module::Module;
use burn::tensor::Device;

use crate::engine::config::EvalMode;
use crate::engine::models::Model;

/// The model to evaluate and the device its batches go to. `no_grad` takes the `valid()` copy,
/// whose tensors live on the device without autodiff; `autodiff` evaluates the training model
/// itself, recording a graph for every batch.
pub fn eval_model(
    mode: EvalMode,
    model: &Model,
    inner: &Device,
    training: &Device,
) -> (Model, Device) {
    match mode {
        EvalMode::NoGrad => (model.valid(), inner.clone()),
        EvalMode::Autodiff => (model.clone(), training.clone()),
    }
}

/// Free autodiff graphs that no tensor can reach any more. burn sweeps them only at the end of a
/// `backward()`, so the graphs an `autodiff` evaluation records outlive it until the next
/// training backward, and those of a finished run until some later backward. A backward
/// through a one-element tensor runs that sweep now; a run calls it before reading its baseline.
pub fn release_orphaned_graphs(training: &Device) {
    let probe = burn::tensor::Tensor::<1>::zeros([1], training).require_grad();
    let _ = probe.sum().backward();
}
