//! A frozen dense layer over a block-quantized weight (QLoRA's base layer), as one autodiff op.
//!
//! burn 0.22.1 multiplies by a quantized weight under autodiff by dequantizing it and keeping
//! the dequantized copy for backward: a 16-bit copy of every frozen weight alive from forward to
//! backward, more than a 16-bit base would hold. QLoRA's layers (bitsandbytes' `Linear4bit`
//! under PEFT) dequantize the weight for the matmul and free it, and dequantize it again in
//! backward for the input's gradient `dx = dy W^T`. This op does the same: its node keeps the
//! quantized handle, which the model holds anyway, and nothing else. The weight is frozen, so
//! it gets no gradient and the input need not be kept either.
//!
//! The dequantized weight is written in the input's float type (f16 beside a q4 or q8 base),
//! so the only transient is one weight in 16 bits.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::ops::QTensorOps;
use burn::backend::{
    BackendTensor, BackendTypes, Cube, DispatchAutodiffContext, DispatchKindConversion,
    DispatchTensor, TensorMetadata,
};
use burn::tensor::module::linear;
use burn::tensor::{DType, FloatDType, Tensor};

use super::bridge::{Recorded, Route, Tracked, plain, raw, run_recorded};

/// A quantized tensor of the cubecl backend (the same primitive inside and outside autodiff:
/// autodiff tracks floats only).
type RawQuantized = <Cube as BackendTypes>::QuantizedTensorPrimitive;

/// Whether `weight` is stored quantized.
pub fn is_quantized<const D: usize>(weight: &Tensor<D>) -> bool {
    matches!(weight.dtype(), DType::QFloat(_))
}

/// `x W` for a quantized `weight` `[d_input, d_output]`, computed in `x`'s float type. Falls
/// back to burn's own dequantize-and-multiply on a backend this op is not written for.
///
/// # Shapes
/// - x: `[..., d_input]`
/// - output: `[..., d_output]`
pub fn forward<const D: usize>(x: Tensor<D>, weight: Tensor<2>) -> Tensor<D> {
    let dtype = FloatDType::from(x.dtype());
    match (Route::of(&x), quantized(weight.clone())) {
        (Some(Route::Plain), Some(weight)) => linear(x, dequantized(&weight, dtype), None),
        (Some(Route::Autodiff(strategy)), Some(weight)) => run_recorded(
            QuantizedLinear::<D> {
                saved: Saved { weight, dtype },
            },
            strategy,
            [x],
        ),
        _ => linear(x, weight.dequantize().cast(dtype), None),
    }
}

/// The quantized primitive of `weight`, on a device with autodiff or without.
fn quantized(weight: Tensor<2>) -> Option<RawQuantized> {
    let mut dispatch = weight.into_dispatch();
    if !matches!(dispatch.dtype(), DType::QFloat(_)) {
        return None;
    }
    // Autodiff holds a quantized tensor as the inner backend's primitive, untracked: the same
    // handle reads as a plain one once its context says so.
    dispatch.autodiff = DispatchAutodiffContext::Disabled;
    match <DispatchTensor as DispatchKindConversion<Cube>>::try_into_backend(dispatch).ok()? {
        BackendTensor::Quantized(weight) => Some(weight),
        _ => None,
    }
}

/// The weight as a plain float tensor of `dtype`: a temporary the caller drops after its matmul.
fn dequantized(weight: &RawQuantized, dtype: FloatDType) -> Tensor<2> {
    plain(<Cube as QTensorOps<Cube>>::dequantize(
        weight.clone(),
        dtype,
    ))
}

/// All backward needs: the quantized weight (a handle to what the model stores) and the float
/// type to dequantize it into.
#[derive(Clone, Debug)]
struct Saved {
    weight: RawQuantized,
    dtype: FloatDType,
}

#[derive(Debug)]
struct QuantizedLinear<const D: usize> {
    saved: Saved,
}

#[derive(Debug)]
struct QuantizedLinearBackward<const D: usize>;

impl<const D: usize> Backward<Cube, 1> for QuantizedLinearBackward<D> {
    type State = Saved;

    fn backward(self, ops: Ops<Saved, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
        let grad_out: Tensor<D> = plain(grads.consume::<Cube>(&ops.node));
        if let Some(node) = &ops.parents[0] {
            // dx = dy W^T, with W dequantized again for it and dropped after.
            let weight = dequantized(&ops.state.weight, ops.state.dtype);
            let grad_x = linear(grad_out, weight.transpose(), None);
            grads.register::<Cube>(node.id, raw(grad_x));
        }
    }
}

impl<const D: usize> Recorded<1> for QuantizedLinear<D> {
    fn record<C: CheckpointStrategy>(self, inputs: [Tracked<C>; 1]) -> Tracked<C> {
        let [x] = inputs;
        let nodes = [x.node()];
        let x: Tensor<D> = plain(x.into_primitive());
        let out = raw(linear(
            x,
            dequantized(&self.saved.weight, self.saved.dtype),
            None,
        ));
        // A matmul is compute bound: a checkpointing strategy keeps this op's state (the
        // quantized handle, no memory of its own) rather than recomputing it.
        match QuantizedLinearBackward::<D>
            .prepare::<C>(nodes)
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => prep.finish(self.saved, out),
            OpsKind::UnTracked(prep) => prep.finish(out),
        }
    }
}
