//! Memory: what the allocator holds (measured) and what the config should need (predicted).

pub mod analytic;
pub mod sampler;

pub use analytic::{LayerEstimate, MemoryPrediction, predict};
pub use sampler::{MemoryReading, Phase};
