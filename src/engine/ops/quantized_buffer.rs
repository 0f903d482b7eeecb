//! A quantized tensor allocated whole and left unwritten: the buffer a sharded quantized base's
//! all-gather writes into (`ops::shard`), and the GPU's copy of a shard that lives on the host.
//!
//! burn makes a quantized tensor only by quantizing a float one or from host data. The first
//! would hold a 16-bit copy of the whole matrix beside the gathered codes, which FSDP-QLoRA never
//! holds; the second writes through host memory. Sharded runs are planned, never run (wgpu has
//! no collective), and a plan reads no values: a collective allocates its output and writes
//! nothing, as PyTorch's fake process group does. So this is an allocation in the quantized
//! layout of `scheme` (cubecl keeps a matrix's packed words and its block scales in one
//! allocation), queued on the device's fusion stream as an op of its own, so that it is made in
//! program order with the ops around it.

use burn::backend::{BackendTensor, Cube, DispatchDevice, DispatchKindConversion};
use burn::tensor::quantization::QuantScheme;
use burn::tensor::{DType, DispatchTensor, Shape, Tensor};
use burn_cubecl::{CubeBackend, CubeDevice};
use burn_fusion::stream::{Operation, StreamId};
use burn_fusion::{ExecutionError, FusionBackend, FusionHandle, get_client};
use burn_ir::{CustomOpIr, HandleContainer, OperationIr, TensorId, TensorIr};

type Runtime = <CubeBackend as FusionBackend>::FusionRuntime;
type Handles = HandleContainer<FusionHandle<Runtime>>;

/// A `shape` tensor quantized with `scheme`, unwritten, on `like`'s device or on `device`,
/// tracked as `like` is (a frozen constant on an autodiff device, or plain).
pub fn allocated<const D: usize>(
    shape: [usize; D],
    scheme: QuantScheme,
    like: &Tensor<D>,
    device: Option<&burn::tensor::Device>,
) -> Tensor<D> {
    let target = device.cloned().unwrap_or_else(|| like.device());
    let plain = target.without_autodiff();
    let DispatchDevice::Cube(cube) = plain.as_dispatch() else {
        unreachable!("vramlab runs on the cubecl backend alone")
    };
    let client = get_client::<CubeBackend>(cube);
    let shape = Shape::from(shape);
    let out = TensorIr::uninit(
        client.create_empty_handle(),
        shape.clone(),
        DType::QFloat(scheme),
    );
    let op = Allocate {
        out: out.id,
        shape,
        scheme,
        device: cube.clone(),
    };
    let desc = CustomOpIr::new("vramlab_unwritten_quantized", &[], &[out]);
    let tensor = client
        .register(StreamId::current(), OperationIr::Custom(desc), op)
        .remove(0);
    let dispatch = <DispatchTensor as DispatchKindConversion<Cube>>::from_backend(
        BackendTensor::Quantized(tensor),
    );
    let tensor = Tensor::<D>::from_dispatch(dispatch);
    match like.gradient_checkpointing_strategy() {
        Some(strategy) => tensor
            .autodiff()
            .with_gradient_checkpointing_strategy(strategy),
        None => tensor,
    }
}

/// The op on the fusion stream: the quantized layout's one allocation, on the stream's turn.
#[derive(Debug)]
struct Allocate {
    out: TensorId,
    shape: Shape,
    scheme: QuantScheme,
    device: CubeDevice,
}

impl Operation<Runtime> for Allocate {
    fn execute(&self, handles: &mut Handles) -> Result<(), ExecutionError> {
        let tensor = burn_cubecl::ops::empty_qtensor_optimized(
            self.shape.clone(),
            self.scheme,
            &self.device,
        );
        handles.register_quantized_tensor::<CubeBackend>(&self.out, tensor);
        Ok(())
    }
}
