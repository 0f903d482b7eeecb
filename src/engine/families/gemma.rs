//! Gemma 2 and Gemma 3 (`model.kind` "gemma2" and "gemma3", `model_type` "gemma2" and
//! "gemma3_text"): the llama with Gemma's conventions (norms that scale by `1 + weight`, a norm
//! after each sublayer as well as before it, a GeGLU feed-forward with tanh GELU, embeddings
//! scaled by `sqrt(width)`, heads of the width the file states, a tied output), sliding-window
//! layers between global ones, and soft-capped logits where the file sets them. Gemma 3 adds
//! per-head query and key norms and a rotary base of its own for the windowed layers.

use super::ModelKind;
use super::llama::{LLAMA_STYLE, Llama, Style, read_style};
use crate::engine::config::{ModelConfig, limits};
use crate::engine::error::ConfigError;
use crate::engine::hf_config::{Fields, HfType};
use crate::engine::presets::Preset;

pub const GEMMA2: Llama = Llama {
    qk_norm: false,
    gemma: true,
    fused_projections: false,
    moe: false,
    hf: &[GEMMA2_HF],
    presets: (&[SORT_GEMMA2], &[]),
};

pub const GEMMA3: Llama = Llama {
    qk_norm: true,
    gemma: true,
    fused_projections: false,
    moe: false,
    hf: &[GEMMA3_HF],
    presets: (&[SORT_GEMMA3], &[]),
};

/// The sorting task on a tiny Gemma 2: its first layer sees the last 4 of the 16 tokens, its
/// second all of them; attention scores capped at 50, logits at 30, as Gemma 2's are.
const SORT_GEMMA2: Preset = Preset::new(
    "sort-gemma2",
    "the same task as a tiny Gemma 2: GeGLU, a norm before and after each sublayer, a 4-token \
     window in every other layer, soft-capped attention scores and logits",
    r#"{
  "name": "sort-gemma2",
  "data": { "kind": "sort", "samples": 8192, "seq_len": 8, "vocab": 8, "test_fraction": 0.125 },
  "model": { "kind": "gemma2", "width": 64, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 32, "ff": 176, "tied": true, "norm_eps": 1e-6, "window": 4, "global_every": 2, "attn_softcap": 50.0, "final_softcap": 30.0 },
  "optimizer": "adamw",
  "learning_rate": 0.003,
  "batch_size": 256,
  "eval_batch_size": 512,
  "steps": 300,
  "eval_every": 50,
  "seed": 42
}"#,
);

/// The sorting task on a tiny Gemma 3: query and key heads RMS-normed, a 4-token window with
/// its own rotary base in every other layer (Gemma 3 has five windowed layers to one global).
const SORT_GEMMA3: Preset = Preset::new(
    "sort-gemma3",
    "the same task as a tiny Gemma 3: Gemma 2's blocks with query and key norms, a 4-token \
     window with its own rotary base in every other layer",
    r#"{
  "name": "sort-gemma3",
  "data": { "kind": "sort", "samples": 8192, "seq_len": 8, "vocab": 8, "test_fraction": 0.125 },
  "model": { "kind": "gemma3", "width": 64, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 32, "ff": 176, "tied": true, "norm_eps": 1e-6, "rope_theta": 1000000.0, "window": 4, "global_every": 2, "local_rope_theta": 10000.0 },
  "optimizer": "adamw",
  "learning_rate": 0.003,
  "batch_size": 256,
  "eval_batch_size": 512,
  "steps": 300,
  "eval_every": 50,
  "seed": 42
}"#,
);

/// What both Gemma files state beside the Llama-style fields.
const GEMMA_FIELDS: &[&str] = &[
    "hidden_activation",
    "attention_bias",
    "query_pre_attn_scalar",
    "sliding_window",
    "layer_types",
    "attn_logit_softcapping",
    "final_logit_softcapping",
];

/// Gemma 2 as transformers builds `Gemma2ForCausalLM`: every other layer windowed, the first
/// among them.
const GEMMA2_HF: HfType = HfType {
    model_type: "gemma2",
    architecture: "Gemma2ForCausalLM",
    base_preset: "llama2-7b",
    modelled: &[LLAMA_STYLE, GEMMA_FIELDS],
    // The inference cache's layout.
    ignored: &["cache_implementation"],
    positions_field: "max_position_embeddings",
    model: |fields| read(Generation::Two, fields),
    rotary: true,
    // The model carries its window (`model.window`): it is built, not refused.
    window: |_| Ok(None),
};

/// Gemma 3's text model as transformers builds `Gemma3ForCausalLM`.
const GEMMA3_HF: HfType = HfType {
    model_type: "gemma3_text",
    architecture: "Gemma3ForCausalLM",
    base_preset: "llama2-7b",
    modelled: &[
        LLAMA_STYLE,
        GEMMA_FIELDS,
        &[
            "sliding_window_pattern",
            "_sliding_window_pattern",
            "rope_local_base_freq",
            "use_bidirectional_attention",
        ],
    ],
    ignored: &["cache_implementation"],
    positions_field: "max_position_embeddings",
    model: |fields| read(Generation::Three, fields),
    rotary: true,
    window: |_| Ok(None),
};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Generation {
    Two,
    Three,
}

/// A Gemma file: the Llama-style sizes with Gemma's defaults (a tied output; heads as wide as
/// `head_dim` says, which must be stated), then its windows and caps. Where the file leaves a
/// field out, the class default is taken: a window of 4,096 keys, Gemma 2's caps of 50
/// (attention) and 30 (logits), none for Gemma 3 (`null` turns a cap off), Gemma 3's pattern
/// of 6 and local rotary base of 10,000, and its `rope_theta` of 1,000,000.
fn read(generation: Generation, fields: &Fields) -> Result<ModelConfig, ConfigError> {
    let style = Style {
        kind: match generation {
            Generation::Two => ModelKind::Gemma2,
            Generation::Three => ModelKind::Gemma3,
        },
        own_head_dim: true,
        kv_heads_default: false,
        qkv_bias: false,
        swiglu: false,
        tied_default: true,
    };
    let checks = match generation {
        Generation::Two => gemma_checks,
        Generation::Three => gemma3_checks,
    };
    let mut model = read_style(&style, fields, checks)?;
    model.window = fields.count_or("sliding_window", 4096, limits::POSITIONS)?;
    let every = match generation {
        Generation::Two => 2,
        Generation::Three => match fields.get("sliding_window_pattern") {
            Some(_) => fields.count("sliding_window_pattern", (1, limits::LAYERS.1))?,
            None => fields.count_or("_sliding_window_pattern", 6, (1, limits::LAYERS.1))?,
        },
    };
    model.global_every = match fields.get("layer_types") {
        Some(_) => layer_pattern(fields, model.layers)?,
        None => every,
    };
    let (attn_cap, final_cap) = match generation {
        Generation::Two => (50.0, 30.0),
        Generation::Three => (0.0, 0.0),
    };
    model.attn_softcap = cap(fields, "attn_logit_softcapping", attn_cap)?;
    model.final_softcap = cap(fields, "final_logit_softcapping", final_cap)?;
    if generation == Generation::Three {
        model.local_rope_theta =
            fields.number_or("rope_local_base_freq", 10_000.0, limits::ROPE_THETA)?;
        model.rope_theta = fields.number_or("rope_theta", 1_000_000.0, limits::ROPE_THETA)?;
    }
    Ok(model)
}

/// A soft cap: the class `default` when the field is left out, none when it is `null`.
fn cap(fields: &Fields, name: &str, default: f64) -> Result<f64, ConfigError> {
    match fields.names().any(|field| field == name) {
        false => Ok(default),
        true => fields.number_or(name, 0.0, limits::SOFTCAP),
    }
}

/// The window pattern `layer_types` spells out layer by layer: every `n`-th layer
/// "full_attention", the others "sliding_attention" (0: all sliding). Any other arrangement is
/// refused.
fn layer_pattern(fields: &Fields, layers: usize) -> Result<usize, ConfigError> {
    let value = fields.get("layer_types").expect("stated");
    let kinds: Option<Vec<&str>> = value
        .as_array()
        .map(|list| list.iter().map(|kind| kind.as_str()).collect())
        .and_then(|kinds: Vec<Option<&str>>| kinds.into_iter().collect());
    let refuse = || {
        ConfigError::invalid(
            "layer_types",
            format!(
                "{value} is not modelled; vramlab accepts num_hidden_layers = {layers} entries of \
                 \"sliding_attention\" with every n-th \"full_attention\" (Gemma 2: every 2nd, \
                 Gemma 3: every 6th)"
            ),
        )
    };
    let kinds = kinds
        .filter(|kinds| kinds.len() == layers)
        .ok_or_else(refuse)?;
    let every = kinds
        .iter()
        .position(|kind| *kind == "full_attention")
        .map_or(0, |first| first + 1);
    let expected = |i: usize| match every != 0 && (i + 1).is_multiple_of(every) {
        true => "full_attention",
        false => "sliding_attention",
    };
    match kinds
        .iter()
        .enumerate()
        .all(|(i, kind)| *kind == expected(i))
    {
        true => Ok(every),
        false => Err(refuse()),
    }
}

/// What a Gemma file must say to be the model vramlab builds.
fn gemma_checks(fields: &Fields) -> Result<(), ConfigError> {
    // The class default (256) is not hidden_size / heads: the width must be stated.
    let head_dim = fields.count("head_dim", limits::WIDTH)?;
    fields.one_of(
        "hidden_activation",
        "gelu_pytorch_tanh",
        &["gelu_pytorch_tanh"],
        "vramlab's Gemma feed-forward is GeGLU with the tanh GELU",
    )?;
    fields.flag_must_be(
        "attention_bias",
        false,
        "transformers puts it on Q, K, V and the output projection; vramlab's Gemma has no \
         attention biases",
    )?;
    let scalar = fields.count_or("query_pre_attn_scalar", 256, (1, usize::MAX))?;
    if scalar != head_dim {
        return Err(ConfigError::invalid(
            "query_pre_attn_scalar",
            format!(
                "{scalar} is not modelled; vramlab scales scores by 1 / sqrt(head_dim) and \
                 accepts {head_dim} (head_dim)"
            ),
        ));
    }
    Ok(())
}

fn gemma3_checks(fields: &Fields) -> Result<(), ConfigError> {
    gemma_checks(fields)?;
    fields.flag_must_be(
        "use_bidirectional_attention",
        false,
        "vramlab's Gemma is a causal decoder (bidirectional attention is EmbeddingGemma's)",
    )
}
