//! A tiny transformer encoder: token and learned position embeddings, `layers` encoder blocks,
//! a classifier per position. No dropout, so runs are reproducible.

use burn::module::Module;
use burn::nn::transformer::{
    TransformerEncoder, TransformerEncoderConfig, TransformerEncoderInput,
};
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::tensor::{Device, Int, Tensor};

#[derive(Module, Debug)]
pub struct Transformer {
    tokens: Embedding,
    positions: Embedding,
    encoder: TransformerEncoder,
    classifier: Linear,
}

pub struct TransformerSize {
    pub width: usize,
    pub layers: usize,
    pub heads: usize,
    pub ff: usize,
}

impl Transformer {
    pub fn new(
        tokens: usize,
        length: usize,
        size: &TransformerSize,
        classes: usize,
        device: &Device,
    ) -> Self {
        Self {
            tokens: EmbeddingConfig::new(tokens, size.width).init(device),
            positions: EmbeddingConfig::new(length, size.width).init(device),
            encoder: TransformerEncoderConfig::new(size.width, size.ff, size.heads, size.layers)
                .with_dropout(0.0)
                .init(device),
            classifier: LinearConfig::new(size.width, classes).init(device),
        }
    }

    /// # Shapes
    /// - input: `[batch, length]` token ids
    /// - output: `[batch, length, classes]`
    pub fn forward(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        let [batch, length] = tokens.dims();
        let device = tokens.device();
        let positions = Tensor::<1, Int>::arange(0..length as i64, &device)
            .reshape([1, length])
            .repeat_dim(0, batch);
        let x = self.tokens.forward(tokens) + self.positions.forward(positions);
        let x = self.encoder.forward(TransformerEncoderInput::new(x));
        self.classifier.forward(x)
    }
}
