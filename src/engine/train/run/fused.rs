//! The parts of a [`Run`] that `strategies.kernels = fused` changes: the step, the evaluation,
//! the per-layer probe and the decision grid go through vramlab's own kernels; the readings,
//! budget checks and records stay the ones burn's path takes.

use std::collections::BTreeMap;

use web_time::Instant;

use super::{Run, device_error, grid_points};
use crate::engine::data::{HostInputs, Split, gather};
use crate::engine::error::EngineError;
use crate::engine::fused::{FusedMlp, client_of};
use crate::engine::memory::{BudgetWatch, MemoryReading, Phase, sampler};
use crate::engine::models::Model;
use crate::engine::train::records::EvalRecord;

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

impl Run {
    /// One step in the fused kernels, read at the same points as burn's step: after the
    /// upload, after each layer's output and the loss (forward), after the gradients
    /// (backward); the caller takes the end-of-step reading.
    pub(super) async fn fused_step(
        &mut self,
        index: usize,
        phases: &mut BTreeMap<Phase, MemoryReading>,
    ) -> Result<(), EngineError> {
        if self.fused.is_none() {
            let trainer = self.fused_trainer().await?;
            // The fused buffers are the model from here on; burn's copy goes.
            self.model = None;
            self.fused = Some(trainer);
        }
        let picked = self.order.next_indices(self.config.batch_size);
        let mut fused = self.fused.take().expect("built above");
        let done = self.fused_passes(&fused, &picked, phases);
        if done.is_ok() {
            fused.optimizer_step(self.config.learning_rate);
        }
        self.fused = Some(fused);
        let loss = done?;
        self.pending_fused.push((index, loss));
        Ok(())
    }

    fn fused_passes(
        &mut self,
        fused: &FusedMlp,
        picked: &[usize],
        phases: &mut BTreeMap<Phase, MemoryReading>,
    ) -> Result<burn::cubecl::server::Handle, EngineError> {
        let batch = picked.len();
        let input = fused.upload(&host_floats(&self.data.train, picked));
        let labels = fused.upload_labels(&host_labels(&self.data.train, picked));
        self.checkpoint(phases, Phase::Upload, "batch upload")?;
        let pass = fused.forward(input, batch, |_| {
            self.checkpoint(phases, Phase::Forward, "layer output")
        })?;
        let (loss, d_logits) = fused.loss(&pass, &labels, batch);
        self.checkpoint(phases, Phase::Forward, "logits and loss")?;
        fused.backward(pass, d_logits, batch);
        self.checkpoint(phases, Phase::Backward, "gradients")?;
        Ok(loss)
    }

    /// Copy the burn model's initial weights into a fused trainer on the same memory pool, so
    /// both kernel paths start from the same point.
    async fn fused_trainer(&self) -> Result<FusedMlp, EngineError> {
        let Some(Model::Mlp(mlp)) = self.model.as_ref() else {
            unreachable!("validation allows kernels = fused for mlp only")
        };
        let client = client_of(&self.gpu.device)
            .ok_or_else(|| device_error("setup", "kernels = fused needs a wgpu device"))?;
        FusedMlp::from_mlp(mlp, client, self.config.optimizer)
            .await
            .map_err(|err| device_error("setup", err))
    }

    pub(super) async fn read_back_fused_losses(&mut self) -> Result<(), EngineError> {
        let Some(fused) = &self.fused else {
            return Ok(());
        };
        if self.pending_fused.is_empty() {
            return Ok(());
        }
        let (indices, handles): (Vec<usize>, Vec<_>) =
            std::mem::take(&mut self.pending_fused).into_iter().unzip();
        let values = fused
            .read(handles)
            .await
            .map_err(|err| device_error("loss readback", err))?;
        for (index, value) in indices.into_iter().zip(values) {
            self.steps[index].loss = value.first().copied();
            self.latest_loss = value.first().copied().or(self.latest_loss);
        }
        Ok(())
    }

    /// Loss and accuracy on the test split in batches of `eval_batch_size`; memory is read
    /// after every layer of the first (largest) batch, where the peak is.
    pub(super) async fn fused_evaluate(&mut self, step: usize) -> Result<EvalRecord, EngineError> {
        let started = Instant::now();
        let fused = self.fused.take().expect("checked by the caller");
        let done = self.fused_eval_passes(&fused).await;
        self.fused = Some(fused);
        let (memory, loss_sum, hits) = done?;
        let total = self.data.test.len as f64;
        Ok(EvalRecord {
            step,
            loss: (loss_sum / total) as f32,
            accuracy: (hits as f64 / total) as f32,
            ms: started.elapsed().as_secs_f64() * 1e3,
            memory,
        })
    }

    async fn fused_eval_passes(
        &mut self,
        fused: &FusedMlp,
    ) -> Result<(MemoryReading, f64, usize), EngineError> {
        let split = &self.data.test;
        let mut memory = MemoryReading::default();
        let mut loss_sum = 0.0;
        let mut hits = 0;
        let mut start = 0;
        while start < split.len {
            let len = self.config.eval_batch_size.min(split.len - start);
            let indices: Vec<usize> = (start..start + len).collect();
            let input = fused.upload(&host_floats(split, &indices));
            let first = start == 0;
            let watch = &mut self.watch;
            let device = &self.device;
            let logits = fused.infer(input, len, |_| {
                if first {
                    let reading = BudgetWatch::check_or_read(
                        watch.as_mut(),
                        device,
                        Phase::Eval.name(),
                        "evaluation layer output",
                    )?;
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
        Ok((memory, loss_sum, hits))
    }

    /// In use after each layer's output of a forward pass over one training batch, above in
    /// use before it (the fused step keeps exactly these).
    pub(super) fn fused_probe_activations(&self) -> Result<Vec<u64>, EngineError> {
        let fused = self.fused.as_ref().expect("checked by the caller");
        let inner = &self.gpu.device;
        let len = self.config.batch_size.min(self.data.train.len);
        let indices: Vec<usize> = (0..len).collect();
        let before = sampler::read(inner, "probe")?.in_use_bytes;
        let input = fused.upload(&host_floats(&self.data.train, &indices));
        let mut readings = Vec::new();
        let logits = fused.infer(input, len, |_| {
            readings.push(
                sampler::read(inner, "probe")?
                    .in_use_bytes
                    .saturating_sub(before),
            );
            Ok::<_, EngineError>(())
        })?;
        drop(logits);
        Ok(readings)
    }

    /// Probability of class 1 on the grid (see [`Run::decision_grid`]).
    pub(super) async fn fused_decision_grid(
        &self,
        n: usize,
        extent: f32,
    ) -> Result<Vec<f32>, EngineError> {
        let fused = self.fused.as_ref().expect("checked by the caller");
        let input = fused.upload(&grid_points(n, extent));
        let logits = fused.infer(input, n * n, |_| Ok::<_, EngineError>(()))?;
        let values = fused
            .read(vec![logits])
            .await
            .map_err(|err| device_error("decision grid", err))?;
        let classes = values[0].len() / (n * n);
        Ok(values[0]
            .chunks_exact(classes)
            .map(|row| {
                let (top, total) = max_and_exp_sum(row);
                (row[1] - top).exp() / total
            })
            .collect())
    }
}
