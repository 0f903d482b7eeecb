//! Mixtral (`model.kind` "mixtral", `model_type` "mixtral"): Mistral's blocks with a mixture of
//! experts in place of the feed-forward: a router over `num_local_experts` SwiGLU experts, each
//! token sent to `num_experts_per_tok` of them with their softmax weights renormalized. Every
//! expert's weights are resident, and train (or carry LoRA adapters) like any other matrix;
//! each expert keeps activations for the tokens it received. A plan assumes even routing and
//! says so (`models::moe`); a real run reports what its router did.

use super::ModelKind;
use super::llama::{LLAMA_STYLE, Llama, Style, read_style, window_unless_null};
use crate::engine::config::{ModelConfig, limits};
use crate::engine::error::ConfigError;
use crate::engine::hf_config::{Fields, HfType};
use crate::engine::presets::Preset;

pub const MIXTRAL: Llama = Llama {
    qk_norm: false,
    gemma: false,
    fused_projections: false,
    moe: true,
    hf: &[MIXTRAL_HF],
    presets: (&[SORT_MIXTRAL], &[]),
};

/// The sorting task on a tiny Mixtral: four experts a block, two a token, as Mixtral-8x7B
/// routes each token to two of its eight.
const SORT_MIXTRAL: Preset = Preset::new(
    "sort-mixtral",
    "the same task as a tiny Mixtral: a llama whose feed-forward is four SwiGLU experts, each \
     token routed to two of them",
    r#"{
  "name": "sort-mixtral",
  "data": { "kind": "sort", "samples": 8192, "seq_len": 8, "vocab": 8, "test_fraction": 0.125 },
  "model": { "kind": "mixtral", "width": 64, "layers": 2, "heads": 4, "kv_heads": 2, "ff": 96, "tied": false, "experts": 4, "experts_per_token": 2 },
  "optimizer": "adamw",
  "learning_rate": 0.003,
  "batch_size": 256,
  "eval_batch_size": 512,
  "steps": 300,
  "eval_every": 50,
  "seed": 42
}"#,
);

/// Mixtral as transformers builds `MixtralForCausalLM`. Its class defaults
/// `num_key_value_heads` to a fixed count (8), so the file must state it; two experts a token
/// when the file leaves it out, as the class does.
const MIXTRAL_HF: HfType = HfType {
    model_type: "mixtral",
    architecture: "MixtralForCausalLM",
    base_preset: "llama2-7b",
    modelled: &[
        LLAMA_STYLE,
        &[
            "sliding_window",
            "num_local_experts",
            "num_experts_per_tok",
            "output_router_logits",
            "router_jitter_noise",
        ],
    ],
    // The load-balancing loss's weight: it is computed only with `output_router_logits`.
    ignored: &["router_aux_loss_coef"],
    positions_field: "max_position_embeddings",
    model: read,
    rotary: true,
    // Mixtral's window is on unless the file sets it to null, as Mistral's.
    window: window_unless_null,
};

fn read(fields: &Fields) -> Result<ModelConfig, ConfigError> {
    let style = Style {
        kind: ModelKind::Mixtral,
        own_head_dim: false,
        kv_heads_default: false,
        qkv_bias: false,
        swiglu: true,
        tied_default: false,
    };
    let mut model = read_style(&style, fields, router_checks)?;
    model.experts = fields.count("num_local_experts", limits::EXPERTS)?;
    model.experts_per_token = fields.count_or("num_experts_per_tok", 2, (1, model.experts))?;
    Ok(model)
}

/// What the router does beyond choosing: no noise on its scores, no load-balancing loss.
/// Shared with Qwen3-MoE, whose router is Mixtral's.
pub(super) fn router_checks(fields: &Fields) -> Result<(), ConfigError> {
    fields.flag_must_be(
        "output_router_logits",
        false,
        "vramlab trains on the language model's loss alone; the load-balancing loss keeps every \
         layer's router scores to the end of the forward pass",
    )?;
    let jitter = fields.number_or("router_jitter_noise", 0.0, (0.0, 1.0))?;
    if jitter != 0.0 {
        return Err(ConfigError::invalid(
            "router_jitter_noise",
            format!(
                "{jitter} is not modelled; vramlab accepts 0: its router scores the tokens as \
                 they are, without multiplicative noise"
            ),
        ));
    }
    Ok(())
}
