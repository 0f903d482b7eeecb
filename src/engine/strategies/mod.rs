//! The memory-saving strategies, one file per config field of `strategies`. Each file owns the
//! strategy's state, its effect on a run, what it refuses (its config checks) and what it
//! reports. The training loop calls them through [`Strategy`] at fixed points of a run and
//! holds none of their state.
//!
//! Adding a strategy: its config field, a file here implementing [`Strategy`] at the points it
//! acts, one line in [`Hooks::new`], its entry in [`catalog`], and its tests.

pub mod catalog;
pub mod checkpointing;
pub mod data_residency;
pub mod eval_mode;
pub mod free_cache;
pub mod grad_accumulation;
pub mod inplace_activation;
pub mod kernels;
pub mod loss_bookkeeping;
pub mod memory_pool;
pub mod mixed_precision;
pub mod offload;
pub mod sharding;
pub mod trainable;
pub mod weight_dtype;

use burn::optim::GradientsParams;
use burn::tensor::{Device, FloatDType, Tensor};

use crate::engine::config::RunConfig;
use crate::engine::data::{Batch, Dataset};
use crate::engine::device::Gpu;
use crate::engine::error::{ConfigError, EngineError};
use crate::engine::memory::meter::Meter;
use crate::engine::models::Model;
use crate::engine::outcome::Fallback;

/// What a strategy can see once the run's parameters exist.
pub struct Setup<'a> {
    pub data: &'a Dataset,
    /// The device the model trains on.
    pub device: &'a Device,
    pub meter: &'a mut Meter,
    /// The model, its parameters on the device.
    pub model: &'a Model,
    /// Set by a strategy that keeps gradient buckets for the whole run (data parallel's), as
    /// the allocator counted them: the gradient category's, not the resident input's.
    pub gradient_buckets: u64,
}

/// What a strategy reports at the end of a run (the summary's strategy fields).
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub fallbacks: Vec<Fallback>,
    pub loss_scale: Option<f32>,
    pub skipped_steps: usize,
    pub leaked_bytes: u64,
    pub eval_weight_bytes: Option<u64>,
    /// Parameters in the model, training, and in LoRA adapters, counted once it is final.
    pub params: Option<trainable::ParamCounts>,
    /// `weight_dtype` = `q4` or `q8`: what the quantized base stores.
    pub quantized: Option<weight_dtype::QuantizedWeights>,
    /// `gpus` above 1: what one GPU holds of the sharded run.
    pub sharded: Option<sharding::ShardedRun>,
    /// `offload`: the most bytes held in host memory (counted as tensors move, per GPU).
    pub host_bytes: Option<u64>,
}

/// What a step's record gains from the strategies.
#[derive(Clone, Copy, Debug, Default)]
pub struct StepNotes {
    pub loss_scale: Option<f32>,
    pub skipped: bool,
}

/// The points of a run where a strategy may act. Every method has a default that does
/// nothing, so a strategy implements only the points it needs.
pub trait Strategy {
    /// The device the model trains on.
    fn training_device(&self, device: Device) -> Device {
        device
    }
    /// The float type forward passes compute in, when not the parameters' own.
    fn compute_dtype(&self) -> Option<FloatDType> {
        None
    }
    /// The float type the weights are kept in from the start, when not f32.
    fn stored_dtype(&self) -> Option<FloatDType> {
        None
    }
    /// The model as built, before its parameters exist on the device.
    fn prepare_model(&mut self, model: Model) -> Model {
        model
    }
    /// The model once every strategy has prepared it.
    fn finish_model(&mut self, model: Model) -> Model {
        model
    }
    /// Once the parameters exist: whatever the strategy keeps for the whole run.
    fn setup(&mut self, _run: &mut Setup<'_>) -> Result<(), EngineError> {
        Ok(())
    }
    /// The model a forward pass runs, when it is not the trained one itself.
    fn compute_model(&self, _model: &Model) -> Option<Model> {
        None
    }
    /// A training batch from somewhere other than host memory.
    fn batch(&self, _indices: &[usize], _device: &Device) -> Option<Batch> {
        None
    }
    /// The forward passes a training batch is cut into, when more than one.
    fn split_batch<'a>(&self, _picked: &'a [usize]) -> Option<Vec<&'a [usize]>> {
        None
    }
    /// Keep each activation's input alive until its output exists.
    fn keeps_activation_inputs(&self) -> bool {
        false
    }
    /// Wants each training pass's logits handed to [`Self::after_backward`].
    fn keeps_logits(&self) -> bool {
        false
    }
    /// A training pass's backward is done: its loss (not detached) and, when asked for, its
    /// logits. `step` is 1-based.
    fn after_backward(&mut self, _step: usize, _loss: &Tensor<1>, _logits: Option<&Tensor<2>>) {}
    /// The loss backward runs from.
    fn backward_loss(&self, loss: Tensor<1>) -> Tensor<1> {
        loss
    }
    /// After backward: the gradients the optimizer will see, and optionally one value for the
    /// loop to read back (the only readback a strategy may ask for inside a step).
    fn gradients(
        &mut self,
        grads: GradientsParams,
        _model: &Model,
    ) -> (GradientsParams, Option<Tensor<1>>) {
        (grads, None)
    }
    /// A training pass's backward has run its last node, before its gradients are read.
    fn end_of_backward(&mut self) {}
    /// Tensors held across the optimizer's step, standing for the temporaries the step as
    /// people run it keeps where burn's keeps fewer.
    fn optimizer_temporaries(&self, _model: &Model) -> Vec<Tensor<1>> {
        Vec::new()
    }
    /// The value asked for by [`Self::gradients`]; whether the optimizer step may go ahead.
    fn gradients_read(&mut self, _value: f32) -> bool {
        true
    }
    /// What this step's record should say about the strategy.
    fn notes(&self, _notes: &mut StepNotes) {}
    /// The end of a step, after the optimizer. `last_of_epoch`: the next batch reshuffles.
    fn end_of_step(&mut self, _meter: &mut Meter, _last_of_epoch: bool) -> Result<(), EngineError> {
        Ok(())
    }
    /// The model and device evaluation runs on, when not the no-grad copy on the inner device.
    fn eval_model(&self, _model: &Model, _training: &Device) -> Option<(Model, Device)> {
        None
    }
    /// The evaluation model after the strategy's change, measured with `meter`.
    fn prepare_eval(&mut self, model: Model, _meter: &mut Meter) -> Result<Model, EngineError> {
        Ok(model)
    }
    /// What the strategy reports in the run's summary.
    fn report(&self, _report: &mut Report) {}
}

/// The strategies of one run, in the order their hooks run.
pub struct Hooks {
    list: Vec<Box<dyn Strategy>>,
    /// Which strategies asked for a readback in [`Hooks::gradients`], in order.
    asked: Vec<usize>,
}

impl Hooks {
    /// `host`: the device standing in for the host's memory, under `offload = parameters`.
    pub fn new(config: &RunConfig, gpu: &Gpu, host: Option<Device>) -> Self {
        let list: Vec<Box<dyn Strategy>> = vec![
            // First: every parameter is cut to its shard before any strategy creates one (the
            // precision casts shards, LoRA builds its adapters on them).
            Box::new(sharding::Sharding::new(config, gpu, host)),
            Box::new(checkpointing::Checkpointing::new(config)),
            Box::new(offload::Offload::new(config)),
            // Before the precision, which casts the rest to f16: each body matrix goes from its
            // initializer (in f16 for a llama, `models::Drawn`) straight into blocks.
            Box::new(weight_dtype::QuantizedBase::new(config, &gpu.adapter)),
            Box::new(mixed_precision::Precision::new(config, &gpu.adapter)),
            // After the precision: adapters take the precision their bases were given.
            Box::new(trainable::Trainable::new(config)),
            Box::new(memory_pool::Pools::new(config, gpu.memory_pool)),
            Box::new(data_residency::Residency::new(config)),
            Box::new(grad_accumulation::Accumulation::new(config)),
            Box::new(inplace_activation::InPlace::new(config)),
            Box::new(loss_bookkeeping::Bookkeeping::new(config)),
            Box::new(free_cache::FreeCache::new(config)),
            Box::new(eval_mode::EvalMode::new(config)),
            Box::new(weight_dtype::Int8Eval::new(config)),
        ];
        Self {
            list,
            asked: Vec::new(),
        }
    }

    pub fn training_device(&self, device: Device) -> Device {
        self.list
            .iter()
            .fold(device, |device, s| s.training_device(device))
    }

    pub fn compute_dtype(&self) -> Option<FloatDType> {
        self.list.iter().find_map(|s| s.compute_dtype())
    }

    /// The float type the model's weights are built in (`Model::build`).
    pub fn stored_dtype(&self) -> FloatDType {
        self.list
            .iter()
            .find_map(|s| s.stored_dtype())
            .unwrap_or(FloatDType::F32)
    }

    pub fn prepare_model(&mut self, model: Model) -> Model {
        let model = self
            .list
            .iter_mut()
            .fold(model, |model, s| s.prepare_model(model));
        self.list
            .iter_mut()
            .fold(model, |model, s| s.finish_model(model))
    }

    pub fn setup(&mut self, run: &mut Setup<'_>) -> Result<(), EngineError> {
        self.list.iter_mut().try_for_each(|s| s.setup(run))
    }

    pub fn compute_model(&self, model: &Model) -> Option<Model> {
        self.list.iter().find_map(|s| s.compute_model(model))
    }

    pub fn batch(&self, indices: &[usize], device: &Device) -> Option<Batch> {
        self.list.iter().find_map(|s| s.batch(indices, device))
    }

    /// The forward passes of one training batch (one, unless a strategy cuts it).
    pub fn split_batch<'a>(&self, picked: &'a [usize]) -> Vec<&'a [usize]> {
        self.list
            .iter()
            .find_map(|s| s.split_batch(picked))
            .unwrap_or_else(|| vec![picked])
    }

    pub fn keeps_activation_inputs(&self) -> bool {
        self.list.iter().any(|s| s.keeps_activation_inputs())
    }

    pub fn keeps_logits(&self) -> bool {
        self.list.iter().any(|s| s.keeps_logits())
    }

    pub fn after_backward(&mut self, step: usize, loss: &Tensor<1>, logits: Option<&Tensor<2>>) {
        for s in &mut self.list {
            s.after_backward(step, loss, logits);
        }
    }

    pub fn backward_loss(&self, loss: Tensor<1>) -> Tensor<1> {
        self.list.iter().fold(loss, |loss, s| s.backward_loss(loss))
    }

    /// The gradients after every strategy's change, and the values they ask to read back.
    pub fn gradients(
        &mut self,
        mut grads: GradientsParams,
        model: &Model,
    ) -> (GradientsParams, Vec<Tensor<1>>) {
        self.asked.clear();
        let mut reads = Vec::new();
        for (i, s) in self.list.iter_mut().enumerate() {
            let (next, read) = s.gradients(grads, model);
            grads = next;
            if let Some(read) = read {
                self.asked.push(i);
                reads.push(read);
            }
        }
        (grads, reads)
    }

    pub fn end_of_backward(&mut self) {
        for s in &mut self.list {
            s.end_of_backward();
        }
    }

    /// What the strategies hold across the optimizer's step (dropped after it).
    pub fn optimizer_temporaries(&self, model: &Model) -> Vec<Tensor<1>> {
        self.list
            .iter()
            .flat_map(|s| s.optimizer_temporaries(model))
            .collect()
    }

    /// The values read back for [`Hooks::gradients`], in its order; whether to step.
    pub fn gradients_read(&mut self, values: &[f32]) -> bool {
        let asked = std::mem::take(&mut self.asked);
        asked.into_iter().zip(values).fold(true, |go, (i, &value)| {
            self.list[i].gradients_read(value) && go
        })
    }

    pub fn notes(&self) -> StepNotes {
        let mut notes = StepNotes::default();
        for s in &self.list {
            s.notes(&mut notes);
        }
        notes
    }

    pub fn end_of_step(
        &mut self,
        meter: &mut Meter,
        last_of_epoch: bool,
    ) -> Result<(), EngineError> {
        self.list
            .iter_mut()
            .try_for_each(|s| s.end_of_step(meter, last_of_epoch))
    }

    pub fn eval_model(&self, model: &Model, training: &Device) -> Option<(Model, Device)> {
        self.list.iter().find_map(|s| s.eval_model(model, training))
    }

    pub fn prepare_eval(&mut self, model: Model, meter: &mut Meter) -> Result<Model, EngineError> {
        self.list
            .iter_mut()
            .try_fold(model, |model, s| s.prepare_eval(model, meter))
    }

    pub fn report(&self) -> Report {
        let mut report = Report::default();
        for s in &self.list {
            s.report(&mut report);
        }
        // A sharded model's own counts are its shards': the whole model's are the sharding's.
        if let (Some(sharded), Some(params)) = (&report.sharded, &mut report.params) {
            params.model = sharded.model_values;
            params.adapters = sharded.adapter_values;
            params.trainable = sharded.trained_values;
        }
        report
    }
}

/// `tensor` turned into `change(tensor)` beneath autodiff, on the device it was on: recorded in
/// no graph (a graph would hold the change's tensors until a backward swept it), and back on the
/// autodiff device with its checkpointing strategy where it was there. The result is a fresh
/// tensor: the caller marks it as trained when it should be.
pub(crate) fn beneath_autodiff<const D: usize>(
    tensor: Tensor<D>,
    change: impl FnOnce(Tensor<D>) -> Tensor<D>,
) -> Tensor<D> {
    let strategy = tensor.gradient_checkpointing_strategy();
    let changed = change(tensor.inner());
    match strategy {
        Some(strategy) => changed
            .autodiff()
            .with_gradient_checkpointing_strategy(strategy),
        None => changed,
    }
}

/// What each strategy refuses to run with, naming the field; `validate` calls this last.
pub(crate) fn check(config: &RunConfig) -> Result<(), ConfigError> {
    kernels::check(config)?;
    checkpointing::check(config)?;
    trainable::check(config)?;
    weight_dtype::check(config)?;
    mixed_precision::check(config)?;
    offload::check(config)?;
    sharding::check(config)
}
