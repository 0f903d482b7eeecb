//! What the live charts keep of each step: the figures they draw, not the step's whole record.
//! The run (and, once it ends, its timeline) keeps the records; a second full copy for the
//! charts cost the page about a kilobyte a step (docs/performance.md, the page's soak).

use vramlab::engine::memory::Categories;
use vramlab::engine::phase::Phase;
use vramlab::engine::train::StepRecord;

/// One step as the charts draw it.
#[derive(Clone, Debug, PartialEq)]
pub struct ChartStep {
    pub step: usize,
    /// `None` until the step's loss is read back (they come back in groups).
    pub loss: Option<f32>,
    /// The step's high-water mark, in use and reserved.
    pub high_water_in_use_bytes: u64,
    pub high_water_reserved_bytes: u64,
    /// In use at the step's end (the optimizer's check point); 0 when it was not read.
    pub end_in_use_bytes: u64,
    /// The step's high-water mark by what held it, when a check point inside it was read.
    pub categories: Option<Categories>,
}

impl From<&StepRecord> for ChartStep {
    fn from(record: &StepRecord) -> Self {
        Self {
            step: record.step,
            loss: record.loss,
            high_water_in_use_bytes: record.high_water.in_use_bytes,
            high_water_reserved_bytes: record.high_water.reserved_bytes,
            end_in_use_bytes: record
                .phases
                .get(&Phase::Optimizer)
                .map_or(0, |r| r.in_use_bytes),
            categories: record.categories,
        }
    }
}

/// The charts' copy of `records`.
pub fn of(records: &[StepRecord]) -> Vec<ChartStep> {
    records.iter().map(ChartStep::from).collect()
}
