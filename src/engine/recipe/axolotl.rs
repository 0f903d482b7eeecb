//! Axolotl's YAML (its `config.qmd` reference, read 2026-11-27): the model loads in bf16 when
//! `bf16` is set (so a full fine-tune trains 16-bit weights), PEFT adapters in f32 over it.

use crate::engine::config::OpPath;

use super::intent::{Base, ModelRef};
use super::reading::Mapper;
use super::{launch, shared};

pub fn read(m: &mut Mapper) {
    if let Some((field, id)) = m.text("base_model") {
        m.mapped(
            &field,
            "the model: the Hub id's config.json (or --hf-config)",
        );
        m.intent.model = Some(ModelRef::Hub(id));
    }
    if let Some((field, id)) = m.text("base_model_config") {
        m.mapped(&field, "the model's config.json comes from here");
        m.intent.model = Some(ModelRef::Hub(id));
    }
    shared::quantized_base(m, "load_in_4bit", "load_in_8bit");
    if let Some((field, adapter)) = m.text("adapter") {
        match adapter.as_str() {
            "lora" | "qlora" => {
                m.intent.lora = true;
                m.mapped(&field, "strategies.trainable=lora");
            }
            _ => m.refused(
                &field,
                format!("{adapter}: only lora and qlora adapters are planned"),
            ),
        }
    }
    if m.intent.lora {
        shared::lora_numbers(m, "lora_r", "lora_alpha", "lora_dropout", "Axolotl");
        let every = m.flag("lora_target_linear");
        match &every {
            Some((field, true)) => m.mapped(field, "adapters on every linear layer of the body"),
            Some((field, false)) => m.mapped(field, "targets from lora_target_modules"),
            None => {}
        }
        let listed = m.names("lora_target_modules");
        match (every, listed) {
            (Some((_, true)), Some((field, _))) => m.ignored(
                &field,
                "lora_target_linear adds every linear layer to these",
            ),
            (_, Some((field, modules))) => shared::targets(m, &field, &modules),
            (Some((_, true)), None) => {}
            (_, None) => m.refused_default(
                "lora_target_modules",
                "none",
                "Axolotl passes an empty target list to PEFT; vramlab adapts every matrix of \
                 the body: set lora_target_linear: true",
            ),
        }
        shared::refuse_if_set(
            m,
            &["lora_modules_to_save"],
            "whole modules trained beside the adapters (their gradients and optimizer state) \
             are not planned: the plan holds less than this recipe",
        );
        shared::refuse_if_true(
            m,
            &["peft_use_dora"],
            "DoRA's magnitude vectors and their \
             activations are not planned",
        );
    }
    shared::length(m, "sequence_len", 512, "Axolotl");
    shared::packing(
        m,
        &["sample_packing", "pad_to_sequence_len"],
        "sequence_len",
    );
    shared::micro_batch(m, "micro_batch_size", Some((1, "Axolotl's")));
    shared::eval_batch(m, "eval_batch_size", None);
    shared::accumulation(m);
    shared::optimizer(m, "optimizer", "adamw_torch_fused");
    // bf16 / fp16: the model loads in that type (Axolotl's torch_dtype), autocast over it.
    let mut half = false;
    let stated = ["bf16", "fp16", "bfloat16", "float16", "float32"]
        .iter()
        .any(|k| m.has(k));
    if !stated {
        half = true;
        m.default(
            "bf16",
            "auto",
            "Axolotl's default: weights loaded in 16 bits where the GPU has bf16, 16-bit compute",
        );
    }
    for key in ["bf16", "fp16", "bfloat16", "float16"] {
        if let Some(field) = m.take(key) {
            let on = matches!(&field.value, super::document::Value::Bool(true))
                || field.value.as_text() == Some("auto");
            if on {
                half = true;
                m.mapped(
                    &field,
                    "weights loaded in 16 bits, 16-bit compute (auto: where the GPU has bf16; \
                     f16 stands in for bf16 in bytes)",
                );
            } else {
                m.mapped(&field, "off");
            }
        }
    }
    if half && m.intent.base.is_none() {
        m.intent.base = Some(Base::Half);
    }
    m.intent.compute_16 |= half;
    shared::checkpointing(
        m,
        "gradient_checkpointing",
        true,
        Some((false, "Axolotl's")),
    );
    m.ignore_all(
        &["gradient_checkpointing_kwargs*"],
        "re-entrant or not, each block's input is kept and the block recomputed",
    );
    shared::attention(m);
    if let Some((field, on)) = m.flag("eager_attention") {
        if on {
            m.intent.attention = Some(OpPath::Naive);
            m.mapped(&field, "strategies.attention=naive (eager)");
        } else {
            m.mapped(&field, "off");
        }
    }
    for key in [
        "flash_attention",
        "sdp_attention",
        "xformers_attention",
        "flex_attention",
    ] {
        if let Some((field, on)) = m.flag(key) {
            if on {
                m.intent.attention = Some(OpPath::Fused);
                m.mapped(&field, "strategies.attention=fused (no score matrix kept)");
            } else {
                m.mapped(&field, "off");
            }
        }
    }
    if let Some((field, on)) = m.flag("liger_fused_linear_cross_entropy") {
        if on {
            shared::chunked_loss(m, &field, "Liger's fused linear cross-entropy");
        } else {
            m.mapped(&field, "off");
        }
    }
    shared::refuse_if_true(
        m,
        &[
            "liger_rope",
            "liger_rms_norm",
            "liger_glu_activation",
            "liger_layer_norm",
            "liger_swiglu",
            "liger_cross_entropy",
        ],
        "Liger's fused kernel keeps less for backward than the unfused op vramlab plans: the \
         plan holds more than this recipe",
    );
    shared::refuse_if_true(
        m,
        &["torch_compile"],
        "torch.compile fuses ops and changes what is kept for backward; not modelled",
    );
    shared::refuse_if_set(
        m,
        &["unfrozen_parameters"],
        "a few named parameters trained in full is not planned",
    );
    if let Some((field, version)) = m.count("fsdp_version", (1, 2)) {
        m.mapped(
            &field,
            if version == 2 {
                "FSDP2: each parameter sharded, as planned"
            } else {
                "FSDP1: flat parameters, planned as FSDP2 shards them"
            },
        );
    }
    launch::fsdp(m);
    m.ignore_all(
        &["plugins"],
        "the plugins' switches are read one by one (liger_*)",
    );
    m.ignore_all(
        &[
            "model_type",
            "tokenizer_type",
            "tokenizer_config",
            "trust_remote_code",
            "is_llama_derived_model",
            "datasets",
            "test_datasets",
            "dataset_prepared_path",
            "val_set_size",
            "output_dir",
            "chat_template",
            "special_tokens",
            "tokens",
            "train_on_inputs",
            "group_by_length",
            "eval_sample_packing",
            "num_epochs",
            "max_steps",
            "learning_rate",
            "lr_scheduler",
            "lr_scheduler_kwargs*",
            "warmup_steps",
            "warmup_ratio",
            "weight_decay",
            "max_grad_norm",
            "logging_steps",
            "evals_per_epoch",
            "eval_steps",
            "saves_per_epoch",
            "save_steps",
            "save_strategy",
            "save_total_limit",
            "save_first_step",
            "eval_table_size",
            "eval_max_new_tokens",
            "resume_from_checkpoint",
            "auto_resume_from_checkpoints",
            "local_rank",
            "early_stopping_patience",
            "seed",
            "strict",
            "debug",
            "tf32",
            "lora_model_dir",
            "peft_use_rslora",
            "hub_model_id",
            "hub_strategy",
            "wandb_*",
            "mlflow_*",
            "comet_*",
            "use_tensorboard",
            "xformers",
            "s2_attention",
            "loss_watchdog_threshold",
            "loss_watchdog_patience",
            "dataset_processes",
            "shuffle_merged_datasets",
            "cosine_min_lr_ratio",
            "lr_quadratic_warmup",
            "adam_beta1",
            "adam_beta2",
            "adam_epsilon",
            "ddp_timeout",
            "ddp_broadcast_buffers",
            "gc_steps",
            "dataloader_num_workers",
            "dataloader_pin_memory",
            "dataloader_prefetch_factor",
            "remove_unused_columns",
        ],
        "does not change what a GPU holds",
    );
    launch::deepspeed_file(m);
    m.rest_unread("Axolotl");
}
