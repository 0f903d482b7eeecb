//! The largest tensors a config makes, by their shapes: what no single page of an adapter's
//! pools may exceed (its largest storage binding), in a run or a plan.

use serde::{Deserialize, Serialize};

use crate::engine::config::{OpPath, RunConfig};
use crate::engine::device::{AdapterInfo, PLAN_BINDING_BYTES, PLANNING_BACKEND};
use crate::engine::error::ConfigError;
use crate::engine::format::ByteFormat;

/// A tensor the config makes, by its shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Oversized {
    pub tensor: String,
    pub bytes: u64,
    /// The config field that sizes it: `model` for a weight, else the batch it grows with.
    pub field: String,
}

/// The tensors of `config` larger than `adapter` can bind: a plan leaves them out.
pub fn oversized(config: &RunConfig, adapter: &AdapterInfo) -> Vec<Oversized> {
    largest_tensors(config)
        .into_iter()
        .filter(|t| t.bytes > adapter.max_binding_size)
        .collect()
}

/// A tensor larger than the adapter can bind fails a run mid-step (wgpu refuses the binding,
/// cubecl the page) and is left out of a plan's figures: refuse it up front, naming the field
/// to change.
pub fn bindable(config: &RunConfig, adapter: &AdapterInfo) -> Result<(), ConfigError> {
    let size = |bytes: u64| ByteFormat::MIB.decimals(1).of(bytes);
    let Some(tensor) = oversized(config, adapter).into_iter().next() else {
        return Ok(());
    };
    let field = tensor.field.as_str();
    let or_plan = if adapter.backend == PLANNING_BACKEND {
        String::new()
    } else {
        format!(
            ", or `vramlab plan`, whose device binds what Vulkan can state ({})",
            size(PLAN_BINDING_BYTES)
        )
    };
    Err(ConfigError::invalid(
        field,
        format!(
            "the {} would take {}, more than the device binds in one buffer ({}); a smaller \
             {field}{or_plan}",
            tensor.tensor,
            size(tensor.bytes),
            size(adapter.max_binding_size)
        ),
    ))
}

/// How a family names the tensors it sizes: a weight by `model`, an activation by the batch
/// it grows with, both in f32.
pub struct TensorSizes {
    /// Samples of the larger of the training (micro-)batch and the evaluation batch.
    pub batch: u64,
    batch_field: &'static str,
}

impl TensorSizes {
    pub fn weight(&self, name: &str, elements: u64) -> Oversized {
        Oversized {
            tensor: name.into(),
            bytes: elements * F32,
            field: "model".into(),
        }
    }

    pub fn activation(&self, name: &str, elements: u64) -> Oversized {
        Oversized {
            tensor: name.into(),
            bytes: elements * F32,
            field: self.batch_field.into(),
        }
    }
}

const F32: u64 = 4;

/// The largest tensors a step of `config` makes, by their shapes (f32): the widest weights, the
/// logits and, for the transformer, the attention scores.
pub fn largest_tensors(config: &RunConfig) -> Vec<Oversized> {
    let batch = config.largest_micro_batch().max(config.eval_batch_size) as u64;
    // Activations at the larger of the training (micro-)batch and the evaluation batch.
    let batch_field = if config.eval_batch_size > config.largest_micro_batch() {
        "eval_batch_size"
    } else {
        "batch_size"
    };
    let sizes = TensorSizes { batch, batch_field };
    let mut tensors = config.model.kind.family().largest_tensors(config, &sizes);
    tensors.sort_by_key(|t| std::cmp::Reverse(t.bytes));
    tensors
}

/// A sequence model's largest tensors: its token embedding, output weight and logits, and (when
/// it `attends`) its attention scores.
pub(crate) fn sequence_tensors(
    config: &RunConfig,
    sizes: &TensorSizes,
    attends: bool,
) -> Vec<Oversized> {
    let (model, data, batch) = (&config.model, &config.data, sizes.batch);
    let width = model.width as u64;
    let tokens = config.token_rows() as u64;
    let positions = data.sample_tokens() as u64;
    // A decoder's outputs are its tokens; a classifier's the data's vocabulary.
    let outputs = if model.is_decoder() {
        tokens
    } else {
        data.vocab as u64
    };
    let mut tensors = vec![
        sizes.weight("token embedding", tokens * width),
        sizes.weight("output weight", width * outputs),
        sizes.activation("logits", batch * positions * outputs),
    ];
    if attends {
        let heads = model.heads as u64;
        let scores = batch * heads * positions * positions;
        // Fused attention's scores never leave its kernels: no tensor of them exists.
        if config.strategies.attention == OpPath::Naive {
            tensors.push(sizes.activation("attention scores", scores));
        }
    }
    tensors
}
