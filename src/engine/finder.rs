//! The max-batch finder: the largest batch whose full training step (the optimizer's first
//! step included, when its state is created) and evaluation at the configured eval batch stay
//! within a budget. Every trial is a real run under the engine's budget; one that runs out of
//! memory is dropped, its memory released, and the search goes on.
//!
//! The same search answers the longest sequence (`data.seq_len`) at the configured batch, the
//! other question people bring about a fine-tune: [`Axis::SeqLen`].
//!
//! vramlab's search starts from the analytic model, calibrated by one measured run at a small
//! batch (bytes per sample from the measurement, as DeepSpeed's autotuner does), then gallops
//! from that guess and bisects. The other methods are the ones in use elsewhere, on the same
//! engine, for comparison.

use serde::{Deserialize, Serialize};
use web_time::Instant;

use crate::engine::config::{Budget, InputKind, RunConfig, limits};
use crate::engine::data::split_sizes;
use crate::engine::device::AdapterInfo;
use crate::engine::error::{ConfigError, EngineError};
use crate::engine::format::ByteFormat;
use crate::engine::memory::largest::{bindable, oversized};
use crate::engine::memory::predict;
use crate::engine::outcome::OutOfMemory;
use crate::engine::train::{RunOutcome, Runner};
use crate::engine::validate::Purpose;

/// Steps per trial: the first creates the optimizer's state, the second runs with it alive
/// (and ends with the evaluation).
const TRIAL_STEPS: usize = 2;
/// The linear search adds this much per trial, as the seeds do.
const LINEAR_STEP: usize = 2;
/// Lightning runs 3 steps per trial and no evaluation.
const LIGHTNING_STEPS: usize = 3;
/// Linear searches stop here: they are O(B).
pub const MAX_LINEAR_TRIALS: usize = 48;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Add 2 to the batch until out of memory.
    SeedLinear,
    /// Accelerate's `find_executable_batch_size`: start at the configured batch, x0.9 per OOM.
    Accelerate,
    /// Lightning's `scale_batch_size(mode="power")`: double until OOM, keep the last that fit.
    LightningPower,
    /// Lightning's `mode="binsearch"`: double until OOM, then bisect.
    LightningBinsearch,
    /// Calibrated prediction, gallop, bisect.
    Vramlab,
}

impl Method {
    pub const ALL: [Method; 5] = [
        Self::SeedLinear,
        Self::Accelerate,
        Self::LightningPower,
        Self::LightningBinsearch,
        Self::Vramlab,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::SeedLinear => "seed-linear",
            Self::Accelerate => "accelerate",
            Self::LightningPower => "lightning-power",
            Self::LightningBinsearch => "lightning-binsearch",
            Self::Vramlab => "vramlab",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// What a search varies: the batch, or the tokens per sample (`data.seq_len`) at the
/// configured batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Axis {
    #[default]
    Batch,
    SeqLen,
}

impl Axis {
    /// The config field the search varies, as errors and notes name it.
    pub fn field(self) -> &'static str {
        match self {
            Self::Batch => "batch_size",
            Self::SeqLen => "data.seq_len",
        }
    }

    fn is_batch(&self) -> bool {
        *self == Self::Batch
    }

    /// Set the field this axis varies to `value`, and nothing else.
    fn set(self, config: &mut RunConfig, value: usize) {
        match self {
            Self::Batch => config.batch_size = value,
            Self::SeqLen => config.data.seq_len = value,
        }
    }

    /// The range a config allows the field in.
    fn limits(self, config: &RunConfig) -> (usize, usize) {
        match self {
            Self::Batch => limits::BATCH_SIZE,
            Self::SeqLen => config.data.seq_len_limits(),
        }
    }
}

/// One trial: a batch (and on a sequence search its `data.seq_len`), whether it fit, and what it
/// measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub batch: usize,
    /// The sequence length tried, on a search over [`Axis::SeqLen`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq_len: Option<usize>,
    pub fits: bool,
    /// The trial's high-water mark of bytes in use (up to the out-of-memory point when it did
    /// not fit).
    pub peak_in_use_bytes: u64,
    pub peak_reserved_bytes: u64,
    /// Where it ran out, and what the analytic model said would fit, when it did.
    pub out_of_memory: Option<Box<OutOfMemory>>,
}

impl Trial {
    /// The value the search varied: the batch, or the sequence length.
    pub fn value(&self) -> usize {
        self.seq_len.unwrap_or(self.batch)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Search {
    pub method: Method,
    /// What the search varied (absent from the JSON of a batch search, as before there was a
    /// choice).
    #[serde(default, skip_serializing_if = "Axis::is_batch")]
    pub axis: Axis,
    /// The largest batch found to fit; `None` when none did, or on a sequence search.
    pub max_batch: Option<usize>,
    /// The longest sequence found to fit at the configured batch, on a sequence search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_seq_len: Option<usize>,
    /// The analytic model's guess, calibrated (vramlab only), on the search's axis.
    pub predicted_batch: Option<usize>,
    pub trials: usize,
    pub ooms: usize,
    pub seconds: f64,
    pub trials_log: Vec<Trial>,
    /// Limits met on the way: the training split, the linear search's trial cap.
    pub notes: Vec<String>,
}

/// What the search is about: the config (its strategies are kept), the budget, the step.
pub struct Question<'a> {
    pub config: &'a RunConfig,
    /// The batch, or the sequence length at the configured batch.
    pub axis: Axis,
    pub budget_bytes: u64,
    /// The value searched is a multiple of this.
    pub multiple_of: usize,
    /// Stop a search after this many trials; what it found so far is then a lower bound.
    pub max_trials: Option<usize>,
    /// Trials as runs, or as plans: then the training split does not bound the batch (a plan
    /// needs no data), the batch limit does.
    pub purpose: Purpose,
    /// A bound of the caller's on the axis, with its reason: plans stop where a tensor
    /// outgrows what the adapter can bind (see [`plannable`]).
    pub bound: Option<(usize, String)>,
}

/// `config` with the axis's field set to `value` (a sequence search's eval batch is the
/// config's; a batch search's at most the batch).
fn with_value(config: &RunConfig, axis: Axis, value: usize) -> RunConfig {
    let mut config = config.clone();
    axis.set(&mut config, value);
    if axis == Axis::Batch {
        config.eval_batch_size = config.eval_batch_size.min(value);
    }
    config
}

/// The largest value on `axis` whose tensors `adapter` can bind, for a plan of `config`; `None`
/// when not even the smallest can be planned.
pub fn plannable(config: &RunConfig, adapter: &AdapterInfo, axis: Axis) -> Option<usize> {
    let fits = |value: usize| oversized(&with_value(config, axis, value), adapter).is_empty();
    let (least, most) = axis.limits(config);
    if !fits(least) {
        return None;
    }
    let (mut good, mut bad) = (least, most + 1);
    while bad - good > 1 {
        let mid = (good + bad) / 2;
        if fits(mid) { good = mid } else { bad = mid }
    }
    Some(good)
}

/// Where a search of plans of `config` on `adapter` along `axis` stops ([`plannable`]), with
/// the reason it reports; the tensor that does not bind when not even the smallest value can
/// be planned.
pub fn plan_bound(
    config: &RunConfig,
    adapter: &AdapterInfo,
    axis: Axis,
) -> Result<(usize, String), ConfigError> {
    let Some(most) = plannable(config, adapter, axis) else {
        let least = axis.limits(config).0;
        bindable(&with_value(config, axis, least), adapter)?;
        return Err(ConfigError::invalid(
            axis.field(),
            format!("not even {least} can be planned on this adapter"),
        ));
    };
    let what = match axis {
        Axis::Batch => format!("batch {most}"),
        Axis::SeqLen => format!("{most} tokens per sample"),
    };
    Ok((
        most,
        format!(
            "above {what} a tensor outgrows the largest binding a device states ({}): \
             plans stop there; the budget may hold more",
            ByteFormat::MIB_OR_GIB.of(adapter.max_binding_size)
        ),
    ))
}

impl Question<'_> {
    /// The largest value the config allows on the axis, before the caller's bound, and what
    /// a search that reaches it reports.
    fn allowed(&self) -> (usize, String) {
        let config = self.config;
        match (self.axis, self.purpose) {
            (Axis::Batch, Purpose::Run) => {
                let train = split_sizes(&config.data).0;
                (
                    train,
                    format!(
                        "the training split has {train} samples: no larger batch was tried, the \
                         budget may hold more"
                    ),
                )
            }
            (Axis::Batch, Purpose::Plan) => {
                let most = limits::BATCH_SIZE.1;
                (
                    most,
                    format!(
                        "{most} is the largest batch a config allows: the budget may hold more"
                    ),
                )
            }
            (Axis::SeqLen, purpose) => {
                let data = &config.data;
                // A query task's sample is twice its seq_len (the queries follow the input).
                let per_seq = data.sample_tokens() / data.seq_len.max(1);
                let longest = data.seq_len_limits().1;
                let mut most = (
                    longest,
                    format!(
                        "{longest} tokens is the longest data.seq_len a config allows: the \
                         budget may hold more"
                    ),
                );
                let positions = config.model.positions / per_seq.max(1);
                if config.model.positions != 0 && positions < most.0 {
                    most = (
                        positions,
                        format!(
                            "model.positions = {} bounds the sequence: the budget may hold more",
                            config.model.positions
                        ),
                    );
                }
                let host = limits::HOST_TOKENS / (data.samples * per_seq).max(1);
                if purpose == Purpose::Run && host < most.0 {
                    most = (
                        host,
                        format!(
                            "{} samples of {host} tokens are as many as a run generates in host \
                             memory: fewer samples, or --plan, for longer",
                            data.samples
                        ),
                    );
                }
                most
            }
        }
    }

    /// The smallest and largest value a trial may use: a multiple of N; a batch at least the
    /// gradient accumulation's micro-batch count; at most what [`Self::allowed`] says and the
    /// caller's bound.
    fn bounds(&self) -> (usize, usize) {
        let n = self.multiple_of;
        let least = match self.axis {
            Axis::Batch => self.config.strategies.grad_accumulation.max(1),
            Axis::SeqLen => self.axis.limits(self.config).0,
        };
        let lo = least.div_ceil(n) * n;
        let allowed = self.allowed().0;
        let most = self
            .bound
            .as_ref()
            .map_or(allowed, |(value, _)| allowed.min(*value));
        (lo, most / n * n)
    }

    fn config_for(&self, value: usize, steps: usize, evaluate: bool) -> RunConfig {
        let mut config = self.config.clone();
        self.axis.set(&mut config, value);
        config.steps = steps;
        config.budget = Some(Budget::Bytes(self.budget_bytes));
        if !evaluate {
            // Lightning's trials: no evaluation (an eval batch of 1 is the least it can be).
            config.eval_batch_size = 1;
        }
        config.eval_every = 0;
        config
    }
}

/// Refuse what no search can answer, naming the field.
pub fn check(question: &Question) -> Result<(), ConfigError> {
    if question.multiple_of == 0 {
        return Err(ConfigError::out_of_range("--multiple-of", 0, "1..=65536"));
    }
    if question.axis == Axis::SeqLen && question.config.data.input_kind() != InputKind::Tokens {
        return Err(ConfigError::invalid(
            "data.kind",
            format!(
                "{:?} samples have no sequence length: the longest sequence is searched for \
                 token tasks (a stream or a query task)",
                question.config.data.kind
            ),
        ));
    }
    let (lo, hi) = question.bounds();
    if lo > hi {
        let what = match question.axis {
            Axis::Batch => format!(
                "batch between the gradient accumulation's {} and",
                question.config.strategies.grad_accumulation
            ),
            Axis::SeqLen => format!(
                "data.seq_len between {} and",
                question.axis.limits(question.config).0
            ),
        };
        let (most, why) = question.allowed();
        return Err(ConfigError::invalid(
            "--multiple-of",
            format!("{} leaves no {what} {most} ({why})", question.multiple_of),
        ));
    }
    let params = predict(question.config).params;
    if question.budget_bytes <= params {
        return Err(ConfigError::invalid(
            "--budget",
            format!(
                "{} bytes is not more than the model's parameters alone ({params} bytes); \
                 no {} can fit",
                question.budget_bytes,
                match question.axis {
                    Axis::Batch => "batch",
                    Axis::SeqLen => "sequence",
                }
            ),
        ));
    }
    Ok(())
}

/// Runs trials, logging each, and reports progress.
struct Trials<'a, 'q, R> {
    question: &'a Question<'q>,
    runner: &'a mut R,
    log: Vec<Trial>,
    exhausted: bool,
    on_trial: &'a mut dyn FnMut(&Trial),
}

impl<R: Runner> Trials<'_, '_, R> {
    async fn run(
        &mut self,
        value: usize,
        steps: usize,
        evaluate: bool,
    ) -> Result<bool, EngineError> {
        if self
            .question
            .max_trials
            .is_some_and(|max| self.log.len() >= max)
        {
            // Out of trials: counted as not fitting, so every search winds down to what it
            // has seen fit.
            self.exhausted = true;
            return Ok(false);
        }
        let config = self.question.config_for(value, steps, evaluate);
        let (batch, seq_len) = match self.question.axis {
            Axis::Batch => (value, None),
            Axis::SeqLen => (config.batch_size, Some(value)),
        };
        let trial = match self.runner.train(config).await? {
            RunOutcome::Fit(timeline) => Trial {
                batch,
                seq_len,
                fits: true,
                peak_in_use_bytes: timeline.summary.high_water_in_use_bytes,
                peak_reserved_bytes: timeline.summary.high_water_reserved_bytes,
                out_of_memory: None,
            },
            RunOutcome::OutOfMemory(oom) => Trial {
                batch,
                seq_len,
                fits: false,
                peak_in_use_bytes: oom.in_use_bytes + oom.asked_bytes,
                peak_reserved_bytes: oom.reserved_bytes,
                out_of_memory: Some(oom),
            },
        };
        (self.on_trial)(&trial);
        let fits = trial.fits;
        self.log.push(trial);
        Ok(fits)
    }

    fn measured(&self, value: usize) -> Option<&Trial> {
        self.log.iter().find(|t| t.value() == value)
    }
}

/// Search with `method`, calling `on_trial` after every trial.
pub async fn find<R: Runner>(
    question: &Question<'_>,
    method: Method,
    runner: &mut R,
    on_trial: &mut dyn FnMut(&Trial),
) -> Result<Search, EngineError> {
    check(question)?;
    if question.axis == Axis::SeqLen && method != Method::Vramlab {
        return Err(ConfigError::invalid(
            "--method",
            format!(
                "{} searches batches; the longest sequence is searched by vramlab's method",
                method.name()
            ),
        )
        .into());
    }
    let started = Instant::now();
    let mut trials = Trials {
        question,
        runner,
        log: Vec::new(),
        exhausted: false,
        on_trial,
    };
    let (lo, hi) = question.bounds();
    let n = question.multiple_of;
    let mut notes = Vec::new();
    let mut predicted_batch = None;
    let found = match method {
        Method::Vramlab => {
            let (found, guess) = vramlab_search(&mut trials, lo, hi, n).await?;
            predicted_batch = guess;
            found
        }
        Method::SeedLinear => {
            let mut best = None;
            let mut batch = lo;
            loop {
                if trials.log.len() >= MAX_LINEAR_TRIALS {
                    notes.push(format!(
                        "stopped after {MAX_LINEAR_TRIALS} trials (O(B) search)"
                    ));
                    break;
                }
                if batch > hi || !trials.run(batch, TRIAL_STEPS, true).await? {
                    break;
                }
                best = Some(batch);
                batch += LINEAR_STEP.div_ceil(n) * n;
            }
            best
        }
        Method::Accelerate => {
            let mut batch = question.config.batch_size.clamp(lo, hi) / n * n;
            loop {
                if trials.run(batch, TRIAL_STEPS, true).await? {
                    break Some(batch);
                }
                let next = ((batch as f64 * 0.9) as usize) / n * n;
                if next < lo || next == batch {
                    break None;
                }
                batch = next;
            }
        }
        Method::LightningPower | Method::LightningBinsearch => {
            // Lightning starts at 2 and doubles.
            let mut batch = (2usize.div_ceil(n) * n).max(lo);
            let mut fit = None;
            let mut failed = None;
            while batch <= hi {
                if trials.run(batch, LIGHTNING_STEPS, false).await? {
                    fit = Some(batch);
                    batch *= 2;
                } else {
                    failed = Some(batch);
                    break;
                }
            }
            if let (Method::LightningBinsearch, Some(mut good), Some(mut bad)) =
                (method, fit, failed)
            {
                while bad - good > n {
                    let mid = (good + bad) / 2 / n * n;
                    let mid = if mid <= good { good + n } else { mid };
                    if trials.run(mid, LIGHTNING_STEPS, false).await? {
                        good = mid;
                    } else {
                        bad = mid;
                    }
                }
                fit = Some(good);
            }
            fit
        }
    };
    if found == Some(hi) {
        notes.push(match &question.bound {
            Some((bound, reason)) if *bound / n * n == hi => reason.clone(),
            _ => question.allowed().1,
        });
    }
    if trials.exhausted {
        notes.push(format!(
            "stopped at the limit of {} trials: the batch found is a lower bound",
            trials.log.len()
        ));
    }
    let ooms = trials.log.iter().filter(|t| !t.fits).count();
    let (max_batch, max_seq_len) = match question.axis {
        Axis::Batch => (found, None),
        Axis::SeqLen => (None, found),
    };
    Ok(Search {
        method,
        axis: question.axis,
        max_batch,
        max_seq_len,
        predicted_batch,
        trials: trials.log.len(),
        ooms,
        seconds: started.elapsed().as_secs_f64(),
        trials_log: trials.log,
        notes,
    })
}

/// Calibrate at a small batch, guess, gallop from the guess to a bracket, bisect.
async fn vramlab_search<R: Runner>(
    trials: &mut Trials<'_, '_, R>,
    lo: usize,
    hi: usize,
    n: usize,
) -> Result<(Option<usize>, Option<usize>), EngineError> {
    let question = trials.question;
    let predicted_peak = |value: usize| {
        let mut config = question.config.clone();
        question.axis.set(&mut config, value);
        predict(&config).peak as f64
    };
    // The largest multiple of N whose predicted peak, times `factor`, is within the budget
    // (the prediction grows with the batch, so bisect on it).
    let solve = |factor: f64| {
        let fits = |b: usize| factor * predicted_peak(b) <= question.budget_bytes as f64;
        let (mut good, mut bad) = (lo, hi + n);
        if !fits(lo) {
            return lo;
        }
        while bad - good > n {
            let mid = ((good + bad) / 2 / n * n).max(good + n);
            if fits(mid) { good = mid } else { bad = mid }
        }
        good
    };
    // Calibration: one run at half the uncalibrated answer (likely to fit, and large enough
    // that the per-sample bytes dominate the fixed ones), halved again while it does not fit;
    // the ratio of what the allocator needed (in use or its pages, whichever binds) to the
    // prediction there corrects the prediction everywhere.
    let mut small = (solve(1.0) / 2 / n * n).clamp(lo, hi);
    let mut bad: Option<usize> = None;
    while !trials.run(small, TRIAL_STEPS, true).await? {
        bad = Some(small);
        if small == lo {
            return Ok((None, None));
        }
        small = (small / 2 / n * n).max(lo);
    }
    let mut good = small;
    let need_at = |trial: &Trial| trial.peak_in_use_bytes.max(trial.peak_reserved_bytes) as f64;
    let factor =
        need_at(trials.measured(small).expect("just run")) / predicted_peak(small).max(1.0);
    let guess = solve(factor).clamp(good, bad.map_or(hi, |b| b - n));
    // A calibration that had to halve has bracketed the answer within a factor of two:
    // bisecting that takes about log2(B) trials, no more than an exact guess would leave, and a
    // guess taken where the pool's pages bind (reserved far above in use at the small batch)
    // can land far below the answer and need a gallop before the bisection.
    if let Some(bad) = bad {
        let found = bisect(trials, Some(good), bad, lo, n).await?;
        return Ok((found, Some(guess)));
    }

    // Bracket the answer around the guess with steps of an eighth of it, doubling, so a guess
    // within 12% is bracketed by one more trial and the bisection after it takes about
    // log2(B) - 3 trials. What the allocator needs moves in whole pages, so refining on the
    // estimate itself only creeps; halving the bracket does not.
    let mut step = (guess / 8 / n * n).max(n);
    let guess_fits = guess <= good || trials.run(guess, TRIAL_STEPS, true).await?;
    if guess_fits {
        good = good.max(guess);
        loop {
            let limit = bad.map_or(hi, |b| b - n);
            if good >= limit {
                break;
            }
            let next = (good + step).min(limit);
            if trials.run(next, TRIAL_STEPS, true).await? {
                good = next;
                step *= 2;
            } else {
                bad = Some(next);
                break;
            }
        }
    } else {
        bad = Some(guess);
        let mut probe = guess;
        loop {
            let next = probe.saturating_sub(step).max(good);
            if next == good || trials.run(next, TRIAL_STEPS, true).await? {
                good = next;
                break;
            }
            bad = Some(next);
            probe = next;
            step *= 2;
        }
    }
    let found = match bad {
        Some(bad) => bisect(trials, Some(good), bad, lo, n).await?,
        None => Some(good),
    };
    Ok((found, Some(guess)))
}

/// Between a batch that fit (or none) and one that did not, find the largest that fits.
async fn bisect<R: Runner>(
    trials: &mut Trials<'_, '_, R>,
    good: Option<usize>,
    mut bad: usize,
    lo: usize,
    n: usize,
) -> Result<Option<usize>, EngineError> {
    let mut good = match good {
        Some(good) => good,
        None => {
            if !trials.run(lo, TRIAL_STEPS, true).await? {
                return Ok(None);
            }
            lo
        }
    };
    while bad - good > n {
        let mid = ((good + bad) / 2 / n * n).max(good + n);
        if trials.run(mid, TRIAL_STEPS, true).await? {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Ok(Some(good))
}

impl Search {
    /// What the search found on its axis: the largest batch or the longest sequence.
    pub fn found(&self) -> Option<usize> {
        match self.axis {
            Axis::Batch => self.max_batch,
            Axis::SeqLen => self.max_seq_len,
        }
    }

    /// When nothing fit: the smallest value tried, and where it ran out.
    pub fn smallest_failure(&self) -> Option<(usize, &OutOfMemory)> {
        self.trials_log
            .iter()
            .filter_map(|t| t.out_of_memory.as_deref().map(|oom| (t.value(), oom)))
            .min_by_key(|(value, _)| *value)
    }
}
