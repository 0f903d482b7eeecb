//! The step, evaluation, per-layer probe and decision grid through vramlab's own kernels
//! (`strategies.kernels = fused`); the readings and budget checks are the ones burn's path
//! takes, at the same points.

use burn::cubecl::server::Handle;

use crate::engine::data::{HostInputs, Split, gather};
use crate::engine::device::cube_client;
use crate::engine::error::EngineError;
use crate::engine::fused::FusedMlp;
use crate::engine::memory::MemoryReading;
use crate::engine::models::{Mlp, Model};
use crate::engine::outcome::Site;
use crate::engine::phase::Phase;

use super::{Context, Evaluation, device_error};

/// Rows `indices` of a float split, row-major.
fn host_floats(split: &Split, indices: &[usize]) -> Vec<f32> {
    let HostInputs::Floats { values, width } = &split.inputs else {
        unreachable!("validation allows kernels = fused for float inputs only")
    };
    gather(values, *width, indices)
}

fn host_labels(split: &Split, indices: &[usize]) -> Vec<u32> {
    indices.iter().map(|&i| split.targets[i] as u32).collect()
}

/// A row of logits' largest value and the sum of exp(logit - largest): softmax and
/// log-softmax without overflow.
fn max_and_exp_sum(row: &[f32]) -> (f32, f32) {
    let top = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    (top, row.iter().map(|v| (v - top).exp()).sum())
}

/// Summed softmax cross-entropy and the number of correct argmaxes of `logits` (row-major,
/// `classes` wide) against `labels`.
fn loss_and_hits(logits: &[f32], classes: usize, labels: &[u32]) -> (f64, usize) {
    let mut loss = 0.0f64;
    let mut hits = 0;
    for (row, &label) in logits.chunks_exact(classes).zip(labels) {
        let (top, total) = max_and_exp_sum(row);
        loss += f64::from(total.ln() + top - row[label as usize]);
        let best = row
            .iter()
            .enumerate()
            .fold(0, |best, (i, v)| if *v > row[best] { i } else { best });
        hits += usize::from(best == label as usize);
    }
    (loss, hits)
}

/// The burn model's initial weights until the first use, then the fused buffers (burn's copy
/// goes once they exist).
enum Weights {
    Initial(Box<Mlp>),
    Fused(Box<FusedMlp>),
}

pub(crate) struct FusedTrainer {
    weights: Weights,
    /// Loss buffers not yet read back, with their step index (0-based).
    pending: Vec<(usize, Handle)>,
}

impl FusedTrainer {
    pub fn new(model: Model) -> Self {
        let Model::Mlp(mlp) = model else {
            unreachable!("validation allows kernels = fused for mlp only")
        };
        Self {
            weights: Weights::Initial(Box::new(mlp)),
            pending: Vec::new(),
        }
    }

    /// The fused trainer, built on first use from the burn model's initial weights on the same
    /// memory pool, so both kernel paths start from the same point.
    async fn ready(&mut self, ctx: &Context) -> Result<&mut FusedMlp, EngineError> {
        if let Weights::Initial(mlp) = &self.weights {
            let client = cube_client(&ctx.gpu.device)
                .ok_or_else(|| device_error("setup", "kernels = fused needs a wgpu device"))?;
            let fused = FusedMlp::from_mlp(mlp, client, ctx.config.optimizer)
                .await
                .map_err(|err| device_error("setup", err))?;
            self.weights = Weights::Fused(Box::new(fused));
        }
        match &mut self.weights {
            Weights::Fused(fused) => Ok(fused),
            Weights::Initial(_) => unreachable!("converted above"),
        }
    }

    /// One step in the fused kernels, read at the same points as burn's step: after the
    /// upload, after each layer's output and the loss (forward), after the gradients
    /// (backward); the run takes the end-of-step reading.
    pub async fn step(
        &mut self,
        ctx: &mut Context,
        index: usize,
        picked: &[usize],
    ) -> Result<(), EngineError> {
        let learning_rate = ctx.config.learning_rate;
        let fused = self.ready(ctx).await?;
        let loss = passes(fused, ctx, picked)?;
        fused.optimizer_step(learning_rate);
        self.pending.push((index, loss));
        Ok(())
    }

    pub fn pending_losses(&self) -> usize {
        self.pending.len()
    }

    pub async fn read_back_losses(&mut self) -> Result<Vec<(usize, f32)>, EngineError> {
        let Weights::Fused(fused) = &self.weights else {
            return Ok(Vec::new());
        };
        if self.pending.is_empty() {
            return Ok(Vec::new());
        }
        let (indices, handles): (Vec<usize>, Vec<_>) =
            std::mem::take(&mut self.pending).into_iter().unzip();
        let values = fused
            .read(handles)
            .await
            .map_err(|err| device_error("loss readback", err))?;
        Ok(indices
            .into_iter()
            .zip(values)
            .filter_map(|(index, value)| value.first().map(|&loss| (index, loss)))
            .collect())
    }

    /// Loss and accuracy on the test split in batches of `eval_batch_size`; memory is read
    /// after every layer of the first (largest) batch, where the peak is.
    pub async fn evaluate(&mut self, ctx: &mut Context) -> Result<Evaluation, EngineError> {
        let fused = self.ready(ctx).await?;
        let split = &ctx.data.test;
        let mut memory = MemoryReading::default();
        let mut loss_sum = 0.0;
        let mut hits = 0;
        let evaluated = ctx.config.evaluated_samples(split.len);
        let mut start = 0;
        while start < evaluated {
            let len = ctx.config.eval_batch_size.min(evaluated - start);
            let indices: Vec<usize> = (start..start + len).collect();
            let input = fused.upload(&host_floats(split, &indices));
            let first = start == 0;
            let meter = &mut ctx.meter;
            let logits = fused.infer(input, len, |layer| {
                if first {
                    let reading = meter.read(Phase::Eval, Site::LayerOutput(layer + 1))?;
                    memory = memory.max(reading);
                }
                Ok::<_, EngineError>(())
            })?;
            let values = fused
                .read(vec![logits])
                .await
                .map_err(|err| device_error("eval", err))?;
            let classes = values[0].len() / len;
            let (loss, right) = loss_and_hits(&values[0], classes, &host_labels(split, &indices));
            loss_sum += loss;
            hits += right;
            start += len;
        }
        let total = evaluated as f64;
        Ok(Evaluation {
            loss: (loss_sum / total) as f32,
            accuracy: (hits as f64 / total) as f32,
            memory,
            // The fused step reads after each layer instead (the probe).
            first_batch: None,
        })
    }

    /// In use after each layer's output of a forward pass over one training batch, above in
    /// use before it (the fused step keeps exactly these).
    pub async fn probe_activations(&mut self, ctx: &mut Context) -> Result<Vec<u64>, EngineError> {
        let fused = self.ready(ctx).await?;
        let meter = &mut ctx.meter;
        let len = ctx.config.batch_size.min(ctx.data.train.len);
        let indices: Vec<usize> = (0..len).collect();
        let before = meter.peek(Phase::Eval)?.in_use_bytes;
        let input = fused.upload(&host_floats(&ctx.data.train, &indices));
        let mut readings = Vec::new();
        let logits = fused.infer(input, len, |_| {
            let in_use = meter.peek(Phase::Eval)?.in_use_bytes;
            readings.push(in_use.saturating_sub(before));
            Ok::<_, EngineError>(())
        })?;
        drop(logits);
        Ok(readings)
    }

    pub async fn class_one_probability(
        &mut self,
        ctx: &Context,
        points: Vec<f32>,
    ) -> Result<Vec<f32>, EngineError> {
        let fused = self.ready(ctx).await?;
        let n = points.len() / 2;
        let input = fused.upload(&points);
        let logits = fused.infer(input, n, |_| Ok::<_, EngineError>(()))?;
        let values = fused
            .read(vec![logits])
            .await
            .map_err(|err| device_error("decision grid", err))?;
        let classes = values[0].len() / n;
        Ok(values[0]
            .chunks_exact(classes)
            .map(|row| {
                let (top, total) = max_and_exp_sum(row);
                (row[1] - top).exp() / total
            })
            .collect())
    }
}

fn passes(fused: &FusedMlp, ctx: &mut Context, picked: &[usize]) -> Result<Handle, EngineError> {
    let batch = picked.len();
    let train = &ctx.data.train;
    let meter = &mut ctx.meter;
    let input = fused.upload(&host_floats(train, picked));
    let labels = fused.upload_labels(&host_labels(train, picked));
    meter.checkpoint(Phase::Upload, Site::BatchUpload)?;
    let pass = fused.forward(input, batch, |layer| {
        meter.checkpoint(Phase::Forward, Site::LayerOutput(layer + 1))
    })?;
    let (loss, d_logits) = fused.loss(&pass, &labels, batch);
    meter.checkpoint(Phase::Forward, Site::LogitsAndLoss)?;
    fused.backward(pass, d_logits, batch);
    meter.checkpoint(Phase::Backward, Site::Gradients)?;
    Ok(loss)
}
