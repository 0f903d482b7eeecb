//! Memory: what the allocator holds (measured) and what the config should need (predicted).

pub mod analytic;
pub mod budget;
pub mod sampler;
pub mod suggest;

pub use analytic::{LayerEstimate, MemoryPrediction, predict};
pub use budget::{Budget, BudgetWatch, OutOfMemory};
pub use sampler::{MemoryReading, Phase};
