//! `vramlab train --live`: the run as without it (the same steps, progress bar and files), while
//! a loopback server shows it on the page and takes the page's Pause, Resume and Stop. Nothing
//! is opened: the address is printed. `find-batch --live` and `claims --live` serve the page
//! the same way and show their runs one after another (`relay`).

mod hub;
pub mod relay;
mod server;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use vramlab::engine::memory::StepTrace;
use vramlab::engine::train::live::{Failed, Losses, PAGE_QUERY, Started, Stepped, event};
use vramlab::engine::{ConfigError, EngineError, Gpu, Run, RunConfig, Timeline};

use crate::args::LiveArgs;
use crate::progress::Progress;
pub use hub::Hub;

/// How long the process waits, after the run's last event, for the tabs to receive it.
const DRAIN: Duration = Duration::from_secs(3);
/// How long a command that ended before any tab opened its page waits for one.
const FIRST_TAB: Duration = Duration::from_secs(30);

/// The page `bash .ci/play` builds, where `--page` is not given.
fn default_page() -> PathBuf {
    crate::runtime_dir::cache().join("dist")
}

/// Serve the page on the loopback for `args`, printing where to watch `what` (this run, this
/// search, these claims); fails when the page is not built or the port is taken.
pub fn open(args: &LiveArgs, what: &str) -> anyhow::Result<Arc<Hub>> {
    let page = args.page.clone().unwrap_or_else(default_page);
    if !page.join("index.html").is_file() {
        return Err(ConfigError::invalid(
            "--page",
            format!(
                "{}: no built page there (index.html is missing): `bash .ci/play ... --live \
                 ...` builds it first, or pass --page DIR with a page built by `.ci/build-page \
                 DIR`",
                page.display()
            ),
        )
        .into());
    }
    let hub = Hub::new();
    let address = server::start(args.port, page, hub.clone())?;
    eprintln!(
        "live: watch {what} at http://{address}/?{PAGE_QUERY} (Pause and Stop there act on it)"
    );
    Ok(hub)
}

/// The command is done: its last event goes out, and the tabs get a moment to receive it (a
/// command no tab has watched yet waits a while for one).
pub fn close(hub: &Hub) {
    hub.end();
    if !hub.watched() {
        eprintln!(
            "live: no tab has opened the page yet; waiting up to {} s for one to see the end",
            FIRST_TAB.as_secs()
        );
    }
    hub.drain(FIRST_TAB, DRAIN);
}

/// Train `config` on `gpu` as `train` does, shown live on the page; returns the run's timeline
/// (fewer steps than configured when the page stopped it) or its error, or, before any step,
/// why the page could not be served.
pub fn train(
    config: RunConfig,
    gpu: &Gpu,
    args: &LiveArgs,
    progress: &Progress,
) -> anyhow::Result<Result<Timeline, EngineError>> {
    let hub = open(args, "this run")?;
    let ended = run_published(config, gpu, &hub, progress);
    close(&hub);
    Ok(ended)
}

/// The run, its events published to `hub`, then its end (its timeline, or why it failed).
fn run_published(
    config: RunConfig,
    gpu: &Gpu,
    hub: &Hub,
    progress: &Progress,
) -> Result<Timeline, EngineError> {
    let steps = config.steps;
    let ended = drive(config, gpu, hub, progress);
    match &ended {
        Ok(timeline) => {
            if timeline.steps.len() < steps {
                eprintln!(
                    "live: stopped from the page after step {} of {steps}",
                    timeline.steps.len()
                );
            }
            hub.publish(event::ENDED, timeline);
        }
        Err(failure) => hub.publish(
            event::FAILED,
            &Failed {
                message: failure.0.to_string(),
                trace: failure.1.clone(),
            },
        ),
    }
    ended.map_err(|failure| failure.0)
}

/// A run's error, and what the failed step recorded when it ran out of memory.
type Failure = (EngineError, Option<StepTrace>);

/// The run, step by step, publishing what each did; on an error, what the failed step recorded.
fn drive(
    config: RunConfig,
    gpu: &Gpu,
    hub: &Hub,
    progress: &Progress,
) -> Result<Timeline, Box<Failure>> {
    let mut run = Run::new(config, gpu).map_err(|err| Box::new((err, None)))?;
    hub.publish(
        event::STARTED,
        &Started {
            config: run.config().clone(),
            adapter: gpu.adapter.clone(),
            pools: gpu.memory_pool,
            prediction: run.prediction().clone(),
        },
    );
    // Records before this one all have their losses published.
    let mut losses_from = 0;
    while !run.is_finished() && !hub.stop_requested() {
        let outcome = match pollster::block_on(run.step()) {
            Ok(outcome) => outcome,
            Err(err) => {
                let trace = matches!(err, EngineError::OutOfMemory(_)).then(|| run.failed_step());
                return Err(Box::new((err, trace)));
            }
        };
        progress.update(&outcome);
        hub.publish(
            event::STEP,
            &Stepped {
                record: outcome.record,
                eval: outcome.eval,
            },
        );
        let records = run.records();
        let read: Losses = records[losses_from..]
            .iter()
            .map_while(|r| r.loss.map(|loss| (r.step, loss)))
            .collect();
        losses_from += read.len();
        if !read.is_empty() {
            hub.publish(event::LOSSES, &read);
        }
        hub.publish_trace(&outcome.trace);
    }
    pollster::block_on(run.finish()).map_err(|err| Box::new((err, None)))
}
