//! One GPU's share of a fully sharded run (`strategies.sharding = full`, FSDP's FULL_SHARD as
//! FSDP2 runs it by default), for a plan of that GPU: the model it trains *is* its shard, and
//! every full-size weight it ever holds is a real allocation on the one planning device.
//!
//! - [`ToShards`] turns each parameter into its shard before it exists: the tensor is 1/N of
//!   the parameter along PyTorch's dim 0, padded as FSDP2 pads (`ceil(rows / N)` rows a rank).
//!   burn stores a linear weight as `[in, out]` where PyTorch stores `[out, in]`, so a linear
//!   weight shards along its second dim; an embedding table and a vector along their first.
//!   Gradients and optimizer state then follow the shard's shape, as FSDP2's do.
//! - [`Shards::gather`] is the all-gather: a buffer of the padded full size written from N
//!   copies of the shard (`repeat_dim`, one launch that allocates: a copy fusion could fold
//!   into the matmul that reads it would never be allocated). The collective itself is a no-op that
//!   allocates its output, as PyTorch's fake process group is.
//! - [`Shards::reduce_scatter`] is the gradients' reduce-scatter: one buffer of the block's
//!   padded size (FSDP2's `reduce_scatter_input`), the shard-size output, and the input kept
//!   until the next block's reduce-scatter, as FSDP2 keeps it.
//! - The root's own parameters (the token table, the final norm, the output layer: FSDP2's
//!   `fully_shard(model)` after each block's) are gathered once in forward and kept gathered to
//!   the end of backward ([`Shards::end_of_backward`]).
//!
//! - With the shards on the host (`strategies.offload = parameters`, FSDP2's
//!   `CPUOffloadPolicy`) every parameter's shard is made on a device standing in for the host
//!   (`device::host_stand_in`), which the GPU's pools never see; each gather first copies the
//!   shard to the GPU (a fresh allocation of the shard's size, as FSDP2 copies it before the
//!   all-gather) and gathers from that copy. The host's values are never read.
//! - Under mixed precision each shard is cast to the compute type before its gather (the
//!   all-gather's input, freed once it has run) and gradients are reduce-scattered in that
//!   type, then cast to the shard's, as FSDP2's `MixedPrecisionPolicy` does.
//! - A quantized base's matrix (`weight_dtype` = `q4`, `q8`: QLoRA under FSDP) is sharded as
//!   FSDP-QLoRA shards it ([`Packed`]): each GPU keeps its share of the packed codes (with the
//!   shard's own block scales, cubecl's layout) and the rest of the matrix's scales beside it,
//!   since bitsandbytes keeps a layer's quant state whole on every rank. Its all-gather's output
//!   is the whole matrix quantized, codes and scales in one allocation
//!   (`ops::quantized_buffer`), which each product dequantizes and drops as unsharded QLoRA
//!   does.
//!
//! The values a sharded model computes mean nothing (every rank's shard is this rank's): only
//! shapes, lifetimes and launches do, which is what a dry run follows. Sharded runs are
//! planned, never run.

use std::any::Any;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::tensor::quantization::QuantScheme;
use burn::tensor::{Device, FloatDType, Tensor};

use super::bridge::{Raw, plain, raw};
use super::quantized_buffer;
use super::walk::AdapterDepth;

/// Where one parameter's shard lies in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The parameter's own shape (burn's order).
    pub full: Vec<usize>,
    /// The dim it is cut along (PyTorch's dim 0).
    pub dim: usize,
    /// Its length along `dim` in one shard: `ceil(full[dim] / N)`.
    pub rows: usize,
    /// A LoRA adapter's factor.
    pub adapter: bool,
    /// Whether it trains (known once the model is final: [`Shards::new`]).
    pub trains: bool,
    /// The shard's stored type (known once the model is final), which its gradient takes; a
    /// quantized shard's compute type.
    pub dtype: FloatDType,
    /// A quantized base's matrix: how its shard is stored.
    pub packed: Option<Packed>,
}

/// A matrix of a quantized base as FSDP-QLoRA shards it (bitsandbytes' 4-bit codes in a float
/// storage type, `bnb_4bit_quant_storage`, so that FSDP can cut them): a shard of the codes on
/// each GPU, and the layer's quant state whole on every one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packed {
    /// The blocks the shard and the gathered matrix are quantized in (the shard's rows divide
    /// the matrix's outputs evenly, so its blocks tile both).
    pub scheme: QuantScheme,
    /// This GPU's shard: its packed words and their block scales.
    pub shard_bytes: u64,
    /// The rest of the matrix's block scales, kept whole beside the shard.
    pub replicated_bytes: u64,
    /// The whole matrix's packed words: what its all-gather moves.
    pub codes_bytes: u64,
}

/// What every GPU keeps whole beside its shards, for the run: the rest of each quantized
/// matrix's block scales ([`Packed::replicated_bytes`]), made with the shard they belong to.
#[derive(Clone, Default)]
pub struct Replicated(Arc<Mutex<Vec<Tensor<1>>>>);

impl Replicated {
    pub fn keep(&self, tensor: Tensor<1>) {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(tensor);
    }
}

impl Layout {
    fn new(full: Vec<usize>, dim: usize, ranks: usize) -> Self {
        let rows = full[dim].div_ceil(ranks);
        Self {
            full,
            dim,
            rows,
            adapter: false,
            trains: true,
            dtype: FloatDType::F32,
            packed: None,
        }
    }

    pub fn shard_shape(&self) -> Vec<usize> {
        let mut shape = self.full.clone();
        shape[self.dim] = self.rows;
        shape
    }

    pub fn shard_values(&self) -> usize {
        self.shard_shape().iter().product()
    }

    pub fn full_values(&self) -> usize {
        self.full.iter().product()
    }
}

/// The sharding of one model across `ranks` GPUs, shared by its blocks: each parameter's
/// layout, and the gathered buffers alive between the calls that make and free them.
pub struct Shards {
    ranks: usize,
    moves: Moves,
    layouts: HashMap<ParamId, Layout>,
    held: Mutex<Held>,
}

/// How a sharded run moves its values between what a GPU keeps and what it computes with.
pub struct Moves {
    /// Whether a block is freed after its forward pass (FULL_SHARD) or kept gathered until its
    /// backward (SHARD_GRAD_OP, FSDP2's `reshard_after_forward=False`).
    pub reshard_after_forward: bool,
    /// The type shards are gathered and gradients reduced in when it is not the shards' own
    /// (FSDP2's `MixedPrecisionPolicy(param_dtype)`: f32 shards, 16-bit compute).
    pub gather_dtype: Option<FloatDType>,
    /// Whether each reduce-scattered gradient leaves for the host, where the optimizer steps
    /// (`strategies.offload = optimizer` or `parameters`).
    pub gradients_to_host: bool,
    /// The GPU each gather copies a shard to, when the shards live on the host.
    pub gpu: Option<Device>,
}

/// Buffers that outlive the call that made them.
#[derive(Default)]
struct Held {
    /// A block gathered ahead of its backward (FSDP2's backward prefetch), by block index.
    prefetched: Option<(usize, Box<dyn Any + Send>)>,
    /// The root's gathered parameters, from forward to the end of backward.
    root: Vec<Raw>,
    /// The last reduce-scatter's input, until the next one (or the end of backward).
    reduce_input: Option<Raw>,
}

impl core::fmt::Debug for Shards {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Shards")
            .field("ranks", &self.ranks)
            .field("parameters", &self.layouts.len())
            .finish_non_exhaustive()
    }
}

/// Each sharded parameter's layout, by parameter.
pub type Layouts = HashMap<ParamId, Layout>;

impl Shards {
    /// `model` as one GPU's shard of it across `ranks` GPUs, before its parameters exist (and
    /// before LoRA adapts it: an adapter then builds on its base's shard), and each
    /// parameter's layout. With `host`, every shard is made there (the host's stand-in).
    pub fn cut<M: Module>(model: M, ranks: usize, host: Option<Device>) -> (M, Layouts) {
        let mut cut = ToShards {
            ranks,
            host,
            containers: Vec::new(),
            layouts: HashMap::new(),
        };
        let model = model.map(&mut cut);
        (model, cut.layouts)
    }

    /// `model`'s LoRA adapters, built on its bases' shards, cut as PEFT's are under FSDP2:
    /// `A` (`[d_in, r]`, PyTorch's `lora_A` `[r, d_in]`) cut along its rank, `B` (`[r, d_out]`)
    /// already its base's shard of the outputs. Their layouts join `layouts`.
    pub fn cut_adapters<M: Module>(model: M, ranks: usize, layouts: &mut Layouts) -> M {
        let mut cut = AdaptersToShards {
            ranks,
            layouts,
            adapter: AdapterDepth::default(),
            base: None,
            field: String::new(),
        };
        model.map(&mut cut)
    }

    /// The sharding of the final `model` (its trained parameters read from it), its values
    /// moved as `moves` says.
    pub fn new<M: Module>(model: &M, ranks: usize, mut layouts: Layouts, moves: Moves) -> Self {
        model.visit(&mut MarkTrained(&mut layouts));
        Self {
            ranks,
            moves,
            layouts,
            held: Mutex::default(),
        }
    }

    /// FULL_SHARD frees a block's gathered parameters after its forward pass; SHARD_GRAD_OP
    /// keeps them until its backward.
    pub fn reshards_after_forward(&self) -> bool {
        self.moves.reshard_after_forward
    }

    /// Whether each reduce-scattered gradient leaves the GPU for the host's optimizer.
    pub fn gradients_to_host(&self) -> bool {
        self.moves.gradients_to_host
    }

    /// Every sharded parameter's layout.
    pub fn layouts(&self) -> impl Iterator<Item = &Layout> {
        self.layouts.values()
    }

    fn held(&self) -> MutexGuard<'_, Held> {
        self.held
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// `module` with each sharded parameter all-gathered to its full shape (through autodiff
    /// when the shards are tracked: the gradient then flows back into each shard).
    pub fn gather<M: Module>(&self, module: M) -> M {
        module.map(&mut Gather { shards: self })
    }

    /// The root's own parameters gathered, and held until [`Self::end_of_backward`] when they
    /// are tracked (FSDP2 keeps the root unsharded from forward through backward).
    pub fn gather_root<M: Module>(&self, module: M) -> M {
        let gathered = self.gather(module);
        let mut kept = KeepTracked(Vec::new());
        gathered.visit(&mut kept);
        self.held().root.extend(kept.0);
        gathered
    }

    /// Holds block `index`'s gathered parameters for its backward, which comes next.
    pub fn prefetch<L: Send + 'static>(&self, index: usize, gathered: L) {
        self.held().prefetched = Some((index, Box::new(gathered)));
    }

    /// Block `index`'s gathered parameters, when they were prefetched.
    pub fn take_prefetched<L: 'static>(&self, index: usize) -> Option<L> {
        let mut held = self.held();
        match held.prefetched.take() {
            Some((i, gathered)) if i == index => gathered.downcast::<L>().ok().map(|l| *l),
            other => {
                held.prefetched = other;
                None
            }
        }
    }

    /// A block's full gradients reduce-scattered into its parameters' shard gradients, in
    /// FSDP2's order: the previous reduce-scatter's input freed, one buffer of the block's
    /// padded size written from the full gradients (which are then freed), the shard-size
    /// output taken from it (each rank's share of the sum, averaged), and the input kept until
    /// the next reduce-scatter.
    pub fn reduce_scatter(&self, grads: Vec<(ParamId, Raw)>) -> Vec<(ParamId, Raw)> {
        self.held().reduce_input = None;
        let mut pieces = Vec::with_capacity(grads.len() + 1);
        let mut shards = Vec::with_capacity(grads.len());
        let mut padding = 0;
        for (id, grad) in grads {
            let layout = &self.layouts[&id];
            pieces.push(flat(grad, layout.full.len(), layout.full_values()));
            padding += layout.shard_values() * self.ranks - layout.full_values();
            shards.push((id, layout));
        }
        let Some(device) = pieces.first().map(|piece| piece.device()) else {
            return Vec::new();
        };
        if padding > 0 {
            let dtype = pieces[0].dtype();
            pieces.push(Tensor::zeros([padding], (&device, dtype)));
        }
        let input = Tensor::cat(pieces, 0);
        // Each shard's gradient a tensor of its own, as FSDP2 hands each parameter its own
        // view: a view of one shared output would keep all of it alive for as long as any
        // one gradient (or an optimizer moment written in place of one) lives.
        let scale = 1.0 / self.ranks as f32;
        let mut offset = 0;
        let scattered = shards
            .into_iter()
            .map(|(id, layout)| {
                let values = layout.shard_values();
                let mut piece = input.clone().narrow(0, offset, values).mul_scalar(scale);
                // Reduced in the compute type, the shard's gradient in the shard's (FSDP2
                // casts the reduce-scatter's output to the parameter's own type).
                if self.moves.gather_dtype.is_some() {
                    piece = piece.cast(layout.dtype);
                }
                offset += values;
                (id, shaped(piece, &layout.shard_shape()))
            })
            .collect();
        self.held().reduce_input = Some(raw(input));
        scattered
    }

    /// FSDP2's final callback: the root resharded, the last reduce-scatter's input freed.
    pub fn end_of_backward(&self) {
        let mut held = self.held();
        held.root.clear();
        held.reduce_input = None;
        held.prefetched = None;
    }
}

/// A gradient of any rank as one row of values.
fn flat(grad: Raw, rank: usize, values: usize) -> Tensor<1> {
    match rank {
        1 => plain::<1>(grad),
        2 => plain::<2>(grad).reshape([values]),
        3 => plain::<3>(grad).reshape([values]),
        4 => plain::<4>(grad).reshape([values]),
        _ => unreachable!("parameters have one to four dims"),
    }
}

/// A row of values in `shape`.
fn shaped(values: Tensor<1>, shape: &[usize]) -> Raw {
    match *shape {
        [a] => raw(values.reshape([a])),
        [a, b] => raw(values.reshape([a, b])),
        [a, b, c] => raw(values.reshape([a, b, c])),
        [a, b, c, d] => raw(values.reshape([a, b, c, d])),
        _ => unreachable!("parameters have one to four dims"),
    }
}

/// Cuts each float parameter to its shard, lazily: the full parameter never exists.
struct ToShards {
    ranks: usize,
    /// Where the shards are made in the host's place (`offload = parameters`).
    host: Option<Device>,
    /// The modules entered, innermost last: an embedding's table shards along its rows.
    containers: Vec<String>,
    layouts: HashMap<ParamId, Layout>,
}

impl ModuleMapper for ToShards {
    fn enter_module(&mut self, _name: &str, container_type: &str) {
        self.containers.push(container_type.to_string());
    }

    fn exit_module(&mut self, _name: &str, _container_type: &str) {
        self.containers.pop();
    }

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let full: Vec<usize> = param.lazy_shape().to_vec();
        let in_embedding = self
            .containers
            .last()
            .is_some_and(|container| container == "Struct:Embedding");
        // PyTorch's dim 0: a linear weight's outputs (burn's dim 1), a table's rows.
        let dim = if D == 2 && !in_embedding { 1 } else { 0 };
        let layout = Layout::new(full, dim, self.ranks);
        let shape: [usize; D] = layout
            .shard_shape()
            .try_into()
            .expect("a layout keeps its parameter's rank");
        let id = param.id;
        let device = match &self.host {
            // On the host's stand-in, tracked as the model is (an autodiff device or not).
            Some(host) if param.lazy_device().is_autodiff() => host.clone().autodiff(),
            Some(host) => host.clone(),
            None => param.lazy_device(),
        };
        self.layouts.insert(id, layout);
        // A fresh shard, initialised where the parameter would be; trained until a strategy
        // freezes it (LoRA's bases, `head`'s body).
        Param::uninitialized(
            id,
            move |device, require_grad| Tensor::zeros(shape, device).set_require_grad(require_grad),
            device,
            true,
            shape.into(),
        )
    }
}

/// Cuts each LoRA adapter built on a base's shard: `A` along its rank (a fresh shard), `B`
/// recorded with its full shape (its outputs are its base's, already cut).
struct AdaptersToShards<'a> {
    ranks: usize,
    layouts: &'a mut Layouts,
    adapter: AdapterDepth,
    /// The layout of the base the next adapter adapts (burn visits a base, then its factors).
    base: Option<Layout>,
    /// The field entered last: an adapter's factors are its fields `a` and `b`.
    field: String,
}

impl ModuleMapper for AdaptersToShards<'_> {
    fn enter_module(&mut self, name: &str, container_type: &str) {
        self.adapter.enter(container_type);
        self.field = name.to_string();
    }

    fn exit_module(&mut self, _name: &str, container_type: &str) {
        self.adapter.exit(container_type);
    }

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        if !self.adapter.inside() {
            self.base = self.layouts.get(&param.id).cloned();
            return param;
        }
        let base = self.base.as_ref().expect("an adapter comes after its base");
        let (d_in, d_out) = (base.full[0], base.full[1]);
        let is_b = match self.field.as_str() {
            "a" => false,
            "b" => true,
            other => unreachable!("a LoRA adapter's factors are a and b, not {other}"),
        };
        let rank = param.lazy_shape().to_vec()[if is_b { 0 } else { 1 }];
        if is_b {
            // B: `[r, rows]` of its base's `[d_in, d_out]`.
            let mut layout = Layout::new(vec![rank, d_out], 1, self.ranks);
            layout.adapter = true;
            self.layouts.insert(param.id, layout);
            return param;
        }
        let mut layout = Layout::new(vec![d_in, rank], 1, self.ranks);
        layout.adapter = true;
        let shape: [usize; D] = layout
            .shard_shape()
            .try_into()
            .expect("a factor is a matrix");
        self.layouts.insert(param.id, layout);
        let (id, device) = (param.id, param.lazy_device());
        let dtype = param.val().dtype();
        Param::uninitialized(
            id,
            move |device, require_grad| {
                Tensor::zeros(shape, (device, dtype)).set_require_grad(require_grad)
            },
            device,
            true,
            shape.into(),
        )
    }
}

/// Marks each layout's parameter as trained or not, from the final model.
struct MarkTrained<'a>(&'a mut Layouts);

impl ModuleVisitor for MarkTrained<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(layout) = self.0.get_mut(&param.id) {
            // A quantized shard is frozen; its layout has its compute type already.
            if layout.packed.is_some() {
                layout.trains = false;
                return;
            }
            let value = param.base();
            layout.trains = value.is_require_grad();
            layout.dtype = value.dtype().into();
        }
    }
}

/// Maps each sharded parameter to its all-gathered full value.
struct Gather<'a> {
    shards: &'a Shards,
}

impl ModuleMapper for Gather<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let Some(layout) = self.shards.layouts.get(&param.id) else {
            return param;
        };
        let ranks = self.shards.ranks;
        let dtype = self.shards.moves.gather_dtype;
        let gpu = self.shards.moves.gpu.as_ref();
        if let Some(packed) = layout.packed {
            let full: [usize; D] = layout
                .full
                .clone()
                .try_into()
                .expect("a layout keeps its parameter's rank");
            return param.map(|shard| {
                // From the host, the shard is copied to the GPU first: its own layout, there.
                let shard = match gpu {
                    Some(gpu) => {
                        quantized_buffer::allocated(shard.dims(), packed.scheme, &shard, Some(gpu))
                    }
                    None => shard,
                };
                // The all-gather's output: the whole matrix's codes, and its block scales beside
                // them (bitsandbytes reads those from the replicated quant state instead: while a
                // block is gathered, the plan holds its scales twice).
                quantized_buffer::allocated(full, packed.scheme, &shard, None)
            });
        }
        param.map(|shard| {
            let shard = match gpu {
                Some(gpu) => copied_to(&shard, gpu),
                None => shard,
            };
            // FSDP2 casts the shard to the compute type and all-gathers that copy, which is
            // freed once the gather has run.
            let shard = match dtype {
                Some(dtype) => shard.cast(dtype),
                None => shard,
            };
            // One launch that writes the padded full size (N copies of this rank's shard stand
            // for the N ranks'), however many ranks.
            let padded = shard.repeat_dim(layout.dim, ranks);
            match padded.dims()[layout.dim] == layout.full[layout.dim] {
                true => padded,
                false => padded.narrow(layout.dim, 0, layout.full[layout.dim]),
            }
        })
    }
}

/// A host shard's copy on `gpu`, the all-gather's source: a fresh allocation of its size and
/// type (a plan reads no values), tracked as the shard is so that backward computes the
/// gradients it would have (which then leave for the host).
fn copied_to<const D: usize>(shard: &Tensor<D>, gpu: &Device) -> Tensor<D> {
    let copy = Tensor::<D>::empty(shard.shape(), (gpu, shard.dtype()));
    match (shard.is_autodiff(), shard.is_require_grad()) {
        (false, _) => copy,
        (true, false) => copy.autodiff(),
        (true, true) => copy.autodiff().require_grad(),
    }
}

/// The buffers of a gathered module's tracked parameters (the root's, kept to the end of
/// backward); plain ones (evaluation's) are freed as usual.
struct KeepTracked(Vec<Raw>);

impl ModuleVisitor for KeepTracked {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let value = param.val();
        // On the training device (an autodiff one) the root is the training pass's.
        if value.gradient_checkpointing_strategy().is_some() {
            self.0.push(raw(value.inner()));
        }
    }
}
