//! The allocator's high-water mark: the most it held, read at every kernel launch.
//!
//! cubecl keeps no peak of bytes in use, and a reading at a phase's end misses what lived only
//! inside the phase (a matmul's workspace, the optimizer's intermediates). But cubecl tells a
//! process-wide launch observer of every kernel just before submitting it, after the buffers it
//! reads and writes were allocated: reading the allocator there sees each launch's working set.
//! What a reading can still miss is an allocation freed again before any later launch, which no
//! kernel used.
//!
//! One observer is installed for the process, once; each run's [`LaunchWatch`] registers with
//! it while it lives. (cubecl's observer slot is a guard that restores what it replaced when
//! dropped, so per-run guards dropped out of order, as a page dropping a stale run after
//! starting a new one would, would silence the new one.) The observer reads through the cubecl
//! client: burn's own reading would re-enter its fusion server, which is busy launching.

use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use burn::cubecl::client::Client;
use burn::cubecl::logging::{LaunchObservation, LaunchObserver};
use burn::tensor::Device;
use serde::{Deserialize, Serialize};

use super::sampler::MemoryReading;
use crate::engine::device::cube_client;

/// The most the allocator held over an interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HighWater {
    pub in_use_bytes: u64,
    pub reserved_bytes: u64,
    /// The high-water of [`MemoryReading::pooled_in_use_bytes`].
    #[serde(default)]
    pub pooled_in_use_bytes: u64,
}

impl HighWater {
    pub fn max(self, other: Self) -> Self {
        Self {
            in_use_bytes: self.in_use_bytes.max(other.in_use_bytes),
            reserved_bytes: self.reserved_bytes.max(other.reserved_bytes),
            pooled_in_use_bytes: self.pooled_in_use_bytes.max(other.pooled_in_use_bytes),
        }
    }

    pub fn of(reading: MemoryReading) -> Self {
        Self {
            in_use_bytes: reading.in_use_bytes,
            reserved_bytes: reading.reserved_bytes,
            pooled_in_use_bytes: reading.pooled_in_use_bytes,
        }
    }
}

/// An interval's high-water mark, and the kernel at whose launch bytes in use peaked.
struct Interval {
    mark: HighWater,
    kernel: Option<&'static str>,
    /// In use at each launch, in order (the memory of one step is drawn from these).
    launches: Vec<u64>,
}

impl Interval {
    fn from(start: MemoryReading) -> Self {
        Self {
            mark: HighWater::of(start),
            kernel: None,
            launches: Vec::new(),
        }
    }
}

/// What a closed interval saw.
pub struct Closed {
    /// Its high-water mark, counting the reading that closed it.
    pub mark: HighWater,
    /// The kernel at whose launch bytes in use peaked, when a launch set the mark.
    pub kernel: Option<&'static str>,
    /// In use at each launch inside it, in order.
    pub launches: Vec<u64>,
}

struct Watcher {
    client: Client,
    interval: Mutex<Interval>,
}

/// The runs watching launches now.
static WATCHERS: Mutex<Vec<Weak<Watcher>>> = Mutex::new(Vec::new());
static OBSERVER: OnceLock<LaunchObservation> = OnceLock::new();

/// The process's one launch observer: reads the allocator for every live watcher.
struct Dispatch;

impl LaunchObserver for Dispatch {
    fn launched(&self, kernel: &'static str) {
        let live: Vec<Arc<Watcher>> = WATCHERS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        for watcher in live {
            let now = MemoryReading::of_client(&watcher.client);
            let mut interval = watcher
                .interval
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if now.in_use_bytes > interval.mark.in_use_bytes {
                interval.kernel = Some(kernel);
            }
            interval.mark = interval.mark.max(HighWater::of(now));
            interval.launches.push(now.in_use_bytes);
        }
    }
}

/// One run's view of the launches: registered while it lives.
pub struct LaunchWatch {
    watcher: Arc<Watcher>,
}

impl LaunchWatch {
    /// Watch every launch from now on, starting from `start` (a reading just taken). `None`
    /// when the device has no cubecl client to read.
    pub fn install(device: &Device, start: MemoryReading) -> Option<Self> {
        let watcher = Arc::new(Watcher {
            client: cube_client(device)?,
            interval: Mutex::new(Interval::from(start)),
        });
        OBSERVER.get_or_init(|| LaunchObservation::new(Arc::new(Dispatch)));
        let mut watchers = WATCHERS.lock().unwrap_or_else(PoisonError::into_inner);
        watchers.retain(|w| w.strong_count() > 0);
        watchers.push(Arc::downgrade(&watcher));
        Some(Self { watcher })
    }

    /// Drop what was seen since the last restart and start a new interval from what the
    /// allocator holds now (work between two steps, such as the page's decision grid, belongs
    /// to neither).
    pub fn forget(&self) {
        let now = MemoryReading::of_client(&self.watcher.client);
        *self
            .watcher
            .interval
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Interval::from(now);
    }

    /// What the launches since the last restart saw, closed by `now` (a reading just taken
    /// after the device settled). The next interval starts from `now`.
    pub fn restart(&self, now: MemoryReading) -> Closed {
        let mut interval = self
            .watcher
            .interval
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let ended = std::mem::replace(&mut *interval, Interval::from(now));
        let kernel = ended
            .kernel
            .filter(|_| ended.mark.in_use_bytes > now.in_use_bytes);
        Closed {
            mark: ended.mark.max(HighWater::of(now)),
            kernel,
            launches: ended.launches,
        }
    }
}

/// A kernel's name without its module path and generics.
pub fn short_kernel_name(name: &str) -> &str {
    let plain = name.split('<').next().unwrap_or(name);
    plain.rsplit("::").next().unwrap_or(plain)
}
