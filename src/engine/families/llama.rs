//! The Llama-style decoder (`model.kind` "llama"): RMSNorm, grouped-query attention with
//! rotary positions, a SwiGLU feed-forward, a tied or untied output; and the Hugging Face
//! configs built as one (`model_type` "llama", "mistral" and "qwen2").

use burn::tensor::{Device, FloatDType};

use super::transformer::attention_backward;
use super::{Family, PanelField, panel};
use crate::engine::config::{
    Checkpointing, InputKind, ModelConfig, OpPath, RunConfig, Trainable, limits,
};
use crate::engine::data::Dataset;
use crate::engine::error::ConfigError;
use crate::engine::hf_config::{Fields, HfType, divides};
use crate::engine::memory::LayerEstimate;
use crate::engine::memory::analytic::{F32, linear_tensors};
use crate::engine::memory::largest::{Oversized, TensorSizes, sequence_tensors};
use crate::engine::models::{self, LlamaSize, Model, RoutingSource};
use crate::engine::presets::Preset;
use crate::engine::validate::{attention_sizes, attention_tables, float_in, int_in, kv_groups};

/// A Llama-style decoder, and the families built as one with their own switches.
pub struct Llama {
    /// RMSNorm over each query and key head before the rotation (Qwen3, Gemma 3).
    pub qk_norm: bool,
    /// Gemma's conventions: `1 + weight` norms, a norm after each sublayer too, GeGLU with
    /// tanh GELU, embeddings scaled by `sqrt(width)` (`models::LlamaSize::gemma`).
    pub gemma: bool,
    /// Q, K and V in one matrix, the gate and up projections in another (Phi-3).
    pub fused_projections: bool,
    /// A mixture of experts in each block in place of the dense feed-forward (Mixtral,
    /// Qwen3-MoE): `model.experts` SwiGLUs, `model.experts_per_token` of them a token.
    pub moe: bool,
    /// The Hugging Face types the family reads.
    pub hf: &'static [HfType],
    /// The family's own presets: playground runs, then plans.
    pub presets: (&'static [Preset], &'static [Preset]),
}

/// Llama itself: Llama, Mistral and Qwen2 files.
pub const LLAMA: Llama = Llama {
    qk_norm: false,
    gemma: false,
    fused_projections: false,
    moe: false,
    hf: &[LLAMA_HF, MISTRAL_HF, QWEN2_HF],
    presets: (&[], &[]),
};

impl Family for Llama {
    fn accepts(&self, input: InputKind) -> bool {
        input == InputKind::Tokens
    }

    fn is_decoder(&self, _model: &ModelConfig) -> bool {
        true
    }

    fn attends(&self) -> bool {
        true
    }

    fn builds_a_llama(&self) -> bool {
        true
    }

    fn check(&self, config: &RunConfig) -> Result<(), ConfigError> {
        let model = &config.model;
        attention_sizes(config)?;
        kv_groups(config)?;
        let head_dim = model.head_dim();
        if model.head_dim != 0 {
            int_in("model.head_dim", model.head_dim, limits::WIDTH)?;
            if !head_dim.is_multiple_of(2) {
                return Err(ConfigError::invalid(
                    "model.head_dim",
                    format!(
                        "rotary positions turn pairs of a head's dimensions: {head_dim} must be \
                         even (0: model.width / model.heads)"
                    ),
                ));
            }
        } else if !head_dim.is_multiple_of(2) {
            return Err(ConfigError::invalid(
                "model.heads",
                format!(
                    "rotary positions turn pairs of a head's dimensions: model.width / \
                     model.heads = {head_dim} must be even"
                ),
            ));
        }
        float_in("model.rope_theta", model.rope_theta, limits::ROPE_THETA)?;
        float_in("model.norm_eps", model.norm_eps, limits::NORM_EPS)?;
        if model.window != 0 {
            int_in("model.window", model.window, limits::POSITIONS)?;
        }
        int_in(
            "model.global_every",
            model.global_every,
            (0, limits::LAYERS.1),
        )?;
        if model.local_rope_theta != 0.0 {
            float_in(
                "model.local_rope_theta",
                model.local_rope_theta,
                limits::ROPE_THETA,
            )?;
        }
        for (field, cap) in [
            ("model.attn_softcap", model.attn_softcap),
            ("model.final_softcap", model.final_softcap),
        ] {
            if cap != 0.0 {
                float_in(field, cap, limits::SOFTCAP)?;
            }
        }
        self.check_experts(model)?;
        attention_tables(config)
    }

    fn build(
        &self,
        config: &RunConfig,
        _data: &Dataset,
        device: &Device,
        stored: FloatDType,
    ) -> Model {
        let model = &config.model;
        Model::Llama(models::Llama::new(
            &LlamaSize {
                stored,
                tokens: config.token_rows(),
                positions: config.position_rows(),
                width: model.width,
                layers: model.layers,
                heads: model.heads,
                kv_heads: model.kv_heads(),
                head_dim: model.head_dim(),
                qk_norm: self.qk_norm,
                fused_projections: self.fused_projections,
                ff: model.ff,
                tied: model.tied,
                qkv_bias: model.qkv_bias,
                rope_theta: model.rope_theta,
                norm_eps: model.norm_eps,
                attention: config.strategies.attention,
                recompute: config.strategies.checkpointing == Checkpointing::Layers,
                gemma: self.gemma,
                window: model.window,
                global_every: model.global_every,
                local_rope_theta: model.local_rope_theta,
                attn_softcap: model.attn_softcap,
                final_softcap: model.final_softcap,
                experts: model.experts,
                experts_per_token: model.experts_per_token,
                grouped_experts: config.strategies.grouped_experts(),
                // A dry run's buffers hold nothing to route by: a plan assumes even routing.
                routing: match burn::cubecl::dry_run::dry_run() {
                    true => RoutingSource::Balanced,
                    false => RoutingSource::Measured,
                },
            },
            device,
        ))
    }

    fn layers(
        &self,
        config: &RunConfig,
        _width: usize,
        _classes: usize,
        b: u64,
    ) -> Vec<LayerEstimate> {
        layers(config, b, self)
    }

    /// The transformer's shape (the mask is built with -inf fills, no int tensor; four
    /// [n, L, width] beside the scores in plans: the stream, Q, K, V), with its feed-forward's
    /// gate and up projections and their product.
    fn inference_bytes(&self, config: &RunConfig, n: u64) -> u64 {
        let m = &config.model;
        let length = config.data.sample_tokens() as u64;
        let full_scores = n * m.heads as u64 * length * length * F32;
        let scores = match config.strategies.attention {
            OpPath::Naive => 2 * full_scores,
            // Fused attention's scores never leave its kernels.
            OpPath::Fused => 0,
        };
        let attention = scores + 4 * n * length * m.width as u64 * F32;
        // The stream and the normalized input beside the gate, up and their product. A mixture
        // of experts' loop holds one expert's at a time, for its share of the tokens (even
        // routing: its gathered input and output, the gate, its SiLU and the up projection
        // alive together); grouped products hold every expert's rows at once, their gathered
        // input and two feed-forward-wide tensors (sort-mixtral's plan: 23.4 MB in use in
        // evaluation against the loop's 16.8). Both beside the router's scores and the sum of
        // the experts' outputs.
        let feed_forward = match self.moe {
            false => n * length * (2 * m.width as u64 + 2 * m.ff as u64) * F32,
            true => {
                let routed = n * length * m.experts_per_token as u64;
                let experts_alive = match config.strategies.grouped_experts() {
                    true => routed * (m.width as u64 + 2 * m.ff as u64),
                    false => {
                        routed.div_ceil(m.experts as u64) * (2 * m.width as u64 + 3 * m.ff as u64)
                    }
                };
                (n * length * (3 * m.width as u64 + m.experts as u64) + experts_alive) * F32
            }
        };
        attention.max(feed_forward)
    }

    fn backward_working_set(&self, config: &RunConfig, b: u64) -> u64 {
        attention_backward(config, b)
    }

    fn largest_tensors(&self, config: &RunConfig, sizes: &TensorSizes) -> Vec<Oversized> {
        sequence_tensors(config, sizes, true)
    }

    fn short(&self, config: &RunConfig) -> String {
        let m = &config.model;
        format!("{} w{} x{} h{}", m.kind.name(), m.width, m.layers, m.heads)
    }

    fn summary(&self, config: &RunConfig) -> String {
        let m = &config.model;
        // A head width of its own, and per-head query and key norms, where the family has them.
        let heads = match (m.head_dim, self.qk_norm) {
            (0, false) => String::new(),
            (0, true) => ", each query and key head RMS-normed".to_string(),
            (_, false) => format!(" of width {}", m.head_dim),
            (_, true) => format!(
                " of width {}, each query and key head RMS-normed",
                m.head_dim
            ),
        };
        // Sliding windows and soft caps, where the model has them.
        let mut extras = String::new();
        if m.window != 0 {
            extras += &match m.global_every {
                0 => format!(", every layer attends through a {}-token window", m.window),
                n => format!(
                    ", a {}-token window in every layer but one in {n}",
                    m.window
                ),
            };
        }
        if m.attn_softcap != 0.0 {
            extras += &format!(", attention scores capped at {}", m.attn_softcap);
        }
        if m.final_softcap != 0.0 {
            extras += &format!(", logits capped at {}", m.final_softcap);
        }
        let fused = match self.fused_projections {
            true => ", Q, K and V in one matrix, the gate and up in one",
            false => "",
        };
        let feed_forward = match (self.moe, self.gemma) {
            (true, _) => format!(
                "{} SwiGLU experts of width {} ({} a token, routing planned even)",
                m.experts, m.ff, m.experts_per_token
            ),
            (false, true) => format!("GeGLU {}", m.ff),
            (false, false) => format!("SwiGLU {}", m.ff),
        };
        format!(
            "{}, {} blocks of width {}, {} heads ({} key/value){heads}, {feed_forward}{fused}, \
             {} tokens, {} output{extras}",
            m.kind.name(),
            m.layers,
            m.width,
            m.heads,
            m.kv_heads(),
            config.token_rows(),
            if m.tied { "tied" } else { "untied" }
        )
    }

    fn panel(&self) -> &'static [PanelField] {
        const FIELDS: &[PanelField] = &[
            panel("width", "model.width", "model width"),
            panel("layers", "model.layers", "decoder blocks"),
            panel("heads", "model.heads", "attention heads"),
            panel(
                "kv heads",
                "model.kv_heads",
                "key/value heads (0: one per head)",
            ),
            panel("ff", "model.ff", "SwiGLU width"),
        ];
        const MOE_FIELDS: &[PanelField] = &[
            panel("width", "model.width", "model width"),
            panel("layers", "model.layers", "decoder blocks"),
            panel("heads", "model.heads", "attention heads"),
            panel(
                "kv heads",
                "model.kv_heads",
                "key/value heads (0: one per head)",
            ),
            panel("ff", "model.ff", "each expert's SwiGLU width"),
            panel("experts", "model.experts", "experts a block"),
            panel("top-k", "model.experts_per_token", "experts a token"),
        ];
        match self.moe {
            false => FIELDS,
            true => MOE_FIELDS,
        }
    }

    fn hf_types(&self) -> &'static [HfType] {
        self.hf
    }

    fn presets(&self) -> (&'static [Preset], &'static [Preset]) {
        self.presets
    }
}

impl Llama {
    /// A mixture of experts' two fields, which a dense family must leave at 0.
    fn check_experts(&self, model: &ModelConfig) -> Result<(), ConfigError> {
        if !self.moe {
            for (field, value) in [
                ("model.experts", model.experts),
                ("model.experts_per_token", model.experts_per_token),
            ] {
                if value != 0 {
                    return Err(ConfigError::invalid(
                        field,
                        format!(
                            "{value}: {} has one dense feed-forward a block; 0 (the mixtral \
                             and qwen3_moe families route each token to experts)",
                            model.kind.name()
                        ),
                    ));
                }
            }
            return Ok(());
        }
        int_in("model.experts", model.experts, limits::EXPERTS)?;
        int_in(
            "model.experts_per_token",
            model.experts_per_token,
            (1, model.experts),
        )
    }
}

/// Tensors of `[B, L, d]` a llama block keeps for backward beside its RMSNorms' normalized
/// inputs (two more, for their weights' gradients): the input, the norms' outputs, the rotated
/// Q, the merged context, the residual sum and the repeated keys and values, as plans show
/// them; and of `[B, L, ff]` (the gate, its sigmoid and SiLU, the up projection, their
/// product). Naive attention adds three score-sized tensors as the transformer's; fused
/// attention keeps the rotated K and V at their own heads, its output and one log-sum-exp per
/// row and head instead of the repeated keys and values.
const LLAMA_KEPT_WIDTH: u64 = 8;
const LLAMA_KEPT_FF: u64 = 5;

/// A mixture of experts keeps, for each of a token's experts, its gathered input and its
/// output (before the routing weight scales it); and two 32-bit indices (the token's row and
/// its weight's), counted here in 4-byte units.
const MOE_KEPT_WIDTH: u64 = 2;
const MOE_KEPT_INDICES: u64 = 2;

/// Gemma's blocks keep, beyond a llama's, per token: the two post-norms' inputs and
/// normalized inputs, and the tanh GELU's intermediates (its input's cube, the tanh argument
/// and the tanh); a soft cap keeps its tanh, one more score-sized tensor with naive attention.
/// Not fitted to plans.
const GEMMA_KEPT_WIDTH: u64 = 4;
const GEMMA_KEPT_FF: u64 = 3;

fn layers(config: &RunConfig, b: u64, family: &Llama) -> Vec<LayerEstimate> {
    let qk_norm = family.qk_norm;
    let m = &config.model;
    let (d, ff, heads) = (m.width as u64, m.ff as u64, m.heads as u64);
    let head_dim = m.head_dim() as u64;
    let q_width = heads * head_dim;
    let kv_width = head_dim * m.kv_heads() as u64;
    // Per-head query and key norms keep their inputs and outputs (not fitted to plans).
    let head_norms_kept = if qk_norm { 2 * (q_width + kv_width) } else { 0 };
    let length = config.data.sample_tokens() as u64;
    let tokens = config.token_rows() as u64;
    let embedding = LayerEstimate::new(
        format!("token embedding {tokens}x{d}"),
        vec![vec![tokens, d]],
        b * length * d * F32,
    );
    let mut layers = vec![if m.tied {
        embedding.in_head_keeping(0)
    } else {
        embedding
    }];
    let (w, f, q, kv) = (m.width, m.ff, q_width as usize, kv_width as usize);
    // Frozen RMSNorm weights (LoRA freezes every base) need not keep their normalized inputs.
    let norms_kept = match config.strategies.trainable {
        Trainable::Lora => 0,
        _ => 2 * d,
    };
    // A mixture of experts keeps the dense feed-forward's tensors for each of a token's
    // `top_k` experts, with each expert's gathered input and output, and the router's scores.
    let (experts, top_k) = (m.experts as u64, m.experts_per_token as u64);
    let feed_forward_kept = match family.moe {
        false => LLAMA_KEPT_FF * ff,
        true => top_k * (LLAMA_KEPT_FF * ff + MOE_KEPT_WIDTH * d + MOE_KEPT_INDICES) + experts,
    };
    for i in 0..m.layers {
        let (per_token, scores) = match config.strategies.attention {
            OpPath::Naive => (
                LLAMA_KEPT_WIDTH * d + norms_kept + feed_forward_kept,
                3 * heads * length * length,
            ),
            OpPath::Fused => (
                (LLAMA_KEPT_WIDTH - 1) * d + norms_kept + 2 * kv_width + feed_forward_kept + heads,
                0,
            ),
        };
        let (per_token, scores) = match family.gemma {
            false => (per_token, scores),
            true => (
                per_token + GEMMA_KEPT_WIDTH * d + GEMMA_KEPT_FF * ff,
                scores
                    + match (config.strategies.attention, m.attn_softcap != 0.0) {
                        (OpPath::Naive, true) => heads * length * length,
                        _ => 0,
                    },
            ),
        };
        let mut tensors = vec![vec![d], vec![d]];
        if family.gemma {
            // The norms after attention and after the feed-forward.
            tensors.extend([vec![d], vec![d]]);
        }
        if qk_norm {
            tensors.extend([vec![head_dim], vec![head_dim]]);
        }
        // Phi-3's fused Q, K, V and gate, up: the same parameters in fewer matrices (and
        // fewer LoRA adapters).
        let (mut projections, biased) = match family.fused_projections {
            false => (vec![(w, q), (w, kv), (w, kv), (q, w)], 3),
            true => (vec![(w, q + 2 * kv), (q, w)], 1),
        };
        match (family.moe, family.fused_projections) {
            (false, false) => projections.extend([(w, f), (w, f), (f, w)]),
            (false, true) => projections.extend([(w, 2 * f), (f, w)]),
            // The router, then each expert's gate, up and down.
            (true, _) => {
                projections.push((w, m.experts));
                for _ in 0..m.experts {
                    projections.extend([(w, f), (w, f), (f, w)]);
                }
            }
        }
        for (n, &(inputs, outputs)) in projections.iter().enumerate() {
            // Qwen2's biases are on Q, K and V, the first three (the first, fused).
            tensors.extend(linear_tensors(inputs, outputs, m.qkv_bias && n < biased));
        }
        layers.push(
            LayerEstimate::new(
                match family.moe {
                    false => format!("block{} d{d} ff{ff} h{heads}/{}", i + 1, m.kv_heads()),
                    true => format!(
                        "block{} d{d} {experts}x ff{ff} top{top_k} h{heads}/{}",
                        i + 1,
                        m.kv_heads()
                    ),
                },
                tensors,
                (b * length * (per_token + head_norms_kept) + b * scores) * F32,
            )
            .adapting(
                projections
                    .iter()
                    .map(|&(i, o)| [i as u64, o as u64])
                    .collect(),
            )
            .in_block(),
        );
    }
    let mut head_tensors = vec![vec![d]];
    if !m.tied {
        head_tensors.push(vec![d, tokens]);
    }
    // The final norm keeps its input, the normalized input and its output; with a frozen body
    // its input needs no gradient and is not kept.
    // A soft cap on the logits keeps their tanh too (not fitted to plans).
    let logits = b * length * tokens * F32 * if m.final_softcap != 0.0 { 2 } else { 1 };
    layers.push(
        LayerEstimate::new(
            format!(
                "final norm, {} output {d}x{tokens}",
                if m.tied { "tied" } else { "untied" }
            ),
            head_tensors,
            3 * b * length * d * F32 + logits,
        )
        .in_head_keeping(2 * b * length * d * F32 + logits),
    );
    layers
}

/// The fields Llama, Mistral and Qwen2 share: one decoder, read the same way.
pub(super) const LLAMA_STYLE: &[&str] = &[
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "hidden_act",
    "tie_word_embeddings",
    "rope_theta",
    "rope_scaling",
    "rms_norm_eps",
];

const LLAMA_HF: HfType = HfType {
    model_type: "llama",
    architecture: "LlamaForCausalLM",
    base_preset: "llama2-7b",
    modelled: &[
        LLAMA_STYLE,
        &["attention_bias", "mlp_bias", "pretraining_tp"],
    ],
    ignored: &[],
    positions_field: "max_position_embeddings",
    model: |fields| read(Reader::Llama, fields),
    rotary: true,
    window: |_| Ok(None),
};

const MISTRAL_HF: HfType = HfType {
    model_type: "mistral",
    architecture: "MistralForCausalLM",
    base_preset: "llama2-7b",
    modelled: &[LLAMA_STYLE, &["sliding_window"]],
    ignored: &[],
    positions_field: "max_position_embeddings",
    model: |fields| read(Reader::Mistral, fields),
    rotary: true,
    // Mistral's window is on unless the file sets it to null.
    window: window_unless_null,
};

const QWEN2_HF: HfType = HfType {
    model_type: "qwen2",
    architecture: "Qwen2ForCausalLM",
    base_preset: "llama2-7b",
    modelled: &[
        LLAMA_STYLE,
        &["sliding_window", "use_sliding_window", "use_mrope"],
    ],
    // Which layers a sliding window would skip: no window, no effect (and a window the
    // sequence fits in is full attention in every layer).
    ignored: &["max_window_layers"],
    positions_field: "max_position_embeddings",
    model: |fields| read(Reader::Qwen2, fields),
    rotary: true,
    // Qwen2's window applies only with `use_sliding_window`.
    window: window_when_used,
};

/// The window of Mistral, Phi-3 and Mixtral files: on unless `sliding_window` is null.
pub(super) fn window_unless_null(fields: &Fields) -> Result<Option<usize>, ConfigError> {
    fields
        .get("sliding_window")
        .map(|_| fields.count("sliding_window", (1, usize::MAX)))
        .transpose()
}

/// The window of Qwen2 and Qwen3 files: it applies only with `use_sliding_window`.
pub(super) fn window_when_used(fields: &Fields) -> Result<Option<usize>, ConfigError> {
    if !fields.flag_or("use_sliding_window", false)? {
        return Ok(None);
    }
    fields.count("sliding_window", (1, usize::MAX)).map(Some)
}

/// Which of the Llama-style files is read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reader {
    Llama,
    Mistral,
    Qwen2,
}

/// Llama, Mistral and Qwen2 as transformers builds their `*ForCausalLM`: vramlab's llama
/// (RMSNorm, SwiGLU, rotary positions, grouped-query attention), with Qwen2's biases on Q, K
/// and V. Where the file leaves a field out, transformers' class default is taken and named
/// here: one key/value head per head (Llama), rope_theta 10,000, RMSNorm epsilon 1e-6, and an
/// untied output.
fn read(family: Reader, fields: &Fields) -> Result<ModelConfig, ConfigError> {
    let style = Style {
        kind: super::ModelKind::Llama,
        own_head_dim: false,
        // Mistral's and Qwen2's classes default to fixed counts (8 and 32) rather than one per
        // head: a file that leaves it out does not say its own shape.
        kv_heads_default: family == Reader::Llama,
        qkv_bias: family == Reader::Qwen2,
        swiglu: true,
        tied_default: false,
    };
    let checks = match family {
        Reader::Llama => llama_checks,
        Reader::Mistral => no_checks,
        Reader::Qwen2 => qwen2_checks,
    };
    read_style(&style, fields, checks)
}

/// What a Llama-style file builds beside the fields all of them share.
pub(super) struct Style {
    /// The family built.
    pub kind: super::ModelKind,
    /// `head_dim` may state a head width other than `hidden_size / num_attention_heads`.
    pub own_head_dim: bool,
    /// The class defaults `num_key_value_heads` to one per head (Llama's; others must state it).
    pub kv_heads_default: bool,
    /// Biases on Q, K and V.
    pub qkv_bias: bool,
    /// The feed-forward is SwiGLU: `hidden_act` must be SiLU (Gemma checks its own).
    pub swiglu: bool,
    /// The class ties the output to the token embedding unless the file says otherwise
    /// (Gemma's; Llama's unties).
    pub tied_default: bool,
}

fn no_checks(_: &Fields) -> Result<(), ConfigError> {
    Ok(())
}

fn llama_checks(fields: &Fields) -> Result<(), ConfigError> {
    fields.flag_must_be(
        "attention_bias",
        false,
        "transformers puts it on Q, K, V and the output projection; vramlab builds no \
         attention biases for Llama (Qwen2's Q, K and V biases are its own family)",
    )?;
    fields.flag_must_be(
        "mlp_bias",
        false,
        "vramlab's SwiGLU projections have no biases",
    )?;
    let split = fields.count_or("pretraining_tp", 1, (1, usize::MAX))?;
    if split != 1 {
        return Err(ConfigError::invalid(
            "pretraining_tp",
            format!(
                "{split} is not modelled; vramlab accepts 1: it computes each projection \
                 whole, not in {split} slices"
            ),
        ));
    }
    Ok(())
}

fn qwen2_checks(fields: &Fields) -> Result<(), ConfigError> {
    fields.flag_must_be(
        "use_mrope",
        false,
        "multimodal rotary positions are Qwen2-VL's; vramlab's are one sequence's",
    )
}

/// A Llama-style file read as `style` says: the shared fields, then the type's own `checks`,
/// then the sizes.
pub(super) fn read_style(
    style: &Style,
    fields: &Fields,
    checks: fn(&Fields) -> Result<(), ConfigError>,
) -> Result<ModelConfig, ConfigError> {
    let width = fields.count("hidden_size", limits::WIDTH)?;
    let heads = fields.count("num_attention_heads", limits::HEADS)?;
    divides(heads, "num_attention_heads", width, "hidden_size")?;
    let derived = width / heads;
    let head_dim = match style.own_head_dim {
        true => fields.count_or("head_dim", derived, limits::WIDTH)?,
        false => derived,
    };
    if !head_dim.is_multiple_of(2) {
        let (field, what) = match head_dim == derived {
            true => ("num_attention_heads", "hidden_size / num_attention_heads"),
            false => ("head_dim", "head_dim"),
        };
        return Err(ConfigError::invalid(
            field,
            format!(
                "{what} = {head_dim} is odd; rotary positions turn pairs of a head's \
                 dimensions"
            ),
        ));
    }
    if !style.own_head_dim
        && let Some(stated) = fields.get("head_dim")
        && stated.as_u64() != Some(head_dim as u64)
    {
        return Err(ConfigError::invalid(
            "head_dim",
            format!(
                "{stated} is not modelled; vramlab's heads are hidden_size / \
                 num_attention_heads = {head_dim} wide (null or {head_dim})"
            ),
        ));
    }
    let kv_heads = match style.kv_heads_default {
        true => fields.count_or("num_key_value_heads", heads, limits::HEADS)?,
        false => fields.count("num_key_value_heads", limits::HEADS)?,
    };
    divides(
        kv_heads,
        "num_key_value_heads",
        heads,
        "num_attention_heads",
    )?;
    if style.swiglu {
        fields.one_of(
            "hidden_act",
            "silu",
            &["silu", "swish"],
            "vramlab's feed-forward is SwiGLU (a SiLU gate times the up projection)",
        )?;
    }
    checks(fields)?;
    Ok(ModelConfig {
        kind: style.kind,
        width,
        layers: fields.count("num_hidden_layers", limits::LAYERS)?,
        heads,
        kv_heads,
        ff: fields.count("intermediate_size", limits::FF)?,
        vocab: fields.count("vocab_size", limits::MODEL_VOCAB)?,
        positions: fields.count("max_position_embeddings", limits::POSITIONS)?,
        tied: fields.flag_or("tie_word_embeddings", style.tied_default)?,
        qkv_bias: style.qkv_bias,
        rope_theta: fields.number_or("rope_theta", 10_000.0, limits::ROPE_THETA)?,
        norm_eps: fields.number_or("rms_norm_eps", 1e-6, limits::NORM_EPS)?,
        head_dim: if head_dim == derived { 0 } else { head_dim },
        ..ModelConfig::default()
    })
}
