//! The engine: config, data, models, training loop and memory accounting. It knows nothing of
//! the CLI or the page; both drive it through this API.

pub mod config;
pub mod data;
pub mod device;
pub mod error;
pub mod finder;
pub mod fused;
pub mod memory;
pub mod models;
pub mod overrides;
pub mod presets;
pub mod strategies;
pub mod train;
mod validate;

pub use config::RunConfig;
pub use device::{AdapterInfo, Gpu, acquire, acquire_with};
pub use error::{ConfigError, EngineError};
pub use train::{Run, StepOutcome, Timeline, train};
