//! GRU and LSTM sequence models: token embedding, one recurrent layer, a classifier per position.
//! The layer runs as cuDNN and PyTorch run it (`stacked_cells`: the gates stacked, the inputs of
//! every time step projected at once), initialised as burn's `Gru` and `Lstm` would be.

use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, GruConfig, Linear, LinearConfig, LstmConfig};
use burn::tensor::{Device, Int, Tensor};

use super::dense::{Parts, dense, matrices_of, params_of};
use super::stacked_cells::{StackedGru, StackedLstm};

#[derive(Module, Debug)]
pub enum Cell {
    Gru(StackedGru),
    Lstm(StackedLstm),
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
        // burn's cells draw the initial weights; the stacked ones take copies of them.
        let cell = if lstm {
            Cell::Lstm(StackedLstm::of(
                &LstmConfig::new(width, width, true).init(device),
            ))
        } else {
            Cell::Gru(StackedGru::of(
                &GruConfig::new(width, width, true).init(device),
            ))
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
            Cell::Gru(gru) => gru.forward(x),
            Cell::Lstm(lstm) => lstm.forward(x),
        };
        dense(&self.classifier, hidden)
    }

    /// The classifier, and the cell's and classifier's weight matrices (the cell's stacked
    /// input and hidden-state weights read their `Param` whole, so an adapted one is formed
    /// whole each pass, as burn's cells did).
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
