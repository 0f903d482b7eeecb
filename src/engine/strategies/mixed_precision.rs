//! `strategies.mixed_precision`: burn has no autocast and no GradScaler, so both are here.
//!
//! - `f16`: the f32 master weights are cast to f16 for each forward pass (the casts stay in the
//!   autodiff graph, so gradients arrive at the f32 weights in f32), inputs are cast to f16,
//!   the logits back to f32 for the loss. The loss is multiplied by a dynamic scale before
//!   backward so small f16 gradients do not flush to zero, and the gradients are divided by it
//!   again before the optimizer sees them ([`GradScaler`], PyTorch's policy).
//! - `f16_unscaled`: the parameters themselves become f16 (PyTorch's `model.half()`), and so do
//!   the gradients and the optimizer state; nothing is scaled.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{FloatDType, Tensor};

use crate::engine::config::MixedPrecision;
use crate::engine::data::BatchInputs;
use crate::engine::device::AdapterInfo;
use crate::engine::models::Model;

/// PyTorch's GradScaler defaults.
pub const INITIAL_SCALE: f32 = 65536.0;
pub const GROWTH_INTERVAL: usize = 2000;

/// The mode a run can honour on this adapter, and why not when it falls back.
///
/// `asked_as` is the setting that asked for it, as the fallback note should name it (f16
/// weights ask for `f16_unscaled`).
pub fn resolve(
    asked: MixedPrecision,
    asked_as: &str,
    adapter: &AdapterInfo,
) -> (MixedPrecision, Option<String>) {
    if asked != MixedPrecision::Off && !adapter.shader_f16 {
        let name = if adapter.name.is_empty() {
            "(name not disclosed)"
        } else {
            adapter.name.as_str()
        };
        let reason = format!("{asked_as}: adapter {name} has no shader-f16; ran in f32");
        return (MixedPrecision::Off, Some(reason));
    }
    (asked, None)
}

/// The float type the forward pass computes in.
pub fn compute_dtype(mode: MixedPrecision) -> Option<FloatDType> {
    match mode {
        MixedPrecision::Off => None,
        MixedPrecision::F16 | MixedPrecision::F16Unscaled => Some(FloatDType::F16),
    }
}

/// Casts every float parameter. `as_leaf` makes the result a new trainable leaf (`model.half()`);
/// otherwise the cast stays in the graph, tied to the original weights.
struct CastParams {
    dtype: FloatDType,
    as_leaf: bool,
}

impl ModuleMapper for CastParams {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (dtype, as_leaf) = (self.dtype, self.as_leaf);
        param.map(|tensor| {
            if !as_leaf {
                return tensor.cast(dtype);
            }
            let trainable = tensor.is_require_grad();
            // Detached after the cast: a cast of a detached tensor is not a leaf.
            let tensor = tensor.cast(dtype).detach();
            if trainable {
                tensor.require_grad()
            } else {
                tensor
            }
        })
    }
}

/// The f16 copy a forward pass runs on. Built per pass: backward consumes the casts' graph.
pub fn compute_copy(model: &Model) -> Model {
    model.clone().map(&mut CastParams {
        dtype: FloatDType::F16,
        as_leaf: false,
    })
}

/// `model.half()`: the model's parameters become f16 for good.
pub fn half(model: Model) -> Model {
    model.map(&mut CastParams {
        dtype: FloatDType::F16,
        as_leaf: true,
    })
}

/// Float inputs in the compute type; token ids are left alone.
pub fn cast_inputs(inputs: &BatchInputs, dtype: Option<FloatDType>) -> BatchInputs {
    match (inputs, dtype) {
        (BatchInputs::Floats(x), Some(dtype)) => BatchInputs::Floats(x.clone().cast(dtype)),
        _ => inputs.clone(),
    }
}

/// A dynamic loss scale: halved (and the step skipped) when a gradient is inf or NaN, doubled
/// after [`GROWTH_INTERVAL`] clean steps in a row.
#[derive(Clone, Debug)]
pub struct GradScaler {
    scale: f32,
    clean_steps: usize,
    skipped: usize,
}

impl Default for GradScaler {
    fn default() -> Self {
        Self {
            scale: INITIAL_SCALE,
            clean_steps: 0,
            skipped: 0,
        }
    }
}

impl GradScaler {
    pub fn scale(&self) -> f32 {
        self.scale
    }

    pub fn skipped_steps(&self) -> usize {
        self.skipped
    }

    /// Divide every gradient by the scale. Also returns a one-element tensor that is NaN when
    /// any gradient holds an inf or NaN (0 * inf is NaN), so one readback answers for all.
    pub fn unscale(&self, grads: GradientsParams, model: &Model) -> (GradientsParams, Tensor<1>) {
        let mut visitor = Unscale {
            grads,
            factor: 1.0 / self.scale,
            probe: None,
        };
        model.visit(&mut visitor);
        let probe = visitor.probe.expect("a model has parameters");
        (visitor.grads, probe)
    }

    /// Record whether the step's gradients were finite; returns whether to apply the step.
    pub fn update(&mut self, finite: bool) -> bool {
        if finite {
            self.clean_steps += 1;
            if self.clean_steps == GROWTH_INTERVAL {
                self.scale *= 2.0;
                self.clean_steps = 0;
            }
        } else {
            self.scale /= 2.0;
            self.clean_steps = 0;
            self.skipped += 1;
        }
        finite
    }
}

struct Unscale {
    grads: GradientsParams,
    factor: f32,
    probe: Option<Tensor<1>>,
}

impl ModuleVisitor for Unscale {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let Some(grad) = self.grads.remove::<D>(param.id) else {
            return;
        };
        let grad = grad.mul_scalar(self.factor);
        let poisoned = grad.clone().mul_scalar(0.0).sum().cast(FloatDType::F32);
        self.probe = Some(match self.probe.take() {
            Some(probe) => probe + poisoned,
            None => poisoned,
        });
        self.grads.register(param.id, grad);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_adapter_without_shader_f16_falls_back_to_f32_and_says_so() {
        let adapter = AdapterInfo {
            name: "SwiftShader".into(),
            backend: "webgpu".into(),
            shader_f16: false,
            max_buffer_size: 1 << 30,
        };
        let (mode, reason) = resolve(MixedPrecision::F16, "mixed_precision f16", &adapter);
        assert_eq!(mode, MixedPrecision::Off);
        assert!(reason.unwrap().contains("no shader-f16"));
        assert_eq!(
            resolve(MixedPrecision::Off, "mixed_precision off", &adapter),
            (MixedPrecision::Off, None)
        );
    }

    #[test]
    fn the_scale_halves_on_overflow_and_doubles_after_clean_steps() {
        let mut scaler = GradScaler::default();
        assert!(!scaler.update(false));
        assert_eq!(scaler.scale(), INITIAL_SCALE / 2.0);
        assert_eq!(scaler.skipped_steps(), 1);
        for _ in 0..GROWTH_INTERVAL - 1 {
            assert!(scaler.update(true));
        }
        assert_eq!(scaler.scale(), INITIAL_SCALE / 2.0);
        scaler.update(true);
        assert_eq!(scaler.scale(), INITIAL_SCALE);
    }
}
