//! Rotary position embeddings as Llama's Hugging Face code applies them: each head's two halves
//! turned by a position's angles, `x cos + rotate_half(x) sin`.
//!
//! burn's `RotaryEncoding` turns interleaved pairs instead, and uploads its 2 x 4 sign matrix
//! from the host at every call: that upload's buffer is freed at a different moment in a real
//! run than in a plan, so plans stopped matching runs to the byte (32 B at an evaluation's
//! high-water mark). Here the angles' cosines and sines are made once, on the device, when the
//! model is built.

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor};

#[derive(Module, Debug)]
pub struct Rotary {
    /// `[positions, head_dim]`: each position's angle per dimension, both halves alike.
    cos: Tensor<2>,
    sin: Tensor<2>,
}

impl Rotary {
    /// Angles `position * theta^(-2i / head_dim)` for `i < head_dim / 2`, over `positions`.
    pub fn new(positions: usize, head_dim: usize, theta: f64, device: &Device) -> Self {
        let half = head_dim / 2;
        let exponents = Tensor::<1, Int>::arange(0..half as i64, device)
            .float()
            .mul_scalar(-2.0 * theta.ln() / head_dim as f64);
        let frequencies = exponents.exp().reshape([1, half]);
        let position = Tensor::<1, Int>::arange(0..positions as i64, device)
            .float()
            .reshape([positions, 1]);
        let angles = position.matmul(frequencies);
        let angles = Tensor::cat(vec![angles.clone(), angles], 1);
        Self {
            cos: angles.clone().cos(),
            sin: angles.sin(),
        }
    }

    /// # Shapes
    /// - input and output: `[batch, heads, length, head_dim]`
    pub fn apply(&self, x: Tensor<4>) -> Tensor<4> {
        let [_, _, length, head_dim] = x.dims();
        let dtype = x.dtype();
        let table = |t: &Tensor<2>| {
            t.clone()
                .slice_dim(0, 0..length)
                .cast(dtype)
                .reshape([1, 1, length, head_dim])
        };
        let half = head_dim / 2;
        let rotated = Tensor::cat(
            vec![
                x.clone().slice_dim(3, half..head_dim).neg(),
                x.clone().slice_dim(3, 0..half),
            ],
            3,
        );
        x * table(&self.cos) + rotated * table(&self.sin)
    }
}
