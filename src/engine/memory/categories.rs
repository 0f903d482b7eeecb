//! Where a step's memory went, measured: the bytes in use at the step's high-water mark split by
//! what holds them, with PyTorch's memory-timeline names where they mean the same thing.
//!
//! Each category is a difference of allocator readings taken where only that category changed,
//! in bytes of the pools tensors live in (cubecl's own memories, a uniform buffer per launch in
//! flight and staging for reads, come and go with launches and are left to OTHER):
//! - PARAMETER: in use once the parameters exist, less in use before (the weights as stored).
//! - INPUT: the batch, in use after its upload less in use at the step's start; plus a data set a
//!   strategy keeps on the device for the whole run.
//! - ACTIVATION: in use once logits and loss exist less in use after the upload: what the forward
//!   pass left for backward (saved tensors, logits, loss), the largest over a step's passes.
//! - GRADIENT: in use after the last backward, less the step's start and the batch.
//! - OPTIMIZER_STATE: in use after the optimizer less in use after setup, less what a strategy
//!   holds on purpose (kept outputs): the state the optimizer carries to the next step.
//! - OTHER: the rest of the high-water mark: temporaries that live between two check points
//!   (matmul workspaces, the optimizer's intermediates), and what no difference can name.
//!
//! At the high-water mark activations and gradients need not both be whole (backward frees the
//! first as it makes the second), so the stack is filled in the order above and each category is
//! cut to what the mark leaves: the stack always sums to the mark, and OTHER is never negative.

use serde::{Deserialize, Serialize};

use crate::engine::phase::Phase;

use super::sampler::MemoryReading;

/// Bytes by what holds them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Categories {
    pub parameter: u64,
    pub optimizer_state: u64,
    pub input: u64,
    pub activation: u64,
    pub gradient: u64,
    /// What the check points cannot attribute: temporaries between them.
    pub other: u64,
}

impl Categories {
    /// The names timeline.csv, the charts and `--json` use, in stacking order.
    pub const NAMES: [&'static str; 6] = [
        "parameter",
        "optimizer_state",
        "input",
        "activation",
        "gradient",
        "other",
    ];

    /// The figures in [`Self::NAMES`] order.
    pub fn values(&self) -> [u64; 6] {
        [
            self.parameter,
            self.optimizer_state,
            self.input,
            self.activation,
            self.gradient,
            self.other,
        ]
    }

    pub fn total(&self) -> u64 {
        self.values().iter().sum()
    }

    /// Stack `measured` (whose `other` is ignored) under `mark`: each category in order is cut to
    /// what the mark leaves, and the remainder is `other`.
    pub fn stacked_under(mark: u64, measured: Self) -> Self {
        let mut left = mark;
        let mut take = |bytes: u64| {
            let taken = bytes.min(left);
            left -= taken;
            taken
        };
        let parameter = take(measured.parameter);
        let optimizer_state = take(measured.optimizer_state);
        let input = take(measured.input);
        let activation = take(measured.activation);
        let gradient = take(measured.gradient);
        Self {
            parameter,
            optimizer_state,
            input,
            activation,
            gradient,
            other: left,
        }
    }
}

/// In use at the run's set-up, which every step's figures count from.
#[derive(Clone, Copy, Debug, Default)]
pub struct SetupBytes {
    /// The parameters as stored.
    pub parameter: u64,
    /// A data set kept on the device by a strategy.
    pub resident_input: u64,
    /// Gradient buckets kept for the whole run (data parallel's, DDP's defaults).
    pub gradient_buckets: u64,
    /// In use once set-up ended (baseline, parameters and anything a strategy kept).
    pub in_use: u64,
}

/// A step's categories from its check points (`marks`, in the order they were read), what was in
/// use when it started (`start`), set-up's figures, what strategies hold on purpose (`held`), and
/// its high-water mark of bytes in use. `None` when the step read no check point inside it
/// (`memory_sampling` = `step` without a budget).
pub fn of_step(
    marks: &[(Phase, MemoryReading)],
    start: u64,
    setup: SetupBytes,
    held: u64,
    mark: u64,
) -> Option<Categories> {
    sizes_of_step(marks, start, setup, held).map(|sizes| Categories::stacked_under(mark, sizes))
}

/// Each category's own size in a step, where it is largest: the activations at the end of
/// forward, the gradients at the end of backward, the optimizer's state at the end of the step
/// (`other` is 0). [`of_step`] stacks them under the high-water mark, which a category reached
/// after it (or freed before it) is cut from: a frozen body's few gradients come after the
/// activations' peak.
pub fn sizes_of_step(
    marks: &[(Phase, MemoryReading)],
    start: u64,
    setup: SetupBytes,
    held: u64,
) -> Option<Categories> {
    let in_use = |reading: &MemoryReading| reading.pooled_in_use_bytes;
    let first_upload = marks.iter().find(|(phase, _)| *phase == Phase::Upload)?;
    let batch = in_use(&first_upload.1).saturating_sub(start);
    let mut activation = 0u64;
    let mut upload = None;
    for (phase, reading) in marks {
        match phase {
            Phase::Upload => upload = Some(in_use(reading)),
            Phase::Forward => {
                if let Some(after_upload) = upload {
                    activation = activation.max(in_use(reading).saturating_sub(after_upload));
                }
            }
            _ => {}
        }
    }
    let gradient = marks
        .iter()
        .rev()
        .find(|(phase, _)| *phase == Phase::Backward)
        .map_or(0, |(_, reading)| {
            in_use(reading).saturating_sub(start).saturating_sub(batch)
        });
    let optimizer_state = marks
        .iter()
        .rev()
        .find(|(phase, _)| *phase == Phase::Optimizer)
        .map_or(0, |(_, reading)| {
            in_use(reading)
                .saturating_sub(setup.in_use)
                .saturating_sub(held)
        });
    Some(Categories {
        parameter: setup.parameter,
        optimizer_state,
        input: setup.resident_input + batch,
        activation,
        // The buckets are in use from set-up on, so the step's differences leave them out.
        gradient: gradient + setup.gradient_buckets,
        other: 0,
    })
}

/// An evaluation's categories, from its first batch: in use before it (`start`), after its
/// upload, and once its logits exist (`logits_bytes` of them), under the evaluation's high-water
/// mark. Parameters and optimizer state are what training left; a no-grad evaluation keeps no
/// activation, an autodiff one keeps what its graph saved.
pub fn of_eval(
    start: u64,
    after_upload: u64,
    with_logits: u64,
    logits_bytes: u64,
    carried: Categories,
    mark: u64,
) -> Categories {
    Categories::stacked_under(
        mark,
        Categories {
            parameter: carried.parameter,
            optimizer_state: carried.optimizer_state,
            input: after_upload.saturating_sub(start),
            activation: with_logits
                .saturating_sub(after_upload)
                .saturating_sub(logits_bytes),
            gradient: 0,
            other: 0,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(pooled_in_use_bytes: u64) -> MemoryReading {
        MemoryReading {
            pooled_in_use_bytes,
            ..MemoryReading::default()
        }
    }

    const SETUP: SetupBytes = SetupBytes {
        parameter: 100,
        resident_input: 0,
        gradient_buckets: 0,
        in_use: 100,
    };

    #[test]
    fn each_category_is_the_difference_where_only_it_changed() {
        // Start 300 (parameters 100, optimizer state 200); batch 10; forward keeps 50; backward
        // leaves 100 of gradients; the optimizer drops them.
        let marks = [
            (Phase::Upload, reading(310)),
            (Phase::Forward, reading(360)),
            (Phase::Backward, reading(410)),
            (Phase::Optimizer, reading(300)),
        ];
        let got = of_step(&marks, 300, SETUP, 0, 480).unwrap();
        let want = Categories {
            parameter: 100,
            optimizer_state: 200,
            input: 10,
            activation: 50,
            gradient: 100,
            other: 20,
        };
        assert_eq!(got, want);
        assert_eq!(got.total(), 480);
    }

    #[test]
    fn accumulated_passes_count_the_largest_pass_and_the_summed_gradients() {
        // Two passes of 5 samples: each forward keeps 25; the first pass's gradients (100) are
        // alive through the second.
        let marks = [
            (Phase::Upload, reading(305)),
            (Phase::Forward, reading(330)),
            (Phase::Backward, reading(405)),
            (Phase::Upload, reading(405)),
            (Phase::Forward, reading(430)),
            (Phase::Backward, reading(405)),
            (Phase::Optimizer, reading(300)),
        ];
        let got = of_step(&marks, 300, SETUP, 0, 440).unwrap();
        assert_eq!((got.input, got.activation, got.gradient), (5, 25, 100));
        assert_eq!(got.other, 440 - 100 - 200 - 5 - 25 - 100);
    }

    #[test]
    fn a_mark_below_the_sum_cuts_the_later_categories_and_leaves_no_other() {
        let marks = [
            (Phase::Upload, reading(310)),
            (Phase::Forward, reading(360)),
            (Phase::Backward, reading(410)),
            (Phase::Optimizer, reading(300)),
        ];
        let got = of_step(&marks, 300, SETUP, 0, 400).unwrap();
        assert_eq!((got.activation, got.gradient, got.other), (50, 40, 0));
        assert_eq!(got.total(), 400);
    }

    #[test]
    fn held_outputs_are_not_optimizer_state_and_no_check_points_mean_no_figures() {
        let marks = [
            (Phase::Upload, reading(110)),
            (Phase::Optimizer, reading(140)),
        ];
        let got = of_step(&marks, 100, SETUP, 40, 200).unwrap();
        assert_eq!(got.optimizer_state, 0);
        assert_eq!(
            of_step(&[(Phase::Optimizer, reading(140))], 100, SETUP, 0, 200),
            None
        );
    }

    #[test]
    fn a_no_grad_evaluation_keeps_nothing_beyond_its_logits() {
        let carried = Categories {
            parameter: 100,
            optimizer_state: 200,
            ..Categories::default()
        };
        let got = of_eval(300, 320, 328, 8, carried, 340);
        assert_eq!((got.input, got.activation, got.other), (20, 0, 20));
    }
}
