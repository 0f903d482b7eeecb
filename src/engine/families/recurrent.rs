//! The GRU and the LSTM: burn's recurrent cells over a token embedding, a classifier at the
//! answer's positions.

use burn::tensor::Device;

use super::{Family, PanelField, panel};
use crate::engine::config::{InputKind, RunConfig, limits};
use crate::engine::data::Dataset;
use crate::engine::error::ConfigError;
use crate::engine::memory::LayerEstimate;
use crate::engine::memory::analytic::{
    F32, in_gradient_dtype, linear_tensors, sequence_logits_kept,
};
use crate::engine::memory::largest::{Oversized, TensorSizes, sequence_tensors};
use crate::engine::models::{self, Model};
use crate::engine::validate::int_in;

pub struct Recurrent {
    pub lstm: bool,
}

/// Tensors of [batch, width] a recurrent cell holds for one time step beyond the states it
/// writes: the gates' pre-activations and products (measured in plans, at two sizes each).
const RECURRENT_STEP_TEMPORARIES: u64 = 7;

impl Family for Recurrent {
    fn accepts(&self, input: InputKind) -> bool {
        input == InputKind::Tokens
    }

    fn keeps_f32_state(&self) -> bool {
        true
    }

    fn check(&self, config: &RunConfig) -> Result<(), ConfigError> {
        int_in("model.width", config.model.width, limits::WIDTH)
    }

    fn build(&self, config: &RunConfig, data: &Dataset, device: &Device) -> Model {
        Model::Recurrent(models::Recurrent::new(
            self.lstm,
            config.data.vocab + 1,
            config.model.width,
            data.classes,
            device,
        ))
    }

    fn layers(
        &self,
        config: &RunConfig,
        _width: usize,
        classes: usize,
        b: u64,
    ) -> Vec<LayerEstimate> {
        let lstm = self.lstm;
        let h = config.model.width;
        let length = config.data.sample_tokens() as u64;
        let tokens = config.data.vocab + 1;
        let gates = if lstm { 4 } else { 3 };
        // Tensors of [batch, width] burn's GRU and LSTM keep per time step for backward: the
        // gates' activated values, the products that mix them with the states, and the states
        // themselves. Measured, not derived: planned at two sizes each (`vramlab
        // bench-analytic`: the default presets, and width 512 over 256 steps at batch 32),
        // both agree within 1%.
        let kept_per_step: u64 = if lstm { 12 } else { 10 };
        // Each gate has an input and a hidden-state dense layer.
        let cell: Vec<Vec<u64>> = (0..2 * gates)
            .flat_map(|_| linear_tensors(h, h, true))
            .collect();
        vec![
            LayerEstimate::new(
                format!("embedding {tokens}x{h}"),
                vec![vec![tokens as u64, h as u64]],
                b * length * h as u64 * F32,
            ),
            LayerEstimate::new(
                format!(
                    "{} {h}x{h} over {length} steps",
                    if lstm { "lstm" } else { "gru" }
                ),
                cell,
                kept_per_step * b * length * h as u64 * F32,
            )
            .adapting_all(),
            LayerEstimate::new(
                format!("classifier {h}x{classes}"),
                linear_tensors(h, classes, true),
                sequence_logits_kept(config, classes, b),
            )
            .adapting_all()
            .in_head_keeping(
                sequence_logits_kept(config, classes, b) + b * length * h as u64 * F32,
            ),
        ]
    }

    /// The embedded sequence, the sequence of hidden states the cell writes into, and the
    /// gates' temporaries of one time step (seven of [n, width] in plans, GRU and LSTM alike).
    fn inference_bytes(&self, config: &RunConfig, n: u64) -> u64 {
        let length = config.data.sample_tokens() as u64;
        (2 * length + RECURRENT_STEP_TEMPORARIES) * n * config.model.width as u64 * F32
    }

    /// Two [b, L, width] gradients, of the output sequence and of the states.
    fn backward_working_set(&self, config: &RunConfig, b: u64) -> u64 {
        let length = config.data.sample_tokens() as u64;
        in_gradient_dtype(config, 2 * b * length * config.model.width as u64 * F32)
    }

    fn largest_tensors(&self, config: &RunConfig, sizes: &TensorSizes) -> Vec<Oversized> {
        sequence_tensors(config, sizes, false)
    }

    fn short(&self, config: &RunConfig) -> String {
        format!("{} w{}", config.model.kind.name(), config.model.width)
    }

    fn panel(&self) -> &'static [PanelField] {
        const FIELDS: &[PanelField] = &[panel("width", "model.width", "hidden size")];
        FIELDS
    }
}
