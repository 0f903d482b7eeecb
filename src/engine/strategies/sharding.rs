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
//! - `none` above one GPU: data parallel as PyTorch's `DistributedDataParallel` runs it with its
//!   defaults (`bucket_cap_mb=25`, a first bucket of 1 MiB, `gradient_as_bucket_view=False`,
//!   `find_unused_parameters=False`): each GPU holds the whole run, and beside it the flat
//!   gradient buckets DDP keeps for the run (each trained parameter's gradient is copied into
//!   its bucket, all-reduced there and copied back, so they are a second copy of the
//!   gradients). Planned as DDP keeps them once it has rebuilt them after the first backward:
//!   1 MiB, then 25 MiB, in the order gradients came (the model's reversed, here), from set-up
//!   on; the one bucket a type it allocates when it wraps the model, for the first step, is not
//!   (a single allocation the gradients' size: the same bytes, other pages). With AdamW's
//!   foreach temporary over the step as above.
//! - `optimizer` (ZeRO-1) as PyTorch runs it: data parallel as above with its optimizer wrapped
//!   in `ZeroRedundancyOptimizer`, which gives each GPU whole trained parameters (sorted by
//!   size, largest first, each to the GPU holding the fewest values so far) whose optimizer
//!   state it keeps and whose update it computes, then broadcasts. The plan is the GPU whose
//!   share is largest: its state, and the foreach temporary of its share; every gradient stays
//!   alive over the step (they are freed at the next `zero_grad`).
//!
//! At one GPU nothing is sharded: every sharding is the unsharded run to the byte. Sharded runs
//! are planned and never run (no collective on wgpu), so `vramlab train` refuses `gpus` above 1.
//! - Mixed precision (`mixed_precision = f16` over f32 weights) under `full` or `gradients`:
//!   FSDP2's `MixedPrecisionPolicy(param_dtype=bf16)` with f16 standing in for bf16 (the same
//!   bytes). Shards, their gradients and the optimizer state stay f32; each gather casts the
//!   shard to f16 (a transient shard-size copy, the all-gather's input) and gathers in f16;
//!   gradients are reduce-scattered in f16 (`reduce_dtype` defaults to `param_dtype`) and cast
//!   to f32 shards. No f16 copy of the model is kept beside the shards. The loss scaler of
//!   `f16` stays (bf16 runs need none; its unscaling is one shard-size temporary at a time).
//!
//! - `offload = optimizer` under `full` or `gradients` (DeepSpeed's `offload_optimizer` over
//!   ZeRO-3 or ZeRO-2, as ZeRO-Offload lays it out): each gradient shard leaves the GPU once
//!   reduce-scattered (the reduce-scatter's buffers are still the GPU's), the optimizer steps
//!   on the host over an f32 copy of the shards, and the updated values are copied back into
//!   the GPU's shards in place. The GPU keeps no gradient past its reduce-scatter, no optimizer
//!   state and no step temporary; the host's 16 bytes a trained shard value are computed.
//!
//! - A quantized base (`weight_dtype` = `q4`, `q8`) under `full` or `gradients`: QLoRA under
//!   FSDP as FSDP-QLoRA runs it (bitsandbytes' codes in a 16-bit storage type, so FSDP cuts
//!   them like any weight): each GPU keeps its shard of each body matrix's packed codes and the
//!   matrix's whole quant state (its block scales), gathers a block's matrices whole and
//!   quantized before it runs, and each product dequantizes its weight into a 16-bit temporary
//!   as unsharded QLoRA does (`ops::shard`, `weight_dtype::quantize_shards`).
//!
//! What is not built yet is refused by name: sharding without per-layer checkpointing,
//! families other than the llama's and mixtures of experts.

use std::collections::HashSet;
use std::sync::Arc;

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{DType, Device, FloatDType, Tensor};
use serde::{Deserialize, Serialize};

use crate::engine::config::{
    Checkpointing, Kernels, MixedPrecision, Offload, OptimizerKind, RunConfig, Sharding as Mode,
    WeightDtype,
};
use crate::engine::device::Gpu;
use crate::engine::error::ConfigError;
use crate::engine::layout::BlockFormat;
use crate::engine::models::Model;
use crate::engine::ops::shard::{Layout, Layouts, Moves, Replicated, Shards};

use crate::engine::error::EngineError;
use crate::engine::memory::meter::Meter;
use crate::engine::outcome::Site;
use crate::engine::phase::Phase;

use super::weight_dtype::{QuantizedWeights, quantize_shards};
use super::{Report, Setup, Strategy};

/// What one GPU's plan holds of a run over several GPUs, for the report: sharded, or data
/// parallel (`mode` none: every value whole on every GPU).
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
    /// ZeRO-1: the trained values whose optimizer state this GPU keeps (its share).
    #[serde(default)]
    pub optimizer_values: u64,
    /// Values that train, whole: gradients and optimizer state are sharded over these.
    #[serde(default)]
    pub trained_values: u64,
    /// A quantized base's sharded matrices: their values, whole, and their packed codes' bytes
    /// (what their all-gathers move: the quant state stays whole on every GPU).
    #[serde(default)]
    pub quantized_values: u64,
    #[serde(default)]
    pub quantized_codes_bytes: u64,
}

impl ShardedRun {
    /// Bytes each GPU sends, and as many it receives, in one training pass of weights of
    /// `weight_bytes` a value and trained values (LoRA's factors, or the weights) of
    /// `trained_bytes`, computed (not measured) for ring collectives, which move (N - 1) / N of
    /// a collective's full size through each GPU: the all-gather of every parameter in forward,
    /// of every block's again for backward (the root's stay gathered), and the reduce-scatter
    /// of every trained one's gradient.
    pub fn traffic_bytes(&self, weight_bytes: u64, trained_bytes: u64) -> u64 {
        let ring = |bytes: u64| bytes * (self.gpus as u64 - 1) / self.gpus as u64;
        match self.mode {
            // Data parallel: every trained gradient all-reduced, a reduce-scatter and an
            // all-gather of it.
            Mode::None => return ring(2 * self.trained_values * trained_bytes),
            // ZeRO-1 beside it: each share's updated parameters broadcast to the others.
            Mode::Optimizer => return ring(3 * self.trained_values * trained_bytes),
            Mode::Gradients | Mode::Full => {}
        }
        ring(self.pass_bytes(weight_bytes, trained_bytes))
    }

    /// Bytes each GPU copies from the host and back in one training pass under `offload =
    /// parameters`, computed: its share of every shard copied to the GPU before its gather,
    /// and of each trained gradient back.
    pub fn offload_traffic_bytes(&self, weight_bytes: u64, trained_bytes: u64) -> u64 {
        self.pass_bytes(weight_bytes, trained_bytes)
            .div_ceil(self.gpus as u64)
    }

    /// What a fully sharded training pass gathers and reduces, whole: every parameter in
    /// forward, every block's again for backward (the root's stay gathered), and every trained
    /// gradient.
    fn pass_bytes(&self, weight_bytes: u64, trained_bytes: u64) -> u64 {
        // A quantized base's matrices sit in the blocks: gathered twice, as their codes.
        let float_values = 2 * (self.model_values - self.quantized_values) - self.root_values;
        let weights = float_values * weight_bytes + 2 * self.quantized_codes_bytes;
        // Adapters sit on the blocks' matrices: gathered for forward and again for backward.
        let adapters = 2 * self.adapter_values * trained_bytes;
        let reduced = self.trained_values * trained_bytes;
        weights + adapters + reduced
    }
}

pub struct Sharding {
    mode: Mode,
    gpus: usize,
    /// The layouts of the cut model, until the model is final.
    layouts: Option<Layouts>,
    shards: Option<Arc<Shards>>,
    /// Data parallel's gradient buckets, kept for the run.
    buckets: Vec<Tensor<1>>,
    replicated: Option<ShardedRun>,
    /// ZeRO-1: the trained parameters whose optimizer state this GPU keeps, and the other
    /// gradients, held over the step.
    local: Option<HashSet<ParamId>>,
    others: Vec<Tensor<1>>,
    /// f16 compute over f32 shards (`mixed_precision = f16`): gathered and reduced in f16.
    gather_dtype: Option<FloatDType>,
    /// The model is cut into this GPU's shards (`RunConfig::cuts_into_shards`).
    cuts: bool,
    /// `offload = optimizer` or `parameters`: gradients leave for the host, whose optimizer
    /// steps the shards.
    steps_on_host: bool,
    /// `offload = parameters`: the device holding the shards in the host's place, and the
    /// GPU each gather copies them to.
    host: Option<(Device, Device)>,
    /// The root's own parameter values, whole.
    root_values: usize,
    /// A quantized base's format (`weight_dtype` = `q4`, `q8`), whose shards are quantized here
    /// as the model is cut; what they store, whole; and the quant state every GPU keeps whole.
    quantized_format: Option<BlockFormat>,
    quantized: Option<QuantizedWeights>,
    quant_state: Replicated,
}

impl Sharding {
    /// `host`: the device standing in for the host's memory under `offload = parameters`.
    pub fn new(config: &RunConfig, gpu: &Gpu, host: Option<Device>) -> Self {
        let adapter = &gpu.adapter;
        Self {
            mode: config.strategies.sharding,
            gpus: config.gpus,
            layouts: None,
            shards: None,
            buckets: Vec::new(),
            replicated: None,
            local: None,
            others: Vec::new(),
            // As the run computes: f32 where the adapter has no shader-f16.
            gather_dtype: (super::mixed_precision::in_effect(config, adapter)
                == MixedPrecision::F16)
                .then_some(FloatDType::F16),
            cuts: config.cuts_into_shards(),
            steps_on_host: matches!(
                config.strategies.offload,
                Offload::Optimizer | Offload::Parameters
            ),
            host: host.map(|host| (host, gpu.device.clone())),
            root_values: 0,
            quantized_format: BlockFormat::of(config.strategies.weight_dtype, adapter.shader_f16),
            quantized: None,
            quant_state: Replicated::default(),
        }
    }

    /// Data parallel (ZeRO-1 too): every GPU holds the whole model.
    fn data_parallel(&self) -> bool {
        matches!(self.mode, Mode::None | Mode::Optimizer) && self.gpus > 1
    }
}

/// What the host keeps for each trained value of a GPU's shard under `offload = optimizer`, as
/// ZeRO-Offload lays it out: an f32 copy of the parameter (the optimizer steps it there), its
/// f32 gradient and AdamW's two f32 moments.
pub const HOST_BYTES_A_TRAINED_VALUE: u64 = 16;

/// What the host keeps of one parameter's shard under `offload = parameters` (FSDP2's
/// `CPUOffloadPolicy`, whose CPU optimizer steps the shards there): the shard in its stored type
/// and, when it trains, its gradient and AdamW's two moments in that type too (as PyTorch's
/// `zeros_like` makes them). Computed from the shard's count, not read from an allocator. A
/// quantized base's shard is frozen: its packed codes and scales, and the rest of its matrix's
/// scales (bitsandbytes' quant state, kept whole with the shards).
pub fn host_bytes_of_shard(layout: &Layout) -> u64 {
    if let Some(packed) = &layout.packed {
        return packed.shard_bytes + packed.replicated_bytes;
    }
    let copies = if layout.trains { 4 } else { 1 };
    layout.shard_values() as u64 * DType::from(layout.dtype).size() as u64 * copies
}

/// DDP's default bucket caps: the first bucket's (`dist._DEFAULT_FIRST_BUCKET_BYTES`), then
/// `bucket_cap_mb`'s.
const FIRST_BUCKET_BYTES: u64 = 1 << 20;
const BUCKET_BYTES: u64 = 25 << 20;

/// One of DDP's gradient buckets: its values and their type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Bucket {
    pub values: usize,
    pub dtype: DType,
}

/// `_compute_bucket_assignment_by_size` over `(values, dtype)` in the order given: one bucket
/// open per type, a parameter added to its type's, which closes once it holds at least its cap
/// (a type's buckets take `caps` in turn, the last repeating); the open ones close at the end.
/// Each bucket with its first parameter's index, in the order they closed.
fn assign_buckets(params: &[(usize, DType)], caps: &[u64]) -> Vec<(usize, Bucket)> {
    /// The bucket a type is filling: where its first parameter is, and how many it closed.
    struct Filling {
        dtype: DType,
        open: Option<(usize, Bucket)>,
        closed: usize,
    }
    let mut closed: Vec<(usize, Bucket)> = Vec::new();
    let mut filling: Vec<Filling> = Vec::new();
    for (index, &(values, dtype)) in params.iter().enumerate() {
        let slot = match filling.iter().position(|f| f.dtype == dtype) {
            Some(slot) => slot,
            None => {
                filling.push(Filling {
                    dtype,
                    open: None,
                    closed: 0,
                });
                filling.len() - 1
            }
        };
        let f = &mut filling[slot];
        let (_, held) = f.open.get_or_insert((index, Bucket { values: 0, dtype }));
        held.values += values;
        let cap = caps[f.closed.min(caps.len() - 1)];
        if (held.values * dtype.size()) as u64 >= cap {
            closed.push(f.open.take().expect("a bucket was just filled"));
            f.closed += 1;
        }
    }
    closed.extend(filling.into_iter().filter_map(|f| f.open));
    closed
}

/// The buckets DDP rebuilds after the first backward (`Reducer::rebuild_buckets`) and keeps,
/// from the trained parameters' `(values, dtype)` in the model's order: in the order the
/// gradients came, taken here as the model's reversed (backward's), the first bucket a type
/// fills capped at 1 MiB, the next at 25 MiB, as they close.
pub(crate) fn ddp_buckets_rebuilt(params: &[(usize, DType)]) -> Vec<Bucket> {
    let ready: Vec<(usize, DType)> = params.iter().rev().copied().collect();
    assign_buckets(&ready, &[FIRST_BUCKET_BYTES, BUCKET_BYTES])
        .into_iter()
        .map(|(_, bucket)| bucket)
        .collect()
}

/// Each bucket as one allocation on `device`.
fn allocate(buckets: Vec<Bucket>, device: &Device) -> Vec<Tensor<1>> {
    buckets
        .into_iter()
        .map(|bucket| Tensor::zeros([bucket.values], (device, bucket.dtype)))
        .collect()
}

/// `ZeroRedundancyOptimizer`'s partition of trained parameters (`(id, values)` in the model's
/// order) over `gpus`: sorted by values, largest first (a stable sort), each to the GPU
/// holding the fewest values so far (the first such). The largest share's parameters: the GPU a
/// per-GPU plan must fit.
pub(crate) fn zero_share<Id: Copy>(params: &[(Id, usize)], gpus: usize) -> Vec<Id> {
    let mut sorted: Vec<&(Id, usize)> = params.iter().collect();
    sorted.sort_by_key(|(_, values)| std::cmp::Reverse(*values));
    let mut shares: Vec<(usize, Vec<Id>)> = vec![(0, Vec::new()); gpus];
    for &&(id, values) in &sorted {
        let fewest = (0..gpus)
            .min_by_key(|&gpu| shares[gpu].0)
            .expect("at least one GPU");
        shares[fewest].0 += values;
        shares[fewest].1.push(id);
    }
    let largest = (0..gpus)
        .max_by_key(|&gpu| (shares[gpu].0, std::cmp::Reverse(gpu)))
        .expect("at least one GPU");
    std::mem::take(&mut shares[largest].1)
}

impl Strategy for Sharding {
    fn prepare_model(&mut self, model: Model) -> Model {
        if !self.cuts || model.root_values().is_none() {
            return model;
        }
        // Counted whole before the cut: the report's and the traffic's figure.
        self.root_values = model.root_values().unwrap_or(0);
        let host = self.host.as_ref().map(|(host, _)| host.clone());
        let (model, mut layouts) = Shards::cut(model, self.gpus, host);
        let model = match self.quantized_format {
            Some(format) => {
                let (model, stored) =
                    quantize_shards(model, format, &mut layouts, self.gpus, &self.quant_state);
                self.quantized = Some(stored);
                model
            }
            None => model,
        };
        self.layouts = Some(layouts);
        model
    }

    fn finish_model(&mut self, model: Model) -> Model {
        let Some(mut layouts) = self.layouts.take() else {
            return model;
        };
        let mut model = Shards::cut_adapters(model, self.gpus, &mut layouts);
        let shards = Arc::new(Shards::new(
            &model,
            self.gpus,
            layouts,
            Moves {
                reshard_after_forward: self.mode == Mode::Full,
                gather_dtype: self.gather_dtype,
                gradients_to_host: self.steps_on_host,
                gpu: self.host.as_ref().map(|(_, gpu)| gpu.clone()),
            },
        ));
        model.set_shards(shards.clone());
        self.shards = Some(shards);
        model
    }

    fn setup(&mut self, run: &mut Setup<'_>) -> Result<(), EngineError> {
        if !self.data_parallel() {
            return Ok(());
        }
        let mut trained = TrainedParams::default();
        run.model.visit(&mut trained);
        let before = run.meter.peek(Phase::Setup)?;
        self.buckets = allocate(ddp_buckets_rebuilt(&trained.params), run.device);
        let after = run.meter.peek(Phase::Setup)?;
        run.gradient_buckets = after
            .pooled_in_use_bytes
            .saturating_sub(before.pooled_in_use_bytes);
        run.meter
            .check_budget(Phase::Setup, Site::GradientBuckets)?;
        let counts = run.model.trainable_count();
        let mut optimizer_values = counts.trainable;
        if self.mode == Mode::Optimizer {
            let sized: Vec<(ParamId, usize)> = trained
                .ids
                .iter()
                .zip(&trained.params)
                .map(|(&id, &(values, _))| (id, values))
                .collect();
            let local: HashSet<ParamId> = zero_share(&sized, self.gpus).into_iter().collect();
            optimizer_values = sized
                .iter()
                .filter(|(id, _)| local.contains(id))
                .map(|(_, values)| *values as u64)
                .sum();
            self.local = Some(local);
        }
        self.replicated = Some(ShardedRun {
            gpus: self.gpus,
            mode: self.mode,
            shard_values: counts.all,
            model_values: counts.all - counts.adapters,
            root_values: 0,
            adapter_values: counts.adapters,
            trained_values: counts.trainable,
            optimizer_values,
            quantized_values: 0,
            quantized_codes_bytes: 0,
        });
        Ok(())
    }

    fn gradients(
        &mut self,
        mut grads: GradientsParams,
        model: &Model,
    ) -> (GradientsParams, Option<Tensor<1>>) {
        if self.steps_on_host && self.shards.is_some() {
            // The root's shard gradients (made through its gather's autodiff at the end of
            // backward) leave for the host as every block's did: the GPU's optimizer has
            // nothing to step.
            return (GradientsParams::new(), None);
        }
        if let Some(local) = &self.local {
            // ZeRO-1: the optimizer here steps its share; the rest of the gradients stay
            // alive over the step, as PyTorch's do until `zero_grad`.
            let mut others = OthersGradients {
                local,
                grads: &mut grads,
                held: Vec::new(),
            };
            model.visit(&mut others);
            self.others = others.held;
        }
        (grads, None)
    }

    fn end_of_step(&mut self, _meter: &mut Meter, _last_of_epoch: bool) -> Result<(), EngineError> {
        self.others.clear();
        Ok(())
    }

    fn end_of_backward(&mut self) {
        if let Some(shards) = &self.shards {
            shards.end_of_backward();
        }
    }

    fn optimizer_temporaries(&self, model: &Model) -> Vec<Tensor<1>> {
        // Stepped on the host (a CPU step runs tensor by tensor: no foreach temporary).
        if (self.shards.is_none() && !self.data_parallel()) || self.steps_on_host {
            return Vec::new();
        }
        let mut local = LocalValues {
            only: self.local.as_ref(),
            ..LocalValues::default()
        };
        model.visit(&mut local);
        local.into_chunks()
    }

    fn report(&self, report: &mut Report) {
        if let Some(run) = self.replicated {
            report.sharded = Some(run);
            return;
        }
        let Some(shards) = &self.shards else {
            return;
        };
        let mut run = ShardedRun {
            gpus: self.gpus,
            mode: self.mode,
            shard_values: 0,
            model_values: 0,
            root_values: self.root_values as u64,
            adapter_values: 0,
            trained_values: 0,
            optimizer_values: 0,
            quantized_values: 0,
            quantized_codes_bytes: 0,
        };
        if self.quantized.is_some() {
            report.quantized = self.quantized;
        }
        for layout in shards.layouts() {
            let full = layout.full_values() as u64;
            run.shard_values += layout.shard_values() as u64;
            if let Some(packed) = &layout.packed {
                run.quantized_values += full;
                run.quantized_codes_bytes += packed.codes_bytes;
            }
            match layout.adapter {
                true => run.adapter_values += full,
                false => run.model_values += full,
            }
            if layout.trains {
                run.trained_values += full;
                run.optimizer_values += layout.shard_values() as u64;
            }
        }
        // The host holds every shard (`parameters`), or the optimizer's copy of the trained
        // ones (`optimizer`).
        if self.host.is_some() {
            report.host_bytes = Some(shards.layouts().map(host_bytes_of_shard).sum());
        } else if self.steps_on_host {
            report.host_bytes = Some(run.optimizer_values * HOST_BYTES_A_TRAINED_VALUE);
        }
        report.sharded = Some(run);
    }
}

/// The local parameters as rows of values, a chunk at a time: together the size of AdamW's
/// foreach temporary. PyTorch's is one tensor per parameter; chunks of about
/// [`CHUNK_VALUES`] stand for them, each a copy (`cat` allocates its output, which an
/// element-wise copy fusion could elide would not), none too large for one binding.
#[derive(Default)]
struct LocalValues<'a> {
    chunks: Vec<Vec<Tensor<1>>>,
    in_last: usize,
    /// ZeRO-1: the parameters this GPU steps (every trained one otherwise).
    only: Option<&'a HashSet<ParamId>>,
}

/// 256 MiB of f32 values.
const CHUNK_VALUES: usize = 64 << 20;

impl LocalValues<'_> {
    fn into_chunks(self) -> Vec<Tensor<1>> {
        self.chunks
            .into_iter()
            .map(|chunk| Tensor::cat(chunk, 0))
            .collect()
    }
}

impl ModuleVisitor for LocalValues<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        // `base`: a LoRA base's stored shard (frozen: no state, no temporary).
        let value = param.base();
        if !value.is_require_grad() || self.only.is_some_and(|only| !only.contains(&param.id)) {
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

/// What data parallel (`sharding = none` above one GPU) refuses: what its plan would not hold
/// as a PyTorch run holds it.
fn check_data_parallel(config: &RunConfig) -> Result<(), ConfigError> {
    if !matches!(config.optimizer, OptimizerKind::Adam | OptimizerKind::Adamw) {
        return Err(ConfigError::invalid(
            "optimizer",
            "data parallel and ZeRO-1 (sharding = none or optimizer above one GPU) are planned \
             with adam or adamw (the foreach step PyTorch runs)",
        ));
    }
    if config.strategies.kernels == Kernels::Fused {
        return Err(ConfigError::invalid(
            "strategies.kernels",
            "data parallel and ZeRO-1 (sharding = none or optimizer above one GPU) are planned \
             over burn's kernels (burn), where the foreach step's temporaries are held; fused \
             steps in vramlab's own kernel",
        ));
    }
    Ok(())
}

/// ZeRO-1: takes the gradients of the parameters another GPU steps out of `grads`, holding
/// them (flattened: the same buffers).
struct OthersGradients<'a> {
    local: &'a HashSet<ParamId>,
    grads: &'a mut GradientsParams,
    held: Vec<Tensor<1>>,
}

impl ModuleVisitor for OthersGradients<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if self.local.contains(&param.id) {
            return;
        }
        if let Some(grad) = self.grads.remove::<D>(param.id) {
            let values = grad.shape().num_elements();
            self.held.push(grad.reshape([values]));
        }
    }
}

/// The trained parameters' ids, values and types in the model's order (as `model.parameters()`
/// lists them): what DDP buckets and ZeRO-1 partitions. The model's counts are
/// [`Model::trainable_count`]'s.
#[derive(Default)]
struct TrainedParams {
    params: Vec<(usize, DType)>,
    ids: Vec<ParamId>,
}

impl ModuleVisitor for TrainedParams {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        // `base`: a LoRA base's stored weight (frozen); the adapters come as their own params.
        let value = param.base();
        if value.is_require_grad() {
            self.params
                .push((value.shape().num_elements(), value.dtype()));
            self.ids.push(param.id);
        }
    }
}

/// What `gpus` and `sharding` refuse, naming the field.
pub(crate) fn check(config: &RunConfig) -> Result<(), ConfigError> {
    let s = &config.strategies;
    match s.sharding {
        Mode::None if config.gpus > 1 => return check_data_parallel(config),
        Mode::None => return Ok(()),
        // One GPU holds all of every shard: the unsharded run, whatever else is set, unless
        // its shards live on the host and are gathered to it block by block.
        _ if config.gpus == 1 && s.offload != Offload::Parameters => return Ok(()),
        Mode::Optimizer => return check_data_parallel(config),
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
    if s.mixed_precision == MixedPrecision::F16Unscaled {
        return refuse(
            "strategies.mixed_precision",
            "f16_unscaled (model.half()) is planned under sharding as weight_dtype = f16, \
             the same run; mixed_precision takes off or f16 (f32 shards gathered in f16, \
             FSDP2's MixedPrecisionPolicy)"
                .into(),
        );
    }
    if s.mixed_precision == MixedPrecision::F16 && s.weight_dtype != WeightDtype::F32 {
        return refuse(
            "strategies.mixed_precision",
            format!(
                "f16 compute is over f32 shards (FSDP2's MixedPrecisionPolicy); weight_dtype = \
                 {} already computes in f16: use off, or weight_dtype = f32",
                s.weight_dtype.name()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddp_rebuilds_its_buckets_to_their_caps_in_backwards_order() {
        let bucket = |values, dtype| Bucket { values, dtype };
        // In the model's order; backward's (the rebuild's) is the reverse. Another type fills
        // buckets of its own.
        let params = [
            (1_000, DType::F32),
            (300_000, DType::F32),
            (2_000_000, DType::F32),
            (5_000_000, DType::F32),
            (100, DType::F16),
            (1_000_000, DType::F32),
        ];
        // Rebuilt from the last parameter on: 4,000,000 B closes f32's first bucket (1 MiB);
        // 5,000,000 + 2,000,000 values pass 25 MiB; the rest close at the end, by type.
        assert_eq!(
            ddp_buckets_rebuilt(&params),
            vec![
                bucket(1_000_000, DType::F32),
                bucket(7_000_000, DType::F32),
                bucket(301_000, DType::F32),
                bucket(100, DType::F16),
            ]
        );
        assert_eq!(ddp_buckets_rebuilt(&[]), vec![]);
    }

    #[test]
    fn zero_shares_go_largest_first_to_the_emptiest_gpu_and_the_plan_takes_the_largest() {
        // Sorted: c 50, a 40, d 30, b 10, e 10. Two GPUs: c to 0; a to 1; d to 1 (40 < 50):
        // 70; b to 0: 60; e to 0: 70. A tie: the first GPU's share.
        let params = [('a', 40), ('b', 10), ('c', 50), ('d', 30), ('e', 10)];
        assert_eq!(zero_share(&params, 2), vec!['c', 'b', 'e']);
        // Three: c, a, d one each; b to d's (30): 40; e to a's (40, as d's: the first).
        assert_eq!(zero_share(&params, 3), vec!['c']);
        assert_eq!(zero_share(&params, 1), vec!['c', 'a', 'd', 'b', 'e']);
    }
}
