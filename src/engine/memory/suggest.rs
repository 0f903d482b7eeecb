//! What to switch on to fit a budget, by the analytic model: each single change a user could
//! make, kept when its predicted peak is within the budget. Estimates, and said to be.

use crate::engine::config::{
    Checkpointing, DataResidency, EvalMode, LossBookkeeping, MemoryPool, MixedPrecision, RunConfig,
};
use crate::engine::overrides::apply_override;

use super::analytic::predict;

const MIB: f64 = (1u64 << 20) as f64;

/// One change, written as the `--set` that makes it.
fn candidates(config: &RunConfig, shader_f16: bool) -> Vec<String> {
    let strategies = &config.strategies;
    let mut changes = Vec::new();
    if strategies.loss_bookkeeping == LossBookkeeping::Graph {
        changes.push("strategies.loss_bookkeeping=scalar".to_string());
    }
    if strategies.eval_mode == EvalMode::Autodiff {
        changes.push("strategies.eval_mode=no_grad".into());
    }
    if strategies.data_residency == DataResidency::Device {
        changes.push("strategies.data_residency=host".into());
    }
    if strategies.checkpointing == Checkpointing::None {
        changes.push("strategies.checkpointing=balanced".into());
    }
    if strategies.mixed_precision == MixedPrecision::Off && shader_f16 {
        changes.push("strategies.mixed_precision=f16".into());
    }
    for factor in [2, 4, 8, 16, 32] {
        changes.push(format!(
            "strategies.grad_accumulation={}",
            strategies.grad_accumulation * factor
        ));
    }
    for divisor in [2, 4, 8, 16] {
        changes.push(format!(
            "eval_batch_size={}",
            config.eval_batch_size / divisor
        ));
    }
    for divisor in [2, 4, 8, 16, 32] {
        changes.push(format!("batch_size={}", config.batch_size / divisor));
    }
    changes
}

/// Changes whose predicted peak fits `budget_bytes`, in the order a user would try them: the
/// ones that keep the training the same first, smaller batches last. Each alternative of a kind
/// (accumulation factor, eval batch, batch) appears once, at the mildest value that fits.
///
/// When the live bytes fit and only the pool's pages did not (`live_bytes_fit`), exclusive pages
/// come first: they are sized to each allocation.
///
/// `needed_at_least` is what the failed run was seen to need (the allocator's figure at the
/// failing check); when that is above the config's own estimate, every estimate is scaled up by
/// the same factor, so a change is only offered if it fits with the model's error corrected.
pub fn what_fits(
    config: &RunConfig,
    budget_bytes: u64,
    needed_at_least: u64,
    shader_f16: bool,
    live_bytes_fit: bool,
) -> Vec<String> {
    let own_estimate = predict(config).peak.max(1);
    let calibration = (needed_at_least as f64 / own_estimate as f64).max(1.0);
    let mut fits = Vec::new();
    let mut pool_hint = None;
    if live_bytes_fit && config.strategies.memory_pool == MemoryPool::Subslices {
        pool_hint = Some(
            "--set strategies.memory_pool=exclusive (the live bytes fit; exclusive pages are \
             sized to each allocation; a new process starts with them)"
                .to_string(),
        );
    }
    let mut kinds_taken: Vec<String> = Vec::new();
    for change in candidates(config, shader_f16) {
        let kind = change.split('=').next().unwrap_or_default().to_string();
        if kinds_taken.contains(&kind) {
            continue;
        }
        let Ok(changed) = apply_override(config, &change) else {
            continue;
        };
        if changed.validate().is_err() {
            continue;
        }
        let peak = predict(&changed).peak as f64 * calibration;
        if peak <= budget_bytes as f64 {
            fits.push(format!(
                "--set {change} (estimated peak {:.3} MiB)",
                peak / MIB
            ));
            kinds_taken.push(kind);
        }
    }
    if fits.is_empty() && pool_hint.is_none() {
        let floor = predict(config).params as f64 * calibration / MIB;
        fits.push(format!(
            "no single change is estimated to fit; the parameters alone are {floor:.3} MiB: \
             a smaller model or a larger budget"
        ));
    }
    pool_hint.into_iter().chain(fits).collect()
}
