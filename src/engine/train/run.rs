//! One training run, advanced a step at a time so a front can drive it: the CLI in a loop, the
//! page in short async slices between frames. The run orders the calls and keeps the records;
//! the trainer does the step and the strategies act at their hooks.

use burn::cubecl::dry_run::DryRun;
use web_time::Instant;

use crate::engine::config::RunConfig;
use crate::engine::data::{BatchOrder, Dataset};
use crate::engine::device::{Gpu, Turn};
use crate::engine::error::EngineError;
use crate::engine::memory::categories::{self, SetupBytes};
use crate::engine::memory::trace::MAX_TRACE_POINTS;
use crate::engine::memory::{Categories, MemoryPrediction, MemoryReading, StepTrace};
use crate::engine::models::Routing;
use crate::engine::outcome::Site;
use crate::engine::phase::Phase;
use crate::engine::strategies::trainable::ParamCounts;
use crate::engine::suggest;
use crate::engine::validate::Purpose;

use super::pace::Pace;
use super::records::{EvalRecord, StepFigures, StepRange, StepRecord, Timeline};
use super::trainer::{Context, Trainer};

mod evaluation;
mod finish;
mod setup;

/// Losses are read back in groups of this many steps: a readback waits for the device, and
/// waiting every step would serialise the host and the GPU.
pub const LOSS_READBACK_EVERY: usize = 10;

/// The page keeps the records of a run's first this many steps whatever its charts have drawn
/// ([`Run::thin_records`]): a long run's export still has its start whole.
pub const KEEP_RECORDS_WHOLE: usize = 1_000;

/// What a call to [`Run::step`] did.
#[derive(Clone, Debug)]
pub struct StepOutcome {
    pub record: StepRecord,
    /// Set when this step ended with an evaluation of the test split.
    pub eval: Option<EvalRecord>,
    /// The most recent loss read back so far (it may belong to an earlier step).
    pub latest_loss: Option<f32>,
    /// The memory of this step and its evaluation, at most [`MAX_TRACE_POINTS`] points.
    pub trace: StepTrace,
}

pub struct Run {
    ctx: Context,
    trainer: Trainer,
    order: BatchOrder,
    prediction: MemoryPrediction,
    baseline: MemoryReading,
    /// Measured when the run started: the parameters as stored, and what set-up left in use.
    setup: SetupBytes,
    /// In use in the pools at the end of the last step (set-up's figure before the first).
    carried_in_use: u64,
    /// The memory of the last step.
    last_trace: Option<StepTrace>,
    /// The records kept: every step's, but for those `left_out` ([`Run::thin_records`]).
    steps: Vec<StepRecord>,
    left_out: Option<StepRange>,
    /// The records folded so far (the first `figures.steps()` steps'), for the summary.
    figures: StepFigures,
    evals: Vec<EvalRecord>,
    latest_loss: Option<f32>,
    pace: Pace,
    /// Wall time `new` or `plan` took: data, model, upload, the strategies' set-up.
    setup_ms: f64,
    /// A mixture of experts' routing and each token's experts; `None` for a dense model.
    routing: Option<(Routing, usize)>,
    /// Held for a plan's whole life: every launch is compiled and dropped, pages are carved
    /// without device memory behind them.
    _dry_run: Option<DryRun>,
    /// This run's turn beside the process's other runs and plans (`device::turns`); declared
    /// after the dry run so that it ends after it.
    _turn: Turn,
}

impl Run {
    pub fn config(&self) -> &RunConfig {
        &self.ctx.config
    }

    /// A mixture of experts' routing (a plan may replay a real run's through it).
    pub fn routing(&self) -> Option<&Routing> {
        self.routing.as_ref().map(|(routing, _)| routing)
    }

    pub fn prediction(&self) -> &MemoryPrediction {
        &self.prediction
    }

    /// The model's parameters, those that train and LoRA's, counted when it was built.
    pub fn param_counts(&self) -> ParamCounts {
        self.ctx.hooks.report().params.unwrap_or_default()
    }

    /// The test samples the next step's evaluation will read, when that step ends with one:
    /// a front can say so before the wait.
    pub fn evaluation_after_next_step(&self) -> Option<usize> {
        let config = &self.ctx.config;
        let next = self.steps_done() + 1;
        (next <= config.steps && self.evaluates_after(next))
            .then(|| config.evaluated_samples(self.ctx.data.test.len))
    }

    /// Whether `step` ends with an evaluation: every `eval_every` steps, and at the last.
    fn evaluates_after(&self, step: usize) -> bool {
        let config = &self.ctx.config;
        step == config.steps || (config.eval_every > 0 && step.is_multiple_of(config.eval_every))
    }

    pub fn steps_done(&self) -> usize {
        self.steps.len() + self.left_out.map_or(0, |range| range.count())
    }

    pub fn is_finished(&self) -> bool {
        self.steps_done() >= self.ctx.config.steps
    }

    /// The records kept, in step order: every step's unless [`Run::thin_records`] dropped some.
    pub fn records(&self) -> &[StepRecord] {
        &self.steps
    }

    /// Drop the records of the steps after the first `keep_first` through `through_step`, for
    /// a front that has drawn them and keeps what it draws: the page, whose long runs would
    /// otherwise hold every record twice (it keeps [`KEEP_RECORDS_WHOLE`]; the first call that
    /// drops a record fixes `keep_first`). Only records already folded into the summary's
    /// figures go, and never the last (the phase bars read it), so the summary and the last
    /// step are what they would have been; the timeline names the steps left out.
    pub fn thin_records(&mut self, keep_first: usize, through_step: usize) {
        let last = through_step
            .min(self.figures.steps())
            .min(self.steps_done().saturating_sub(1));
        let (first, next) = match self.left_out {
            Some(range) => (range.first, range.last + 1),
            None => (keep_first + 1, keep_first + 1),
        };
        if last >= next {
            // Steps `first..next` are gone already: step `next`'s record sits where `first`'s was.
            let at = first - 1;
            self.steps.drain(at..at + (last + 1 - next));
            self.left_out = Some(StepRange { first, last });
        }
    }

    /// Where step `step`'s record is in `steps`; `None` once thinned.
    fn index_of(&self, step: usize) -> Option<usize> {
        match self.left_out {
            Some(range) if step > range.last => Some(step - 1 - range.count()),
            Some(range) if step >= range.first => None,
            _ => Some(step - 1),
        }
    }

    /// Fold the records of the steps through `step` (their losses back, their evaluations
    /// added) into the summary's figures. The unfolded records are the last ones kept: records
    /// are thinned only once folded.
    fn fold_through(&mut self, step: usize) {
        let folded = self.figures.steps();
        let unfolded = self.steps_done() - folded;
        let from = self.steps.len() - unfolded;
        let count = step.saturating_sub(folded).min(unfolded);
        for record in &self.steps[from..from + count] {
            self.figures.add(record);
        }
    }

    /// The data set the run trains on (host copies; the page draws the 2-D sets).
    pub fn dataset(&self) -> &Dataset {
        &self.ctx.data
    }

    /// One training step: upload a batch, forward, backward, optimizer step, and an evaluation
    /// when one is due. Readings follow `memory_sampling`. Out of memory under the `budget`
    /// leaves the run as it was before the step (the model is kept, the step's tensors freed).
    pub async fn step(&mut self) -> Result<StepOutcome, EngineError> {
        let step = self.steps_done() + 1;
        let result = self.advance(step).await;
        let purpose = if self.ctx.plan {
            Purpose::Plan
        } else {
            Purpose::Run
        };
        result.map_err(|err| {
            suggest::explain(err, Some(step), &self.ctx.config, &self.ctx.gpu, purpose)
        })
    }

    async fn advance(&mut self, step: usize) -> Result<StepOutcome, EngineError> {
        let config = &self.ctx.config;
        let started = Instant::now();
        let compiled_before = burn::cubecl::logging::kernels_compiled();
        self.ctx.meter.begin_step(step);
        let picked = self.order.next_indices(config.batch_size);
        let last_of_epoch = self.order.epoch_ends(config.batch_size);
        self.trainer.step(&mut self.ctx, step - 1, &picked).await?;
        let ctx = &mut self.ctx;
        ctx.hooks.end_of_step(&mut ctx.meter, last_of_epoch)?;
        // The end-of-step reading is taken in both sampling modes; its sync also makes `ms`
        // honest. On the first step it is also where the optimizer's state first exists.
        let end = ctx.meter.read(Phase::Optimizer, Site::OptimizerStep)?;
        ctx.meter.keep(Phase::Optimizer, end);
        let ms = started.elapsed().as_secs_f64() * 1e3;
        // The end-of-step reading synced the device: every kernel the step launched is compiled.
        let kernels_compiled = burn::cubecl::logging::kernels_compiled() - compiled_before;
        let memory = ctx.meter.take_step();
        let held = ctx.hooks.report().leaked_bytes;
        let sizes = categories::sizes_of_step(&memory.marks, self.carried_in_use, self.setup, held);
        let mark = memory.step_high_water.in_use_bytes;
        self.carried_in_use = end.pooled_in_use_bytes;
        let mut trace = memory.trace.clone();
        let mut record = StepRecord::new(step, ms, memory);
        record.categories = sizes.map(|sizes| Categories::stacked_under(mark, sizes));
        record.category_sizes = sizes;
        let notes = ctx.hooks.notes();
        record.loss_scale = notes.loss_scale;
        record.skipped = notes.skipped;
        record.kernels_compiled = kernels_compiled;
        self.steps.push(record);

        let eval_due = self.evaluates_after(step);
        let read_back = eval_due || self.trainer.pending_losses() >= LOSS_READBACK_EVERY;
        if read_back {
            self.read_back_losses().await?;
            self.pace.completed(step);
        }
        let eval = if eval_due {
            let (eval, with_eval) = self.evaluate(step).await?;
            trace = with_eval;
            if let Some(record) = self.steps.last_mut() {
                record.add_eval(eval.memory, eval.high_water);
            }
            self.evals.push(eval.clone());
            Some(eval)
        } else {
            None
        };
        if read_back {
            // Every record through this step is final now: losses back, evaluation added.
            self.fold_through(step);
            self.pace.restart(step);
        }
        let trace = trace.capped(MAX_TRACE_POINTS);
        self.last_trace = Some(trace.clone());
        Ok(StepOutcome {
            // The step's record is the last kept: the last record is never thinned.
            record: self.steps[self.steps.len() - 1].clone(),
            eval,
            latest_loss: self.latest_loss,
            trace,
        })
    }

    /// After a step failed: what it recorded up to the failure (its trace ends at the reading
    /// that broke the budget), so a front can keep it on its charts.
    pub fn failed_step(&mut self) -> StepTrace {
        self.ctx.meter.take_step().trace.capped(MAX_TRACE_POINTS)
    }

    async fn read_back_losses(&mut self) -> Result<(), EngineError> {
        if self.ctx.plan {
            // The values mean nothing, but reading them surfaces an allocation the pools
            // refused: every later kernel that needed it carries the failure to the loss.
            self.trainer.read_back_losses().await?;
            return Ok(());
        }
        for (index, loss) in self.trainer.read_back_losses().await? {
            // Pending losses belong to unfolded records, which are never thinned.
            if let Some(kept) = self.index_of(index + 1) {
                self.steps[kept].loss = Some(loss);
            }
            self.latest_loss = Some(loss);
        }
        Ok(())
    }
}

/// Train `config` to the end, calling `on_step` after every step (for progress display).
pub async fn train(
    config: RunConfig,
    gpu: &Gpu,
    mut on_step: impl FnMut(&StepOutcome),
) -> Result<Timeline, EngineError> {
    let mut run = Run::new(config, gpu)?;
    while !run.is_finished() {
        let outcome = run.step().await?;
        on_step(&outcome);
    }
    run.finish().await
}
