//! The device plans run on: wgpu's noop backend, stating this machine's adapter (its features,
//! limits and subgroup sizes, so cubecl compiles the same kernels and sizes the same pools) with
//! one change, a binding limit as large as Vulkan can state. Nothing on it has memory behind it,
//! and a tensor this adapter could not bind is still carved and counted, so a plan for a model
//! far bigger than this machine is complete.
//!
//! It is a second cubecl device beside the process's GPU: a plan and a real run can share a
//! process (the tests compare them in one).

use std::sync::{Mutex, PoisonError};

use burn::tensor::wgpu::{MemoryConfiguration, WgpuSetup, wgpu};
use burn::tensor::{Device, FloatDType};

use super::{AdapterInfo, Gpu, PLAN_BINDING_BYTES, PLANNING_BACKEND};
use crate::engine::config::MemoryPool;
use crate::engine::error::EngineError;

/// The process's planning device, started on first use.
pub fn planner() -> Result<Gpu, EngineError> {
    static PLANNER: Mutex<Option<Gpu>> = Mutex::new(None);
    let mut slot = PLANNER.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(gpu) = &*slot {
        return Ok(gpu.clone());
    }
    let gpu = pollster::block_on(start())?;
    *slot = Some(gpu.clone());
    Ok(gpu)
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

async fn start() -> Result<Gpu, EngineError> {
    let modelled = this_adapter().await?;
    let info = modelled.get_info();
    let features = modelled.features();
    let mut limits = modelled.limits();
    limits.max_storage_buffer_binding_size = PLAN_BINDING_BYTES;
    limits.max_buffer_size = PLAN_BINDING_BYTES;
    let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: wgpu::Backends::NOOP,
        backend_options: wgpu::BackendOptions {
            noop: wgpu::NoopBackendOptions {
                enable: true,
                limits: Some(limits),
                features: Some(features),
                device_type: Some(info.device_type),
                subgroup_min_size: Some(info.subgroup_min_size),
                subgroup_max_size: Some(info.subgroup_max_size),
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
        name: info.name,
        backend: PLANNING_BACKEND.to_owned(),
        shader_f16: features.contains(wgpu::Features::SHADER_F16)
            && device.supports_dtype(FloatDType::F16),
        max_buffer_size: binds,
        max_binding_size: binds,
    };
    Ok(Gpu {
        device,
        adapter,
        memory_pool: MemoryPool::Subslices,
    })
}
