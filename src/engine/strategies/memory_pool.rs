//! `strategies.memory_pool`: how cubecl's allocator carves device memory (the
//! `max_split_size_mb` lesson). cubecl 0.11 has two configurations and fixes one when the
//! device starts (`engine::device`), so the choice is made once per process or page load; a
//! run asking for the other says so.

use crate::engine::config::{MemoryPool, RunConfig};
use crate::engine::outcome::Fallback;

use super::{Report, Strategy};

/// Why pools of `kind` cannot hold a plan, when they cannot. cubecl 0.11's exclusive pool
/// allocates every page on the device and ignores the dry run's lazy mapping
/// (`exclusive_pool.rs` in cubecl-server), so a plan on it would take the memory it measures.
pub fn cannot_plan(kind: MemoryPool) -> Option<&'static str> {
    (kind == MemoryPool::Exclusive).then_some(
        "exclusive pages are allocated on the device even in a dry run (cubecl 0.11), so a plan \
         on them would take the memory it measures",
    )
}

pub struct Pools {
    fallback: Option<Fallback>,
}

impl Pools {
    /// `running`: the pools the device started with.
    pub fn new(config: &RunConfig, running: MemoryPool) -> Self {
        let asked = config.strategies.memory_pool;
        let fallback = (asked != running).then(|| {
            let reason = if cfg!(target_arch = "wasm32") {
                "cubecl has only exclusive pages on WebGPU; ran with exclusive".to_string()
            } else {
                format!(
                    "the device was started with {0} pools, and cubecl fixes them at start; \
                     ran with {0} (start a new process, or reload the page, to change it)",
                    running.name()
                )
            };
            Fallback::new("strategies.memory_pool", asked.name(), reason)
        });
        Self { fallback }
    }
}

impl Strategy for Pools {
    fn report(&self, report: &mut Report) {
        report.fallbacks.extend(self.fallback.clone());
    }
}
