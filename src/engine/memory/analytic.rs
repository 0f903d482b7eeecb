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
//! blocks (packed words and one scale a block, `layout::BlockFormat`), the rest of the
//! parameters in f16 and LoRA's adapters (and so their gradients and optimizer state) in f32.
//! Its layers keep nothing dequantized for backward, so the activations are an f16 base's; one
//! weight dequantized to f16 is a transient of backward's working set (and of an evaluation's).
//!
//! [`Phase`]: super::Phase

use serde::{Deserialize, Serialize};

use crate::engine::config::{
    Checkpointing, DataResidency, EvalMode, InputKind, LossBookkeeping, MixedPrecision, Offload,
    OpPath, OptimizerKind, RunConfig, Sharding, Trainable,
};
use crate::engine::data::{classes_and_targets, input_width, split_sizes};
use crate::engine::layout::{self, BlockFormat};

pub(crate) const F32: u64 = 4;
/// Token and class ids are stored as 32-bit integers on the wgpu backend.
pub(crate) const INT: u64 = 4;

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
    pub(crate) fn new(name: String, tensors: Vec<Vec<u64>>, activation_bytes: u64) -> Self {
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
    pub(crate) fn in_block(self) -> Self {
        Self {
            block: true,
            ..self
        }
    }

    pub(crate) fn output(self, output_bytes: u64) -> Self {
        Self {
            output_bytes,
            ..self
        }
    }

    /// LoRA adapts these of its matrices.
    pub(crate) fn adapting(self, adapted: Vec<[u64; 2]>) -> Self {
        Self { adapted, ..self }
    }

    /// Every matrix of its tensors is adapted.
    pub(crate) fn adapting_all(self) -> Self {
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
    pub(crate) fn in_head_keeping(self, frozen_body_bytes: u64) -> Self {
        Self {
            head: true,
            frozen_body_bytes,
            ..self
        }
    }
}

/// A dense layer's weight `[inputs, outputs]` and, with `bias`, its bias.
pub(crate) fn linear_tensors(inputs: usize, outputs: usize, bias: bool) -> Vec<Vec<u64>> {
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
    /// Bytes of the weights as stored, LoRA's adapters included, and the model's constants.
    pub params: u64,
    /// Of which the model's constants (a llama's rotary tables): never sharded or offloaded.
    #[serde(default)]
    pub constants: u64,
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
    /// What else an evaluation finds on the GPU beside the weights and the optimizer state:
    /// DDP's gradient buckets, a sharded run's gathered root (its gathered block comes with the
    /// batch's layers, in `eval_batch`).
    #[serde(default)]
    pub eval_resident: u64,
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

fn loss_block(full: u64) -> u64 {
    full.min(crate::engine::ops::cross_entropy::BLOCK_BYTES as u64)
}

/// Per-layer estimates of `config`'s model for a batch of `b` samples.
pub(crate) fn layers_for(config: &RunConfig, b: u64) -> Vec<LayerEstimate> {
    let (width, classes, _) = data_shape(config);
    let mut layers = config.model.kind.family().layers(config, width, classes, b);
    if config.strategies.checkpointing == Checkpointing::Layers {
        // Each block keeps its input, `[b, tokens, width]`, and backward makes its activations
        // again, one block at a time.
        let input = b * width as u64 * config.model.width as u64 * F32;
        // With `offload = activations` the input waits on the host, and is back on the
        // device only while its block is recomputed.
        let offloaded = config.strategies.offload == Offload::Activations;
        for layer in layers.iter_mut().filter(|l| l.block) {
            layer.recomputed_bytes = layer.activation_bytes + if offloaded { input } else { 0 };
            layer.activation_bytes = if offloaded { 0 } else { input };
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
pub(crate) fn kept_per_activated_layer(config: &RunConfig) -> u64 {
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
    let weight_bytes = config.strategies.weight_value_bytes();
    let trained = Trained::of(config, &layers);
    let quantized = QuantizedBody::of(config, &layers);
    // LoRA's factors are f32 by default (and always beside a quantized base); a head trains in
    // the weights' type. Only LoRA has adapters, so they take `trained_bytes`.
    let trained_bytes = config.strategies.trained_value_bytes();
    let params = match &quantized {
        None => param_count * weight_bytes + trained.adapters * trained_bytes,
        Some(body) => {
            body.bytes + (param_count - body.values) * weight_bytes + trained.adapters * F32
        }
    };
    // A llama's rotary tables (cos and sin of every position, f32), built with the model:
    // constants rather than parameters, on the GPU wherever the parameters are (set-up's
    // figure counts them with the weights). Gemma's local layers have a second pair.
    let m = &config.model;
    let rotary_tables = match m.kind.family().builds_a_llama() {
        true => {
            let local =
                m.window > 0 && m.local_rope_theta > 0.0 && m.local_rope_theta != m.rope_theta;
            (1 + u64::from(local)) * 2 * (config.position_rows() * m.head_dim()) as u64 * F32
        }
        false => 0,
    };
    let params = params + rotary_tables;
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
    // f32 adapters beside 16-bit weights are cast to the f16 activations for their products,
    // and those copies are kept for backward (`models::dense`).
    if trained_bytes != weight_bytes {
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
    // What an evaluation reads of the split (`eval_batches`).
    let test_len = config.evaluated_samples(test_len);
    let resident_data = match config.strategies.data_residency {
        DataResidency::Host => 0,
        DataResidency::Device => batch_for(train_len as u64),
    };
    let eval_n = config.eval_batch_size.min(test_len) as u64;
    let eval_logits = eval_n * (per_sample * classes) as u64 * F32;
    // From the second evaluation batch on, a decoder's naive loss leaves the previous batch's
    // log-probabilities alive: its loss and hits are pending in burn's fusion stream when the
    // next forward pass starts (GPT-2 small's evaluation on an H200: 1.5 GiB). Plans follow two
    // batches and show it; an encoder's sliced answers and the fused loss leave nothing that
    // size behind (bench-analytic's grid).
    let pending_logits = if test_len as u64 > eval_n
        && is_decoder(config)
        && config.strategies.cross_entropy == OpPath::Naive
    {
        eval_logits
    } else {
        0
    };
    // Without a graph the layers' working set is gone by the time the loss runs: the loss holds
    // the logits, their log-softmax and one more logit-sized temporary (GPT-2's 50k-word
    // vocabulary makes that the evaluation's peak).
    let eval_work = EvalWork {
        batch: batch_for(eval_n),
        pending: pending_logits,
        layers: inference_bytes(config, eval_n) + dequantized,
        loss: match config.strategies.cross_entropy {
            // An encoder's answers are a slice of its logits, copied before the loss.
            OpPath::Naive if !is_decoder(config) => 3 * eval_logits,
            // A decoder's loss takes its logits whole: the log-softmax replaces them.
            OpPath::Naive => eval_logits,
            // The fused loss reads the logits a block of rows at a time: two block-sized
            // temporaries beside them, but one for a decoder's logits that are a single
            // block (fitted to plans: two overshot sort-llama's 16 x 256-token evaluation,
            // 86.16 MiB against 68.74, once fused attention's scores no longer set that
            // evaluation's mark; a 4,096-word encoder's sliced answers, 198.87 MiB, need two).
            OpPath::Fused if is_decoder(config) && loss_block(eval_logits) == eval_logits => {
                2 * eval_logits
            }
            OpPath::Fused => eval_logits + 2 * loss_block(eval_logits),
        },
    };
    let eval_batch = match config.strategies.eval_mode {
        // Evaluating through autodiff keeps a training-sized graph for every eval batch.
        EvalMode::Autodiff => {
            eval_work.batch
                + eval_work.pending
                + eval_logits
                + layers_for(config, eval_n)
                    .iter()
                    .map(|l| l.activation_bytes)
                    .sum::<u64>()
        }
        EvalMode::NoGrad => {
            eval_work.batch + eval_work.pending + eval_work.layers.max(eval_work.loss)
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
    let mut prediction = MemoryPrediction {
        param_count,
        trainable_count: trained.values,
        params,
        grads,
        optimizer_state,
        activations,
        batch,
        resident_data,
        eval_batch,
        eval_resident: 0,
        constants: rotary_tables,
        peak,
        leak_per_step,
        layers,
    };
    if config.gpus > 1 {
        match config.strategies.sharding {
            Sharding::None => data_parallel(&mut prediction, None),
            Sharding::Optimizer => data_parallel(&mut prediction, Some(config.gpus as u64)),
            Sharding::Gradients | Sharding::Full => {}
        }
    }
    if config.cuts_into_shards() {
        // Mixed precision gathers f32 shards as f16 (FSDP2's MixedPrecisionPolicy), and keeps
        // no f16 copy of the whole model.
        let gathered_bytes = match config.strategies.mixed_precision {
            MixedPrecision::F16 => {
                prediction.activations = prediction
                    .activations
                    .saturating_sub(prediction.param_count * 2);
                2
            }
            _ => weight_bytes,
        };
        // Backward starts with the loss's and the head's gradients (of the gathered head, in
        // the type it was gathered in), before any shard's gradient exists; each block's
        // working set comes beside the shard gradients made.
        let head = head_grads / weight_bytes.max(1) * gathered_bytes;
        let working = Working {
            start: head.max(loss_backward),
            head,
            block: working_set,
        };
        let held = Held {
            every_weight: config.strategies.trainable == Trainable::All,
            every_block: config.strategies.sharding == Sharding::Gradients,
            optimizer_on_host: config.strategies.offload == Offload::Optimizer,
            params_on_host: config.strategies.offload == Offload::Parameters,
        };
        let eval = match config.strategies.eval_mode {
            EvalMode::NoGrad => Some(eval_work),
            EvalMode::Autodiff => None,
        };
        shard(
            &mut prediction,
            config.gpus as u64,
            gathered_bytes,
            quantized.as_ref(),
            working,
            held,
            eval,
        );
    }
    prediction
}

/// One GPU of a data-parallel run (`strategies.sharding = none` above one GPU): the whole run,
/// DDP's gradient buckets (a copy of the trained gradients) from set-up on, and AdamW's
/// foreach step's temporary the size of the trained parameters beside the gradients. With
/// ZeRO-1 over `zero` GPUs (`optimizer`) the optimizer's state and the step's temporary are
/// a GPU's share (about 1/N: the partition keeps parameters whole).
fn data_parallel(p: &mut MemoryPrediction, zero: Option<u64>) {
    let buckets = p.grads;
    let saved = zero.map_or(0, |gpus| {
        p.optimizer_state - p.optimizer_state.div_ceil(gpus)
    });
    p.optimizer_state -= saved;
    let temporary = zero.map_or(p.grads, |gpus| p.grads.div_ceil(gpus));
    let resident = p.params + p.optimizer_state + p.resident_data + buckets;
    let step = resident + p.grads + temporary;
    p.peak = (p.peak + buckets - saved).max(step);
    p.eval_resident += buckets;
    // The gradient category holds the buckets beside the gradients.
    p.grads += buckets;
}

/// Backward's working set beyond what it keeps: at its start (the loss's and the head's
/// gradients, the head's held to the end of backward, where the root's are reduce-scattered)
/// and in each block's recomputation.
struct Working {
    start: u64,
    head: u64,
    block: u64,
}

/// A no-grad evaluation batch's terms: the batch, what the batch before it left pending, the
/// layers' working set (with a quantized weight's dequantized copy) and the loss's.
#[derive(Clone, Copy)]
struct EvalWork {
    batch: u64,
    pending: u64,
    layers: u64,
    loss: u64,
}

/// What a sharded run holds gathered while backward runs, beside the root's parameters.
struct Held {
    /// Every weight trains: the last reduce-scatter's input is a block's size.
    every_weight: bool,
    /// SHARD_GRAD_OP: every block stays gathered from its forward pass to its backward.
    every_block: bool,
    /// `offload = optimizer`: gradients leave after their reduce-scatter, the state and the
    /// step are the host's.
    optimizer_on_host: bool,
    /// `offload = parameters`: the shards too; the GPU holds what is gathered and the working
    /// set.
    params_on_host: bool,
}

/// One GPU's share of a sharded run (`strategies.sharding = full` or `gradients`, with
/// per-layer checkpointing): parameters, gradients and optimizer state a shard each (padding
/// left out), beside what is gathered while backward runs (the root's parameters; the block
/// being recomputed and the one before it gathered ahead, or with SHARD_GRAD_OP every block; and
/// the last reduce-scatter's input) and backward's working set as unsharded. AdamW's foreach step
/// adds a temporary the size of the local trained parameters.
///
/// A quantized base's matrices are gathered as they are stored (packed words and block scales),
/// and their scales are kept whole on every GPU beside the sharded codes (bitsandbytes' quant
/// state under FSDP-QLoRA).
fn shard(
    p: &mut MemoryPrediction,
    gpus: u64,
    weight_bytes: u64,
    quantized: Option<&QuantizedBody>,
    working: Working,
    held: Held,
    eval: Option<EvalWork>,
) {
    let blocks = p.layers.iter().filter(|l| l.block).map(|l| l.params);
    let block_values = blocks.clone().max().unwrap_or(0);
    let block_count = blocks.clone().count() as u64;
    let body_values = blocks.sum::<u64>();
    let root_values = p.param_count - body_values;
    // A block gathered: its quantized matrices as stored, the rest in `weight_bytes`.
    let block_bytes = match quantized {
        Some(q) => (block_values - q.block_values) * weight_bytes + q.block_bytes,
        None => block_values * weight_bytes,
    };
    let replicated = quantized.map_or(0, |q| q.scale_bytes);
    p.params = (p.params - p.constants - replicated).div_ceil(gpus) + p.constants + replicated;
    p.grads = p.grads.div_ceil(gpus);
    p.optimizer_state = p.optimizer_state.div_ceil(gpus);
    if held.optimizer_on_host || held.params_on_host {
        p.grads = 0;
        p.optimizer_state = 0;
    }
    if held.params_on_host {
        p.params = p.constants;
    }
    let resident = p.params + p.optimizer_state + p.resident_data;
    // Kept from forward to the end of backward, as activations are (and counted with them):
    // the root's gathered parameters, and under SHARD_GRAD_OP every gathered block.
    let kept_blocks = if held.every_block { block_count } else { 0 };
    p.activations += root_values * weight_bytes + kept_blocks * block_bytes;
    let reduce_input = if held.every_weight { block_values } else { 0 };
    let blocks_gathered = if held.every_block { 0 } else { 2 };
    let gathered = blocks_gathered * block_bytes + reduce_input * weight_bytes;
    // Under SHARD_GRAD_OP each block's gathered parameters go as its backward ends, faster
    // than shard gradients come: the mark is the first block's, every block still gathered and
    // one block's gradients made (the root's come with the loss's, in `working.start`).
    let made = match held.every_block {
        true => p
            .grads
            .div_ceil(p.layers.iter().filter(|l| l.block).count().max(1) as u64),
        false => p.grads,
    };
    // Backward begins at the loss, before any block is gathered again for its recomputation
    // (fitted to plans: a sharded LoRA run's mark is there, its blocks' working sets small).
    let recomputing = working.head + gathered + made + working.block;
    let backward = p.activations + working.start.max(recomputing);
    let step = resident + 2 * p.grads;
    p.eval_resident = root_values * weight_bytes;
    match eval {
        // A no-grad evaluation holds the root gathered throughout, a block gathered with its
        // layers' working set, and at the loss no block; nothing of the batch before it is
        // left pending (fitted to plans: bench-analytic's sharded rows).
        Some(work) => p.eval_batch = work.batch + (block_bytes + work.layers).max(work.loss),
        None => p.eval_batch += block_bytes,
    }
    let eval = resident + p.eval_batch + p.eval_resident;
    p.peak = (resident + p.batch + backward).max(step).max(eval);
}

/// A quantized base's body (`weight_dtype` = `q4`, `q8`): the matrices LoRA would adapt, less
/// the output layer's, that the format's blocks tile (the others stay 16-bit), as
/// `weight_dtype::quantize_body` stores them.
struct QuantizedBody {
    values: u64,
    /// Packed words and scales.
    bytes: u64,
    /// Of which the scales.
    scale_bytes: u64,
    /// Values of the largest such matrix.
    largest: u64,
    /// The quantized values and bytes of the largest block (a transformer or llama block).
    block_values: u64,
    block_bytes: u64,
}

impl QuantizedBody {
    fn of(config: &RunConfig, layers: &[LayerEstimate]) -> Option<Self> {
        let format = BlockFormat::of(config.strategies.weight_dtype, true)?;
        let mut body = Self {
            values: 0,
            bytes: 0,
            scale_bytes: 0,
            largest: 0,
            block_values: 0,
            block_bytes: 0,
        };
        let mut largest_block = 0;
        for layer in layers.iter().filter(|l| !l.head) {
            let (mut values_here, mut bytes_here) = (0, 0);
            for &[d_in, d_out] in &layer.adapted {
                let (d_in, d_out) = (d_in as usize, d_out as usize);
                if format.tile(d_in, d_out).is_none() {
                    continue;
                }
                let (packed, scales) = format.matrix_bytes(d_in, d_out);
                let values = (d_in * d_out) as u64;
                body.values += values;
                body.bytes += packed + scales;
                body.scale_bytes += scales;
                body.largest = body.largest.max(values);
                values_here += values;
                bytes_here += packed + scales;
            }
            if layer.block && layer.params > largest_block {
                largest_block = layer.params;
                body.block_values = values_here;
                body.block_bytes = bytes_here;
            }
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
        config
            .model
            .kind
            .family()
            .lora_branch_gradient(config, layers, b)
    }

    /// `adamw8bit`'s two moments, tensor by tensor (`engine::train::adamw8bit`).
    fn adamw8bit_bytes(&self) -> u64 {
        self.tensors
            .iter()
            .map(|dims| layout::state_bytes(dims.iter().product()))
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
    let bytes = config.model.kind.family().inference_bytes(config, n);
    // Computed in f16 where the training is (as `layers_for` halves what training keeps).
    match config.strategies.training_precision() {
        MixedPrecision::Off => bytes,
        _ => bytes / 2,
    }
}

/// What backward holds beside every activation before any is freed, for a micro-batch of `b`:
/// the gradients of the last layers' outputs, as each family fits them to plans (`vramlab
/// bench-analytic`).
fn backward_working_set(config: &RunConfig, b: u64) -> u64 {
    config.model.kind.family().backward_working_set(config, b)
}

/// `bytes` of gradients in the dtype the activations were computed in.
pub(crate) fn in_gradient_dtype(config: &RunConfig, bytes: u64) -> u64 {
    match config.strategies.training_precision() {
        MixedPrecision::Off => bytes,
        _ => bytes / 2,
    }
}

/// What a sequence model's classifier and loss keep for backward: one logit tensor over the
/// answer's positions (`seq_len`, not the whole input). Planned with a 50,000-word vocabulary
/// (GRU) and GPT-2's 50,257, where the logits are most of the activations.
pub(crate) fn sequence_logits_kept(config: &RunConfig, classes: usize, b: u64) -> u64 {
    b * config.data.seq_len as u64 * classes as u64 * F32
}
