//! Enforcing a `budget`: run as if the GPU had only this much memory (the
//! `set_per_process_memory_fraction` lesson, and "train on a 6 GB laptop").
//!
//! cubecl 0.11 has no cap to set: its `MemoryConfiguration` offers `Adaptive` or
//! `ExclusivePages` and nothing else, and its own `OutOfMemory` only reports a driver that
//! refused. So the engine enforces the budget at the points where its tensors are allocated:
//! the model's parameters and a resident data set when a run starts, then in every step the
//! batch upload, each activation, the loss, the gradients, the optimizer step and each
//! evaluation batch. A check waits for the device and reads the allocator, so what it compares
//! is what the allocator holds, not an estimate. When the pages the allocator keeps pass the
//! budget but the live bytes do not, the cache is released first and the pages read again, as a
//! real allocator retries after freeing its cache before it gives up.

use burn::tensor::Device;

use crate::engine::error::EngineError;
use crate::engine::outcome::{OutOfMemory, Site};
use crate::engine::phase::Phase;

use super::sampler::{self, MemoryReading};

/// Enforces a budget: one per run, carried through the places that allocate.
#[derive(Clone, Debug)]
pub struct BudgetWatch {
    device: Device,
    limit: u64,
    /// In use at the last check that passed.
    last_in_use: u64,
}

impl BudgetWatch {
    pub fn new(device: &Device, limit: u64, start: MemoryReading) -> Self {
        Self {
            device: device.clone(),
            limit,
            last_in_use: start.in_use_bytes,
        }
    }

    /// Read the allocator after `site` allocated; fail when the live bytes, or the pages the
    /// allocator must keep for them, pass the budget.
    pub fn check(&mut self, phase: Phase, site: Site) -> Result<MemoryReading, EngineError> {
        let mut reading = sampler::read(&self.device, phase.name())?;
        if reading.in_use_bytes <= self.limit && reading.reserved_bytes > self.limit {
            sampler::release_cache(&self.device)?;
            reading = sampler::read(&self.device, phase.name())?;
        }
        if reading.in_use_bytes > self.limit || reading.reserved_bytes > self.limit {
            return Err(EngineError::OutOfMemory(Box::new(OutOfMemory {
                step: None,
                phase,
                site,
                asked_bytes: reading.in_use_bytes.saturating_sub(self.last_in_use),
                in_use_bytes: self.last_in_use,
                reserved_bytes: reading.reserved_bytes,
                budget_bytes: self.limit,
                suggestions: Vec::new(),
                estimated_parameter_bytes: 0,
            })));
        }
        self.last_in_use = reading.in_use_bytes;
        Ok(reading)
    }
}
