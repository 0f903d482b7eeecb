//! Rotary position embeddings as Llama's Hugging Face code applies them: each head's two halves
//! turned by a position's angles, `x cos + rotate_half(x) sin`.
//!
//! burn's `RotaryEncoding` turns interleaved pairs instead, and uploads its 2 x 4 sign matrix
//! from the host at every call: that upload's buffer is freed at a different moment in a real
//! run than in a plan, so plans stopped matching runs to the byte (32 B at an evaluation's
//! high-water mark). Here the angles' cosines and sines are computed on the host (in f64) and
//! uploaded once, when the model is built: built on the device from `arange`, a table of a
//! model that was built and dropped without running stayed queued in burn's fusion stream and
//! held its bytes (1,024 B of sort-llama's) into the next run.

use burn::module::Module;
use burn::tensor::{Device, Tensor, TensorData};

use super::upload::uploaded;

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
        let frequencies: Vec<f64> = (0..head_dim)
            .map(|i| theta.powf(-2.0 * (i % half) as f64 / head_dim as f64))
            .collect();
        // Each table computed only when it is written (`uploaded`: not under a dry run).
        let table = |f: fn(f64) -> f64| {
            uploaded([positions, head_dim], device, || {
                let values: Vec<f32> = (0..positions)
                    .flat_map(|position| {
                        frequencies
                            .iter()
                            .map(move |frequency| f(position as f64 * frequency) as f32)
                    })
                    .collect();
                TensorData::new(values, [positions, head_dim])
            })
        };
        Self {
            cos: table(f64::cos),
            sin: table(f64::sin),
        }
    }

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
