//! `strategies.free_cache`: give the allocator's cached pages back to the device (what
//! `torch.cuda.empty_cache()` does). It can only lower reserved memory, never the bytes in
//! use, and the next step has to allocate its pages again.

use crate::engine::config::FreeCache;

/// Whether to release the cache at the end of this step.
pub fn due(mode: FreeCache, last_step_of_epoch: bool) -> bool {
    match mode {
        FreeCache::Never => false,
        FreeCache::Step => true,
        FreeCache::Epoch => last_step_of_epoch,
    }
}
