//! Names the projects share: transformers' `optim` values (Axolotl, TRL and LLaMA-Factory use
//! them), torchtune's optimizer components, attention implementations and LoRA target lists.

use crate::engine::config::{OpPath, OptimizerKind};

/// An optimizer by transformers' `optim` name (`OptimizerNames`), or why it is not planned.
/// Paged bitsandbytes optimizers keep their state in memory the driver pages to the host only
/// under pressure: on the GPU otherwise, as planned.
pub fn hf_optimizer(name: &str) -> Result<(OptimizerKind, &'static str), String> {
    let kind = match name {
        "adamw_torch"
        | "adamw_torch_fused"
        | "adamw_hf"
        | "adamw_apex_fused"
        | "adamw_torch_xla"
        | "adamw_torch_npu_fused"
        | "paged_adamw_32bit"
        | "paged_adamw"
        | "adamw_bnb_32bit" => (
            OptimizerKind::Adamw,
            "AdamW: two f32 moments a trained value",
        ),
        "adamw_bnb_8bit" | "adamw_8bit" | "paged_adamw_8bit" | "bnb_8bit" => (
            OptimizerKind::Adamw8bit,
            "bitsandbytes' 8-bit AdamW: both moments as 8-bit codes in blocks of 256",
        ),
        "adafactor" => (
            OptimizerKind::Adafactor,
            "Adafactor: a factored second moment, no first",
        ),
        "lion_32bit" | "paged_lion_32bit" => (OptimizerKind::Lion, "Lion: one f32 moment"),
        "sgd" => (
            OptimizerKind::Sgd,
            "SGD (transformers' has no momentum): no state",
        ),
        _ => {
            return Err(format!(
                "{name:?} is not planned; vramlab plans adamw_torch, adamw_torch_fused, \
                 paged_adamw_32bit (adamw), adamw_bnb_8bit, adamw_8bit, paged_adamw_8bit \
                 (adamw8bit), adafactor, lion_32bit and sgd"
            ));
        }
    };
    Ok(kind)
}

/// An optimizer by torchtune's `optimizer._component_`.
pub fn torch_optimizer(component: &str) -> Result<(OptimizerKind, &'static str), String> {
    match component {
        "torch.optim.AdamW" | "bitsandbytes.optim.PagedAdamW" | "bitsandbytes.optim.AdamW" => {
            Ok((OptimizerKind::Adamw, "AdamW: two moments a trained value"))
        }
        "torch.optim.Adam" => Ok((OptimizerKind::Adam, "Adam: two moments a trained value")),
        "bitsandbytes.optim.PagedAdamW8bit"
        | "bitsandbytes.optim.AdamW8bit"
        | "torchao.optim.AdamW8bit"
        | "torchao.prototype.low_bit_optim.AdamW8bit" => Ok((
            OptimizerKind::Adamw8bit,
            "8-bit AdamW: both moments as 8-bit codes in blocks of 256",
        )),
        "torch.optim.SGD" => Ok((OptimizerKind::Sgd, "SGD (momentum 0 by default): no state")),
        _ => Err(format!(
            "{component:?} is not planned; vramlab plans torch.optim.AdamW, torch.optim.Adam, \
             torch.optim.SGD, bitsandbytes.optim.PagedAdamW, PagedAdamW8bit and AdamW8bit, \
             torchao.optim.AdamW8bit"
        )),
    }
}

/// An attention implementation by transformers' `attn_implementation` name.
pub fn attention(name: &str) -> Result<OpPath, String> {
    match name {
        "flash_attention_2"
        | "flash_attention_3"
        | "flash_attention"
        | "flash"
        | "sdpa"
        | "flex_attention"
        | "kernels-community/flash-attn"
        | "fa2" => Ok(OpPath::Fused),
        "eager" => Ok(OpPath::Naive),
        _ => Err(format!(
            "{name:?} is not known; vramlab plans fused attention (flash_attention_2, sdpa, \
             flex_attention: no score matrix kept) or naive (eager)"
        )),
    }
}

/// The projections vramlab puts LoRA on: every weight matrix of a decoder block, in the Hub
/// models' names (and torchtune's `output_proj` for `o_proj`).
pub const LORA_EVERY_MATRIX: &[&str] = &[
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
];

/// Whether a list of target modules covers every matrix vramlab adapts (`all-linear` and
/// Axolotl's `lora_target_linear` do; a subset does not, and is refused by the caller).
pub fn targets_every_matrix(names: &[String]) -> bool {
    if names
        .iter()
        .any(|n| n == "all-linear" || n == "all" || n == "all_linear")
    {
        return true;
    }
    LORA_EVERY_MATRIX.iter().all(|wanted| {
        names
            .iter()
            .any(|n| n == wanted || (*wanted == "o_proj" && n == "output_proj"))
    })
}

/// The reason a subset of target modules is refused.
pub fn subset_refusal(names: &[String]) -> String {
    let missing: Vec<&str> = LORA_EVERY_MATRIX
        .iter()
        .copied()
        .filter(|wanted| {
            !names
                .iter()
                .any(|n| n == wanted || (*wanted == "o_proj" && n == "output_proj"))
        })
        .collect();
    format!(
        "vramlab puts adapters on every weight matrix of each block ({}); this recipe leaves out \
         {}: its adapters, their gradients and optimizer state are smaller than planned, and \
         the block's activations kept for them too",
        LORA_EVERY_MATRIX.join(", "),
        missing.join(", ")
    )
}
