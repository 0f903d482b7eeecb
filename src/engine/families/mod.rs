//! Model families: everything vramlab knows about one kind of model (its config fields and
//! their checks, the burn module it builds, the analytic model's terms and largest tensors, the
//! Hugging Face `model_type`s it reads, its presets, how it is described) behind [`Family`].
//! Each family is one module here, registered by one line in [`families!`]'s list below; the
//! rest of the engine asks `config.model.kind.family()` instead of matching on the kind.
//!
//! Adding a family: write its module (a `Family` impl, usually a few hooks over a family it is
//! built on), then add one line to the list (the variant, its `model.kind` name, the value).

mod cnn;
mod gemma;
mod llama;
mod mixtral;
mod mlp;
mod phi3;
mod qwen3;
mod qwen3_moe;
mod recurrent;
mod transformer;

use burn::tensor::{Device, FloatDType};

use super::config::{InputKind, ModelConfig, RunConfig};
use super::data::Dataset;
use super::error::ConfigError;
use super::hf_config::HfType;
use super::memory::LayerEstimate;
use super::memory::largest::{Oversized, TensorSizes};
use super::models::Model;
use super::presets::Preset;

/// A config field the page's model card edits for this family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PanelField {
    pub label: &'static str,
    /// The field's dotted path in the run config (`model.width`).
    pub path: &'static str,
    pub hint: &'static str,
}

pub(crate) const fn panel(
    label: &'static str,
    path: &'static str,
    hint: &'static str,
) -> PanelField {
    PanelField { label, path, hint }
}

/// Everything the engine asks about one model family.
pub trait Family: Sync {
    /// Whether it trains on this input shape.
    fn accepts(&self, input: InputKind) -> bool;

    /// Whether it predicts the next token at every position (a decoder's loss).
    fn is_decoder(&self, _model: &ModelConfig) -> bool {
        false
    }

    /// Made of attention blocks: the attention strategy applies, `model.decoder` may be set,
    /// and per-layer checkpointing has blocks to recompute.
    fn attends(&self) -> bool {
        false
    }

    /// Built as a llama (`models::Llama`): the fields only that model reads (`model.head_dim`,
    /// `model.window`, the soft caps, the experts...) mean something to it.
    fn builds_a_llama(&self) -> bool {
        false
    }

    /// Its cells keep f32 state inside burn's own forward (no f16 weights, mixed precision or
    /// quantized base).
    fn keeps_f32_state(&self) -> bool {
        false
    }

    /// Its weights can be an int8 evaluation copy (burn's quantized matmul and convolution).
    fn takes_int8_weights(&self) -> bool {
        false
    }

    /// vramlab's fused training kernels (`strategies.kernels = fused`) cover it.
    fn has_fused_kernels(&self) -> bool {
        false
    }

    /// The family's own fields, checked in the order their errors are reported.
    fn check(&self, config: &RunConfig) -> Result<(), ConfigError>;

    /// The burn module for this (validated) config and data set. `stored`: the type the
    /// weights are kept in (f16 when the run halves them); a family that builds published
    /// checkpoints' shapes draws them in it, as PyTorch loads them (`models::Drawn`), the
    /// others are built in f32 and halved after, as people write `model.half()`.
    fn build(
        &self,
        config: &RunConfig,
        data: &Dataset,
        device: &Device,
        stored: FloatDType,
    ) -> Model;

    /// The analytic model's per-layer estimates for a batch of `b` samples of `width` inputs
    /// and `classes` outputs (`analytic::data_shape`).
    fn layers(
        &self,
        config: &RunConfig,
        width: usize,
        classes: usize,
        b: u64,
    ) -> Vec<LayerEstimate>;

    /// The most a forward pass without a graph holds beside its input and logits, for `n`
    /// samples.
    fn inference_bytes(&self, config: &RunConfig, n: u64) -> u64;

    /// What backward holds beside every activation before any is freed, for a micro-batch of
    /// `b`, in the dtype of the gradients.
    fn backward_working_set(&self, config: &RunConfig, b: u64) -> u64;

    /// LoRA's backward: one more gradient of the largest layer output at a time (sequence
    /// models: of `[b, tokens, max(width, ff)]`).
    fn lora_branch_gradient(&self, config: &RunConfig, _layers: &[LayerEstimate], b: u64) -> u64 {
        let m = &config.model;
        config.data.sample_tokens() as u64 * b * m.width.max(m.ff) as u64 * 4
    }

    /// The largest tensors a step makes, by their shapes (what no page may exceed).
    fn largest_tensors(&self, config: &RunConfig, sizes: &TensorSizes) -> Vec<Oversized>;

    /// The model in a few words for `vramlab presets` (`llama w64 x2 h4`).
    fn short(&self, config: &RunConfig) -> String;

    /// The model in a sentence for a plan's header; its name by default.
    fn summary(&self, config: &RunConfig) -> String {
        config.model.kind.name().to_string()
    }

    /// The fields the page's model card shows.
    fn panel(&self) -> &'static [PanelField];

    /// The Hugging Face `model_type`s it reads (`--hf-config`).
    fn hf_types(&self) -> &'static [HfType] {
        &[]
    }

    /// Presets the family brings beside the listed ones: playground runs, then plans.
    fn presets(&self) -> (&'static [Preset], &'static [Preset]) {
        (&[], &[])
    }
}

pub use super::config::ModelKind;

/// The registry: each kind's family. The kinds are the configuration's (`config::ModelKind`);
/// this match over all of them is where a family registers, and fails to compile when a kind
/// has none.
impl ModelKind {
    /// What vramlab knows about this family.
    pub fn family(self) -> &'static dyn Family {
        match self {
            Self::Mlp => &mlp::Mlp,
            Self::Cnn => &cnn::Cnn,
            Self::Gru => &recurrent::Recurrent { lstm: false },
            Self::Lstm => &recurrent::Recurrent { lstm: true },
            Self::Transformer => &transformer::Transformer,
            Self::Llama => &llama::LLAMA,
            Self::Qwen3 => &qwen3::QWEN3,
            Self::Gemma2 => &gemma::GEMMA2,
            Self::Gemma3 => &gemma::GEMMA3,
            Self::Phi3 => &phi3::PHI3,
            Self::Mixtral => &mixtral::MIXTRAL,
            Self::Qwen3Moe => &qwen3_moe::QWEN3_MOE,
        }
    }
}

impl ModelKind {
    /// The input families this model can take.
    pub fn accepts(self, input: InputKind) -> bool {
        self.family().accepts(input)
    }

    /// The names of the kinds whose family `which` picks, in the registry's order, as an
    /// error lists what is accepted ("transformer, llama, ...").
    pub fn names_where(which: impl Fn(&dyn Family) -> bool) -> String {
        Self::ALL
            .iter()
            .filter(|kind| which(kind.family()))
            .map(|kind| kind.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Every Hugging Face `model_type` some family reads, in the registry's order.
    pub fn hf_types() -> impl Iterator<Item = &'static HfType> {
        Self::ALL.iter().flat_map(|kind| kind.family().hf_types())
    }
}
