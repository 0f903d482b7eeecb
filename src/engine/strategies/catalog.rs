//! The catalog of settings a person toggles to save memory: each strategy (and the plain fields
//! the folklore is about), what it does in one line, and each folklore claim about it with the
//! runs that test it. The page's panels, the `claims` report and the README's strategy list are
//! all read from, or checked against, this one table.

/// The figure a claim is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    PeakInUse,
    PeakReserved,
    /// In use during evaluation.
    EvalPeak,
    /// The weights as stored, measured when the run starts.
    WeightBytes,
    /// The int8 evaluation copy (on) against the f32 weights (off).
    EvalWeightBytes,
    MsPerStep,
    /// The final training loss (the claim is about training quality, not memory).
    FinalLoss,
    /// The run with the budget must stop with out-of-memory and the next one run.
    StopsUnderBudget,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Self::PeakInUse => "peak in use",
            Self::PeakReserved => "peak reserved",
            Self::EvalPeak => "eval peak in use",
            Self::WeightBytes => "weight bytes",
            Self::EvalWeightBytes => "eval weight bytes",
            Self::MsPerStep => "ms/step",
            Self::FinalLoss => "final loss",
            Self::StopsUnderBudget => "out-of-memory stop",
        }
    }
}

/// One folklore claim and the two runs that test it.
#[derive(Debug)]
pub struct Claim {
    /// The folklore, in a few words.
    pub folklore: &'static str,
    pub preset: &'static str,
    /// `path=value` overrides of the run without the tip, then with it.
    pub off: &'static [&'static str],
    pub on: &'static [&'static str],
    pub metric: Metric,
    /// on / off at or below this: the claim holds.
    pub holds_at: f64,
    /// The tip promises the same training: a clearly worse loss makes it hold only partly.
    pub same_training: bool,
}

/// A setting: its config field, how the page labels it, its values and what it does.
#[derive(Debug)]
pub struct Entry {
    /// The config field, as files, overrides and the URL name it.
    pub field: &'static str,
    pub label: &'static str,
    /// The values it takes; empty for a number or size.
    pub choices: &'static [&'static str],
    /// Choices that need an adapter with shader-f16.
    pub f16_choices: &'static [&'static str],
    /// What it does, in one line.
    pub explain: &'static str,
    pub claims: &'static [Claim],
}

impl Entry {
    /// A strategy (a field of `strategies`), as opposed to a plain field the folklore is about.
    pub fn is_strategy(&self) -> bool {
        self.field.starts_with("strategies.")
    }
}

/// Every entry with a field, in the order the `claims` report runs them.
pub fn find(field: &str) -> Option<&'static Entry> {
    CATALOG.iter().find(|entry| entry.field == field)
}

/// Every claim, with its entry.
pub fn claims() -> impl Iterator<Item = (&'static Entry, &'static Claim)> {
    CATALOG
        .iter()
        .flat_map(|entry| entry.claims.iter().map(move |claim| (entry, claim)))
}

use Metric::*;

const fn claim(
    folklore: &'static str,
    preset: &'static str,
    off: &'static [&'static str],
    on: &'static [&'static str],
    metric: Metric,
    holds_at: f64,
    same_training: bool,
) -> Claim {
    Claim {
        folklore,
        preset,
        off,
        on,
        metric,
        holds_at,
        same_training,
    }
}

const fn entry(
    field: &'static str,
    label: &'static str,
    choices: &'static [&'static str],
    explain: &'static str,
    claims: &'static [Claim],
) -> Entry {
    Entry {
        field,
        label,
        choices,
        f16_choices: &[],
        explain,
        claims,
    }
}

#[rustfmt::skip]
pub const CATALOG: &[Entry] = &[
    entry("batch_size", "batch size", &[], "samples per optimizer step", &[
        claim("halve the batch, halve the activation memory", "spiral-mlp",
            &[], &["batch_size=256"], PeakInUse, 0.7, false),
    ]),
    entry("eval_batch_size", "eval batch size", &[], "samples per evaluation batch", &[
        claim("keep the eval batch small", "spiral-mlp",
            &["eval_batch_size=1024"], &["eval_batch_size=128"], EvalPeak, 0.7, true),
    ]),
    entry("strategies.grad_accumulation", "gradient accumulation (k)", &[],
        "k micro-batches per optimizer step, each loss scaled by its share", &[
        claim("accumulate gradients: same step, ~1/k activations", "spiral-mlp",
            &[], &["strategies.grad_accumulation=4"], PeakInUse, 0.6, true),
    ]),
    Entry {
        f16_choices: &["f16", "f16_unscaled"],
        ..entry("strategies.mixed_precision", "mixed precision", &["off", "f16", "f16_unscaled"],
        "f16: f16 compute from f32 master weights with a loss scaler; f16_unscaled: model.half()", &[
        claim("fp16 with a loss scaler halves activation memory", "spiral-mlp",
            &[], &["strategies.mixed_precision=f16"], PeakInUse, 0.75, true),
        claim("fp16 without a scaler trains as well", "spiral-mlp",
            &[], &["strategies.mixed_precision=f16_unscaled"], FinalLoss, 1.1, false),
    ])},
    entry("strategies.eval_mode", "evaluation mode", &["no_grad", "autodiff"],
        "no_grad evaluates without recording a graph; autodiff records one per batch", &[
        claim("evaluate under no_grad or memory balloons", "spiral-mlp",
            &["strategies.eval_mode=autodiff"], &["strategies.eval_mode=no_grad"], EvalPeak, 0.8,
            true),
    ]),
    entry("strategies.checkpointing", "gradient checkpointing", &["none", "balanced"],
        "balanced: recompute cheap activations in backward instead of keeping them", &[
        claim("checkpointing trades time for activation memory", "spiral-mlp",
            &[], &["strategies.checkpointing=balanced"], PeakInUse, 0.9, true),
    ]),
    entry("strategies.loss_bookkeeping", "loss bookkeeping", &["scalar", "graph"],
        "graph keeps every step's loss, logits and layer outputs (total_loss += loss)", &[
        claim("sum loss.item(), not the loss tensor", "spiral-mlp",
            &["strategies.loss_bookkeeping=graph"], &["strategies.loss_bookkeeping=scalar"],
            PeakInUse, 0.5, true),
    ]),
    entry("strategies.inplace_activation", "in-place activation", &["true", "false"],
        "false: the activation writes a copy while its input stays alive", &[
        claim("ReLU(inplace=True) saves memory", "spiral-mlp",
            &["strategies.inplace_activation=false"], &["strategies.inplace_activation=true"],
            PeakInUse, 0.95, true),
    ]),
    entry("strategies.free_cache", "free cached memory", &["never", "step", "epoch"],
        "hand the allocator's unused pages back after every step or epoch", &[
        claim("empty_cache() frees GPU memory", "spiral-mlp",
            &[], &["strategies.free_cache=step"], PeakReserved, 0.8, true),
    ]),
    entry("strategies.data_residency", "data residency", &["host", "device"],
        "device: the training split lives on the GPU and batches are gathered there", &[
        claim("keep the data on the GPU: faster steps", "spiral-mlp",
            &[], &["strategies.data_residency=device"], MsPerStep, 0.95, true),
    ]),
    entry("strategies.memory_pool", "allocator pools", &["subslices", "exclusive"],
        "subslices: small allocations share pages; exclusive: a page each (fixed when the device \
         starts)", &[
        claim("tune the allocator's split size against fragmentation", "spiral-mlp",
            &[], &["strategies.memory_pool=exclusive"], PeakReserved, 0.9, true),
    ]),
    Entry {
        f16_choices: &["f16"],
        ..entry("strategies.weight_dtype", "weight precision", &["f32", "f16", "int8"],
        "f16: model.half(), gradients and optimizer state too; int8: quantized copy for \
         evaluation", &[
        claim("model.half() halves the model", "spiral-mlp",
            &[], &["strategies.weight_dtype=f16"], WeightBytes, 0.55, true),
        claim("int8 weights: a quarter of the bytes, same accuracy", "spiral-mlp",
            &[], &["strategies.weight_dtype=int8"], EvalWeightBytes, 0.3, true),
    ])},
    entry("strategies.kernels", "kernels", &["burn", "fused"],
        "fused: vramlab's own WGSL step for a ReLU MLP (3L+1 dispatches, no autodiff graph)", &[
        claim("fused kernels keep fewer intermediates", "spiral-mlp",
            &[], &["strategies.kernels=fused"], PeakInUse, 0.8, true),
    ]),
    entry("budget", "memory budget", &[],
        "pretend this GPU has only this much: 512MiB, 1536KiB, bytes, or 0.8 of the adapter's \
         largest buffer; empty for none", &[
        claim("cap the memory fraction to behave like a smaller GPU", "spiral-mlp",
            &[], &[], StopsUnderBudget, 1.0, false),
    ]),
    entry("model.hidden", "hidden widths", &[], "the MLP's hidden layer widths", &[
        claim("a smaller model needs less memory", "spiral-mlp",
            &[], &["model.hidden=[64,64]"], PeakInUse, 0.5, false),
    ]),
    entry("model.kind", "model", &["mlp", "cnn", "gru", "lstm", "transformer"],
        "the model family", &[
        claim("GRU instead of LSTM saves memory", "sort-lstm",
            &[], &["model.kind=gru"], PeakInUse, 0.9, false),
    ]),
    entry("data.seq_len", "sequence length", &[], "tokens per input sequence", &[
        claim("shorter sequences need less memory", "sort-gru",
            &["data.seq_len=16"], &["data.seq_len=8"], PeakInUse, 0.75, false),
    ]),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::config::{RunConfig, Strategies};
    use crate::engine::overrides::apply_overrides;
    use crate::engine::presets::preset;

    #[test]
    fn every_strategy_field_has_one_entry_and_every_entry_names_a_field() {
        let strategies = serde_json::to_value(Strategies::default()).unwrap();
        let fields: Vec<String> = strategies
            .as_object()
            .unwrap()
            .keys()
            .map(|name| format!("strategies.{name}"))
            .collect();
        for field in &fields {
            let count = CATALOG.iter().filter(|e| e.field == field).count();
            assert_eq!(count, 1, "{field} has {count} catalog entries");
        }
        let config = serde_json::to_value(RunConfig::default()).unwrap();
        for entry in CATALOG {
            let found = entry
                .field
                .split('.')
                .try_fold(&config, |value, key| value.get(key));
            assert!(found.is_some(), "{} is not a config field", entry.field);
        }
    }

    #[test]
    fn every_claim_runs_a_valid_config_on_both_sides() {
        for (entry, claim) in claims() {
            for sets in [claim.off, claim.on] {
                let config = apply_overrides(preset(claim.preset).unwrap(), sets.iter().copied())
                    .unwrap_or_else(|err| panic!("{}: {err}", entry.field));
                config
                    .validate()
                    .unwrap_or_else(|err| panic!("{} {sets:?}: {err}", entry.field));
            }
        }
    }
}
