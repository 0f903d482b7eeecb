//! What a forward pass does at each activation, supplied by whoever runs the model: the
//! training loop reads the allocator there and lets strategies act on the layer's output.

use burn::nn::activation::Activation;
use burn::tensor::Tensor;

pub trait LayerHook {
    /// Apply `activation` to a layer's output `x` and return the activated output.
    fn activate<const D: usize>(&mut self, activation: &Activation, x: Tensor<D>) -> Tensor<D>;
}

/// The plain forward pass.
pub struct Plain;

impl LayerHook for Plain {
    fn activate<const D: usize>(&mut self, activation: &Activation, x: Tensor<D>) -> Tensor<D> {
        activation.forward(x)
    }
}
