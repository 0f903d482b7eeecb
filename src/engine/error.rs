//! The engine's typed errors. Every message names what was wrong and what is allowed, because
//! the fronts print them as they are.

use burn::tensor::ExecutionError;
use thiserror::Error;

use crate::engine::outcome::OutOfMemory;

/// A configuration that cannot run. The CLI maps this to exit code 2.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ConfigError {
    #[error("{field}: {value} is out of range {range}")]
    OutOfRange {
        field: String,
        value: String,
        range: String,
    },
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("unknown preset {name:?}; the presets are: {known}")]
    UnknownPreset { name: String, known: String },
    #[error("--set {assignment}: {message}")]
    Override { assignment: String, message: String },
}

impl ConfigError {
    pub fn out_of_range(
        field: impl Into<String>,
        value: impl std::fmt::Display,
        range: impl std::fmt::Display,
    ) -> Self {
        Self::OutOfRange {
            field: field.into(),
            value: value.to_string(),
            range: range.to_string(),
        }
    }

    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The field this error is about, where it has one.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::OutOfRange { field, .. } | Self::Invalid { field, .. } => Some(field),
            _ => None,
        }
    }

    pub(crate) fn from_serde_path(err: serde_path_to_error::Error<serde_json::Error>) -> Self {
        let path = err.path().to_string();
        let field = if path.is_empty() || path == "." {
            "config".to_string()
        } else {
            path
        };
        let inner = err.into_inner();
        // serde's own message ends in "at line L column C"; keep it, it helps in files.
        Self::invalid(field, inner.to_string())
    }
}

/// Input as an error message quotes it: whole when short, else its start and its length, so a
/// megabyte pasted into a URL or a field does not come back as a megabyte of message.
pub fn excerpt(text: &str) -> String {
    const KEEP: usize = 60;
    match text.char_indices().nth(KEEP) {
        None => text.to_string(),
        Some((end, _)) => format!("{}… ({} characters)", &text[..end], text.chars().count()),
    }
}

/// Anything that stops a run after its config was accepted. The CLI maps this to exit code 1,
/// or 3 for out-of-memory.
#[derive(Debug, Error)]
pub enum EngineError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("no usable GPU adapter: {0}")]
    NoAdapter(String),
    #[error("the GPU failed during {phase}: {message}")]
    Device { phase: String, message: String },
    /// The GPU device is gone (destroyed, reset by its driver, or poisoned by a fault):
    /// nothing more runs on it in this process, or in this page.
    #[error("the GPU device was lost during {phase}: {reason}")]
    DeviceLost { phase: String, reason: String },
    /// The run needed more than its `budget`; the device and the engine stay usable.
    #[error("{0}")]
    OutOfMemory(Box<OutOfMemory>),
}

impl EngineError {
    /// A device failure during `phase`: [`EngineError::DeviceLost`] when the device is
    /// poisoned (every later call on it fails as well), else [`EngineError::Device`].
    pub fn from_execution(phase: &str, err: ExecutionError) -> Self {
        match err {
            ExecutionError::DevicePoisoned { reason } => Self::DeviceLost {
                phase: phase.into(),
                reason: plain_reason(&reason),
            },
            other => Self::Device {
                phase: phase.into(),
                message: other.to_string(),
            },
        }
    }
}

/// cubecl's chain of causes on one line: "Caused by:" labels, repeats and the (empty)
/// backtrace dropped.
fn plain_reason(reason: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for line in reason.lines() {
        let line = line.trim().trim_start_matches("Caused by:").trim();
        if line.is_empty() || line.starts_with("Backtrace") || line.starts_with("No backtrace") {
            continue;
        }
        if !parts.contains(&line) {
            parts.push(line);
        }
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_device_is_lost_and_its_reason_reads_on_one_line() {
        let err = ExecutionError::DevicePoisoned {
            reason: "The device is poisoned\nCaused by:\n  Destroyed: Device was destroyed.\n\
                     Backtrace:\nNo backtrace available"
                .into(),
        };
        match EngineError::from_execution("loss readback", err) {
            EngineError::DeviceLost { phase, reason } => {
                assert_eq!(phase, "loss readback");
                assert_eq!(
                    reason,
                    "The device is poisoned: Destroyed: Device was destroyed."
                );
            }
            other => panic!("{other}"),
        }
    }
}
