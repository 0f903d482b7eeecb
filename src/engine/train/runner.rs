//! A run trained to its end as a front trains it, and how it came out: it fit, or it ran out of
//! memory. The max-batch finder's trials and the claims' runs are both this; a front says only
//! how it trains (the CLI a process a run, the page on its own device between frames).

use std::future::Future;

use crate::engine::config::RunConfig;
use crate::engine::device::Gpu;
use crate::engine::error::EngineError;
use crate::engine::outcome::OutOfMemory;

use super::records::Timeline;
use super::run::Run;

/// How a run that was trained to its end came out.
#[derive(Clone, Debug)]
pub enum RunOutcome {
    /// It fit: everything it recorded.
    Fit(Box<Timeline>),
    /// It needed more than its budget: where, and by how much.
    OutOfMemory(Box<OutOfMemory>),
}

impl RunOutcome {
    /// The timeline of a run that fit; where one that did not ran out.
    pub fn fit(self) -> Result<Timeline, Box<OutOfMemory>> {
        match self {
            Self::Fit(timeline) => Ok(*timeline),
            Self::OutOfMemory(oom) => Err(oom),
        }
    }
}

/// Trains a config to its end.
///
/// burn's fusion and cubecl's pools behave differently on a process's first sight of a shape
/// than on a later one, so the bytes a run needs can differ by a page between a fresh process
/// and one that has run others. The CLI runs each as its own process, so that what it sees is
/// what `vramlab train` will see; the page runs them on its one device.
#[allow(async_fn_in_trait)] // used on one thread: the futures need not be Send
pub trait Runner {
    async fn train(&mut self, config: RunConfig) -> Result<RunOutcome, EngineError>;
}

/// Runs in this process, on this device: one that runs out of memory is dropped with its
/// tensors, and the next starts from the device's baseline (see `Run::new`).
pub struct InProcess<'a> {
    pub gpu: &'a Gpu,
}

impl InProcess<'_> {
    /// Train `config` to its end, awaiting `pause()` after each step (the page hands itself
    /// back to the browser there).
    pub async fn train_pausing<F: Future<Output = ()>>(
        &self,
        config: RunConfig,
        mut pause: impl FnMut() -> F,
    ) -> Result<RunOutcome, EngineError> {
        let ended = async {
            let mut run = Run::new(config, self.gpu)?;
            while !run.is_finished() {
                run.step().await?;
                pause().await;
            }
            run.finish().await
        }
        .await;
        // Out of memory while setting up, stepping or evaluating at the end: the run's answer.
        match ended {
            Ok(timeline) => Ok(RunOutcome::Fit(Box::new(timeline))),
            Err(EngineError::OutOfMemory(oom)) => Ok(RunOutcome::OutOfMemory(oom)),
            Err(err) => Err(err),
        }
    }
}

impl Runner for InProcess<'_> {
    async fn train(&mut self, config: RunConfig) -> Result<RunOutcome, EngineError> {
        self.train_pausing(config, || std::future::ready(())).await
    }
}
