//! The analytic memory model: bytes a config should need, from the config alone. Estimates, not
//! measurements; they are held against the allocator's readings in the tests.
//!
//! What is counted is what stays alive at the moments the sampler reads (see [`Phase`]):
//! - parameters, and as many parameter-sized optimizer states as the optimizer keeps (for
//!   `adamw8bit`, its 8-bit codes and block scales);
//! - the batch on the device;
//! - activations: every tensor burn's autodiff keeps from the forward pass for backward. For a
//!   dense or conv layer followed by an activation that is its output before and after the
//!   activation (the next layer keeps the latter as its input);
//! - gradients: one per parameter, alive between backward and the optimizer step.
//!
//! `strategies.trainable` narrows the last two to the weights that train, adds LoRA's adapters
//! to the parameters, and (training only the head) drops the activations no trainable weight
//! lies behind.
//!
//! A quantized base (`strategies.weight_dtype` = `q4`, `q8`) stores the body's matrices in
//! blocks (packed words and one scale a block, `weight_dtype::BlockFormat`), the rest of the
//! parameters in f16 and LoRA's adapters (and so their gradients and optimizer state) in f32.
//! Its layers keep nothing dequantized for backward, so the activations are an f16 base's; one
//! weight dequantized to f16 is a transient of backward's working set (and of an evaluation's).
//!
//! [`Phase`]: super::Phase

use serde::{Deserialize, Serialize};

use crate::engine::config::{
    Checkpointing, DataResidency, EvalMode, InputKind, LossBookkeeping, MixedPrecision, ModelKind,
    OpPath, OptimizerKind, RunConfig, Trainable,
};
use crate::engine::data::{classes_and_targets, input_width, split_sizes};
use crate::engine::models::cnn_geometry;
use crate::engine::strategies::weight_dtype::BlockFormat;
use crate::engine::train::adamw8bit;

const F32: u64 = 4;
/// Token and class ids are stored as 32-bit integers on the wgpu backend.
const INT: u64 = 4;

/// One layer's share.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LayerEstimate {
    pub name: String,
    pub params: u64,
    /// Bytes this layer leaves in the autodiff graph for one training batch.
    pub activation_bytes: u64,
    /// Bytes of the layer's activated output, for layers whose activation vramlab applies
    /// (MLP and CNN; 0 elsewhere): what an activation that cannot work in place needs beside
    /// its input.
    pub output_bytes: u64,
    /// The dimensions of each of its parameter tensors (what Adafactor's factored state and
    /// LoRA's adapters are sized by).
    #[serde(default)]
    pub tensors: Vec<Vec<u64>>,
    /// The weight matrices LoRA adapts here, `[d_in, d_out]` (`models::Parts::adapted`).
    #[serde(default)]
    pub adapted: Vec<[u64; 2]>,
    /// Part of the output layer (what `trainable = head` trains).
    #[serde(default)]
    pub head: bool,
    /// A head layer's activation bytes when nothing before it trains (`trainable = head`):
    /// what its own weights' gradients need, without what only its input's gradient would.
    #[serde(default)]
    pub frozen_body_bytes: u64,
    /// A transformer or llama block: with `checkpointing = layers` it keeps only its input and
    /// makes `recomputed_bytes` again in backward.
    #[serde(default)]
    pub block: bool,
    /// With `checkpointing = layers`: what the block's recomputation keeps while its backward
    /// runs (the activations it would have kept without checkpointing).
    #[serde(default)]
    pub recomputed_bytes: u64,
}

impl LayerEstimate {
    fn new(name: String, tensors: Vec<Vec<u64>>, activation_bytes: u64) -> Self {
        Self {
            name,
            params: tensors
                .iter()
                .map(|dims| dims.iter().product::<u64>())
                .sum(),
            activation_bytes,
            output_bytes: 0,
            tensors,
            adapted: Vec::new(),
            head: false,
            frozen_body_bytes: 0,
            block: false,
            recomputed_bytes: 0,
        }
    }

    /// One block of a transformer or llama (what per-layer checkpointing recomputes).
    fn in_block(self) -> Self {
        Self {
            block: true,
            ..self
        }
    }

    fn output(self, output_bytes: u64) -> Self {
        Self {
            output_bytes,
            ..self
        }
    }

    /// LoRA adapts these of its matrices.
    fn adapting(self, adapted: Vec<[u64; 2]>) -> Self {
        Self { adapted, ..self }
    }

    /// Every matrix of its tensors is adapted.
    fn adapting_all(self) -> Self {
        let adapted = self
            .tensors
            .iter()
            .filter_map(|dims| match dims[..] {
                [rows, cols] => Some([rows, cols]),
                _ => None,
            })
            .collect();
        self.adapting(adapted)
    }

    /// Part of the output layer; with a frozen body it keeps `frozen_body_bytes`.
    fn in_head_keeping(self, frozen_body_bytes: u64) -> Self {
        Self {
            head: true,
            frozen_body_bytes,
            ..self
        }
    }
}

/// A dense layer's weight `[inputs, outputs]` and, with `bias`, its bias.
fn linear_tensors(inputs: usize, outputs: usize, bias: bool) -> Vec<Vec<u64>> {
    let mut tensors = vec![vec![inputs as u64, outputs as u64]];
    if bias {
        tensors.push(vec![outputs as u64]);
    }
    tensors
}

/// The prediction for a whole config, in bytes (but `param_count`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MemoryPrediction {
    pub param_count: u64,
    /// Parameters that train (`strategies.trainable`): LoRA's adapters, the head's, or all.
    #[serde(default)]
    pub trainable_count: u64,
    /// Bytes of the weights as stored, LoRA's adapters included.
    pub params: u64,
    pub grads: u64,
    pub optimizer_state: u64,
    pub activations: u64,
    /// Inputs and targets of one training batch.
    pub batch: u64,
    /// The whole training split, when it lives on the device (`data_residency` = `device`).
    pub resident_data: u64,
    /// Inputs and targets of one evaluation batch, and the most its forward pass and loss hold
    /// at once (through autodiff: the whole graph and the logits).
    pub eval_batch: u64,
    /// The high-water mark: backward (activations and gradients alive together) or evaluation.
    pub peak: u64,
    /// Bytes `loss_bookkeeping` holds on to per step: each step's logits with `outputs`.
    pub leak_per_step: u64,
    pub layers: Vec<LayerEstimate>,
}

/// Input width, class count and targets per sample for a data kind.
pub(crate) fn data_shape(config: &RunConfig) -> (usize, usize, usize) {
    let data = &config.data;
    match data.input_kind() {
        InputKind::Points | InputKind::Images | InputKind::Features => {
            let (classes, per_sample) = classes_and_targets(data);
            (input_width(data), classes, per_sample)
        }
        // A decoder predicts the next token (a query task's query id included) at every
        // position.
        InputKind::Tokens if is_decoder(config) => (
            data.sample_tokens(),
            config.token_rows(),
            data.sample_tokens(),
        ),
        InputKind::Tokens => (2 * data.seq_len, data.vocab, data.seq_len),
    }
}

fn is_decoder(config: &RunConfig) -> bool {
    config.model.is_decoder()
}

/// Bytes of the fused ops' blocks (`engine::ops`): at most this much of a score or logit
/// tensor exists at once.
fn attention_block(full: u64) -> u64 {
    full.min(crate::engine::ops::attention::BLOCK_SCORE_BYTES as u64)
}

fn loss_block(full: u64) -> u64 {
    full.min(crate::engine::ops::cross_entropy::BLOCK_BYTES as u64)
}

/// Per-layer estimates of `config`'s model for a batch of `b` samples.
fn layers_for(config: &RunConfig, b: u64) -> Vec<LayerEstimate> {
    let (width, classes, _) = data_shape(config);
    let mut layers = match config.model.kind {
        ModelKind::Mlp => mlp_layers(config, width, classes, b),
        ModelKind::Cnn => cnn_layers(config, classes, b),
        ModelKind::Gru | ModelKind::Lstm => recurrent_layers(config, classes, b),
        ModelKind::Transformer => transformer_layers(config, classes, b),
        ModelKind::Llama => llama_layers(config, b),
    };
    if config.strategies.checkpointing == Checkpointing::Layers {
        // Each block keeps its input, `[b, tokens, width]`, and backward makes its activations
        // again, one block at a time.
        let input = b * width as u64 * config.model.width as u64 * F32;
        for layer in layers.iter_mut().filter(|l| l.block) {
            layer.recomputed_bytes = layer.activation_bytes;
            layer.activation_bytes = input;
        }
    }
    if config.strategies.training_precision() != MixedPrecision::Off {
        // Everything before the head is computed and kept in f16; the head's logits are cast
        // to f32 for the loss, so its share stays as it is.
        let head = layers.len() - 1;
        for layer in &mut layers[..head] {
            layer.activation_bytes /= 2;
            layer.output_bytes /= 2;
            layer.recomputed_bytes /= 2;
        }
    }
    layers
}

/// Tensors a dense or conv layer followed by an activation keeps: its output before and after
/// the activation, or (with checkpointing) only the former, the activation being recomputed
/// in backward.
fn kept_per_activated_layer(config: &RunConfig) -> u64 {
    match config.strategies.checkpointing {
        // `layers` is refused for the models with such layers (no blocks to recompute).
        Checkpointing::None | Checkpointing::Layers => 2,
        Checkpointing::Balanced => 1,
    }
}

/// Predict the memory of one training step of `config` (which must be valid).
pub fn predict(config: &RunConfig) -> MemoryPrediction {
    let (width, classes, per_sample) = data_shape(config);
    let k = config.strategies.grad_accumulation.max(1) as u64;
    // With accumulation each pass sees one micro-batch; the largest sets the activations.
    let micro = config.largest_micro_batch() as u64;
    let mut layers = layers_for(config, micro);
    let param_count: u64 = layers.iter().map(|l| l.params).sum();
    let precision = config.strategies.training_precision();
    let weight_bytes = match precision {
        MixedPrecision::F16Unscaled => 2,
        _ => F32,
    };
    let trained = Trained::of(config, &layers);
    let quantized = QuantizedBody::of(config, &layers);
    // What trains beside a quantized base is LoRA's f32 adapters or the f16 head.
    let trained_bytes = match (&quantized, config.strategies.trainable) {
        (Some(_), Trainable::Lora) => F32,
        _ => weight_bytes,
    };
    let params = match &quantized {
        None => (param_count + trained.adapters) * weight_bytes,
        Some(body) => {
            body.bytes + (param_count - body.values) * weight_bytes + trained.adapters * F32
        }
    };
    // One body weight dequantized for a product, freed after it.
    let dequantized = quantized
        .as_ref()
        .map_or(0, |body| body.largest * weight_bytes);
    if trained.head_only {
        // Nothing before the head trains, so no graph is recorded there.
        for layer in &mut layers {
            layer.activation_bytes = if layer.head {
                layer.frozen_body_bytes
            } else {
                0
            };
        }
    }
    let mut activations: u64 = layers.iter().map(|l| l.activation_bytes).sum();
    if precision == MixedPrecision::F16 {
        // The f16 copy of the weights each forward pass computes with, kept for backward.
        activations += param_count * 2;
    }
    // Bytes kept for backward by every block alike: kept whole, or with per-layer checkpointing
    // one block's share held while that block is recomputed.
    let blocks = layers.iter().filter(|l| l.block).count().max(1) as u64;
    let mut recomputed_in_block = 0;
    let mut kept_by_blocks = |bytes: u64| match config.strategies.checkpointing {
        Checkpointing::Layers => recomputed_in_block += bytes / blocks,
        _ => activations += bytes,
    };
    // LoRA's `x A` of every adapted matrix.
    kept_by_blocks(trained.low_rank_per_sample * micro * F32);
    // f32 adapters beside a quantized base are cast to the f16 activations for their products,
    // and those copies are kept for backward (`models::dense`).
    if quantized.is_some() {
        kept_by_blocks(trained.adapters * weight_bytes);
    }
    let logits_bytes = micro * (per_sample * classes) as u64 * F32;
    let leak_per_step = match config.strategies.loss_bookkeeping {
        LossBookkeeping::Scalar | LossBookkeeping::Tensor => 0,
        LossBookkeeping::Outputs => k * logits_bytes,
    };
    let input_bytes = if config.data.input_kind() == InputKind::Tokens {
        INT
    } else {
        F32
    };
    let batch_for = |n: u64| n * width as u64 * input_bytes + n * per_sample as u64 * INT;
    let batch = batch_for(micro);
    let (train_len, test_len) = split_sizes(&config.data);
    let resident_data = match config.strategies.data_residency {
        DataResidency::Host => 0,
        DataResidency::Device => batch_for(train_len as u64),
    };
    let eval_n = config.eval_batch_size.min(test_len) as u64;
    let eval_logits = eval_n * (per_sample * classes) as u64 * F32;
    let eval_batch = batch_for(eval_n)
        + match config.strategies.eval_mode {
            // Evaluating through autodiff keeps a training-sized graph for every eval batch.
            EvalMode::Autodiff => {
                eval_logits
                    + layers_for(config, eval_n)
                        .iter()
                        .map(|l| l.activation_bytes)
                        .sum::<u64>()
            }
            // Without a graph the layers' working set is gone by the time the loss runs: the
            // loss holds the logits, their log-softmax and one more logit-sized temporary
            // (GPT-2's 50k-word vocabulary makes that the evaluation's peak).
            EvalMode::NoGrad => {
                (inference_bytes(config, eval_n) + dequantized).max(
                    match config.strategies.cross_entropy {
                        // An encoder's answers are a slice of its logits, copied before the loss.
                        OpPath::Naive if !is_decoder(config) => 3 * eval_logits,
                        // A decoder's loss takes its logits whole: the log-softmax replaces them.
                        OpPath::Naive => eval_logits,
                        // The fused loss reads the logits a block of rows at a time.
                        OpPath::Fused => eval_logits + 2 * loss_block(eval_logits),
                    },
                )
            }
        };
    // Gradients come in the weights' dtype; so does the state of burn's optimizers, but
    // Adafactor's, which is f32 whatever the weights are, and adamw8bit's: 8-bit codes and
    // block scales, or f32 for a small tensor.
    let grads = trained.values * trained_bytes;
    let optimizer_state = match config.optimizer {
        OptimizerKind::Adamw8bit => trained.adamw8bit_bytes(),
        OptimizerKind::Adafactor => trained.state_values(config.optimizer) * F32,
        _ => trained.state_values(config.optimizer) * trained_bytes,
    };
    let resident = params + optimizer_state + resident_data;
    // Backward starts with every activation alive and first makes the gradients of the last
    // layers' outputs (`backward_working_set`); the parameters' gradients come as activations
    // are freed, so the high-water mark is the larger of the two beside the activations. From
    // the second micro-batch on, the accumulated gradients are alive throughout.
    // Backward itself begins at the loss, whose gradient and softmax temporaries take two and a
    // half logit-sized tensors in plans: 2.5 x 1.53 GiB for GPT-2 small's 50k-word vocabulary
    // at batch 8 of 1,024 tokens, nothing to speak of for a few classes.
    let accumulated = if k > 1 { grads } else { 0 };
    let loss_backward = match config.strategies.cross_entropy {
        OpPath::Naive => logits_bytes * 5 / 2,
        // The logits' gradient is written over the saved logits.
        OpPath::Fused => 0,
    };
    // With per-layer checkpointing backward holds one block's recomputed activations at a
    // time beside the others' inputs.
    // time beside the others' inputs; its backward's temporaries come as those activations are
    // freed, so the larger of the two (fitted to plans: the sum overshot a 4-block llama's by
    // its score gradients, 1.27x).
    let recomputed =
        layers.iter().map(|l| l.recomputed_bytes).max().unwrap_or(0) + recomputed_in_block;
    let working_set = if trained.head_only {
        0
    } else {
        (backward_working_set(config, micro) + trained.branch_gradient(config, &layers, micro))
            .max(recomputed)
            + dequantized
    };
    // Backward frees each layer's activations as it makes that layer's gradients: it starts with
    // every activation and the output layer's gradients, and ends with every gradient. When the
    // gradients outweigh the activations (a large model on short sequences) the end is its
    // high-water mark.
    let head_grads = match config.strategies.trainable {
        Trainable::Lora => 0,
        _ => {
            layers
                .iter()
                .filter(|l| l.head)
                .map(|l| l.params)
                .sum::<u64>()
                * weight_bytes
        }
    };
    let backward =
        accumulated + (activations + head_grads.max(working_set).max(loss_backward)).max(grads);
    let peak = (resident + batch + backward).max(resident + eval_batch);
    MemoryPrediction {
        param_count,
        trainable_count: trained.values,
        params,
        grads,
        optimizer_state,
        activations,
        batch,
        resident_data,
        eval_batch,
        peak,
        leak_per_step,
        layers,
    }
}

/// A quantized base's body (`weight_dtype` = `q4`, `q8`): the matrices LoRA would adapt, less
/// the output layer's, that the format's blocks tile (the others stay 16-bit), as
/// `weight_dtype::quantize_body` stores them.
struct QuantizedBody {
    values: u64,
    /// Packed words and scales.
    bytes: u64,
    /// Values of the largest such matrix.
    largest: u64,
}

impl QuantizedBody {
    fn of(config: &RunConfig, layers: &[LayerEstimate]) -> Option<Self> {
        let format = BlockFormat::of(config.strategies.weight_dtype, true)?;
        let mut body = Self {
            values: 0,
            bytes: 0,
            largest: 0,
        };
        let matrices = layers.iter().filter(|l| !l.head).flat_map(|l| &l.adapted);
        for &[d_in, d_out] in matrices {
            let (d_in, d_out) = (d_in as usize, d_out as usize);
            if format.tile(d_in, d_out).is_none() {
                continue;
            }
            let (packed, scales) = format.matrix_bytes(d_in, d_out);
            let values = (d_in * d_out) as u64;
            body.values += values;
            body.bytes += packed + scales;
            body.largest = body.largest.max(values);
        }
        Some(body)
    }
}

/// What trains, from `strategies.trainable` and the layers' tensors.
struct Trained {
    /// Parameter values that get a gradient and optimizer state.
    values: u64,
    /// Their tensors' dimensions (optimizer state is sized per tensor).
    tensors: Vec<Vec<u64>>,
    /// LoRA's adapter values, stored beside the frozen weights.
    adapters: u64,
    /// Per sample and position, LoRA's `x A` of every adapted matrix, kept for backward.
    low_rank_per_sample: u64,
    /// Only the head trains and no trainable weight lies before it: the body keeps no graph.
    head_only: bool,
}

impl Trained {
    fn of(config: &RunConfig, layers: &[LayerEstimate]) -> Self {
        let s = &config.strategies;
        let tensors: Vec<Vec<u64>> = match s.trainable {
            Trainable::All => layers.iter().flat_map(|l| l.tensors.clone()).collect(),
            Trainable::Head => layers
                .iter()
                .filter(|l| l.head)
                .flat_map(|l| l.tensors.clone())
                .collect(),
            Trainable::Lora => {
                let r = s.lora_rank as u64;
                layers
                    .iter()
                    .flat_map(|l| &l.adapted)
                    .flat_map(|&[d_in, d_out]| [vec![d_in, r], vec![r, d_out]])
                    .collect()
            }
        };
        let values = tensors.iter().map(|t| t.iter().product::<u64>()).sum();
        let adapters = match s.trainable {
            Trainable::Lora => values,
            _ => 0,
        };
        let positions = match config.data.kind.input_kind() {
            InputKind::Tokens => config.data.sample_tokens() as u64,
            _ => 1,
        };
        let low_rank_per_sample = match s.trainable {
            Trainable::Lora => {
                let matrices = layers.iter().map(|l| l.adapted.len() as u64).sum::<u64>();
                matrices * s.lora_rank as u64 * positions
            }
            _ => 0,
        };
        // A head that starts at the first layer (a decoder's tied token embedding) has every
        // layer behind it.
        let head_only = s.trainable == Trainable::Head && !layers.first().is_some_and(|l| l.head);
        Self {
            values,
            tensors,
            adapters,
            low_rank_per_sample,
            head_only,
        }
    }

    /// LoRA's backward splits each adapted layer's output gradient between the frozen product
    /// and the low-rank branch: one more gradient of the largest layer output at a time.
    fn branch_gradient(&self, config: &RunConfig, layers: &[LayerEstimate], b: u64) -> u64 {
        if self.adapters == 0 {
            return 0;
        }
        let m = &config.model;
        match m.kind {
            ModelKind::Mlp | ModelKind::Cnn => {
                layers.iter().map(|l| l.output_bytes).max().unwrap_or(0)
            }
            _ => config.data.sample_tokens() as u64 * b * m.width.max(m.ff) as u64 * F32,
        }
    }

    /// `adamw8bit`'s two moments, tensor by tensor (`engine::train::adamw8bit`).
    fn adamw8bit_bytes(&self) -> u64 {
        self.tensors
            .iter()
            .map(|dims| adamw8bit::state_bytes(dims.iter().product()))
            .sum()
    }

    fn state_values(&self, optimizer: OptimizerKind) -> u64 {
        self.tensors
            .iter()
            .map(|dims| {
                let dims: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
                optimizer.state_values(&dims)
            })
            .sum()
    }
}

/// The most a forward pass without a graph holds beside its input and logits, for `n` samples:
/// each tensor is freed once the next operation has read it.
fn inference_bytes(config: &RunConfig, n: u64) -> u64 {
    let m = &config.model;
    let length = config.data.sample_tokens() as u64;
    match m.kind {
        // One layer at a time: its input, its output before and after the activation.
        ModelKind::Mlp | ModelKind::Cnn => layers_for(config, n)
            .iter()
            .map(|l| l.activation_bytes)
            .max()
            .unwrap_or(0),
        // The embedded sequence, the sequence of hidden states the cell writes into, and the
        // gates' temporaries of one time step (seven of [n, width] in plans, GRU and LSTM alike).
        ModelKind::Gru | ModelKind::Lstm => {
            (2 * length + RECURRENT_STEP_TEMPORARIES) * n * m.width as u64 * F32
        }
        // The larger of one encoder layer's attention (its scores before and after softmax
        // beside six [n, L, width] tensors: the residual stream, Q, K, V, context and the
        // projection, as plans show them) and its feed-forward block (input, hidden before and
        // after the activation).
        ModelKind::Transformer => {
            let full_scores = n * m.heads as u64 * length * length * F32;
            let scores = match config.strategies.attention {
                // A decoder's adds burn's autoregressive mask (int-sized bools).
                OpPath::Naive if is_decoder(config) => 2 * full_scores + n * length * length * INT,
                OpPath::Naive => 2 * full_scores,
                OpPath::Fused => 2 * attention_block(full_scores),
            };
            let attention = scores + 6 * n * length * m.width as u64 * F32;
            let feed_forward = n * length * (m.width as u64 + 2 * m.ff as u64) * F32;
            attention.max(feed_forward)
        }
        // The same shape for a llama (the mask is built with -inf fills, no int tensor; four
        // [n, L, width] beside the scores in plans: the stream, Q, K, V), with its
        // feed-forward's gate and up projections and their product.
        ModelKind::Llama => {
            let full_scores = n * m.heads as u64 * length * length * F32;
            let scores = match config.strategies.attention {
                OpPath::Naive => 2 * full_scores,
                OpPath::Fused => 2 * attention_block(full_scores),
            };
            let attention = scores + 4 * n * length * m.width as u64 * F32;
            // The stream and the normalized input beside the gate, up and their product.
            let feed_forward = n * length * (2 * m.width as u64 + 2 * m.ff as u64) * F32;
            attention.max(feed_forward)
        }
    }
}

/// Tensors of [batch, width] a recurrent cell holds for one time step beyond the states it
/// writes: the gates' pre-activations and products (measured in plans, at two sizes each).
const RECURRENT_STEP_TEMPORARIES: u64 = 7;

/// What backward holds beside every activation before any is freed, for a micro-batch of `b`:
/// the gradients of the last layers' outputs. Fitted to plans (`vramlab bench-analytic`):
/// - MLP and CNN: the gradient of the largest layer output;
/// - GRU and LSTM: two [b, L, width] gradients, of the output sequence and of the states;
/// - transformer: the larger of three feed-forward hiddens [b, L, ff] (the activation's
///   backward) and two score tensors [b, heads, L, L] (softmax's backward).
fn backward_working_set(config: &RunConfig, b: u64) -> u64 {
    let m = &config.model;
    let length = config.data.sample_tokens() as u64;
    let bytes = match m.kind {
        ModelKind::Mlp | ModelKind::Cnn => {
            return layers_for(config, b)
                .iter()
                .map(|l| l.output_bytes)
                .max()
                .unwrap_or(0);
        }
        ModelKind::Gru | ModelKind::Lstm => 2 * b * length * m.width as u64 * F32,
        ModelKind::Transformer | ModelKind::Llama => {
            let feed_forward = 3 * b * length * m.ff as u64 * F32;
            let full_scores = b * m.heads as u64 * length * length * F32;
            let scores = match config.strategies.attention {
                OpPath::Naive => 2 * full_scores,
                // Backward forms one block's scores at a time (their softmax and gradients
                // fused into the same elementwise kernels where burn can).
                OpPath::Fused => attention_block(full_scores),
            };
            feed_forward.max(scores)
        }
    };
    // Gradients come in the dtype the activations were computed in.
    match config.strategies.training_precision() {
        MixedPrecision::Off => bytes,
        _ => bytes / 2,
    }
}

fn mlp_layers(config: &RunConfig, width: usize, classes: usize, b: u64) -> Vec<LayerEstimate> {
    let widths: Vec<usize> = std::iter::once(width)
        .chain(config.model.hidden.iter().copied())
        .chain(std::iter::once(classes))
        .collect();
    let last = widths.len() - 2;
    let kept = kept_per_activated_layer(config);
    widths
        .windows(2)
        .enumerate()
        .map(|(i, pair)| {
            let output = b * pair[1] as u64 * F32;
            let layer = LayerEstimate::new(
                format!("dense{} {}x{}", i + 1, pair[0], pair[1]),
                linear_tensors(pair[0], pair[1], true),
                0,
            )
            .adapting_all();
            if i < last {
                LayerEstimate {
                    activation_bytes: kept * output,
                    ..layer.output(output)
                }
            } else {
                // The output layer keeps its logits and the log-softmax of the loss; with a
                // frozen body, also its input for its weight's gradient (otherwise counted as
                // the layer before's output).
                let input = b * pair[0] as u64 * F32;
                LayerEstimate {
                    activation_bytes: 2 * output,
                    ..layer.in_head_keeping(2 * output + input)
                }
            }
        })
        .collect()
}

fn cnn_layers(config: &RunConfig, classes: usize, b: u64) -> Vec<LayerEstimate> {
    let [c1, c2] = [config.model.channels[0], config.model.channels[1]];
    let hidden = config.model.hidden[0];
    let (side, pooled) = cnn_geometry();
    let map = (side * side) as u64;
    let pooled_map = (pooled * pooled) as u64;
    let kept = kept_per_activated_layer(config);
    let conv = |from: usize, to: usize| vec![vec![to as u64, from as u64, 3, 3], vec![to as u64]];
    vec![
        LayerEstimate::new(
            format!("conv1 1->{c1} 3x3"),
            conv(1, c1),
            kept * b * c1 as u64 * map * F32,
        )
        .output(b * c1 as u64 * map * F32),
        LayerEstimate::new(
            format!("conv2 {c1}->{c2} 3x3"),
            conv(c1, c2),
            kept * b * c2 as u64 * map * F32,
        )
        .output(b * c2 as u64 * map * F32),
        // The pooled map, and the argmax indices max-pool backward needs.
        LayerEstimate::new(
            "maxpool 2x2".into(),
            Vec::new(),
            b * c2 as u64 * pooled_map * (F32 + INT),
        ),
        LayerEstimate::new(
            format!("dense {}x{hidden}", c2 as u64 * pooled_map),
            linear_tensors(c2 * pooled * pooled, hidden, true),
            kept * b * hidden as u64 * F32,
        )
        .output(b * hidden as u64 * F32)
        .adapting_all(),
        LayerEstimate::new(
            format!("classifier {hidden}x{classes}"),
            linear_tensors(hidden, classes, true),
            2 * b * classes as u64 * F32,
        )
        .adapting_all()
        .in_head_keeping((2 * classes + hidden) as u64 * b * F32),
    ]
}

fn recurrent_layers(config: &RunConfig, classes: usize, b: u64) -> Vec<LayerEstimate> {
    let lstm = config.model.kind == ModelKind::Lstm;
    let h = config.model.width;
    let length = config.data.sample_tokens() as u64;
    let tokens = config.data.vocab + 1;
    let gates = if lstm { 4 } else { 3 };
    // Tensors of [batch, width] burn's GRU and LSTM keep per time step for backward: the gates'
    // activated values, the products that mix them with the states, and the states
    // themselves. Measured, not derived: planned at two sizes each (`vramlab bench-analytic`:
    // the default presets, and width 512 over 256 steps at batch 32), both agree within 1%.
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
        .in_head_keeping(sequence_logits_kept(config, classes, b) + b * length * h as u64 * F32),
    ]
}

/// What a sequence model's classifier and loss keep for backward: one logit tensor over the
/// answer's positions (`seq_len`, not the whole input). Planned with a 50,000-word vocabulary
/// (GRU) and GPT-2's 50,257, where the logits are most of the activations.
fn sequence_logits_kept(config: &RunConfig, classes: usize, b: u64) -> u64 {
    b * config.data.seq_len as u64 * classes as u64 * F32
}

fn transformer_layers(config: &RunConfig, classes: usize, b: u64) -> Vec<LayerEstimate> {
    let m = &config.model;
    let (d, ff, heads) = (m.width as u64, m.ff as u64, m.heads as u64);
    let length = config.data.sample_tokens() as u64;
    let tokens = config.token_rows() as u64;
    let positions = config.position_rows() as u64;
    let decoder = is_decoder(config);
    // The embeddings' sum; an encoder's plans hold two more [B, L, d] here.
    let embedded = if decoder { 1 } else { 3 };
    let embeddings = LayerEstimate::new(
        format!("embeddings {tokens}+{positions} x{d}"),
        vec![vec![tokens, d], vec![positions, d]],
        embedded * b * length * d * F32,
    );
    // A decoder's output is its token embedding: the head trains it, and every layer lies
    // behind it.
    let mut layers = vec![if decoder {
        embeddings.in_head_keeping(0)
    } else {
        embeddings
    }];
    let (w, f) = (m.width, m.ff);
    for i in 0..m.layers {
        // Tensors of [B, L, d] an encoder (post-norm) block keeps: Q, K, V, context,
        // projection, two residual sums and two layer norms, nine in all; a decoder
        // (pre-norm) block ten, as its plans show them. Both keep the feed-forward hidden
        // before and after its activation. Naive attention adds three score-sized tensors of
        // [B, heads, L, L] (burn's softmax under autodiff is max, subtract, exp, sum and
        // divide: the exponent and the softmax are kept, and the scores themselves, masked for
        // a decoder). Fused attention keeps its output, one more [B, L, d], and one
        // log-sum-exp per row and head instead.
        // Frozen LayerNorms (LoRA freezes every base) keep neither normalized input.
        let frozen_norms = match config.strategies.trainable {
            Trainable::Lora => 2,
            _ => 0,
        };
        let kept = if decoder { 10 } else { 9 } - frozen_norms;
        let (per_token, scores) = match config.strategies.attention {
            OpPath::Naive => (kept * d + 2 * ff, 3 * heads * length * length),
            OpPath::Fused => ((kept + 1) * d + 2 * ff, 0),
        };
        let lse = match config.strategies.attention {
            OpPath::Naive => 0,
            OpPath::Fused => heads,
        };
        let mut tensors = Vec::new();
        for _ in 0..4 {
            tensors.extend(linear_tensors(w, w, true));
        }
        tensors.extend(linear_tensors(w, f, true));
        tensors.extend(linear_tensors(f, w, true));
        tensors.extend([vec![d], vec![d], vec![d], vec![d]]);
        layers.push(
            LayerEstimate::new(
                format!(
                    "{}{} d{d} ff{ff} h{heads}",
                    if decoder { "decoder" } else { "encoder" },
                    i + 1
                ),
                tensors,
                (b * length * (per_token + lse) + b * scores) * F32,
            )
            .adapting_all()
            .in_block(),
        );
    }
    if decoder {
        // The final LayerNorm, and logits from the token embedding itself (no parameters of
        // their own): one logit tensor over every position is kept for the loss.
        layers.push(
            LayerEstimate::new(
                format!("final norm, tied output {d}x{classes}"),
                vec![vec![d], vec![d]],
                (3 * b * length * d + b * length * classes as u64) * F32,
            )
            .in_head_keeping(0),
        );
    } else {
        let logits = sequence_logits_kept(config, classes, b);
        layers.push(
            LayerEstimate::new(
                format!("classifier {d}x{classes}"),
                linear_tensors(w, classes, true),
                logits,
            )
            .adapting_all()
            .in_head_keeping(logits + b * config.data.seq_len as u64 * d * F32),
        );
    }
    layers
}

/// Tensors of `[B, L, d]` a llama block keeps for backward beside its RMSNorms' normalized
/// inputs (two more, for their weights' gradients): the input, the norms' outputs, the rotated
/// Q, the merged context, the residual sum and the repeated keys and values, as plans show
/// them; and of `[B, L, ff]` (the gate, its sigmoid and SiLU, the up projection, their
/// product). Naive attention adds three score-sized tensors as the transformer's; fused
/// attention keeps the rotated K and V at their own heads, its output and one log-sum-exp per
/// row and head instead of the repeated keys and values.
const LLAMA_KEPT_WIDTH: u64 = 8;
const LLAMA_KEPT_FF: u64 = 5;

fn llama_layers(config: &RunConfig, b: u64) -> Vec<LayerEstimate> {
    let m = &config.model;
    let (d, ff, heads) = (m.width as u64, m.ff as u64, m.heads as u64);
    let kv_width = d / heads * m.kv_heads() as u64;
    let length = config.data.sample_tokens() as u64;
    let tokens = config.token_rows() as u64;
    let embedding = LayerEstimate::new(
        format!("token embedding {tokens}x{d}"),
        vec![vec![tokens, d]],
        b * length * d * F32,
    );
    let mut layers = vec![if m.tied {
        embedding.in_head_keeping(0)
    } else {
        embedding
    }];
    let (w, f, kv) = (m.width, m.ff, kv_width as usize);
    // Frozen RMSNorm weights (LoRA freezes every base) need not keep their normalized inputs.
    let norms_kept = match config.strategies.trainable {
        Trainable::Lora => 0,
        _ => 2 * d,
    };
    for i in 0..m.layers {
        let (per_token, scores) = match config.strategies.attention {
            OpPath::Naive => (
                LLAMA_KEPT_WIDTH * d + norms_kept + LLAMA_KEPT_FF * ff,
                3 * heads * length * length,
            ),
            OpPath::Fused => (
                (LLAMA_KEPT_WIDTH - 1) * d + norms_kept + 2 * kv_width + LLAMA_KEPT_FF * ff + heads,
                0,
            ),
        };
        let mut tensors = vec![vec![d], vec![d]];
        let projections = [(w, w), (w, kv), (w, kv), (w, w), (w, f), (w, f), (f, w)];
        for (n, &(inputs, outputs)) in projections.iter().enumerate() {
            // Qwen2's biases are on Q, K and V, the first three.
            tensors.extend(linear_tensors(inputs, outputs, m.qkv_bias && n < 3));
        }
        layers.push(
            LayerEstimate::new(
                format!("block{} d{d} ff{ff} h{heads}/{}", i + 1, m.kv_heads()),
                tensors,
                (b * length * per_token + b * scores) * F32,
            )
            .adapting(
                projections
                    .iter()
                    .map(|&(i, o)| [i as u64, o as u64])
                    .collect(),
            )
            .in_block(),
        );
    }
    let mut head_tensors = vec![vec![d]];
    if !m.tied {
        head_tensors.push(vec![d, tokens]);
    }
    // The final norm keeps its input, the normalized input and its output; with a frozen body
    // its input needs no gradient and is not kept.
    let logits = b * length * tokens * F32;
    layers.push(
        LayerEstimate::new(
            format!(
                "final norm, {} output {d}x{tokens}",
                if m.tied { "tied" } else { "untied" }
            ),
            head_tensors,
            3 * b * length * d * F32 + logits,
        )
        .in_head_keeping(2 * b * length * d * F32 + logits),
    );
    layers
}
