//! Scaled dot-product attention two ways.
//!
//! - [`naive`]: the scores `Q K^T / sqrt(d)`, a softmax, the weights times `V`, as burn's
//!   `MultiHeadAttention` computes them. Under autodiff each of those `[batch, heads, L, L]`
//!   tensors is kept for backward.
//! - [`fused`]: memory-efficient ("flash") attention as one autodiff op. Forward is one kernel
//!   that keeps the output and each row's log-sum-exp; backward is two more that recompute each
//!   score from Q, K and the saved log-sum-exp (`attention_kernel`). A score never leaves the
//!   kernel, so what a step keeps and allocates grows with L, not L^2. The kernels run natively,
//!   on WebGPU and under a dry run (plans), as one launch each.
//!
//! Shapes everywhere: `[batch, heads, L, head_dim]`. Grouped-query attention
//! ([`fused_grouped`]) folds each group of query heads into `group x L` rows against its shared
//! key/value head; a row's position is then its index modulo L.

use burn::backend::Cube;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::tensor::activation::softmax;
use burn::tensor::{Bool, Int, Tensor};

use super::attention_kernel::{self, Masks};
use super::bridge::{Raw, Recorded, Route, Tracked, plain, raw, run_recorded};

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
    let mask = future_keys(rows, keys, &scores.device());
    scores.mask_fill(mask.unsqueeze::<4>(), f32::NEG_INFINITY)
}

/// `scores` (`[batch, heads, L, L]`) with the keys `window` or more positions before each
/// query at minus infinity: a sliding window of `window` keys, the query's own included
/// (Gemma's and Mistral's `sliding_window`). Naive attention still makes, masks and keeps the
/// whole `L x L` scores: the window changes what is computed, not what is held.
pub fn mask_outside_window(scores: Tensor<4>, window: usize) -> Tensor<4> {
    let [_, _, rows, keys] = scores.dims();
    let mask = keys_outside_window(rows, keys, window, &scores.device());
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
/// group's query heads become one run of rows against the shared head, so no key or value is
/// repeated, and the shared head's gradients sum its group's.
pub fn fused_grouped(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, causal: bool) -> Tensor<4> {
    fused_grouped_with(q, k, v, Masks::new(causal, Masking::default()))
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
    fused_grouped_with(q, k, v, Masks::new(true, masking))
}

/// The grouped op of either kind: each key/value head's query heads folded into one run of
/// rows, attended with `masks`, and unfolded.
fn fused_grouped_with(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, masks: Masks) -> Tensor<4> {
    let [batch, heads, length, head_dim] = q.dims();
    let kv_heads = k.dims()[1];
    let group = heads / kv_heads;
    let folded = q.reshape([batch, kv_heads, group * length, head_dim]);
    fused_with(folded, k, v, masks).reshape([batch, heads, length, head_dim])
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
    fused_with(q, k, v, Masks::new(causal, Masking::default()))
}

fn fused_with(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, masks: Masks) -> Tensor<4> {
    match Route::of(&q) {
        Some(Route::Plain) => {
            let (out, _) = attention_kernel::forward(raw(q), raw(k), raw(v), masks);
            plain(out)
        }
        Some(Route::Autodiff(strategy)) => run_recorded(FlashAttention(masks), strategy, [q, k, v]),
        None => naive_masked(q, k, v, masks),
    }
}

/// [`naive`] with `masks` (a row's position is its index modulo the keys, as in the kernels).
fn naive_masked(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, masks: Masks) -> Tensor<4> {
    let head_dim = q.dims()[3];
    let mut scores = q.matmul(k.transpose()).div_scalar((head_dim as f32).sqrt());
    if masks.soft_cap > 0.0 {
        scores = soft_cap(scores, masks.soft_cap);
    }
    if masks.causal {
        scores = mask_future(scores);
    }
    if masks.window > 0 {
        scores = mask_outside_window(scores, masks.window);
    }
    softmax(scores, 3).matmul(v)
}

/// `[rows, keys]`, true where key `j` comes after query row `i` (what causal masking hides).
/// A row's position is its index modulo the keys: grouped rows ([`fused_grouped`]) repeat the
/// positions once per query head of the group.
fn future_keys(rows: usize, keys: usize, device: &burn::tensor::Device) -> Tensor<2, Bool> {
    let (queries, key_ids) = positions(rows, keys, device);
    key_ids.greater(queries)
}

/// `[rows, keys]`, true where key `j` is `window` or more positions before query row `i`
/// (what a sliding window hides; rows' positions as in [`future_keys`]).
fn keys_outside_window(
    rows: usize,
    keys: usize,
    window: usize,
    device: &burn::tensor::Device,
) -> Tensor<2, Bool> {
    let (queries, key_ids) = positions(rows, keys, device);
    key_ids.add_scalar(window as i64).lower_equal(queries)
}

/// Query rows' positions `[rows, 1]` (modulo the keys) and key positions `[1, keys]`.
fn positions(
    rows: usize,
    keys: usize,
    device: &burn::tensor::Device,
) -> (Tensor<2, Int>, Tensor<2, Int>) {
    let queries = Tensor::<1, Int>::arange(0..rows as i64, device);
    let queries = if rows > keys {
        queries.remainder_scalar(keys as i64)
    } else {
        queries
    };
    let key_ids = Tensor::<1, Int>::arange(0..keys as i64, device);
    (queries.reshape([rows, 1]), key_ids.reshape([1, keys]))
}

/// What backward needs: the inputs, the output and each row's log-sum-exp.
#[derive(Clone, Debug)]
struct Saved {
    q: Raw,
    k: Raw,
    v: Raw,
    out: Raw,
    log_sum: Raw,
    masks: Masks,
}

#[derive(Debug)]
struct FlashAttention(Masks);

#[derive(Debug)]
struct FlashAttentionBackward;

impl Backward<Cube, 3> for FlashAttentionBackward {
    type State = Saved;

    fn backward(self, ops: Ops<Saved, 3>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad_out = grads.consume::<Cube>(&ops.node);
        let Saved {
            q,
            k,
            v,
            out,
            log_sum,
            masks,
        } = ops.state;
        let saved = [q.clone(), k.clone(), v.clone(), out, log_sum.clone()];
        let (dq, row_dot) = attention_kernel::query_gradient(saved, grad_out.clone(), masks);
        let (dk, dv) =
            attention_kernel::key_value_gradients([q, k, v], grad_out, log_sum, row_dot, masks);
        for (parent, grad) in ops.parents.iter().zip([dq, dk, dv]) {
            if let Some(node) = parent {
                grads.register::<Cube>(node.id, grad);
            }
        }
    }
}

impl Recorded<3> for FlashAttention {
    fn record<C: CheckpointStrategy>(self, inputs: [Tracked<C>; 3]) -> Tracked<C> {
        let [q, k, v] = inputs;
        let nodes = [q.node(), k.node(), v.node()];
        let (q, k, v) = (q.into_primitive(), k.into_primitive(), v.into_primitive());
        let (out, log_sum) = attention_kernel::forward(q.clone(), k.clone(), v.clone(), self.0);
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
                    log_sum,
                    masks: self.0,
                },
                out,
            ),
            OpsKind::UnTracked(prep) => prep.finish(out),
        }
    }
}
