//! Acquiring the GPU through burn's wgpu runtime, on the async path the browser needs too.
//!
//! A process can initialise the runtime once; every run after the first shares that device, so
//! runs start by releasing what the previous one left cached (see `train::Run::new`).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};

use burn::cubecl::client::Client;
use burn::tensor::wgpu::{MemoryConfiguration, wgpu};
use burn::tensor::{Device, FloatDType};
use serde::{Deserialize, Serialize};

use crate::engine::config::MemoryPool;
use crate::engine::error::EngineError;

mod modelled;
pub mod planner;
mod turns;

pub use modelled::{ModelledAdapter, ModelledLimits};
pub use planner::{
    Planner, fresh_planner, host_stand_in, planner_async, planner_for, this_modelled_adapter,
};
#[cfg(not(target_arch = "wasm32"))]
pub use planner::{planner, planner_modelling};
pub use turns::{Launches, Turn, take_turn};

/// The backend name a planning device reports (`planner`).
pub const PLANNING_BACKEND: &str = "noop";

/// The largest binding (and so page, and tensor) the planning device states: all that Vulkan's
/// 32-bit `maxStorageBufferRange` can express.
pub const PLAN_BINDING_BYTES: u64 = u32::MAX as u64;

/// What the adapter is, as the summary and the page report it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct AdapterInfo {
    pub name: String,
    /// The graphics API: vulkan, metal, dx12, gl or webgpu.
    pub backend: String,
    /// Whether the adapter offers shader-f16 and burn can compute in f16 on it.
    pub shader_f16: bool,
    /// Largest single buffer the device accepts, in bytes.
    pub max_buffer_size: u64,
    /// Largest buffer one kernel may bind: cubecl's pages (and so any one tensor) stop here,
    /// in a dry run too.
    #[serde(default)]
    pub max_binding_size: u64,
}

/// The initialised device (without autodiff) and what it runs on.
#[derive(Clone, Debug)]
pub struct Gpu {
    pub device: Device,
    pub adapter: AdapterInfo,
    /// The allocator configuration the device started with.
    pub memory_pool: MemoryPool,
    /// A planning device: the adapter it models (`None` for a device that runs).
    pub modelled: Option<ModelledAdapter>,
}

static GPU: OnceLock<Gpu> = OnceLock::new();
/// Set while one caller initialises the runtime, which refuses a second init; the others wait
/// for it here (the page may ask twice before the first answer, natively two threads may).
static INITIALISING: AtomicBool = AtomicBool::new(false);
static WAITING: Mutex<Vec<Waker>> = Mutex::new(Vec::new());

/// Ready once no caller is initialising.
struct InitDone;

impl Future for InitDone {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if !INITIALISING.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        WAITING
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(cx.waker().clone());
        // It may have finished between the check and the registration.
        if INITIALISING.load(Ordering::Acquire) {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }
}

/// The process's GPU, initialised on first use with the best adapter wgpu offers and cubecl's
/// default pools.
pub async fn acquire() -> Result<Gpu, EngineError> {
    acquire_with(MemoryPool::default()).await
}

/// As [`acquire`], starting the device with `pool` if it is not running yet. A device already
/// running keeps its pools (cubecl fixes them at start); runs compare and say so.
pub async fn acquire_with(pool: MemoryPool) -> Result<Gpu, EngineError> {
    loop {
        if let Some(gpu) = GPU.get() {
            return Ok(gpu.clone());
        }
        let first = INITIALISING
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if first {
            break;
        }
        InitDone.await;
    }
    let started = start(pool).await;
    INITIALISING.store(false, Ordering::Release);
    for waker in std::mem::take(&mut *WAITING.lock().unwrap_or_else(PoisonError::into_inner)) {
        waker.wake();
    }
    started
}

async fn start(pool: MemoryPool) -> Result<Gpu, EngineError> {
    // On WebGPU cubecl builds without sub-slicing: exclusive pages are all there is.
    #[cfg(target_arch = "wasm32")]
    let pool = {
        let _ = pool;
        MemoryPool::Exclusive
    };
    let memory = match pool {
        #[cfg(not(target_arch = "wasm32"))]
        MemoryPool::Subslices => MemoryConfiguration::Adaptive,
        _ => MemoryConfiguration::ExclusivePages,
    };
    let (device, setup) = Device::wgpu_options()
        .memory_config(memory)
        .init_with_setup_async()
        .await
        .map_err(|err| EngineError::NoAdapter(err.to_string()))?;
    let info = setup.adapter.get_info();
    let adapter = AdapterInfo {
        name: info.name.clone(),
        backend: info.backend.to_string().to_lowercase(),
        shader_f16: setup
            .adapter
            .features()
            .contains(wgpu::Features::SHADER_F16)
            && device.supports_dtype(FloatDType::F16),
        max_buffer_size: setup.device.limits().max_buffer_size,
        max_binding_size: setup.device.limits().max_storage_buffer_binding_size,
    };
    let gpu = Gpu {
        device,
        adapter,
        memory_pool: pool,
        modelled: None,
    };
    Ok(GPU.get_or_init(|| gpu).clone())
}

/// The cubecl client behind a burn device: what vramlab's own kernels allocate through and the
/// launch observer reads from, the same pools burn's tensors use. `None` for a device that is
/// not cubecl's.
pub fn cube_client(device: &Device) -> Option<Client> {
    fn client(device: &burn_dispatch::DispatchDevice) -> Option<Client> {
        match device {
            burn_dispatch::DispatchDevice::Cube(cube) => Some(cube.client()),
            burn_dispatch::DispatchDevice::Autodiff(inner) => client(&inner.clone().inner()),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }
    client(device.as_dispatch())
}

/// Whether `device` still answers: one four-byte readback. A device wgpu has reported lost
/// answers [`EngineError::DeviceLost`]. In the browser that report (the device's `lost`
/// promise) can land after the first failures it causes, which then read as a plain
/// [`EngineError::Device`] (a staging buffer that could not be mapped); probing once the
/// browser has had its turn tells a lost device from a failed step.
pub async fn probe(device: &Device) -> Result<(), EngineError> {
    burn::tensor::Tensor::<1>::zeros([1], device)
        .into_data_async()
        .await
        .map(|_| ())
        .map_err(|err| EngineError::from_execution("device probe", err))
}
