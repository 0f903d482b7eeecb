//! `strategies.loss_bookkeeping`: what a training loop keeps of each step to report on later,
//! written the three ways people write it.
//!
//! - `scalar`: only the value, `total += loss.item()` (vramlab detaches each loss and reads the
//!   values back in groups of steps, so the GPU is not waited on every step).
//! - `tensor`: `total_loss += loss`, the loss tensor summed undetached across steps. In PyTorch
//!   this keeps every step's autograd graph reachable. burn frees a graph's saved tensors during
//!   `backward()` whether or not the loss is still referenced, and its graph nodes hold no
//!   tensors, so the device keeps little: the measurement says how little.
//! - `outputs`: `outputs.append(logits)`, each step's outputs kept undetached for later. After
//!   backward that holds each step's logits on the device: a leak that grows every step.

use burn::tensor::Tensor;

use crate::engine::config::{LossBookkeeping, RunConfig};
use crate::engine::outcome::Fallback;

use super::{Report, Strategy};

/// The kept outputs stop growing past this many bytes, so a long run cannot exhaust the machine.
pub const LEAK_CAP_BYTES: u64 = 256 << 20;

pub struct Bookkeeping {
    mode: LossBookkeeping,
    /// `tensor`: the running, undetached sum of the losses.
    total: Option<Tensor<1>>,
    /// `outputs`: every step's logits, and their bytes.
    outputs: Vec<Tensor<2>>,
    output_bytes: u64,
    capped_at_step: Option<usize>,
}

impl Bookkeeping {
    pub fn new(config: &RunConfig) -> Self {
        Self {
            mode: config.strategies.loss_bookkeeping,
            total: None,
            outputs: Vec::new(),
            output_bytes: 0,
            capped_at_step: None,
        }
    }

    /// Whether step `step`'s `bytes` of outputs may be kept under the cap; counts them if so.
    fn admit(&mut self, step: usize, bytes: u64) -> bool {
        if self.capped_at_step.is_some() {
            return false;
        }
        if self.output_bytes + bytes > LEAK_CAP_BYTES {
            self.capped_at_step = Some(step);
            return false;
        }
        self.output_bytes += bytes;
        true
    }

    fn keep_outputs(&mut self, step: usize, logits: &Tensor<2>) {
        let bytes = (logits.dims().iter().product::<usize>() * logits.dtype().size()) as u64;
        if self.admit(step, bytes) {
            self.outputs.push(logits.clone());
        }
    }
}

impl Strategy for Bookkeeping {
    fn keeps_logits(&self) -> bool {
        self.mode == LossBookkeeping::Outputs
    }

    fn after_backward(&mut self, step: usize, loss: &Tensor<1>, logits: Option<&Tensor<2>>) {
        match (self.mode, logits) {
            (LossBookkeeping::Tensor, _) => {
                let total = self.total.take();
                self.total = Some(match total {
                    Some(total) => total + loss.clone(),
                    None => loss.clone(),
                });
            }
            (LossBookkeeping::Outputs, Some(logits)) => self.keep_outputs(step, logits),
            _ => {}
        }
    }

    fn report(&self, report: &mut Report) {
        report.leaked_bytes = self.output_bytes;
        if let Some(step) = self.capped_at_step {
            report.fallbacks.push(Fallback::new(
                "strategies.loss_bookkeeping",
                "outputs",
                format!(
                    "the kept outputs stopped growing at step {step}, at the cap of {} MiB",
                    LEAK_CAP_BYTES >> 20
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_outputs_stop_at_the_cap_and_say_at_which_step() {
        let mut config = RunConfig::default();
        config.strategies.loss_bookkeeping = LossBookkeeping::Outputs;
        let mut kept = Bookkeeping::new(&config);
        let per_step = 64 << 20;
        let admitted: Vec<bool> = (1..=6).map(|step| kept.admit(step, per_step)).collect();
        assert_eq!(admitted, [true, true, true, true, false, false]);
        let mut report = Report::default();
        kept.report(&mut report);
        assert_eq!(report.leaked_bytes, LEAK_CAP_BYTES);
        let note = report.fallbacks[0].to_string();
        assert!(note.starts_with("loss_bookkeeping outputs: "), "{note}");
        assert!(note.contains("step 5"), "{note}");
    }
}
