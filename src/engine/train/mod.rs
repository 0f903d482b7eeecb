//! The training loop and what it records.

pub mod adamw8bit;
mod export;
pub mod live;
pub(crate) mod optimizer;
mod pace;
pub mod records;
mod run;
mod runner;
mod tap;
mod trainer;

pub use records::{
    EvalRecord, KeptBytes, PredictedBytes, StepRange, StepRecord, Summary, Timeline,
};
pub use run::{KEEP_RECORDS_WHOLE, LOSS_READBACK_EVERY, Run, StepOutcome, train};
pub use runner::{InProcess, RunOutcome, Runner};
