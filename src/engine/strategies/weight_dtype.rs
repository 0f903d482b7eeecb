//! `strategies.weight_dtype`: how the weights are stored.
//!
//! - `f16`: `model.half()`. It is the same run as `mixed_precision` = `f16_unscaled` (gradients
//!   and optimizer state follow the parameters into f16), reached from the weights' side, as
//!   the "halve the model" advice puts it.
//! - `int8`: training stays in f32; each evaluation runs on a copy of the weights quantized to
//!   int8 (burn's symmetric per-tensor quantization, min-max calibrated: one byte per weight and
//!   one f32 scale per tensor). The copy's bytes are measured, and the evaluation's accuracy
//!   shows what the precision cost.
//! - `q4`, `q8`: QLoRA's base. The body's weight matrices (what LoRA adapts, `Model::parts`,
//!   less the output layer) are stored block-quantized for the whole run and frozen; everything
//!   else (embeddings, norms, biases, the output layer) is f16, as the QLoRA recipe keeps it,
//!   and so are the activations. LoRA's factors are built beside a quantized base in the default
//!   float type, f32 (burn's `Lora` takes its factors' type from a float base, and a quantized
//!   base has none), as PEFT keeps them; `trainable` = `head` trains the f16 output layer over
//!   the frozen quantized body (in f16, as `f16` weights train: Adam's epsilon is 0 there, so a
//!   weight whose gradient is 0 turns NaN under Adam, not under SGD or momentum). A quantized
//!   layer runs through `ops::quantized_linear`: each
//!   product dequantizes its weight into an f16 temporary and drops it, in forward and again in
//!   backward, and nothing dequantized is kept between them.
//!
//! The format ([`BlockFormat`]) is burn's symmetric block quantization (cubecl's `QuantScheme`
//! with a `per_block` level): values packed into 32-bit words along a matrix's rows (eight 4-bit
//! or four 8-bit values a word), one scale per block.
//! - `q4`: `Q4S` (integers -7..7) in blocks of 64 values, the memory shape of NF4 (bitsandbytes'
//!   4-bit blocks of 64 with one absmax each): 4 + 16/64 = 4.25 bits a weight.
//! - `q8`: `Q8S` (-127..127) in blocks of 32, llama.cpp's `Q8_0` shape: 8.5 bits a weight.
//! - Scales are f16: half NF4's f32 absmax (bitsandbytes' "double quantization" brings that to
//!   8 bits a block, 4.127 bits a weight), exact enough for a block's range, and what cubecl
//!   stores natively with a 16-bit scale level. On an adapter without shader-f16 the whole run
//!   falls back to f32 (see `mixed_precision`), and the scales with it.
//! - A block is a rectangle of the `[d_in, d_out]` weight: 64 (or 32) consecutive values of a
//!   row where `d_out` divides by that, otherwise the widest run of whole words that divides
//!   `d_out`, stacked over as many rows (a kv projection 32 wide: blocks of 2 x 32). burn's
//!   block quantization needs every dimension to divide by its block; a matrix no such rectangle
//!   tiles stays in f16, and the report counts it.

use std::collections::HashSet;

use burn::module::{Module, ModuleMapper, Param, ParamId};
use burn::tensor::quantization::{QuantScheme, QuantValue};
use burn::tensor::{DType, FloatDType, Tensor};
use serde::{Deserialize, Serialize};

use crate::engine::config::{EvalMode, ExpertsPath, MixedPrecision, RunConfig, WeightDtype};
use crate::engine::device::AdapterInfo;
use crate::engine::error::{ConfigError, EngineError};
pub use crate::engine::layout::BlockFormat;
use crate::engine::memory::meter::Meter;
use crate::engine::models::Model;
use crate::engine::ops::shard::{Layouts, Packed, Replicated};
use crate::engine::outcome::{Fallback, Site};
use crate::engine::phase::Phase;

use super::{Report, Strategy, beneath_autodiff};

/// What a quantized base stored, counted from the model's own matrices as they were quantized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuantizedWeights {
    pub format: BlockFormat,
    /// Matrices stored quantized, and their values.
    pub matrices: u64,
    pub values: u64,
    /// Their packed words' and scales' bytes (see [`BlockFormat::matrix_bytes`]).
    pub packed_bytes: u64,
    pub scale_bytes: u64,
    /// Body matrices no block tiles, left in 16 bits, and their values.
    pub untiled_matrices: u64,
    pub untiled_values: u64,
}

impl QuantizedWeights {
    /// One matrix of `values` stored quantized in `bytes` (its packed words and its scales).
    fn add(&mut self, values: u64, (packed, scales): (u64, u64)) {
        self.matrices += 1;
        self.values += values;
        self.packed_bytes += packed;
        self.scale_bytes += scales;
    }

    /// One body matrix of `values` left in 16 bits.
    fn add_untiled(&mut self, values: u64) {
        self.untiled_matrices += 1;
        self.untiled_values += values;
    }

    fn none(format: BlockFormat) -> Self {
        Self {
            format,
            matrices: 0,
            values: 0,
            packed_bytes: 0,
            scale_bytes: 0,
            untiled_matrices: 0,
            untiled_values: 0,
        }
    }
}

/// `q4`, `q8`: the body's matrices quantized as the model is prepared, before the precision
/// strategy casts the rest to f16 and before LoRA attaches its adapters (which then take the
/// default float type beside a quantized base).
pub struct QuantizedBase {
    format: Option<BlockFormat>,
    stored: Option<QuantizedWeights>,
    /// A mixture of experts asked for grouped products, which a quantized base runs as the
    /// loop: said in the report, not done in silence.
    experts_looped: Option<Fallback>,
}

impl QuantizedBase {
    pub fn new(config: &RunConfig, adapter: &AdapterInfo) -> Self {
        Self {
            // A model cut into shards has its shards quantized by the sharding, which knows
            // each matrix's cut ([`quantize_shards`]).
            format: match config.cuts_into_shards() {
                true => None,
                false => BlockFormat::of(config.strategies.weight_dtype, adapter.shader_f16),
            },
            stored: None,
            experts_looped: looped_experts(config),
        }
    }
}

/// The fallback a mixture of experts' grouped products take over a 4- or 8-bit base.
fn looped_experts(config: &RunConfig) -> Option<Fallback> {
    let s = &config.strategies;
    let asked = config.model.experts > 0 && s.experts == ExpertsPath::Grouped;
    (asked && s.weight_dtype.is_quantized_base()).then(|| {
        Fallback::new(
            "strategies.experts",
            ExpertsPath::Grouped.name(),
            format!(
                "a {} base is quantized one matrix at a time, as bitsandbytes quantizes each \
                 expert's Linear, so the experts run as the loop (one product an expert)",
                s.weight_dtype.name()
            ),
        )
    })
}

impl Strategy for QuantizedBase {
    fn prepare_model(&mut self, model: Model) -> Model {
        let Some(format) = self.format else {
            return model;
        };
        let (model, stored) = quantize_body(model, format);
        self.stored = Some(stored);
        model
    }

    fn report(&self, report: &mut Report) {
        if self.stored.is_some() {
            report.quantized = self.stored;
        }
        report.fallbacks.extend(self.experts_looped.clone());
    }
}

/// `model` with the body's weight matrices (what LoRA adapts, less the output layer) stored in
/// `format`. Each is created by its initializer (in f16 for a llama, `models::Drawn`; in f32
/// for the others) and quantized at once, one at a time, so no more than one unquantized matrix
/// exists beside the quantized ones.
pub fn quantize_body(model: Model, format: BlockFormat) -> (Model, QuantizedWeights) {
    let body = body_matrices(&model);
    let mut mapper = QuantizeBody {
        format,
        body,
        stored: QuantizedWeights::none(format),
    };
    let model = model.map(&mut mapper);
    (model, mapper.stored)
}

/// The body's weight matrices: what LoRA adapts, less the output layer (which stays in the
/// model's own type, as bitsandbytes leaves `lm_head`).
fn body_matrices(model: &Model) -> HashSet<ParamId> {
    let parts = model.parts();
    let head: HashSet<ParamId> = parts.head.into_iter().collect();
    parts
        .adapted
        .into_iter()
        .filter(|id| !head.contains(id))
        .collect()
}

struct QuantizeBody {
    format: BlockFormat,
    body: HashSet<ParamId>,
    stored: QuantizedWeights,
}

impl ModuleMapper for QuantizeBody {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        if D != 2 || !self.body.contains(&param.id) {
            return param;
        }
        let shape = param.lazy_shape();
        let (d_in, d_out) = (shape[0], shape[1]);
        let values = (d_in * d_out) as u64;
        let Some(tile) = self.format.tile(d_in, d_out) else {
            self.stored.add_untiled(values);
            return param;
        };
        self.stored
            .add(values, self.format.matrix_bytes(d_in, d_out));
        let scheme = self.format.scheme(tile);
        // A quantized tensor has no gradient: the weight is frozen from here.
        param.map(|tensor| in_blocks(tensor, &scheme))
    }
}

/// One GPU's shard of `model` across `ranks` GPUs (`ops::shard`, its parameters cut and not yet
/// made) with the body's matrices stored as FSDP-QLoRA stores them: each shard's codes in
/// `format`'s blocks (with the shard's own scales), and the rest of the matrix's scales kept
/// whole beside it in `replicated`, as bitsandbytes keeps a layer's quant state on every rank.
/// Each shard is made in f16 (f32 without shader-f16) and quantized at once, as unsharded bases
/// are, and its layout in `layouts` says so ([`Packed`]). A matrix whose outputs the GPUs do not
/// share evenly, or whose shard no block tiles, stays 16-bit (counted as untiled). The counts
/// are the whole model's.
pub fn quantize_shards(
    model: Model,
    format: BlockFormat,
    layouts: &mut Layouts,
    ranks: usize,
    replicated: &Replicated,
) -> (Model, QuantizedWeights) {
    let body = body_matrices(&model);
    let mut mapper = QuantizeShards {
        format,
        body,
        layouts,
        ranks,
        replicated,
        stored: QuantizedWeights::none(format),
    };
    let model = model.map(&mut mapper);
    (model, mapper.stored)
}

struct QuantizeShards<'a> {
    format: BlockFormat,
    body: HashSet<ParamId>,
    layouts: &'a mut Layouts,
    ranks: usize,
    replicated: &'a Replicated,
    stored: QuantizedWeights,
}

impl ModuleMapper for QuantizeShards<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        if D != 2 || !self.body.contains(&param.id) {
            return param;
        }
        let layout = self
            .layouts
            .get_mut(&param.id)
            .expect("every parameter of a cut model has its layout");
        let (d_in, d_out, rows) = (layout.full[0], layout.full[1], layout.rows);
        let values = (d_in * d_out) as u64;
        let tile = match d_out.is_multiple_of(self.ranks) {
            true => self.format.tile(d_in, rows),
            false => None,
        };
        let Some(tile) = tile else {
            self.stored.add_untiled(values);
            return param;
        };
        let (codes, scales) = self.format.matrix_bytes(d_in, d_out);
        let (shard_codes, shard_scales) = self.format.matrix_bytes(d_in, rows);
        self.stored.add(values, (codes, scales));
        let scheme = self.format.scheme(tile);
        let dtype = match self.format.scale_bytes {
            2 => FloatDType::F16,
            _ => FloatDType::F32,
        };
        layout.dtype = dtype;
        let dtype = DType::from(dtype);
        layout.packed = Some(Packed {
            scheme,
            shard_bytes: shard_codes + shard_scales,
            replicated_bytes: scales - shard_scales,
            codes_bytes: codes,
        });
        let rest = ((scales - shard_scales) / self.format.scale_bytes as u64) as usize;
        let replicated = self.replicated.clone();
        let shape: [usize; D] = [d_in, rows]
            .to_vec()
            .try_into()
            .expect("a body matrix has two dims");
        // The f32 shard the cut would make is never made: the quantized one replaces it.
        Param::uninitialized(
            param.id,
            move |device, _| {
                let shard = in_blocks(Tensor::<D>::zeros(shape, (device, dtype)), &scheme);
                if rest > 0 {
                    let plain = device.clone().without_autodiff();
                    replicated.keep(Tensor::empty([rest], (&plain, dtype)));
                }
                shard
            },
            param.lazy_device(),
            false,
            shape.into(),
        )
    }
}

/// `tensor` quantized with `scheme`, on the device it was on. The calibration (each block's
/// minimum and maximum) runs outside autodiff: on the training device its reductions would be
/// recorded, detached or not, in a graph that holds their tensors until a backward sweeps it,
/// and they would count as weights.
fn in_blocks<const D: usize>(tensor: Tensor<D>, scheme: &QuantScheme) -> Tensor<D> {
    beneath_autodiff(tensor, |inner| inner.quantize_dynamic(scheme))
}

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

/// What a quantized base (`q4`, `q8`) runs with: a frozen body (`trainable` is checked with the
/// trainable strategy's own), f16 beside it, and dense layers that go through `models::dense`.
fn check_quantized_base(config: &RunConfig) -> Result<(), ConfigError> {
    let s = &config.strategies;
    let name = s.weight_dtype.name();
    if s.mixed_precision == MixedPrecision::F16 {
        return Err(ConfigError::invalid(
            "strategies.weight_dtype",
            format!(
                "{name} keeps what it does not quantize in f16 itself, while mixed_precision f16 \
                 keeps f32 master weights: use mixed_precision off (or f16_unscaled, the same) \
                 with weight_dtype {name}"
            ),
        ));
    }
    if config.model.kind.family().keeps_f32_state() {
        // Their cells read their stacked weights whole for the product (`stacked_cells`), which
        // with a quantized weight keeps a dequantized copy for backward, and they keep f32
        // state besides.
        return Err(ConfigError::invalid(
            "strategies.weight_dtype",
            format!(
                "{name} is not available for model.kind = {} (vramlab's recurrent cells multiply \
                 by their weights themselves, keeping each dequantized for backward); models for \
                 it: mlp, cnn, transformer, llama; or use f16 or f32",
                config.model.kind.name()
            ),
        ));
    }
    Ok(())
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
    if weights.is_quantized_base() {
        check_quantized_base(config)?;
    }
    if weights == WeightDtype::F16 && kind.family().keeps_f32_state() {
        return Err(ConfigError::invalid(
            "strategies.weight_dtype",
            format!(
                "f16 is not available for model.kind = {} (vramlab's recurrent cells keep f32 \
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
    if weights == WeightDtype::Int8 && !kind.family().takes_int8_weights() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_is_a_row_run_where_the_width_allows_else_a_narrower_run_over_rows() {
        let q4 = BlockFormat::of(WeightDtype::Q4, true).unwrap();
        let q8 = BlockFormat::of(WeightDtype::Q8, true).unwrap();
        // Llama-2-7B's projections, and sort-llama's 32-wide key/value and 176-wide feed-forward.
        assert_eq!(q4.tile(4096, 11008), Some([1, 64]));
        assert_eq!(q4.tile(11008, 4096), Some([1, 64]));
        assert_eq!(q4.tile(64, 32), Some([2, 32]));
        assert_eq!(q4.tile(64, 176), Some([4, 16]));
        assert_eq!(q8.tile(64, 176), Some([2, 16]));
        // Whole words only: 8 q4 values a word; a block's rows must divide the input width.
        assert_eq!(q4.tile(64, 12), None);
        assert_eq!(q4.tile(3, 8), None);
        assert_eq!(q8.tile(3, 4), None);
        assert_eq!(BlockFormat::of(WeightDtype::F16, true), None);
    }

    #[test]
    fn a_matrix_takes_its_words_and_one_scale_a_block() {
        let q4 = BlockFormat::of(WeightDtype::Q4, true).unwrap();
        // 4096 x 11008: 45,088,768 values, half a byte each, 704,512 blocks of 64.
        assert_eq!(q4.matrix_bytes(4096, 11008), (22_544_384, 1_409_024));
        let q8 = BlockFormat::of(WeightDtype::Q8, false).unwrap();
        // f32 scales where the adapter has no f16: 64 x 64 in 128 blocks of 32.
        assert_eq!(q8.matrix_bytes(64, 64), (4096, 512));
        assert_eq!(q4.describe(), "4-bit blocks of 64 with f16 scales");
    }
}
