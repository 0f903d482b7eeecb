//! Softmax cross-entropy (mean over rows) as one autodiff op.
//!
//! burn's `CrossEntropyLoss` is `log_softmax` then `gather`: autodiff keeps the log-softmax, as
//! large as the logits, and its backward makes further `[rows, classes]` tensors beside it (the
//! softmax, the gradient), which for a language model's 50,257-word vocabulary are the largest
//! things in the step. This op keeps the logits and one log-sum-exp per row; backward forms
//! `softmax(logits) - one_hot(target)` over the saved logits' own buffer. Forward works through
//! blocks of rows, so its transients stay near [`BLOCK_BYTES`] whatever the vocabulary.

use burn::backend::Cube;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::tensor::{IndexingUpdateOp, Int, Tensor};

use super::bridge::{
    Raw, RawInt, Recorded, Route, Tracked, plain, plain_int, raw, raw_int, run_recorded,
};

/// Bytes of one block of logit rows' temporaries.
pub const BLOCK_BYTES: usize = 64 << 20;

/// The mean cross-entropy of `logits` `[rows, classes]` against class ids `targets` `[rows]`,
/// shape `[1]` like burn's loss. Falls back to burn's loss on a backend this op is not written
/// for.
pub fn fused(logits: Tensor<2>, targets: Tensor<1, Int>) -> Tensor<1> {
    let rows = block_rows(logits.dims(), logits.dtype().size());
    fused_in_blocks(logits, targets, rows)
}

/// [`fused`] with blocks of `rows` rows (the tests make blocks small and uneven).
pub fn fused_in_blocks(logits: Tensor<2>, targets: Tensor<1, Int>, rows: usize) -> Tensor<1> {
    let rows = rows.max(1);
    let route = Route::of(&logits);
    let ids = raw_int(targets.clone());
    match (route, ids) {
        (Some(Route::Plain), Some(ids)) => {
            let (loss, _) = forward_blocks(plain(raw(logits)), plain_int(ids), rows);
            loss
        }
        (Some(Route::Autodiff(strategy)), Some(ids)) => {
            run_recorded(FusedCrossEntropy { targets: ids, rows }, strategy, [logits])
        }
        _ => CrossEntropyLossConfig::new()
            .init(&logits.device())
            .forward(logits, targets),
    }
}

/// Rows per block so that one block of logits holds about [`BLOCK_BYTES`].
fn block_rows(dims: [usize; 2], element_bytes: usize) -> usize {
    let [rows, classes] = dims;
    (BLOCK_BYTES / (classes * element_bytes).max(1)).clamp(1, rows.max(1))
}

/// The mean loss `[1]` and each row's log-sum-exp `[rows, 1]`.
fn forward_blocks(
    logits: Tensor<2>,
    targets: Tensor<1, Int>,
    step: usize,
) -> (Tensor<1>, Tensor<2>) {
    let rows = logits.dims()[0];
    let mut sums = Vec::with_capacity(rows.div_ceil(step));
    let mut total: Option<Tensor<1>> = None;
    for first in (0..rows).step_by(step) {
        let end = (first + step).min(rows);
        let block = logits.clone().slice_dim(0, first..end);
        let ids = targets
            .clone()
            .slice_dim(0, first..end)
            .reshape([end - first, 1]);
        let picked = block.clone().gather(1, ids);
        let max = block.clone().max_dim(1);
        let log_sum = max.clone() + (block - max).exp().sum_dim(1).log();
        let block_loss = (log_sum.clone() - picked).sum().reshape([1]);
        total = Some(match total {
            Some(sum) => sum + block_loss,
            None => block_loss,
        });
        sums.push(log_sum);
    }
    let loss = total.expect("a batch has rows").div_scalar(rows as f32);
    (loss, Tensor::cat(sums, 0))
}

/// d loss / d logits = (softmax(logits) - one_hot(target)) * grad / rows, written over the
/// saved logits: they are this op's alone by now, so each step (subtract, exp, the scatter of
/// the -1s, the scale) may reuse their buffer and no second logit-sized tensor is made. (Cut
/// into blocks, the blocks and their concatenation held two at once: on GPT-2 small that was
/// the step's high-water mark.)
fn backward_in_place(saved: Saved, grad: Tensor<1>) -> Tensor<2> {
    let Saved {
        logits,
        log_sum,
        targets,
    } = saved;
    let logits: Tensor<2> = plain(logits);
    let rows = logits.dims()[0];
    let dtype = logits.dtype();
    let device = logits.device();
    let ids = plain_int::<1>(targets).reshape([rows, 1]);
    let minus_one = Tensor::<2>::full([rows, 1], -1.0, &device).cast(dtype);
    let scale = grad.div_scalar(rows as f32).reshape([1, 1]).cast(dtype);
    (logits - plain::<2>(log_sum))
        .exp()
        .scatter(1, ids, minus_one, IndexingUpdateOp::Add)
        * scale
}

/// What backward needs: the logits, each row's log-sum-exp and the targets.
#[derive(Clone, Debug)]
struct Saved {
    logits: Raw,
    log_sum: Raw,
    targets: RawInt,
}

#[derive(Debug)]
struct FusedCrossEntropy {
    targets: RawInt,
    rows: usize,
}

#[derive(Debug)]
struct FusedCrossEntropyBackward;

impl Backward<Cube, 1> for FusedCrossEntropyBackward {
    type State = Saved;

    fn backward(self, ops: Ops<Saved, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad = plain(grads.consume::<Cube>(&ops.node));
        if let Some(node) = &ops.parents[0] {
            let grad_logits = backward_in_place(ops.state, grad);
            grads.register::<Cube>(node.id, raw(grad_logits));
        }
    }
}

impl Recorded<1> for FusedCrossEntropy {
    fn record<C: CheckpointStrategy>(self, inputs: [Tracked<C>; 1]) -> Tracked<C> {
        let [logits] = inputs;
        let nodes = [logits.node()];
        let logits = logits.into_primitive();
        let (loss, log_sum) = forward_blocks(
            plain(logits.clone()),
            plain_int(self.targets.clone()),
            self.rows,
        );
        let loss = raw(loss);
        match FusedCrossEntropyBackward
            .prepare::<C>(nodes)
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => prep.finish(
                Saved {
                    logits,
                    log_sum: raw(log_sum),
                    targets: self.targets,
                },
                loss,
            ),
            OpsKind::UnTracked(prep) => prep.finish(loss),
        }
    }
}
