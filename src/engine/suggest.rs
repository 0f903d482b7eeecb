//! What to switch on to fit a budget, by the analytic model: each single change a user could
//! make, kept when its predicted peak is within the budget. Estimates, and said to be.

use crate::engine::config::{
    AdapterDtype, Checkpointing, DataResidency, EvalMode, InputKind, LossBookkeeping, MemoryPool,
    MixedPrecision, Offload, OpPath, OptimizerKind, RunConfig, Sharding, Trainable, WeightDtype,
};
use crate::engine::device::Gpu;
use crate::engine::error::EngineError;
use crate::engine::memory::predict;
use crate::engine::outcome::Suggestion;
use crate::engine::overrides::apply_overrides;
use crate::engine::validate::Purpose;

/// Give an out-of-memory error its step (`None` while setting up) and what would fit; other
/// errors pass as they are.
pub fn explain(
    err: EngineError,
    step: Option<usize>,
    config: &RunConfig,
    gpu: &Gpu,
    purpose: Purpose,
) -> EngineError {
    let EngineError::OutOfMemory(mut oom) = err else {
        return err;
    };
    oom.step = step;
    let failure = Failure {
        budget_bytes: oom.budget_bytes,
        needed_at_least: oom.needed_bytes(),
        live_bytes_fit: oom.live_bytes_fit(),
        shader_f16: gpu.adapter.shader_f16,
        device_pool: gpu.memory_pool,
        purpose,
    };
    (oom.suggestions, oom.estimated_parameter_bytes) = what_fits(config, &failure);
    EngineError::OutOfMemory(oom)
}

/// One change, as the field and value a config file or override names.
fn candidates(config: &RunConfig, shader_f16: bool) -> Vec<(&'static str, String)> {
    let strategies = &config.strategies;
    let mut changes = Vec::new();
    if strategies.loss_bookkeeping != LossBookkeeping::Scalar {
        changes.push(("strategies.loss_bookkeeping", "scalar".to_string()));
    }
    if strategies.eval_mode == EvalMode::Autodiff {
        changes.push(("strategies.eval_mode", "no_grad".into()));
    }
    if strategies.data_residency == DataResidency::Device {
        changes.push(("strategies.data_residency", "host".into()));
    }
    // A transformer's first changes: what fusing its attention and loss saves comes at no
    // cost to the training, and on long sequences or large vocabularies it is most of the step.
    let attends = config.model.kind.family().attends();
    if attends && strategies.attention == OpPath::Naive {
        changes.push(("strategies.attention", "fused".into()));
    }
    if strategies.cross_entropy == OpPath::Naive {
        changes.push(("strategies.cross_entropy", "fused".into()));
    }
    // A transformer's blocks are recomputed whole, as PyTorch users checkpoint them; burn's
    // op-level policy is the one that applies to the other families.
    if attends && strategies.checkpointing != Checkpointing::Layers {
        changes.push(("strategies.checkpointing", "layers".into()));
    } else if !attends && strategies.checkpointing == Checkpointing::None {
        changes.push(("strategies.checkpointing", "balanced".into()));
    }
    if strategies.mixed_precision == MixedPrecision::Off && shader_f16 {
        changes.push(("strategies.mixed_precision", "f16".into()));
    }
    // Over several GPUs, more of the run sharded across them, the mildest first: the same
    // training, at the collectives' cost in time.
    if config.gpus > 1 {
        let more = match strategies.sharding {
            Sharding::None => &[Sharding::Optimizer, Sharding::Gradients, Sharding::Full][..],
            Sharding::Optimizer => &[Sharding::Gradients, Sharding::Full][..],
            Sharding::Gradients => &[Sharding::Full][..],
            Sharding::Full => &[][..],
        };
        for sharding in more {
            changes.push(("strategies.sharding", sharding.name().into()));
        }
    }
    // A fine-tune's changes: adapters instead of every weight, the frozen weights in f16 (what
    // QLoRA's quantized base does, at two bytes), an optimizer with less state.
    if attends && strategies.trainable == Trainable::All {
        changes.push(("strategies.trainable", "lora".into()));
    }
    if attends && strategies.weight_dtype == WeightDtype::F32 && shader_f16 {
        changes.push(("strategies.weight_dtype", "f16".into()));
    }
    // QLoRA's base: the frozen body in 4-bit blocks (valid once only adapters or the head
    // train, which the change before it makes).
    if attends && !matches!(strategies.weight_dtype, WeightDtype::Q4 | WeightDtype::Q8) {
        changes.push(("strategies.weight_dtype", "q4".into()));
    }
    // The same AdamW with its moments in 8-bit blocks first (a quarter of the state, the same
    // training), then Adafactor's factored second moment.
    if matches!(config.optimizer, OptimizerKind::Adam | OptimizerKind::Adamw) {
        changes.push(("optimizer", "adamw8bit".into()));
        changes.push(("optimizer", "adafactor".into()));
    }
    // What per-layer checkpointing keeps, on the host (torchtune's and TRL's activation
    // offloading): the same training, with copies each way a block.
    if strategies.offload == Offload::None {
        changes.push(("strategies.offload", "activations".into()));
    }
    for factor in [2, 4, 8, 16, 32] {
        let k = strategies.grad_accumulation * factor;
        changes.push(("strategies.grad_accumulation", k.to_string()));
    }
    for divisor in [2, 4, 8, 16] {
        let batch = config.eval_batch_size / divisor;
        changes.push(("eval_batch_size", batch.to_string()));
    }
    for divisor in [2, 4, 8, 16, 32] {
        changes.push(("batch_size", (config.batch_size / divisor).to_string()));
    }
    // Fewer tokens per sample (a fine-tune's maximum length): at batch 1 the only smaller
    // batch left, and what decides a long sequence's activations.
    if config.data.kind.input_kind() == InputKind::Tokens {
        for divisor in [2, 4] {
            changes.push(("data.seq_len", (config.data.seq_len / divisor).to_string()));
        }
    }
    changes
}

/// What a change needs made with it for the config to be valid: a 4- or 8-bit base keeps
/// LoRA's factors in f32 (QLoRA's; an f16 factor beside it trains to NaN), so factors kept in
/// the base's 16 bits (torchtune's) go to f32 with it, as every recipe format's 4-bit base
/// reads them.
fn companions(config: &RunConfig, field: &str, value: &str) -> Vec<(&'static str, String)> {
    let quantizes = field == "strategies.weight_dtype" && matches!(value, "q4" | "q8");
    if quantizes && config.strategies.adapter_dtype == AdapterDtype::Base {
        vec![("strategies.adapter_dtype", "f32".into())]
    } else {
        Vec::new()
    }
}

/// `config` with `field = value` and its companions made, companions first.
fn with_change(
    config: &RunConfig,
    field: &str,
    value: &str,
) -> Option<(RunConfig, Vec<(&'static str, String)>)> {
    let with = companions(config, field, value);
    let assignments: Vec<String> = with
        .iter()
        .map(|(path, v)| format!("{path}={v}"))
        .chain(std::iter::once(format!("{field}={value}")))
        .collect();
    let changed = apply_overrides(config.clone(), assignments.iter().map(String::as_str)).ok()?;
    Some((changed, with))
}

/// What the failed run and its device tell the suggestions.
pub struct Failure {
    pub budget_bytes: u64,
    /// What the run was seen to need at the failing check.
    pub needed_at_least: u64,
    pub live_bytes_fit: bool,
    pub shader_f16: bool,
    /// The pools the device runs with (fixed when it started).
    pub device_pool: MemoryPool,
    /// A change is offered only if the config it makes is valid for this.
    pub purpose: Purpose,
}

/// Changes whose predicted peak fits the budget, in the order a user would try them: the ones
/// that keep the training the same first, smaller batches last. Each field appears once, at the
/// mildest value that fits.
///
/// When the live bytes fit and only the pool's pages did not, exclusive pages come first: they
/// are sized to each allocation.
///
/// When what the failed run needed is above the config's own estimate, every estimate is scaled
/// up by the same factor, so a change is only offered if it fits with the model's error
/// corrected. Also returns the parameters' bytes, calibrated the same way.
pub fn what_fits(config: &RunConfig, failure: &Failure) -> (Vec<Suggestion>, u64) {
    let own = predict(config);
    let calibration = (failure.needed_at_least as f64 / own.peak.max(1) as f64).max(1.0);
    let mut fits = Vec::new();
    if failure.live_bytes_fit && failure.device_pool == MemoryPool::Subslices {
        fits.push(Suggestion {
            field: "strategies.memory_pool".into(),
            value: "exclusive".into(),
            estimated_peak_bytes: None,
            with: Vec::new(),
        });
    }
    for (field, value) in candidates(config, failure.shader_f16) {
        if fits.iter().any(|s: &Suggestion| s.field == field) {
            continue;
        }
        let Some((changed, with)) = with_change(config, field, &value) else {
            continue;
        };
        if changed.validate_for(failure.purpose).is_err() {
            continue;
        }
        let peak = predict(&changed).peak as f64 * calibration;
        if peak <= failure.budget_bytes as f64 {
            fits.push(Suggestion {
                field: field.to_string(),
                value,
                estimated_peak_bytes: Some(peak as u64),
                with: with
                    .into_iter()
                    .map(|(path, v)| format!("{path}={v}"))
                    .collect(),
            });
        }
    }
    if fits.is_empty() {
        fits.extend(together(config, failure, calibration));
    }
    (fits, (own.params as f64 * calibration) as u64)
}

/// When no single change fits: the candidates taken one after another, each kept only if it
/// lowers the estimate, until the estimate fits (a fine-tune of a large model needs several at
/// once: adapters, f16 weights, fused attention, checkpointing). `None` if all of them do not.
fn together(config: &RunConfig, failure: &Failure, calibration: f64) -> Option<Suggestion> {
    let mut changed = config.clone();
    let mut peak = predict(config).peak as f64 * calibration;
    let mut made: Vec<(&'static str, String)> = Vec::new();
    for (field, value) in candidates(config, failure.shader_f16) {
        // Each field once, at its first value that helps; but 4-bit weights may follow f16 ones
        // (a QLoRA base after a half-precision one) and replace them.
        let replaces_weights = field == "strategies.weight_dtype" && value == "q4";
        if !replaces_weights && made.iter().any(|(done, _)| *done == field) {
            continue;
        }
        let Some((next, with)) = with_change(&changed, field, &value) else {
            continue;
        };
        if next.validate_for(failure.purpose).is_err() {
            continue;
        }
        let next_peak = predict(&next).peak as f64 * calibration;
        if next_peak >= peak {
            continue;
        }
        (changed, peak) = (next, next_peak);
        made.retain(|(done, _)| *done != field);
        for (path, v) in with {
            made.retain(|(done, _)| *done != path);
            made.push((path, v));
        }
        made.push((field, value));
        if peak <= failure.budget_bytes as f64 {
            let (field, value) = made.pop().expect("one change was just made");
            return Some(Suggestion {
                field: field.to_string(),
                value,
                estimated_peak_bytes: Some(peak as u64),
                with: made
                    .into_iter()
                    .map(|(field, value)| format!("{field}={value}"))
                    .collect(),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::overrides::apply_override;
    use crate::engine::presets::preset;

    /// A LoRA whose factors are in the base's 16 bits (torchtune's `dtype: bf16`) is offered
    /// a 4-bit base with its factors in f32, the only way vramlab plans one (an f16 factor
    /// beside a quantized base trains to NaN), and the same change made alone is invalid.
    #[test]
    fn a_4_bit_base_comes_with_f32_factors_where_they_were_16_bit() {
        let config = apply_overrides(
            preset("llama2-7b").unwrap(),
            [
                "strategies.trainable=lora",
                "strategies.weight_dtype=f16",
                "strategies.adapter_dtype=base",
            ],
        )
        .unwrap();
        let alone = apply_override(&config, "strategies.weight_dtype=q4").unwrap();
        assert!(alone.validate_for(Purpose::Plan).is_err());
        let quantized = apply_overrides(
            config.clone(),
            ["strategies.adapter_dtype=f32", "strategies.weight_dtype=q4"],
        )
        .unwrap();
        let failure = Failure {
            budget_bytes: predict(&quantized).peak,
            needed_at_least: 0,
            live_bytes_fit: false,
            shader_f16: true,
            device_pool: MemoryPool::Subslices,
            purpose: Purpose::Plan,
        };
        let (fits, _) = what_fits(&config, &failure);
        let q4 = fits
            .iter()
            .find(|s| s.field == "strategies.weight_dtype")
            .expect("a 4-bit base is offered");
        assert_eq!(
            q4.assignments(),
            ["strategies.adapter_dtype=f32", "strategies.weight_dtype=q4"]
        );
    }
}
