//! `strategies.loss_bookkeeping`: `scalar` keeps each step's loss as a detached value; `graph`
//! reproduces the `total_loss += loss` and "forgot to `del` the intermediates" leaks: every
//! step's loss tensor (not detached), its logits and its layer outputs stay referenced.
//!
//! burn releases a graph's saved tensors during `backward()` whether or not the loss is still
//! referenced, so holding only the loss leaks little; the leak that costs memory is holding the
//! activations themselves, which is what a Python loop that appends outputs to a list does.

use burn::tensor::Tensor;

use crate::engine::config::{LossBookkeeping, RunConfig};
use crate::engine::outcome::Fallback;

use super::{Report, Strategy};

/// A leak stops growing past this many bytes, so a long run cannot exhaust the machine.
pub const LEAK_CAP_BYTES: u64 = 256 << 20;

/// What a `graph` run has kept from earlier steps.
#[derive(Default)]
struct LeakedSteps {
    tensors: Vec<Tensor<2>>,
    /// Losses, kept as tensors (the `total_loss += loss` half of the leak).
    losses: Vec<Tensor<1>>,
    bytes: u64,
    capped_at_step: Option<usize>,
}

impl LeakedSteps {
    /// Keep one step's tensors, unless the cap has been reached. `step` is 1-based.
    fn hold(&mut self, step: usize, loss: Tensor<1>, tensors: Vec<Tensor<2>>) {
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
}

pub struct Bookkeeping {
    /// `None` with `scalar`.
    leaked: Option<LeakedSteps>,
}

impl Bookkeeping {
    pub fn new(config: &RunConfig) -> Self {
        Self {
            leaked: (config.strategies.loss_bookkeeping == LossBookkeeping::Graph)
                .then(LeakedSteps::default),
        }
    }
}

impl Strategy for Bookkeeping {
    fn wants_pass_outputs(&self) -> bool {
        self.leaked.is_some()
    }

    fn after_backward(&mut self, step: usize, loss: &Tensor<1>, outputs: &[Tensor<2>]) {
        if let Some(leaked) = &mut self.leaked {
            leaked.hold(step, loss.clone(), outputs.to_vec());
        }
    }

    fn report(&self, report: &mut Report) {
        let Some(leaked) = &self.leaked else {
            return;
        };
        report.leaked_bytes = leaked.bytes;
        if let Some(step) = leaked.capped_at_step {
            report.fallbacks.push(Fallback::new(
                "strategies.loss_bookkeeping",
                "graph",
                format!(
                    "the leak stopped growing at step {step}, at the cap of {} MiB",
                    LEAK_CAP_BYTES >> 20
                ),
            ));
        }
    }
}
