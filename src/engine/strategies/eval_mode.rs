//! `strategies.eval_mode`: evaluation runs on the model's no-grad `valid()` copy by default;
//! `autodiff` evaluates the training model itself, recording a graph for every batch, as
//! PyTorch does without `torch.no_grad()`.

use burn::tensor::Device;

use crate::engine::config::{EvalMode as Mode, RunConfig};
use crate::engine::models::Model;

use super::Strategy;

pub struct EvalMode(Mode);

impl EvalMode {
    pub fn new(config: &RunConfig) -> Self {
        Self(config.strategies.eval_mode)
    }
}

impl Strategy for EvalMode {
    fn eval_model(&self, model: &Model, training: &Device) -> Option<(Model, Device)> {
        (self.0 == Mode::Autodiff).then(|| (model.clone(), training.clone()))
    }
}
