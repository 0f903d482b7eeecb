//! Memory: what the allocator holds (measured) and what the config should need (predicted).

pub mod analytic;
pub mod categories;
pub mod high_water;
pub mod largest;
pub mod meter;
pub mod sampler;
pub mod trace;

pub use analytic::{LayerEstimate, MemoryPrediction, predict};
pub use categories::Categories;
pub use high_water::HighWater;
pub use sampler::MemoryReading;
pub use trace::StepTrace;
