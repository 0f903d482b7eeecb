//! The experts' matmuls of a mixture of experts as one grouped product: every expert's rows in
//! one launch, as `torch._grouped_mm` (transformers' `grouped_mm` experts backend), MegaBlocks
//! and Megatron's GroupedMLP compute them.
//!
//! The rows arrive sorted by expert (`rows` of expert `e` are `offsets[e]..offsets[e + 1]`),
//! and the experts' weights are one stacked tensor `[experts, d_input, d_output]`, as
//! transformers stores them. Row `r` is multiplied by the matrix of its own expert, `experts[r]`:
//! no row is padded and none is dropped, so the product holds exactly what the per-expert loop's
//! products hold, in one tensor instead of one per expert.
//!
//! Autodiff keeps what burn's matmul keeps: the input where the weight trains, the weight where
//! the input needs a gradient (a handle to the parameter). Backward is two more grouped kernels:
//! `dx = dy W[e]^T` (the same product, the weight read transposed in place) and, for a trained
//! weight, `dW[e] = x_e^T dy_e` over each expert's rows.
//!
//! The kernels are plain loops, one output value an invocation, accumulated in f32. A plan runs
//! them on a dry run, where nothing executes and what counts is one launch a product instead of
//! one an expert; the toy presets' real runs are small enough for them. The launch takes every
//! size at run time, so a step whose router sends new counts to each expert compiles nothing
//! new (the loop's products are new matmul shapes whenever a count changes).

use burn::backend::Cube;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::tensor::{DType, Int, Shape, Tensor};
use burn_cubecl::CubeBackend;
use burn_cubecl::kernel::untile;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_fusion::stream::{Operation, StreamId};
use burn_fusion::{ExecutionError, FusionBackend, FusionHandle};
use burn_ir::{CustomOpIr, HandleContainer, OperationIr, TensorIr};
use cubecl::ir::{ElemType, FloatKind, IntKind, UIntKind};
use cubecl::{CubeDim, calculate_cube_count_elemwise};

use super::bridge::{Raw, RawInt, Recorded, Route, Tracked, plain, raw, raw_int, run_recorded};

type Runtime = <CubeBackend as FusionBackend>::FusionRuntime;
type Handles = HandleContainer<FusionHandle<Runtime>>;

/// Rows of one expert a grouped product's invocations take together (a tile), at most.
const TILE_ROWS: usize = 4;

/// Where each expert's rows are among the rows, sorted by expert.
#[derive(Clone, Debug)]
pub struct Groups {
    /// `[tiles x 3]`: each tile's expert, first row and rows (at most four, all one expert's).
    pub tiles: Tensor<1, Int>,
    /// `[experts + 1]`: expert `e`'s rows are `offsets[e]..offsets[e + 1]`.
    pub offsets: Tensor<1, Int>,
}

impl Groups {
    /// The groups of rows sorted by expert, `counts[e]` of them expert `e`'s, each int tensor
    /// made by `upload`.
    pub fn new(counts: &[usize], upload: impl Fn(Vec<i64>) -> Tensor<1, Int>) -> Self {
        let mut offsets = Vec::with_capacity(counts.len() + 1);
        let mut tiles = Vec::new();
        let mut start = 0;
        for (expert, &count) in counts.iter().enumerate() {
            offsets.push(start as i64);
            for first in (0..count).step_by(TILE_ROWS) {
                let rows = TILE_ROWS.min(count - first);
                tiles.extend([expert, start + first, rows].map(|n| n as i64));
            }
            start += count;
        }
        offsets.push(start as i64);
        Self {
            tiles: upload(tiles),
            offsets: upload(offsets),
        }
    }
}

/// `out[r] = x[r] W[e]` for each row `r` of expert `e`.
///
/// # Shapes
/// - x: `[rows, d_input]`, sorted by expert
/// - weights: `[experts, d_input, d_output]`
/// - output: `[rows, d_output]`
pub fn grouped_matmul(x: Tensor<2>, weights: Tensor<3>, groups: &Groups) -> Tensor<2> {
    let [experts, inputs, outputs] = weights.dims();
    let ints = (
        raw_int(groups.tiles.clone()),
        raw_int(groups.offsets.clone()),
    );
    let (Some(route), (Some(tiles), Some(offsets))) = (Route::of(&x), ints) else {
        unreachable!("vramlab runs on the cubecl backend alone")
    };
    let groups = RawGroups { tiles, offsets };
    match route {
        Route::Plain => plain(product(raw(x), raw(weights), &groups.tiles, false)),
        Route::Autodiff(strategy) => run_recorded(
            GroupedMatmul {
                groups,
                weights: [experts, inputs, outputs],
            },
            strategy,
            // A weight enters as a matrix of its experts' rows (a view); the op reads it whole.
            [x, weights.reshape([experts * inputs, outputs])],
        ),
    }
}

/// The int tensors of [`Groups`] as the backend holds them.
#[derive(Clone, Debug)]
struct RawGroups {
    tiles: RawInt,
    offsets: RawInt,
}

/// `x W[e]`, or with `transposed`, `x W[e]^T` (the weight read transposed where it lies), as an
/// op on the device's fusion stream.
fn product(x: Raw, weights: Raw, tiles: &RawInt, transposed: bool) -> Raw {
    let [_, inputs, outputs] = three(&weights.shape);
    let columns = if transposed { inputs } else { outputs };
    let shape = vec![x.shape[0], columns];
    queue(Kind::Product { transposed }, [x, weights], tiles, shape)
}

/// `dW[e] = x_e^T dy_e` over each expert's rows, `[experts, d_input, d_output]`.
fn weight_gradient(x: Raw, grad: Raw, offsets: &RawInt, experts: usize) -> Raw {
    let shape = vec![experts, x.shape[1], grad.shape[1]];
    queue(Kind::WeightGradient, [x, grad], offsets, shape)
}

/// The grouped kernel `kind` over `floats` and `ints`, queued on the fusion stream, its output
/// `shape` in the second float's type.
fn queue(kind: Kind, floats: [Raw; 2], ints: &RawInt, shape: Vec<usize>) -> Raw {
    let [first, second] = floats;
    let client = first.client.clone();
    let out = TensorIr::uninit(
        client.create_empty_handle(),
        Shape::from(shape),
        second.dtype,
    );
    let name = match kind {
        Kind::Product { .. } => "vramlab_grouped_matmul",
        Kind::WeightGradient => "vramlab_grouped_weight_gradient",
    };
    let inputs = [first.into_ir(), second.into_ir(), ints.clone().into_ir()];
    let desc = CustomOpIr::new(name, &inputs, &[out]);
    let op = Launch {
        desc: desc.clone(),
        kind,
    };
    client
        .register(StreamId::current(), OperationIr::Custom(desc), op)
        .remove(0)
}

fn three(shape: &Shape) -> [usize; 3] {
    [shape[0], shape[1], shape[2]]
}

#[derive(Debug)]
enum Kind {
    Product { transposed: bool },
    WeightGradient,
}

/// A grouped kernel on the fusion stream's turn: its inputs as the device holds them, its output
/// allocated from the same pool as every other tensor.
#[derive(Debug)]
struct Launch {
    desc: CustomOpIr,
    kind: Kind,
}

impl Operation<Runtime> for Launch {
    fn execute(&self, handles: &mut Handles) -> Result<(), ExecutionError> {
        let [first, second, ints] = &self.desc.inputs[..] else {
            unreachable!("a grouped op has three inputs")
        };
        let first = untile(handles.get_float_tensor::<CubeBackend>(first));
        let second = untile(handles.get_float_tensor::<CubeBackend>(second));
        let ints = untile(handles.get_int_tensor::<CubeBackend>(ints));
        let out = &self.desc.outputs[0];
        let output = empty_device_dtype(
            first.client.clone(),
            first.device.clone(),
            out.shape.clone(),
            out.dtype,
        );
        // Invocations: a block of four by four output values each.
        let blocks = |n: usize| n.div_ceil(4);
        let units = match self.kind {
            Kind::Product { .. } => ints.meta.shape()[0] / 3 * blocks(out.shape[1]),
            Kind::WeightGradient => out.shape[0] * blocks(out.shape[1]) * blocks(out.shape[2]),
        };
        if units > 0 {
            let client = &first.client;
            let cube_dim = CubeDim::new(client, units);
            let cube_count = calculate_cube_count_elemwise(client, units, cube_dim);
            let address = [&first, &second, &ints, &output]
                .iter()
                .map(|tensor| tensor.required_address_type())
                .max()
                .unwrap_or_default();
            let types = [elem(first.dtype), elem(ints.dtype)];
            let client = client.clone();
            let [first, second, ints, written] =
                [first, second, ints, output.clone()].map(|tensor| tensor.into_tensor_arg());
            // Safety: each invocation writes the values of its block that lie inside `output`
            // (past the last block, it returns), and reads rows of `first` and `second` that
            // the groups keep in range: every tile's expert is below the weights' first
            // dimension and its rows among the rows, every offset at most the rows
            // (`Groups::new` builds them so from counts that sum to the rows).
            unsafe {
                match self.kind {
                    Kind::Product { transposed } => kernels::grouped_product::launch_unchecked(
                        &client, cube_count, cube_dim, address, first, second, ints, written,
                        transposed, types,
                    ),
                    Kind::WeightGradient => kernels::grouped_weight_gradient::launch_unchecked(
                        &client, cube_count, cube_dim, address, first, second, ints, written, types,
                    ),
                }
            }
        }
        handles.register_float_tensor::<CubeBackend>(&out.id, output);
        Ok(())
    }
}

/// cubecl's element type of a burn dtype vramlab's kernels take (the grouped products', attention's).
pub(super) fn elem(dtype: DType) -> ElemType {
    match dtype {
        DType::F64 => ElemType::Float(FloatKind::F64),
        DType::F32 => ElemType::Float(FloatKind::F32),
        DType::F16 => ElemType::Float(FloatKind::F16),
        DType::BF16 => ElemType::Float(FloatKind::BF16),
        DType::I64 => ElemType::Int(IntKind::I64),
        DType::I32 => ElemType::Int(IntKind::I32),
        DType::I16 => ElemType::Int(IntKind::I16),
        DType::I8 => ElemType::Int(IntKind::I8),
        DType::U64 => ElemType::UInt(UIntKind::U64),
        DType::U32 => ElemType::UInt(UIntKind::U32),
        other => unreachable!("vramlab's kernels take float values and int indices, not {other:?}"),
    }
}

/// The kernels, apart from burn's names (cubecl's prelude has its own `Tensor` and `Int`).
/// Each invocation computes a block of 4 x 4 output values in registers: per step of the
/// product's depth it loads four values of each side for sixteen products (a value an
/// invocation loaded two for one, and ran three times slower than burn's matmul on lavapipe).
// `(n + 3) / 4`, not `div_ceil`: a cube function's arithmetic is what cubecl expands.
#[allow(clippy::manual_div_ceil)]
mod kernels {
    use cubecl::prelude::*;

    /// `out[r, n] = sum_k x[r, k] W[e, k, n]` (with `transposed`, `W[e, n, k]`) for the rows
    /// of each tile (`tiles`: its expert, first row and rows, three ints a tile), four rows
    /// and four columns an invocation.
    #[cube(launch_unchecked, address_type = "dynamic")]
    pub fn grouped_product<F: Float, I: Int>(
        x: &Tensor<F>,
        weights: &Tensor<F>,
        tiles: &Tensor<I>,
        out: &mut Tensor<F>,
        #[comptime] transposed: bool,
        #[define(F, I)] _types: [ElemType; 2],
    ) {
        let columns = out.shape(1);
        let column_blocks = (columns + 3) / 4;
        if ABSOLUTE_POS >= (tiles.shape(0) / 3) * column_blocks {
            terminate!();
        }
        let tile = ABSOLUTE_POS / column_blocks;
        let first_column = (ABSOLUTE_POS % column_blocks) * 4;
        let expert = usize::cast_from(tiles[(tile * 3) * tiles.stride(0)]);
        let first_row = usize::cast_from(tiles[(tile * 3 + 1) * tiles.stride(0)]);
        let rows = usize::cast_from(tiles[(tile * 3 + 2) * tiles.stride(0)]);
        // The weight's strides along the product's depth and its columns.
        let (depth_stride, column_stride) = if transposed {
            (weights.stride(2), weights.stride(1))
        } else {
            (weights.stride(1), weights.stride(2))
        };
        // Past the tile's rows or the output's columns, read the last one (and write nothing).
        let last_row = first_row + rows - 1;
        let mut row_at = Array::<usize>::new(4usize);
        let mut column_at = Array::<usize>::new(4usize);
        #[unroll]
        for i in 0..4 {
            let row = select(first_row + i < last_row, first_row + i, last_row);
            row_at[i] = row * x.stride(0);
            let column = select(first_column + i < columns, first_column + i, columns - 1);
            column_at[i] = expert * weights.stride(0) + column * column_stride;
        }
        let mut sums = zeroed_block();
        let mut left = Array::<f32>::new(4usize);
        let mut right = Array::<f32>::new(4usize);
        for k in 0..x.shape(1) {
            #[unroll]
            for i in 0..4 {
                left[i] = f32::cast_from(x[row_at[i] + k * x.stride(1)]);
                right[i] = f32::cast_from(weights[column_at[i] + k * depth_stride]);
            }
            add_outer_product(&mut sums, &left, &right);
        }
        #[unroll]
        for i in 0..4 {
            #[unroll]
            for j in 0..4 {
                if i < rows && first_column + j < columns {
                    let at = (first_row + i) * out.stride(0) + (first_column + j) * out.stride(1);
                    out[at] = F::cast_from(sums[i * 4 + j]);
                }
            }
        }
    }

    /// A 4 x 4 block of f32 sums, zeroed.
    #[cube]
    fn zeroed_block() -> Array<f32> {
        let mut sums = Array::<f32>::new(16usize);
        #[unroll]
        for i in 0..16 {
            sums[i] = f32::new(0.0);
        }
        sums
    }

    /// `sums[i * 4 + j] += left[i] right[j]`: one step of a 4 x 4 block's products.
    #[cube]
    fn add_outer_product(sums: &mut Array<f32>, left: &Array<f32>, right: &Array<f32>) {
        #[unroll]
        for i in 0..4 {
            #[unroll]
            for j in 0..4 {
                sums[i * 4 + j] += left[i] * right[j];
            }
        }
    }

    /// `grad[e, k, n] = sum_{r in offsets[e]..offsets[e + 1]} x[r, k] dy[r, n]`, four depths
    /// and four columns an invocation.
    #[cube(launch_unchecked, address_type = "dynamic")]
    pub fn grouped_weight_gradient<F: Float, I: Int>(
        x: &Tensor<F>,
        dy: &Tensor<F>,
        offsets: &Tensor<I>,
        grad: &mut Tensor<F>,
        #[define(F, I)] _types: [ElemType; 2],
    ) {
        let columns = grad.shape(2);
        let depth = grad.shape(1);
        let column_blocks = (columns + 3) / 4;
        let depth_blocks = (depth + 3) / 4;
        if ABSOLUTE_POS >= grad.shape(0) * depth_blocks * column_blocks {
            terminate!();
        }
        let first_column = (ABSOLUTE_POS % column_blocks) * 4;
        let first_k = ((ABSOLUTE_POS / column_blocks) % depth_blocks) * 4;
        let expert = ABSOLUTE_POS / (column_blocks * depth_blocks);
        let start = usize::cast_from(offsets[expert * offsets.stride(0)]);
        let end = usize::cast_from(offsets[(expert + 1) * offsets.stride(0)]);
        let mut k_at = Array::<usize>::new(4usize);
        let mut column_at = Array::<usize>::new(4usize);
        #[unroll]
        for i in 0..4 {
            let k = select(first_k + i < depth, first_k + i, depth - 1);
            k_at[i] = k * x.stride(1);
            let column = select(first_column + i < columns, first_column + i, columns - 1);
            column_at[i] = column * dy.stride(1);
        }
        let mut sums = zeroed_block();
        let mut left = Array::<f32>::new(4usize);
        let mut right = Array::<f32>::new(4usize);
        for r in start..end {
            #[unroll]
            for i in 0..4 {
                left[i] = f32::cast_from(x[r * x.stride(0) + k_at[i]]);
                right[i] = f32::cast_from(dy[r * dy.stride(0) + column_at[i]]);
            }
            add_outer_product(&mut sums, &left, &right);
        }
        #[unroll]
        for i in 0..4 {
            #[unroll]
            for j in 0..4 {
                if first_k + i < depth && first_column + j < columns {
                    let at = expert * grad.stride(0)
                        + (first_k + i) * grad.stride(1)
                        + (first_column + j) * grad.stride(2);
                    grad[at] = F::cast_from(sums[i * 4 + j]);
                }
            }
        }
    }
}

#[derive(Debug)]
struct GroupedMatmul {
    groups: RawGroups,
    weights: [usize; 3],
}

/// What backward needs: the input where the weight trains and the weight where the input
/// needs a gradient (checkpointed as burn's matmul keeps them), and the groups.
#[derive(Clone, Debug)]
struct Saved {
    x: Option<NodeId>,
    weights: Option<NodeId>,
    groups: RawGroups,
    shape: [usize; 3],
}

#[derive(Debug)]
struct GroupedMatmulBackward;

impl Backward<Cube, 2> for GroupedMatmulBackward {
    type State = Saved;

    fn backward(self, ops: Ops<Saved, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
        let Saved {
            x,
            weights,
            groups,
            shape,
        } = ops.state;
        let x: Option<Raw> = x.map(|id| checkpointer.retrieve_node_output(id));
        let weights: Option<Raw> = weights.map(|id| checkpointer.retrieve_node_output(id));
        let grad: Raw = grads.consume::<Cube>(&ops.node);
        let [x_parent, w_parent] = &ops.parents;
        if let (Some(node), Some(weights)) = (x_parent, weights) {
            let stacked = raw(plain::<2>(weights).reshape(shape));
            grads.register::<Cube>(node.id, product(grad.clone(), stacked, &groups.tiles, true));
        }
        if let (Some(node), Some(x)) = (w_parent, x) {
            let [experts, inputs, outputs] = shape;
            let stacked = weight_gradient(x, grad, &groups.offsets, experts);
            let flat = raw(plain::<3>(stacked).reshape([experts * inputs, outputs]));
            grads.register::<Cube>(node.id, flat);
        }
    }
}

impl Recorded<2> for GroupedMatmul {
    fn record<C: CheckpointStrategy>(self, inputs: [Tracked<C>; 2]) -> Tracked<C> {
        let [x, weights] = inputs;
        let (x_tracked, w_tracked) = (x.is_tracked(), weights.is_tracked());
        let nodes = [x.node(), weights.node()];
        let forward = |x: Raw, weights: Raw, tiles: &RawInt| {
            let stacked = raw(plain::<2>(weights).reshape(self.weights));
            product(x, stacked, tiles, false)
        };
        match GroupedMatmulBackward
            .prepare::<C>(nodes)
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let x_state = w_tracked.then(|| prep.checkpoint(&x));
                let w_state = x_tracked.then(|| prep.checkpoint(&weights));
                let out = forward(
                    x.into_primitive(),
                    weights.into_primitive(),
                    &self.groups.tiles,
                );
                prep.finish(
                    Saved {
                        x: x_state,
                        weights: w_state,
                        groups: self.groups,
                        shape: self.weights,
                    },
                    out,
                )
            }
            OpsKind::UnTracked(prep) => prep.finish(forward(
                x.into_primitive(),
                weights.into_primitive(),
                &self.groups.tiles,
            )),
        }
    }
}
