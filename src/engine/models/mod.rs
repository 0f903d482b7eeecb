//! The models vramlab trains, behind one enum so the training loop is model-agnostic.

mod block;
mod cnn;
mod dense;
mod drawn;
mod hook;
mod llama;
mod mlp;
mod moe;
mod recurrent;
mod rotary;
pub mod stacked_cells;
mod transformer;
mod upload;

use std::sync::Arc;

use burn::module::{Module, ModuleVisitor, Param};
use burn::nn::activation::ActivationConfig;
use burn::tensor::{Device, FloatDType, Tensor};

pub use cnn::Cnn;
pub use dense::{AdapterDepth, Parts, TrainableCount, dense};
pub use drawn::Drawn;
pub use hook::{LayerHook, Op, Plain};
pub use llama::{Llama, LlamaSize};
pub use mlp::Mlp;
pub use moe::{ExpertLoad, RoutedCounts, Routing, RoutingSource};
pub use recurrent::Recurrent;
pub use transformer::{Transformer, TransformerSize};

use super::config::{Activation, RunConfig};
use super::data::{BatchInputs, Dataset};
use super::ops::host::HostStash;
use super::ops::shard::Shards;

/// Side of the CNN's input images and of its feature map after pooling.
pub fn cnn_geometry() -> (usize, usize) {
    (cnn::SIDE, cnn::POOLED)
}

// One model per run: boxing the larger variants would only add an indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Module, Debug)]
pub enum Model {
    Mlp(Mlp),
    Cnn(Cnn),
    Recurrent(Recurrent),
    Transformer(Transformer),
    Llama(Llama),
}

pub(crate) fn activation_config(activation: Activation) -> ActivationConfig {
    match activation {
        Activation::Relu => ActivationConfig::Relu,
        Activation::Tanh => ActivationConfig::Tanh,
        Activation::Sigmoid => ActivationConfig::Sigmoid,
        Activation::Gelu => ActivationConfig::Gelu,
    }
}

/// Touches every float parameter, which makes burn initialise it.
struct Materialize;

impl ModuleVisitor for Materialize {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let _ = param.val();
    }
}

impl Model {
    /// burn creates parameters lazily, at their first use; the budget's first check and the
    /// measured weight bytes need them on the device when the run starts.
    pub fn initialise_params(&self) {
        self.visit(&mut Materialize);
    }

    /// Build the configured model for this data set, its weights kept in `stored`
    /// (`Hooks::stored_dtype`): a family of published checkpoints draws them in it (`Drawn`),
    /// the others in f32, to be cast. The config must have been validated.
    pub fn build(config: &RunConfig, data: &Dataset, device: &Device, stored: FloatDType) -> Self {
        config
            .model
            .kind
            .family()
            .build(config, data, device, stored)
    }

    /// The output layer and the weight matrices LoRA adapts (`strategies.trainable`).
    pub fn parts(&self) -> Parts {
        match self {
            Self::Mlp(m) => m.parts(),
            Self::Cnn(m) => m.parts(),
            Self::Recurrent(m) => m.parts(),
            Self::Transformer(m) => m.parts(),
            Self::Llama(m) => m.parts(),
        }
    }

    /// Values of the root's own parameters (token table, final norm, output layer) of a model
    /// that can be sharded (`strategies.sharding = full`: the llama family's, which
    /// `strategies::sharding` checks); `None` for the others.
    pub fn root_values(&self) -> Option<usize> {
        match self {
            Self::Llama(m) => Some(m.root_values()),
            _ => None,
        }
    }

    /// The model is one GPU's shard: its forward pass gathers through `shards`.
    pub fn set_shards(&mut self, shards: Arc<Shards>) {
        if let Self::Llama(m) = self {
            m.set_shards(shards);
        }
    }

    /// Keeps each checkpointed block's input on the host (`strategies.offload =
    /// activations`), counted by `host`. Only the transformer and llama families have such
    /// blocks (offload's check asks for `checkpointing = layers`, which only they take).
    pub fn set_host_stash(&mut self, host: Arc<HostStash>) {
        match self {
            Self::Llama(m) => m.set_host_stash(host),
            Self::Transformer(m) => m.set_host_stash(host),
            _ => {}
        }
    }

    /// Whether the model is one GPU's shard (its forward pass gathers).
    pub fn is_sharded(&self) -> bool {
        matches!(self, Self::Llama(m) if m.is_sharded())
    }

    /// Parameters in all, those that train, and those of LoRA adapters. Reads each stored
    /// tensor's gradient setting, so the parameters must exist.
    pub fn trainable_count(&self) -> TrainableCount {
        let mut count = TrainableCount::default();
        self.visit(&mut count);
        count
    }

    /// LoRA's factors on a mixture of experts' stacked matrices, which burn's `apply_lora` (a
    /// matrix's adapter) leaves frozen and unadapted; any other model as it is.
    pub fn with_stacked_adapters(self, rank: usize, alpha: f64) -> Self {
        match self {
            Self::Llama(m) => Self::Llama(m.with_stacked_adapters(rank, alpha)),
            other => other,
        }
    }

    /// A mixture of experts' routing (shared by its blocks), and each token's experts; `None`
    /// for a dense model.
    pub fn routing(&self) -> Option<(Routing, usize)> {
        match self {
            Self::Llama(m) => m.routing(),
            _ => None,
        }
    }

    /// Whether the model applies its activations itself (through a [`LayerHook`]).
    pub fn has_tapped_activations(&self) -> bool {
        matches!(self, Self::Mlp(_) | Self::Cnn(_))
    }

    /// Parameters, counted from the module's own tensors.
    pub fn param_count(&self) -> usize {
        self.num_params()
    }

    /// Logits for every target: `[batch * targets_per_sample, classes]`. Sequence models answer
    /// only at the query positions (the second half of the input), except a decoder, which
    /// predicts the next token at every position. The MLP and the CNN apply
    /// their activations through `hook`; the recurrent and attention layers are burn's own.
    ///
    /// Async: a mixture of experts awaits its routing (see `Llama::forward`).
    pub async fn forward(&self, inputs: &BatchInputs, hook: &mut impl LayerHook) -> Tensor<2> {
        match (self, inputs) {
            (Self::Mlp(m), BatchInputs::Floats(x)) => m.forward(x.clone(), hook),
            (Self::Cnn(m), BatchInputs::Floats(x)) => m.forward(x.clone(), hook),
            (Self::Recurrent(m), BatchInputs::Tokens(t)) => answers(m.forward(t.clone())),
            (Self::Transformer(m), BatchInputs::Tokens(t)) if m.is_decoder() => {
                let per_position = m.forward(t.clone(), hook);
                let [batch, length, classes] = per_position.dims();
                per_position.reshape([batch * length, classes])
            }
            (Self::Transformer(m), BatchInputs::Tokens(t)) => answers(m.forward(t.clone(), hook)),
            (Self::Llama(m), BatchInputs::Tokens(t)) => {
                let per_position = m.forward(t.clone(), hook).await;
                let [batch, length, classes] = per_position.dims();
                per_position.reshape([batch * length, classes])
            }
            _ => unreachable!("validation pairs every model with an input it takes"),
        }
    }
}

/// Keep the query half of `[batch, 2L, classes]` and flatten it to `[batch * L, classes]`.
fn answers(per_position: Tensor<3>) -> Tensor<2> {
    let [batch, length, classes] = per_position.dims();
    let half = length / 2;
    per_position
        .slice([0..batch, half..length, 0..classes])
        .reshape([batch * half, classes])
}
