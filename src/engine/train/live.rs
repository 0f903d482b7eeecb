//! A native run watched from the page (`vramlab train --live`, and the runs of `find-batch
//! --live` and `claims --live` one after another): what goes over the wire. The native process
//! serves the page and streams these as server-sent events on [`EVENTS_PATH`]; the page posts a
//! [`Control`] to [`CONTROL_PATH`]. One definition for both ends, so the page reads exactly what
//! the native run wrote.

use serde::{Deserialize, Serialize};

use crate::engine::config::{MemoryPool, RunConfig};
use crate::engine::device::AdapterInfo;
use crate::engine::memory::{MemoryPrediction, StepTrace};

use super::records::{EvalRecord, StepRecord};

/// Where the run's events stream from (a GET that stays open).
pub const EVENTS_PATH: &str = "/live/events";
/// Where the page asks the run to pause, resume or stop (a POST whose body is the word).
pub const CONTROL_PATH: &str = "/live/control";
/// The query that tells the page to watch the run that served it rather than train its own.
pub const PAGE_QUERY: &str = "live";

/// The events' names, in the order a run sends them. A tab that connects late is sent every
/// event so far, then the latest trace: it sees the run as a tab that was there from the start.
/// A search or a claims report sends one run's events after another's (each from
/// [`event::STARTED`] to [`event::ENDED`] or [`event::FAILED`]), with [`event::NOTE`]s between
/// them, and [`event::OVER`] once at the very end.
pub mod event {
    /// [`super::Started`]: once, before the first step.
    pub const STARTED: &str = "started";
    /// [`super::Stepped`]: after each step.
    pub const STEP: &str = "step";
    /// [`super::Losses`]: losses read back for earlier steps (they come back in groups).
    pub const LOSSES: &str = "losses";
    /// A [`crate::engine::memory::StepTrace`]: the memory of the latest step (only the latest
    /// is kept for a tab that connects late).
    pub const TRACE: &str = "trace";
    /// [`super::RunState`]: what the page's last control left the run doing.
    pub const STATE: &str = "state";
    /// The run's whole timeline (what timeline.json holds): the run finished or was stopped.
    pub const ENDED: &str = "ended";
    /// [`super::Failed`]: the run stopped on an error (out of memory, a lost device).
    pub const FAILED: &str = "failed";
    /// A line (a JSON string) on what the command as a whole did: what a search is looking
    /// for, each trial's outcome and the answer; each claim's verdict.
    pub const NOTE: &str = "note";
    /// `null`: the command sent its last event; the stream closes after it.
    pub const OVER: &str = "over";
}

/// What the page needs before the first step: the run's config and where it runs.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Started {
    pub config: RunConfig,
    /// The native adapter (its name and backend label the page).
    pub adapter: AdapterInfo,
    /// The pools the native device started with.
    pub pools: MemoryPool,
    pub prediction: MemoryPrediction,
}

/// One step, as the native run recorded it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Stepped {
    pub record: StepRecord,
    /// Set when the step ended with an evaluation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eval: Option<EvalRecord>,
}

/// Losses read back since the last such event: (step, loss).
pub type Losses = Vec<(usize, f32)>;

/// Why the run stopped early.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Failed {
    pub message: String,
    /// What the failed step recorded up to the failure (out of memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<StepTrace>,
}

/// Whether the run steps or waits for Resume (sent as `"running"` or `"paused"`).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    Running,
    Paused,
}

/// What the page may ask of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Pause,
    Resume,
    /// End the run after the step in flight: its files are written as if it had finished.
    Stop,
}

impl Control {
    pub const ALL: [Self; 3] = [Self::Pause, Self::Resume, Self::Stop];

    pub fn word(self) -> &'static str {
        match self {
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Stop => "stop",
        }
    }

    /// A control from its word, or what is accepted.
    pub fn parse(word: &str) -> Result<Self, String> {
        let word = word.trim();
        Self::ALL
            .into_iter()
            .find(|c| c.word() == word)
            .ok_or_else(|| {
                let allowed: Vec<_> = Self::ALL.iter().map(|c| c.word()).collect();
                format!(
                    "control {word:?} is not one vramlab knows: send one of {}",
                    allowed.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_round_trip_their_words_and_refuse_others_naming_the_allowed() {
        for control in Control::ALL {
            assert_eq!(Control::parse(control.word()), Ok(control));
        }
        assert_eq!(Control::parse(" stop\n"), Ok(Control::Stop));
        let err = Control::parse("halt").unwrap_err();
        assert!(
            err.contains("\"halt\"") && err.contains("pause, resume, stop"),
            "{err}"
        );
    }
}
