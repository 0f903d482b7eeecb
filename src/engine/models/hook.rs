//! What a forward pass does at each activation, supplied by whoever runs the model: the
//! training loop reads the allocator there and lets strategies act on the layer's output.

use burn::nn::activation::Activation;
use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

pub trait LayerHook {
    /// Apply `activation` to a layer's output `x` and return the activated output.
    fn activate<const D: usize>(&mut self, activation: &Activation, x: Tensor<D>) -> Tensor<D>;

    /// A model that names its ops (the transformer) calls this after each: what is alive now
    /// beyond what was alive at the previous call is what `op` made and left.
    fn after(&mut self, _op: Op) {}
}

/// The ops a transformer's forward pass is made of, as the bytes they leave are grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Token and position embeddings and their sum.
    Embedding,
    LayerNorm,
    /// The linear maps: Q, K, V, the attention's output and the feed-forward's two.
    Projection,
    /// Rotary positions applied to Q and K (a llama's).
    Rotary,
    /// Naive attention's scores `Q K^T / sqrt(d)`, masked for a decoder.
    Scores,
    /// Naive attention's softmax over the keys.
    Softmax,
    /// The attention weights times V, or the whole fused attention op.
    Attention,
    /// The feed-forward's activation (GELU; a llama's SiLU gate times the up projection).
    Activation,
    /// The residual sums.
    Residual,
    /// A mixture of experts' router: its scores, softmax and each token's top-k weights.
    Router,
    /// A mixture of experts' experts: each one's gathered tokens, SwiGLU and weighted output,
    /// and their sum.
    Experts,
    /// A whole block run as one recomputed node (`strategies.checkpointing = layers`): what it
    /// keeps is the block's input.
    Block,
    /// The logits.
    Logits,
    /// The cross-entropy loss.
    Loss,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Self::Embedding => "embedding",
            Self::LayerNorm => "layer norm (RMSNorm in a llama)",
            Self::Rotary => "rotary positions (Q and K)",
            Self::Projection => "projections (Q, K, V, output, feed-forward)",
            Self::Scores => "attention scores",
            Self::Softmax => "softmax",
            Self::Attention => "attention output (naive: weights x V; fused: the whole op)",
            Self::Activation => "GELU, or a llama's SiLU gate times up",
            Self::Residual => "residual sums",
            Self::Router => "router (scores, top-k weights)",
            Self::Experts => "experts (their tokens, SwiGLU, weighted sum)",
            Self::Block => "block inputs (each block recomputed in backward)",
            Self::Logits => "logits",
            Self::Loss => "loss",
        }
    }
}

/// The plain forward pass.
pub struct Plain;

impl LayerHook for Plain {
    fn activate<const D: usize>(&mut self, activation: &Activation, x: Tensor<D>) -> Tensor<D> {
        activation.forward(x)
    }
}
