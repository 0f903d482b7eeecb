//! A training run as its own `vramlab train --json-timeline` process, for `find-batch` and
//! `claims` (shown on the page, with `--live`, through `live::relay`):
//! cubecl fixes a device's pools when it starts, and burn's fusion and cubecl's pools behave
//! differently on a process's first sight of a shape than on a later one, so a run that must
//! show what a user's `vramlab train` would see gets a fresh process.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use vramlab::engine::outcome::OutOfMemory;
use vramlab::engine::train::{RunOutcome, Runner};
use vramlab::engine::{EngineError, RunConfig, Timeline};

use crate::exit;
use crate::live::{Hub, relay};

/// What `train --json` (or `--json-timeline`) prints on stdout when the run ran out of memory.
#[derive(Serialize, Deserialize)]
pub struct OutOfMemoryReport {
    pub out_of_memory: OutOfMemory,
}

static RUNS: AtomicUsize = AtomicUsize::new(0);

/// Why a live command's run gave no outcome: the page asked the command to stop.
#[derive(Debug, thiserror::Error)]
#[error("stopped from the page")]
pub struct Stopped;

/// Train `config` in a new process of this binary; as a plan's dry run when `dry_run`; shown
/// on the page of `live` when given (waiting first while the page has the command paused).
pub fn train(config: &RunConfig, dry_run: bool, live: Option<&Hub>) -> anyhow::Result<RunOutcome> {
    let path = std::env::temp_dir().join(format!(
        "vramlab-run-{}-{}.json",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, serde_json::to_string(config)?)
        .with_context(|| format!("writing {}", path.display()))?;
    let exe = std::env::current_exe().context("finding the vramlab binary")?;
    let mut command = Command::new(exe);
    command.args(["train", "--json-timeline"]);
    if dry_run {
        command.arg("--dry-run");
    }
    command.arg("--config").arg(&path);
    let ended = match live {
        None => command
            .output()
            .context("running vramlab train")
            .map(|out| relay::Ended {
                status: out.status,
                stdout: out.stdout,
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }),
        Some(hub) if hub.stop_requested() => Err(Stopped.into()),
        Some(hub) => {
            command.arg(relay::FLAG);
            relay::run(command, hub)
        }
    };
    let _ = std::fs::remove_file(&path);
    let ended = ended?;
    let stopped = live.is_some_and(Hub::stopped);
    match ended.status.code() {
        Some(exit::OK) => {
            let timeline: Box<Timeline> =
                serde_json::from_slice(&ended.stdout).context("reading the run's JSON timeline")?;
            // A run stopped midway is no answer to what it was run for; one that made all its
            // steps before the stop came is.
            if stopped && timeline.steps.len() < config.steps {
                return Err(Stopped.into());
            }
            Ok(RunOutcome::Fit(timeline))
        }
        Some(code) if code == i32::from(exit::OUT_OF_MEMORY) => {
            let report: OutOfMemoryReport = serde_json::from_slice(&ended.stdout)
                .context("reading the run's out-of-memory report")?;
            Ok(RunOutcome::OutOfMemory(Box::new(report.out_of_memory)))
        }
        _ if stopped => Err(Stopped.into()),
        _ => anyhow::bail!("vramlab train {}: {}", config.name, ended.stderr),
    }
}

/// Each run as its own `vramlab train` process (see [`Runner`] for why): what a user's `train`
/// of that config will see; as a plan's dry run when `dry_run`.
pub struct Subprocess {
    pub dry_run: bool,
    /// The page each run is shown on (`find-batch --live`, `claims --live`).
    pub live: Option<Arc<Hub>>,
    /// A run was stopped from the page (or not started for it) since this was last cleared:
    /// what the runs were for has no answer. A stop that comes after the last run of a search
    /// or a claim cuts nothing short.
    pub cut_short: bool,
}

impl Subprocess {
    pub fn new(dry_run: bool, live: Option<Arc<Hub>>) -> Self {
        Self {
            dry_run,
            live,
            cut_short: false,
        }
    }
}

impl Runner for Subprocess {
    async fn train(&mut self, config: RunConfig) -> Result<RunOutcome, EngineError> {
        train(&config, self.dry_run, self.live.as_deref()).map_err(|err| {
            self.cut_short |= err.is::<Stopped>();
            EngineError::Device {
                phase: "run".into(),
                message: format!("{err:#}"),
            }
        })
    }
}
