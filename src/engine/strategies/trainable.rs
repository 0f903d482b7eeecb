//! `strategies.trainable`: which weights train.
//!
//! - `all`: every parameter, as the model was built.
//! - `head`: the output layer only (a decoder's final norm with it). Everything else is frozen
//!   with burn's `Module::freeze`: it gets no gradient, so the optimizer keeps no state for it,
//!   and backward stops where nothing trainable lies behind.
//! - `lora`: burn's `apply_lora` freezes every base parameter and gives each weight matrix of
//!   the body (`Model::parts`) two trainable factors `A` (`[d_in, rank]`) and `B` (`[rank,
//!   d_out]`, zeros), scaled by `lora_alpha / lora_rank`. The bases keep the precision
//!   `weight_dtype` gives them, and the factors are f32 (`adapter_dtype = f32`, the default):
//!   PEFT keeps adapters in f32 over a 16-bit base (`autocast_adapter_dtype=True`), so their
//!   gradients and optimizer state are 4 bytes a value; `adapter_dtype = base` gives them a
//!   float base's own type (16-bit over f16). Over a quantized base (`q4`, `q8`) every factor
//!   is f32, as QLoRA's are: beside the few matrices it could not tile, which stay 16-bit, an
//!   f16 factor trained to NaN on its first step (Adam's epsilon is 0 in f16, and a factor whose
//!   gradient is 0, `A` while `B` is zeros, divides 0 by 0). The models' dense layers compute
//!   `x W + s (x A) B` (`models::dense`), as PEFT's LoRA layers do, the factors cast to the
//!   activations' type for their products.
//!
//! What it reports: the parameters in all, those that train, and the adapters'.

use burn::module::{Lora, Module, ModuleMapper, Param};
use burn::tensor::{DType, FloatDType, Tensor};

use crate::engine::config::{AdapterDtype, RunConfig, Trainable as Mode, WeightDtype, limits};
use crate::engine::error::ConfigError;
use crate::engine::models::{AdapterDepth, Model};

use super::{Report, Strategy, beneath_autodiff};

/// Parameter counts once the model is final (see [`Report::params`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParamCounts {
    /// The model's own parameters (a LoRA run's frozen bases included, its adapters not).
    pub model: u64,
    /// Parameters that get a gradient and optimizer state.
    pub trainable: u64,
    /// Parameters of LoRA adapters.
    pub adapters: u64,
    /// Parameter tensors that train (autodiff leaves: what a checkpointed block's node
    /// tracks).
    pub trainable_tensors: usize,
}

pub struct Trainable {
    mode: Mode,
    rank: usize,
    alpha: f64,
    /// Every adapter factor in f32 (`adapter_dtype`, and always beside a quantized base).
    f32_adapters: bool,
    counts: Option<ParamCounts>,
}

impl Trainable {
    pub fn new(config: &RunConfig) -> Self {
        let s = &config.strategies;
        Self {
            mode: s.trainable,
            rank: s.lora_rank,
            alpha: s.lora_alpha,
            f32_adapters: s.adapters_in_f32(),
            counts: None,
        }
    }
}

impl Strategy for Trainable {
    fn prepare_model(&mut self, model: Model) -> Model {
        let model = match self.mode {
            Mode::All => model,
            Mode::Head => {
                let head = model.parts().head_group();
                model.freeze().unfreeze_group(head)
            }
            Mode::Lora => {
                let adapted = model.parts().adapted_group();
                let model = model
                    .apply_lora(Lora::new(self.rank, self.alpha).set_param_group(adapted))
                    .with_stacked_adapters(self.rank, self.alpha);
                if self.f32_adapters {
                    model.map(&mut AdaptersInF32::default())
                } else {
                    model
                }
            }
        };
        // Of a sharded model, its shards' (`sharding` reports the whole model's).
        let count = model.trainable_count();
        self.counts = Some(ParamCounts {
            model: count.all - count.adapters,
            trainable: count.trainable,
            adapters: count.adapters,
            trainable_tensors: count.trainable_tensors,
        });
        model
    }

    fn report(&self, report: &mut Report) {
        report.params = self.counts;
    }
}

/// What `trainable` and its LoRA settings refuse, naming the field.
pub(crate) fn check(config: &RunConfig) -> Result<(), ConfigError> {
    let s = &config.strategies;
    if s.trainable == Mode::All && s.weight_dtype.is_quantized_base() {
        return Err(ConfigError::invalid(
            "strategies.weight_dtype",
            format!(
                "{} stores a frozen base: quantized weights get no gradient and cannot train. \
                 Use it with trainable = lora (QLoRA: adapters beside the 4- or 8-bit base) or \
                 trainable = head; to train every weight, use f16 or f32",
                s.weight_dtype.name()
            ),
        ));
    }
    if s.trainable != Mode::All && s.weight_dtype == WeightDtype::Int8 {
        // int8 is the evaluation copy through burn's own quantized matmul, which under autodiff
        // keeps each weight dequantized for backward: more than an f16 base would hold. A
        // frozen quantized base for training is q4 or q8 (`ops::quantized_linear`).
        return Err(ConfigError::invalid(
            "strategies.weight_dtype",
            format!(
                "int8 quantizes an evaluation copy; burn's matmul on a quantized weight would \
                 keep it dequantized for backward. With trainable = {}, use q4 or q8 (a frozen \
                 base in 4- or 8-bit blocks, dequantized layer by layer: QLoRA's), f16 (two \
                 bytes a frozen weight) or f32",
                s.trainable.name()
            ),
        ));
    }
    if s.trainable != Mode::Lora {
        return Ok(());
    }
    if s.adapter_dtype == AdapterDtype::Base && s.weight_dtype.is_quantized_base() {
        return Err(ConfigError::invalid(
            "strategies.adapter_dtype",
            format!(
                "a {} base keeps LoRA's factors in f32, as QLoRA does: beside its 16-bit \
                 matrices an f16 factor trained to NaN on its first step (Adam's epsilon is 0 \
                 in f16). Use adapter_dtype = f32, or weight_dtype = f16 for 16-bit factors",
                s.weight_dtype.name()
            ),
        ));
    }
    let (lo, hi) = limits::LORA_RANK;
    if !(lo..=hi).contains(&s.lora_rank) {
        return Err(ConfigError::out_of_range(
            "strategies.lora_rank",
            s.lora_rank,
            format!("{lo}..={hi}"),
        ));
    }
    let (lo, hi) = limits::LORA_ALPHA;
    if !(s.lora_alpha.is_finite() && (lo..=hi).contains(&s.lora_alpha)) {
        return Err(ConfigError::out_of_range(
            "strategies.lora_alpha",
            s.lora_alpha,
            format!("{lo}..={hi}"),
        ));
    }
    Ok(())
}

/// Casts every LoRA factor (a parameter inside a reparameterization) that is not f32 to f32, as
/// a trained leaf of its own: the cast runs beneath autodiff, so the factor stays a leaf the
/// optimizer finds.
#[derive(Default)]
struct AdaptersInF32 {
    adapter: AdapterDepth,
}

impl ModuleMapper for AdaptersInF32 {
    fn enter_module(&mut self, _name: &str, container_type: &str) {
        self.adapter.enter(container_type);
    }

    fn exit_module(&mut self, _name: &str, container_type: &str) {
        self.adapter.exit(container_type);
    }

    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        if !self.adapter.inside() {
            return param;
        }
        param.map(|factor| {
            if factor.dtype() == DType::F32 {
                return factor;
            }
            let trains = factor.is_require_grad();
            let cast = beneath_autodiff(factor, |inner| inner.cast(FloatDType::F32));
            if trains { cast.require_grad() } else { cast }
        })
    }
}
