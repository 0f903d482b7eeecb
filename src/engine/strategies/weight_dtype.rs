//! `strategies.weight_dtype`: how the weights are stored.
//!
//! - `f16`: `model.half()`. It is the same run as `mixed_precision` = `f16_unscaled` (gradients
//!   and optimizer state follow the parameters into f16), reached from the weights' side, as
//!   the "halve the model" advice puts it.
//! - `int8`: training stays in f32; each evaluation runs on a copy of the weights quantized to
//!   int8 (burn's symmetric per-tensor quantization, min-max calibrated: one byte per weight and
//!   one f32 scale per tensor). The copy's bytes are measured, and the evaluation's accuracy
//!   shows what the precision cost.

use burn::module::{Module, ModuleMapper, Param};
use burn::tensor::Tensor;
use burn::tensor::quantization::{QuantScheme, QuantValue};

use crate::engine::models::Model;

/// Quantizes each weight matrix whose last dimension burn can pack (four int8 values to a u32
/// word needs a multiple of 4); biases and narrow heads stay in f32.
struct QuantizeWeights {
    scheme: QuantScheme,
    quantized: usize,
}

impl ModuleMapper for QuantizeWeights {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let packable = |tensor: &Tensor<D>| D >= 2 && tensor.dims()[D - 1].is_multiple_of(4);
        param.map(|tensor| {
            if packable(&tensor) {
                self.quantized += 1;
                tensor.quantize_dynamic(&self.scheme)
            } else {
                tensor
            }
        })
    }
}

/// An int8 copy of `model` (which should be the no-grad `valid()` copy) and how many of its
/// tensors were quantized.
pub fn quantized(model: Model) -> (Model, usize) {
    let mut mapper = QuantizeWeights {
        scheme: QuantScheme::default().with_value(QuantValue::Q8S),
        quantized: 0,
    };
    let model = model.map(&mut mapper);
    (model, mapper.quantized)
}
