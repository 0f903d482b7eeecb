//! Qwen3-MoE (`model.kind` "qwen3_moe", `model_type` "qwen3_moe"): Qwen3's attention (per-head
//! query and key norms, heads of their own width) with Mixtral's router and SwiGLU experts in
//! every block: `num_experts` experts `moe_intermediate_size` wide, `num_experts_per_tok` a
//! token, their weights renormalized (`norm_topk_prob`). Qwen3-30B-A3B routes each token to 8 of
//! 128 experts.

use super::ModelKind;
use super::llama::{LLAMA_STYLE, Llama, Style, read_style, window_when_used};
use super::mixtral::router_checks;
use crate::engine::config::{ModelConfig, limits};
use crate::engine::error::ConfigError;
use crate::engine::hf_config::{Fields, HfType};
use crate::engine::presets::Preset;

pub const QWEN3_MOE: Llama = Llama {
    qk_norm: true,
    gemma: false,
    fused_projections: false,
    moe: true,
    hf: &[QWEN3_MOE_HF],
    presets: (&[SORT_QWEN3_MOE], &[]),
};

/// The sorting task on a tiny Qwen3-MoE: eight narrow experts a block, two a token, its heads
/// normed and twice as wide as `width / heads`.
const SORT_QWEN3_MOE: Preset = Preset::new(
    "sort-qwen3-moe",
    "the same task as a tiny Qwen3-MoE: a Qwen3 whose feed-forward is eight narrow SwiGLU \
     experts, each token routed to two of them",
    r#"{
  "name": "sort-qwen3-moe",
  "data": { "kind": "sort", "samples": 8192, "seq_len": 8, "vocab": 8, "test_fraction": 0.125 },
  "model": { "kind": "qwen3_moe", "width": 64, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 32, "ff": 48, "tied": false, "experts": 8, "experts_per_token": 2 },
  "optimizer": "adamw",
  "learning_rate": 0.003,
  "batch_size": 256,
  "eval_batch_size": 512,
  "steps": 300,
  "eval_every": 50,
  "seed": 42
}"#,
);

/// Qwen3-MoE as transformers builds `Qwen3MoeForCausalLM`, every layer sparse.
const QWEN3_MOE_HF: HfType = HfType {
    model_type: "qwen3_moe",
    architecture: "Qwen3MoeForCausalLM",
    base_preset: "llama2-7b",
    modelled: &[
        LLAMA_STYLE,
        &[
            "attention_bias",
            "sliding_window",
            "use_sliding_window",
            "num_experts",
            "num_experts_per_tok",
            "moe_intermediate_size",
            "norm_topk_prob",
            "decoder_sparse_step",
            "mlp_only_layers",
            "output_router_logits",
            "router_jitter_noise",
        ],
    ],
    // Which layers a sliding window would skip, and the load-balancing loss's weight (computed
    // only with `output_router_logits`).
    ignored: &["max_window_layers", "router_aux_loss_coef"],
    positions_field: "max_position_embeddings",
    model: read,
    rotary: true,
    window: window_when_used,
};

/// Qwen3's reading, then the experts: `intermediate_size` sizes only the dense feed-forward of
/// layers that are not sparse, and vramlab builds every layer sparse (`decoder_sparse_step` 1,
/// no `mlp_only_layers`), so each expert's width is `moe_intermediate_size`.
fn read(fields: &Fields) -> Result<ModelConfig, ConfigError> {
    let style = Style {
        kind: ModelKind::Qwen3Moe,
        own_head_dim: true,
        kv_heads_default: false,
        qkv_bias: false,
        swiglu: true,
        tied_default: false,
    };
    let mut model = read_style(&style, fields, checks)?;
    model.ff = fields.count("moe_intermediate_size", limits::FF)?;
    model.experts = fields.count("num_experts", limits::EXPERTS)?;
    model.experts_per_token = fields.count("num_experts_per_tok", (1, model.experts))?;
    Ok(model)
}

fn checks(fields: &Fields) -> Result<(), ConfigError> {
    fields.flag_must_be(
        "attention_bias",
        false,
        "transformers puts it on Q, K, V and the output projection; vramlab's Qwen3-MoE has \
         no attention biases",
    )?;
    let step = fields.count_or("decoder_sparse_step", 1, (1, usize::MAX))?;
    if step != 1 {
        return Err(ConfigError::invalid(
            "decoder_sparse_step",
            format!(
                "{step} is not modelled; vramlab accepts 1: every layer's feed-forward is its \
                 experts"
            ),
        ));
    }
    if let Some(dense) = fields.get("mlp_only_layers")
        && dense.as_array().is_none_or(|layers| !layers.is_empty())
    {
        return Err(ConfigError::invalid(
            "mlp_only_layers",
            format!(
                "{dense} is not modelled; vramlab accepts [] (or null): every layer's \
                 feed-forward is its experts"
            ),
        ));
    }
    // transformers' class leaves the top-k weights as the softmax gave them unless asked.
    if !fields.flag_or("norm_topk_prob", false)? {
        return Err(ConfigError::invalid(
            "norm_topk_prob",
            "false (the class default when absent) is not modelled; vramlab accepts true: a \
             token's top-k weights are renormalized to sum to one, as Mixtral's are",
        ));
    }
    router_checks(fields)
}
