//! Host memory a run keeps instead of device memory (`strategies.offload = activations`): each
//! checkpointed block's input moved to the host after its forward pass and back before its
//! recomputation, as torchtune's `enable_activation_offloading` and Unsloth's offloaded
//! checkpointing do it. The device side is planned by the allocator (the input is freed after
//! forward and allocated again for backward); the host side is counted here, byte for byte,
//! as tensors are moved (a host has no cubecl pool to read).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use burn::tensor::{DType, Shape};

/// The bytes a run holds on the host: now, and at most so far.
#[derive(Debug, Default)]
pub struct HostStash {
    held: AtomicU64,
    peak: AtomicU64,
}

/// A tensor's copy on the host: what allocating it again on the device needs. The host's
/// bytes are counted while it lives and freed when it goes: when backward brings it back, or
/// when burn's autodiff lets go of a graph that had no backward (an evaluation through
/// autodiff, whose graphs burn keeps past their batch as it keeps their device tensors).
#[derive(Debug)]
pub struct Stashed {
    pub shape: Shape,
    pub dtype: DType,
    bytes: u64,
    host: Arc<HostStash>,
}

impl Drop for Stashed {
    fn drop(&mut self) {
        self.host.held.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

impl HostStash {
    /// Counts a tensor of `shape` and `dtype` moved to the host, until the copy is dropped.
    pub fn keep(self: &Arc<Self>, shape: Shape, dtype: DType) -> Stashed {
        let bytes = shape.num_elements() as u64 * dtype.size() as u64;
        let held = self.held.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(held, Ordering::Relaxed);
        Stashed {
            shape,
            dtype,
            bytes,
            host: self.clone(),
        }
    }

    /// Bytes held on the host at most so far.
    pub fn peak_bytes(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }
}
