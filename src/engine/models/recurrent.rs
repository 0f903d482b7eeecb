//! GRU and LSTM sequence models: token embedding, one recurrent layer, a classifier per position.

use burn::module::Module;
use burn::nn::{
    Embedding, EmbeddingConfig, Gru, GruConfig, Linear, LinearConfig, Lstm, LstmConfig,
};
use burn::tensor::{Device, Int, Tensor};

use super::dense::{Parts, dense, matrices_of, params_of};

// One cell per model: boxing the larger variant would only add an indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Module, Debug)]
pub enum Cell {
    Gru(Gru),
    Lstm(Lstm),
}

#[derive(Module, Debug)]
pub struct Recurrent {
    embedding: Embedding,
    cell: Cell,
    classifier: Linear,
}

impl Recurrent {
    /// `tokens` counts every input id (the vocabulary plus the query token).
    pub fn new(lstm: bool, tokens: usize, width: usize, classes: usize, device: &Device) -> Self {
        let cell = if lstm {
            Cell::Lstm(LstmConfig::new(width, width, true).init(device))
        } else {
            Cell::Gru(GruConfig::new(width, width, true).init(device))
        };
        Self {
            embedding: EmbeddingConfig::new(tokens, width).init(device),
            cell,
            classifier: LinearConfig::new(width, classes).init(device),
        }
    }

    /// # Shapes
    /// - input: `[batch, length]` token ids
    /// - output: `[batch, length, classes]`
    pub fn forward(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        let x = self.embedding.forward(tokens);
        let hidden = match &self.cell {
            Cell::Gru(gru) => gru.forward(x, None),
            Cell::Lstm(lstm) => lstm.forward(x, None).0,
        };
        dense(&self.classifier, hidden)
    }

    /// The classifier, and the cell's and classifier's weight matrices (burn's cells call
    /// `Linear::forward` themselves, so their adapted weights are formed whole each pass).
    pub fn parts(&self) -> Parts {
        let mut adapted = match &self.cell {
            Cell::Gru(gru) => matrices_of(&[gru]),
            Cell::Lstm(lstm) => matrices_of(&[lstm]),
        };
        adapted.extend(matrices_of(&[&self.classifier]));
        Parts {
            head: params_of(&[&self.classifier]),
            adapted,
        }
    }
}
