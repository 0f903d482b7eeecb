//! One training run, advanced a step at a time so a front can drive it: the CLI in a loop, the
//! page in short async slices between frames.

use std::collections::BTreeMap;

use burn::module::Module;
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::optim::{GradientsAccumulator, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, FloatDType, Int, Tensor, TensorData};
use web_time::Instant;

use crate::engine::config::{
    DataResidency, InputKind, Kernels, LossBookkeeping, MemorySampling, MixedPrecision, RunConfig,
    WeightDtype,
};
use crate::engine::data::{Batch, BatchInputs, BatchOrder, Dataset};
use crate::engine::device::Gpu;
use crate::engine::error::EngineError;
use crate::engine::fused::FusedMlp;
use crate::engine::memory::suggest::what_fits;
use crate::engine::memory::{
    BudgetWatch, MemoryPrediction, MemoryReading, Phase, predict, sampler,
};
use crate::engine::models::Model;
use crate::engine::strategies::checkpointing::training_device;
use crate::engine::strategies::data_residency::ResidentSplit;
use crate::engine::strategies::eval_mode::{eval_model, release_orphaned_graphs};
use crate::engine::strategies::free_cache;
use crate::engine::strategies::grad_accumulation::{
    largest_micro_batch, loss_scale, micro_batches,
};
use crate::engine::strategies::inplace_activation::Tap;
use crate::engine::strategies::loss_bookkeeping::LeakedSteps;
use crate::engine::strategies::mixed_precision::{
    self, GradScaler, cast_inputs, compute_copy, compute_dtype,
};
use crate::engine::strategies::weight_dtype;

use super::optimizer;
use super::records::{EvalRecord, StepRecord, StrategyOutcome, Summary, Timeline};

mod fused;

/// Losses are read back in groups of this many steps: a readback waits for the device, and
/// waiting every step would serialise the host and the GPU.
const LOSS_READBACK_EVERY: usize = 10;

/// What a call to [`Run::step`] did.
#[derive(Clone, Debug)]
pub struct StepOutcome {
    pub record: StepRecord,
    /// Set when this step ended with an evaluation of the test split.
    pub eval: Option<EvalRecord>,
    /// The most recent loss read back so far (it may belong to an earlier step).
    pub latest_loss: Option<f32>,
}

pub struct Run {
    config: RunConfig,
    gpu: Gpu,
    /// The autodiff device training runs on.
    device: Device,
    data: Dataset,
    order: BatchOrder,
    /// `None` only while the optimizer owns it inside a step.
    model: Option<Model>,
    optimizer: ModuleOptimizer,
    loss: CrossEntropyLoss,
    eval_loss: CrossEntropyLoss,
    prediction: MemoryPrediction,
    baseline: MemoryReading,
    steps: Vec<StepRecord>,
    evals: Vec<EvalRecord>,
    /// Detached loss tensors not yet read back, with their step index (0-based).
    pending_losses: Vec<(usize, Tensor<1>)>,
    latest_loss: Option<f32>,
    /// The mixed-precision mode in effect (`off` when the adapter cannot do what was asked).
    precision: MixedPrecision,
    scaler: Option<GradScaler>,
    /// What `loss_bookkeeping` = `graph` keeps alive.
    leaked: Option<LeakedSteps>,
    fallbacks: Vec<String>,
    /// The training split on the device (`data_residency` = `device`).
    resident: Option<ResidentSplit>,
    /// The `budget`, enforced at every allocation site; `None` without one.
    watch: Option<BudgetWatch>,
    /// Measured when the run started: the parameters as stored.
    weight_bytes: u64,
    /// Measured at the last evaluation with `weight_dtype` = `int8`.
    eval_weight_bytes: Option<u64>,
    /// `kernels` = `fused`: the trainer of vramlab's own kernels, built at the first step from
    /// the burn model's initial weights (then dropped), and its losses not yet read back.
    fused: Option<FusedMlp>,
    pending_fused: Vec<(usize, burn::cubecl::server::Handle)>,
}

impl Run {
    /// Validate the config, build data and model, and start from the device's baseline memory.
    pub fn new(config: RunConfig, gpu: &Gpu) -> Result<Self, EngineError> {
        config.validate()?;
        let budget = config.budget.map(|budget| budget.bytes(&gpu.adapter));
        Self::start(config.clone(), gpu, budget)
            .map_err(|err| explain(err, None, &config, gpu, budget))
    }

    fn start(config: RunConfig, gpu: &Gpu, budget: Option<u64>) -> Result<Self, EngineError> {
        let data =
            Dataset::build(&config.data, config.seed).map_err(|message| EngineError::Device {
                phase: "data".into(),
                message,
            })?;
        // A previous run on this device may have left graphs (freed only by the sweep burn runs
        // after a backward) and cached pages; start where a fresh process would, so runs compare.
        release_orphaned_graphs(&gpu.device.clone().autodiff());
        sampler::release_cache(&gpu.device)?;
        let baseline = sampler::read(&gpu.device, "start")?;
        gpu.device.seed(config.seed);
        let device = training_device(&gpu.device, config.strategies.checkpointing);
        let strategies = &config.strategies;
        let asked_as = match strategies.weight_dtype {
            WeightDtype::F16 => "weight_dtype f16".to_string(),
            _ => format!("mixed_precision {}", strategies.mixed_precision.name()),
        };
        let (precision, fallback) =
            mixed_precision::resolve(strategies.training_precision(), &asked_as, &gpu.adapter);
        let mut watch = budget.map(|limit| BudgetWatch::new(&device, limit, baseline));
        let mut model = Model::build(&config, &data, &device);
        if precision == MixedPrecision::F16Unscaled {
            model = mixed_precision::half(model);
        }
        model.initialise_params();
        let with_weights =
            BudgetWatch::check_or_read(watch.as_mut(), &device, "setup", "model parameters")?;
        let inner = gpu.device.clone();
        let resident = (config.strategies.data_residency == DataResidency::Device)
            .then(|| ResidentSplit::upload(&data.train, data.targets_per_sample, &device));
        if let (Some(watch), Some(_)) = (&mut watch, &resident) {
            watch.check("setup", "training split resident on the device")?;
        }
        Ok(Self {
            watch,
            weight_bytes: with_weights
                .in_use_bytes
                .saturating_sub(baseline.in_use_bytes),
            eval_weight_bytes: None,
            fused: None,
            pending_fused: Vec::new(),
            resident,
            order: BatchOrder::new(data.train.len, config.seed),
            prediction: predict(&config),
            optimizer: optimizer::build(config.optimizer),
            loss: CrossEntropyLossConfig::new().init(&device),
            eval_loss: CrossEntropyLossConfig::new().init(&inner),
            model: Some(model),
            data,
            device,
            gpu: gpu.clone(),
            baseline,
            steps: Vec::new(),
            evals: Vec::new(),
            pending_losses: Vec::new(),
            latest_loss: None,
            precision,
            scaler: (precision == MixedPrecision::F16).then(GradScaler::default),
            leaked: (config.strategies.loss_bookkeeping == LossBookkeeping::Graph)
                .then(LeakedSteps::default),
            fallbacks: fallback
                .into_iter()
                .chain(pool_fallback(&config, gpu))
                .collect(),
            config,
        })
    }

    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    pub fn prediction(&self) -> &MemoryPrediction {
        &self.prediction
    }

    pub fn steps_done(&self) -> usize {
        self.steps.len()
    }

    pub fn is_finished(&self) -> bool {
        self.steps.len() >= self.config.steps
    }

    pub fn records(&self) -> &[StepRecord] {
        &self.steps
    }

    pub fn param_count(&self) -> usize {
        self.model.as_ref().map_or(0, Model::param_count)
    }

    /// One training step: upload a batch, forward, backward, optimizer step, and an evaluation
    /// when one is due. Readings follow `memory_sampling`. Out of memory under the `budget`
    /// leaves the run as it was before the step (the model is kept, the step's tensors freed).
    pub async fn step(&mut self) -> Result<StepOutcome, EngineError> {
        let step = self.steps.len() + 1;
        let result = self.step_unexplained().await;
        let budget = self.watch.as_ref().map(BudgetWatch::limit);
        result.map_err(|err| explain(err, Some(step), &self.config, &self.gpu, budget))
    }

    async fn step_unexplained(&mut self) -> Result<StepOutcome, EngineError> {
        let index = self.steps.len();
        let mut phases = BTreeMap::new();
        let started = Instant::now();
        let (used_scale, skipped) = match self.config.strategies.kernels {
            Kernels::Burn => self.burn_step(index, &mut phases).await?,
            Kernels::Fused => {
                self.fused_step(index, &mut phases).await?;
                (None, false)
            }
        };
        let last_of_epoch = self.order.epoch_ends(self.config.batch_size);
        if free_cache::due(self.config.strategies.free_cache, last_of_epoch) {
            sampler::release_cache(&self.device)?;
        }
        // The end-of-step reading is taken in both sampling modes; its sync also makes `ms`
        // honest. On the first step it is also where the optimizer's state first exists.
        let end = BudgetWatch::check_or_read(
            self.watch.as_mut(),
            &self.device,
            Phase::Optimizer.name(),
            "optimizer step (updated parameters, optimizer state)",
        )?;
        phases.insert(Phase::Optimizer, end);
        let ms = started.elapsed().as_secs_f64() * 1e3;

        let mut record = StepRecord::new(index + 1, ms, phases);
        record.loss_scale = used_scale;
        record.skipped = skipped;
        self.steps.push(record);

        let step = index + 1;
        let last = step == self.config.steps;
        let eval_due = last || (self.config.eval_every > 0 && step % self.config.eval_every == 0);
        let pending = self.pending_losses.len() + self.pending_fused.len();
        if last || pending >= LOSS_READBACK_EVERY || eval_due {
            self.read_back_losses().await?;
        }
        let eval = if eval_due {
            let eval = self.evaluate(step).await?;
            self.steps[index].add_reading(Phase::Eval, eval.memory);
            self.evals.push(eval.clone());
            Some(eval)
        } else {
            None
        };
        Ok(StepOutcome {
            record: self.steps[index].clone(),
            eval,
            latest_loss: self.latest_loss,
        })
    }

    /// burn's step: forward and backward through autodiff, then burn's optimizer. Returns the
    /// loss scale used and whether the scaler skipped the update.
    async fn burn_step(
        &mut self,
        index: usize,
        phases: &mut BTreeMap<Phase, MemoryReading>,
    ) -> Result<(Option<f32>, bool), EngineError> {
        let picked = self.order.next_indices(self.config.batch_size);
        let model = self
            .model
            .take()
            .expect("the model is back after every step");
        let (mut accumulated, step_loss) = match self.passes(&model, &picked, phases, index) {
            Ok(done) => done,
            Err(err) => {
                self.model = Some(model);
                return Err(err);
            }
        };

        let used_scale = self.scaler.as_ref().map(GradScaler::scale);
        let mut grads = accumulated.grads();
        let mut skipped = false;
        if let Some(scaler) = &mut self.scaler {
            let (unscaled, poisoned) = scaler.unscale(grads, &model);
            grads = unscaled;
            // One readback per step, as PyTorch's scaler does with its found-inf flag.
            let poisoned = match read_floats(poisoned, "loss scaler").await {
                Ok(values) => values[0],
                Err(err) => {
                    self.model = Some(model);
                    return Err(err);
                }
            };
            skipped = !scaler.update(poisoned.is_finite());
        }
        let model = if skipped {
            model
        } else {
            self.optimizer.step(self.config.learning_rate, model, grads)
        };
        self.model = Some(model);
        self.pending_losses.push((index, step_loss));
        Ok((used_scale, skipped))
    }

    /// Forward and backward over each micro-batch (one in all when accumulation is off); each
    /// phase keeps its largest reading over the micro-batches. Returns the summed gradients and
    /// the step's loss.
    fn passes(
        &mut self,
        model: &Model,
        picked: &[usize],
        phases: &mut BTreeMap<Phase, MemoryReading>,
        index: usize,
    ) -> Result<(GradientsAccumulator<Model>, Tensor<1>), EngineError> {
        let mut accumulated = GradientsAccumulator::<Model>::new();
        let mut step_loss: Option<Tensor<1>> = None;
        for micro in micro_batches(picked, self.config.strategies.grad_accumulation) {
            let batch = match &self.resident {
                Some(resident) => resident.batch(micro, &self.device),
                None => self
                    .data
                    .train
                    .batch(micro, self.data.targets_per_sample, &self.device),
            };
            self.checkpoint(phases, Phase::Upload, "batch upload")?;

            let mut tap = Tap::plain(self.config.strategies.inplace_activation);
            if self.leaked.is_some() {
                tap.held = Some(Vec::new());
            }
            tap.lend_watch(&mut self.watch, Phase::Forward);
            let logits = self.forward(model, &batch.inputs, &mut tap);
            tap.return_watch(&mut self.watch)?;
            let held_logits = self.leaked.is_some().then(|| logits.clone());
            let mut loss = self.loss.forward(logits, batch.targets);
            if micro.len() != picked.len() {
                loss = loss.mul_scalar(loss_scale(micro.len(), picked.len()));
            }
            self.checkpoint(phases, Phase::Forward, "logits and loss")?;

            let scaled = match &self.scaler {
                Some(scaler) => loss.clone().mul_scalar(scaler.scale()),
                None => loss.clone(),
            };
            accumulated.accumulate(model, GradientsParams::from_grads(scaled.backward(), model));
            self.checkpoint(phases, Phase::Backward, "gradients")?;
            if let (Some(leaked), Some(logits)) = (&mut self.leaked, held_logits) {
                let mut held = tap.held.take().unwrap_or_default();
                held.push(logits);
                leaked.hold(index + 1, loss.clone(), held);
            }
            step_loss = Some(add_to(step_loss, loss.detach()));
        }
        Ok((
            accumulated,
            step_loss.expect("a batch has at least one micro-batch"),
        ))
    }

    /// Read the allocator after `site` allocated, when the budget or per-phase sampling asks
    /// for it: the budget check, and the phase's largest reading so far.
    fn checkpoint(
        &mut self,
        phases: &mut BTreeMap<Phase, MemoryReading>,
        phase: Phase,
        site: &str,
    ) -> Result<(), EngineError> {
        let per_phase = self.config.memory_sampling == MemorySampling::Phase;
        if self.watch.is_none() && !per_phase {
            return Ok(());
        }
        let reading =
            BudgetWatch::check_or_read(self.watch.as_mut(), &self.device, phase.name(), site)?;
        if per_phase {
            let slot = phases.entry(phase).or_insert(reading);
            *slot = slot.max(reading);
        }
        Ok(())
    }

    async fn read_back_losses(&mut self) -> Result<(), EngineError> {
        self.read_back_fused_losses().await?;
        if self.pending_losses.is_empty() {
            return Ok(());
        }
        let (indices, tensors): (Vec<usize>, Vec<Tensor<1>>) =
            std::mem::take(&mut self.pending_losses).into_iter().unzip();
        let values = read_floats(Tensor::cat(tensors, 0), "loss readback").await?;
        for (index, value) in indices.into_iter().zip(values) {
            self.steps[index].loss = Some(value);
            self.latest_loss = Some(value);
        }
        Ok(())
    }

    /// Loss and accuracy on the whole test split, in batches of `eval_batch_size`, on the model
    /// and device `strategies.eval_mode` picks.
    async fn evaluate(&mut self, step: usize) -> Result<EvalRecord, EngineError> {
        if self.fused.is_some() {
            return self.fused_evaluate(step).await;
        }
        let started = Instant::now();
        let (model, device) = eval_model(
            self.config.strategies.eval_mode,
            self.current_model(),
            &self.gpu.device,
            &self.device,
        );
        let model = if self.config.strategies.weight_dtype == WeightDtype::Int8 {
            let before = sampler::read(&device, Phase::Eval.name())?.in_use_bytes;
            let (int8, _) = weight_dtype::quantized(model);
            let after = BudgetWatch::check_or_read(
                self.watch.as_mut(),
                &device,
                Phase::Eval.name(),
                "int8 copy of the weights",
            )?;
            self.eval_weight_bytes = Some(after.in_use_bytes.saturating_sub(before));
            int8
        } else {
            model
        };
        let loss_fn = if device.is_autodiff() {
            &self.loss
        } else {
            &self.eval_loss
        };
        let split = &self.data.test;
        let per_sample = self.data.targets_per_sample;
        let mut memory = MemoryReading::default();
        let mut loss_sum: Option<Tensor<1>> = None;
        let mut correct: Option<Tensor<1, Int>> = None;
        let mut start = 0;
        while start < split.len {
            let len = self.config.eval_batch_size.min(split.len - start);
            let Batch {
                inputs, targets, ..
            } = split.range_batch(start, len, per_sample, &device);
            let mut tap = Tap::plain(self.config.strategies.inplace_activation);
            // Without a graph, each layer's input is freed once its output exists: the eval
            // peak is inside the forward pass, not after it, so read after every activation.
            // The first batch is the largest, so its pass sets the peak; later ones skip the
            // syncs.
            if start == 0 {
                tap.probe = Some((device.clone(), Vec::new()));
            }
            tap.lend_watch(&mut self.watch, Phase::Eval);
            let logits = self.forward(&model, &inputs, &mut tap);
            tap.return_watch(&mut self.watch)?;
            let inside = tap.probe.take().map(|(_, readings)| readings);
            for in_use in inside.into_iter().flatten() {
                memory.in_use_bytes = memory.in_use_bytes.max(in_use?);
            }
            let reading = BudgetWatch::check_or_read(
                self.watch.as_mut(),
                &device,
                Phase::Eval.name(),
                "evaluation batch logits",
            )?;
            memory = memory.max(reading);
            let targets_n = targets.dims()[0];
            // Detached so that, in `autodiff` mode, each batch's graph dies with its logits
            // (the lesson is the graph, not a leak of our own making).
            let batch_loss =
                (loss_fn.forward(logits.clone(), targets.clone()) * targets_n as f32).detach();
            let hits = logits
                .argmax(1)
                .reshape([targets_n])
                .equal(targets)
                .int()
                .sum();
            loss_sum = Some(add_to(loss_sum, batch_loss));
            correct = Some(add_to(correct, hits));
            start += len;
        }
        let total = (split.len * per_sample) as f32;
        let loss_sum =
            read_floats(loss_sum.expect("the test split is never empty"), "eval").await?[0];
        let hits = correct
            .expect("the test split is never empty")
            .into_data_async()
            .await
            .map_err(|err| device_error("eval", err))?
            .try_to_vec_as::<i64>()
            .map_err(|err| device_error("eval", format!("{err:?}")))?[0];
        Ok(EvalRecord {
            step,
            loss: loss_sum / total,
            accuracy: hits as f32 / total,
            ms: started.elapsed().as_secs_f64() * 1e3,
            memory,
        })
    }

    /// The model between steps (the optimizer holds it only inside a step).
    fn current_model(&self) -> &Model {
        self.model.as_ref().expect("model present between steps")
    }

    /// The model's forward pass in the run's precision: float inputs cast to the compute type,
    /// f32 logits out for the loss.
    fn forward(&self, model: &Model, inputs: &BatchInputs, tap: &mut Tap) -> Tensor<2> {
        let inputs = &cast_inputs(inputs, compute_dtype(self.precision));
        match self.precision {
            MixedPrecision::Off => model.forward(inputs, tap),
            MixedPrecision::F16 => compute_copy(model)
                .forward(inputs, tap)
                .cast(FloatDType::F32),
            MixedPrecision::F16Unscaled => model.forward(inputs, tap).cast(FloatDType::F32),
        }
    }

    /// In use after each activation of a no-grad forward pass over one (micro-)batch of
    /// training samples, above in use before it: what `inplace_activation` changes.
    fn probe_activations(&self) -> Result<Vec<u64>, EngineError> {
        if self.fused.is_some() {
            return self.fused_probe_activations();
        }
        let model = self.current_model();
        if !model.has_tapped_activations() {
            return Ok(Vec::new());
        }
        let inner = &self.gpu.device;
        let model = model.valid();
        let len = largest_micro_batch(
            self.config.batch_size,
            self.config.strategies.grad_accumulation,
        );
        let batch = self
            .data
            .train
            .range_batch(0, len, self.data.targets_per_sample, inner);
        let before = sampler::read(inner, "probe")?.in_use_bytes;
        let mut tap = Tap::plain(self.config.strategies.inplace_activation);
        tap.probe = Some((inner.clone(), Vec::new()));
        drop(self.forward(&model, &batch.inputs, &mut tap));
        let (_, readings) = tap.probe.take().expect("set above");
        readings
            .into_iter()
            .map(|reading| reading.map(|bytes| bytes.saturating_sub(before)))
            .collect()
    }

    /// The data set the run trains on (host copies; the page draws the 2-D sets).
    pub fn dataset(&self) -> &Dataset {
        &self.data
    }

    /// For the 2-D sets: the current model's probability of class 1 on an `n` x `n` grid over
    /// `[-extent, extent]`^2, row by row from the top (y = extent) down. `None` for other data.
    pub async fn decision_grid(
        &self,
        n: usize,
        extent: f32,
    ) -> Result<Option<Vec<f32>>, EngineError> {
        if self.data.kind.input_kind() != InputKind::Points || n == 0 {
            return Ok(None);
        }
        if self.fused.is_some() {
            return self.fused_decision_grid(n, extent).await.map(Some);
        }
        let model = self.current_model().valid();
        let values = grid_points(n, extent);
        let points = Tensor::<2>::from_data(TensorData::new(values, [n * n, 2]), &self.gpu.device);
        let logits = self.forward(&model, &BatchInputs::Floats(points), &mut Tap::plain(true));
        let probability = burn::tensor::activation::softmax(logits, 1)
            .slice([0..n * n, 1..2])
            .reshape([n * n]);
        Ok(Some(read_floats(probability, "decision grid").await?))
    }

    /// Read back any losses still pending and derive the summary.
    pub async fn finish(mut self) -> Result<Timeline, EngineError> {
        self.read_back_losses().await?;
        let mut fallbacks = std::mem::take(&mut self.fallbacks);
        if let Some(step) = self.leaked.as_ref().and_then(LeakedSteps::capped_at_step) {
            fallbacks.push(format!(
                "loss_bookkeeping graph: the leak stopped growing at step {step}, at the cap of {} MiB",
                crate::engine::strategies::loss_bookkeeping::LEAK_CAP_BYTES >> 20
            ));
        }
        let outcome = StrategyOutcome {
            fallbacks,
            loss_scale: self.scaler.as_ref().map(GradScaler::scale),
            skipped_steps: self.scaler.as_ref().map_or(0, GradScaler::skipped_steps),
            leaked_bytes: self.leaked.as_ref().map_or(0, LeakedSteps::bytes),
            activation_layers_in_use: self.probe_activations()?,
            weight_bytes: self.weight_bytes,
            eval_weight_bytes: self.eval_weight_bytes,
        };
        let summary = Summary::build(
            &self.config,
            &self.gpu.adapter,
            &self.prediction,
            self.baseline,
            sampler::paged_high_water_bytes(&self.device),
            &self.steps,
            &self.evals,
            outcome,
        );
        Ok(Timeline {
            summary,
            predicted_layers: self.prediction.layers.clone(),
            config: self.config,
            steps: self.steps,
            evals: self.evals,
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

/// cubecl fixes the pools when the device starts; a run asking for others says so.
fn pool_fallback(config: &RunConfig, gpu: &Gpu) -> Option<String> {
    let asked = config.strategies.memory_pool;
    (asked != gpu.memory_pool).then(|| {
        if cfg!(target_arch = "wasm32") {
            return format!(
                "memory_pool {}: cubecl has only exclusive pages on WebGPU; ran with exclusive",
                asked.name()
            );
        }
        format!(
            "memory_pool {}: the device was started with {} pools, and cubecl fixes them at start; \
             ran with {} (start a new process, or reload the page, to change it)",
            asked.name(),
            gpu.memory_pool.name(),
            gpu.memory_pool.name()
        )
    })
}

/// Give an out-of-memory error its step and what would fit; other errors pass as they are.
fn explain(
    err: EngineError,
    step: Option<usize>,
    config: &RunConfig,
    gpu: &Gpu,
    budget: Option<u64>,
) -> EngineError {
    match (err, budget) {
        (EngineError::OutOfMemory(mut oom), Some(budget)) => {
            oom.step = step;
            let live_bytes_fit = oom.in_use_bytes + oom.asked_bytes <= budget;
            let needed = (oom.in_use_bytes + oom.asked_bytes).max(oom.reserved_bytes);
            oom.suggestions = what_fits(
                config,
                budget,
                needed,
                gpu.adapter.shader_f16,
                live_bytes_fit,
            );
            EngineError::OutOfMemory(oom)
        }
        (err, _) => err,
    }
}

/// A running sum that starts at its first term (device tensors have no cheap zero of the right
/// shape and dtype at hand).
fn add_to<T: std::ops::Add<Output = T>>(sum: Option<T>, term: T) -> T {
    match sum {
        Some(sum) => sum + term,
        None => term,
    }
}

fn device_error(phase: &str, err: impl std::fmt::Display) -> EngineError {
    EngineError::Device {
        phase: phase.into(),
        message: err.to_string(),
    }
}

async fn read_floats(tensor: Tensor<1>, phase: &str) -> Result<Vec<f32>, EngineError> {
    tensor
        .into_data_async()
        .await
        .map_err(|err| device_error(phase, err))?
        .try_to_vec_as::<f32>()
        .map_err(|err| device_error(phase, format!("{err:?}")))
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
