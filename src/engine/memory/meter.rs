//! A run's memory instruments: allocator readings at the step's check points, the budget they
//! are held to, and the readings kept per phase for the step's record.

use std::collections::BTreeMap;

use burn::tensor::Device;

use crate::engine::config::MemorySampling;
use crate::engine::error::EngineError;
use crate::engine::outcome::Site;
use crate::engine::phase::Phase;

use super::budget::BudgetWatch;
use super::sampler::{self, MemoryReading};

pub struct Meter {
    device: Device,
    /// Read after every check point (`phase`), or only where a reading is always taken.
    per_phase: bool,
    watch: Option<BudgetWatch>,
    /// The current step's largest reading of each phase so far.
    phases: BTreeMap<Phase, MemoryReading>,
}

impl Meter {
    /// Readings of `device` (the training device), held to `budget` bytes when there is one.
    pub fn new(
        device: &Device,
        sampling: MemorySampling,
        budget: Option<u64>,
        baseline: MemoryReading,
    ) -> Self {
        Self {
            device: device.clone(),
            per_phase: sampling == MemorySampling::Phase,
            watch: budget.map(|limit| BudgetWatch::new(device, limit, baseline)),
            phases: BTreeMap::new(),
        }
    }

    /// Read the allocator after `site` allocated, checking the budget: a reading every sampling
    /// mode takes (setup, end of step, evaluation).
    pub fn read(&mut self, phase: Phase, site: Site) -> Result<MemoryReading, EngineError> {
        match &mut self.watch {
            Some(watch) => watch.check(phase, site),
            None => sampler::read(&self.device, phase.name()),
        }
    }

    /// Check the budget after `site` allocated, when there is one (each activation).
    pub fn check_budget(&mut self, phase: Phase, site: Site) -> Result<(), EngineError> {
        match &mut self.watch {
            Some(watch) => watch.check(phase, site).map(drop),
            None => Ok(()),
        }
    }

    /// A check point inside a step: read when the budget or per-phase sampling asks for it, and
    /// keep the phase's largest reading.
    pub fn checkpoint(&mut self, phase: Phase, site: Site) -> Result<(), EngineError> {
        if self.watch.is_none() && !self.per_phase {
            return Ok(());
        }
        let reading = self.read(phase, site)?;
        if self.per_phase {
            self.keep(phase, reading);
        }
        Ok(())
    }

    /// Keep `reading` as the phase's, when it is the largest so far.
    pub fn keep(&mut self, phase: Phase, reading: MemoryReading) {
        let slot = self.phases.entry(phase).or_insert(reading);
        *slot = slot.max(reading);
    }

    /// The step's readings by phase, leaving none for the next step.
    pub fn take_phases(&mut self) -> BTreeMap<Phase, MemoryReading> {
        std::mem::take(&mut self.phases)
    }

    /// A reading without a budget check (probes outside the step).
    pub fn peek(&self, phase: Phase) -> Result<MemoryReading, EngineError> {
        sampler::read(&self.device, phase.name())
    }

    /// Hand cached pages back to the device.
    pub fn release_cache(&self) -> Result<(), EngineError> {
        sampler::release_cache(&self.device)
    }
}
