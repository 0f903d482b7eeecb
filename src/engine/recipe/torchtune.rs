//! torchtune's YAML configs (read in torchtune's recipes/configs and model builders,
//! 2026-11-27): the model is a builder (`torchtune.models.llama3_1.lora_llama3_1_8b`) whose
//! shapes torchtune publishes; `dtype: bf16` trains everything in bf16, LoRA's factors
//! included (no f32 upcast as PEFT's); distributed recipes shard with FSDP2 (FULL_SHARD), and
//! the launch line in the config's comments names the process count.

use super::document::Value;
use super::intent::{Base, ModelRef};
use super::reading::Mapper;
use super::{launch, names, shared};

/// A builder's shapes, as its `_model_builders.py` states them.
struct Shapes {
    name: &'static str,
    vocab: usize,
    layers: usize,
    heads: usize,
    kv_heads: usize,
    width: usize,
    ff: usize,
    positions: usize,
    rope: f64,
    norm_eps: f64,
    tied: bool,
}

const fn llama(
    name: &'static str,
    vocab: usize,
    (layers, heads, kv_heads): (usize, usize, usize),
    (width, ff): (usize, usize),
    (positions, rope, tied): (usize, f64, bool),
) -> Shapes {
    Shapes {
        name,
        vocab,
        layers,
        heads,
        kv_heads,
        width,
        ff,
        positions,
        rope,
        norm_eps: 1e-5,
        tied,
    }
}

const BUILDERS: &[Shapes] = &[
    llama(
        "llama3_1_8b",
        128_256,
        (32, 32, 8),
        (4096, 14_336),
        (131_072, 500_000.0, false),
    ),
    llama(
        "llama3_1_70b",
        128_256,
        (80, 64, 8),
        (8192, 28_672),
        (131_072, 500_000.0, false),
    ),
    llama(
        "llama3_1_405b",
        128_256,
        (126, 128, 8),
        (16_384, 53_248),
        (131_072, 500_000.0, false),
    ),
    llama(
        "llama3_2_1b",
        128_256,
        (16, 32, 8),
        (2048, 8192),
        (131_072, 500_000.0, true),
    ),
    llama(
        "llama3_2_3b",
        128_256,
        (28, 24, 8),
        (3072, 8192),
        (131_072, 500_000.0, true),
    ),
    llama(
        "llama3_8b",
        128_256,
        (32, 32, 8),
        (4096, 14_336),
        (8192, 500_000.0, false),
    ),
    llama(
        "llama3_70b",
        128_256,
        (80, 64, 8),
        (8192, 28_672),
        (8192, 500_000.0, false),
    ),
    llama(
        "llama2_7b",
        32_000,
        (32, 32, 32),
        (4096, 11_008),
        (4096, 10_000.0, false),
    ),
    llama(
        "llama2_13b",
        32_000,
        (40, 40, 40),
        (5120, 13_824),
        (4096, 10_000.0, false),
    ),
    llama(
        "llama2_70b",
        32_000,
        (80, 64, 8),
        (8192, 28_672),
        (4096, 10_000.0, false),
    ),
];

/// The config.json that states a builder's shapes (a Llama: torchtune's TransformerDecoder
/// with RMSNorm, SwiGLU and RoPE).
fn config_json(shapes: &Shapes) -> String {
    serde_json::json!({
        "model_type": "llama",
        "_name_or_path": shapes.name,
        "vocab_size": shapes.vocab,
        "num_hidden_layers": shapes.layers,
        "num_attention_heads": shapes.heads,
        "num_key_value_heads": shapes.kv_heads,
        "hidden_size": shapes.width,
        "intermediate_size": shapes.ff,
        "max_position_embeddings": shapes.positions,
        "rope_theta": shapes.rope,
        "rms_norm_eps": shapes.norm_eps,
        "tie_word_embeddings": shapes.tied,
    })
    .to_string()
}

/// `torchtune.models.<family>.<kind><builder>`: the builder's shapes, and whether it is a
/// LoRA or QLoRA builder.
fn builder(component: &str) -> Option<(&'static Shapes, bool, bool)> {
    let name = component.rsplit('.').next()?;
    let (lora, quantized, base) = if let Some(base) = name.strip_prefix("qlora_") {
        (true, true, base)
    } else if let Some(base) = name.strip_prefix("lora_") {
        (true, false, base)
    } else {
        (false, false, name)
    };
    let shapes = BUILDERS.iter().find(|s| s.name == base)?;
    Some((shapes, lora, quantized))
}

/// The sequence length planned where a config leaves it to the data (`max_seq_len: null`).
pub const DATA_DECIDES_SEQ_LEN: usize = 2048;

pub fn read(m: &mut Mapper, text: &str) {
    let mut lora = false;
    if let Some((field, component)) = m.text("model._component_") {
        match builder(&component) {
            Some((shapes, is_lora, quantized)) => {
                lora = is_lora;
                m.intent.model = Some(ModelRef::Builder {
                    component: component.clone(),
                    config_json: config_json(shapes),
                });
                m.intent.lora = is_lora;
                if quantized {
                    m.intent.base = Some(Base::Q4);
                }
                m.mapped(
                    &field,
                    format!(
                        "the model: {}'s published shapes ({} blocks, width {}){}",
                        shapes.name,
                        shapes.layers,
                        shapes.width,
                        match (is_lora, quantized) {
                            (true, true) => "; strategies.trainable=lora over a 4-bit base (strategies.weight_dtype=q4)",
                            (true, false) => "; strategies.trainable=lora",
                            _ => "; every weight trained",
                        }
                    ),
                );
            }
            None => {
                let known: Vec<&str> = BUILDERS.iter().map(|s| s.name).collect();
                m.refused(
                    &field,
                    format!(
                        "not a builder vramlab knows the shapes of; it knows {} (with lora_ and \
                         qlora_ before them); give the model's config.json with --hf-config",
                        known.join(", ")
                    ),
                );
            }
        }
    }
    if lora {
        m.intent.adapters_in_base_type = true;
        shared::lora_numbers(
            m,
            "model.lora_rank",
            "model.lora_alpha",
            "model.lora_dropout",
            "torchtune",
        );
        let attn = m.names("model.lora_attn_modules");
        let mlp = m.flag("model.apply_lora_to_mlp");
        let mut modules: Vec<String> = attn.as_ref().map(|(_, n)| n.clone()).unwrap_or_default();
        if mlp.as_ref().is_some_and(|(_, on)| *on) {
            modules.extend(["gate_proj", "up_proj", "down_proj"].map(String::from));
        }
        let every = names::targets_every_matrix(&modules);
        for (field, _) in attn.iter() {
            if every {
                m.mapped(
                    field,
                    "with apply_lora_to_mlp: adapters on every weight matrix of the body",
                );
            } else {
                m.refused(field, names::subset_refusal(&modules));
            }
        }
        if attn.is_none() && !every {
            m.refused_default(
                "model.lora_attn_modules",
                "none",
                names::subset_refusal(&modules),
            );
        }
        if let Some((field, on)) = &mlp {
            if every {
                m.mapped(field, "adapters on the MLP's three matrices");
            } else if !on {
                m.refused(field, names::subset_refusal(&modules));
            } else {
                m.mapped(field, "adapters on the MLP's three matrices");
            }
        }
        shared::refuse_if_true(
            m,
            &["model.apply_lora_to_output"],
            "an adapter on the output layer is not planned",
        );
        if let Some((field, on)) = m.flag("model.quantize_base") {
            if on {
                m.intent.base = Some(Base::Q4);
                m.mapped(&field, "strategies.weight_dtype=q4");
            } else {
                m.mapped(&field, "off");
            }
        }
        shared::refuse_if_true(m, &["model.use_dora"], "DoRA is not planned");
    }
    match m.take("tokenizer.max_seq_len") {
        Some(field) => match field.value {
            Value::Int(n) if n >= 1 => {
                m.intent.seq_len = Some(n as usize);
                m.mapped(&field, format!("data.seq_len={n}"));
            }
            _ => m.refused(&field, "expected a whole number from 1, or null"),
        },
        None => {
            m.intent.seq_len = Some(DATA_DECIDES_SEQ_LEN);
            m.default(
                "tokenizer.max_seq_len",
                "null",
                format!(
                    "the data decides (each batch padded to its longest sample): planned at \
                     data.seq_len={DATA_DECIDES_SEQ_LEN}; set tokenizer.max_seq_len, or --set \
                     data.seq_len=N"
                ),
            );
        }
    }
    if let Some((field, on)) = m.flag("dataset.packed") {
        m.mapped(
            &field,
            if on {
                "every sample max_seq_len tokens, as planned"
            } else {
                "off: planned at max_seq_len, the most a batch holds"
            },
        );
    }
    shared::micro_batch(m, "batch_size", None);
    shared::accumulation(m);
    if let Some((field, dtype)) = m.text("dtype") {
        match dtype.as_str() {
            "bf16" | "fp16" if m.intent.base.is_some() => m.mapped(
                &field,
                "the 4-bit base's rest and the compute in 16 bits; torchtune's LoRA factors are \
                 16-bit too, vramlab's over a quantized base f32 (the plan holds 2 bytes more a \
                 factor value, and its gradient and state)",
            ),
            "bf16" | "fp16" => {
                m.intent.base = Some(Base::Half);
                m.mapped(
                    &field,
                    if lora {
                        "everything in 16 bits: strategies.weight_dtype=f16, LoRA's factors \
                         too (strategies.adapter_dtype=base); f16 stands in for bf16"
                    } else {
                        "everything in 16 bits: strategies.weight_dtype=f16 (f16 stands in \
                         for bf16)"
                    },
                );
            }
            "fp32" => m.mapped(&field, "f32"),
            _ => m.refused(&field, format!("{dtype}: bf16, fp16 or fp32")),
        }
    }
    shared::checkpointing(m, "enable_activation_checkpointing", true, None);
    shared::offload_activations(m, "enable_activation_offloading");
    if let Some((field, component)) = m.text("optimizer._component_") {
        match names::torch_optimizer(&component) {
            Ok((kind, what)) => {
                m.intent.optimizer = Some(kind);
                m.mapped(&field, format!("optimizer={} ({what})", kind.name()));
            }
            Err(why) => m.refused(&field, why),
        }
    }
    m.ignore_all(
        &["optimizer.fused", "optimizer.foreach"],
        "fused or not, one GPU's step holds no temporary beyond the state (sharded plans hold \
         PyTorch's foreach temporary)",
    );
    shared::refuse_if_true(
        m,
        &["optimizer_in_bwd"],
        "stepping inside backward frees each gradient as it is made; not planned",
    );
    if let Some((field, component)) = m.text("loss._component_") {
        let short = component
            .rsplit('.')
            .next()
            .unwrap_or(&component)
            .to_string();
        match short.as_str() {
            "LinearCrossEntropyLoss" | "CEWithChunkedOutputLoss" => {
                m.intent.cross_entropy = Some(crate::engine::config::OpPath::Fused);
                m.mapped(
                    &field,
                    format!(
                        "strategies.cross_entropy=fused: torchtune's {short} computes the loss \
                         a chunk of tokens at a time but keeps each chunk's f32 log-probabilities \
                         for backward (about the whole logits' size in f32); vramlab's fused loss \
                         keeps the logits: close to the recipe, not above it"
                    ),
                );
            }
            "CrossEntropyLoss" => m.mapped(&field, "the whole logits, as planned"),
            _ => m.refused(&field, format!("{short}: not a loss vramlab plans")),
        }
    }
    shared::refuse_if_true(
        m,
        &["compile"],
        "torch.compile changes what is kept for backward; not modelled",
    );
    launch::offload_params(m, "fsdp_cpu_offload");
    launch::reshard_after_forward(m, "fsdp_reshard_after_forward");
    if let Some((line, command, processes, distributed)) = launch::torchtune_launch(text) {
        let what = if distributed {
            // A distributed recipe shards fully unless its `fsdp_reshard_after_forward` said
            // otherwise above: the line says what is planned.
            let sharding = *m
                .intent
                .sharding
                .get_or_insert(crate::engine::config::Sharding::Full);
            m.intent.gpus = Some(processes);
            format!(
                "gpus={processes}, strategies.sharding={} (a distributed recipe: FSDP2's {})",
                sharding.name(),
                sharding.fsdp_name()
            )
        } else {
            "one GPU (a single-device recipe)".to_string()
        };
        m.lines.push(super::reading::Line {
            field: "(launch line in a comment)".into(),
            file: None,
            line: Some(line),
            value: command,
            kind: super::reading::Kind::Mapped,
            text: what,
        });
    }
    m.ignore_all(
        &[
            "output_dir",
            "tokenizer",
            "checkpointer",
            "resume_from_checkpoint",
            "save_adapter_weights_only",
            "dataset",
            "dataset_val",
            "seed",
            "shuffle",
            "epochs",
            "max_steps_per_epoch",
            "clip_grad_norm",
            "metric_logger",
            "log_every_n_steps",
            "log_peak_memory_stats",
            "log_level",
            "device",
            "profiler",
            "low_cpu_ram",
            "lr_scheduler",
            "optimizer",
            "run_val_every_n_steps",
            "batch_size_val",
            "loss",
            "log_grad_magnitude",
        ],
        "does not change what a GPU holds",
    );
    m.rest_unread("torchtune");
}
