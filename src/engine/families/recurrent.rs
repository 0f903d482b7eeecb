//! The GRU and the LSTM: recurrent cells run as cuDNN runs them (`models::stacked_cells`) over
//! a token embedding, a classifier at the answer's positions.

use burn::tensor::{Device, FloatDType};

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

/// The gates a cell stacks.
fn gates(lstm: bool) -> u64 {
    if lstm { 4 } else { 3 }
}

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

    fn build(&self, config: &RunConfig, data: &Dataset, device: &Device, _: FloatDType) -> Model {
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
        let gates = gates(lstm);
        // Tensors of [batch, width] the stacked GRU and LSTM keep per time step for backward:
        // the gates' activated values, the products that mix them with the states, and the
        // states themselves; the GRU's new gate reads its share of the hidden state's
        // projection, a view that keeps all three gates' shares. Measured, not derived: planned
        // at two sizes each (`vramlab bench-analytic`: the default presets, and width 512 over
        // 256 steps at batch 32), both agree within 1%. (burn's own cells kept 10 for the GRU.)
        let kept_per_step: u64 = 12;
        // The gates' input weights side by side, and their hidden-state weights.
        let g = gates as usize * h;
        let cell = vec![
            vec![h as u64, g as u64],
            vec![g as u64],
            vec![h as u64, g as u64],
            vec![g as u64],
        ];
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

    /// Every time step's projected inputs (a sequence per gate) beside the hidden states
    /// made so far, and the gates' temporaries of one time step (seven of [n, width] in
    /// plans, GRU and LSTM alike).
    fn inference_bytes(&self, config: &RunConfig, n: u64) -> u64 {
        let length = config.data.sample_tokens() as u64;
        ((gates(self.lstm) + 1) * length + RECURRENT_STEP_TEMPORARIES)
            * n
            * config.model.width as u64
            * F32
    }

    /// Backward's transients beside the activations, in [b, L, width] sequences, fitted to
    /// plans at three sizes each (`vramlab bench-analytic`; 5.4-5.7 for the GRU, 11.2-12.0 for
    /// the LSTM): the gradients of the output sequence and of the states, and the gradient of
    /// every time step's projected inputs (a sequence per gate), gathered from the steps
    /// before it reaches the input weights in one matmul. The GRU holds one such gradient
    /// beside the two (five in all); the LSTM, whose steps hand back all four gates' share at
    /// once, about two and a half (twelve in all).
    fn backward_working_set(&self, config: &RunConfig, b: u64) -> u64 {
        let length = config.data.sample_tokens() as u64;
        let gates = gates(self.lstm);
        let sequences = if self.lstm { 3 * gates } else { 2 + gates };
        in_gradient_dtype(
            config,
            sequences * b * length * config.model.width as u64 * F32,
        )
    }

    /// The sequence model's, and every time step's projected inputs (a sequence per gate),
    /// formed by one matmul before the loop, and their gradient after it.
    fn largest_tensors(&self, config: &RunConfig, sizes: &TensorSizes) -> Vec<Oversized> {
        let mut tensors = sequence_tensors(config, sizes, false);
        let values = sizes.batch
            * config.data.sample_tokens() as u64
            * gates(self.lstm)
            * config.model.width as u64;
        tensors.push(sizes.activation("every time step's projected inputs", values));
        tensors
    }

    fn short(&self, config: &RunConfig) -> String {
        format!("{} w{}", config.model.kind.name(), config.model.width)
    }

    fn panel(&self) -> &'static [PanelField] {
        const FIELDS: &[PanelField] = &[panel("width", "model.width", "hidden size")];
        FIELDS
    }
}
