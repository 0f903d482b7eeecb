//! Scaled dot-product attention two ways.
//!
//! - [`naive`]: the scores `Q K^T / sqrt(d)`, a softmax, the weights times `V`, as burn's
//!   `MultiHeadAttention` computes them. Under autodiff each of those `[batch, heads, L, L]`
//!   tensors is kept for backward.
//! - [`fused`]: memory-efficient ("flash") attention as one autodiff op. Forward works through
//!   blocks of query rows, keeps the output and each row's log-sum-exp, and frees each block's
//!   scores before the next block; backward recomputes every block's scores from Q, K and the
//!   saved log-sum-exp. Nothing `L x L` outlives a block, so what a step keeps grows with L, not
//!   L^2. The blocks are burn ops (matmul, exp, reductions) on the plain backend, so the same op
//!   runs natively, on WebGPU and under a dry run (plans).
//!
//! Shapes everywhere: `[batch, heads, L, head_dim]`. Grouped-query attention
//! ([`fused_grouped`]) folds each group of query heads into one block of `group x L` rows
//! against its shared key/value head; a row's position is then its index modulo L.

use burn::backend::Cube;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::tensor::activation::softmax;
use burn::tensor::{Bool, Int, Tensor};

use super::bridge::{Raw, Recorded, Route, Tracked, plain, raw, run_recorded};

/// Bytes of one block's score tensor the fused path aims for: the blocks' transients (scores,
/// probabilities and in backward their gradients) stay a few times this, whatever L is.
pub const BLOCK_SCORE_BYTES: usize = 32 << 20;

/// The reference: scores, softmax and weighted sum, every intermediate a tensor of its own.
/// `causal` hides the keys after each query, as burn's autoregressive mask does.
pub fn naive(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, causal: bool) -> Tensor<4> {
    let head_dim = q.dims()[3];
    let mut scores = q.matmul(k.transpose()).div_scalar((head_dim as f32).sqrt());
    if causal {
        scores = mask_future(scores);
    }
    softmax(scores, 3).matmul(v)
}

/// `scores` (`[batch, heads, L, L]`) with each query's future keys at minus infinity.
pub fn mask_future(scores: Tensor<4>) -> Tensor<4> {
    let [_, _, rows, keys] = scores.dims();
    let mask = future_keys(0, rows, keys, &scores.device());
    scores.mask_fill(mask.unsqueeze::<4>(), f32::NEG_INFINITY)
}

/// `scores` (`[batch, heads, L, L]`) with the keys `window` or more positions before each
/// query at minus infinity: a sliding window of `window` keys, the query's own included
/// (Gemma's and Mistral's `sliding_window`). Naive attention still makes, masks and keeps the
/// whole `L x L` scores: the window changes what is computed, not what is held.
pub fn mask_outside_window(scores: Tensor<4>, window: usize) -> Tensor<4> {
    let [_, _, rows, keys] = scores.dims();
    let mask = keys_outside_window(0, rows, keys, window, &scores.device());
    scores.mask_fill(mask.unsqueeze::<4>(), f32::NEG_INFINITY)
}

/// Logits soft-capped to `(-cap, cap)`: `cap * tanh(scores / cap)` (Gemma 2's
/// `attn_logit_softcapping` and `final_logit_softcapping`).
pub fn soft_cap<const D: usize>(scores: Tensor<D>, cap: f32) -> Tensor<D> {
    scores.div_scalar(cap).tanh().mul_scalar(cap)
}

/// What a fused attention masks and caps beyond its causal mask.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Masking {
    /// Keys a query sees, its own included (0: all before it).
    pub window: usize,
    /// The scores soft-capped at this (0: not capped).
    pub soft_cap: f32,
}

/// [`fused`] for grouped-query attention: `q` has `heads` heads, `k` and `v` fewer, each shared
/// by `heads / kv_heads` consecutive query heads (Hugging Face's `repeat_kv` order). The
/// group's query heads become one block of rows against the shared head, so no key or value is
/// repeated, and the shared head's gradients sum its group's.
pub fn fused_grouped(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, causal: bool) -> Tensor<4> {
    let [batch, _, length, _] = q.dims();
    let rows = block_rows(batch * k.dims()[1], length, q.dtype().size());
    fused_grouped_in_blocks(q, k, v, causal, rows)
}

/// [`fused_grouped`], causal, with a sliding window and soft-capped scores as `masking` says.
/// It keeps what the unwindowed op keeps (the output and a log-sum-exp per row): a window
/// changes which scores count, not what is held.
pub fn fused_grouped_masked(
    q: Tensor<4>,
    k: Tensor<4>,
    v: Tensor<4>,
    masking: Masking,
) -> Tensor<4> {
    let [batch, _, length, _] = q.dims();
    let rows = block_rows(batch * k.dims()[1], length, q.dtype().size());
    fused_grouped_masked_in_blocks(q, k, v, masking, rows)
}

/// [`fused_grouped_masked`] with blocks of `rows` folded query rows.
pub fn fused_grouped_masked_in_blocks(
    q: Tensor<4>,
    k: Tensor<4>,
    v: Tensor<4>,
    masking: Masking,
    rows: usize,
) -> Tensor<4> {
    let shape = Shape {
        causal: true,
        rows: rows.max(1),
        masking,
    };
    fused_grouped_shaped(q, k, v, shape)
}

/// [`fused_grouped`] with blocks of `rows` folded query rows (the tests cross the seams
/// between a group's heads).
pub fn fused_grouped_in_blocks(
    q: Tensor<4>,
    k: Tensor<4>,
    v: Tensor<4>,
    causal: bool,
    rows: usize,
) -> Tensor<4> {
    let shape = Shape {
        causal,
        rows: rows.max(1),
        masking: Masking::default(),
    };
    fused_grouped_shaped(q, k, v, shape)
}

/// The grouped op of either kind: each key/value head's query heads folded into one block of
/// rows, run as `shape` says, and unfolded.
fn fused_grouped_shaped(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, shape: Shape) -> Tensor<4> {
    let [batch, heads, length, head_dim] = q.dims();
    let kv_heads = k.dims()[1];
    let group = heads / kv_heads;
    let folded = q.reshape([batch, kv_heads, group * length, head_dim]);
    fused_shaped(folded, k, v, shape).reshape([batch, heads, length, head_dim])
}

/// Hugging Face's `repeat_kv`: each key/value head repeated for its `group` of query heads,
/// `[batch, kv_heads, L, d]` to `[batch, kv_heads * group, L, d]`; unchanged for a group of 1.
pub fn repeat_heads(t: Tensor<4>, group: usize) -> Tensor<4> {
    if group == 1 {
        return t;
    }
    let [batch, heads, length, head_dim] = t.dims();
    t.unsqueeze_dim::<5>(2)
        .expand([batch, heads, group, length, head_dim])
        .reshape([batch, heads * group, length, head_dim])
}

/// Fused attention: the same values as [`naive`], keeping only the output and one log-sum-exp
/// per row for backward. Falls back to [`naive`] on a backend this op is not written for.
pub fn fused(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, causal: bool) -> Tensor<4> {
    let [batch, heads, _, _] = q.dims();
    let rows = block_rows(batch * heads, k.dims()[2], q.dtype().size());
    fused_in_blocks(q, k, v, causal, rows)
}

/// [`fused`] with blocks of `rows` query rows (the tests make blocks small and uneven).
pub fn fused_in_blocks(
    q: Tensor<4>,
    k: Tensor<4>,
    v: Tensor<4>,
    causal: bool,
    rows: usize,
) -> Tensor<4> {
    let shape = Shape {
        causal,
        rows: rows.max(1),
        masking: Masking::default(),
    };
    fused_shaped(q, k, v, shape)
}

fn fused_shaped(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, shape: Shape) -> Tensor<4> {
    match Route::of(&q) {
        Some(Route::Plain) => {
            let (out, _) = forward_blocks(plain(raw(q)), plain(raw(k)), plain(raw(v)), shape);
            out
        }
        Some(Route::Autodiff(strategy)) => run_recorded(FlashAttention(shape), strategy, [q, k, v]),
        None if shape.masking == Masking::default() => naive(q, k, v, shape.causal),
        None => naive_shaped(q, k, v, shape),
    }
}

/// [`naive`] with `shape`'s masking (a row's position is its index modulo the keys, as in the
/// blocks).
fn naive_shaped(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, shape: Shape) -> Tensor<4> {
    let scores = block_scores(q, &k, 0, shape);
    softmax(scores, 3).matmul(v)
}

/// How the op is cut: causal or not, query rows per block, and its window and cap.
#[derive(Clone, Copy, Debug)]
struct Shape {
    causal: bool,
    rows: usize,
    masking: Masking,
}

/// `[rows, keys]`, true where key `j` comes after query row `first_row + i` (what causal
/// masking hides). A row's position is its index modulo the keys: grouped rows
/// ([`fused_grouped`]) repeat the positions once per query head of the group.
fn future_keys(
    first_row: usize,
    rows: usize,
    keys: usize,
    device: &burn::tensor::Device,
) -> Tensor<2, Bool> {
    let (queries, key_ids) = positions(first_row, rows, keys, device);
    future_of(queries, key_ids)
}

/// [`future_keys`] from the rows' and keys' positions.
fn future_of(queries: Tensor<2, Int>, key_ids: Tensor<2, Int>) -> Tensor<2, Bool> {
    key_ids.greater(queries)
}

/// `[rows, keys]`, true where key `j` is `window` or more positions before query row
/// `first_row + i` (what a sliding window hides; rows' positions as in [`future_keys`]).
fn keys_outside_window(
    first_row: usize,
    rows: usize,
    keys: usize,
    window: usize,
    device: &burn::tensor::Device,
) -> Tensor<2, Bool> {
    let (queries, key_ids) = positions(first_row, rows, keys, device);
    outside_window_of(queries, key_ids, window)
}

/// [`keys_outside_window`] from the rows' and keys' positions.
fn outside_window_of(
    queries: Tensor<2, Int>,
    key_ids: Tensor<2, Int>,
    window: usize,
) -> Tensor<2, Bool> {
    key_ids.add_scalar(window as i64).lower_equal(queries)
}

/// [`positions`] for a fused op's block, counted on the device (ones summed along the row)
/// rather than uploaded: an upload is a round trip that a plan's dry run waits on, and each
/// block masks (two uploads a block were a third of the 8-GPU Llama-2-7B plan's time). Made and
/// dropped with the block, as the uploaded ones were: the pools see what they saw. (A view of
/// one count kept over the op's blocks is faster still, but its few KiB, alive beside the
/// blocks' scores, changed which pages the pools kept: 3.9 GiB more reserved for Axolotl's 8B
/// QLoRA recipe.)
fn counted_positions(
    first_row: usize,
    rows: usize,
    keys: usize,
    device: &burn::tensor::Device,
) -> (Tensor<2, Int>, Tensor<2, Int>) {
    positions_from(first_row, rows, keys, |first, n| {
        Tensor::<1, Int>::ones([n], device)
            .cumsum(0)
            .add_scalar(first as i64 - 1)
    })
}

/// Query rows' positions `[rows, 1]` (modulo the keys) and key positions `[1, keys]`.
fn positions(
    first_row: usize,
    rows: usize,
    keys: usize,
    device: &burn::tensor::Device,
) -> (Tensor<2, Int>, Tensor<2, Int>) {
    positions_from(first_row, rows, keys, |first, n| {
        Tensor::<1, Int>::arange(first as i64..(first + n) as i64, device)
    })
}

/// [`positions`] with each run of `n` positions from `first` made by `range`: the rows' first,
/// wrapped modulo the keys where they pass them, then the keys'.
fn positions_from(
    first_row: usize,
    rows: usize,
    keys: usize,
    range: impl Fn(usize, usize) -> Tensor<1, Int>,
) -> (Tensor<2, Int>, Tensor<2, Int>) {
    let queries = range(first_row, rows);
    let queries = if first_row + rows > keys {
        queries.remainder_scalar(keys as i64)
    } else {
        queries
    }
    .reshape([rows, 1]);
    (queries, range(0, keys).reshape([1, keys]))
}

/// Query rows per block, so that one block's `[batch, heads, rows, keys]` scores hold about
/// [`BLOCK_SCORE_BYTES`] (the loops stop at the last row).
fn block_rows(batch_heads: usize, keys: usize, element_bytes: usize) -> usize {
    let per_row = batch_heads * keys * element_bytes;
    (BLOCK_SCORE_BYTES / per_row.max(1)).max(1)
}

/// One block's scores `Q_block K^T / sqrt(d)`, soft-capped when `shape` caps them, with the
/// keys the mask hides at minus infinity.
fn block_scores(q_block: Tensor<4>, k: &Tensor<4>, first_row: usize, shape: Shape) -> Tensor<4> {
    let scores = capped_scores(q_block, k, shape.masking.soft_cap);
    masked(scores, first_row, shape)
}

/// `Q_block K^T / sqrt(d)`, soft-capped at `cap` (0: not capped).
fn capped_scores(q_block: Tensor<4>, k: &Tensor<4>, cap: f32) -> Tensor<4> {
    let head_dim = q_block.dims()[3];
    let scores = q_block
        .matmul(k.clone().transpose())
        .mul_scalar(1.0 / (head_dim as f32).sqrt());
    if cap > 0.0 {
        soft_cap(scores, cap)
    } else {
        scores
    }
}

/// A block's scores with future keys (when causal) and keys outside the window at minus
/// infinity.
fn masked(scores: Tensor<4>, first_row: usize, shape: Shape) -> Tensor<4> {
    let [_, _, rows, keys] = scores.dims();
    let device = scores.device();
    let at = || counted_positions(first_row, rows, keys, &device);
    let scores = if shape.causal {
        let (queries, key_ids) = at();
        let mask = future_of(queries, key_ids);
        scores.mask_fill(mask.unsqueeze::<4>(), f32::NEG_INFINITY)
    } else {
        scores
    };
    match shape.masking.window {
        0 => scores,
        window => {
            let (queries, key_ids) = at();
            let mask = outside_window_of(queries, key_ids, window);
            scores.mask_fill(mask.unsqueeze::<4>(), f32::NEG_INFINITY)
        }
    }
}

/// Forward over query blocks: the output `[b, h, L, d]` and each row's log-sum-exp
/// `[b, h, L, 1]`.
fn forward_blocks(
    q: Tensor<4>,
    k: Tensor<4>,
    v: Tensor<4>,
    shape: Shape,
) -> (Tensor<4>, Tensor<4>) {
    let rows = shape.rows;
    let length = q.dims()[2];
    let mut outputs = Vec::with_capacity(length.div_ceil(rows));
    let mut sums = Vec::with_capacity(outputs.capacity());
    for first in (0..length).step_by(rows) {
        let end = (first + rows).min(length);
        let scores = block_scores(q.clone().slice_dim(2, first..end), &k, first, shape);
        let max = scores.clone().max_dim(3);
        let weights = (scores - max.clone()).exp();
        let total = weights.clone().sum_dim(3);
        outputs.push(weights.matmul(v.clone()) / total.clone());
        sums.push(max + total.log());
    }
    (Tensor::cat(outputs, 2), Tensor::cat(sums, 2))
}

/// Gradients of Q, K and V from the output's gradient, recomputing each block's scores.
fn backward_blocks(saved: &Saved, grad_out: Tensor<4>) -> (Tensor<4>, Tensor<4>, Tensor<4>) {
    let q: Tensor<4> = plain(saved.q.clone());
    let k: Tensor<4> = plain(saved.k.clone());
    let v: Tensor<4> = plain(saved.v.clone());
    let out: Tensor<4> = plain(saved.out.clone());
    let log_sum: Tensor<4> = plain(saved.log_sum.clone());
    let [_, _, length, head_dim] = q.dims();
    let scale = 1.0 / (head_dim as f32).sqrt();
    let shape = saved.shape;
    let (rows, cap) = (shape.rows, shape.masking.soft_cap);
    // D_i = sum_j dO_ij O_ij: the softmax backward's row term, one number per row.
    let row_dot = (grad_out.clone() * out).sum_dim(3);
    let mut grad_q = Vec::with_capacity(length.div_ceil(rows));
    let mut grad_k: Option<Tensor<4>> = None;
    let mut grad_v: Option<Tensor<4>> = None;
    for first in (0..length).step_by(rows) {
        let end = (first + rows).min(length);
        let q_block = q.clone().slice_dim(2, first..end);
        let go_block = grad_out.clone().slice_dim(2, first..end);
        let capped = capped_scores(q_block.clone(), &k, cap);
        // The cap's slope, 1 - tanh^2, taken before the mask's minus infinities.
        let slope = (cap > 0.0).then(|| {
            capped
                .clone()
                .div_scalar(cap)
                .square()
                .neg()
                .add_scalar(1.0)
        });
        let scores = masked(capped, first, shape);
        let weights = (scores - log_sum.clone().slice_dim(2, first..end)).exp();
        let dv = weights.clone().transpose().matmul(go_block.clone());
        let grad_weights = go_block.matmul(v.clone().transpose());
        let grad_scores = weights * (grad_weights - row_dot.clone().slice_dim(2, first..end));
        let grad_scores = match slope {
            Some(slope) => grad_scores * slope,
            None => grad_scores,
        };
        grad_q.push(grad_scores.clone().matmul(k.clone()).mul_scalar(scale));
        let dk = grad_scores.transpose().matmul(q_block).mul_scalar(scale);
        grad_k = Some(match grad_k {
            Some(sum) => sum + dk,
            None => dk,
        });
        grad_v = Some(match grad_v {
            Some(sum) => sum + dv,
            None => dv,
        });
    }
    (
        Tensor::cat(grad_q, 2),
        grad_k.expect("at least one block"),
        grad_v.expect("at least one block"),
    )
}

/// What backward needs: the inputs, the output and each row's log-sum-exp.
#[derive(Clone, Debug)]
struct Saved {
    q: Raw,
    k: Raw,
    v: Raw,
    out: Raw,
    log_sum: Raw,
    shape: Shape,
}

#[derive(Debug)]
struct FlashAttention(Shape);

#[derive(Debug)]
struct FlashAttentionBackward;

impl Backward<Cube, 3> for FlashAttentionBackward {
    type State = Saved;

    fn backward(self, ops: Ops<Saved, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad_out = plain(grads.consume::<Cube>(&ops.node));
        let (dq, dk, dv) = backward_blocks(&ops.state, grad_out);
        for (parent, grad) in ops.parents.iter().zip([dq, dk, dv]) {
            if let Some(node) = parent {
                grads.register::<Cube>(node.id, raw(grad));
            }
        }
    }
}

impl Recorded<3> for FlashAttention {
    fn record<C: CheckpointStrategy>(self, inputs: [Tracked<C>; 3]) -> Tracked<C> {
        let [q, k, v] = inputs;
        let nodes = [q.node(), k.node(), v.node()];
        let (q, k, v) = (q.into_primitive(), k.into_primitive(), v.into_primitive());
        let (out, log_sum) =
            forward_blocks(plain(q.clone()), plain(k.clone()), plain(v.clone()), self.0);
        let out = raw(out);
        // Attention is compute bound: a checkpointing strategy keeps its state rather than
        // recomputing the op.
        match FlashAttentionBackward
            .prepare::<C>(nodes)
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => prep.finish(
                Saved {
                    q,
                    k,
                    v,
                    out: out.clone(),
                    log_sum: raw(log_sum),
                    shape: self.0,
                },
                out,
            ),
            OpsKind::UnTracked(prep) => prep.finish(out),
        }
    }
}
