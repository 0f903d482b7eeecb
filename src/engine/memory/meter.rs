//! A run's memory instruments: the allocator read at the step's check points, its high-water
//! mark between them (read at every kernel launch), the budget both are held to, and what a
//! step's record keeps of them.
//!
//! The budget: cubecl 0.11 has no cap to set (its `MemoryConfiguration` offers `Adaptive` or
//! `ExclusivePages` and nothing else, and its own out-of-memory only reports a driver that
//! refused), so the run behaves like a GPU with `budget` bytes by checking, at every check
//! point, the most the allocator held since the one before: bytes in use at their high-water
//! mark, so a temporary that came and went between two checks still fails the step. Reserved
//! pages are held to the budget at the check point itself: when they pass it but the live bytes
//! do not, the cache is released and the pages read again, as a real allocator retries after
//! freeing its cache before it gives up.

use std::collections::BTreeMap;

use burn::tensor::Device;

use crate::engine::config::MemorySampling;
use crate::engine::error::EngineError;
use crate::engine::outcome::{OutOfMemory, Site};
use crate::engine::phase::Phase;

use super::high_water::{Closed, HighWater, LaunchWatch, short_kernel_name};
use super::sampler::{self, MemoryReading};
use super::trace::StepTrace;

/// What one step's check points saw.
#[derive(Clone, Debug, Default)]
pub struct StepMemory {
    /// Each phase's largest reading at its check points.
    pub readings: BTreeMap<Phase, MemoryReading>,
    /// Each phase's high-water mark, where its check points bound it (all phases with
    /// per-phase sampling; evaluation always).
    pub high_water: BTreeMap<Phase, HighWater>,
    /// The step's high-water mark.
    pub step_high_water: HighWater,
    /// The readings kept at the step's check points, in the order they were read (what the
    /// step's categories are differences of).
    pub marks: Vec<(Phase, MemoryReading)>,
    /// In use at every launch and check point since the step began.
    pub trace: StepTrace,
}

pub struct Meter {
    device: Device,
    /// Read after every check point (`phase`), or only where a reading is always taken.
    per_phase: bool,
    limit: Option<u64>,
    /// In use at the last check that passed: an out-of-memory's "asked" counts from here.
    last_in_use: u64,
    /// `None` where the device has no launch observer to read from: the high-water mark is then
    /// the largest reading.
    launches: Option<LaunchWatch>,
    /// The most a reading between check points (a probe) saw since the last check point.
    between: HighWater,
    step: StepMemory,
}

impl Meter {
    /// Readings of `device` (the training device) from `baseline` on, held to `budget` bytes
    /// when there is one. The high-water mark is read at every launch with per-phase sampling
    /// or a budget; `step` sampling without a budget is the cheap mode, whose high-water mark is
    /// the largest reading (reading at every launch flushes cubecl's queue each time, which
    /// costs most where fusion would otherwise batch a whole step).
    pub fn new(
        device: &Device,
        sampling: MemorySampling,
        budget: Option<u64>,
        baseline: MemoryReading,
    ) -> Self {
        let per_phase = sampling == MemorySampling::Phase;
        Self {
            device: device.clone(),
            per_phase,
            limit: budget,
            last_in_use: baseline.in_use_bytes,
            launches: (per_phase || budget.is_some())
                .then(|| LaunchWatch::install(device, baseline))
                .flatten(),
            between: HighWater::default(),
            step: StepMemory::default(),
        }
    }

    pub fn budget(&self) -> Option<u64> {
        self.limit
    }

    /// Whether the high-water mark is read at every kernel launch (or is the largest reading).
    pub fn watches_launches(&self) -> bool {
        self.launches.is_some()
    }

    /// Read the allocator after `site` allocated, checking the budget: a reading every sampling
    /// mode takes (setup, end of step, evaluation).
    pub fn read(&mut self, phase: Phase, site: Site) -> Result<MemoryReading, EngineError> {
        let reading = sampler::read(&self.device, phase.name())?;
        let (mark, kernel) = self.close_interval(phase, reading);
        self.check(phase, site, reading, mark, kernel)
    }

    /// Check the budget after `site` allocated, when there is one (each activation).
    pub fn check_budget(&mut self, phase: Phase, site: Site) -> Result<(), EngineError> {
        match self.limit {
            Some(_) => self.read(phase, site).map(drop),
            None => Ok(()),
        }
    }

    /// A check point inside a step: read when the budget or per-phase sampling asks for it, and
    /// keep the phase's largest reading.
    pub fn checkpoint(&mut self, phase: Phase, site: Site) -> Result<(), EngineError> {
        if self.limit.is_none() && !self.per_phase {
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
        let slot = self.step.readings.entry(phase).or_insert(reading);
        *slot = slot.max(reading);
        self.step.marks.push((phase, reading));
    }

    /// What the check points saw since the last take. The trace goes on until the next step
    /// begins, so an evaluation after the step is drawn as part of it.
    pub fn take_step(&mut self) -> StepMemory {
        let trace = self.step.trace.clone();
        let taken = std::mem::take(&mut self.step);
        self.step.trace = trace;
        taken
    }

    /// A step starts: nothing seen since the last one (readbacks, the page's decision grid)
    /// counts towards it.
    pub fn begin_step(&mut self, step: usize) {
        self.step = StepMemory::default();
        self.step.trace = StepTrace {
            step,
            launches: self.launches.is_some(),
            ..StepTrace::default()
        };
        self.between = HighWater::default();
        if let Some(launches) = &self.launches {
            launches.forget();
        }
    }

    /// A reading beside the step's check points (a probe): it counts towards the interval's
    /// high-water mark but closes nothing and checks nothing.
    pub fn peek(&mut self, phase: Phase) -> Result<MemoryReading, EngineError> {
        let reading = sampler::read(&self.device, phase.name())?;
        self.between = self.between.max(HighWater::of(reading));
        self.step.trace.push(reading.in_use_bytes);
        Ok(reading)
    }

    /// Hand cached pages back to the device.
    pub fn release_cache(&self) -> Result<(), EngineError> {
        sampler::release_cache(&self.device)
    }

    /// End the interval since the last check point at `reading`: its high-water mark (and the
    /// kernel where bytes in use peaked), folded into the phase's and the step's.
    fn close_interval(
        &mut self,
        phase: Phase,
        reading: MemoryReading,
    ) -> (HighWater, Option<&'static str>) {
        let Closed {
            mark: launched,
            kernel,
            launches,
        } = match &self.launches {
            Some(watch) => watch.restart(reading),
            None => Closed {
                mark: HighWater::of(reading),
                kernel: None,
                launches: Vec::new(),
            },
        };
        let trace = &mut self.step.trace;
        launches.into_iter().for_each(|in_use| trace.push(in_use));
        trace.mark(phase, reading.in_use_bytes);
        let between = std::mem::take(&mut self.between);
        let kernel = kernel.filter(|_| launched.in_use_bytes >= between.in_use_bytes);
        let mark = launched.max(between);
        self.step.step_high_water = self.step.step_high_water.max(mark);
        if self.per_phase || phase == Phase::Eval {
            let slot = self.step.high_water.entry(phase).or_default();
            *slot = slot.max(mark);
        }
        (mark, kernel)
    }

    fn check(
        &mut self,
        phase: Phase,
        site: Site,
        mut reading: MemoryReading,
        mark: HighWater,
        kernel: Option<&'static str>,
    ) -> Result<MemoryReading, EngineError> {
        let Some(limit) = self.limit else {
            return Ok(reading);
        };
        let fail = |asked_bytes: u64, reserved_bytes: u64, kernel: Option<&str>| {
            EngineError::OutOfMemory(Box::new(OutOfMemory {
                step: None,
                phase,
                site: site.clone(),
                kernel: kernel.map(|name| short_kernel_name(name).to_string()),
                asked_bytes,
                in_use_bytes: self.last_in_use,
                reserved_bytes,
                budget_bytes: limit,
                suggestions: Vec::new(),
                estimated_parameter_bytes: 0,
            }))
        };
        if mark.in_use_bytes > limit {
            let asked = mark.in_use_bytes.saturating_sub(self.last_in_use);
            return Err(fail(asked, reading.reserved_bytes, kernel));
        }
        if reading.reserved_bytes > limit {
            sampler::release_cache(&self.device)?;
            reading = sampler::read(&self.device, phase.name())?;
            if reading.reserved_bytes > limit {
                let asked = reading.in_use_bytes.saturating_sub(self.last_in_use);
                return Err(fail(asked, reading.reserved_bytes, None));
            }
        }
        self.last_in_use = reading.in_use_bytes;
        Ok(reading)
    }
}
