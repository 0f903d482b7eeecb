//! A small CNN for 8x8 images: two 3x3 convolutions (same padding), a 2x2 max-pool, a dense
//! hidden layer, and the classifier.

use burn::module::Module;
use burn::nn::activation::{Activation, ActivationConfig};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::{Device, Tensor};

use super::dense::{Parts, dense, matrices_of, params_of};
use super::hook::LayerHook;

/// Side of the input images and of the feature map after pooling.
pub const SIDE: usize = 8;
pub const POOLED: usize = SIDE / 2;

#[derive(Module, Debug)]
pub struct Cnn {
    conv1: Conv2d,
    conv2: Conv2d,
    pool: MaxPool2d,
    dense: Linear,
    classifier: Linear,
    activation: Activation,
}

impl Cnn {
    pub fn new(
        channels: [usize; 2],
        hidden: usize,
        classes: usize,
        activation: ActivationConfig,
        device: &Device,
    ) -> Self {
        let conv = |from, to| {
            Conv2dConfig::new([from, to], [3, 3])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(device)
        };
        Self {
            conv1: conv(1, channels[0]),
            conv2: conv(channels[0], channels[1]),
            pool: MaxPool2dConfig::new([2, 2]).init(),
            dense: LinearConfig::new(channels[1] * POOLED * POOLED, hidden).init(device),
            classifier: LinearConfig::new(hidden, classes).init(device),
            activation: activation.init(device),
        }
    }

    /// # Shapes
    /// - input: `[batch, 64]` (8x8 images, row-major)
    /// - output: `[batch, classes]`
    pub fn forward(&self, input: Tensor<2>, hook: &mut impl LayerHook) -> Tensor<2> {
        let [batch, _] = input.dims();
        let x = input.reshape([batch, 1, SIDE, SIDE]);
        let x = hook.activate(&self.activation, self.conv1.forward(x));
        let x = hook.activate(&self.activation, self.conv2.forward(x));
        let x = self.pool.forward(x);
        let x = x.flatten(1, 3);
        let x = hook.activate(&self.activation, dense(&self.dense, x));
        dense(&self.classifier, x)
    }
}

impl Cnn {
    /// The classifier, and the two dense layers' weights (LoRA adapts matrices; the
    /// convolutions' kernels are 4-D and stay frozen).
    pub fn parts(&self) -> Parts {
        Parts {
            head: params_of(&[&self.classifier]),
            adapted: matrices_of(&[&self.dense, &self.classifier]),
        }
    }
}
