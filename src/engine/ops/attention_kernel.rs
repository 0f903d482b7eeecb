//! Fused attention's three kernels, queued on the device's fusion stream as custom ops (as the
//! grouped expert products are): forward, the query gradient, and the key and value gradients.
//!
//! Each invocation takes four query rows (or, for the key and value gradients, four keys) of
//! one batch and head, and walks every key (or query row) the masks let it see, accumulating in
//! f32. A score lives in registers only: nothing `L x L` is ever allocated, so what a step holds
//! is the inputs, the output and one f32 log-sum-exp per row, as FlashAttention keeps. The same
//! ops run natively, on WebGPU and under a dry run, where a plan counts one launch and the
//! outputs it allocates (the block loop of burn ops they replace queued a hundred ops a block:
//! a 70B plan's 128 blocks a layer took 190 s).
//!
//! Shapes: `q`, `out`, `dO` are `[batch, heads, rows, head_dim]`; `k`, `v` are
//! `[batch, heads, keys, head_dim]`. Grouped-query attention folds a group's query heads into
//! `group x keys` rows, so a row's position is its index modulo the keys.

use burn::tensor::{DType, Shape};
use burn_cubecl::CubeBackend;
use burn_cubecl::kernel::untile;
use burn_cubecl::ops::numeric::empty_device_dtype;
use burn_fusion::stream::{Operation, StreamId};
use burn_fusion::{ExecutionError, FusionBackend, FusionHandle};
use burn_ir::{CustomOpIr, HandleContainer, OperationIr, TensorIr};
use cubecl::{CubeDim, calculate_cube_count_elemwise};

use super::attention::Masking;
use super::bridge::Raw;
use super::grouped_matmul::elem;

type Runtime = <CubeBackend as FusionBackend>::FusionRuntime;
type Handles = HandleContainer<FusionHandle<Runtime>>;

/// Query rows (or keys) one invocation takes.
const TILE: usize = 4;

/// What a fused attention masks and how it scores, as its kernels take it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Masks {
    /// Each query sees no key after it.
    pub causal: bool,
    /// Keys a query sees, its own included (0: all the others allow).
    pub window: usize,
    /// Scores soft-capped at this, `cap * tanh(s / cap)` (0: not capped).
    pub soft_cap: f32,
}

impl Masks {
    /// The kernels' masks: `causal`, and the window and cap a model's attention sets.
    pub fn new(causal: bool, masking: Masking) -> Self {
        Self {
            causal,
            window: masking.window,
            soft_cap: masking.soft_cap,
        }
    }
}

/// Forward: the output, in `q`'s type, and each row's log-sum-exp `[batch, heads, rows, 1]`
/// in f32.
pub fn forward(q: Raw, k: Raw, v: Raw, masks: Masks) -> (Raw, Raw) {
    let out = q.shape.clone();
    let sums = row_shape(&q.shape);
    let dtype = q.dtype;
    let [out, log_sum] = queue(
        Pass::Forward,
        masks,
        vec![q, k, v],
        [(out, dtype), (sums, DType::F32)],
    );
    (out, log_sum)
}

/// The query gradient and each row's `D = rowsum(dO * O)` (f32), which the key and value
/// gradients take.
pub fn query_gradient(saved: [Raw; 5], grad_out: Raw, masks: Masks) -> (Raw, Raw) {
    let [q, k, v, out, log_sum] = saved;
    let shape = q.shape.clone();
    let sums = row_shape(&q.shape);
    let dtype = q.dtype;
    let [grad_q, row_dot] = queue(
        Pass::QueryGradient,
        masks,
        vec![q, k, v, out, grad_out, log_sum],
        [(shape, dtype), (sums, DType::F32)],
    );
    (grad_q, row_dot)
}

/// The key and value gradients, from the inputs, the output's gradient, the log-sum-exp and
/// the rows' `D`.
pub fn key_value_gradients(
    inputs: [Raw; 3],
    grad_out: Raw,
    log_sum: Raw,
    row_dot: Raw,
    masks: Masks,
) -> (Raw, Raw) {
    let [q, k, v] = inputs;
    let (k_shape, v_shape) = (k.shape.clone(), v.shape.clone());
    let (k_type, v_type) = (k.dtype, v.dtype);
    let [grad_k, grad_v] = queue(
        Pass::KeyValueGradients,
        masks,
        vec![q, k, v, grad_out, log_sum, row_dot],
        [(k_shape, k_type), (v_shape, v_type)],
    );
    (grad_k, grad_v)
}

/// `[batch, heads, rows, 1]` of a `[batch, heads, rows, head_dim]` shape.
fn row_shape(shape: &Shape) -> Shape {
    Shape::from(vec![shape[0], shape[1], shape[2], 1])
}

#[derive(Clone, Copy, Debug)]
enum Pass {
    Forward,
    QueryGradient,
    KeyValueGradients,
}

/// `pass` over `inputs`, queued on the fusion stream, with two outputs of the shapes and types
/// given.
fn queue(pass: Pass, masks: Masks, inputs: Vec<Raw>, outputs: [(Shape, DType); 2]) -> [Raw; 2] {
    let client = inputs[0].client.clone();
    let outputs =
        outputs.map(|(shape, dtype)| TensorIr::uninit(client.create_empty_handle(), shape, dtype));
    let name = match pass {
        Pass::Forward => "vramlab_attention_forward",
        Pass::QueryGradient => "vramlab_attention_query_gradient",
        Pass::KeyValueGradients => "vramlab_attention_key_value_gradients",
    };
    let inputs: Vec<TensorIr> = inputs.into_iter().map(|t| t.into_ir()).collect();
    let desc = CustomOpIr::new(name, &inputs, &outputs);
    let op = Launch {
        desc: desc.clone(),
        pass,
        masks,
    };
    let mut out = client.register(StreamId::current(), OperationIr::Custom(desc), op);
    let second = out.pop().expect("two outputs");
    let first = out.pop().expect("two outputs");
    [first, second]
}

/// An attention kernel on the fusion stream's turn: its inputs as the device holds them, its
/// outputs allocated from the same pool as every other tensor.
#[derive(Debug)]
struct Launch {
    desc: CustomOpIr,
    pass: Pass,
    masks: Masks,
}

impl Operation<Runtime> for Launch {
    fn execute(&self, handles: &mut Handles) -> Result<(), ExecutionError> {
        let inputs: Vec<_> = self
            .desc
            .inputs
            .iter()
            .map(|ir| untile(handles.get_float_tensor::<CubeBackend>(ir)))
            .collect();
        let [first, second] = &self.desc.outputs[..] else {
            unreachable!("an attention pass has two outputs")
        };
        let q = &inputs[0];
        let outputs = [first, second].map(|ir| {
            empty_device_dtype(
                q.client.clone(),
                q.device.clone(),
                ir.shape.clone(),
                ir.dtype,
            )
        });
        let [batch, heads, rows, head_dim] = [0, 1, 2, 3].map(|i| q.meta.shape()[i]);
        let keys = inputs[1].meta.shape()[2];
        let tiled = match self.pass {
            Pass::Forward | Pass::QueryGradient => rows,
            Pass::KeyValueGradients => keys,
        };
        let units = batch * heads * tiled.div_ceil(TILE);
        if units > 0 && keys > 0 {
            let client = q.client.clone();
            let cube_dim = CubeDim::new(&client, units);
            let cube_count = calculate_cube_count_elemwise(&client, units, cube_dim);
            let address = inputs
                .iter()
                .chain(&outputs)
                .map(|tensor| tensor.required_address_type())
                .max()
                .unwrap_or_default();
            let dtype = elem(q.dtype);
            let scale = 1.0 / (head_dim as f32).sqrt();
            let Masks {
                causal,
                window,
                soft_cap,
            } = self.masks;
            let mut args = inputs.into_iter().map(|t| t.into_tensor_arg());
            let mut next = || args.next().expect("the pass's inputs");
            let [out_a, out_b] = outputs.clone().map(|t| t.into_tensor_arg());
            // Safety: every invocation reads rows of its own batch and head that lie inside
            // the tensors (a tile's rows past the last one read the last one again) and writes
            // only the rows of its tile inside the outputs; past the last tile it returns.
            unsafe {
                match self.pass {
                    Pass::Forward => kernels::attention_forward::launch_unchecked(
                        &client,
                        cube_count,
                        cube_dim,
                        address,
                        next(),
                        next(),
                        next(),
                        out_a,
                        out_b,
                        scale,
                        soft_cap,
                        window,
                        causal,
                        head_dim,
                        dtype,
                    ),
                    Pass::QueryGradient => kernels::attention_query_gradient::launch_unchecked(
                        &client,
                        cube_count,
                        cube_dim,
                        address,
                        next(),
                        next(),
                        next(),
                        next(),
                        next(),
                        next(),
                        out_a,
                        out_b,
                        scale,
                        soft_cap,
                        window,
                        causal,
                        head_dim,
                        dtype,
                    ),
                    Pass::KeyValueGradients => {
                        kernels::attention_key_value_gradients::launch_unchecked(
                            &client,
                            cube_count,
                            cube_dim,
                            address,
                            next(),
                            next(),
                            next(),
                            next(),
                            next(),
                            next(),
                            out_a,
                            out_b,
                            scale,
                            soft_cap,
                            window,
                            causal,
                            head_dim,
                            dtype,
                        )
                    }
                }
            }
        }
        for (ir, tensor) in [first, second].into_iter().zip(outputs) {
            handles.register_float_tensor::<CubeBackend>(&ir.id, tensor);
        }
        Ok(())
    }
}

/// The kernels, apart from burn's names (cubecl's prelude has its own `Tensor`).
// `(n + 3) / 4`, not `div_ceil`: a cube function's arithmetic is what cubecl expands.
#[allow(clippy::manual_div_ceil, clippy::too_many_arguments)]
mod kernels {
    use cubecl::prelude::*;

    /// Below every score a kernel meets: WGSL has no infinite literals.
    const LOWEST: f32 = -3.0e38;

    /// Four rows of `t` from `first` (of `count`) at `base`, in f32, `head_dim` values each,
    /// row-major; past the last row, the last row again.
    #[cube]
    fn load_rows<F: Float>(
        t: &Tensor<F>,
        base: usize,
        first: usize,
        count: usize,
        #[comptime] head_dim: usize,
    ) -> Array<f32> {
        let mut values = Array::<f32>::new(comptime!(head_dim * 4));
        #[unroll]
        for i in 0..4 {
            let row = select(first + i < count, first + i, count - 1);
            let at = base + row * t.stride(2);
            for c in 0..head_dim {
                values[i * head_dim + c] = f32::cast_from(t[at + c * t.stride(3)]);
            }
        }
        values
    }

    /// `count` zeros.
    #[cube]
    fn zeros(#[comptime] count: usize) -> Array<f32> {
        let mut values = Array::<f32>::new(count);
        for i in 0..count {
            values[i] = f32::new(0.0);
        }
        values
    }

    /// This invocation's batch, head and first row (or key), in tiles of four over `count`
    /// a head; past the last tile it returns.
    #[cube]
    fn tile_start(batches: usize, heads: usize, count: usize) -> (usize, usize, usize) {
        let tiles = (count + 3) / 4;
        if ABSOLUTE_POS >= batches * heads * tiles {
            terminate!();
        }
        let pair = ABSOLUTE_POS / tiles;
        (pair / heads, pair % heads, (ABSOLUTE_POS % tiles) * 4)
    }

    /// Where `t`'s values of one batch and head begin.
    #[cube]
    fn head_base<E: CubePrimitive>(t: &Tensor<E>, batch: usize, head: usize) -> usize {
        batch * t.stride(0) + head * t.stride(1)
    }

    /// Whether a query at `position` sees `key`: not after it when causal, and within the
    /// last `window` positions when windowed.
    #[cube]
    fn visible(position: usize, key: usize, window: usize, #[comptime] causal: bool) -> bool {
        let mut seen = true;
        if causal {
            seen = key <= position;
        }
        if window > 0 && key + window <= position {
            seen = false;
        }
        seen
    }

    /// A score from `q . k`: scaled, then soft-capped when `cap` is positive. Also the cap's
    /// slope, `1 - tanh^2` (1 uncapped), which backward multiplies in.
    #[cube]
    fn score(dot: f32, scale: f32, cap: f32) -> (f32, f32) {
        let scaled = dot * scale;
        let mut capped = scaled;
        let mut slope = f32::new(1.0);
        if cap > f32::new(0.0) {
            let t = (scaled / cap).tanh();
            capped = cap * t;
            slope = f32::new(1.0) - t * t;
        }
        (capped, slope)
    }

    /// Backward's two figures for one query row and key, from `q . k`, `dO . v`, the row's
    /// log-sum-exp and its `D = dO . O`: the softmax weight `P = exp(s - lse)` and the score's
    /// gradient `dS = P (dO . v - D)`, times the cap's slope.
    #[cube]
    fn weight_and_gradient(
        dot: f32,
        grad_dot: f32,
        log_sum: f32,
        row_dot: f32,
        scale: f32,
        cap: f32,
    ) -> (f32, f32) {
        let (s, slope) = score(dot, scale, cap);
        let p = (s - log_sum).exp();
        (p, p * (grad_dot - row_dot) * slope)
    }

    /// The positions of a tile's four rows from `first` (the last row's past the end), modulo
    /// the keys, and the least and greatest of them.
    #[cube]
    fn tile_positions(first: usize, count: usize, keys: usize) -> (Array<usize>, usize, usize) {
        let mut positions = Array::<usize>::new(4usize);
        let mut least = keys;
        let mut greatest = 0usize;
        #[unroll]
        for i in 0..4 {
            let row = select(first + i < count, first + i, count - 1);
            let position = row % keys;
            positions[i] = position;
            least = select(position < least, position, least);
            greatest = select(position > greatest, position, greatest);
        }
        (positions, least, greatest)
    }

    /// Whether any query between positions `least` and `greatest` sees `key`.
    #[cube]
    fn any_visible(
        least: usize,
        greatest: usize,
        key: usize,
        window: usize,
        #[comptime] causal: bool,
    ) -> bool {
        let mut seen = true;
        if causal {
            seen = key <= greatest;
        }
        if window > 0 && key + window <= least {
            seen = false;
        }
        seen
    }

    /// `out = softmax(mask(cap(q k^T * scale))) v` for four query rows, and each row's
    /// log-sum-exp, by online softmax over the keys.
    #[cube(launch_unchecked, address_type = "dynamic")]
    pub fn attention_forward<F: Float>(
        q: &Tensor<F>,
        k: &Tensor<F>,
        v: &Tensor<F>,
        out: &mut Tensor<F>,
        log_sum: &mut Tensor<f32>,
        scale: f32,
        cap: f32,
        window: usize,
        #[comptime] causal: bool,
        #[comptime] head_dim: usize,
        #[define(F)] _dtype: ElemType,
    ) {
        let rows = q.shape(2);
        let keys = k.shape(2);
        let (batch, head, first) = tile_start(q.shape(0), q.shape(1), rows);
        let k_base = head_base(k, batch, head);
        let v_base = head_base(v, batch, head);
        let queries = load_rows(q, head_base(q, batch, head), first, rows, head_dim);
        let (positions, least, greatest) = tile_positions(first, rows, keys);
        let mut sums = zeros(comptime!(head_dim * 4));
        let mut best = Array::<f32>::new(4usize);
        let mut total = Array::<f32>::new(4usize);
        let mut dots = Array::<f32>::new(4usize);
        let mut rescale = Array::<f32>::new(4usize);
        let mut weight = Array::<f32>::new(4usize);
        #[unroll]
        for i in 0..4 {
            best[i] = f32::new(LOWEST);
            total[i] = f32::new(0.0);
        }
        for key in 0..keys {
            if any_visible(least, greatest, key, window, causal) {
                let k_at = k_base + key * k.stride(2);
                #[unroll]
                for i in 0..4 {
                    dots[i] = f32::new(0.0);
                }
                for c in 0..head_dim {
                    let kc = f32::cast_from(k[k_at + c * k.stride(3)]);
                    #[unroll]
                    for i in 0..4 {
                        dots[i] += queries[i * head_dim + c] * kc;
                    }
                }
                #[unroll]
                for i in 0..4 {
                    rescale[i] = f32::new(1.0);
                    weight[i] = f32::new(0.0);
                    if visible(positions[i], key, window, causal) {
                        let (s, _slope) = score(dots[i], scale, cap);
                        let top = select(s > best[i], s, best[i]);
                        rescale[i] = (best[i] - top).exp();
                        weight[i] = (s - top).exp();
                        total[i] = total[i] * rescale[i] + weight[i];
                        best[i] = top;
                    }
                }
                let v_at = v_base + key * v.stride(2);
                for c in 0..head_dim {
                    let vc = f32::cast_from(v[v_at + c * v.stride(3)]);
                    #[unroll]
                    for i in 0..4 {
                        let at = i * head_dim + c;
                        sums[at] = sums[at] * rescale[i] + weight[i] * vc;
                    }
                }
            }
        }
        // A written tensor's strides read before the writes, and inline (a cube function takes
        // no `&mut` tensor where it reads one).
        let out_base = batch * out.stride(0) + head * out.stride(1);
        let sum_base = batch * log_sum.stride(0) + head * log_sum.stride(1);
        let (out_step, sum_step) = (out.stride(3), log_sum.stride(2));
        #[unroll]
        for i in 0..4 {
            if first + i < rows {
                let row = first + i;
                let at = out_base + row * out.stride(2);
                for c in 0..head_dim {
                    out[at + c * out_step] = F::cast_from(sums[i * head_dim + c] / total[i]);
                }
                log_sum[sum_base + row * sum_step] = best[i] + total[i].ln();
            }
        }
    }

    /// `dQ = scale * sum_j dS_ij k_j` for four query rows, where `P_ij = exp(s_ij - lse_i)`
    /// and `dS_ij = P_ij (dO_i . v_j - D_i)` (times the cap's slope), and each row's
    /// `D_i = dO_i . O_i`.
    #[cube(launch_unchecked, address_type = "dynamic")]
    pub fn attention_query_gradient<F: Float>(
        q: &Tensor<F>,
        k: &Tensor<F>,
        v: &Tensor<F>,
        out: &Tensor<F>,
        grad_out: &Tensor<F>,
        log_sum: &Tensor<f32>,
        grad_q: &mut Tensor<F>,
        row_dot: &mut Tensor<f32>,
        scale: f32,
        cap: f32,
        window: usize,
        #[comptime] causal: bool,
        #[comptime] head_dim: usize,
        #[define(F)] _dtype: ElemType,
    ) {
        let rows = q.shape(2);
        let keys = k.shape(2);
        let (batch, head, first) = tile_start(q.shape(0), q.shape(1), rows);
        let k_base = head_base(k, batch, head);
        let v_base = head_base(v, batch, head);
        let queries = load_rows(q, head_base(q, batch, head), first, rows, head_dim);
        let grads = load_rows(
            grad_out,
            head_base(grad_out, batch, head),
            first,
            rows,
            head_dim,
        );
        let outs = load_rows(out, head_base(out, batch, head), first, rows, head_dim);
        let (positions, least, greatest) = tile_positions(first, rows, keys);
        let sum_base = head_base(log_sum, batch, head);
        let mut lse = Array::<f32>::new(4usize);
        let mut dot_out = Array::<f32>::new(4usize);
        #[unroll]
        for i in 0..4 {
            let row = select(first + i < rows, first + i, rows - 1);
            lse[i] = log_sum[sum_base + row * log_sum.stride(2)];
            let mut d = f32::new(0.0);
            for c in 0..head_dim {
                d += grads[i * head_dim + c] * outs[i * head_dim + c];
            }
            dot_out[i] = d;
        }
        let mut sums = zeros(comptime!(head_dim * 4));
        let mut key_row = Array::<f32>::new(head_dim);
        let mut dots = Array::<f32>::new(4usize);
        let mut grad_dots = Array::<f32>::new(4usize);
        let mut grad_scores = Array::<f32>::new(4usize);
        for key in 0..keys {
            if any_visible(least, greatest, key, window, causal) {
                let k_at = k_base + key * k.stride(2);
                let v_at = v_base + key * v.stride(2);
                #[unroll]
                for i in 0..4 {
                    dots[i] = f32::new(0.0);
                    grad_dots[i] = f32::new(0.0);
                }
                for c in 0..head_dim {
                    let kc = f32::cast_from(k[k_at + c * k.stride(3)]);
                    let vc = f32::cast_from(v[v_at + c * v.stride(3)]);
                    key_row[c] = kc;
                    #[unroll]
                    for i in 0..4 {
                        dots[i] += queries[i * head_dim + c] * kc;
                        grad_dots[i] += grads[i * head_dim + c] * vc;
                    }
                }
                #[unroll]
                for i in 0..4 {
                    grad_scores[i] = f32::new(0.0);
                    if visible(positions[i], key, window, causal) {
                        let (_p, ds) = weight_and_gradient(
                            dots[i],
                            grad_dots[i],
                            lse[i],
                            dot_out[i],
                            scale,
                            cap,
                        );
                        grad_scores[i] = ds;
                    }
                }
                for c in 0..head_dim {
                    #[unroll]
                    for i in 0..4 {
                        let at = i * head_dim + c;
                        sums[at] += grad_scores[i] * key_row[c];
                    }
                }
            }
        }
        let grad_base = batch * grad_q.stride(0) + head * grad_q.stride(1);
        let dot_base = batch * row_dot.stride(0) + head * row_dot.stride(1);
        let (grad_step, dot_step) = (grad_q.stride(3), row_dot.stride(2));
        #[unroll]
        for i in 0..4 {
            if first + i < rows {
                let row = first + i;
                let at = grad_base + row * grad_q.stride(2);
                for c in 0..head_dim {
                    grad_q[at + c * grad_step] = F::cast_from(sums[i * head_dim + c] * scale);
                }
                row_dot[dot_base + row * dot_step] = dot_out[i];
            }
        }
    }

    /// `dK_j = scale * sum_i dS_ij q_i` and `dV_j = sum_i P_ij dO_i` for four keys, over every
    /// query row (a group's folded heads among them) that sees one of them.
    #[cube(launch_unchecked, address_type = "dynamic")]
    pub fn attention_key_value_gradients<F: Float>(
        q: &Tensor<F>,
        k: &Tensor<F>,
        v: &Tensor<F>,
        grad_out: &Tensor<F>,
        log_sum: &Tensor<f32>,
        row_dot: &Tensor<f32>,
        grad_k: &mut Tensor<F>,
        grad_v: &mut Tensor<F>,
        scale: f32,
        cap: f32,
        window: usize,
        #[comptime] causal: bool,
        #[comptime] head_dim: usize,
        #[define(F)] _dtype: ElemType,
    ) {
        let rows = q.shape(2);
        let keys = k.shape(2);
        let (batch, head, first) = tile_start(q.shape(0), q.shape(1), keys);
        let q_base = head_base(q, batch, head);
        let g_base = head_base(grad_out, batch, head);
        let sum_base = head_base(log_sum, batch, head);
        let dot_base = batch * row_dot.stride(0) + head * row_dot.stride(1);
        let key_rows = load_rows(k, head_base(k, batch, head), first, keys, head_dim);
        let value_rows = load_rows(v, head_base(v, batch, head), first, keys, head_dim);
        let last = select(first + 3 < keys, first + 3, keys - 1);
        let mut key_sums = zeros(comptime!(head_dim * 4));
        let mut value_sums = zeros(comptime!(head_dim * 4));
        let mut query_row = Array::<f32>::new(head_dim);
        let mut grad_row = Array::<f32>::new(head_dim);
        let mut dots = Array::<f32>::new(4usize);
        let mut grad_dots = Array::<f32>::new(4usize);
        let mut weights = Array::<f32>::new(4usize);
        let mut grad_scores = Array::<f32>::new(4usize);
        for row in 0..rows {
            let position = row % keys;
            // The row sees one of the tile's keys: the first when causal, the last in a window.
            let mut seen = true;
            if causal {
                seen = first <= position;
            }
            if window > 0 && last + window <= position {
                seen = false;
            }
            if seen {
                let q_at = q_base + row * q.stride(2);
                let g_at = g_base + row * grad_out.stride(2);
                let lse = log_sum[sum_base + row * log_sum.stride(2)];
                let d = row_dot[dot_base + row * row_dot.stride(2)];
                #[unroll]
                for i in 0..4 {
                    dots[i] = f32::new(0.0);
                    grad_dots[i] = f32::new(0.0);
                }
                for c in 0..head_dim {
                    let qc = f32::cast_from(q[q_at + c * q.stride(3)]);
                    let gc = f32::cast_from(grad_out[g_at + c * grad_out.stride(3)]);
                    query_row[c] = qc;
                    grad_row[c] = gc;
                    #[unroll]
                    for i in 0..4 {
                        dots[i] += key_rows[i * head_dim + c] * qc;
                        grad_dots[i] += value_rows[i * head_dim + c] * gc;
                    }
                }
                #[unroll]
                for i in 0..4 {
                    weights[i] = f32::new(0.0);
                    grad_scores[i] = f32::new(0.0);
                    if visible(position, first + i, window, causal) {
                        let (p, ds) =
                            weight_and_gradient(dots[i], grad_dots[i], lse, d, scale, cap);
                        weights[i] = p;
                        grad_scores[i] = ds;
                    }
                }
                for c in 0..head_dim {
                    #[unroll]
                    for i in 0..4 {
                        let at = i * head_dim + c;
                        value_sums[at] += weights[i] * grad_row[c];
                        key_sums[at] += grad_scores[i] * query_row[c];
                    }
                }
            }
        }
        let k_base = batch * grad_k.stride(0) + head * grad_k.stride(1);
        let v_base = batch * grad_v.stride(0) + head * grad_v.stride(1);
        let (k_step, v_step) = (grad_k.stride(3), grad_v.stride(3));
        #[unroll]
        for i in 0..4 {
            if first + i < keys {
                let key = first + i;
                let k_at = k_base + key * grad_k.stride(2);
                let v_at = v_base + key * grad_v.stride(2);
                for c in 0..head_dim {
                    grad_k[k_at + c * k_step] = F::cast_from(key_sums[i * head_dim + c] * scale);
                    grad_v[v_at + c * v_step] = F::cast_from(value_sums[i * head_dim + c]);
                }
            }
        }
    }
}
