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

use crate::engine::config::{EvalMode, MixedPrecision, ModelKind, RunConfig, WeightDtype};
use crate::engine::error::{ConfigError, EngineError};
use crate::engine::memory::meter::Meter;
use crate::engine::models::Model;
use crate::engine::outcome::Site;
use crate::engine::phase::Phase;

use super::{Report, Strategy};

/// `int8`: each evaluation on a quantized copy, whose bytes are measured. (`f16` weights are
/// the mixed-precision strategy's `model.half()`.)
pub struct Int8Eval {
    on: bool,
    /// Bytes of the copy at the last evaluation.
    copy_bytes: Option<u64>,
}

impl Int8Eval {
    pub fn new(config: &RunConfig) -> Self {
        Self {
            on: config.strategies.weight_dtype == WeightDtype::Int8,
            copy_bytes: None,
        }
    }
}

impl Strategy for Int8Eval {
    fn prepare_eval(&mut self, model: Model, meter: &mut Meter) -> Result<Model, EngineError> {
        if !self.on {
            return Ok(model);
        }
        let before = meter.peek(Phase::Eval)?.in_use_bytes;
        let (int8, _) = quantized(model);
        let after = meter.read(Phase::Eval, Site::Int8Weights)?;
        self.copy_bytes = Some(after.in_use_bytes.saturating_sub(before));
        Ok(int8)
    }

    fn report(&self, report: &mut Report) {
        report.eval_weight_bytes = self.copy_bytes;
    }
}

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
fn quantized(model: Model) -> (Model, usize) {
    let mut mapper = QuantizeWeights {
        scheme: QuantScheme::default().with_value(QuantValue::Q8S),
        quantized: 0,
    };
    let model = model.map(&mut mapper);
    (model, mapper.quantized)
}

/// Which models and modes each weight precision can run with, naming the field.
pub(crate) fn check(config: &RunConfig) -> Result<(), ConfigError> {
    let strategies = &config.strategies;
    let (weights, kind) = (strategies.weight_dtype, config.model.kind);
    if weights == WeightDtype::F16 && strategies.mixed_precision == MixedPrecision::F16 {
        return Err(ConfigError::invalid(
            "strategies.weight_dtype",
            "f16 stores the weights themselves in f16, while mixed_precision f16 keeps f32 \
             master weights: use one (weight_dtype f16 with mixed_precision off or f16_unscaled)",
        ));
    }
    if weights == WeightDtype::F16 && matches!(kind, ModelKind::Gru | ModelKind::Lstm) {
        return Err(ConfigError::invalid(
            "strategies.weight_dtype",
            format!(
                "f16 is not available for model.kind = {} (burn's recurrent cells keep f32 \
                 state); models for it: mlp, cnn, transformer; or use f32",
                kind.name()
            ),
        ));
    }
    if weights == WeightDtype::Int8 && strategies.eval_mode == EvalMode::Autodiff {
        return Err(ConfigError::invalid(
            "strategies.weight_dtype",
            "int8 weights are an evaluation copy without autodiff; use eval_mode no_grad with it",
        ));
    }
    if weights == WeightDtype::Int8 && !matches!(kind, ModelKind::Mlp | ModelKind::Cnn) {
        // Quantized weights go through burn's quantized matmul (dense layers) or are
        // dequantized by its convolution; the sequence models' weights meet ops that refuse them.
        return Err(ConfigError::invalid(
            "strategies.weight_dtype",
            format!(
                "int8 is not available for model.kind = {}; models for it: mlp, cnn; or use f32 \
                 or f16",
                kind.name()
            ),
        ));
    }
    Ok(())
}
