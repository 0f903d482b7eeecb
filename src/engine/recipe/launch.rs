//! How a run is spread over GPUs, as recipes and their launchers say it: transformers' and
//! Axolotl's `fsdp` and `fsdp_config` (FSDP1's `fsdp_`-prefixed keys and FSDP2's), a DeepSpeed
//! JSON, an accelerate config, and the launch line a torchtune config's comments give.

use crate::engine::config::Sharding;

use super::document::{Field, Value};
use super::reading::Mapper;

/// What the plan of FSDP's parameter offload holds, for a reading's line.
const PARAMETERS_ON_HOST: &str = "strategies.offload=parameters (FSDP2's CPUOffloadPolicy: each \
    GPU's shards, their gradients and the optimizer state on the host, stepped there; each block \
    copied to the GPU and gathered before it runs)";

/// Set-up and ordering keys of FSDP: what the plan assumes for them.
const FSDP_SET_UP: &str = "set-up, saving or ordering: the plan wraps each block and the root \
    and prefetches the next block's gather, as FSDP2 does by default";

/// Plans `sharding` for `field` and says so, with `how` the launcher names it (FSDP's strategy,
/// a ZeRO stage): every launcher's sharding is mapped here, so what a reading says and what it
/// plans cannot part.
pub fn map_sharding(m: &mut Mapper, field: &Field, sharding: Sharding, how: &str) {
    m.intent.sharding = Some(sharding);
    m.mapped(
        field,
        format!("strategies.sharding={} ({how})", sharding.name()),
    );
}

/// `fsdp` (a list, or transformers' space-separated text) and `fsdp_config.*`.
pub fn fsdp(m: &mut Mapper) {
    if let Some((field, options)) = m.names("fsdp") {
        let mut sharding = None;
        let mut offload = false;
        for option in &options {
            match option.as_str() {
                "full_shard" => sharding = Some(Sharding::Full),
                "shard_grad_op" => sharding = Some(Sharding::Gradients),
                "hybrid_shard" | "hybrid_shard_zero2" => {
                    m.refused(
                        &field,
                        format!("{option}: sharding within a node and replicating across nodes is not planned"),
                    );
                    return;
                }
                "no_shard" => sharding = Some(Sharding::None),
                "offload" => offload = true,
                "auto_wrap" => {}
                _ => {
                    m.refused(
                        &field,
                        format!("{option:?} is not an FSDP option vramlab knows"),
                    );
                    return;
                }
            }
        }
        match (sharding, offload) {
            (Some(sharding), false) => map_sharding(m, &field, sharding, sharding.fsdp_name()),
            (Some(sharding), true) => {
                map_sharding(m, &field, sharding, sharding.fsdp_name());
                m.intent.offload_params = true;
                if let Some(line) = m.lines.last_mut() {
                    line.text = format!("{}; offload: {PARAMETERS_ON_HOST}", line.text);
                }
            }
            (None, true) => m.refused(
                &field,
                "offload without a sharding: name full_shard beside it (parameters on the host \
                 are planned under full sharding)",
            ),
            (None, false) => m.ignored(&field, "no sharding named"),
        }
    }
    fsdp_config(m, "fsdp_config.");
}

/// FSDP's keys under `prefix` (`fsdp_config.` in a recipe; nothing in an accelerate file's
/// own `fsdp_config` block, which the caller passes as `fsdp_config.`).
pub fn fsdp_config(m: &mut Mapper, prefix: &str) {
    for key in ["fsdp_version", "version"] {
        if let Some((field, version)) = m.count(&format!("{prefix}{key}"), (1, 2)) {
            m.mapped(
                &field,
                if version == 2 {
                    "FSDP2: each parameter sharded, as planned"
                } else {
                    "FSDP1: flat parameters, planned as FSDP2 shards them (docs/plans.md)"
                },
            );
        }
    }
    for key in ["fsdp_sharding_strategy", "sharding_strategy"] {
        // accelerate writes the strategy's name or its number.
        let taken = m.take(&format!("{prefix}{key}")).map(|field| {
            let name = match &field.value {
                Value::Int(n) => n.to_string(),
                other => other.shown(),
            };
            (field, name)
        });
        if let Some((field, name)) = taken {
            let sharding = match name.as_str() {
                "FULL_SHARD" | "1" => Some(Sharding::Full),
                "SHARD_GRAD_OP" | "2" => Some(Sharding::Gradients),
                "NO_SHARD" | "3" => Some(Sharding::None),
                _ => None,
            };
            match sharding {
                Some(sharding) => map_sharding(m, &field, sharding, sharding.fsdp_name()),
                None => m.refused(
                    &field,
                    format!("{name}: not planned (FULL_SHARD, SHARD_GRAD_OP, NO_SHARD are)"),
                ),
            }
        }
    }
    for key in ["fsdp_reshard_after_forward", "reshard_after_forward"] {
        reshard_after_forward(m, &format!("{prefix}{key}"));
    }
    for key in [
        "fsdp_offload_params",
        "offload_params",
        "fsdp_cpu_offload",
        "cpu_offload",
    ] {
        offload_params(m, &format!("{prefix}{key}"));
    }
    for key in ["fsdp_activation_checkpointing", "activation_checkpointing"] {
        if let Some((field, on)) = m.flag(&format!("{prefix}{key}")) {
            if on {
                m.intent.checkpointing = Some(true);
                m.mapped(&field, "strategies.checkpointing=layers");
            } else {
                m.mapped(
                    &field,
                    "no checkpointing by FSDP (the trainer's own switch decides)",
                );
            }
        }
    }
    let configured = m.has_prefix(prefix);
    m.ignore_all(&[&format!("{prefix}*")], FSDP_SET_UP);
    if configured && m.intent.sharding.is_none() {
        m.intent.sharding = Some(Sharding::Full);
        m.default(
            &format!("{prefix}fsdp_sharding_strategy"),
            "FULL_SHARD",
            "FSDP's default: strategies.sharding=full",
        );
    }
}

/// FSDP's `reshard_after_forward` at `path`: FULL_SHARD when on, SHARD_GRAD_OP when off.
pub fn reshard_after_forward(m: &mut Mapper, path: &str) {
    if let Some((field, on)) = m.flag(path) {
        let sharding = if on {
            Sharding::Full
        } else {
            Sharding::Gradients
        };
        map_sharding(m, &field, sharding, sharding.fsdp_name());
    }
}

/// FSDP's parameter offload switch at `path`.
pub fn offload_params(m: &mut Mapper, path: &str) {
    if let Some((field, on)) = m.flag(path) {
        if on {
            m.intent.offload_params = true;
            m.mapped(&field, PARAMETERS_ON_HOST);
        } else {
            m.mapped(&field, "parameters stay on the GPUs");
        }
    }
}

/// ZeRO's stage and offload devices, at the paths a DeepSpeed JSON or an accelerate config
/// names them.
fn zero(m: &mut Mapper, stage: &str, optimizer_device: &str, param_device: &str) {
    if let Some((field, stage)) = m.count(stage, (0, 3)) {
        let sharding = [
            Sharding::None,
            Sharding::Optimizer,
            Sharding::Gradients,
            Sharding::Full,
        ][stage];
        map_sharding(m, &field, sharding, &format!("ZeRO-{stage}"));
    }
    if let Some((field, device)) = m.text(optimizer_device) {
        match device.as_str() {
            "cpu" => {
                m.intent.offload_optimizer = true;
                m.mapped(&field, "strategies.offload=optimizer (ZeRO-Offload)");
            }
            "none" => m.mapped(&field, "optimizer state on the GPUs"),
            _ => m.refused(&field, format!("{device}: only cpu or none are planned")),
        }
    }
    if let Some((field, device)) = m.text(param_device) {
        match device.as_str() {
            "none" => m.mapped(&field, "parameters on the GPUs"),
            // ZeRO-Infinity's CPU layout, planned as FSDP2's CPUOffloadPolicy lays it out.
            "cpu" if m.intent.offload_optimizer => {
                m.intent.offload_params = true;
                m.mapped(
                    &field,
                    "strategies.offload=parameters (with offload_optimizer: each GPU's \
                     parameter, gradient and optimizer-state partitions on the host, each block \
                     gathered to the GPU before it runs; planned as FSDP2's CPUOffloadPolicy \
                     holds them: DeepSpeed's host also keeps a 16-bit copy of a 16-bit run's \
                     partition, 2 bytes a value more, and keeps parameters under \
                     stage3_param_persistence_threshold on the GPUs)",
                );
            }
            "cpu" => m.refused(
                &field,
                "cpu without offload_optimizer on cpu (the optimizer state stays on the GPUs) \
                 is not planned; both on cpu are (strategies.offload=parameters)",
            ),
            _ => m.refused(&field, format!("{device}: only cpu or none are planned")),
        }
    }
}

/// A recipe's `deepspeed` field: the file the caller reads beside it.
pub fn deepspeed_file(m: &mut Mapper) {
    if let Some((field, path)) = m.text("deepspeed") {
        m.mapped(&field, format!("read {path} beside the recipe (below)"));
    }
}

/// A DeepSpeed JSON's fields (the file a recipe's `deepspeed` names, or one passed beside).
pub fn deepspeed(m: &mut Mapper) {
    zero(
        m,
        "zero_optimization.stage",
        "zero_optimization.offload_optimizer.device",
        "zero_optimization.offload_param.device",
    );
    for (path, what) in [
        ("train_micro_batch_size_per_gpu", "batch"),
        ("gradient_accumulation_steps", "accumulation"),
    ] {
        if let Some(field) = m.take(path) {
            match &field.value {
                Value::Text(t) if t == "auto" => m.ignored(&field, "auto: the trainer's value"),
                Value::Int(n) if *n >= 1 => {
                    let n = *n as usize;
                    if what == "batch" {
                        m.intent.batch = Some(n);
                        m.mapped(
                            &field,
                            format!(
                                "a GPU's micro-batch of {n} (batch_size = {n} x accumulation steps)"
                            ),
                        );
                    } else {
                        m.intent.accumulation = Some(n);
                        m.mapped(
                            &field,
                            format!(
                                "strategies.grad_accumulation={n} (batch_size = micro-batch x {n})"
                            ),
                        );
                    }
                }
                _ => m.refused(&field, "expected auto or a whole number from 1"),
            }
        }
    }
    for path in ["bf16.enabled", "fp16.enabled"] {
        if let Some(field) = m.take(path) {
            match &field.value {
                Value::Text(t) if t == "auto" => m.ignored(&field, "auto: the trainer's precision"),
                Value::Bool(true) => {
                    m.intent.compute_16 = true;
                    m.mapped(&field, "16-bit compute");
                }
                Value::Bool(false) => m.mapped(&field, "off"),
                _ => m.refused(&field, "expected auto, true or false"),
            }
        }
    }
    m.ignore_all(
        &["zero_optimization*"],
        "DeepSpeed's buckets, thresholds and overlap: the plan gathers and reduces a block at \
         a time as FSDP2 does (docs/plans.md says where the engines differ)",
    );
    m.ignore_all(
        &[
            "train_batch_size",
            "gradient_clipping",
            "steps_per_print",
            "wall_clock_breakdown",
            "zero_allow_untested_optimizer",
            "zero_force_ds_cpu_optimizer",
            "optimizer",
            "scheduler",
            "bf16",
            "fp16",
            "communication_data_type",
            "prescale_gradients",
            "flops_profiler",
        ],
        "does not change what a GPU holds",
    );
    m.rest_unread("a DeepSpeed config");
}

/// An accelerate config (`accelerate config`'s YAML).
pub fn accelerate(m: &mut Mapper) {
    if let Some((field, kind)) = m.text("distributed_type") {
        match kind.as_str() {
            "FSDP" => {
                m.intent.sharding.get_or_insert(Sharding::Full);
                m.mapped(&field, "FSDP (FULL_SHARD unless its config says otherwise)");
            }
            "DEEPSPEED" => m.mapped(&field, "DeepSpeed (its stage below)"),
            "MULTI_GPU" => map_sharding(m, &field, Sharding::None, "data parallel"),
            "NO" => m.mapped(&field, "one process"),
            _ => m.refused(
                &field,
                format!("{kind}: not planned (FSDP, DEEPSPEED, MULTI_GPU, NO are)"),
            ),
        }
    }
    if let Some((field, n)) = m.count("num_processes", (1, 4096)) {
        m.intent.gpus = Some(n);
        m.mapped(&field, format!("gpus={n}"));
    }
    if let Some((field, precision)) = m.text("mixed_precision") {
        match precision.as_str() {
            "bf16" | "fp16" => {
                m.intent.compute_16 = true;
                m.mapped(
                    &field,
                    "16-bit compute (f16 stands in for bf16: the same bytes)",
                );
            }
            "no" => m.mapped(&field, "f32 compute"),
            _ => m.refused(
                &field,
                format!("{precision}: not planned (bf16, fp16, no are)"),
            ),
        }
    }
    zero(
        m,
        "deepspeed_config.zero_stage",
        "deepspeed_config.offload_optimizer_device",
        "deepspeed_config.offload_param_device",
    );
    if let Some((field, path)) = m.text("deepspeed_config.deepspeed_config_file") {
        m.mapped(
            &field,
            format!(
                "names {path}, whose ZeRO stage and offload are read when it is given with \
                 --launcher too"
            ),
        );
    }
    fsdp_config(m, "fsdp_config.");
    m.ignore_all(
        &[
            "compute_environment",
            "debug",
            "downcast_bf16",
            "enable_cpu_affinity",
            "machine_rank",
            "main_training_function",
            "num_machines",
            "rdzv_backend",
            "same_network",
            "tpu_env",
            "tpu_use_cluster",
            "tpu_use_sudo",
            "use_cpu",
            "gpu_ids",
            "main_process_port",
            "main_process_ip",
            "deepspeed_config*",
            "dynamo_config*",
            "parallelism_config*",
        ],
        "does not change what a GPU holds",
    );
    m.rest_unread("an accelerate config");
}

/// torchtune's configs name their launch in a comment (`tune run --nproc_per_node 2
/// lora_finetune_distributed --config ...`): the process count, and whether the recipe shards.
pub fn torchtune_launch(text: &str) -> Option<(usize, String, usize, bool)> {
    for (index, line) in text.lines().enumerate() {
        let Some(comment) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let words: Vec<&str> = comment.split_whitespace().collect();
        if words.len() < 2 || words[0] != "tune" || words[1] != "run" {
            continue;
        }
        let processes = words
            .windows(2)
            .find(|w| w[0] == "--nproc_per_node")
            .and_then(|w| w[1].parse::<usize>().ok())
            .unwrap_or(1);
        let distributed = words.iter().any(|w| w.ends_with("_distributed"));
        let command = words
            .iter()
            .take_while(|w| **w != "--config")
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        return Some((index + 1, command, processes, distributed));
    }
    None
}
