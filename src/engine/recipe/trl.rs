//! TRL's `trl sft --config` YAML (SFTConfig over transformers' TrainingArguments, and TRL's
//! ModelConfig), read in TRL's source 2026-11-27: `dtype` defaults to float32 (so bf16 is
//! autocast over f32 weights), bf16 is on unless fp16 is, gradient checkpointing is on,
//! `max_length` is 1,024, the loss is chunked (`chunked_nll`), a GPU's batch is 8.

use crate::engine::config::OpPath;

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
    // `torch_dtype` is the older name; the newer wins where both are given.
    let older = m.text("torch_dtype");
    let newer = m.text("dtype");
    if let (Some((field, _)), Some(_)) = (&older, &newer) {
        m.ignored(field, "dtype is given too, and wins");
    }
    let dtype = newer.or(older);
    let mut f32_weights = true;
    match dtype {
        Some((field, name)) => match name.as_str() {
            "float32" => m.mapped(&field, "f32 weights"),
            "bfloat16" | "float16" | "auto" => {
                f32_weights = false;
                m.intent.base = Some(Base::Half);
                m.mapped(
                    &field,
                    "strategies.weight_dtype=f16 (16-bit weights; auto is the checkpoint's \
                     type, 16 bits for the Hub's models; f16 stands in for bf16)",
                );
            }
            _ => m.refused(
                &field,
                format!("{name}: float32, bfloat16, float16 or auto are planned"),
            ),
        },
        None => m.default("dtype", "float32", "TRL's default: f32 weights"),
    }
    shared::quantized_base(m, "load_in_4bit", "load_in_8bit");
    if f32_weights && matches!(m.intent.base, Some(Base::Q4) | Some(Base::Q8)) {
        m.refused_default(
            "dtype",
            "float32",
            "over a quantized base TRL keeps what it does not quantize (embeddings, norms, the \
             output layer) in the model's dtype, f32 by TRL's default; vramlab keeps them in 16 \
             bits, so the plan holds less: set dtype: bfloat16",
        );
    }
    let fp16 = m.flag("fp16");
    let bf16 = m.flag("bf16");
    let fp16_on = fp16.as_ref().is_some_and(|(_, on)| *on);
    let compute_16 = bf16.as_ref().map_or(!fp16_on, |(_, on)| *on) || fp16_on;
    for (field, on) in bf16.iter().chain(fp16.iter()) {
        m.mapped(field, if *on { "16-bit compute" } else { "off" });
    }
    if bf16.is_none() {
        m.default(
            "bf16",
            "true",
            "TRL's default unless fp16 is set: 16-bit compute",
        );
    }
    m.intent.compute_16 = compute_16;
    if let Some((field, on)) = m.flag("use_peft") {
        m.intent.lora = on;
        m.mapped(
            &field,
            if on {
                "strategies.trainable=lora"
            } else {
                "full fine-tune"
            },
        );
    }
    if m.intent.lora {
        if !m.has("lora_r") {
            m.intent.lora_rank = Some(16);
            m.default("lora_r", "16", "TRL's default: strategies.lora_rank=16");
        }
        if !m.has("lora_alpha") {
            m.intent.lora_alpha = Some(32.0);
            m.default(
                "lora_alpha",
                "32",
                "TRL's default: strategies.lora_alpha=32",
            );
        }
        if !m.has("lora_dropout") {
            m.refused_default(
                "lora_dropout",
                "0.05",
                "TRL's default dropout keeps a dropped copy of each adapted layer's input, \
                 which vramlab does not plan; set lora_dropout: 0.0",
            );
        }
        shared::lora_numbers(m, "lora_r", "lora_alpha", "lora_dropout", "PEFT");
        match m.names("lora_target_modules") {
            Some((field, modules)) => shared::targets(m, &field, &modules),
            None => m.refused_default(
                "lora_target_modules",
                "PEFT's default for the model type",
                "PEFT's default targets (q_proj and v_proj on Llama) are a subset of the \
                 matrices vramlab adapts; set lora_target_modules: all-linear",
            ),
        }
        shared::refuse_if_set(
            m,
            &["lora_modules_to_save"],
            "whole modules trained beside the adapters are not planned",
        );
        shared::refuse_if_true(m, &["use_dora"], "DoRA is not planned");
        if matches!(m.intent.base, Some(Base::Q4) | Some(Base::Q8)) {
            m.default(
                "(the adapters' type)",
                "16 bits",
                "over a quantized base TRL casts the adapters to 16 bits; vramlab keeps them in \
                 f32 (the plan holds 2 bytes more a trained value, and its gradient and state)",
            );
        }
    }
    // `max_seq_length` is the older name; the newer wins where both are given. A null length
    // truncates nothing: the data decides.
    let older = m.count("max_seq_length", (1, 1 << 20));
    let untruncated = m.is_null("max_length");
    let newer = m.count("max_length", (1, 1 << 20));
    if let (Some((field, _)), Some(_)) = (&older, &newer) {
        m.ignored(field, "max_length is given too, and wins");
    }
    let length = newer.or(older);
    match length {
        Some((field, n)) => {
            m.intent.seq_len = Some(n);
            m.mapped(&field, format!("data.seq_len={n}"));
        }
        None if untruncated => {
            m.intent.seq_len = Some(1024);
            m.default(
                "max_length",
                "null",
                "no truncation: the data decides; planned at data.seq_len=1024 (set \
                 max_length, or --set data.seq_len=N)",
            );
        }
        None => {
            m.intent.seq_len = Some(1024);
            m.default(
                "max_length",
                "1024",
                "TRL's default: data.seq_len=1024 (set max_length, or --set data.seq_len=N)",
            );
        }
    }
    shared::packing(m, &["packing", "padding_free"], "max_length");
    shared::micro_batch(m, "per_device_train_batch_size", Some((8, "transformers'")));
    shared::eval_batch(m, "per_device_eval_batch_size", Some((8, "transformers'")));
    shared::accumulation(m);
    shared::checkpointing(m, "gradient_checkpointing", true, Some((true, "TRL's")));
    m.ignore_all(
        &["gradient_checkpointing_kwargs*"],
        "re-entrant or not, each block's input is kept and the block recomputed",
    );
    shared::optimizer(m, "optim", "adamw_torch_fused");
    shared::attention(m);
    let liger = m.doc_value_is_true("use_liger_kernel");
    shared::refuse_if_true(
        m,
        &["use_liger_kernel"],
        "Liger's kernels (RMSNorm, SwiGLU, RoPE, fused linear cross-entropy) keep less for \
         backward than the ops vramlab plans: the plan holds more than this recipe",
    );
    match m.text("loss_type") {
        Some((field, kind)) if kind == "chunked_nll" => {
            shared::chunked_loss(m, &field, "TRL's chunked loss")
        }
        Some((field, kind)) if kind == "nll" => m.mapped(&field, "the whole logits, as planned"),
        Some((field, kind)) => {
            m.refused(&field, format!("{kind}: nll and chunked_nll are planned"))
        }
        None if liger => m.default(
            "loss_type",
            "nll",
            "TRL's default with use_liger_kernel: Liger's own loss",
        ),
        None => {
            m.intent.cross_entropy = Some(OpPath::Fused);
            m.default(
                "loss_type",
                "chunked_nll",
                shared::chunked_loss_text("TRL's default chunked loss (its chunks checkpointed)"),
            );
        }
    }
    shared::offload_activations(m, "activation_offloading");
    shared::refuse_if_true(
        m,
        &["torch_compile"],
        "torch.compile changes what is kept; not modelled",
    );
    launch::fsdp(m);
    launch::deepspeed_file(m);
    m.ignore_all(
        &[
            "dataset_name",
            "dataset_config",
            "dataset_train_split",
            "dataset_test_split",
            "dataset_text_field",
            "dataset_kwargs*",
            "datasets",
            "output_dir",
            "report_to",
            "run_name",
            "learning_rate",
            "lr_scheduler_type",
            "lr_scheduler_kwargs*",
            "warmup_ratio",
            "warmup_steps",
            "weight_decay",
            "max_grad_norm",
            "num_train_epochs",
            "max_steps",
            "logging_steps",
            "logging_strategy",
            "logging_first_step",
            "save_steps",
            "save_strategy",
            "save_total_limit",
            "eval_strategy",
            "eval_steps",
            "seed",
            "push_to_hub",
            "hub_model_id",
            "hub_strategy",
            "trust_remote_code",
            "model_revision",
            "tf32",
            "completion_only_loss",
            "assistant_only_loss",
            "eval_packing",
            "env*",
            "overwrite_output_dir",
            "bf16_full_eval",
            "dataloader_*",
            "remove_unused_columns",
            "chat_template_path",
            "lora_task_type",
            "use_rslora",
            "adam_beta1",
            "adam_beta2",
            "adam_epsilon",
            "save_only_model",
            "do_train",
            "do_eval",
        ],
        "does not change what a GPU holds",
    );
    m.rest_unread("TRL");
}
