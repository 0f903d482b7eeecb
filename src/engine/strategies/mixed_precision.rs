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
use burn::tensor::{DType, FloatDType, Tensor};

use crate::engine::config::{MixedPrecision, RunConfig, WeightDtype};
use crate::engine::device::AdapterInfo;
use crate::engine::error::ConfigError;
use crate::engine::models::Model;
use crate::engine::outcome::Fallback;

use super::{Report, StepNotes, Strategy};

/// PyTorch's GradScaler defaults.
pub const INITIAL_SCALE: f32 = 65536.0;
pub const GROWTH_INTERVAL: usize = 2000;

/// The precision a run trains in, and its loss scaler.
pub struct Precision {
    /// The mode in effect (`off` when the adapter cannot do what was asked).
    mode: MixedPrecision,
    fallback: Option<Fallback>,
    scaler: Option<GradScaler>,
    /// What the current step's backward used, and whether its update was skipped.
    step: StepNotes,
}

impl Precision {
    /// `weight_dtype` = `f16` is `model.half()`, which is what `mixed_precision` =
    /// `f16_unscaled` does; the fallback note names the setting that asked.
    pub fn new(config: &RunConfig, adapter: &AdapterInfo) -> Self {
        let strategies = &config.strategies;
        let (field, value) = match strategies.weight_dtype {
            dtype @ (WeightDtype::F16 | WeightDtype::Q4 | WeightDtype::Q8) => {
                ("strategies.weight_dtype", dtype.name())
            }
            _ => (
                "strategies.mixed_precision",
                strategies.mixed_precision.name(),
            ),
        };
        let (mode, fallback) = resolve(strategies.training_precision(), adapter, field, value);
        Self {
            mode,
            fallback,
            scaler: (mode == MixedPrecision::F16).then(GradScaler::default),
            step: StepNotes::default(),
        }
    }
}

impl Strategy for Precision {
    fn compute_dtype(&self) -> Option<FloatDType> {
        (self.mode != MixedPrecision::Off).then_some(FloatDType::F16)
    }

    fn stored_dtype(&self) -> Option<FloatDType> {
        (self.mode == MixedPrecision::F16Unscaled).then_some(FloatDType::F16)
    }

    fn prepare_model(&mut self, model: Model) -> Model {
        match self.mode {
            // A llama is drawn in f16 already (`models::Drawn`); what else is f32 is cast here.
            MixedPrecision::F16Unscaled => half(model),
            _ => model,
        }
    }

    fn compute_model(&self, model: &Model) -> Option<Model> {
        // A sharded model casts as it gathers (`ops::shard`), FSDP2's MixedPrecisionPolicy:
        // a copy of every shard for the whole pass would be memory FSDP2 never holds.
        (self.mode == MixedPrecision::F16 && !model.is_sharded()).then(|| compute_copy(model))
    }

    fn backward_loss(&self, loss: Tensor<1>) -> Tensor<1> {
        match &self.scaler {
            Some(scaler) => loss.mul_scalar(scaler.scale()),
            None => loss,
        }
    }

    fn gradients(
        &mut self,
        grads: GradientsParams,
        model: &Model,
    ) -> (GradientsParams, Option<Tensor<1>>) {
        let Some(scaler) = &self.scaler else {
            return (grads, None);
        };
        self.step = StepNotes {
            loss_scale: Some(scaler.scale()),
            skipped: false,
        };
        // Every gradient left for the host (`offload = optimizer` or `parameters`): the host
        // unscales them and looks for infs where its optimizer steps.
        if grads.is_empty() {
            return (grads, None);
        }
        // One readback per step, as PyTorch's scaler does with its found-inf flag.
        let (unscaled, poisoned) = scaler.unscale(grads, model);
        (unscaled, Some(poisoned))
    }

    fn gradients_read(&mut self, value: f32) -> bool {
        let Some(scaler) = &mut self.scaler else {
            return true;
        };
        let apply = scaler.update(value.is_finite());
        self.step.skipped = !apply;
        apply
    }

    fn notes(&self, notes: &mut StepNotes) {
        if self.scaler.is_some() {
            *notes = self.step;
        }
    }

    fn report(&self, report: &mut Report) {
        report.fallbacks.extend(self.fallback.clone());
        if let Some(scaler) = &self.scaler {
            report.loss_scale = Some(scaler.scale());
            report.skipped_steps = scaler.skipped_steps();
        }
    }
}

/// The mode a run can honour on this adapter, and why not when it falls back. `field` and
/// `value` are the setting that asked, as the fallback should name it.
fn resolve(
    asked: MixedPrecision,
    adapter: &AdapterInfo,
    field: &str,
    value: &str,
) -> (MixedPrecision, Option<Fallback>) {
    if asked != MixedPrecision::Off && !adapter.shader_f16 {
        let name = if adapter.name.is_empty() {
            "(name not disclosed)"
        } else {
            adapter.name.as_str()
        };
        let reason = format!("adapter {name} has no shader-f16; ran in f32");
        return (
            MixedPrecision::Off,
            Some(Fallback::new(field, value, reason)),
        );
    }
    (asked, None)
}

/// The precision a run of `config` trains in on `adapter`: what it asks, or `off` where the
/// adapter has no shader-f16 ([`Precision`] says so as a fallback).
pub(crate) fn in_effect(config: &RunConfig, adapter: &AdapterInfo) -> MixedPrecision {
    resolve(config.strategies.training_precision(), adapter, "", "").0
}

/// burn's GRU and LSTM build their hidden-state buffers in the default float type (f32)
/// inside their forward pass, which cannot mix with f16 activations.
pub(crate) fn check(config: &RunConfig) -> Result<(), ConfigError> {
    let precision = config.strategies.mixed_precision;
    let kind = config.model.kind;
    if precision != MixedPrecision::Off && kind.family().keeps_f32_state() {
        return Err(ConfigError::invalid(
            "strategies.mixed_precision",
            format!(
                "{} is not available for model.kind = {} (vramlab's recurrent cells keep f32 state); \
                 models for it: mlp, cnn, transformer; or use off",
                precision.name(),
                kind.name()
            ),
        ));
    }
    Ok(())
}

/// Casts every float parameter but a quantized one (`weight_dtype` = `q4`, `q8`: a cast would
/// dequantize it). `as_leaf` makes the result a new trainable leaf (`model.half()`); otherwise
/// the cast stays in the graph, tied to the original weights.
struct CastParams {
    dtype: FloatDType,
    as_leaf: bool,
}

impl ModuleMapper for CastParams {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (dtype, as_leaf) = (self.dtype, self.as_leaf);
        param.map(|tensor| {
            if matches!(tensor.dtype(), DType::QFloat(_)) {
                return tensor;
            }
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
fn compute_copy(model: &Model) -> Model {
    model.clone().map(&mut CastParams {
        dtype: FloatDType::F16,
        as_leaf: false,
    })
}

/// `model.half()`: the model's parameters become f16 for good.
fn half(model: Model) -> Model {
    model.map(&mut CastParams {
        dtype: FloatDType::F16,
        as_leaf: true,
    })
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
            max_binding_size: 1 << 27,
        };
        let field = "strategies.mixed_precision";
        let (mode, fallback) = resolve(MixedPrecision::F16, &adapter, field, "f16");
        assert_eq!(mode, MixedPrecision::Off);
        let fallback = fallback.unwrap().to_string();
        assert!(fallback.starts_with("mixed_precision f16: "), "{fallback}");
        assert!(fallback.contains("no shader-f16"), "{fallback}");
        assert_eq!(
            resolve(MixedPrecision::Off, &adapter, field, "off"),
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
