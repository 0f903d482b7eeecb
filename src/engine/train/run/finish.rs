//! The end of a run: the last losses read back, the probes that need the trained model, and the
//! summary and timeline built from the records.

use web_time::Instant;

use crate::engine::error::EngineError;
use crate::engine::memory::sampler;
use crate::engine::train::records::{Measured, Summary, Timeline};
use crate::engine::train::trainer::Context;

use super::Run;

impl Run {
    /// Read back any losses still pending and derive the summary.
    pub async fn finish(mut self) -> Result<Timeline, EngineError> {
        let started = Instant::now();
        self.read_back_losses().await?;
        self.fold_through(self.steps_done());
        let activation_layers_in_use = self.trainer.probe_activations(&mut self.ctx).await?;
        let kept_by_op = self.trainer.probe_kept_by_op(&mut self.ctx).await?;
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
            &self.figures,
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
        summary.wall.setup_ms = self.setup_ms;
        summary.wall.finish_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(Timeline {
            summary,
            predicted_layers: self.prediction.layers,
            config,
            steps: self.steps,
            steps_left_out: self.left_out,
            evals: self.evals,
            one_step: self.last_trace,
            expert_load: self.routing.map(|(routing, top_k)| routing.load(top_k)),
        })
    }
}
