//! What a recipe asks for, in vramlab's terms, whatever its format wrote: filled by the format's
//! mapper, turned into `--set` assignments in one order so that two recipes asking the same
//! thing give the same config.

use serde::Serialize;

use crate::engine::config::{OpPath, OptimizerKind, Sharding};

/// The model a recipe names.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelRef {
    /// A Hub id (`org/name`) or a local directory or config.json, as the recipe wrote it.
    Hub(String),
    /// A torchtune model builder, by its published shapes: a config.json that states them.
    Builder {
        component: String,
        config_json: String,
    },
}

impl ModelRef {
    pub fn shown(&self) -> &str {
        match self {
            Self::Hub(id) => id,
            Self::Builder { component, .. } => component,
        }
    }
}

/// How the base weights are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// f32 (PyTorch's default load).
    F32,
    /// 16-bit (bf16 or f16; f16 stands in for bf16 in bytes).
    Half,
    /// bitsandbytes 4-bit (QLoRA's NF4).
    Q4,
    /// bitsandbytes 8-bit.
    Q8,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Intent {
    pub model: Option<ModelRef>,
    pub lora: bool,
    pub lora_rank: Option<usize>,
    pub lora_alpha: Option<f64>,
    /// LoRA's factors in the base's type rather than f32 (torchtune; PEFT upcasts them).
    pub adapters_in_base_type: bool,
    pub base: Option<Base>,
    /// 16-bit compute (autocast) over the stored weights.
    pub compute_16: bool,
    pub seq_len: Option<usize>,
    pub batch: Option<usize>,
    pub eval_batch: Option<usize>,
    pub accumulation: Option<usize>,
    pub checkpointing: Option<bool>,
    pub offload_activations: bool,
    pub optimizer: Option<OptimizerKind>,
    pub attention: Option<OpPath>,
    pub cross_entropy: Option<OpPath>,
    pub gpus: Option<usize>,
    pub sharding: Option<Sharding>,
    pub offload_optimizer: bool,
    /// Parameters, gradients and optimizer state on the host (FSDP's offload, ZeRO-3's
    /// offload_param with offload_optimizer).
    pub offload_params: bool,
}

impl Intent {
    /// The `--set` assignments that make vramlab's config this intent, applied over the
    /// model's base run (`--hf-config`'s).
    pub fn sets(&self) -> Vec<String> {
        let mut sets = Vec::new();
        let mut set = |path: &str, value: String| sets.push(format!("{path}={value}"));
        if self.lora {
            set("strategies.trainable", "lora".into());
            if let Some(rank) = self.lora_rank {
                set("strategies.lora_rank", rank.to_string());
            }
            if let Some(alpha) = self.lora_alpha {
                set("strategies.lora_alpha", number(alpha));
            }
            // torchtune's factors are in the base's type; over a quantized base vramlab keeps
            // them in f32 (`Strategies::adapters_in_f32`; validation refuses `base` there).
            if self.adapters_in_base_type && self.base == Some(Base::Half) {
                set("strategies.adapter_dtype", "base".into());
            }
        }
        match (self.base.unwrap_or(Base::F32), self.compute_16) {
            (Base::Q4, _) => set("strategies.weight_dtype", "q4".into()),
            (Base::Q8, _) => set("strategies.weight_dtype", "q8".into()),
            (Base::Half, _) => set("strategies.weight_dtype", "f16".into()),
            (Base::F32, true) => set("strategies.mixed_precision", "f16".into()),
            (Base::F32, false) => {}
        }
        if let Some(seq_len) = self.seq_len {
            set("data.seq_len", seq_len.to_string());
        }
        // vramlab's batch is what one optimizer step sees, split into `grad_accumulation`
        // micro-batches; a recipe's batch is the micro-batch.
        let accumulation = self.accumulation.unwrap_or(1);
        if let Some(batch) = self.batch {
            set("batch_size", batch.saturating_mul(accumulation).to_string());
        }
        if let Some(batch) = self.eval_batch.or(self.batch) {
            set("eval_batch_size", batch.to_string());
        }
        if let Some(steps) = self.accumulation {
            set("strategies.grad_accumulation", steps.to_string());
        }
        if let Some(on) = self.checkpointing {
            set(
                "strategies.checkpointing",
                if on { "layers" } else { "none" }.into(),
            );
        }
        if let Some(optimizer) = self.optimizer {
            set("optimizer", optimizer.name().into());
        }
        if let Some(path) = self.attention {
            set("strategies.attention", path.name().into());
        }
        if let Some(path) = self.cross_entropy {
            set("strategies.cross_entropy", path.name().into());
        }
        if let Some(sharding) = self.sharding {
            set("strategies.sharding", sharding.name().into());
        }
        if self.offload_params {
            set("strategies.offload", "parameters".into());
        } else if self.offload_optimizer {
            set("strategies.offload", "optimizer".into());
        } else if self.offload_activations {
            set("strategies.offload", "activations".into());
        }
        if let Some(gpus) = self.gpus {
            set("gpus", gpus.to_string());
        }
        sets
    }
}

/// A number as `--set` takes it: whole numbers without a fraction.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        value.to_string()
    }
}
