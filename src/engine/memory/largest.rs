//! The largest tensors a config makes, by their shapes: what no single page of an adapter's
//! pools may exceed (its largest storage binding), in a run or a plan.

use serde::{Deserialize, Serialize};

use crate::engine::config::{ModelKind, OpPath, RunConfig};
use crate::engine::data::{classes_and_targets, input_width};
use crate::engine::device::{AdapterInfo, PLAN_BINDING_BYTES, PLANNING_BACKEND};
use crate::engine::error::ConfigError;
use crate::engine::models::cnn_geometry;
use crate::engine::ops::attention;

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
    const MIB: f64 = 1024.0 * 1024.0;
    let Some(tensor) = oversized(config, adapter).into_iter().next() else {
        return Ok(());
    };
    let field = tensor.field.as_str();
    let or_plan = if adapter.backend == PLANNING_BACKEND {
        String::new()
    } else {
        format!(
            ", or `vramlab plan`, whose device binds what Vulkan can state ({:.1} MiB)",
            PLAN_BINDING_BYTES as f64 / MIB
        )
    };
    Err(ConfigError::invalid(
        field,
        format!(
            "the {} would take {:.1} MiB, more than the device binds in one buffer ({:.1} \
             MiB); a smaller {field}{or_plan}",
            tensor.tensor,
            tensor.bytes as f64 / MIB,
            adapter.max_binding_size as f64 / MIB
        ),
    ))
}

/// The largest tensors a step of `config` makes, by their shapes (f32): the widest weights, the
/// logits and, for the transformer, the attention scores.
pub fn largest_tensors(config: &RunConfig) -> Vec<Oversized> {
    const F32: u64 = 4;
    let model = &config.model;
    let data = &config.data;
    let batch = config.largest_micro_batch().max(config.eval_batch_size) as u64;
    // Activations at the larger of the training (micro-)batch and the evaluation batch.
    let batch_field = if config.eval_batch_size > config.largest_micro_batch() {
        "eval_batch_size"
    } else {
        "batch_size"
    };
    let weight = |name: &str, elements: u64| Oversized {
        tensor: name.into(),
        bytes: elements * F32,
        field: "model".into(),
    };
    let activation = |name: &str, elements: u64| Oversized {
        tensor: name.into(),
        bytes: elements * F32,
        field: batch_field.into(),
    };
    let mut tensors = Vec::new();
    match model.kind {
        ModelKind::Mlp => {
            let input = input_width(data) as u64;
            let classes = classes_and_targets(data).0 as u64;
            let widths: Vec<u64> = std::iter::once(input)
                .chain(model.hidden.iter().map(|&w| w as u64))
                .chain(std::iter::once(classes))
                .collect();
            for (i, pair) in widths.windows(2).enumerate() {
                tensors.push(weight(&format!("layer {i} weight"), pair[0] * pair[1]));
            }
            let widest = widths.iter().copied().max().unwrap_or(1);
            tensors.push(activation("widest activation", batch * widest));
        }
        ModelKind::Cnn => {
            let (side, pooled) = cnn_geometry();
            let (c1, c2) = (model.channels[0] as u64, model.channels[1] as u64);
            let hidden = model.hidden[0] as u64;
            let pooled = (pooled * pooled) as u64;
            tensors.push(weight("dense weight", c2 * pooled * hidden));
            let area = (side * side) as u64;
            tensors.push(activation("second convolution's output", batch * c2 * area));
            tensors.push(activation("first convolution's output", batch * c1 * area));
        }
        ModelKind::Gru | ModelKind::Lstm | ModelKind::Transformer | ModelKind::Llama => {
            let width = model.width as u64;
            let tokens = config.token_rows() as u64;
            let positions = data.sample_tokens() as u64;
            // A decoder's outputs are its tokens; a classifier's the data's vocabulary.
            let outputs = if model.is_decoder() {
                tokens
            } else {
                data.vocab as u64
            };
            tensors.push(weight("token embedding", tokens * width));
            tensors.push(weight("output weight", width * outputs));
            tensors.push(activation("logits", batch * positions * outputs));
            if matches!(model.kind, ModelKind::Transformer | ModelKind::Llama) {
                let heads = model.heads as u64;
                let scores = batch * heads * positions * positions;
                match config.strategies.attention {
                    OpPath::Naive => tensors.push(activation("attention scores", scores)),
                    // Fused attention forms the scores a block of query rows at a time.
                    OpPath::Fused => tensors.push(activation(
                        "a block of attention scores",
                        scores.min(attention::BLOCK_SCORE_BYTES as u64 / F32),
                    )),
                }
            }
        }
    }
    tensors.sort_by_key(|t| std::cmp::Reverse(t.bytes));
    tensors
}
