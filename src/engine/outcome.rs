//! Typed outcomes the engine hands its fronts: where a run ran out of memory, what would fit
//! instead, and which settings could not run as asked. Each front renders them in its own
//! words; the engine names config fields, never a front's flags or buttons.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::engine::format::ByteFormat;
use crate::engine::phase::Phase;

/// The allocation a budget check followed: what the step had just created.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Site {
    ModelParameters,
    /// The training split, uploaded once (`data_residency` = `device`).
    ResidentData,
    /// Data parallel's gradient buckets, allocated as DDP wraps the model.
    GradientBuckets,
    BatchUpload,
    /// An activated layer's output (1-based), in training or evaluation.
    LayerOutput(usize),
    LogitsAndLoss,
    Gradients,
    /// Updated parameters and the optimizer's state.
    OptimizerStep,
    /// The int8 copy of the weights an evaluation runs on.
    Int8Weights,
    EvalLogits,
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ModelParameters => write!(f, "model parameters"),
            Self::ResidentData => write!(f, "training split resident on the device"),
            Self::GradientBuckets => write!(f, "data parallel's gradient buckets"),
            Self::BatchUpload => write!(f, "batch upload"),
            Self::LayerOutput(layer) => write!(f, "layer {layer} output"),
            Self::LogitsAndLoss => write!(f, "logits and loss"),
            Self::Gradients => write!(f, "gradients"),
            Self::OptimizerStep => {
                write!(f, "optimizer step (updated parameters, optimizer state)")
            }
            Self::Int8Weights => write!(f, "int8 copy of the weights"),
            Self::EvalLogits => write!(f, "evaluation batch logits"),
        }
    }
}

/// One change to the config that the analytic model estimates would fit the budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Suggestion {
    /// The config field, as a config file and `path=value` overrides name it.
    pub field: String,
    /// Its new value, in the same `path=value` form.
    pub value: String,
    /// The estimated peak with the change (calibrated by what the failed run needed); `None`
    /// for a change the estimate cannot see, such as the pool kind.
    pub estimated_peak_bytes: Option<u64>,
    /// Changes made together with this one, as `path=value`, when no single change fits.
    #[serde(default)]
    pub with: Vec<String>,
}

impl Suggestion {
    /// Every change it makes, as `path=value`: those it comes with, then its own.
    pub fn assignments(&self) -> Vec<String> {
        self.with
            .iter()
            .cloned()
            .chain(std::iter::once(format!("{}={}", self.field, self.value)))
            .collect()
    }
}

/// A run that needed more than its budget: where, and by how much.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutOfMemory {
    /// The step (1-based) that failed; `None` while the run was being set up.
    pub step: Option<usize>,
    pub phase: Phase,
    /// The check point that found it: the tensor or layer allocated just before.
    pub site: Site,
    /// When bytes in use passed the budget between two check points: the kernel at whose launch
    /// they peaked (the temporary's owner).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// Bytes allocated since the previous check (the allocation that did not fit, with any made
    /// since the check before it).
    pub asked_bytes: u64,
    /// In use at the previous check.
    pub in_use_bytes: u64,
    /// Pages the allocator kept after releasing its cache.
    pub reserved_bytes: u64,
    pub budget_bytes: u64,
    /// Single changes estimated to fit, most useful first; filled in by the run.
    pub suggestions: Vec<Suggestion>,
    /// The parameters alone, estimated (and calibrated): the floor no strategy goes below.
    pub estimated_parameter_bytes: u64,
}

/// Three decimals: a budget a few KiB short of a run shows in its figures.
const FIGURE: ByteFormat = ByteFormat::MIB.decimals(3);

impl OutOfMemory {
    /// Whether the live bytes fit and only the pool's pages did not.
    pub fn live_bytes_fit(&self) -> bool {
        self.in_use_bytes + self.asked_bytes <= self.budget_bytes
    }

    /// The bytes the run was seen to need at the failing check.
    pub fn needed_bytes(&self) -> u64 {
        (self.in_use_bytes + self.asked_bytes).max(self.reserved_bytes)
    }

    /// Where and how much, in one line.
    pub fn headline(&self) -> String {
        let mut line = match self.step {
            Some(step) => format!("out of memory at step {step}, {}", self.phase.name()),
            None => "out of memory while setting up the run".to_string(),
        };
        let site = match &self.kernel {
            Some(kernel) => format!("{}, in use peaking at kernel {kernel}", self.site),
            None => self.site.to_string(),
        };
        line.push_str(&format!(
            " ({site}): asked {} with {} in use (the pool kept {}); budget {}",
            FIGURE.of(self.asked_bytes),
            FIGURE.of(self.in_use_bytes),
            FIGURE.of(self.reserved_bytes),
            FIGURE.of(self.budget_bytes),
        ));
        if self.live_bytes_fit() {
            line.push_str(
                "; the live bytes fit, the pool's pages do not (its pages are larger than what \
                 they hold)",
            );
        }
        line
    }

    /// The headline, then each suggestion rendered by `render`, under a heading a front can
    /// word its own way.
    pub fn describe(&self, render: impl Fn(&Suggestion) -> String) -> String {
        let mut text = self.headline();
        text.push_str("\nwhat would fit, by the analytic model's estimates:");
        if self.suggestions.is_empty() {
            text.push_str(&format!(
                "\n  no single change is estimated to fit; the parameters alone are {}: a \
                 smaller model or a larger budget",
                FIGURE.of(self.estimated_parameter_bytes)
            ));
        }
        for suggestion in &self.suggestions {
            text.push_str("\n  ");
            text.push_str(&render(suggestion));
        }
        text
    }
}

/// A suggestion in the engine's own terms: the config field and its value.
pub fn field_and_value(suggestion: &Suggestion) -> String {
    let mut text = suggestion.assignments().join(", ");
    match suggestion.estimated_peak_bytes {
        Some(peak) => text.push_str(&format!(" (estimated peak {})", FIGURE.of(peak))),
        None => text.push_str(
            " (the live bytes fit; exclusive pages are sized to each allocation; the pools are \
             chosen when the device starts)",
        ),
    }
    text
}

impl fmt::Display for OutOfMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.describe(field_and_value))
    }
}

/// A setting that could not run as asked, and what ran instead.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fallback {
    /// The config field, e.g. `strategies.mixed_precision`.
    pub field: String,
    /// The value that was asked for.
    pub value: String,
    pub reason: String,
}

impl Fallback {
    pub fn new(field: &str, value: &str, reason: impl Into<String>) -> Self {
        Self {
            field: field.to_string(),
            value: value.to_string(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self
            .field
            .strip_prefix("strategies.")
            .unwrap_or(&self.field);
        write!(f, "{name} {}: {}", self.value, self.reason)
    }
}
