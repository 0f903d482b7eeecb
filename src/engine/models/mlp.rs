//! Multi-layer perceptron: dense layers with one activation between them.

use burn::module::Module;
use burn::nn::activation::{Activation, ActivationConfig};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor};

use super::dense::{Parts, dense, matrices_of, params_of};
use super::hook::LayerHook;

#[derive(Module, Debug)]
pub struct Mlp {
    layers: Vec<Linear>,
    activation: Activation,
}

impl Mlp {
    /// `widths` runs from the input width through the hidden widths to the class count.
    pub fn new(widths: &[usize], activation: ActivationConfig, device: &Device) -> Self {
        let layers = widths
            .windows(2)
            .map(|pair| LinearConfig::new(pair[0], pair[1]).init(device))
            .collect();
        Self {
            layers,
            activation: activation.init(device),
        }
    }

    /// # Shapes
    /// - input: `[batch, widths[0]]`
    /// - output: `[batch, classes]`
    pub fn forward(&self, input: Tensor<2>, hook: &mut impl LayerHook) -> Tensor<2> {
        let last = self.layers.len() - 1;
        let mut x = input;
        for (i, layer) in self.layers.iter().enumerate() {
            x = dense(layer, x);
            if i < last {
                x = hook.activate(&self.activation, x);
            }
        }
        x
    }
}

impl Mlp {
    /// The dense layers, input side first (the fused kernels take their weights from here).
    pub fn dense_layers(&self) -> &[Linear] {
        &self.layers
    }

    /// The last layer, and every layer's weights.
    pub fn parts(&self) -> Parts {
        let last = self.layers.last().expect("an MLP has an output layer");
        Parts {
            head: params_of(&[last]),
            adapted: matrices_of(&self.layers.iter().collect::<Vec<_>>()),
        }
    }
}
