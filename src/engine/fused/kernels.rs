//! vramlab's own WGSL kernels (shaders/fused_mlp), launched through the cubecl client burn
//! uses, so their buffers come from, and are counted by, the same memory pool.

use burn::cubecl::client::Client;
use burn::cubecl::ir::UIntKind;
use burn::cubecl::ir::metadata::Info;
use burn::cubecl::prelude::*;
use burn::cubecl::server::{Handle, KernelArguments};
use burn::cubecl::{CubeKernel, PrecompiledSource};

/// Invocations per workgroup, as every kernel in shaders/fused_mlp declares.
const WORKGROUP: u32 = 64;
/// WebGPU's guaranteed limit on workgroups per dispatch dimension.
const MAX_GROUPS_X: u32 = 65_535;

/// One of the fused-step kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kernel {
    Forward,
    Loss,
    BackwardInput,
    BackwardWeights,
    Optimizer,
}

impl Kernel {
    fn source(self) -> &'static str {
        match self {
            Self::Forward => include_str!("../../../shaders/fused_mlp/forward.wgsl"),
            Self::Loss => include_str!("../../../shaders/fused_mlp/loss.wgsl"),
            Self::BackwardInput => include_str!("../../../shaders/fused_mlp/backward_input.wgsl"),
            Self::BackwardWeights => {
                include_str!("../../../shaders/fused_mlp/backward_weights.wgsl")
            }
            Self::Optimizer => include_str!("../../../shaders/fused_mlp/optimizer.wgsl"),
        }
    }
}

/// A WGSL text handed to cubecl as already compiled: cubecl only needs it to key its pipeline
/// cache and to bind buffers in order (binding i is the i-th handle).
struct WgslKernel(Kernel);

impl KernelMetadata for WgslKernel {
    fn id(&self) -> KernelId {
        KernelId::new::<Self>()
            .info(self.0)
            .cube_dim(CubeDim::new_1d(WORKGROUP).into())
    }

    fn address_type(&self) -> ElemType {
        UIntKind::U32.into()
    }
}

impl CubeKernel for WgslKernel {
    fn define(&self) -> KernelDefinition {
        let settings = KernelSettings::new(
            CubeDim::new_1d(WORKGROUP).into(),
            ExecutionMode::Checked,
            AddressType::U32,
        );
        KernelDefinition {
            body: Scope::root(settings.clone()),
            settings,
            info: Info::default(),
        }
    }

    fn source(&self) -> Option<PrecompiledSource> {
        Some(PrecompiledSource {
            source: self.0.source().to_string(),
            entrypoint_name: "main".to_string(),
            lang: "wgsl",
        })
    }
}

/// Launch `kernel` over `invocations` (rounded up to whole workgroups, spilling into `y` past
/// WebGPU's per-dimension limit) with `buffers` bound in order.
pub fn launch(client: &Client, kernel: Kernel, invocations: usize, buffers: &[&Handle]) {
    let groups = (invocations as u64).div_ceil(WORKGROUP as u64).max(1);
    let x = groups.min(MAX_GROUPS_X as u64) as u32;
    let y = groups.div_ceil(x as u64) as u32;
    let arguments = buffers.iter().fold(KernelArguments::new(), |args, handle| {
        args.with_buffer((*handle).clone().binding())
    });
    client.launch(
        Box::new(WgslKernel(kernel)),
        CubeCount::Static(x, y, 1),
        arguments,
    );
}

/// Copy `values` into a new buffer from the pool.
pub fn upload_f32(client: &Client, values: &[f32]) -> Handle {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    client.create_from_slice(&bytes)
}

pub fn upload_u32(client: &Client, values: &[u32]) -> Handle {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    client.create_from_slice(&bytes)
}

/// A buffer of `len` f32s from the pool, its contents whatever the pool held.
pub fn scratch_f32(client: &Client, len: usize) -> Handle {
    client.empty(len.max(1) * 4)
}

/// Read `handles` back as f32s, one vector each.
pub async fn read_f32(client: &Client, handles: Vec<Handle>) -> Result<Vec<Vec<f32>>, String> {
    let bytes = client
        .read_async(handles)
        .await
        .map_err(|err| err.to_string())?;
    Ok(bytes
        .iter()
        .map(|b| {
            b.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect()
        })
        .collect())
}
