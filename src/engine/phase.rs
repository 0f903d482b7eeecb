//! The phases of a training step, named as timeline.json, the out-of-memory report and the
//! charts name them.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Before the first step: parameters and anything a strategy keeps for the whole run.
    Setup,
    /// The batch has been copied to the device.
    Upload,
    /// Logits and loss exist; the autodiff graph holds what backward needs.
    Forward,
    /// Gradients exist; the graph has been consumed.
    Backward,
    /// Parameters updated, gradients dropped: the state carried to the next step.
    Optimizer,
    /// Largest reading while evaluating the test split (outputs of an eval batch alive).
    Eval,
}

impl Phase {
    /// The phases a step records, in order.
    pub const ALL: [Phase; 5] = [
        Self::Upload,
        Self::Forward,
        Self::Backward,
        Self::Optimizer,
        Self::Eval,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Setup => "setup",
            Self::Upload => "upload",
            Self::Forward => "forward",
            Self::Backward => "backward",
            Self::Optimizer => "optimizer",
            Self::Eval => "eval",
        }
    }
}
