//! A model's block as the forward pass runs it: whole, with the hook read after each op, or
//! (`strategies.checkpointing = layers`) as one node of `ops::recompute`, which runs it again in
//! backward. The transformer's and the llama's blocks both go through [`run`].

use burn::module::Module;
use burn::tensor::Tensor;

use std::sync::Arc;

use super::hook::{LayerHook, Op, Plain};
use crate::engine::ops::host::HostStash;
use crate::engine::ops::recompute::{self, Recomputable};

/// A block with what it reads besides its own weights (rotary tables, a mask): the unit
/// per-layer checkpointing recomputes.
pub(crate) trait LayerForward: Module + 'static {
    /// The block's forward pass, reading `hook` after each op.
    fn run(&self, x: Tensor<3>, hook: &mut impl LayerHook) -> Tensor<3>;
}

impl<L: LayerForward> Recomputable for L {
    fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        self.run(x, &mut Plain)
    }
}

/// How a model runs its blocks: whole, or each recomputed in backward keeping only its input
/// (`strategies.checkpointing = layers`), that input on the host with `host`
/// (`strategies.offload = activations`).
#[derive(Clone, Debug, Default)]
pub struct Recompute {
    pub on: bool,
    pub host: Option<Arc<HostStash>>,
}

/// `block` on `x`: op by op, or recomputed in backward, keeping only `x` (the hook then sees
/// the block as one op).
pub(crate) fn run<L: LayerForward>(
    block: &L,
    x: Tensor<3>,
    recompute: &Recompute,
    hook: &mut impl LayerHook,
) -> Tensor<3> {
    if !recompute.on {
        return block.run(x, hook);
    }
    let x = recompute::checkpointed(block, x, recompute.host.as_ref());
    hook.after(Op::Block);
    x
}
