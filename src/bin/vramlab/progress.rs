//! The terminal progress bar: step, latest loss, MiB in use. Hidden when stderr is no terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use vramlab::engine::StepOutcome;
use vramlab::engine::format::mib;
use vramlab::engine::phase::Phase;

pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    pub fn new(steps: usize) -> Self {
        let bar = ProgressBar::with_draw_target(Some(steps as u64), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} steps  {msg}",
            )
            .expect("the template is valid"),
        );
        Self { bar }
    }

    pub fn update(&self, outcome: &StepOutcome) {
        let in_use = outcome
            .record
            .phases
            .get(&Phase::Optimizer)
            .map_or(0, |r| r.in_use_bytes);
        let peak = outcome.record.peak_in_use_bytes;
        let loss = outcome
            .latest_loss
            .map_or_else(|| "loss …".to_string(), |l| format!("loss {l:.4}"));
        self.bar.set_message(format!(
            "{loss}  in use {:.1} MiB (step peak {:.1})",
            mib(in_use),
            mib(peak)
        ));
        self.bar.disable_steady_tick();
        self.bar.inc(1);
    }

    /// The next step ends with an evaluation of `samples` test samples: the bar says so and
    /// keeps ticking while it runs.
    pub fn evaluating_after(&self, step: usize, samples: usize) {
        self.bar.set_message(format!(
            "step {step}, then evaluating {samples} test samples"
        ));
        self.bar
            .enable_steady_tick(std::time::Duration::from_millis(250));
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
