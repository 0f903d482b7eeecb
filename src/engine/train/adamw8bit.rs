//! `optimizer = adamw8bit`: AdamW whose two moments live between steps as 8-bit codes in blocks
//! of 256 values with one f32 scale a block, after bitsandbytes' `AdamW8bit` ("blockwise").
//!
//! Each step dequantizes a parameter's moments to f32, takes the AdamW step vramlab's `adamw`
//! takes (the same betas, epsilon and decoupled weight decay, `OptimizerKind`'s constants), and
//! quantizes the new moments again. A tensor under [`MIN_8BIT_SIZE`] values keeps f32 moments,
//! as bitsandbytes' `min_8bit_size` does: its scales would cost more than they save.
//!
//! # Storage
//!
//! The codes are burn's quantized tensors: `QuantValue::Q8S` (symmetric, codes -127..=127, the
//! value `code x scale`), packed four to a `u32` word (`QuantStore::PackedU32`, the only store
//! WGSL has), one `ScaleDtype::F32` scale per block equal to the block's largest magnitude / 127
//! (burn's `quantize_dynamic`, min-max calibration). burn's block sizes are one `u8` per
//! dimension, so a block of 256 is `[2, 128]` over the flattened moment's whole blocks viewed as
//! rows of 128, and burn's calibration takes whole blocks only, so a last, partial block of `t`
//! values is a second quantized tensor, `[ceil(t / 4), 4]` in one block. One quantized moment of
//! `n` values therefore holds `n` bytes of codes (`t` rounded up to a whole word) and
//! `4 x ceil(n / 256)` bytes of scales: bitsandbytes' `n + 4 x ceil(n / 256)` whenever `n` is a
//! multiple of 4. Each quantized tensor is one allocation of its codes and its scales, each
//! region rounded up to the allocator's alignment (32 B on lavapipe). An f32 moment takes `4 n`
//! bytes. No step leaves an f32 tensor larger than its parameter: with the last block padded in
//! f32 instead, fusion let the updated weight take over the padded buffer (measured: the weight
//! then held the padding's 4 bytes a value for good).
//!
//! # The code map, and how it differs from bitsandbytes
//!
//! bitsandbytes quantizes with a non-linear "dynamic" map (a sign, a run of zeros standing for
//! the exponent, then fraction bits; unsigned for the second moment), which resolves values down
//! to about 1e-7 of a block's largest. A linear 8-bit map resolves only 1/254 of it: a second
//! moment below that rounds to zero, and the step `m / (sqrt(v) + eps)` then divides by epsilon
//! and explodes (bitsandbytes' paper shows linear 8-bit Adam diverging). burn's codes are linear,
//! so each moment is companded before it is quantized and expanded after:
//! - the first moment as `sign(m) sqrt(|m|)`: the smallest non-zero magnitude is `(1/254)^2`,
//!   1.6e-5 of the block's largest, and the largest errs by at most 0.8%;
//! - the second moment as `v^(1/4)`: `sqrt(v)`, the step's denominator, keeps the same 1.6e-5
//!   reach and 0.8% error, so a weight whose gradients are 60,000 times smaller than its block's
//!   largest still divides by its own scale, not by epsilon.
//!
//! Powers commute with the block's scaling, so burn's per-block calibration applies unchanged.
//! The second moment is never negative, so its codes use 128 of the 255 levels (the dynamic map
//! bitsandbytes uses for it spends all 256). Unlike bitsandbytes' fused CUDA kernel, which
//! updates the codes in place, each parameter's step here makes f32 transients of its moments:
//! the optimizer phase's high-water mark carries them, the state between steps does not.

use burn::optim::{
    AdaptiveMomentumState, LearningRate, ModuleOptimizer, Optimizer, RecordState, StateSink,
    StateSource, join_path,
};
use burn::tensor::ops::PadMode;
use burn::tensor::quantization::{QuantScheme, QuantStore, QuantValue, ScaleDtype};
use burn::tensor::{Device, FloatDType, Tensor};

use crate::engine::config::OptimizerKind;
pub use crate::engine::layout::{BLOCK, MIN_8BIT_SIZE, MomentLayout, PACK, state_bytes};

/// Whole blocks are stored as rows of this many values, two rows a block: burn's block sizes are
/// a `u8` per dimension, so one of 256 along a single dimension cannot be spelled.
const ROW: usize = 128;
impl MomentLayout {
    /// Keep `values` (f32, the parameter flattened) until the next step: as 8-bit codes when
    /// blocked, as they are otherwise.
    ///
    /// No f32 tensor here is larger than the parameter: fusion may let a step's output (the
    /// updated weight among them) take over a buffer its inputs no longer need, and a weight
    /// that took over a padded one would hold the padding for good.
    pub fn store(self, moment: Moment, values: Tensor<1>) -> StoredMoment {
        match self {
            Self::Full { values: n } => StoredMoment {
                blocks: values.reshape([1, n]),
                tail: None,
            },
            Self::Blocked {
                values: n,
                whole,
                tail,
            } => {
                let companded = moment.compand(values);
                let split = whole * BLOCK;
                let blocks = if tail == 0 {
                    companded.clone()
                } else {
                    companded.clone().slice(0..split)
                };
                let blocks = blocks
                    .reshape([split / ROW, ROW])
                    .quantize_dynamic(&blocks_scheme());
                let tail = (tail > 0).then(|| {
                    let words = tail.next_multiple_of(PACK);
                    let rest = companded.slice(split..n);
                    let rest = if words == tail {
                        rest
                    } else {
                        rest.pad([(0, words - tail)], PadMode::Constant(0.0))
                    };
                    rest.reshape([words / PACK, PACK])
                        .quantize_dynamic(&tail_scheme(words))
                });
                StoredMoment { blocks, tail }
            }
        }
    }

    /// What [`Self::store`] kept, as the parameter's f32 values (flattened) again.
    pub fn load(self, moment: Moment, stored: StoredMoment) -> Tensor<1> {
        match self {
            Self::Full { values } => stored.blocks.reshape([values]),
            Self::Blocked { whole, tail, .. } => {
                let dequantized = |codes: Tensor<2>, len: usize| -> Tensor<1> {
                    codes.dequantize().cast(FloatDType::F32).reshape([len])
                };
                let blocks = dequantized(stored.blocks, whole * BLOCK);
                let flat = match stored.tail {
                    Some(codes) => {
                        let words = tail.next_multiple_of(PACK);
                        let rest = dequantized(codes, words);
                        let rest = if words == tail {
                            rest
                        } else {
                            rest.slice(0..tail)
                        };
                        Tensor::cat(vec![blocks, rest], 0)
                    }
                    None => blocks,
                };
                moment.expand(flat)
            }
        }
    }
}

/// One moment as kept between steps.
#[derive(Clone, Debug)]
pub struct StoredMoment {
    /// The whole blocks' codes (`DType::QFloat`), or an f32 moment whole (`[1, n]`).
    pub blocks: Tensor<2>,
    /// The codes of a last, partial block.
    pub tail: Option<Tensor<2>>,
}

/// burn's symmetric 8-bit codes, four to a word, one f32 scale per `[2, 128]` block.
pub fn blocks_scheme() -> QuantScheme {
    codes().per_block([(BLOCK / ROW) as u8, ROW as u8], ScaleDtype::F32)
}

/// The same codes for a partial block of `words` values (a multiple of 4, at most 256), viewed
/// as `[words / 4, 4]`: one block, one scale.
fn tail_scheme(words: usize) -> QuantScheme {
    codes().per_block([(words / PACK) as u8, PACK as u8], ScaleDtype::F32)
}

fn codes() -> QuantScheme {
    QuantScheme::default()
        .with_value(QuantValue::Q8S)
        .with_store(QuantStore::PackedU32(0))
}

/// Which of Adam's moments: each is companded before its linear code so that small values keep
/// a code (see the module's docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// `m`, signed: kept as `sign(m) sqrt(|m|)`.
    First,
    /// `v`, never negative: kept as `v^(1/4)`.
    Second,
}

impl Moment {
    fn compand(self, values: Tensor<1>) -> Tensor<1> {
        match self {
            Self::First => values.clone().sign() * values.abs().sqrt(),
            Self::Second => values.sqrt().sqrt(),
        }
    }

    fn expand(self, stored: Tensor<1>) -> Tensor<1> {
        match self {
            Self::First => stored.clone() * stored.abs(),
            Self::Second => stored.square().square(),
        }
    }
}

/// AdamW with 8-bit moments (see the module's docs).
#[derive(Clone, Debug)]
pub struct AdamW8bit {
    beta_1: f32,
    beta_2: f32,
    epsilon: f32,
    weight_decay: f32,
}

impl AdamW8bit {
    /// With `adamw`'s hyper-parameters.
    pub fn new() -> Self {
        let (beta_1, beta_2) = OptimizerKind::ADAM_BETAS;
        Self {
            beta_1,
            beta_2,
            epsilon: OptimizerKind::ADAM_EPSILON,
            weight_decay: OptimizerKind::ADAMW_WEIGHT_DECAY,
        }
    }

    /// For a whole module, as burn's `AdamWConfig::init` builds one.
    pub fn init(self) -> ModuleOptimizer {
        ModuleOptimizer::from(self)
    }
}

impl Default for AdamW8bit {
    fn default() -> Self {
        Self::new()
    }
}

/// One parameter's state: the steps taken and its two moments ([`StoredMoment`]s). Saved and
/// restored as burn's Adam state of the whole blocks (or f32 moments), beside another of the
/// partial block's codes under `tail`.
#[derive(Clone)]
pub struct AdamW8bitState {
    blocks: AdaptiveMomentumState<2>,
    tail: Option<AdaptiveMomentumState<2>>,
}

impl AdamW8bitState {
    fn new(time: usize, first: StoredMoment, second: StoredMoment) -> Self {
        let tail = match (first.tail, second.tail) {
            (Some(first), Some(second)) => Some(AdaptiveMomentumState::new(time, first, second)),
            _ => None,
        };
        Self {
            blocks: AdaptiveMomentumState::new(time, first.blocks, second.blocks),
            tail,
        }
    }

    /// The steps taken and the two moments.
    pub fn into_parts(self) -> (usize, StoredMoment, StoredMoment) {
        let (tail_1, tail_2) = match self.tail {
            Some(tail) => (Some(tail.moment_1), Some(tail.moment_2)),
            None => (None, None),
        };
        (
            self.blocks.time,
            StoredMoment {
                blocks: self.blocks.moment_1,
                tail: tail_1,
            },
            StoredMoment {
                blocks: self.blocks.moment_2,
                tail: tail_2,
            },
        )
    }
}

impl RecordState for AdamW8bitState {
    fn state_flatten(&self, prefix: &str, out: &mut StateSink) {
        self.blocks.state_flatten(prefix, out);
        if let Some(tail) = &self.tail {
            tail.state_flatten(&join_path(prefix, "tail"), out);
        }
    }

    fn state_unflatten(prefix: &str, src: &mut StateSource, device: &Device) -> Option<Self> {
        let path = join_path(prefix, "tail");
        let tail = if src.has_under(&path) {
            Some(AdaptiveMomentumState::state_unflatten(&path, src, device)?)
        } else {
            None
        };
        let blocks = AdaptiveMomentumState::state_unflatten(prefix, src, device)?;
        Some(Self { blocks, tail })
    }
}

impl Optimizer for AdamW8bit {
    type State<const D: usize> = AdamW8bitState;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<AdamW8bitState>,
    ) -> (Tensor<D>, Option<AdamW8bitState>) {
        let dims = grad.dims();
        let layout = MomentLayout::of(dims.iter().product());
        // The moments are f32 whatever the weights are, as bitsandbytes keeps them.
        let grad: Tensor<1> = grad.cast(FloatDType::F32).reshape([layout.values()]);
        let (b1, b2) = (self.beta_1, self.beta_2);
        let (time, moment_1, moment_2) = match state {
            Some(state) => {
                let (time, first, second) = state.into_parts();
                (
                    time + 1,
                    layout
                        .load(Moment::First, first)
                        .mul_scalar(b1)
                        .add(grad.clone().mul_scalar(1.0 - b1)),
                    layout
                        .load(Moment::Second, second)
                        .mul_scalar(b2)
                        .add(grad.square().mul_scalar(1.0 - b2)),
                )
            }
            None => (
                1,
                grad.clone().mul_scalar(1.0 - b1),
                grad.square().mul_scalar(1.0 - b2),
            ),
        };
        // burn's AdamW, from here: bias-corrected moments, then the decoupled decay.
        let t = time as i32;
        let corrected_1 = moment_1.clone().div_scalar(1.0 - b1.powi(t));
        let corrected_2 = moment_2.clone().div_scalar(1.0 - b2.powi(t));
        let delta = corrected_1
            .div(corrected_2.sqrt().add_scalar(self.epsilon))
            .reshape(dims)
            .cast(tensor.dtype());
        let decay = lr * self.weight_decay as f64;
        let updated = tensor.mul_scalar(1.0 - decay) - delta.mul_scalar(lr);
        let state = AdamW8bitState::new(
            time,
            layout.store(Moment::First, moment_1),
            layout.store(Moment::Second, moment_2),
        );
        (updated, Some(state))
    }

    fn to_device<const D: usize>(state: AdamW8bitState, device: &Device) -> AdamW8bitState {
        AdamW8bitState {
            blocks: state.blocks.to_device(device),
            tail: state.tail.map(|tail| tail.to_device(device)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_tensors_keep_f32_moments_and_large_ones_a_byte_a_value() {
        assert_eq!(MomentLayout::of(4095), MomentLayout::Full { values: 4095 });
        assert_eq!(MomentLayout::of(4095).stored_bytes(), 4 * 4095);
        assert_eq!(
            MomentLayout::of(4096),
            MomentLayout::Blocked {
                values: 4096,
                whole: 16,
                tail: 0
            }
        );
        // bitsandbytes' n + 4 ceil(n / 256), partial last block or not.
        assert_eq!(MomentLayout::of(4096).stored_bytes(), 4096 + 4 * 16);
        assert_eq!(MomentLayout::of(30000).stored_bytes(), 30000 + 4 * 118);
        // A tail's codes fill whole words.
        assert_eq!(MomentLayout::of(4097).stored_bytes(), 4096 + 4 + 4 * 17);
        assert_eq!(state_bytes(512 * 512), 2 * (512 * 512 + 4 * 1024));
        assert_eq!(state_bytes(10), 2 * 40);
    }

    #[test]
    fn a_block_is_two_rows_and_a_tail_one_block_of_words() {
        let block = blocks_scheme().block_size().unwrap();
        assert_eq!(block.num_elements(), BLOCK);
        assert_eq!(block.num_blocks(&[40, ROW]), vec![20, 1]);
        for words in [4, 48, 252, 256] {
            let tail = tail_scheme(words).block_size().unwrap();
            assert_eq!(tail.num_elements(), words);
            assert_eq!(tail.num_blocks(&[words / PACK, PACK]), vec![1, 1]);
        }
    }
}
