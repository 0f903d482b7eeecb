//! Readings of the GPU allocator (cubecl's memory pools behind burn's wgpu device).
//!
//! A reading needs a device sync first: burn's fusion is lazy, so without it the allocator has
//! not yet seen the work queued so far. That sync is also why per-phase sampling costs time.

use burn::cubecl::MemoryScope;
use burn::cubecl::client::Client;
use burn::tensor::{Device, ExecutionError};
use serde::{Deserialize, Serialize};

use crate::engine::device::cube_client;
use crate::engine::error::EngineError;

/// One reading of the allocator, after a device sync.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryReading {
    /// Bytes of live allocations, padding excluded.
    pub in_use_bytes: u64,
    /// Bytes of device memory the pools hold, used or cached.
    pub reserved_bytes: u64,
    /// Padding inside live allocations.
    pub padding_bytes: u64,
    /// Live allocations (slices, not pages).
    pub allocs: u64,
    /// Of `in_use_bytes`, those in the pools the workload's tensors live in: cubecl's own
    /// memories beside them (a uniform buffer per launch, staging for reads) left out. A dry run
    /// launches nothing, so this is the figure a plan reproduces.
    #[serde(default)]
    pub pooled_in_use_bytes: u64,
}

impl MemoryReading {
    pub fn max(self, other: Self) -> Self {
        Self {
            in_use_bytes: self.in_use_bytes.max(other.in_use_bytes),
            reserved_bytes: self.reserved_bytes.max(other.reserved_bytes),
            padding_bytes: self.padding_bytes.max(other.padding_bytes),
            allocs: self.allocs.max(other.allocs),
            pooled_in_use_bytes: self.pooled_in_use_bytes.max(other.pooled_in_use_bytes),
        }
    }

    /// What the cubecl `client` holds now, without waiting for the device.
    pub fn of_client(client: &Client) -> Self {
        let report = client.memory_report(MemoryScope::Device);
        let usage = report.usage();
        Self {
            in_use_bytes: usage.bytes_in_use,
            reserved_bytes: usage.bytes_reserved,
            padding_bytes: usage.bytes_padding,
            allocs: usage.number_allocs,
            pooled_in_use_bytes: report
                .streams
                .iter()
                .map(|stream| stream.pools.usage().bytes_in_use)
                .sum(),
        }
    }
}

/// Make the allocator see every queued op. Natively: wait for the device (which also makes step
/// times honest). In the browser a blocking wait is not possible; there, flushing fusion's queue
/// is enough, because cubecl allocates and frees on the host when it enqueues work, so the
/// pool's counters are current once the queue is out.
fn settle(device: &Device) -> Result<(), ExecutionError> {
    if cfg!(target_arch = "wasm32") {
        device.flush()
    } else {
        device.sync()
    }
}

/// Settle the device, then read its allocator.
pub fn read(device: &Device, phase: &str) -> Result<MemoryReading, EngineError> {
    settle(device).map_err(|err| EngineError::from_execution(phase, err))?;
    if let Some(client) = cube_client(device) {
        return Ok(MemoryReading::of_client(&client));
    }
    let usage = device.memory_pool_usage().unwrap_or_default();
    Ok(MemoryReading {
        in_use_bytes: usage.bytes_in_use,
        reserved_bytes: usage.bytes_reserved,
        padding_bytes: usage.bytes_padding,
        allocs: usage.number_allocs,
        pooled_in_use_bytes: usage.bytes_in_use,
    })
}

/// Sum over the dynamic pools of the most pages each ever held, times its page size: a true
/// high-water mark of paged memory since the device started (pools may have peaked at different
/// moments, so this can exceed the largest simultaneous reservation).
pub fn paged_high_water_bytes(device: &Device) -> u64 {
    device
        .memory_pool_report()
        .unwrap_or_default()
        .iter()
        .map(|pool| pool.pages_peak * pool.page_size)
        .sum()
}

/// The largest page any of the device's pools carves now: how far apart two reserved figures can
/// be for one page kept or released.
pub fn largest_page_bytes(device: &Device) -> u64 {
    device
        .memory_pool_report()
        .unwrap_or_default()
        .iter()
        .map(|pool| pool.page_size)
        .max()
        .unwrap_or(0)
}

/// Free what an earlier run on this device may have left: autodiff graphs no tensor can reach
/// (burn sweeps them only at the end of a `backward()`, so an `autodiff` evaluation's graphs
/// outlive it until the next training backward; a backward through a one-element tensor runs
/// that sweep now), then the cached pages. A run then starts where a fresh process would.
pub fn start_clean(device: &Device) -> Result<(), EngineError> {
    let probe = burn::tensor::Tensor::<1>::zeros([1], &device.clone().autodiff()).require_grad();
    let _ = probe.sum().backward();
    release_cache(device)
}

/// Release cached pages so a run starts from the device's baseline.
pub fn release_cache(device: &Device) -> Result<(), EngineError> {
    settle(device).map_err(|err| EngineError::from_execution("cleanup", err))?;
    device.memory_cleanup();
    Ok(())
}
