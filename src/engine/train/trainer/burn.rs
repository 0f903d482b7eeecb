//! burn's training step: forward and backward through autodiff, then burn's optimizer, with the
//! strategies acting at their hooks and the allocator read at the step's check points.

use burn::module::Module;
use burn::nn::loss::{CrossEntropyLoss, CrossEntropyLossConfig};
use burn::optim::{GradientsAccumulator, GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, FloatDType, Int, Tensor, TensorData};

use crate::engine::config::{OpPath, RunConfig};
use crate::engine::data::{Batch, BatchInputs};
use crate::engine::error::EngineError;
use crate::engine::memory::MemoryReading;
use crate::engine::models::{LayerHook, Model, Op, Plain};
use crate::engine::ops::cross_entropy;
use crate::engine::outcome::Site;
use crate::engine::phase::Phase;
use crate::engine::strategies::Hooks;
use crate::engine::train::optimizer;
use crate::engine::train::tap::{KeptByOp, LayerTap};

use super::{Context, Evaluation, FirstEvalBatch, add_to, device_error, read_floats};

pub(crate) struct BurnTrainer {
    /// `None` only while the optimizer owns it inside a step.
    model: Option<Model>,
    optimizer: ModuleOptimizer,
    /// On the training device, and on the device without autodiff (no-grad evaluation).
    loss: CrossEntropyLoss,
    eval_loss: CrossEntropyLoss,
    /// burn's loss or vramlab's fused one (`strategies.cross_entropy`).
    cross_entropy: OpPath,
    /// Detached loss tensors not yet read back, with their step index (0-based).
    pending: Vec<(usize, Tensor<1>)>,
}

impl BurnTrainer {
    pub fn new(config: &RunConfig, model: Model, device: &Device, inner: &Device) -> Self {
        Self {
            model: Some(model),
            optimizer: optimizer::build(config.optimizer),
            loss: CrossEntropyLossConfig::new().init(device),
            eval_loss: CrossEntropyLossConfig::new().init(inner),
            cross_entropy: config.strategies.cross_entropy,
            pending: Vec::new(),
        }
    }

    /// The model between steps (the optimizer holds it only inside a step).
    fn model(&self) -> &Model {
        self.model.as_ref().expect("model present between steps")
    }

    pub async fn step(
        &mut self,
        ctx: &mut Context,
        index: usize,
        picked: &[usize],
    ) -> Result<(), EngineError> {
        let model = self
            .model
            .take()
            .expect("the model is back after every step");
        // On failure the model goes back, so the run stays as it was before the step.
        let (grads, apply, step_loss) = match self.update(ctx, &model, index, picked).await {
            Ok(done) => done,
            Err(err) => {
                self.model = Some(model);
                return Err(err);
            }
        };
        let model = if apply {
            let held = ctx.hooks.optimizer_temporaries(&model);
            let model = self.optimizer.step(ctx.config.learning_rate, model, grads);
            drop(held);
            model
        } else {
            model
        };
        self.model = Some(model);
        self.pending.push((index, step_loss));
        Ok(())
    }

    /// The step's gradients, whether the strategies let the optimizer apply them, and the
    /// step's loss.
    async fn update(
        &mut self,
        ctx: &mut Context,
        model: &Model,
        index: usize,
        picked: &[usize],
    ) -> Result<(GradientsParams, bool, Tensor<1>), EngineError> {
        let (mut accumulated, step_loss) = self.passes(ctx, model, index, picked).await?;
        let (grads, mut reads) = ctx.hooks.gradients(accumulated.grads(), model);
        // A plan follows the shapes of a step that applies its update.
        if reads.is_empty() || ctx.plan {
            return Ok((grads, true, step_loss));
        }
        let read = match reads.len() {
            1 => reads.pop().expect("one"),
            _ => Tensor::cat(reads, 0),
        };
        let values = read_floats(read, "gradient check").await?;
        Ok((grads, ctx.hooks.gradients_read(&values), step_loss))
    }

    /// Forward and backward over each pass of the batch (one, unless a strategy cuts it); each
    /// phase keeps its largest reading over the passes. Returns the summed gradients and the
    /// step's loss.
    async fn passes(
        &mut self,
        ctx: &mut Context,
        model: &Model,
        index: usize,
        picked: &[usize],
    ) -> Result<(GradientsAccumulator<Model>, Tensor<1>), EngineError> {
        let Context {
            hooks,
            meter,
            data,
            device,
            ..
        } = ctx;
        let mut accumulated = GradientsAccumulator::<Model>::new();
        let mut step_loss: Option<Tensor<1>> = None;
        for pass in hooks.split_batch(picked) {
            let batch = hooks
                .batch(pass, device)
                .unwrap_or_else(|| data.train.batch(pass, data.targets_per_sample, device));
            meter.checkpoint(Phase::Upload, Site::BatchUpload)?;
            let mut tap = LayerTap::new(hooks.keeps_activation_inputs(), meter);
            let logits = forward(hooks, model, &batch.inputs, &mut tap).await;
            tap.finish()?;
            let kept_logits = hooks.keeps_logits().then(|| logits.clone());
            let mut loss = self.loss(&self.loss, logits, batch.targets);
            if pass.len() != picked.len() {
                // A pass's mean loss counts by its share of the batch, so the summed gradients
                // are the whole batch's.
                loss = loss.mul_scalar(pass.len() as f32 / picked.len() as f32);
            }
            meter.checkpoint(Phase::Forward, Site::LogitsAndLoss)?;
            let backward_from = hooks.backward_loss(loss.clone());
            let grads = backward_from.backward();
            hooks.end_of_backward();
            accumulated.accumulate(model, GradientsParams::from_grads(grads, model));
            meter.checkpoint(Phase::Backward, Site::Gradients)?;
            hooks.after_backward(index + 1, &loss, kept_logits.as_ref());
            step_loss = Some(add_to(step_loss, loss.detach()));
        }
        Ok((
            accumulated,
            step_loss.expect("a batch has at least one pass"),
        ))
    }

    /// The mean cross-entropy, through `burn_loss` (built for the logits' device) or the fused op.
    fn loss(
        &self,
        burn_loss: &CrossEntropyLoss,
        logits: Tensor<2>,
        targets: Tensor<1, Int>,
    ) -> Tensor<1> {
        match self.cross_entropy {
            OpPath::Naive => burn_loss.forward(logits, targets),
            OpPath::Fused => cross_entropy::fused(logits, targets),
        }
    }

    pub fn pending_losses(&self) -> usize {
        self.pending.len()
    }

    pub async fn read_back_losses(&mut self) -> Result<Vec<(usize, f32)>, EngineError> {
        if self.pending.is_empty() {
            return Ok(Vec::new());
        }
        let (indices, tensors): (Vec<usize>, Vec<Tensor<1>>) =
            std::mem::take(&mut self.pending).into_iter().unzip();
        let values = read_floats(Tensor::cat(tensors, 0), "loss readback").await?;
        Ok(indices.into_iter().zip(values).collect())
    }

    /// On the model and device the strategies pick (the no-grad copy by default).
    pub async fn evaluate(&mut self, ctx: &mut Context) -> Result<Evaluation, EngineError> {
        let Context {
            hooks,
            meter,
            data,
            device: training,
            gpu,
            config,
            plan,
        } = ctx;
        let model = self.model();
        let (model, device) = hooks
            .eval_model(model, training)
            .unwrap_or_else(|| (model.valid(), gpu.device.clone()));
        let model = hooks.prepare_eval(model, meter)?;
        let loss_fn = if device.is_autodiff() {
            &self.loss
        } else {
            &self.eval_loss
        };
        let split = &data.test;
        let per_sample = data.targets_per_sample;
        let mut memory = MemoryReading::default();
        let mut first_batch = None;
        let mut loss_sum: Option<Tensor<1>> = None;
        let mut correct: Option<Tensor<1, Int>> = None;
        let evaluated = config.evaluated_samples(split.len);
        let mut start = 0;
        while start < evaluated {
            let len = config.eval_batch_size.min(evaluated - start);
            let before = (start == 0).then(|| meter.peek(Phase::Eval)).transpose()?;
            let Batch {
                inputs, targets, ..
            } = split.range_batch(start, len, per_sample, &device);
            let after_upload = before.map(|_| meter.peek(Phase::Eval)).transpose()?;
            // Without a graph each layer's input is freed once its output exists, so the
            // evaluation's peak is inside the forward pass: the meter's high-water mark sees it.
            let mut tap = LayerTap::new(hooks.keeps_activation_inputs(), meter);
            let logits = forward(hooks, &model, &inputs, &mut tap).await;
            tap.finish()?;
            let with_logits = meter.read(Phase::Eval, Site::EvalLogits)?;
            memory = memory.max(with_logits);
            if let (Some(before), Some(after_upload)) = (before, after_upload) {
                first_batch = Some(FirstEvalBatch {
                    before: before.pooled_in_use_bytes,
                    after_upload: after_upload.pooled_in_use_bytes,
                    with_logits: with_logits.pooled_in_use_bytes,
                    logits_bytes: (logits.dims().iter().product::<usize>() * logits.dtype().size())
                        as u64,
                });
            }
            let targets_n = targets.dims()[0];
            // Detached so that, in `autodiff` mode, each batch's graph dies with its logits
            // (the lesson is the graph, not a leak of our own making).
            let batch_loss =
                (self.loss(loss_fn, logits.clone(), targets.clone()) * targets_n as f32).detach();
            let hits = scored_hits(logits, targets, len, per_sample, data.scored_from);
            loss_sum = Some(add_to(loss_sum, batch_loss));
            correct = Some(add_to(correct, hits));
            start += len;
        }
        if *plan {
            return Ok(Evaluation {
                loss: f32::NAN,
                accuracy: f32::NAN,
                memory,
                first_batch,
            });
        }
        let total = (evaluated * per_sample) as f32;
        let scored = (evaluated * (per_sample - data.scored_from)) as f32;
        let loss_sum =
            read_floats(loss_sum.expect("the test split is never empty"), "eval").await?[0];
        let hits = correct
            .expect("the test split is never empty")
            .into_data_async()
            .await
            .map_err(|err| EngineError::from_execution("eval", err))?
            .try_to_vec_as::<i64>()
            .map_err(|err| device_error("eval", format!("{err:?}")))?[0];
        Ok(Evaluation {
            loss: loss_sum / total,
            accuracy: hits as f32 / scored,
            memory,
            first_batch,
        })
    }

    pub async fn probe_activations(&self, ctx: &mut Context) -> Result<Vec<u64>, EngineError> {
        let model = self.model();
        if !model.has_tapped_activations() {
            return Ok(Vec::new());
        }
        let inner = &ctx.gpu.device;
        let model = model.valid();
        let data = &ctx.data;
        let len = ctx.config.largest_micro_batch();
        let batch = data
            .train
            .range_batch(0, len, data.targets_per_sample, inner);
        let before = ctx.meter.peek(Phase::Eval)?.in_use_bytes;
        let mut tap = LayerTap::new(ctx.hooks.keeps_activation_inputs(), &mut ctx.meter).probing();
        drop(forward(&ctx.hooks, &model, &batch.inputs, &mut tap).await);
        let readings = tap.finish()?;
        Ok(readings
            .into_iter()
            .map(|bytes| bytes.saturating_sub(before))
            .collect())
    }

    /// One training forward pass and loss through autodiff, read after each op; the graph is
    /// dropped without a backward pass.
    pub async fn probe_kept_by_op(&self, ctx: &mut Context) -> Result<Vec<(Op, u64)>, EngineError> {
        let model = self.model();
        if !matches!(model, Model::Transformer(_) | Model::Llama(_)) {
            return Ok(Vec::new());
        }
        let data = &ctx.data;
        let len = ctx.config.largest_micro_batch();
        let batch = data
            .train
            .range_batch(0, len, data.targets_per_sample, &ctx.device);
        let mut tap = KeptByOp::new(&mut ctx.meter)?;
        let logits = forward(&ctx.hooks, model, &batch.inputs, &mut tap).await;
        let loss = self.loss(&self.loss, logits, batch.targets);
        tap.after(Op::Loss);
        let kept = tap.finish();
        drop(loss);
        kept
    }

    pub async fn class_one_probability(
        &self,
        ctx: &Context,
        points: Vec<f32>,
    ) -> Result<Vec<f32>, EngineError> {
        let n = points.len() / 2;
        let model = self.model().valid();
        let points = Tensor::<2>::from_data(TensorData::new(points, [n, 2]), &ctx.gpu.device);
        let logits = forward(&ctx.hooks, &model, &BatchInputs::Floats(points), &mut Plain).await;
        let probability = burn::tensor::activation::softmax(logits, 1)
            .slice([0..n, 1..2])
            .reshape([n]);
        read_floats(probability, "decision grid").await
    }
}

/// Right answers among the scored targets of `samples` samples (each sample's targets from
/// `scored_from` on).
fn scored_hits(
    logits: Tensor<2>,
    targets: Tensor<1, Int>,
    samples: usize,
    per_sample: usize,
    scored_from: usize,
) -> Tensor<1, Int> {
    let hits = logits
        .argmax(1)
        .reshape([samples, per_sample])
        .equal(targets.reshape([samples, per_sample]));
    hits.slice_dim(1, scored_from..per_sample).int().sum()
}

/// The model's forward pass in the precision the strategies compute in: float inputs cast to
/// it, f32 logits out for the loss.
async fn forward(
    hooks: &Hooks,
    model: &Model,
    inputs: &BatchInputs,
    tap: &mut impl LayerHook,
) -> Tensor<2> {
    let dtype = hooks.compute_dtype();
    let inputs = &match (inputs, dtype) {
        (BatchInputs::Floats(x), Some(dtype)) => BatchInputs::Floats(x.clone().cast(dtype)),
        _ => inputs.clone(),
    };
    let logits = match hooks.compute_model(model) {
        Some(copy) => copy.forward(inputs, tap).await,
        None => model.forward(inputs, tap).await,
    };
    match dtype {
        Some(_) => logits.cast(FloatDType::F32),
        None => logits,
    }
}
