//! The engine: config, data, models, training loop and memory accounting. It knows nothing of
//! the CLI or the page; both drive it through this API.
//!
//! Dependencies run one way, in layers: plain values (`format`, `phase`, `plot`, `table`) under
//! `outcome` under `error` under `config`; `data`, `device`, the presets, `ops` and `models`
//! above them; `memory`, then `strategies`, then `families`; `train` above those, and what drives
//! whole runs (`plan`, `estimate_check`, `finder`, `claims`) on top. `tests/suite/imports.rs` holds the engine to
//! it (its `LAYERS`, with the few imports that go up and why).

pub mod claims;
pub mod config;
pub mod data;
pub mod device;
pub mod error;
pub mod estimate_check;
pub mod families;
pub mod finder;
pub mod flops;
pub mod format;
pub mod fused;
pub mod hf_config;
pub mod layout;
pub mod link;
pub mod memory;
pub mod models;
pub mod ops;
pub mod outcome;
pub mod overrides;
pub mod phase;
pub mod plan;
pub mod plot;
pub mod presets;
pub mod recipe;
pub mod strategies;
pub mod suggest;
pub mod table;
pub mod train;
pub(crate) mod validate;

pub use config::RunConfig;
pub use device::{AdapterInfo, Gpu, acquire, acquire_with};
pub use error::{ConfigError, EngineError};
pub use train::{Run, StepOutcome, Timeline, train};
pub use validate::Purpose;
