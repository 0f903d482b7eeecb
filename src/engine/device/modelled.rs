//! The adapter a plan models: what cubecl reads of an adapter when it compiles kernels and sizes
//! its pools (features, the limits it reads, subgroup sizes), taken from a real adapter and
//! stated again by the planning device. A plan carries it, so a plan made in one place (the
//! page, modelling the browser's adapter) can be made again in another (`vramlab plan
//! --model-adapter`) to the byte.

use burn::tensor::wgpu::wgpu;
use serde::{Deserialize, Serialize};

/// An adapter as the planning device states it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelledAdapter {
    /// The modelled adapter's name, as its driver gives it.
    pub name: String,
    /// `cpu`, `integrated`, `discrete`, `virtual` or `other`.
    pub device_type: String,
    /// wgpu's feature bits (`wgpu::Features`): its own extensions' word, then WebGPU's.
    pub features: [u64; 2],
    pub subgroup_min_size: u32,
    pub subgroup_max_size: u32,
    pub limits: ModelledLimits,
}

/// The limits cubecl reads when it sizes pools, chooses kernels and launches them, and those
/// wgpu validates its pipelines against. Every other limit is wgpu's default; the binding and
/// buffer limits are the planning device's own (`PLAN_BINDING_BYTES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelledLimits {
    pub min_storage_buffer_offset_alignment: u32,
    pub min_uniform_buffer_offset_alignment: u32,
    pub max_storage_buffers_per_shader_stage: u32,
    pub max_uniform_buffer_binding_size: u64,
    pub max_bindings_per_bind_group: u32,
    pub max_compute_workgroup_storage_size: u32,
    pub max_compute_invocations_per_workgroup: u32,
    pub max_compute_workgroup_size_x: u32,
    pub max_compute_workgroup_size_y: u32,
    pub max_compute_workgroup_size_z: u32,
    pub max_compute_workgroups_per_dimension: u32,
}

impl ModelledAdapter {
    /// What `adapter` states.
    pub fn of(adapter: &wgpu::Adapter) -> Self {
        let info = adapter.get_info();
        let limits = adapter.limits();
        Self {
            name: info.name,
            device_type: device_type_name(info.device_type).to_owned(),
            features: adapter.features().bits().0,
            subgroup_min_size: info.subgroup_min_size,
            subgroup_max_size: info.subgroup_max_size,
            limits: ModelledLimits {
                min_storage_buffer_offset_alignment: limits.min_storage_buffer_offset_alignment,
                min_uniform_buffer_offset_alignment: limits.min_uniform_buffer_offset_alignment,
                max_storage_buffers_per_shader_stage: limits.max_storage_buffers_per_shader_stage,
                max_uniform_buffer_binding_size: limits.max_uniform_buffer_binding_size,
                max_bindings_per_bind_group: limits.max_bindings_per_bind_group,
                max_compute_workgroup_storage_size: limits.max_compute_workgroup_storage_size,
                max_compute_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
                max_compute_workgroup_size_x: limits.max_compute_workgroup_size_x,
                max_compute_workgroup_size_y: limits.max_compute_workgroup_size_y,
                max_compute_workgroup_size_z: limits.max_compute_workgroup_size_z,
                max_compute_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
            },
        }
    }

    /// The features as wgpu reads them (bits this wgpu does not know are dropped).
    pub fn wgpu_features(&self) -> wgpu::Features {
        let [native, web] = self.features;
        wgpu::Features {
            features_wgpu: wgpu::FeaturesWGPU::from_bits_truncate(native),
            features_webgpu: wgpu::FeaturesWebGPU::from_bits_truncate(web),
        }
    }

    /// wgpu's default limits with the modelled ones and a binding limit of `binding_bytes`.
    pub fn wgpu_limits(&self, binding_bytes: u64) -> wgpu::Limits {
        let m = &self.limits;
        wgpu::Limits {
            min_storage_buffer_offset_alignment: m.min_storage_buffer_offset_alignment,
            min_uniform_buffer_offset_alignment: m.min_uniform_buffer_offset_alignment,
            max_storage_buffers_per_shader_stage: m.max_storage_buffers_per_shader_stage,
            max_uniform_buffer_binding_size: m.max_uniform_buffer_binding_size,
            max_bindings_per_bind_group: m.max_bindings_per_bind_group,
            max_compute_workgroup_storage_size: m.max_compute_workgroup_storage_size,
            max_compute_invocations_per_workgroup: m.max_compute_invocations_per_workgroup,
            max_compute_workgroup_size_x: m.max_compute_workgroup_size_x,
            max_compute_workgroup_size_y: m.max_compute_workgroup_size_y,
            max_compute_workgroup_size_z: m.max_compute_workgroup_size_z,
            max_compute_workgroups_per_dimension: m.max_compute_workgroups_per_dimension,
            max_storage_buffer_binding_size: binding_bytes,
            max_buffer_size: binding_bytes,
            ..wgpu::Limits::default()
        }
    }

    pub fn wgpu_device_type(&self) -> wgpu::DeviceType {
        match self.device_type.as_str() {
            "cpu" => wgpu::DeviceType::Cpu,
            "integrated" => wgpu::DeviceType::IntegratedGpu,
            "discrete" => wgpu::DeviceType::DiscreteGpu,
            "virtual" => wgpu::DeviceType::VirtualGpu,
            _ => wgpu::DeviceType::Other,
        }
    }

    /// The same adapter stating shader-f16 where it does not, its name saying so: the page
    /// plans for the cards people train on (every card in its list has f16 through Vulkan),
    /// while the browser's own adapter may lack it (SwiftShader does). Nothing runs on a
    /// planning device, so only the kernels compiled and the dtypes allowed change.
    pub fn with_shader_f16(mut self) -> Self {
        if !self.shader_f16() {
            let [native, web] = self.features;
            let f16 = wgpu::Features::SHADER_F16.bits().0;
            self.features = [native | f16[0], web | f16[1]];
            let name = if self.name.is_empty() {
                "an adapter that gives no name"
            } else {
                self.name.as_str()
            };
            self.name = format!("{name} (with shader-f16 stated for the plan)");
        }
        self
    }

    /// Whether it offers shader-f16.
    pub fn shader_f16(&self) -> bool {
        self.wgpu_features().contains(wgpu::Features::SHADER_F16)
    }
}

fn device_type_name(kind: wgpu::DeviceType) -> &'static str {
    match kind {
        wgpu::DeviceType::Cpu => "cpu",
        wgpu::DeviceType::IntegratedGpu => "integrated",
        wgpu::DeviceType::DiscreteGpu => "discrete",
        wgpu::DeviceType::VirtualGpu => "virtual",
        wgpu::DeviceType::Other => "other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ModelledAdapter {
        ModelledAdapter {
            name: "a card".into(),
            device_type: "discrete".into(),
            features: wgpu::Features::SHADER_F16.bits().0,
            subgroup_min_size: 32,
            subgroup_max_size: 32,
            limits: ModelledLimits {
                min_storage_buffer_offset_alignment: 32,
                min_uniform_buffer_offset_alignment: 64,
                max_storage_buffers_per_shader_stage: 12,
                max_uniform_buffer_binding_size: 65_536,
                max_bindings_per_bind_group: 1_000,
                max_compute_workgroup_storage_size: 32_768,
                max_compute_invocations_per_workgroup: 1_024,
                max_compute_workgroup_size_x: 1_024,
                max_compute_workgroup_size_y: 1_024,
                max_compute_workgroup_size_z: 64,
                max_compute_workgroups_per_dimension: 65_535,
            },
        }
    }

    #[test]
    fn a_modelled_adapter_survives_json_and_states_what_it_read() {
        let modelled = sample();
        let back: ModelledAdapter =
            serde_json::from_str(&serde_json::to_string(&modelled).unwrap()).unwrap();
        assert_eq!(back, modelled);
        assert!(back.shader_f16());
        assert_eq!(back.wgpu_device_type(), wgpu::DeviceType::DiscreteGpu);
        let limits = back.wgpu_limits(1 << 32);
        assert_eq!(limits.min_storage_buffer_offset_alignment, 32);
        assert_eq!(limits.max_storage_buffers_per_shader_stage, 12);
        assert_eq!(limits.max_compute_workgroup_size_z, 64);
        assert_eq!(limits.max_storage_buffer_binding_size, 1 << 32);
        assert_eq!(limits.max_buffer_size, 1 << 32);
    }

    #[test]
    fn shader_f16_is_stated_where_the_adapter_lacks_it_and_the_name_says_so() {
        let lacking = ModelledAdapter {
            features: [0, 0],
            ..sample()
        };
        assert!(!lacking.shader_f16());
        let stated = lacking.with_shader_f16();
        assert!(stated.shader_f16());
        assert!(
            stated
                .name
                .ends_with("(with shader-f16 stated for the plan)")
        );
        let had = sample().with_shader_f16();
        assert_eq!(had, sample(), "an adapter with f16 is left as it is");
    }
}
