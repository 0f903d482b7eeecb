//! `strategies.free_cache`: give the allocator's cached pages back to the device (what
//! `torch.cuda.empty_cache()` does). It can only lower reserved memory, never the bytes in
//! use, and the next step has to allocate its pages again.

use crate::engine::config::{FreeCache as When, RunConfig};
use crate::engine::error::EngineError;
use crate::engine::memory::meter::Meter;

use super::Strategy;

pub struct FreeCache(When);

impl FreeCache {
    pub fn new(config: &RunConfig) -> Self {
        Self(config.strategies.free_cache)
    }
}

impl Strategy for FreeCache {
    fn end_of_step(&mut self, meter: &mut Meter, last_of_epoch: bool) -> Result<(), EngineError> {
        let due = match self.0 {
            When::Never => false,
            When::Step => true,
            When::Epoch => last_of_epoch,
        };
        if due {
            meter.release_cache()?;
        }
        Ok(())
    }
}
