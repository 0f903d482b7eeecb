//! Llama-style decoders, the family Llama, Mistral, TinyLlama and Qwen2 share: a token
//! embedding, pre-norm blocks of RMSNorm, grouped-query attention with rotary positions and a
//! SwiGLU feed-forward, a final RMSNorm, and an output layer that is the token embedding itself
//! (`tied`) or a matrix of its own. No biases but Qwen2's on Q, K and V (`qkv_bias`); Qwen3's
//! RMSNorm over each query and key head (`qk_norm`), and heads of a width of their own
//! (`head_dim`, not `width / heads`). Gemma's conventions (`gemma`): RMSNorms that scale by
//! `1 + weight`, a norm after each sublayer as well as before it, a GeGLU feed-forward (tanh
//! GELU), embeddings scaled by `sqrt(width)`; and, for any llama that sets them, sliding-window
//! layers between global ones (`window`, `global_every`, their own rotary base) and
//! soft-capped attention and output logits. Phi-3 holds Q, K and V as one matrix and the gate
//! and up projections as another (`fused_projections`), as its checkpoints store them: the same
//! parameters, in two matrices where Llama has five. No dropout, so runs are reproducible.
//!
//! Attention runs `strategies.attention`'s core: the naive one repeats each key/value head for
//! its group of query heads, as Hugging Face's eager attention (`repeat_kv`) does, and keeps the
//! scores and softmax for backward; the fused one folds each group's query heads into one
//! longer row block against the shared key/value head (`ops::attention::fused_grouped`), so
//! nothing is repeated and nothing `L x L` is kept.

use std::sync::Arc;

use burn::module::{Initializer, Module};
use burn::nn::{Embedding, Linear, LinearConfig, RmsNorm, RmsNormConfig, SwiGlu, SwiGluConfig};
use burn::tensor::activation::{gelu_approximate, silu, softmax};
use burn::tensor::{DType, Device, FloatDType, Int, Tensor};

use super::block::{self, Recompute};
use super::dense::{Parts, dense, matrices_of, params_of};
use super::drawn::Drawn;
use super::hook::{LayerHook, Op, Plain};
use super::moe::{Experts, ExpertsSize, Routing, RoutingSource};
use super::rotary::Rotary;
use crate::engine::config::OpPath;
use crate::engine::ops::host::HostStash;
use crate::engine::ops::recompute::BlockShards;
use crate::engine::ops::shard::Shards;
use crate::engine::ops::{attention, recompute};

/// The sizes a Llama-style decoder is built from (a Hugging Face config's fields, renamed).
#[derive(Clone, Debug)]
pub struct LlamaSize {
    /// The type the weights are drawn and kept in (`Drawn`).
    pub stored: FloatDType,
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
    /// Gemma's conventions: norms scale by `1 + weight` (initialised at 0), a norm after
    /// attention and after the feed-forward besides the two before them, GeGLU with tanh GELU
    /// in place of SwiGLU, token embeddings scaled by `sqrt(width)`.
    pub gemma: bool,
    /// Keys a windowed layer's queries see, their own included (0: no window).
    pub window: usize,
    /// With a window, every `global_every`-th layer attends to all keys (0: none does).
    pub global_every: usize,
    /// The rotary base of windowed layers (Gemma 3's `rope_local_base_freq`; 0: `rope_theta`).
    pub local_rope_theta: f64,
    /// Attention scores soft-capped at this (0: not capped).
    pub attn_softcap: f64,
    /// Output logits soft-capped at this (0: not capped).
    pub final_softcap: f64,
    /// Experts in each block's feed-forward, each a SwiGLU `ff` wide (Mixtral, Qwen3-MoE; 0:
    /// one dense feed-forward).
    pub experts: usize,
    /// The experts each token goes to.
    pub experts_per_token: usize,
    /// The experts' matrices stacked and their products grouped (`strategies.experts`).
    pub grouped_experts: bool,
    /// Where the experts' routing comes from (a plan assumes one).
    pub routing: RoutingSource,
}

impl LlamaSize {
    /// Whether layer `index` (from 0) attends through a window: all layers with a window but
    /// every `global_every`-th (Gemma 2: every other, Gemma 3: five in six).
    pub fn windowed(&self, index: usize) -> bool {
        self.window > 0
            && (self.global_every == 0 || !(index + 1).is_multiple_of(self.global_every))
    }
}

#[derive(Module, Debug)]
pub struct Llama {
    tokens: Embedding,
    blocks: Vec<Block>,
    final_norm: RmsNorm,
    /// Untied output (`[width, tokens]`); `None` when the token embedding is the output.
    output: Option<Linear>,
    rope: Rotary,
    /// Windowed layers' rotary tables, when their base is not `rope_theta`'s.
    local_rope: Option<Rotary>,
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
    recompute: Recompute,
    #[module(skip)]
    gemma: bool,
    #[module(skip)]
    width: usize,
    /// Each block's window (0: global).
    #[module(skip)]
    windows: Vec<usize>,
    #[module(skip)]
    attn_softcap: f32,
    #[module(skip)]
    final_softcap: f32,
    /// The experts' routing, shared by every block; `None` for a dense feed-forward.
    #[module(skip)]
    routing: Option<Routing>,
    #[module(skip)]
    experts_per_token: usize,
    /// One GPU's shard of a fully sharded run (`strategies.sharding = full`): the parameters
    /// are shards, gathered around their use (`ops::shard`).
    #[module(skip)]
    shards: Option<Arc<Shards>>,
}

/// The root's own parameters, as a forward pass reads them: the model's, or gathered from its
/// shards.
struct Root {
    tokens: Embedding,
    final_norm: RmsNorm,
    output: Option<Linear>,
}

#[derive(Module, Debug)]
struct Block {
    attention_norm: RmsNorm,
    qkv: Qkv,
    /// Qwen3's RMSNorms over each query and key head (`head_dim` wide); `None` elsewhere.
    query_norm: Option<RmsNorm>,
    key_norm: Option<RmsNorm>,
    out: Linear,
    /// Gemma's norm of the attention's output, before the residual sum; `None` elsewhere.
    post_attention_norm: Option<RmsNorm>,
    ff_norm: RmsNorm,
    /// The gate (through SiLU, or Gemma's tanh GELU) and the up projection, apart or as one;
    /// `None` in a mixture of experts.
    gate_up: Option<GateUp>,
    down: Option<Linear>,
    /// A mixture of experts in place of the dense feed-forward.
    experts: Option<Experts>,
    /// Gemma's norm of the feed-forward's output, before the residual sum; `None` elsewhere.
    post_ff_norm: Option<RmsNorm>,
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
        let drawn = Drawn::new(size.stored, device);
        let linear = |inputs, outputs, bias| {
            drawn.linear(&LinearConfig::new(inputs, outputs).with_bias(bias))
        };
        let norm_of = |width| {
            // The config checks the epsilon; its lazy gamma is replaced before it is drawn.
            let mut norm = RmsNormConfig::new(width)
                .with_epsilon(size.norm_eps)
                .init(device);
            // Gemma scales by 1 + weight: a weight of 0 starts as the identity scale.
            let gamma = match size.gemma {
                true => Initializer::Zeros,
                false => Initializer::Ones,
            };
            norm.gamma = drawn.param(&gamma, [width], None, None);
            norm
        };
        let swiglu = |config: SwiGluConfig| {
            let linear = LinearConfig::new(config.d_input, config.d_output)
                .with_bias(config.bias)
                .with_initializer(config.initializer)
                .with_layout(config.layout);
            SwiGlu {
                linear_inner: drawn.linear(&linear),
                linear_outer: drawn.linear(&linear),
            }
        };
        let norm = || norm_of(size.width);
        let head_norm = || size.qk_norm.then(|| norm_of(head_dim));
        let post_norm = || size.gemma.then(norm);
        let routing = (size.experts > 0).then(|| Routing::new(size.routing.clone()));
        let dense_ff = size.experts == 0;
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
                post_attention_norm: post_norm(),
                ff_norm: norm(),
                gate_up: dense_ff.then(|| match size.fused_projections {
                    false => GateUp::Separate(swiglu(SwiGluConfig::new(size.width, size.ff))),
                    true => GateUp::Fused(linear(size.width, 2 * size.ff, false)),
                }),
                down: dense_ff.then(|| linear(size.ff, size.width, false)),
                experts: routing.as_ref().map(|routing| {
                    Experts::new(
                        &ExpertsSize {
                            width: size.width,
                            ff: size.ff,
                            experts: size.experts,
                            top_k: size.experts_per_token,
                            grouped: size.grouped_experts,
                        },
                        routing.clone(),
                        &drawn,
                    )
                }),
                post_ff_norm: post_norm(),
            })
            .collect();
        let windowed = (0..size.layers).any(|i| size.windowed(i));
        let local_theta = if size.local_rope_theta > 0.0 {
            size.local_rope_theta
        } else {
            size.rope_theta
        };
        let local_rope = (windowed && local_theta != size.rope_theta)
            .then(|| Rotary::new(size.positions, head_dim, local_theta, device));
        Self {
            // Drawn from N(0, 0.02) as these models' `initializer_range` says: with a tied
            // output, burn's N(0, 1) would start the logits at a scale of sqrt(width).
            tokens: Embedding {
                weight: drawn.param(
                    &Initializer::Normal {
                        mean: 0.0,
                        std: 0.02,
                    },
                    [size.tokens, size.width],
                    None,
                    None,
                ),
            },
            blocks,
            final_norm: norm(),
            output: (!size.tied).then(|| linear(size.width, size.tokens, false)),
            rope: Rotary::new(size.positions, head_dim, size.rope_theta, device),
            local_rope,
            heads: size.heads,
            kv_heads: size.kv_heads,
            head_dim,
            attention: size.attention,
            recompute: Recompute {
                on: size.recompute,
                host: None,
            },
            gemma: size.gemma,
            width: size.width,
            windows: (0..size.layers)
                .map(|i| if size.windowed(i) { size.window } else { 0 })
                .collect(),
            attn_softcap: size.attn_softcap as f32,
            final_softcap: size.final_softcap as f32,
            routing,
            experts_per_token: size.experts_per_token,
            shards: None,
        }
    }

    /// Values of the root's own parameters: the token table, the final norm, the output layer.
    pub fn root_values(&self) -> usize {
        self.tokens.num_params()
            + self.final_norm.num_params()
            + self.output.as_ref().map_or(0, |output| output.num_params())
    }

    /// Its forward pass gathers through `shards` (the model is their shard).
    pub fn set_shards(&mut self, shards: Arc<Shards>) {
        self.shards = Some(shards);
    }

    pub fn is_sharded(&self) -> bool {
        self.shards.is_some()
    }

    /// Each checkpointed block's input is kept on the host, counted by `host`.
    pub fn set_host_stash(&mut self, host: Arc<HostStash>) {
        self.recompute.host = Some(host);
    }

    /// The root's parameters for a forward pass: gathered once a pass when sharded, as FSDP2's
    /// `fully_shard(model)` gathers them, and held to the end of backward.
    fn root(&self) -> Option<Root> {
        let shards = self.shards.as_ref()?;
        Some(Root {
            tokens: shards.gather_root(self.tokens.clone()),
            final_norm: shards.gather_root(self.final_norm.clone()),
            output: self.output.clone().map(|output| shards.gather_root(output)),
        })
    }

    /// The experts' routing and each token's experts, for a mixture of experts.
    pub fn routing(&self) -> Option<(Routing, usize)> {
        self.routing
            .clone()
            .map(|routing| (routing, self.experts_per_token))
    }

    /// LoRA's factors on every block's stacked experts (`Experts::with_stacked_adapters`).
    pub fn with_stacked_adapters(mut self, rank: usize, alpha: f64) -> Self {
        self.blocks = self
            .blocks
            .into_iter()
            .map(|mut block| {
                block.experts = block
                    .experts
                    .map(|experts| experts.with_stacked_adapters(rank, alpha));
                block
            })
            .collect();
        self
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
    ///
    /// Async: a mixture of experts reads each block's routing back from the device, which the
    /// browser can only await. A dense model awaits nothing.
    pub async fn forward(&self, tokens: Tensor<2, Int>, hook: &mut impl LayerHook) -> Tensor<3> {
        if let Some(routing) = &self.routing {
            routing.begin_pass();
        }
        let gathered = self.root();
        let (embedding, final_norm, output) = match &gathered {
            Some(root) => (&root.tokens, &root.final_norm, &root.output),
            None => (&self.tokens, &self.final_norm, &self.output),
        };
        let mut x = embedding.forward(tokens);
        if self.gemma {
            // Gemma scales the embeddings by sqrt(width) (the tied output reads the table as
            // it is).
            x = x.mul_scalar((self.width as f32).sqrt());
        }
        hook.after(Op::Embedding);
        for (index, (weights, &window)) in self.blocks.iter().zip(&self.windows).enumerate() {
            let layer = self.layer(weights, window);
            let host = self.recompute.host.as_ref();
            x = match (weights.experts.is_some(), self.recompute.on, &self.shards) {
                (false, true, Some(shards)) => {
                    let block = BlockShards {
                        shards: shards.clone(),
                        index,
                        previous: index.checked_sub(1).map(|before| {
                            self.layer(&self.blocks[before], self.windows[before])
                                .valid()
                        }),
                    };
                    let x = recompute::checkpointed_sharded(&layer, x, block, host);
                    hook.after(Op::Block);
                    x
                }
                (false, _, _) => block::run(&layer, x, &self.recompute, hook),
                (true, false, _) => layer.run_async(x, hook, false).await,
                (true, true, _) => {
                    let x = recompute::checkpointed_async(&layer, x, host).await;
                    hook.after(Op::Block);
                    x
                }
            };
        }
        let x = norm(final_norm, x, self.gemma);
        hook.after(Op::LayerNorm);
        let logits = match output {
            Some(output) => dense(output, x),
            None => {
                let table = embedding.weight.val();
                let [batch, length, width] = x.dims();
                let rows = table.dims()[0];
                x.reshape([batch * length, width])
                    .matmul(table.transpose())
                    .reshape([batch, length, rows])
            }
        };
        let logits = if self.final_softcap > 0.0 {
            attention::soft_cap(logits, self.final_softcap)
        } else {
            logits
        };
        hook.after(Op::Logits);
        logits
    }

    /// One block with what it shares with the others (the rotary tables, the head counts)
    /// and its `window` (0: global).
    fn layer(&self, block: &Block, window: usize) -> Layer {
        let rope = match (&self.local_rope, window) {
            (Some(local), 1..) => local,
            _ => &self.rope,
        };
        Layer {
            block: block.clone(),
            rope: rope.clone(),
            heads: self.heads,
            kv_heads: self.kv_heads,
            head_dim: self.head_dim,
            attention: self.attention,
            gemma: self.gemma,
            masking: attention::Masking {
                window,
                soft_cap: self.attn_softcap,
            },
        }
    }
}

/// `norm` applied to `x`: burn's RMSNorm, or with Gemma's `1 + weight` scale (`offset`),
/// normalized in f32 as burn's is.
fn norm<const D: usize>(norm: &RmsNorm, x: Tensor<D>, offset: bool) -> Tensor<D> {
    if !offset {
        return norm.forward(x);
    }
    let dtype = x.dtype();
    let rms = (x.clone().cast(DType::F32).square().mean_dim(D - 1) + norm.epsilon).sqrt();
    (x / rms.cast(dtype)) * norm.gamma.val().add_scalar(1.0).unsqueeze()
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
    #[module(skip)]
    gemma: bool,
    /// This layer's window and the scores' cap.
    #[module(skip)]
    masking: attention::Masking,
}

impl Layer {
    /// The block up to its feed-forward: attention and its residual sum, then the
    /// feed-forward's norm. Returns the stream and the normalized stream.
    fn attend(&self, x: Tensor<3>, hook: &mut impl LayerHook) -> (Tensor<3>, Tensor<3>) {
        let block = &self.block;
        let [batch, length, _] = x.dims();
        let gemma = self.gemma;
        let normed = norm(&block.attention_norm, x.clone(), gemma);
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
                let normed = (norm(q_norm, q, gemma), norm(k_norm, k, gemma));
                hook.after(Op::LayerNorm);
                normed
            }
            _ => (q, k),
        };
        let (q, k) = (self.rope.apply(q), self.rope.apply(k));
        hook.after(Op::Rotary);
        let masking = self.masking;
        let context = match (self.attention, masking == attention::Masking::default()) {
            (OpPath::Naive, _) => naive_grouped(q, k, v, masking, hook),
            (OpPath::Fused, true) => attention::fused_grouped(q, k, v, true),
            (OpPath::Fused, false) => attention::fused_grouped_masked(q, k, v, masking),
        };
        hook.after(Op::Attention);
        let merged = context
            .swap_dims(1, 2)
            .reshape([batch, length, self.heads * head_dim]);
        let x = x + post_norm(&block.post_attention_norm, dense(&block.out, merged), hook);
        hook.after(Op::Residual);
        let normed = norm(&block.ff_norm, x.clone(), gemma);
        hook.after(Op::LayerNorm);
        (x, normed)
    }

    /// The dense feed-forward of `normed` (the gate through SiLU or Gemma's tanh GELU, times
    /// the up projection, down again).
    fn dense_ff(
        gate_up: &GateUp,
        down: &Linear,
        normed: Tensor<3>,
        gemma: bool,
        hook: &mut impl LayerHook,
    ) -> Tensor<3> {
        let (gate, up) = match gate_up {
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
        let hidden = match gemma {
            false => silu(gate),
            true => gelu_approximate(gate),
        } * up;
        hook.after(Op::Activation);
        dense(down, hidden)
    }

    /// The residual sum of the feed-forward's output `ff` (through Gemma's post-norm).
    fn add_ff(&self, x: Tensor<3>, ff: Tensor<3>, hook: &mut impl LayerHook) -> Tensor<3> {
        let x = x + post_norm(&self.block.post_ff_norm, ff, hook);
        hook.after(Op::Residual);
        x
    }

    /// The whole block, awaiting a mixture of experts' routing; kept for backward's
    /// recomputation when `recomputed` (the block is checkpointed).
    async fn run_async(
        &self,
        x: Tensor<3>,
        hook: &mut impl LayerHook,
        recomputed: bool,
    ) -> Tensor<3> {
        let (x, normed) = self.attend(x, hook);
        let ff = match (&self.block.gate_up, &self.block.down, &self.block.experts) {
            (_, _, Some(experts)) => experts.forward(normed, hook, recomputed).await,
            (Some(gate_up), Some(down), None) => {
                Self::dense_ff(gate_up, down, normed, self.gemma, hook)
            }
            _ => unreachable!("a block has a dense feed-forward or experts"),
        };
        self.add_ff(x, ff, hook)
    }
}

impl recompute::RecomputableAsync for Layer {
    async fn forward_async(&self, x: Tensor<3>) -> Tensor<3> {
        self.run_async(x, &mut Plain, true).await
    }
}

impl block::LayerForward for Layer {
    /// The whole block; a mixture of experts routes as its forward pass did (this runs only
    /// as backward's recomputation of a checkpointed block: forward passes await
    /// [`Layer::run_async`]).
    fn run(&self, x: Tensor<3>, hook: &mut impl LayerHook) -> Tensor<3> {
        let (x, normed) = self.attend(x, hook);
        let ff = match (&self.block.gate_up, &self.block.down, &self.block.experts) {
            (_, _, Some(experts)) => experts.forward_recomputed(normed, hook),
            (Some(gate_up), Some(down), None) => {
                Self::dense_ff(gate_up, down, normed, self.gemma, hook)
            }
            _ => unreachable!("a block has a dense feed-forward or experts"),
        };
        self.add_ff(x, ff, hook)
    }
}

/// A sublayer's output through Gemma's norm after it, where the block has one.
fn post_norm(post: &Option<RmsNorm>, y: Tensor<3>, hook: &mut impl LayerHook) -> Tensor<3> {
    match post {
        Some(post) => {
            let y = norm(post, y, true);
            hook.after(Op::LayerNorm);
            y
        }
        None => y,
    }
}

/// Hugging Face's eager attention for grouped heads: each key/value head repeated for its
/// group of query heads (`repeat_kv`), scores (soft-capped when `masking` caps them), the
/// causal mask (and the window's), softmax, the weighted sum. A window keeps the whole `L x L`
/// scores: it only masks more of them.
fn naive_grouped(
    q: Tensor<4>,
    k: Tensor<4>,
    v: Tensor<4>,
    masking: attention::Masking,
    hook: &mut impl LayerHook,
) -> Tensor<4> {
    let head_dim = q.dims()[3];
    let group = q.dims()[1] / k.dims()[1];
    let (k, v) = (
        attention::repeat_heads(k, group),
        attention::repeat_heads(v, group),
    );
    let scores = q.matmul(k.transpose()).div_scalar((head_dim as f32).sqrt());
    let scores = if masking.soft_cap > 0.0 {
        attention::soft_cap(scores, masking.soft_cap)
    } else {
        scores
    };
    let scores = attention::mask_future(scores);
    let scores = match masking.window {
        0 => scores,
        window => attention::mask_outside_window(scores, window),
    };
    hook.after(Op::Scores);
    let weights = softmax(scores, 3);
    hook.after(Op::Softmax);
    weights.matmul(v)
}
