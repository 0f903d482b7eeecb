//! The device plans run on: wgpu's noop backend, stating an adapter (this machine's, the
//! browser's in the page, or one a plan names: its features, the limits cubecl reads and its
//! subgroup sizes, so cubecl compiles the same kernels and sizes the same pools) with one
//! change, a binding limit as large as Vulkan can state. Nothing on it has memory behind it,
//! and a tensor this adapter could not bind is still carved and counted, so a plan for a model
//! far bigger than this machine is complete.
//!
//! It is a second cubecl device beside the process's GPU: a plan and a real run can share a
//! process (the tests compare them in one).

use std::future::Future;
use std::sync::{Mutex, PoisonError};

use burn::tensor::wgpu::{MemoryConfiguration, WgpuSetup, wgpu};
use burn::tensor::{Device, FloatDType};

use super::{AdapterInfo, Gpu, ModelledAdapter, PLAN_BINDING_BYTES, PLANNING_BACKEND};
use crate::engine::config::MemoryPool;
use crate::engine::error::EngineError;

/// The planning devices started in this process, each with the adapter it models.
static PLANNERS: Mutex<Vec<Planner>> = Mutex::new(Vec::new());

/// The planning device and the wgpu device under it: in the browser nothing polls a device
/// wgpu-core runs (the browser polls only its own), so the page pumps it while it plans.
#[derive(Clone, Debug)]
pub struct Planner {
    /// The planning device; `gpu.modelled` is the adapter it states.
    pub gpu: Gpu,
    pub wgpu: wgpu::Device,
}

impl Planner {
    /// Fire the callbacks of finished work (buffer maps a plan's reads wait on). Natively
    /// cubecl's own polling thread does this; in the browser the caller must, while a plan runs.
    pub fn poll(&self) {
        let _ = self.wgpu.poll(wgpu::PollType::Poll);
    }
}

/// The process's planning device, modelling this machine's adapter, started on first use
/// (blocks while it starts).
#[cfg(not(target_arch = "wasm32"))]
pub fn planner() -> Result<Gpu, EngineError> {
    pollster::block_on(planner_async()).map(|planner| planner.gpu)
}

/// A planning device modelling `modelled` (an adapter a plan states, from wherever it was
/// made), started on first use (blocks while it starts).
#[cfg(not(target_arch = "wasm32"))]
pub fn planner_modelling(modelled: ModelledAdapter) -> Result<Gpu, EngineError> {
    pollster::block_on(planner_for(modelled)).map(|planner| planner.gpu)
}

/// The planning device modelling the adapter a default device would get here: this machine's
/// high-performance adapter natively, the browser's WebGPU adapter in the page.
pub async fn planner_async() -> Result<Planner, EngineError> {
    planner_for(this_modelled_adapter().await?).await
}

/// The planning device modelling `modelled`, started on first use.
pub async fn planner_for(modelled: ModelledAdapter) -> Result<Planner, EngineError> {
    let known = |planners: &[Planner]| {
        planners
            .iter()
            .find(|planner| planner.gpu.modelled.as_ref() == Some(&modelled))
            .cloned()
    };
    if let Some(planner) = known(&PLANNERS.lock().unwrap_or_else(PoisonError::into_inner)) {
        return Ok(planner);
    }
    let started = start(modelled.clone()).await?;
    let mut planners = PLANNERS.lock().unwrap_or_else(PoisonError::into_inner);
    // Two callers may have started one each (the page, between awaits): the first kept wins.
    if let Some(planner) = known(&planners) {
        return Ok(planner);
    }
    planners.push(started.clone());
    Ok(started)
}

/// A new planning device modelling `modelled`, never shared:
/// cubecl's pools keep their history (their page sizes follow the largest allocation served
/// so far), so a plan made after others on one device can reserve differently from the same
/// plan in a fresh process. The page plans each question on its own, as `vramlab plan` does in
/// a process of its own.
pub async fn fresh_planner(modelled: ModelledAdapter) -> Result<Planner, EngineError> {
    start(modelled).await
}

/// The device standing in for the host's memory under `strategies.offload = parameters`
/// (FSDP2's `CPUOffloadPolicy`): a planning device of its own, started once a process, that
/// holds the shards a plan keeps on the host so that the GPU's pools never count them. Nothing
/// on it is read or computed from (a gather allocates its host-to-device copy on the GPU), and
/// under a dry run its pages are never mapped, so it costs no memory whatever it holds.
///
/// Started synchronously: a noop device's adapter and device are ready at once, in the browser
/// too, so this polls its start once and says so if that ever changes.
pub fn host_stand_in(modelled: &ModelledAdapter) -> Result<Device, EngineError> {
    // One a modelled adapter: the shards are cast there (to f16 where the plan computes in
    // it), so the stand-in states the planning device's features.
    static HOSTS: Mutex<Vec<(ModelledAdapter, Device)>> = Mutex::new(Vec::new());
    let mut hosts = HOSTS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, device)) = hosts.iter().find(|(m, _)| m == modelled) {
        return Ok(device.clone());
    }
    let mut starting = std::pin::pin!(start(modelled.clone()));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let started = match starting.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(started) => started?,
        std::task::Poll::Pending => {
            return Err(EngineError::NoAdapter(
                "the host's stand-in device did not start at once (a noop device always has)"
                    .into(),
            ));
        }
    };
    hosts.push((modelled.clone(), started.gpu.device.clone()));
    Ok(started.gpu.device)
}

/// The adapter a default device would get here, as a planning device would model it.
pub async fn this_modelled_adapter() -> Result<ModelledAdapter, EngineError> {
    Ok(ModelledAdapter::of(&this_adapter().await?))
}

/// The adapter cubecl would pick for a default device: the high-performance one.
async fn this_adapter() -> Result<wgpu::Adapter, EngineError> {
    wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle())
        .request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        })
        .await
        .map_err(|err| EngineError::NoAdapter(err.to_string()))
}

async fn start(modelled: ModelledAdapter) -> Result<Planner, EngineError> {
    let features = modelled.wgpu_features();
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::NOOP,
        backend_options: wgpu::BackendOptions {
            noop: wgpu::NoopBackendOptions {
                enable: true,
                limits: Some(modelled.wgpu_limits(PLAN_BINDING_BYTES)),
                features: Some(features),
                device_type: Some(modelled.wgpu_device_type()),
                subgroup_min_size: Some(modelled.subgroup_min_size),
                subgroup_max_size: Some(modelled.subgroup_max_size),
            },
            ..Default::default()
        },
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    });
    let adapter = instance
        .request_adapter(&wgpu::RequestAdapterOptions::default())
        .await
        .map_err(|err| EngineError::NoAdapter(format!("the planning device: {err}")))?;
    // As cubecl requests a device on the adapter it models, at the limits wgpu rounded.
    let (device, queue) = adapter
        .request_device(&wgpu::DeviceDescriptor {
            required_features: features.difference(wgpu::Features::MAPPABLE_PRIMARY_BUFFERS),
            required_limits: adapter.limits(),
            memory_hints: wgpu::MemoryHints::MemoryUsage,
            // SAFETY: the noop backend executes nothing, so no experimental feature the modelled
            // adapter states (and cubecl requests on it) can misbehave here.
            experimental_features: unsafe { wgpu::ExperimentalFeatures::enabled() },
            ..Default::default()
        })
        .await
        .map_err(|err| EngineError::NoAdapter(format!("the planning device: {err}")))?;
    let binds = device.limits().max_storage_buffer_binding_size;
    let polled = device.clone();
    let setup = WgpuSetup {
        instance,
        adapter,
        device,
        queue,
        backend: wgpu::Backend::Noop,
    };
    let device = Device::wgpu_options()
        .setup(setup)
        .memory_config(MemoryConfiguration::Adaptive)
        .init()
        .map_err(|err| EngineError::NoAdapter(format!("the planning device: {err}")))?;
    let adapter = AdapterInfo {
        name: modelled.name.clone(),
        backend: PLANNING_BACKEND.to_owned(),
        shader_f16: modelled.shader_f16() && device.supports_dtype(FloatDType::F16),
        max_buffer_size: binds,
        max_binding_size: binds,
    };
    Ok(Planner {
        gpu: Gpu {
            device,
            adapter,
            memory_pool: MemoryPool::Subslices,
            modelled: Some(modelled),
        },
        wgpu: polled,
    })
}
