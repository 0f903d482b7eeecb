//! Qwen3 (`model.kind` "qwen3", `model_type` "qwen3"): the llama with an RMSNorm over each
//! query and key head before the rotation (`q_norm`, `k_norm`), and heads of the width the file
//! states (`head_dim`: 128 in every Qwen3, where the small ones' `hidden_size /
//! num_attention_heads` is 64 or 80). No biases on Q, K and V (Qwen2 had them).

use super::ModelKind;
use super::llama::{LLAMA_STYLE, Llama, Style, read_style, window_when_used};
use crate::engine::error::ConfigError;
use crate::engine::hf_config::{Fields, HfType};
use crate::engine::presets::Preset;

pub const QWEN3: Llama = Llama {
    qk_norm: true,
    gemma: false,
    fused_projections: false,
    moe: false,
    hf: &[QWEN3_HF],
    presets: (&[SORT_QWEN3], &[]),
};

/// The sorting task on a tiny Qwen3: heads twice as wide as `width / heads`, each query and
/// key head normalized.
const SORT_QWEN3: Preset = Preset::new(
    "sort-qwen3",
    "the same task as a tiny Qwen3: a llama whose query and key heads are RMS-normed, its \
     heads 32 wide over a width of 64",
    r#"{
  "name": "sort-qwen3",
  "data": { "kind": "sort", "samples": 8192, "seq_len": 8, "vocab": 8, "test_fraction": 0.125 },
  "model": { "kind": "qwen3", "width": 64, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 32, "ff": 176, "tied": true },
  "optimizer": "adamw",
  "learning_rate": 0.003,
  "batch_size": 256,
  "eval_batch_size": 512,
  "steps": 300,
  "eval_every": 50,
  "seed": 42
}"#,
);

/// Qwen3 as transformers builds `Qwen3ForCausalLM`. Its class defaults `num_key_value_heads`
/// to a fixed count, so the file must state it.
const QWEN3_HF: HfType = HfType {
    model_type: "qwen3",
    architecture: "Qwen3ForCausalLM",
    base_preset: "llama2-7b",
    modelled: &[
        LLAMA_STYLE,
        &["attention_bias", "sliding_window", "use_sliding_window"],
    ],
    // Which layers a sliding window would skip: no window, no effect.
    ignored: &["max_window_layers"],
    positions_field: "max_position_embeddings",
    model: read,
    rotary: true,
    // The window applies only with `use_sliding_window`, as Qwen2's.
    window: window_when_used,
};

fn read(fields: &Fields) -> Result<crate::engine::config::ModelConfig, ConfigError> {
    let style = Style {
        kind: ModelKind::Qwen3,
        own_head_dim: true,
        kv_heads_default: false,
        qkv_bias: false,
        swiglu: true,
        tied_default: false,
    };
    read_style(&style, fields, |fields| {
        fields.flag_must_be(
            "attention_bias",
            false,
            "transformers puts it on Q, K, V and the output projection; vramlab's Qwen3 has \
             no attention biases",
        )
    })
}
