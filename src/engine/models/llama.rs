//! Llama-style decoders, the family Llama, Mistral, TinyLlama and Qwen2 share: a token
//! embedding, pre-norm blocks of RMSNorm, grouped-query attention with rotary positions and a
//! SwiGLU feed-forward, a final RMSNorm, and an output layer that is the token embedding itself
//! (`tied`) or a matrix of its own. No biases but Qwen2's on Q, K and V (`qkv_bias`); Qwen3's
//! RMSNorm over each query and key head (`qk_norm`), and heads of a width of their own
//! (`head_dim`, not `width / heads`). Phi-3 holds Q, K and V as one matrix and the gate and up
//! projections as another (`fused_projections`), as its checkpoints store them: the same
//! parameters, in two matrices where Llama has five. No dropout, so runs are reproducible.
//!
//! Attention runs `strategies.attention`'s core: the naive one repeats each key/value head for
//! its group of query heads, as Hugging Face's eager attention (`repeat_kv`) does, and keeps the
//! scores and softmax for backward; the fused one folds each group's query heads into one
//! longer row block against the shared key/value head (`ops::attention::fused_grouped`), so
//! nothing is repeated and nothing `L x L` is kept.

use burn::module::{Initializer, Module};
use burn::nn::{
    Embedding, EmbeddingConfig, Linear, LinearConfig, RmsNorm, RmsNormConfig, SwiGlu, SwiGluConfig,
};
use burn::tensor::activation::{silu, softmax};
use burn::tensor::{Device, Int, Tensor};

use super::block;
use super::dense::{Parts, dense, matrices_of, params_of};
use super::hook::{LayerHook, Op};
use super::rotary::Rotary;
use crate::engine::config::OpPath;
use crate::engine::ops::attention;

/// The sizes a Llama-style decoder is built from (a Hugging Face config's fields, renamed).
#[derive(Clone, Debug)]
pub struct LlamaSize {
    /// Rows of the token table, and outputs.
    pub tokens: usize,
    /// The longest sequence the rotary table covers.
    pub positions: usize,
    pub width: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    /// Each head's width (Llama's `width / heads`; Qwen3 states its own).
    pub head_dim: usize,
    /// RMSNorm over each query and key head before the rotation (Qwen3's `q_norm`, `k_norm`).
    pub qk_norm: bool,
    /// Q, K and V as one `[width, (heads + 2 kv_heads) head_dim]` matrix, the gate and up
    /// projections as one `[width, 2 ff]` (Phi-3's `qkv_proj` and `gate_up_proj`).
    pub fused_projections: bool,
    pub ff: usize,
    pub tied: bool,
    pub qkv_bias: bool,
    pub rope_theta: f64,
    pub norm_eps: f64,
    pub attention: OpPath,
    /// Recompute each block in backward (`strategies.checkpointing = layers`).
    pub recompute: bool,
}

#[derive(Module, Debug)]
pub struct Llama {
    tokens: Embedding,
    blocks: Vec<Block>,
    final_norm: RmsNorm,
    /// Untied output (`[width, tokens]`); `None` when the token embedding is the output.
    output: Option<Linear>,
    rope: Rotary,
    #[module(skip)]
    heads: usize,
    #[module(skip)]
    kv_heads: usize,
    #[module(skip)]
    head_dim: usize,
    #[module(skip)]
    attention: OpPath,
    /// `strategies.checkpointing = layers`: each block is one recomputed node.
    #[module(skip)]
    recompute: bool,
}

#[derive(Module, Debug)]
struct Block {
    attention_norm: RmsNorm,
    qkv: Qkv,
    /// Qwen3's RMSNorms over each query and key head (`head_dim` wide); `None` elsewhere.
    query_norm: Option<RmsNorm>,
    key_norm: Option<RmsNorm>,
    out: Linear,
    ff_norm: RmsNorm,
    gate_up: GateUp,
    down: Linear,
}

/// The attention's input projections. One per block, built once: the separate variant's size
/// costs nothing worth a box (burn derives no `Module` for one).
#[allow(clippy::large_enum_variant)]
#[derive(Module, Debug)]
enum Qkv {
    /// Three matrices (Llama's `q_proj`, `k_proj`, `v_proj`).
    Separate(Separate),
    /// One matrix whose outputs are the queries' heads, then the keys', then the values'
    /// (Phi-3's `qkv_proj`).
    Fused(Linear),
}

#[derive(Module, Debug)]
struct Separate {
    query: Linear,
    key: Linear,
    value: Linear,
}

/// The feed-forward's gate and up projections.
#[derive(Module, Debug)]
enum GateUp {
    /// `linear_inner` is the gate (through SiLU), `linear_outer` the up projection.
    Separate(SwiGlu),
    /// One matrix whose outputs are the gate's, then the up projection's (Phi-3's
    /// `gate_up_proj`, split in two halves as its `chunk(2)` does).
    Fused(Linear),
}

impl Llama {
    pub fn new(size: &LlamaSize, device: &Device) -> Self {
        let head_dim = size.head_dim;
        let q_width = size.heads * head_dim;
        let kv_width = size.kv_heads * head_dim;
        let linear = |inputs, outputs, bias| {
            LinearConfig::new(inputs, outputs)
                .with_bias(bias)
                .init(device)
        };
        let norm_of = |width| {
            RmsNormConfig::new(width)
                .with_epsilon(size.norm_eps)
                .init(device)
        };
        let norm = || norm_of(size.width);
        let head_norm = || size.qk_norm.then(|| norm_of(head_dim));
        let blocks = (0..size.layers)
            .map(|_| Block {
                attention_norm: norm(),
                qkv: match size.fused_projections {
                    false => Qkv::Separate(Separate {
                        query: linear(size.width, q_width, size.qkv_bias),
                        key: linear(size.width, kv_width, size.qkv_bias),
                        value: linear(size.width, kv_width, size.qkv_bias),
                    }),
                    true => Qkv::Fused(linear(size.width, q_width + 2 * kv_width, size.qkv_bias)),
                },
                query_norm: head_norm(),
                key_norm: head_norm(),
                out: linear(q_width, size.width, false),
                ff_norm: norm(),
                gate_up: match size.fused_projections {
                    false => GateUp::Separate(SwiGluConfig::new(size.width, size.ff).init(device)),
                    true => GateUp::Fused(linear(size.width, 2 * size.ff, false)),
                },
                down: linear(size.ff, size.width, false),
            })
            .collect();
        Self {
            // Drawn from N(0, 0.02) as these models' `initializer_range` says: with a tied
            // output, burn's N(0, 1) would start the logits at a scale of sqrt(width).
            tokens: EmbeddingConfig::new(size.tokens, size.width)
                .with_initializer(Initializer::Normal {
                    mean: 0.0,
                    std: 0.02,
                })
                .init(device),
            blocks,
            final_norm: norm(),
            output: (!size.tied).then(|| linear(size.width, size.tokens, false)),
            rope: Rotary::new(size.positions, head_dim, size.rope_theta, device),
            heads: size.heads,
            kv_heads: size.kv_heads,
            head_dim,
            attention: size.attention,
            recompute: size.recompute,
        }
    }

    /// The output layer (with the final norm), and the body's weight matrices.
    pub fn parts(&self) -> Parts {
        let mut head = params_of(&[&self.final_norm]);
        head.extend(match &self.output {
            Some(output) => params_of(&[output]),
            None => params_of(&[&self.tokens]),
        });
        Parts {
            head,
            adapted: matrices_of(&self.blocks.iter().collect::<Vec<_>>()),
        }
    }

    /// # Shapes
    /// - input: `[batch, length]` token ids
    /// - output: `[batch, length, tokens]`
    pub fn forward(&self, tokens: Tensor<2, Int>, hook: &mut impl LayerHook) -> Tensor<3> {
        let mut x = self.tokens.forward(tokens);
        hook.after(Op::Embedding);
        for weights in &self.blocks {
            x = block::run(&self.layer(weights), x, self.recompute, hook);
        }
        let x = self.final_norm.forward(x);
        hook.after(Op::LayerNorm);
        let logits = match &self.output {
            Some(output) => dense(output, x),
            None => {
                let table = self.tokens.weight.val();
                let [batch, length, width] = x.dims();
                let rows = table.dims()[0];
                x.reshape([batch * length, width])
                    .matmul(table.transpose())
                    .reshape([batch, length, rows])
            }
        };
        hook.after(Op::Logits);
        logits
    }

    /// One block with what it shares with the others (the rotary tables, the head counts).
    fn layer(&self, block: &Block) -> Layer {
        Layer {
            block: block.clone(),
            rope: self.rope.clone(),
            heads: self.heads,
            kv_heads: self.kv_heads,
            head_dim: self.head_dim,
            attention: self.attention,
        }
    }
}

/// One decoder block and what it reads besides its own weights: the unit per-layer
/// checkpointing recomputes.
#[derive(Module, Debug)]
struct Layer {
    block: Block,
    rope: Rotary,
    #[module(skip)]
    heads: usize,
    #[module(skip)]
    kv_heads: usize,
    #[module(skip)]
    head_dim: usize,
    #[module(skip)]
    attention: OpPath,
}

impl block::LayerForward for Layer {
    fn run(&self, x: Tensor<3>, hook: &mut impl LayerHook) -> Tensor<3> {
        let block = &self.block;
        let [batch, length, _] = x.dims();
        let normed = block.attention_norm.forward(x.clone());
        hook.after(Op::LayerNorm);
        let head_dim = self.head_dim;
        let split = |y: Tensor<3>, heads: usize| {
            y.reshape([batch, length, heads, head_dim]).swap_dims(1, 2)
        };
        let (q, k, v) = match &block.qkv {
            Qkv::Separate(separate) => (
                split(dense(&separate.query, normed.clone()), self.heads),
                split(dense(&separate.key, normed.clone()), self.kv_heads),
                split(dense(&separate.value, normed), self.kv_heads),
            ),
            // Each head's outputs are adjacent: viewed as heads, the three are slices of
            // one tensor along the heads, no copy.
            Qkv::Fused(qkv) => {
                let (heads, kv_heads) = (self.heads, self.kv_heads);
                let all = dense(qkv, normed)
                    .reshape([batch, length, heads + 2 * kv_heads, head_dim])
                    .swap_dims(1, 2);
                (
                    all.clone().narrow(1, 0, heads),
                    all.clone().narrow(1, heads, kv_heads),
                    all.narrow(1, heads + kv_heads, kv_heads),
                )
            }
        };
        hook.after(Op::Projection);
        // Qwen3 normalizes each query and key head over its own width before rotating it.
        let (q, k) = match (&block.query_norm, &block.key_norm) {
            (Some(q_norm), Some(k_norm)) => {
                let normed = (q_norm.forward(q), k_norm.forward(k));
                hook.after(Op::LayerNorm);
                normed
            }
            _ => (q, k),
        };
        let (q, k) = (self.rope.apply(q), self.rope.apply(k));
        hook.after(Op::Rotary);
        let context = match self.attention {
            OpPath::Naive => naive_grouped(q, k, v, hook),
            OpPath::Fused => attention::fused_grouped(q, k, v, true),
        };
        hook.after(Op::Attention);
        let merged = context
            .swap_dims(1, 2)
            .reshape([batch, length, self.heads * head_dim]);
        let x = x + dense(&block.out, merged);
        hook.after(Op::Residual);
        let normed = block.ff_norm.forward(x.clone());
        hook.after(Op::LayerNorm);
        let (gate, up) = match &block.gate_up {
            GateUp::Separate(swiglu) => (
                dense(&swiglu.linear_inner, normed.clone()),
                dense(&swiglu.linear_outer, normed),
            ),
            GateUp::Fused(gate_up) => {
                let both = dense(gate_up, normed);
                let ff = both.dims()[2] / 2;
                (both.clone().narrow(2, 0, ff), both.narrow(2, ff, ff))
            }
        };
        hook.after(Op::Projection);
        let hidden = silu(gate) * up;
        hook.after(Op::Activation);
        let x = x + dense(&block.down, hidden);
        hook.after(Op::Residual);
        x
    }
}

/// Hugging Face's eager attention for grouped heads: each key/value head repeated for its
/// group of query heads (`repeat_kv`), scores, the causal mask, softmax, the weighted sum.
fn naive_grouped(q: Tensor<4>, k: Tensor<4>, v: Tensor<4>, hook: &mut impl LayerHook) -> Tensor<4> {
    let head_dim = q.dims()[3];
    let group = q.dims()[1] / k.dims()[1];
    let (k, v) = (
        attention::repeat_heads(k, group),
        attention::repeat_heads(v, group),
    );
    let scores = q.matmul(k.transpose()).div_scalar((head_dim as f32).sqrt());
    let scores = attention::mask_future(scores);
    hook.after(Op::Scores);
    let weights = softmax(scores, 3);
    hook.after(Op::Softmax);
    weights.matmul(v)
}
