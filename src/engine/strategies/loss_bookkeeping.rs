//! `strategies.loss_bookkeeping`: `scalar` keeps each step's loss as a detached value; `graph`
//! reproduces the `total_loss += loss` and "forgot to `del` the intermediates" leaks: every
//! step's loss tensor (not detached), its logits and its layer outputs stay referenced.
//!
//! burn releases a graph's saved tensors during `backward()` whether or not the loss is still
//! referenced, so holding only the loss leaks little; the leak that costs memory is holding the
//! activations themselves, which is what a Python loop that appends outputs to a list does.

use burn::tensor::Tensor;

/// A leak stops growing past this many bytes, so a long run cannot exhaust the machine.
pub const LEAK_CAP_BYTES: u64 = 256 << 20;

/// What a `graph` run has kept from earlier steps.
#[derive(Default)]
pub struct LeakedSteps {
    tensors: Vec<Tensor<2>>,
    /// Losses, kept as tensors (the `total_loss += loss` half of the leak).
    losses: Vec<Tensor<1>>,
    bytes: u64,
    capped_at_step: Option<usize>,
}

impl LeakedSteps {
    /// Keep one step's tensors, unless the cap has been reached. `step` is 1-based.
    pub fn hold(&mut self, step: usize, loss: Tensor<1>, tensors: Vec<Tensor<2>>) {
        if self.capped_at_step.is_some() {
            return;
        }
        let bytes: u64 = tensors
            .iter()
            .map(|t| (t.dims().iter().product::<usize>() * t.dtype().size()) as u64)
            .sum();
        if self.bytes + bytes > LEAK_CAP_BYTES {
            self.capped_at_step = Some(step);
            return;
        }
        self.bytes += bytes;
        self.losses.push(loss);
        self.tensors.extend(tensors);
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The step at which the cap stopped the leak, if it did.
    pub fn capped_at_step(&self) -> Option<usize> {
        self.capped_at_step
    }
}
