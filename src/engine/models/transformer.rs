//! Transformers on token sequences, with burn's encoder layers as their parameters. No dropout,
//! so runs are reproducible.
//!
//! - Encoder (the sort task's model): token and learned position embeddings, post-norm encoder
//!   blocks, a classifier per position.
//! - Decoder (GPT-2 as it is): the same embeddings, pre-norm blocks with causal attention and a
//!   GELU feed-forward, a final LayerNorm, and logits from the token embedding itself (tied
//!   input and output embeddings, no output bias). At GPT-2 small's sizes that is 124,439,808
//!   parameters.
//!
//! A block runs burn's `TransformerEncoderLayer::forward` op by op (so the hook can read the
//! allocator after each: where the bytes kept for backward come from), with the attention core
//! `strategies.attention` picks: burn's `MultiHeadAttention` arithmetic (`naive`: scores, burn's
//! autoregressive mask for a decoder, softmax, weighted sum) or `ops::attention::fused`.

use burn::module::{Initializer, Module};
use burn::nn::attention::{MultiHeadAttention, generate_autoregressive_mask};
use burn::nn::transformer::{
    TransformerEncoder, TransformerEncoderConfig, TransformerEncoderLayer,
};
use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::activation::softmax;
use burn::tensor::{Bool, Device, Int, Tensor};

use std::sync::Arc;

use super::block::{self, Recompute};
use super::dense::{Parts, dense, matrices_of, params_of};
use super::hook::{LayerHook, Op};
use crate::engine::config::OpPath;
use crate::engine::ops::attention;
use crate::engine::ops::host::HostStash;

#[derive(Module, Debug)]
pub struct Transformer {
    tokens: Embedding,
    positions: Embedding,
    encoder: TransformerEncoder,
    /// Decoder only: the LayerNorm before the tied output.
    final_norm: Option<LayerNorm>,
    /// Encoder only: the classifier per position (a decoder's output is `tokens`' weight).
    classifier: Option<Linear>,
    #[module(skip)]
    causal: bool,
    #[module(skip)]
    attention: OpPath,
    /// `strategies.checkpointing = layers`: each block is one recomputed node.
    #[module(skip)]
    recompute: Recompute,
}

pub struct TransformerSize {
    pub width: usize,
    pub layers: usize,
    pub heads: usize,
    pub ff: usize,
    /// GPT-2's decoder instead of the encoder.
    pub decoder: bool,
    pub attention: OpPath,
    /// Recompute each block in backward (`strategies.checkpointing = layers`).
    pub recompute: bool,
}

impl Transformer {
    /// `tokens` ids in, `length` positions, `classes` outputs (a decoder's are its tokens).
    pub fn new(
        tokens: usize,
        length: usize,
        size: &TransformerSize,
        classes: usize,
        device: &Device,
    ) -> Self {
        let blocks = TransformerEncoderConfig::new(size.width, size.ff, size.heads, size.layers)
            .with_dropout(0.0)
            .with_norm_first(size.decoder);
        // GPT-2 draws its embeddings from N(0, 0.02): with the output tied to the token
        // embedding, burn's N(0, 1) would start the logits at a scale of sqrt(width).
        let embedding = |rows| {
            let config = EmbeddingConfig::new(rows, size.width);
            match size.decoder {
                true => config.with_initializer(Initializer::Normal {
                    mean: 0.0,
                    std: 0.02,
                }),
                false => config,
            }
            .init(device)
        };
        Self {
            tokens: embedding(tokens),
            positions: embedding(length),
            encoder: blocks.init(device),
            final_norm: size
                .decoder
                .then(|| LayerNormConfig::new(size.width).init(device)),
            classifier: (!size.decoder)
                .then(|| LinearConfig::new(size.width, classes).init(device)),
            causal: size.decoder,
            attention: size.attention,
            recompute: Recompute {
                on: size.recompute,
                host: None,
            },
        }
    }

    /// Whether this is the decoder (a prediction at every position).
    pub fn is_decoder(&self) -> bool {
        self.causal
    }

    /// The output layer (a decoder's: its final norm and the tied token embedding), and the
    /// weight matrices of the blocks (and of an encoder's classifier).
    pub fn parts(&self) -> Parts {
        let head = match (&self.classifier, &self.final_norm) {
            (Some(classifier), _) => params_of(&[classifier]),
            (None, Some(norm)) => {
                let mut head = params_of(&[norm]);
                head.extend(params_of(&[&self.tokens]));
                head
            }
            (None, None) => Vec::new(),
        };
        let mut adapted = matrices_of(&self.encoder.layers.iter().collect::<Vec<_>>());
        if let Some(classifier) = &self.classifier {
            adapted.extend(matrices_of(&[classifier]));
        }
        Parts { head, adapted }
    }

    /// burn's own forward pass over the same parameters (`TransformerEncoder::forward`), for
    /// the tests that hold [`Transformer::forward`]'s naive path to it.
    pub fn forward_with_burns_encoder(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        let [batch, length] = tokens.dims();
        let device = tokens.device();
        let x = self.embed(tokens);
        let mut input = burn::nn::transformer::TransformerEncoderInput::new(x);
        if self.causal {
            input = input.mask_attn(generate_autoregressive_mask(batch, length, &device));
        }
        self.head(self.encoder.forward(input), &mut super::Plain)
    }

    /// Each checkpointed block's input is kept on the host, counted by `host`.
    pub fn set_host_stash(&mut self, host: Arc<HostStash>) {
        self.recompute.host = Some(host);
    }

    /// # Shapes
    /// - input: `[batch, length]` token ids
    /// - output: `[batch, length, classes]`
    pub fn forward(&self, tokens: Tensor<2, Int>, hook: &mut impl LayerHook) -> Tensor<3> {
        let [batch, length] = tokens.dims();
        let device = tokens.device();
        let mut x = self.embed(tokens);
        hook.after(Op::Embedding);
        // burn's autoregressive mask, as its users pass it to every layer.
        let mask = (self.causal && self.attention == OpPath::Naive)
            .then(|| generate_autoregressive_mask(batch, length, &device));
        for layer in &self.encoder.layers {
            let layer = Layer {
                layer: layer.clone(),
                mask: mask.clone(),
                causal: self.causal,
                attention: self.attention,
            };
            x = block::run(&layer, x, &self.recompute, hook);
        }
        let logits = self.head(x, hook);
        hook.after(Op::Logits);
        logits
    }

    fn embed(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        let [batch, length] = tokens.dims();
        let positions = Tensor::<1, Int>::arange(0..length as i64, &tokens.device())
            .reshape([1, length])
            .repeat_dim(0, batch);
        self.tokens.forward(tokens) + self.positions.forward(positions)
    }

    /// The final LayerNorm (a decoder's), then the classifier or, for a decoder, logits from
    /// the token embedding (tied).
    fn head(&self, x: Tensor<3>, hook: &mut impl LayerHook) -> Tensor<3> {
        if let Some(classifier) = &self.classifier {
            return dense(classifier, x);
        }
        let x = match &self.final_norm {
            Some(norm) => {
                let x = norm.forward(x);
                hook.after(Op::LayerNorm);
                x
            }
            None => x,
        };
        let [batch, length, width] = x.dims();
        let table = self.tokens.weight.val();
        let vocab = table.dims()[0];
        x.reshape([batch * length, width])
            .matmul(table.transpose())
            .reshape([batch, length, vocab])
    }
}

/// One encoder layer and what it reads besides its own weights (the mask): the unit per-layer
/// checkpointing recomputes.
#[derive(Module, Debug)]
struct Layer {
    layer: TransformerEncoderLayer,
    mask: Option<Tensor<3, Bool>>,
    #[module(skip)]
    causal: bool,
    #[module(skip)]
    attention: OpPath,
}

impl block::LayerForward for Layer {
    /// burn's `TransformerEncoderLayer::forward` (no dropout), op by op.
    fn run(&self, x: Tensor<3>, hook: &mut impl LayerHook) -> Tensor<3> {
        let layer = &self.layer;
        let mask = self.mask.as_ref();
        let attention_input = if layer.norm_first {
            let normed = layer.norm_2.forward(x.clone());
            hook.after(Op::LayerNorm);
            normed
        } else {
            x.clone()
        };
        let attended = self.self_attention(&layer.mha, attention_input, mask, hook);
        let mut x = x + attended;
        hook.after(Op::Residual);
        let ff_input = if layer.norm_first {
            layer.norm_1.forward(x.clone())
        } else {
            x = layer.norm_1.forward(x);
            x.clone()
        };
        hook.after(Op::LayerNorm);
        let hidden = dense(&layer.pwff.linear_inner, ff_input);
        hook.after(Op::Projection);
        let hidden = layer.pwff.activation.forward(hidden);
        hook.after(Op::Activation);
        let out = dense(&layer.pwff.linear_outer, hidden);
        hook.after(Op::Projection);
        let x = x + out;
        hook.after(Op::Residual);
        if layer.norm_first {
            x
        } else {
            let x = layer.norm_2.forward(x);
            hook.after(Op::LayerNorm);
            x
        }
    }
}

impl Layer {
    /// `MultiHeadAttention::forward` for self-attention: projections, the core, the output
    /// projection.
    fn self_attention(
        &self,
        mha: &MultiHeadAttention,
        x: Tensor<3>,
        mask: Option<&Tensor<3, Bool>>,
        hook: &mut impl LayerHook,
    ) -> Tensor<3> {
        let [batch, length, width] = x.dims();
        let heads = |linear: &Linear| {
            dense(linear, x.clone())
                .reshape([batch, length, mha.n_heads, mha.d_k])
                .swap_dims(1, 2)
        };
        let (q, k, v) = (heads(&mha.query), heads(&mha.key), heads(&mha.value));
        hook.after(Op::Projection);
        let context = match self.attention {
            OpPath::Naive => naive_core(mha, q, k, v, mask, hook),
            OpPath::Fused => attention::fused(q, k, v, self.causal),
        };
        hook.after(Op::Attention);
        let out = dense(
            &mha.output,
            context.swap_dims(1, 2).reshape([batch, length, width]),
        );
        hook.after(Op::Projection);
        out
    }
}

/// burn's `MultiHeadAttention` arithmetic: scores, the mask filled with its `min_float`,
/// softmax over the keys, the weighted sum of the values.
fn naive_core(
    mha: &MultiHeadAttention,
    q: Tensor<4>,
    k: Tensor<4>,
    v: Tensor<4>,
    mask: Option<&Tensor<3, Bool>>,
    hook: &mut impl LayerHook,
) -> Tensor<4> {
    let mut scores = q.matmul(k.transpose()).div_scalar((mha.d_k as f32).sqrt());
    if let Some(mask) = mask {
        let [batch, rows, keys] = mask.dims();
        scores = scores.mask_fill(mask.clone().reshape([batch, 1, rows, keys]), mha.min_float);
    }
    hook.after(Op::Scores);
    let weights = softmax(scores, 3);
    hook.after(Op::Softmax);
    weights.matmul(v)
}
