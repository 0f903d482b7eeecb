//! Per-layer gradient checkpointing (`strategies.checkpointing = layers`) as one autodiff node
//! per layer, the way PyTorch's non-reentrant `torch.utils.checkpoint` around each block and
//! Hugging Face's `gradient_checkpointing_enable()` do it.
//!
//! Forward runs the layer on plain tensors (no graph), so nothing inside it is kept: the node
//! keeps only the layer's input. Backward recomputes the layer's forward through autodiff on a
//! graph of its own (fresh leaves for the input and for every tracked parameter), runs that
//! graph's backward from the output's gradient, hands the gradients to the outer graph's
//! parents and drops the recomputed activations before the next layer's turn. So a step holds
//! one layer input per layer plus one layer's activations at a time.
//!
//! burn's `balanced` strategy is another thing: an op-level policy that recomputes element-wise
//! ops and keeps every matmul's output, which for a frozen LoRA base keeps more than no
//! checkpointing at all (docs/finetuning.md).
//!
//! The parents of the node are the input and every *tracked* parameter tensor of the layer:
//! leaves that require a gradient (trained weights, LoRA factors) and also tracked non-leaves
//! (the f16 compute copies that mixed precision casts from f32 master weights), so the outer
//! backward carries their gradients on through the cast to the master weights. Frozen weights
//! enter the recomputation as constants.

use core::marker::PhantomData;
use std::sync::Arc;

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::{Autodiff, AutodiffBackend, Cube};
use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::tensor::{GradientCheckpointingStrategy, Tensor};

use super::bridge::{Raw, Route, plain, raw};
use super::host::{HostStash, Stashed};
use super::shard::Shards;

/// A layer that can be run again in backward: its parameters (and constants such as rotary
/// tables or a mask) are the module's, and `forward` is the layer's whole computation.
pub trait Recomputable: Module + 'static {
    /// The layer's forward pass: `[batch, length, width]` in and out.
    fn forward(&self, x: Tensor<3>) -> Tensor<3>;
}

/// A layer whose forward pass awaits the device in the middle (a mixture of experts reads its
/// routing back): its first, plain forward pass runs through this; the recomputation in
/// backward runs [`Recomputable::forward`], which must then route as the first pass did.
pub trait RecomputableAsync: Recomputable {
    /// The layer's forward pass, awaiting what it reads back, keeping what the recomputation
    /// needs to repeat it.
    fn forward_async(&self, x: Tensor<3>) -> impl Future<Output = Tensor<3>>;
}

/// The training device's backend: `layers` is the device's whole checkpointing, so burn's own
/// strategy is off.
type Ad = Autodiff<Cube, NoCheckpointing>;
type Tracked = super::bridge::Tracked<NoCheckpointing>;

/// `layer.forward(x)`, keeping only `x` for backward when `x` is on a training device (on the
/// host when `host` is given: `strategies.offload = activations`). On a device without
/// autodiff (evaluation) it is the plain forward pass.
pub fn checkpointed<L: Recomputable>(
    layer: &L,
    x: Tensor<3>,
    host: Option<&Arc<HostStash>>,
) -> Tensor<3> {
    match Route::of(&x) {
        Some(Route::Autodiff(GradientCheckpointingStrategy::Disabled)) => {
            record(layer, x, None, None, host)
        }
        // burn's own checkpointing and `layers` are one field's two values: never both.
        _ => layer.forward(x),
    }
}

/// [`checkpointed`] for a layer whose forward pass awaits the device: its plain forward pass
/// runs first, awaited, and the node then keeps only `x` as [`checkpointed`]'s does.
pub async fn checkpointed_async<L: RecomputableAsync>(
    layer: &L,
    x: Tensor<3>,
    host: Option<&Arc<HostStash>>,
) -> Tensor<3> {
    match Route::of(&x) {
        Some(Route::Autodiff(GradientCheckpointingStrategy::Disabled)) => {
            let tracked = x
                .clone()
                .try_into_primitive::<Ad>()
                .expect("Route::of checked this tensor's backend");
            let input: Raw = tracked.primitive().clone();
            let output = layer.valid().forward_async(plain(input)).await;
            record(layer, x, Some(raw(output)), None, host)
        }
        _ => layer.forward_async(x).await,
    }
}

/// What a block of a fully sharded model needs besides itself (`ops::shard`): the sharding, the
/// block's index, and the block before it, plain, whose gather FSDP2 starts as this block's
/// backward begins.
#[derive(Clone)]
pub struct BlockShards<L> {
    pub shards: Arc<Shards>,
    pub index: usize,
    pub previous: Option<L>,
}

/// [`checkpointed`] for one GPU's shard of a block (`strategies.sharding = full`): its
/// parameters are gathered for the forward pass and freed after it, gathered again for the
/// recomputation in backward, and their full gradients reduce-scattered into the shards'. Off
/// a training device, the block gathered, run and freed.
pub fn checkpointed_sharded<L: Recomputable>(
    layer: &L,
    x: Tensor<3>,
    block: BlockShards<L>,
    host: Option<&Arc<HostStash>>,
) -> Tensor<3> {
    match Route::of(&x) {
        Some(Route::Autodiff(GradientCheckpointingStrategy::Disabled)) => {
            record(layer, x, None, Some(block), host)
        }
        _ => block.shards.gather(layer.clone()).forward(x),
    }
}

/// The tracked float tensors of a module, and for every float parameter whether it is one,
/// in visiting order.
struct TrackedParams {
    found: Vec<Tracked>,
    /// The parameter each of `found` is.
    ids: Vec<ParamId>,
    flags: Vec<bool>,
}

impl ModuleVisitor for TrackedParams {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        // `base`: the stored tensor (a LoRA factor is visited as a parameter of its own).
        let tracked = param
            .base()
            .try_into_primitive::<Ad>()
            .ok()
            .filter(|tensor| tensor.is_tracked());
        self.flags.push(tracked.is_some());
        if let Some(tracked) = tracked {
            self.found.push(tracked);
            self.ids.push(param.id);
        }
    }
}

/// Puts the plain layer saved for backward on the training backend: each parameter that was
/// tracked (by its flag, in the order [`TrackedParams`] visited them) becomes a fresh leaf that
/// requires a gradient, on a graph of its own; every other one an untracked constant.
struct FreshLeaves {
    flags: std::vec::IntoIter<bool>,
    leaves: Vec<Tracked>,
}

impl ModuleMapper for FreshLeaves {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let tracked = self.flags.next().unwrap_or(false);
        param.map(|tensor| {
            // A quantized base (QLoRA's) is frozen and stays as `train` put it: a constant on
            // the training backend, packed as it is stored.
            if !tracked && super::quantized_linear::is_quantized(&tensor) {
                return tensor;
            }
            let mut fresh = <Ad as AutodiffBackend>::from_inner(raw(tensor.without_autodiff()));
            if tracked {
                fresh = fresh.require_grad();
                self.leaves.push(fresh.clone());
            }
            Tensor::from_primitive::<Ad>(fresh)
        })
    }
}

/// The most parents one node takes: the input and the layer's tracked tensors, rounded up to a
/// power of two (burn's autodiff nodes have a fixed number of parents). The order of
/// [`TrackedParams`] and [`FreshLeaves`] is the module's visiting order, the same for both, so
/// the i-th fresh leaf stands for the (i + 1)-th parent. A config whose block would need more
/// is refused (`strategies::checkpointing::check`).
pub const MOST_PARENTS: usize = 2048;

/// The node for `layer` on `x`; its plain forward pass's `output` when it ran already.
fn record<L: Recomputable>(
    layer: &L,
    x: Tensor<3>,
    output: Option<Raw>,
    sharded: Option<BlockShards<L>>,
    host: Option<&Arc<HostStash>>,
) -> Tensor<3> {
    let x = x
        .try_into_primitive::<Ad>()
        .expect("Route::of checked this tensor's backend");
    let mut params = TrackedParams {
        found: Vec::new(),
        ids: Vec::new(),
        flags: Vec::new(),
    };
    layer.visit(&mut params);
    let parents = 1 + params.found.len();
    // Each arm is the same node with room for `N` parents; unused places are untracked.
    match parents.next_power_of_two() {
        0..=2 => node::<L, 2>(layer, x, params, output, sharded, host),
        4 => node::<L, 4>(layer, x, params, output, sharded, host),
        8 => node::<L, 8>(layer, x, params, output, sharded, host),
        16 => node::<L, 16>(layer, x, params, output, sharded, host),
        32 => node::<L, 32>(layer, x, params, output, sharded, host),
        64 => node::<L, 64>(layer, x, params, output, sharded, host),
        128 => node::<L, 128>(layer, x, params, output, sharded, host),
        256 => node::<L, 256>(layer, x, params, output, sharded, host),
        512 => node::<L, 512>(layer, x, params, output, sharded, host),
        1024 => node::<L, 1024>(layer, x, params, output, sharded, host),
        MOST_PARENTS => node::<L, MOST_PARENTS>(layer, x, params, output, sharded, host),
        more => panic!(
            "a checkpointed block of {parents} tracked tensors needs a node of {more} parents, \
             past the {MOST_PARENTS} one takes: strategies::checkpointing::check refuses such a \
             config, so its count of a block's tensors is wrong"
        ),
    }
}

fn node<L: Recomputable, const N: usize>(
    layer: &L,
    x: Tracked,
    params: TrackedParams,
    output: Option<Raw>,
    sharded: Option<BlockShards<L>>,
    host: Option<&Arc<HostStash>>,
) -> Tensor<3> {
    let TrackedParams { found, ids, flags } = params;
    let input: Raw = x.primitive().clone();
    // Unused places: an untracked tensor (no parent) sharing the input's buffer.
    let pad = <Ad as AutodiffBackend>::from_inner(input.clone());
    let mut all = core::iter::once(x).chain(found);
    let inputs: [Tracked; N] = core::array::from_fn(|_| all.next().unwrap_or_else(|| pad.clone()));
    let nodes = inputs.each_ref().map(|tensor| tensor.node());
    // The forward pass on plain tensors: no graph, nothing of the layer's kept.
    let plain_layer = layer.valid();
    // SHARD_GRAD_OP's gathered block, kept from its forward pass to its backward.
    let mut kept = None;
    let output = output.unwrap_or_else(|| {
        let input = plain(input.clone());
        raw(match &sharded {
            None => plain_layer.forward(input),
            // Gathered for the forward pass; FULL_SHARD frees it once it has run.
            Some(block) => {
                let gathered = block.shards.gather(plain_layer.clone());
                let output = gathered.forward(input);
                if !block.shards.reshards_after_forward() {
                    kept = Some(gathered);
                }
                output
            }
        })
    });
    let step = LayerBackward::<L> {
        _layer: PhantomData,
    };
    let tracked = match step
        .prepare::<NoCheckpointing>(nodes)
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish(
            Saved {
                input: match host {
                    // Moved to the host: the device's copy goes with this call's last
                    // reference to it, the host's is counted until it is dropped (`Stashed`).
                    Some(host) => {
                        let x = plain::<3>(input);
                        Kept::Host(Arc::new(host.keep(x.shape(), x.dtype())))
                    }
                    None => Kept::Device(input),
                },
                layer: plain_layer,
                flags,
                ids,
                sharded,
                gathered: kept,
            },
            output,
        ),
        OpsKind::UnTracked(prep) => prep.finish(output),
    };
    drop(inputs);
    Tensor::from_primitive::<Ad>(tracked)
}

/// Where a block's input waits for backward.
// One a checkpointed block, so the device variant's size (a tensor primitive with its device
// handle, 216 bytes natively) against the host's pointer costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
enum Kept {
    Device(Raw),
    /// On the host (`strategies.offload = activations`); shared by the saved state's clones,
    /// freed with the last of them.
    Host(Arc<Stashed>),
}

impl Kept {
    /// The input on the device again: brought back from the host into a fresh allocation, as
    /// the offloading hooks copy it back before the recomputation. Offloading is planned, not
    /// run (`validate` refuses it for a real run), so no values travel: the copy is its
    /// allocation.
    fn on(self, device: &burn::tensor::Device) -> Raw {
        match self {
            Self::Device(input) => input,
            // The host's copy goes with this call's reference, the last one.
            Self::Host(stashed) => raw(Tensor::<3>::empty(
                stashed.shape.clone(),
                (device, stashed.dtype),
            )),
        }
    }
}

/// What backward needs: the layer's input, the layer itself without autodiff (its parameters
/// are resident anyway), and which of its parameters were tracked. Nothing here refers to an
/// autodiff node: a graph dropped without backward (a probe's) must not keep itself alive
/// through its own state.
#[derive(Clone)]
struct Saved<L> {
    input: Kept,
    layer: L,
    flags: Vec<bool>,
    /// The parameter each tracked one is, in order.
    ids: Vec<ParamId>,
    sharded: Option<BlockShards<L>>,
    /// The block's gathered parameters, kept from forward (SHARD_GRAD_OP).
    gathered: Option<L>,
}

impl<L> core::fmt::Debug for Saved<L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Saved").finish_non_exhaustive()
    }
}

struct LayerBackward<L> {
    _layer: PhantomData<fn() -> L>,
}

impl<L> core::fmt::Debug for LayerBackward<L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("LayerBackward")
    }
}

impl<L: Recomputable, const N: usize> Backward<Cube, N> for LayerBackward<L> {
    type State = Saved<L>;

    fn backward(self, ops: Ops<Saved<L>, N>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad_output: Raw = grads.consume::<Cube>(&ops.node);
        let Saved {
            input,
            layer,
            flags,
            ids,
            sharded,
            gathered,
        } = ops.state;
        let layer = match (&sharded, gathered) {
            (None, _) => layer,
            // SHARD_GRAD_OP: still gathered since forward.
            (Some(_), Some(kept)) => kept,
            // FSDP2's pre-backward: this block gathered again (unless it was prefetched), and
            // the block before it gathered ahead of its own backward.
            (Some(block), None) => {
                let shards = &block.shards;
                let gathered = shards
                    .take_prefetched::<L>(block.index)
                    .unwrap_or_else(|| shards.gather(layer));
                if let Some(previous) = &block.previous {
                    shards.prefetch(block.index - 1, shards.gather(previous.clone()));
                }
                gathered
            }
        };
        // The recomputation's own graph: fresh leaves, so nothing of it joins the outer graph
        // (whose lock the outer backward holds while this step runs).
        let device = plain::<3>(grad_output.clone()).device();
        let mut x = <Ad as AutodiffBackend>::from_inner(input.on(&device));
        let wants_input = ops.parents[0].is_some();
        if wants_input {
            x = x.require_grad();
        }
        let mut fresh = FreshLeaves {
            flags: flags.into_iter(),
            leaves: Vec::new(),
        };
        // `train` puts the constants (rotary tables, a mask) on the training backend; the
        // mapper then sets each parameter's tracking as it was in forward.
        let layer = layer.train().map(&mut fresh);
        let output = layer.forward(Tensor::from_primitive::<Ad>(x.clone()));
        let seed =
            Tensor::<3>::from_primitive::<Ad>(<Ad as AutodiffBackend>::from_inner(grad_output));
        // d(sum(output * g)) / d(anything) is g backpropagated: the output's gradient.
        let root = (output * seed)
            .sum()
            .try_into_primitive::<Ad>()
            .expect("the recomputation stays on its backend");
        let mut inner = <Ad as AutodiffBackend>::backward(root);
        let leaves =
            core::iter::once(wants_input.then_some(x)).chain(fresh.leaves.into_iter().map(Some));
        // A sharded block's full parameter gradients, with the parameter and the outer parent.
        let mut full_grads = Vec::new();
        for (place, (parent, leaf)) in ops.parents.iter().zip(leaves).enumerate() {
            let (Some(parent), Some(leaf)) = (parent, leaf) else {
                continue;
            };
            let Some(grad) = leaf.grad_remove(&mut inner) else {
                continue;
            };
            match (&sharded, place) {
                (Some(_), 1..) => full_grads.push((ids[place - 1], parent.id, grad)),
                _ => grads.register::<Cube>(parent.id, grad),
            }
        }
        let Some(block) = sharded else {
            return;
        };
        // Resharded: the recomputation's graph and the gathered parameters go before the
        // reduce-scatter's buffer comes.
        drop(inner);
        drop(layer);
        let (params, parents): (Vec<_>, Vec<_>) = full_grads
            .into_iter()
            .map(|(param, parent, grad)| ((param, grad), parent))
            .unzip();
        let scattered = block.shards.reduce_scatter(params);
        if block.shards.gradients_to_host() {
            // Copied to the host for its optimizer, as each reduce-scatter's output is under
            // optimizer offload: nothing of it stays on the GPU or reaches its optimizer.
            return;
        }
        for ((_, grad), parent) in scattered.into_iter().zip(parents) {
            grads.register::<Cube>(parent, grad);
        }
    }
}
