//! The engine's typed errors. Every message names what was wrong and what is allowed, because
//! the fronts print them as they are.

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
    /// The run needed more than its `budget`; the device and the engine stay usable.
    #[error("{0}")]
    OutOfMemory(Box<OutOfMemory>),
}
