//! Memory: what the allocator holds (measured) and what the config should need (predicted).

pub mod analytic;
pub mod budget;
pub mod meter;
pub mod sampler;

pub use analytic::{LayerEstimate, MemoryPrediction, predict};
pub use budget::BudgetWatch;
pub use sampler::MemoryReading;
