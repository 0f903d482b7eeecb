//! LLaMA-Factory's YAML (its `hparams` dataclasses and model loader, read 2026-11-27):
//! gradient checkpointing is on unless `disable_gradient_checkpointing`; the model loads in the
//! checkpoint's type (16 bits) and its trained values are upcast to f32 (LoRA's factors, or a
//! full fine-tune's weights) unless `pure_bf16` or ZeRO-3; `cutoff_len` is 2,048 and a GPU's
//! batch 8 by default.

use super::intent::{Base, ModelRef};
use super::reading::Mapper;
use super::{launch, shared};

pub fn read(m: &mut Mapper) {
    if let Some((field, id)) = m.text("model_name_or_path") {
        m.mapped(
            &field,
            "the model: the Hub id's config.json (or --hf-config)",
        );
        m.intent.model = Some(ModelRef::Hub(id));
    }
    if let Some((field, stage)) = m.text("stage") {
        match stage.as_str() {
            "sft" | "pt" => m.mapped(&field, "one model trained on tokens, as planned"),
            _ => m.refused(
                &field,
                format!("{stage}: a reference model, reward head or value model beside the trained one is not planned"),
            ),
        }
    }
    let finetuning = m.text("finetuning_type");
    match &finetuning {
        Some((field, kind)) => match kind.as_str() {
            "lora" => {
                m.intent.lora = true;
                m.mapped(field, "strategies.trainable=lora");
            }
            "full" => m.mapped(field, "every weight trained"),
            _ => m.refused(field, format!("{kind}: lora and full are planned")),
        },
        None => {
            m.intent.lora = true;
            m.default(
                "finetuning_type",
                "lora",
                "LLaMA-Factory's default: strategies.trainable=lora",
            );
        }
    }
    if let Some((field, bits)) = m.count("quantization_bit", (2, 8)) {
        match bits {
            4 => {
                m.intent.base = Some(Base::Q4);
                m.mapped(&field, "strategies.weight_dtype=q4");
            }
            8 => {
                m.intent.base = Some(Base::Q8);
                m.mapped(&field, "strategies.weight_dtype=q8");
            }
            _ => m.refused(
                &field,
                format!("{bits}-bit bases are not planned (4 and 8 are)"),
            ),
        }
    }
    if let Some((field, method)) = m.text("quantization_method") {
        if method == "bnb" || method == "bitsandbytes" {
            m.mapped(&field, "bitsandbytes' blocks, as planned");
        } else {
            m.refused(&field, format!("{method}: bitsandbytes (bnb) is planned"));
        }
    }
    if m.intent.lora {
        if !m.has("lora_rank") {
            m.intent.lora_rank = Some(8);
            m.default(
                "lora_rank",
                "8",
                "LLaMA-Factory's default: strategies.lora_rank=8",
            );
        }
        let rank = m.intent.lora_rank;
        shared::lora_numbers(
            m,
            "lora_rank",
            "lora_alpha",
            "lora_dropout",
            "LLaMA-Factory",
        );
        if m.intent.lora_alpha.is_none() {
            let alpha = 2 * m.intent.lora_rank.or(rank).unwrap_or(8);
            m.intent.lora_alpha = Some(alpha as f64);
            m.default(
                "lora_alpha",
                "rank x 2",
                format!("LLaMA-Factory's default: strategies.lora_alpha={alpha}"),
            );
        }
        match m.names("lora_target") {
            Some((field, modules)) => shared::targets(m, &field, &modules),
            None => m.default(
                "lora_target",
                "all",
                "LLaMA-Factory's default: adapters on every linear layer of the body",
            ),
        }
        shared::refuse_if_set(
            m,
            &["additional_target"],
            "whole modules trained beside the adapters are not planned",
        );
        shared::refuse_if_true(m, &["use_dora"], "DoRA is not planned");
        shared::refuse_if_true(m, &["pissa_init"], "PiSSA's initialisation is not planned");
    }
    shared::length(m, "cutoff_len", 2048, "LLaMA-Factory");
    shared::packing(m, &["packing", "neat_packing"], "cutoff_len");
    shared::micro_batch(m, "per_device_train_batch_size", Some((8, "transformers'")));
    shared::eval_batch(m, "per_device_eval_batch_size", None);
    shared::accumulation(m);
    let pure = m.flag("pure_bf16");
    let mut half = false;
    for key in ["bf16", "fp16"] {
        if let Some((field, on)) = m.flag(key) {
            half |= on;
            m.mapped(&field, if on { "16-bit compute" } else { "off" });
        }
    }
    match pure {
        Some((field, true)) => {
            half = true;
            m.mapped(
                &field,
                "everything in 16 bits, trained values too: strategies.weight_dtype=f16",
            );
            m.intent.base.get_or_insert(Base::Half);
            m.intent.adapters_in_base_type = true;
        }
        Some((field, false)) => m.mapped(&field, "off"),
        None => {}
    }
    m.intent.compute_16 |= half;
    // The model loads in the checkpoint's type (torch_dtype "auto": 16 bits for the Hub's
    // models), so a LoRA base is 16-bit whatever `bf16` says, its factors upcast to f32; a full
    // fine-tune's weights are upcast to f32 unless pure_bf16 (or ZeRO-3, `after_launch`).
    if m.intent.lora && m.intent.base.is_none() {
        m.intent.base = Some(Base::Half);
        m.default(
            "(the model's load)",
            "torch_dtype auto",
            "LLaMA-Factory loads the checkpoint's type: a 16-bit base (strategies.weight_dtype=f16)",
        );
    }
    shared::checkpointing(
        m,
        "disable_gradient_checkpointing",
        false,
        Some((true, "LLaMA-Factory's")),
    );
    match m.text("flash_attn") {
        Some((field, kind)) => match kind.as_str() {
            "auto" | "fa2" | "fa3" | "sdpa" => {
                m.intent.attention = Some(crate::engine::config::OpPath::Fused);
                m.mapped(&field, "strategies.attention=fused");
            }
            "disabled" => {
                m.intent.attention = Some(crate::engine::config::OpPath::Naive);
                m.mapped(&field, "strategies.attention=naive (eager)");
            }
            _ => m.refused(&field, format!("{kind}: auto, fa2, sdpa or disabled")),
        },
        None => {
            m.intent.attention = Some(crate::engine::config::OpPath::Fused);
        }
    }
    shared::optimizer(m, "optim", "adamw_torch_fused");
    shared::refuse_if_true(
        m,
        &["enable_liger_kernel"],
        "Liger's kernels keep less for backward than the ops vramlab plans: the plan holds more \
         than this recipe",
    );
    shared::refuse_if_true(
        m,
        &[
            "use_unsloth",
            "use_galore",
            "use_badam",
            "use_apollo",
            "use_adam_mini",
            "use_llama_pro",
        ],
        "this method's memory is not planned",
    );
    launch::fsdp(m);
    launch::deepspeed_file(m);
    m.ignore_all(
        &[
            "trust_remote_code",
            "do_train",
            "do_eval",
            "do_predict",
            "dataset",
            "eval_dataset",
            "dataset_dir",
            "template",
            "max_samples",
            "preprocessing_num_workers",
            "dataloader_num_workers",
            "output_dir",
            "logging_steps",
            "save_steps",
            "plot_loss",
            "overwrite_output_dir",
            "save_only_model",
            "report_to",
            "learning_rate",
            "num_train_epochs",
            "max_steps",
            "lr_scheduler_type",
            "warmup_ratio",
            "warmup_steps",
            "ddp_timeout",
            "resume_from_checkpoint",
            "val_size",
            "eval_strategy",
            "eval_steps",
            "overwrite_cache",
            "seed",
            "weight_decay",
            "max_grad_norm",
            "run_name",
            "tokenized_path",
            "streaming",
            "buffer_size",
            "mix_strategy",
            "interleave_probs",
            "save_strategy",
            "save_total_limit",
            "push_to_hub",
            "hub_model_id",
            "use_rslora",
            "create_new_adapter",
            "adapter_name_or_path",
            "train_on_prompt",
            "mask_history",
            "enable_thinking",
        ],
        "does not change what a GPU holds",
    );
    m.rest_unread("LLaMA-Factory");
}

/// Under DeepSpeed ZeRO-3 without a quantized base, LLaMA-Factory leaves trained values in the
/// loaded 16-bit type (no f32 upcast: ZeRO-3 gathers parameters of one type): LoRA's factors in
/// 16 bits, a full fine-tune's weights too.
pub fn after_launch(m: &mut Mapper) {
    let zero3 = m.intent.sharding == Some(crate::engine::config::Sharding::Full)
        && m.lines.iter().any(|l| l.field == "zero_optimization.stage");
    if !zero3 || matches!(m.intent.base, Some(Base::Q4) | Some(Base::Q8)) {
        return;
    }
    if m.intent.lora {
        m.intent.adapters_in_base_type = true;
    } else {
        m.intent.base = Some(Base::Half);
    }
    m.default(
        "(upcast of trained values)",
        "none under ZeRO-3",
        "LLaMA-Factory keeps trained values in the loaded 16-bit type under ZeRO-3 \
         (strategies.weight_dtype=f16, LoRA's factors too)",
    );
    if let Some(line) = m.lines.last_mut() {
        line.file = None;
    }
}
