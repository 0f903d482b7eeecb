//! A run as CSV: one row per step, the loss, the step time, and every allocator figure of every
//! phase. The CLI writes it as timeline.csv and the page offers it for download, so both give
//! the same columns. Every field is a number (or empty), so no quoting is ever needed.

use crate::engine::memory::Phase;

use super::records::Timeline;

const READING_FIELDS: [&str; 4] = ["in_use_bytes", "reserved_bytes", "padding_bytes", "allocs"];

impl Timeline {
    pub fn to_csv(&self) -> String {
        let mut header = vec!["step".to_string(), "loss".into(), "ms".into()];
        for phase in Phase::ALL {
            for field in READING_FIELDS {
                header.push(format!("{}_{field}", phase.name()));
            }
        }
        let mut out = header.join(",");
        out.push('\n');
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
            out.push_str(&row.join(","));
            out.push('\n');
        }
        out
    }
}
