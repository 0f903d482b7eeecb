//! `strategies.sharding` with `gpus`: one GPU's share of a run spread over several, as a plan.
//!
//! - `full`: FSDP's FULL_SHARD as FSDP2's `fully_shard` runs it by default, applied to each
//!   block and then to the model (how people wrap a decoder): each GPU keeps a 1/N shard of every
//!   parameter, its gradient and its optimizer state; a block's parameters are all-gathered
//!   before it runs and freed after it, in forward and again for backward's recomputation (the
//!   block before gathered ahead, FSDP2's backward prefetch), and its gradients reduce-scattered;
//!   the root's (token table, final norm, output layer) stay gathered from forward to the end of
//!   backward. The model trained *is* the shard (`ops::shard`), so every category is what the
//!   GPU really holds, from the same allocator as every other plan. Under LoRA the frozen base
//!   is sharded and gathered the same way, and the adapters (built on their bases' shards, then
//!   cut as PEFT's are under FSDP2) are what trains, is reduce-scattered and holds AdamW's
//!   state. Weights stored in f16 are gathered in f16.
//! - `gradients`: FSDP's SHARD_GRAD_OP (FSDP2's `reshard_after_forward=False`): the same
//!   shards, each block kept gathered from its forward pass to its backward.
//! - The optimizer step as PyTorch runs it on a GPU by default (`foreach=True`): AdamW's
//!   multi-tensor step holds one temporary the size of the local parameters (its
//!   `_foreach_sqrt` of the second moments) across the whole step. burn steps tensor by tensor,
//!   so that temporary is allocated here and held over burn's step; burn's own per-tensor
//!   temporaries (the largest shard's) come on top.
//!
//! At one GPU nothing is sharded: every sharding is the unsharded run to the byte. Sharded runs
//! are planned and never run (no collective on wgpu), so `vramlab train` refuses `gpus` above 1.
//! What is not built yet is refused by name: `optimizer` (ZeRO-1), data parallel (`none` above
//! one GPU), sharding without per-layer checkpointing, families other than the llama's, mixtures of
//! experts, f16 compute over f32 weights (FSDP2's MixedPrecisionPolicy) and quantized bases.

use std::sync::Arc;

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

use crate::engine::config::{
    Checkpointing, MixedPrecision, OptimizerKind, RunConfig, Sharding as Mode, WeightDtype,
};
use crate::engine::error::ConfigError;
use crate::engine::models::Model;
use crate::engine::ops::shard::{Layouts, Shards};

use super::{Report, Strategy};

/// What one GPU's plan holds of a sharded run, for the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardedRun {
    pub gpus: usize,
    pub mode: Mode,
    /// Parameter values one GPU keeps (its shards, padding included, adapters too).
    pub shard_values: u64,
    /// The model's own parameter values (LoRA's frozen bases included, its adapters not).
    pub model_values: u64,
    /// Of which the root's own (token table, final norm, output layer), gathered once a step.
    pub root_values: u64,
    /// LoRA adapters' values, whole.
    #[serde(default)]
    pub adapter_values: u64,
    /// Values that train, whole: gradients and optimizer state are sharded over these.
    #[serde(default)]
    pub trained_values: u64,
}

impl ShardedRun {
    /// Bytes each GPU sends, and as many it receives, in one training pass of weights of
    /// `weight_bytes` a value and trained values (LoRA's factors, or the weights) of
    /// `trained_bytes`, computed (not measured) for ring collectives, which move (N - 1) / N of
    /// a collective's full size through each GPU: the all-gather of every parameter in forward,
    /// of every block's again for backward (the root's stay gathered), and the reduce-scatter
    /// of every trained one's gradient.
    pub fn traffic_bytes(&self, weight_bytes: u64, trained_bytes: u64) -> u64 {
        let weights = (2 * self.model_values - self.root_values) * weight_bytes;
        // Adapters sit on the blocks' matrices: gathered for forward and again for backward.
        let adapters = 2 * self.adapter_values * trained_bytes;
        let reduced = self.trained_values * trained_bytes;
        (weights + adapters + reduced) * (self.gpus as u64 - 1) / self.gpus as u64
    }
}

pub struct Sharding {
    mode: Mode,
    gpus: usize,
    /// The layouts of the cut model, until the model is final.
    layouts: Option<Layouts>,
    shards: Option<Arc<Shards>>,
}

impl Sharding {
    pub fn new(config: &RunConfig) -> Self {
        Self {
            mode: config.strategies.sharding,
            gpus: config.gpus,
            layouts: None,
            shards: None,
        }
    }
}

impl Strategy for Sharding {
    fn prepare_model(&mut self, model: Model) -> Model {
        if !self.mode.shards_parameters() || self.gpus < 2 || model.root_values().is_none() {
            return model;
        }
        let (model, layouts) = Shards::cut(model, self.gpus);
        self.layouts = Some(layouts);
        model
    }

    fn finish_model(&mut self, model: Model) -> Model {
        let Some(mut layouts) = self.layouts.take() else {
            return model;
        };
        let mut model = Shards::cut_adapters(model, self.gpus, &mut layouts);
        let root = model.root_values().unwrap_or(0);
        let reshard = self.mode == Mode::Full;
        let shards = Arc::new(Shards::new(&model, self.gpus, layouts, root, reshard));
        model.set_shards(shards.clone());
        self.shards = Some(shards);
        model
    }

    fn end_of_backward(&mut self) {
        if let Some(shards) = &self.shards {
            shards.end_of_backward();
        }
    }

    fn optimizer_temporaries(&self, model: &Model) -> Vec<Tensor<1>> {
        if self.shards.is_none() {
            return Vec::new();
        }
        let mut local = LocalValues::default();
        model.visit(&mut local);
        local.into_chunks()
    }

    fn report(&self, report: &mut Report) {
        let Some(shards) = &self.shards else {
            return;
        };
        let mut run = ShardedRun {
            gpus: self.gpus,
            mode: self.mode,
            shard_values: 0,
            model_values: 0,
            root_values: shards.root_values() as u64,
            adapter_values: 0,
            trained_values: 0,
        };
        for layout in shards.layouts() {
            let full = layout.full_values() as u64;
            run.shard_values += layout.shard_values() as u64;
            match layout.adapter {
                true => run.adapter_values += full,
                false => run.model_values += full,
            }
            if layout.trains {
                run.trained_values += full;
            }
        }
        report.sharded = Some(run);
    }
}

/// The local parameters as rows of values, a chunk at a time: together the size of AdamW's
/// foreach temporary. PyTorch's is one tensor per parameter; chunks of about
/// [`CHUNK_VALUES`] stand for them, each a copy (`cat` allocates its output, which an
/// element-wise copy fusion could elide would not), none too large for one binding.
#[derive(Default)]
struct LocalValues {
    chunks: Vec<Vec<Tensor<1>>>,
    in_last: usize,
}

/// 256 MiB of f32 values.
const CHUNK_VALUES: usize = 64 << 20;

impl LocalValues {
    fn into_chunks(self) -> Vec<Tensor<1>> {
        self.chunks
            .into_iter()
            .map(|chunk| Tensor::cat(chunk, 0))
            .collect()
    }
}

impl ModuleVisitor for LocalValues {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        // `base`: a LoRA base's stored shard (frozen: no state, no temporary).
        let value = param.base();
        if !value.is_require_grad() {
            return;
        }
        let value = value.inner();
        let values = value.shape().num_elements();
        if self.chunks.is_empty() || self.in_last + values > CHUNK_VALUES {
            self.chunks.push(Vec::new());
            self.in_last = 0;
        }
        self.in_last += values;
        let chunk = self.chunks.last_mut().expect("a chunk was just pushed");
        chunk.push(value.reshape([values]));
    }
}

/// What `gpus` and `sharding` refuse, naming the field.
pub(crate) fn check(config: &RunConfig) -> Result<(), ConfigError> {
    let s = &config.strategies;
    match s.sharding {
        Mode::None if config.gpus > 1 => {
            return Err(ConfigError::invalid(
                "strategies.sharding",
                format!(
                    "none with gpus = {} is data parallel (every GPU holds the whole run and \
                     DDP's gradient buckets), which vramlab does not plan yet; full shards \
                     parameters, gradients and optimizer state (FSDP's FULL_SHARD), or plan \
                     one GPU with gpus = 1",
                    config.gpus
                ),
            ));
        }
        Mode::None => return Ok(()),
        // One GPU holds all of every shard: the unsharded run, whatever else is set.
        _ if config.gpus == 1 => return Ok(()),
        Mode::Optimizer => {
            return Err(ConfigError::invalid(
                "strategies.sharding",
                "optimizer (ZeRO-1) is not planned yet; gradients (FSDP's SHARD_GRAD_OP, \
                 ZeRO-2-like) and full (FSDP's FULL_SHARD, ZeRO-3) are, or none",
            ));
        }
        Mode::Full | Mode::Gradients => {}
    }
    let kind = config.model.kind;
    if !kind.family().builds_a_llama() {
        return Err(ConfigError::invalid(
            "strategies.sharding",
            format!(
                "{} is planned for the llama-built families ({}); model.kind = {} is not one \
                 of them",
                s.sharding.name(),
                crate::engine::config::ModelKind::names_where(|family| family.builds_a_llama()),
                kind.name()
            ),
        ));
    }
    let refuse = |field: &str, why: String| Err(ConfigError::invalid(field, why));
    if config.model.experts > 0 {
        return refuse(
            "model.experts",
            "sharding a mixture of experts is not planned yet; dense models are (0)".into(),
        );
    }
    if s.checkpointing != Checkpointing::Layers {
        return refuse(
            "strategies.checkpointing",
            format!(
                "sharding is planned with layers (per-block checkpointing, as sharded \
                 fine-tunes run): without it, burn's ops keep the gathered weights for backward \
                 and a gathered block could not be freed after forward as FSDP frees it; got {}",
                s.checkpointing.name()
            ),
        );
    }
    if !matches!(s.weight_dtype, WeightDtype::F32 | WeightDtype::F16) {
        return refuse(
            "strategies.weight_dtype",
            format!(
                "sharding is planned with f32 or f16 weights; {} is not yet (a quantized \
                 base's blocks would be gathered as FSDP-QLoRA stores them)",
                s.weight_dtype.name()
            ),
        );
    }
    if s.mixed_precision != MixedPrecision::Off {
        return refuse(
            "strategies.mixed_precision",
            format!(
                "{} is not yet (f16 compute over f32 shards: FSDP2's MixedPrecisionPolicy); \
                 sharding is planned with off, the weights in f32 or f16 (weight_dtype)",
                s.mixed_precision.name()
            ),
        );
    }
    if !matches!(config.optimizer, OptimizerKind::Adam | OptimizerKind::Adamw) {
        return refuse(
            "optimizer",
            "sharding is planned with adam or adamw (the foreach step PyTorch runs)".into(),
        );
    }
    Ok(())
}
