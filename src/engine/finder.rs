//! The max-batch finder: the largest batch whose full training step (the optimizer's first
//! step included, when its state is created) and evaluation at the configured eval batch stay
//! within a budget. Every trial is a real run under the engine's budget; one that runs out of
//! memory is dropped, its memory released, and the search goes on.
//!
//! vramlab's search starts from the analytic model, calibrated by one measured run at a small
//! batch (bytes per sample from the measurement, as DeepSpeed's autotuner does), then gallops
//! from that guess and bisects. The other methods are the ones in use elsewhere, on the same
//! engine, for comparison.

use serde::{Deserialize, Serialize};
use web_time::Instant;

use crate::engine::config::{Budget, RunConfig, limits};
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

/// One trial: a batch, whether it fit, and what it measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    pub batch: usize,
    pub fits: bool,
    /// The trial's high-water mark of bytes in use (up to the out-of-memory point when it did
    /// not fit).
    pub peak_in_use_bytes: u64,
    pub peak_reserved_bytes: u64,
    /// Where it ran out, and what the analytic model said would fit, when it did.
    pub out_of_memory: Option<Box<OutOfMemory>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Search {
    pub method: Method,
    /// The largest batch found to fit; `None` when none did.
    pub max_batch: Option<usize>,
    /// The analytic model's guess, calibrated (vramlab only).
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
    pub budget_bytes: u64,
    pub multiple_of: usize,
    /// Stop a search after this many trials; what it found so far is then a lower bound.
    pub max_trials: Option<usize>,
    /// Trials as runs, or as plans: then the training split does not bound the batch (a plan
    /// needs no data), the batch limit does.
    pub purpose: Purpose,
    /// A bound of the caller's, with its reason: plans stop where a tensor outgrows what the
    /// adapter can bind (see [`plannable_batch`]).
    pub largest_batch: Option<(usize, String)>,
}

/// The largest batch whose tensors `adapter` can bind, for a plan of `config`; `None` when not
/// even batch 1 can be planned.
pub fn plannable_batch(config: &RunConfig, adapter: &AdapterInfo) -> Option<usize> {
    let fits = |batch: usize| {
        let mut config = config.clone();
        config.batch_size = batch;
        config.eval_batch_size = config.eval_batch_size.min(batch);
        oversized(&config, adapter).is_empty()
    };
    if !fits(1) {
        return None;
    }
    let (mut good, mut bad) = (1, limits::BATCH_SIZE.1 + 1);
    while bad - good > 1 {
        let mid = (good + bad) / 2;
        if fits(mid) { good = mid } else { bad = mid }
    }
    Some(good)
}

/// Where a search of plans of `config` on `adapter` stops ([`plannable_batch`]), with the
/// reason it reports; the tensor that does not bind when not even batch 1 can be planned.
pub fn plan_bound(
    config: &RunConfig,
    adapter: &AdapterInfo,
) -> Result<(usize, String), ConfigError> {
    let Some(most) = plannable_batch(config, adapter) else {
        let mut one = config.clone();
        (one.batch_size, one.eval_batch_size) = (1, 1);
        bindable(&one, adapter)?;
        return Err(ConfigError::invalid(
            "batch_size",
            "not even batch 1 can be planned on this adapter",
        ));
    };
    Ok((
        most,
        format!(
            "above batch {most} a tensor outgrows the largest binding a device states ({}): \
             plans stop there; the budget may hold more",
            ByteFormat::MIB_OR_GIB.of(adapter.max_binding_size)
        ),
    ))
}

impl Question<'_> {
    /// The smallest and largest batch a trial may use: a multiple of N, at least the gradient
    /// accumulation's micro-batch count, at most the training split.
    fn bounds(&self) -> (usize, usize) {
        let n = self.multiple_of;
        let lo = self.config.strategies.grad_accumulation.max(1).div_ceil(n) * n;
        let most = match self.purpose {
            Purpose::Run => split_sizes(&self.config.data).0,
            Purpose::Plan => limits::BATCH_SIZE.1,
        };
        let most = self
            .largest_batch
            .as_ref()
            .map_or(most, |(batch, _)| most.min(*batch));
        (lo, most / n * n)
    }

    fn config_for(&self, batch: usize, steps: usize, evaluate: bool) -> RunConfig {
        let mut config = self.config.clone();
        config.batch_size = batch;
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
    let (lo, hi) = question.bounds();
    if lo > hi {
        return Err(ConfigError::invalid(
            "--multiple-of",
            format!(
                "{} leaves no batch between the gradient accumulation's {} and the training \
                 split's {}",
                question.multiple_of,
                question.config.strategies.grad_accumulation,
                split_sizes(&question.config.data).0
            ),
        ));
    }
    let params = predict(question.config).params;
    if question.budget_bytes <= params {
        return Err(ConfigError::invalid(
            "--budget",
            format!(
                "{} bytes is not more than the model's parameters alone ({params} bytes); \
                 no batch can fit",
                question.budget_bytes
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
        batch: usize,
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
        let config = self.question.config_for(batch, steps, evaluate);
        let trial = match self.runner.train(config).await? {
            RunOutcome::Fit(timeline) => Trial {
                batch,
                fits: true,
                peak_in_use_bytes: timeline.summary.high_water_in_use_bytes,
                peak_reserved_bytes: timeline.summary.high_water_reserved_bytes,
                out_of_memory: None,
            },
            RunOutcome::OutOfMemory(oom) => Trial {
                batch,
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

    fn measured(&self, batch: usize) -> Option<&Trial> {
        self.log.iter().find(|t| t.batch == batch)
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
    let max_batch = match method {
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
    if let (Some(found), Some((_, reason))) = (max_batch, &question.largest_batch)
        && found == hi
    {
        notes.push(reason.clone());
    } else if max_batch == Some(hi) {
        notes.push(match question.purpose {
            Purpose::Run => format!(
                "the training split has {} samples: no larger batch was tried, the budget may \
                 hold more",
                split_sizes(&question.config.data).0
            ),
            Purpose::Plan => {
                format!("{hi} is the largest batch a config allows: the budget may hold more")
            }
        });
    }
    if trials.exhausted {
        notes.push(format!(
            "stopped at the limit of {} trials: the batch found is a lower bound",
            trials.log.len()
        ));
    }
    let ooms = trials.log.iter().filter(|t| !t.fits).count();
    Ok(Search {
        method,
        max_batch,
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
    let predicted_peak = |batch: usize| {
        let mut config = question.config.clone();
        config.batch_size = batch;
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
    /// When no batch fit: the smallest batch tried, and where it ran out.
    pub fn smallest_failure(&self) -> Option<(usize, &OutOfMemory)> {
        self.trials_log
            .iter()
            .filter_map(|t| t.out_of_memory.as_deref().map(|oom| (t.batch, oom)))
            .min_by_key(|(batch, _)| *batch)
    }
}
