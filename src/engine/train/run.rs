//! One training run, advanced a step at a time so a front can drive it: the CLI in a loop, the
//! page in short async slices between frames. The run orders the calls and keeps the records;
//! the trainer does the step and the strategies act at their hooks.

use burn::cubecl::dry_run::DryRun;
use web_time::Instant;

use crate::engine::config::{InputKind, RunConfig};
use crate::engine::data::{BatchOrder, Dataset, split_sizes};
use crate::engine::device::Gpu;
use crate::engine::error::EngineError;
use crate::engine::memory::categories::{self, SetupBytes};
use crate::engine::memory::largest::bindable;
use crate::engine::memory::meter::Meter;
use crate::engine::memory::trace::MAX_TRACE_POINTS;
use crate::engine::memory::{
    Categories, MemoryPrediction, MemoryReading, StepTrace, predict, sampler,
};
use crate::engine::models::Model;
use crate::engine::outcome::Site;
use crate::engine::phase::Phase;
use crate::engine::strategies::trainable::ParamCounts;
use crate::engine::strategies::{Hooks, Setup};
use crate::engine::suggest;
use crate::engine::validate::Purpose;

use super::pace::Pace;
use super::records::{EvalRecord, Measured, StepRecord, Summary, Timeline};
use super::trainer::{Context, Trainer};

/// Losses are read back in groups of this many steps: a readback waits for the device, and
/// waiting every step would serialise the host and the GPU.
pub const LOSS_READBACK_EVERY: usize = 10;

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
    steps: Vec<StepRecord>,
    evals: Vec<EvalRecord>,
    latest_loss: Option<f32>,
    pace: Pace,
    /// Held for a plan's whole life: every launch is compiled and dropped, pages are carved
    /// without device memory behind them.
    _dry_run: Option<DryRun>,
}

impl Run {
    /// Validate the config, build data and model, and start from the device's baseline memory.
    pub fn new(config: RunConfig, gpu: &Gpu) -> Result<Self, EngineError> {
        config.validate()?;
        bindable(&config, &gpu.adapter)?;
        let data =
            Dataset::build(&config.data, config.seed).map_err(|message| EngineError::Device {
                phase: "data".into(),
                message,
            })?;
        Self::start(config.clone(), gpu, data, None)
            .map_err(|err| suggest::explain(err, None, &config, gpu, Purpose::Run))
    }

    /// The same run under a dry run: every launch compiled and dropped, every allocation
    /// carved by the real pools without device memory, on batches of zeros. What the
    /// allocator reports is what it would hold; losses and accuracies are meaningless and
    /// nothing read back steers the run. Its test split is one evaluation batch.
    pub fn plan(config: RunConfig, gpu: &Gpu) -> Result<Self, EngineError> {
        config.validate_for(Purpose::Plan)?;
        let (train, test) = split_sizes(&config.data);
        // One evaluation batch, as large as a real run's largest: the test split may be smaller
        // than `eval_batch_size` (digits: 449 samples against 512).
        let data = Dataset::shapes(
            &config.data,
            train.max(config.batch_size),
            test.min(config.eval_batch_size),
        );
        let dry_run = DryRun::new();
        Self::start(config.clone(), gpu, data, Some(dry_run))
            .map_err(|err| suggest::explain(err, None, &config, gpu, Purpose::Plan))
    }

    fn start(
        config: RunConfig,
        gpu: &Gpu,
        data: Dataset,
        dry_run: Option<DryRun>,
    ) -> Result<Self, EngineError> {
        let data = if config.model.is_decoder() {
            data.next_token()
        } else {
            data
        };
        let budget = config
            .budget
            .map(|budget| budget.bytes(gpu.adapter.max_buffer_size));
        // A previous run on this device may have left graphs and cached pages; start where a
        // fresh process would, so runs compare.
        sampler::start_clean(&gpu.device)?;
        let baseline = sampler::read(&gpu.device, "start")?;
        gpu.device.seed(config.seed);
        let mut hooks = Hooks::new(&config, gpu);
        let device = hooks.training_device(gpu.device.clone().autodiff());
        let mut meter = Meter::new(&device, config.memory_sampling, budget, baseline);
        let model = hooks.prepare_model(Model::build(&config, &data, &device));
        model.initialise_params();
        let with_weights = meter.read(Phase::Setup, Site::ModelParameters)?;
        hooks.setup(&mut Setup {
            data: &data,
            device: &device,
            meter: &mut meter,
        })?;
        let after_setup = meter.peek(Phase::Setup)?;
        let setup = SetupBytes {
            parameter: with_weights
                .pooled_in_use_bytes
                .saturating_sub(baseline.pooled_in_use_bytes),
            resident_input: after_setup
                .pooled_in_use_bytes
                .saturating_sub(with_weights.pooled_in_use_bytes),
            in_use: after_setup.pooled_in_use_bytes,
        };
        Ok(Self {
            trainer: Trainer::new(&config, model, &device, &gpu.device),
            order: BatchOrder::new(data.train.len, config.seed),
            prediction: predict(&config),
            baseline,
            setup,
            carried_in_use: setup.in_use,
            last_trace: None,
            steps: Vec::new(),
            evals: Vec::new(),
            latest_loss: None,
            pace: Pace::default(),
            ctx: Context {
                config,
                gpu: gpu.clone(),
                device,
                data,
                hooks,
                meter,
                plan: dry_run.is_some(),
            },
            _dry_run: dry_run,
        })
    }

    pub fn config(&self) -> &RunConfig {
        &self.ctx.config
    }

    pub fn prediction(&self) -> &MemoryPrediction {
        &self.prediction
    }

    /// The model's parameters, those that train and LoRA's, counted when it was built.
    pub fn param_counts(&self) -> ParamCounts {
        self.ctx.hooks.report().params.unwrap_or_default()
    }

    pub fn steps_done(&self) -> usize {
        self.steps.len()
    }

    pub fn is_finished(&self) -> bool {
        self.steps.len() >= self.ctx.config.steps
    }

    pub fn records(&self) -> &[StepRecord] {
        &self.steps
    }

    /// The data set the run trains on (host copies; the page draws the 2-D sets).
    pub fn dataset(&self) -> &Dataset {
        &self.ctx.data
    }

    /// One training step: upload a batch, forward, backward, optimizer step, and an evaluation
    /// when one is due. Readings follow `memory_sampling`. Out of memory under the `budget`
    /// leaves the run as it was before the step (the model is kept, the step's tensors freed).
    pub async fn step(&mut self) -> Result<StepOutcome, EngineError> {
        let step = self.steps.len() + 1;
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
        self.steps.push(record);

        let config = &self.ctx.config;
        let last = step == config.steps;
        let eval_due = last || (config.eval_every > 0 && step.is_multiple_of(config.eval_every));
        let read_back = eval_due || self.trainer.pending_losses() >= LOSS_READBACK_EVERY;
        if read_back {
            self.read_back_losses().await?;
            self.pace.completed(step);
        }
        let eval = if eval_due {
            let (eval, with_eval) = self.evaluate(step).await?;
            trace = with_eval;
            self.steps[step - 1].add_eval(eval.memory, eval.high_water);
            self.evals.push(eval.clone());
            Some(eval)
        } else {
            None
        };
        if read_back {
            self.pace.restart(step);
        }
        let trace = trace.capped(MAX_TRACE_POINTS);
        self.last_trace = Some(trace.clone());
        Ok(StepOutcome {
            record: self.steps[step - 1].clone(),
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
            self.steps[index].loss = Some(loss);
            self.latest_loss = Some(loss);
        }
        Ok(())
    }

    /// The evaluation after `step`, and the step's trace with it.
    async fn evaluate(&mut self, step: usize) -> Result<(EvalRecord, StepTrace), EngineError> {
        let started = Instant::now();
        let done = self.trainer.evaluate(&mut self.ctx).await?;
        let memory = self.ctx.meter.take_step();
        let high_water = memory.step_high_water;
        let carried = self.steps[step - 1].categories.unwrap_or(Categories {
            parameter: self.setup.parameter,
            ..Categories::default()
        });
        let categories = done.first_batch.map(|batch| {
            categories::of_eval(
                batch.before,
                batch.after_upload,
                batch.with_logits,
                batch.logits_bytes,
                carried,
                high_water.in_use_bytes,
            )
        });
        let record = EvalRecord {
            step,
            loss: done.loss,
            accuracy: done.accuracy,
            ms: started.elapsed().as_secs_f64() * 1e3,
            memory: done.memory,
            high_water,
            categories,
        };
        Ok((record, memory.trace))
    }

    /// For the 2-D sets: the current model's probability of class 1 on an `n` x `n` grid over
    /// `[-extent, extent]`^2, row by row from the top (y = extent) down. `None` for other data.
    pub async fn decision_grid(
        &mut self,
        n: usize,
        extent: f32,
    ) -> Result<Option<Vec<f32>>, EngineError> {
        if self.ctx.config.data.input_kind() != InputKind::Points || n == 0 {
            return Ok(None);
        }
        let points = grid_points(n, extent);
        let probability = self.trainer.class_one_probability(&self.ctx, points);
        probability.await.map(Some)
    }

    /// Read back any losses still pending and derive the summary.
    pub async fn finish(mut self) -> Result<Timeline, EngineError> {
        self.read_back_losses().await?;
        let activation_layers_in_use = self.trainer.probe_activations(&mut self.ctx).await?;
        let kept_by_op = self.trainer.probe_kept_by_op(&mut self.ctx)?;
        let launches_watched = self.ctx.meter.watches_launches();
        let Context {
            config,
            gpu,
            device,
            hooks,
            data,
            ..
        } = self.ctx;
        let mut summary = Summary::build(
            &config,
            &gpu.adapter,
            &self.prediction,
            &self.steps,
            &self.evals,
            Measured {
                report: hooks.report(),
                launches_watched,
                completed_step_ms: self.pace.median_ms(),
                activation_layers_in_use,
                kept_by_op,
                weight_bytes: self.setup.parameter,
                baseline: self.baseline,
                paged_high_water_bytes: sampler::paged_high_water_bytes(&device),
            },
        );
        summary.table = data.table_summary(&config.data);
        Ok(Timeline {
            summary,
            predicted_layers: self.prediction.layers,
            config,
            steps: self.steps,
            evals: self.evals,
            one_step: self.last_trace,
        })
    }
}

/// The centres of an `n` x `n` grid over `[-extent, extent]`^2 as (x, y) pairs, row by row from
/// the top (y = extent) down.
fn grid_points(n: usize, extent: f32) -> Vec<f32> {
    let cell = 2.0 * extent / n as f32;
    let mut values = Vec::with_capacity(n * n * 2);
    for row in 0..n {
        for col in 0..n {
            values.push(-extent + (col as f32 + 0.5) * cell);
            values.push(extent - (row as f32 + 0.5) * cell);
        }
    }
    values
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
