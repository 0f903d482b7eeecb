//! The training loop and what it records.

mod export;
pub(crate) mod optimizer;
pub mod records;
mod run;
mod tap;
mod trainer;

pub use records::{EvalRecord, PredictedBytes, StepRecord, Summary, Timeline};
pub use run::{Run, StepOutcome, train};
