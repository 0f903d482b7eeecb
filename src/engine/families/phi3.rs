//! Phi-3 (`model.kind` "phi3", `model_type` "phi3"): the llama with its Q, K and V projections
//! held as one matrix (`qkv_proj`, `[width, (heads + 2 kv_heads) head_dim]`) and its gate and
//! up projections as another (`gate_up_proj`, `[width, 2 ff]`), as its checkpoints store them:
//! the parameters of a llama of the same shape, in four matrices a block where the llama has
//! seven, so LoRA adapts four. No biases; an untied output.

use super::ModelKind;
use super::llama::{LLAMA_STYLE, Llama, Style, read_style, window_unless_null};
use crate::engine::config::{ModelConfig, limits};
use crate::engine::error::ConfigError;
use crate::engine::hf_config::{Fields, HfType};
use crate::engine::presets::Preset;

pub const PHI3: Llama = Llama {
    qk_norm: false,
    gemma: false,
    fused_projections: true,
    moe: false,
    hf: &[PHI3_HF],
    presets: (&[SORT_PHI3], &[]),
};

/// The sorting task on a tiny Phi-3, its two key/value heads shared by four query heads (as
/// Phi-3-medium's grouped heads are): the fused projection splits into heads of both counts.
const SORT_PHI3: Preset = Preset::new(
    "sort-phi3",
    "the same task as a tiny Phi-3: a llama whose Q, K and V are one matrix and whose gate and \
     up projections are another, its output untied",
    r#"{
  "name": "sort-phi3",
  "data": { "kind": "sort", "samples": 8192, "seq_len": 8, "vocab": 8, "test_fraction": 0.125 },
  "model": { "kind": "phi3", "width": 64, "layers": 2, "heads": 4, "kv_heads": 2, "ff": 176, "tied": false },
  "optimizer": "adamw",
  "learning_rate": 0.003,
  "batch_size": 256,
  "eval_batch_size": 512,
  "steps": 300,
  "eval_every": 50,
  "seed": 42
}"#,
);

/// Phi-3 as transformers builds `Phi3ForCausalLM`: one key/value head per head unless the
/// file says otherwise (its class default), RMSNorm epsilon 1e-5.
const PHI3_HF: HfType = HfType {
    model_type: "phi3",
    architecture: "Phi3ForCausalLM",
    base_preset: "llama2-7b",
    modelled: &[
        LLAMA_STYLE,
        &["attention_bias", "partial_rotary_factor", "sliding_window"],
    ],
    // The remote code's class names (`auto_map`), and the length long-context rotary scaling
    // (`longrope`) rescales from: neither sizes a tensor.
    ignored: &["auto_map", "original_max_position_embeddings"],
    positions_field: "max_position_embeddings",
    model: read,
    rotary: true,
    // Phi-3's window is on unless the file sets it to null (as Mistral's).
    window: window_unless_null,
};

fn read(fields: &Fields) -> Result<ModelConfig, ConfigError> {
    let style = Style {
        kind: ModelKind::Phi3,
        own_head_dim: false,
        kv_heads_default: true,
        qkv_bias: false,
        swiglu: true,
        tied_default: false,
    };
    let mut model = read_style(&style, fields, checks)?;
    // Phi3Config's default, where Llama's is 1e-6.
    model.norm_eps = fields.number_or("rms_norm_eps", 1e-5, limits::NORM_EPS)?;
    Ok(model)
}

fn checks(fields: &Fields) -> Result<(), ConfigError> {
    fields.flag_must_be(
        "attention_bias",
        false,
        "vramlab's Phi-3 has no biases on its fused Q, K, V nor its output projection",
    )?;
    match fields.get("partial_rotary_factor") {
        None => Ok(()),
        Some(factor) if factor.as_f64() == Some(1.0) => Ok(()),
        Some(factor) => Err(ConfigError::invalid(
            "partial_rotary_factor",
            format!(
                "{factor} is not modelled; vramlab accepts 1 (or null): it turns every \
                 dimension of each head, where a part rotated would slice and join each head \
                 in memory vramlab does not plan"
            ),
        )),
    }
}
