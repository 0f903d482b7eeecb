//! The memory of one step: bytes in use at every kernel launch and check point, in order, with
//! the check points marked by phase. The hill of activations in forward, its release in backward
//! and the optimizer's swap of parameters show as a line, as a snapshot viewer would draw it.

use serde::{Deserialize, Serialize};

use crate::engine::phase::Phase;

/// Points kept per step: a longer trace is cut into this many runs of points, each drawn as its
/// largest, so the hill's top survives.
pub const MAX_TRACE_POINTS: usize = 4096;

/// Where a check point fell in a [`StepTrace`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceMark {
    pub phase: Phase,
    /// Index into `in_use_bytes` of the check point's reading.
    pub at: usize,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepTrace {
    /// The step this is the memory of.
    pub step: usize,
    /// In use at each kernel launch (where the device has a launch observer) and at each check
    /// point, in order.
    pub in_use_bytes: Vec<u64>,
    /// The check points, in order.
    pub marks: Vec<TraceMark>,
    /// Whether each kernel launch was read, or only the check points.
    pub launches: bool,
}

impl StepTrace {
    pub fn push(&mut self, in_use: u64) {
        self.in_use_bytes.push(in_use);
    }

    pub fn mark(&mut self, phase: Phase, in_use: u64) {
        self.marks.push(TraceMark {
            phase,
            at: self.in_use_bytes.len(),
        });
        self.push(in_use);
    }

    pub fn peak(&self) -> u64 {
        self.in_use_bytes.iter().copied().max().unwrap_or(0)
    }

    /// The trace with at most `max` points: consecutive runs of points become their largest,
    /// and each mark moves to the run that holds it.
    pub fn capped(&self, max: usize) -> Self {
        let len = self.in_use_bytes.len();
        if len <= max || max == 0 {
            return self.clone();
        }
        let run = len.div_ceil(max);
        Self {
            step: self.step,
            in_use_bytes: self
                .in_use_bytes
                .chunks(run)
                .map(|chunk| chunk.iter().copied().max().unwrap_or(0))
                .collect(),
            marks: self
                .marks
                .iter()
                .map(|mark| TraceMark {
                    phase: mark.phase,
                    at: mark.at / run,
                })
                .collect(),
            launches: self.launches,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capped_trace_keeps_the_peak_and_moves_its_marks_with_their_points() {
        let mut trace = StepTrace::default();
        for bytes in [1, 5, 2, 9, 3, 4, 8, 1, 1] {
            trace.push(bytes);
        }
        trace.mark(Phase::Backward, 2);
        let capped = trace.capped(4);
        assert_eq!(capped.in_use_bytes, [5, 9, 8, 2]);
        assert_eq!(capped.marks[0].at, 3);
        assert_eq!(capped.peak(), trace.peak());
        assert_eq!(trace.capped(100), trace);
    }
}
