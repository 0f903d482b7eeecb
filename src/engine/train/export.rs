//! A run as a table: one row per step, the loss, the step time, every allocator reading of
//! every phase, then the step's high-water marks and each phase's, then the step's high-water
//! mark by category (empty where the step read no check point inside it). The CLI writes it as
//! timeline.csv (through the csv crate) and the page offers it for download, so both give the
//! same columns.

use crate::engine::memory::Categories;
use crate::engine::phase::Phase;

use super::records::Timeline;

const READING_FIELDS: [&str; 4] = ["in_use_bytes", "reserved_bytes", "padding_bytes", "allocs"];

impl Timeline {
    /// The header row, then one row per step; a phase the step did not have leaves its cells empty.
    pub fn table_rows(&self) -> Vec<Vec<String>> {
        let mut header = vec!["step".to_string(), "loss".into(), "ms".into()];
        for phase in Phase::ALL {
            for field in READING_FIELDS {
                header.push(format!("{}_{field}", phase.name()));
            }
        }
        header.push("high_water_in_use_bytes".into());
        header.push("high_water_reserved_bytes".into());
        for phase in Phase::ALL {
            header.push(format!("{}_high_water_in_use_bytes", phase.name()));
        }
        for name in Categories::NAMES {
            header.push(format!("{name}_bytes"));
        }
        let mut rows = vec![header];
        for step in &self.steps {
            let mut row = vec![
                step.step.to_string(),
                step.loss.map_or(String::new(), |l| l.to_string()),
                format!("{:.3}", step.ms),
            ];
            for phase in Phase::ALL {
                match step.phases.get(&phase) {
                    Some(r) => row.extend(
                        [r.in_use_bytes, r.reserved_bytes, r.padding_bytes, r.allocs]
                            .map(|v| v.to_string()),
                    ),
                    None => row.extend(std::iter::repeat_n(String::new(), READING_FIELDS.len())),
                }
            }
            row.push(step.high_water.in_use_bytes.to_string());
            row.push(step.high_water.reserved_bytes.to_string());
            for phase in Phase::ALL {
                row.push(
                    step.phase_high_water
                        .get(&phase)
                        .map_or(String::new(), |mark| mark.in_use_bytes.to_string()),
                );
            }
            match step.categories {
                Some(categories) => row.extend(categories.values().map(|v| v.to_string())),
                None => row.extend(std::iter::repeat_n(String::new(), Categories::NAMES.len())),
            }
            rows.push(row);
        }
        rows
    }

    /// The table as CSV text for the page, which has no csv crate: every cell is a number, a
    /// column name or empty, so none ever needs quoting.
    pub fn to_csv(&self) -> String {
        self.table_rows()
            .iter()
            .map(|row| row.join(",") + "\n")
            .collect()
    }
}
