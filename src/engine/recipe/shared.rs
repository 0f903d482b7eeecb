//! Rules the formats share: transformers' names (optimizers, attention), PEFT's LoRA fields,
//! bitsandbytes' 4- and 8-bit bases, packing, and the switches refused wherever they appear.

use crate::engine::config::OpPath;

use super::document::{Field, Value};
use super::intent::Base;
use super::names;
use super::reading::Mapper;

/// `load_in_4bit` / `load_in_8bit` (bitsandbytes): the frozen base block-quantized.
pub fn quantized_base(m: &mut Mapper, four: &str, eight: &str) {
    for (key, base, set) in [(four, Base::Q4, "q4"), (eight, Base::Q8, "q8")] {
        if let Some((field, on)) = m.flag(key) {
            if on {
                if m.intent.base.is_some_and(|b| b != base) {
                    m.refused(
                        &field,
                        "4-bit and 8-bit at once: the projects refuse it too",
                    );
                    continue;
                }
                m.intent.base = Some(base);
                m.mapped(
                    &field,
                    format!(
                        "strategies.weight_dtype={set} (the frozen body's matrices in blocks, \
                         the rest in 16 bits)"
                    ),
                );
            } else {
                m.mapped(&field, "off");
            }
        }
    }
}

/// PEFT's rank, alpha and dropout, under the names `rank`, `alpha` and `dropout`.
pub fn lora_numbers(m: &mut Mapper, rank: &str, alpha: &str, dropout: &str, project: &str) {
    if let Some((field, r)) = m.count(rank, (1, 65_536)) {
        m.intent.lora_rank = Some(r);
        m.mapped(&field, format!("strategies.lora_rank={r}"));
    }
    if let Some((field, a)) = m.number(alpha, (0.0, 1e6)) {
        m.intent.lora_alpha = Some(a);
        m.mapped(&field, format!("strategies.lora_alpha={a}"));
    }
    if let Some((field, p)) = m.number(dropout, (0.0, 1.0)) {
        if p > 0.0 {
            m.refused(
                &field,
                format!(
                    "{project}'s LoRA dropout keeps a dropped copy of each adapted layer's \
                     input for backward; vramlab's adapters have no dropout, so the plan holds \
                     less by those copies (set it to 0.0 to plan this recipe as it is)"
                ),
            );
        } else {
            m.mapped(&field, "no dropout, as planned");
        }
    }
}

/// Target modules: every matrix of the body is what vramlab plans; a subset is refused.
pub fn targets(m: &mut Mapper, field: &Field, modules: &[String]) {
    if names::targets_every_matrix(modules) {
        m.mapped(field, "adapters on every weight matrix of the body");
    } else {
        m.refused(field, names::subset_refusal(modules));
    }
}

/// Each of `keys` that is set (not empty, not false) is refused with `why`.
pub fn refuse_if_set(m: &mut Mapper, keys: &[&str], why: &str) {
    for key in keys {
        if let Some(field) = m.take(key) {
            match &field.value {
                Value::Bool(false) => m.mapped(&field, "off"),
                Value::List(items) if items.is_empty() => m.mapped(&field, "none"),
                _ => m.refused(&field, why),
            }
        }
    }
}

/// Each of `keys` that is true is refused with `why`; false is read as off.
pub fn refuse_if_true(m: &mut Mapper, keys: &[&str], why: &str) {
    for key in keys {
        if let Some((field, on)) = m.flag(key) {
            if on {
                m.refused(&field, why);
            } else {
                m.mapped(&field, "off");
            }
        }
    }
}

/// Packing switches: packed or padded to the full length, every sample is `length` tokens, as
/// planned; otherwise each batch is padded to its longest sample, and the plan at `length` is
/// the most a batch can hold.
pub fn packing(m: &mut Mapper, keys: &[&str], length: &str) {
    let mut full = false;
    for key in keys {
        if let Some((field, on)) = m.flag(key) {
            full |= on;
            m.mapped(
                &field,
                if on {
                    format!("every sample {length} tokens, as planned")
                } else {
                    "off".to_string()
                },
            );
        }
    }
    if !full {
        m.default(
            "packing",
            "off",
            format!(
                "each batch padded to its longest sample: planned at {length}, the most a batch \
                 holds"
            ),
        );
    }
}

/// transformers' `optim` names (`key`), with the project's default when it is absent.
pub fn optimizer(m: &mut Mapper, key: &str, default: &str) {
    let (field, name) = match m.text(key) {
        Some((field, name)) => (Some(field), name),
        None => (None, default.to_string()),
    };
    match (names::hf_optimizer(&name), field) {
        (Ok((kind, what)), Some(field)) => {
            m.intent.optimizer = Some(kind);
            m.mapped(&field, format!("optimizer={} ({what})", kind.name()));
        }
        (Ok((kind, what)), None) => {
            m.intent.optimizer = Some(kind);
            m.default(key, default, format!("optimizer={} ({what})", kind.name()));
        }
        (Err(why), Some(field)) => m.refused(&field, why),
        (Err(why), None) => m.default(key, default, why),
    }
}

/// transformers' `attn_implementation` (and Axolotl's `attention`); its default is SDPA.
pub fn attention(m: &mut Mapper) {
    let mut stated = false;
    for key in ["attn_implementation", "attention"] {
        if let Some((field, name)) = m.text(key) {
            stated = true;
            match names::attention(&name) {
                Ok(path) => {
                    m.intent.attention = Some(path);
                    m.mapped(&field, format!("strategies.attention={}", path.name()));
                }
                Err(why) => m.refused(&field, why),
            }
        }
    }
    if !stated {
        m.intent.attention.get_or_insert(OpPath::Fused);
    }
}

/// A loss that never holds the whole logits (chunked or fused with the output layer): vramlab's
/// fused loss is planned, which keeps the logits; the plan holds more than the recipe by them.
pub fn chunked_loss(m: &mut Mapper, field: &Field, what: &str) {
    m.intent.cross_entropy = Some(OpPath::Fused);
    m.mapped(field, chunked_loss_text(what));
}

pub fn chunked_loss_text(what: &str) -> String {
    format!(
        "strategies.cross_entropy=fused: {what} never holds the whole logits; vramlab's fused \
         loss keeps them (batch x tokens x vocabulary), so the plan is above the recipe by \
         about that"
    )
}

/// The sequence length at `key`, or `default` as the project's where the recipe has none.
pub fn length(m: &mut Mapper, key: &str, default: usize, project: &str) {
    match m.count(key, (1, 1 << 20)) {
        Some((field, n)) => {
            m.intent.seq_len = Some(n);
            m.mapped(&field, format!("data.seq_len={n}"));
        }
        None if !m.has(key) => {
            m.intent.seq_len = Some(default);
            m.default(
                key,
                default.to_string(),
                format!("{project}'s default: data.seq_len={default}"),
            );
        }
        None => {}
    }
}

/// A GPU's micro-batch at `key`, or `default` (its value, whose default it is) where the
/// recipe has none.
pub fn micro_batch(m: &mut Mapper, key: &str, default: Option<(usize, &str)>) {
    match (m.count(key, (1, 1 << 20)), default) {
        (Some((field, n)), _) => {
            m.intent.batch = Some(n);
            m.mapped(
                &field,
                format!("a GPU's micro-batch of {n} (batch_size = {n} x accumulation steps)"),
            );
        }
        (None, Some((n, whose))) if !m.has(key) => {
            m.intent.batch = Some(n);
            m.default(
                key,
                n.to_string(),
                format!("{whose} default: a micro-batch of {n}"),
            );
        }
        (None, _) => {}
    }
}

/// The evaluation batch at `key`, or `default` where the recipe has none.
pub fn eval_batch(m: &mut Mapper, key: &str, default: Option<(usize, &str)>) {
    match (m.count(key, (1, 1 << 20)), default) {
        (Some((field, n)), _) => {
            m.intent.eval_batch = Some(n);
            m.mapped(&field, format!("eval_batch_size={n}"));
        }
        (None, Some((n, whose))) if !m.has(key) => {
            m.intent.eval_batch = Some(n);
            m.default(
                key,
                n.to_string(),
                format!("{whose} default: eval_batch_size={n}"),
            );
        }
        (None, _) => {}
    }
}

/// `gradient_accumulation_steps`.
pub fn accumulation(m: &mut Mapper) {
    if let Some((field, n)) = m.count("gradient_accumulation_steps", (1, 1 << 20)) {
        m.intent.accumulation = Some(n);
        m.mapped(
            &field,
            format!("strategies.grad_accumulation={n} (batch_size = micro-batch x {n})"),
        );
    }
}

/// Per-layer checkpointing switched by `key` (on when it reads `on_when`: false for
/// LLaMA-Factory's `disable_gradient_checkpointing`), or `default` (on, whose) where the
/// recipe has none.
pub fn checkpointing(m: &mut Mapper, key: &str, on_when: bool, default: Option<(bool, &str)>) {
    let name = |on: bool| if on { "layers" } else { "none" };
    match (m.flag(key), default) {
        (Some((field, value)), _) => {
            let on = value == on_when;
            m.intent.checkpointing = Some(on);
            m.mapped(&field, format!("strategies.checkpointing={}", name(on)));
        }
        (None, Some((on, whose))) if !m.has(key) => {
            m.intent.checkpointing = Some(on);
            m.default(
                key,
                (on == on_when).to_string(),
                format!("{whose} default: strategies.checkpointing={}", name(on)),
            );
        }
        (None, _) => {}
    }
}

/// Activation offloading switched by `key` (TRL's `activation_offloading`, torchtune's
/// `enable_activation_offloading`).
pub fn offload_activations(m: &mut Mapper, key: &str) {
    if let Some((field, on)) = m.flag(key) {
        m.intent.offload_activations = on;
        m.mapped(
            &field,
            if on {
                "strategies.offload=activations"
            } else {
                "off"
            },
        );
    }
}
