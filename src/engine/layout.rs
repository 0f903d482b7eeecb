//! How stored formats lay out their bytes: a quantized base's blocks
//! (`strategies.weight_dtype` = `q4`/`q8`) and 8-bit AdamW's moments (`optimizer =
//! adamw8bit`). The strategy and the optimizer store tensors in these formats; the analytic
//! model sizes them from the same definitions, without importing either.

use burn::tensor::quantization::{QuantScheme, QuantStore, QuantValue, ScaleDtype};
use serde::{Deserialize, Serialize};

use super::config::WeightDtype;

/// How a quantized base stores a weight matrix: `bits` a value, packed into 32-bit words along
/// each row, and one scale of `scale_bytes` per block of `block` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockFormat {
    pub bits: u32,
    pub block: u32,
    /// 2 (f16), or 4 (f32) where the adapter cannot compute in f16.
    pub scale_bytes: u32,
}

impl BlockFormat {
    /// The format of `weight_dtype`, if it is a quantized base; `f16` whether the run computes
    /// in f16 (the scales' type follows).
    pub fn of(weight_dtype: WeightDtype, f16: bool) -> Option<Self> {
        let (bits, block) = match weight_dtype {
            WeightDtype::Q4 => (4, 64),
            WeightDtype::Q8 => (8, 32),
            _ => return None,
        };
        Some(Self {
            bits,
            block,
            scale_bytes: if f16 { 2 } else { 4 },
        })
    }

    /// Values one 32-bit word packs.
    fn per_word(&self) -> usize {
        (32 / self.bits) as usize
    }

    /// The block `[rows, cols]` (`rows * cols` = [`Self::block`]) a `[d_in, d_out]` matrix is
    /// cut into: the widest run of whole words along a row that divides `d_out`, over as many
    /// rows as that leaves, which must divide `d_in`. `None`: nothing tiles it (it stays 16-bit).
    pub fn tile(&self, d_in: usize, d_out: usize) -> Option<[usize; 2]> {
        let block = self.block as usize;
        let mut cols = block;
        while cols >= self.per_word() {
            let rows = block / cols;
            if d_out.is_multiple_of(cols) && d_in.is_multiple_of(rows) {
                return Some([rows, cols]);
            }
            cols /= 2;
        }
        None
    }

    /// Bytes of a `[d_in, d_out]` matrix stored in this format: its packed words and one scale
    /// a block (before the allocator rounds each of the two buffers up to its alignment).
    pub fn matrix_bytes(&self, d_in: usize, d_out: usize) -> (u64, u64) {
        let values = (d_in * d_out) as u64;
        (
            values * self.bits as u64 / 8,
            values / self.block as u64 * self.scale_bytes as u64,
        )
    }

    /// burn's scheme for a matrix cut into blocks of `tile`.
    pub fn scheme(&self, tile: [usize; 2]) -> QuantScheme {
        let value = match self.bits {
            4 => QuantValue::Q4S,
            _ => QuantValue::Q8S,
        };
        let scale = match self.scale_bytes {
            2 => ScaleDtype::F16,
            _ => ScaleDtype::F32,
        };
        QuantScheme::default()
            .with_value(value)
            .with_store(QuantStore::PackedU32(0))
            .per_block([tile[0] as u8, tile[1] as u8], scale)
    }

    /// "4-bit blocks of 64 with f16 scales".
    pub fn describe(&self) -> String {
        format!(
            "{}-bit blocks of {} with {} scales",
            self.bits,
            self.block,
            if self.scale_bytes == 2 { "f16" } else { "f32" }
        )
    }
}

// 8-bit AdamW's moments (`engine::train::adamw8bit`, after bitsandbytes' blockwise
// `AdamW8bit`).

/// Values sharing one scale (bitsandbytes' `blocksize`).
pub const BLOCK: usize = 256;
/// Tensors with fewer values keep f32 moments (bitsandbytes' `min_8bit_size`).
pub const MIN_8BIT_SIZE: usize = 4096;
/// Codes packed in one `u32` word: a quantized tensor's innermost dimension is a multiple of it.
pub const PACK: usize = 4;

/// Bytes one parameter tensor of `values` values keeps between steps under `adamw8bit`: both
/// moments (before the allocator's alignment).
pub fn state_bytes(values: u64) -> u64 {
    2 * MomentLayout::of(values as usize).stored_bytes()
}

/// How one moment of a parameter is laid out between steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MomentLayout {
    /// Under [`MIN_8BIT_SIZE`] values: f32, viewed as `[1, values]`.
    Full { values: usize },
    /// 8-bit codes: `whole` blocks of [`BLOCK`] values viewed as `[2 x whole, 128]`, then the
    /// `tail` values of a last, partial block (if any) as a quantized tensor of their own.
    Blocked {
        values: usize,
        whole: usize,
        tail: usize,
    },
}

impl MomentLayout {
    pub fn of(values: usize) -> Self {
        if values < MIN_8BIT_SIZE {
            Self::Full { values }
        } else {
            Self::Blocked {
                values,
                whole: values / BLOCK,
                tail: values % BLOCK,
            }
        }
    }

    /// The parameter's values.
    pub fn values(self) -> usize {
        match self {
            Self::Full { values } | Self::Blocked { values, .. } => values,
        }
    }

    /// Bytes one moment takes: codes and a scale per block, or f32 values. The tail's codes
    /// round up to a whole `u32` word.
    pub fn stored_bytes(self) -> u64 {
        match self {
            Self::Full { values } => 4 * values as u64,
            Self::Blocked { whole, tail, .. } => {
                let tail = if tail == 0 {
                    0
                } else {
                    tail.next_multiple_of(PACK) as u64 + 4
                };
                (BLOCK as u64 + 4) * whole as u64 + tail
            }
        }
    }
}
