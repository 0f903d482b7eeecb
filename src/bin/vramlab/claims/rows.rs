//! The claims the report tests: each memory-saving tip, the run without it and with it, and
//! the figure the tip is about. Thresholds say how large an effect must be measured for the
//! claim to hold as usually stated; anything smaller but real holds partly.

/// The figure a claim is about.
#[derive(Clone, Copy, Debug, PartialEq)]
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
    /// The run with the budget must stop with out-of-memory (exit 3) and the next one run.
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

pub struct Claim {
    /// The setting, as the config names it.
    pub strategy: &'static str,
    /// The folklore, in a few words.
    pub claim: &'static str,
    pub preset: &'static str,
    /// `--set`s of the run without the tip, then with it.
    pub off: &'static [&'static str],
    pub on: &'static [&'static str],
    pub metric: Metric,
    /// on / off at or below this: the claim holds.
    pub holds_at: f64,
    /// The tip promises the same training: a clearly worse loss makes it hold only partly.
    pub same_training: bool,
}

const fn claim(
    strategy: &'static str,
    claim: &'static str,
    preset: &'static str,
    off: &'static [&'static str],
    on: &'static [&'static str],
    metric: Metric,
    holds_at: f64,
    same_training: bool,
) -> Claim {
    Claim {
        strategy,
        claim,
        preset,
        off,
        on,
        metric,
        holds_at,
        same_training,
    }
}

use Metric::*;

#[rustfmt::skip]
pub const CLAIMS: &[Claim] = &[
    claim("batch_size", "halve the batch, halve the activation memory", "spiral-mlp",
        &[], &["batch_size=256"], PeakInUse, 0.7, false),
    claim("eval_batch_size", "keep the eval batch small", "spiral-mlp",
        &["eval_batch_size=1024"], &["eval_batch_size=128"], EvalPeak, 0.7, true),
    claim("strategies.grad_accumulation", "accumulate gradients: same step, ~1/k activations",
        "spiral-mlp", &[], &["strategies.grad_accumulation=4"], PeakInUse, 0.6, true),
    claim("strategies.mixed_precision", "fp16 with a loss scaler halves activation memory",
        "spiral-mlp", &[], &["strategies.mixed_precision=f16"], PeakInUse, 0.75, true),
    claim("strategies.mixed_precision", "fp16 without a scaler trains as well", "spiral-mlp",
        &[], &["strategies.mixed_precision=f16_unscaled"], FinalLoss, 1.1, false),
    claim("strategies.eval_mode", "evaluate under no_grad or memory balloons", "spiral-mlp",
        &["strategies.eval_mode=autodiff"], &["strategies.eval_mode=no_grad"], EvalPeak, 0.8, true),
    claim("strategies.checkpointing", "checkpointing trades time for activation memory",
        "spiral-mlp", &[], &["strategies.checkpointing=balanced"], PeakInUse, 0.9, true),
    claim("strategies.loss_bookkeeping", "sum loss.item(), not the loss tensor", "spiral-mlp",
        &["strategies.loss_bookkeeping=graph"], &["strategies.loss_bookkeeping=scalar"], PeakInUse,
        0.5, true),
    claim("strategies.inplace_activation", "ReLU(inplace=True) saves memory", "spiral-mlp",
        &["strategies.inplace_activation=false"], &["strategies.inplace_activation=true"], PeakInUse,
        0.95, true),
    claim("strategies.free_cache", "empty_cache() frees GPU memory", "spiral-mlp", &[],
        &["strategies.free_cache=step"], PeakReserved, 0.8, true),
    claim("strategies.data_residency", "keep the data on the GPU: faster steps", "spiral-mlp",
        &[], &["strategies.data_residency=device"], MsPerStep, 0.95, true),
    claim("strategies.memory_pool", "tune the allocator's split size against fragmentation",
        "spiral-mlp", &[], &["strategies.memory_pool=exclusive"], PeakReserved, 0.9, true),
    claim("strategies.weight_dtype", "model.half() halves the model", "spiral-mlp", &[],
        &["strategies.weight_dtype=f16"], WeightBytes, 0.55, true),
    claim("strategies.weight_dtype", "int8 weights: a quarter of the bytes, same accuracy",
        "spiral-mlp", &[], &["strategies.weight_dtype=int8"], EvalWeightBytes, 0.3, true),
    claim("budget", "cap the memory fraction to behave like a smaller GPU", "spiral-mlp", &[],
        &[], StopsUnderBudget, 1.0, false),
    claim("model.hidden", "a smaller model needs less memory", "spiral-mlp", &[],
        &["model.hidden=[64,64]"], PeakInUse, 0.5, false),
    claim("model.kind", "GRU instead of LSTM saves memory", "sort-lstm", &[],
        &["model.kind=gru"], PeakInUse, 0.9, false),
    claim("data.seq_len", "shorter sequences need less memory", "sort-gru",
        &["data.seq_len=16"], &["data.seq_len=8"], PeakInUse, 0.75, false),
];
