//! How the page words figures: bytes as MiB, an out-of-memory with each suggested change by its
//! label on the page. Shared by the panels, so none of them imports another for it.

use vramlab::engine::outcome::{OutOfMemory, Suggestion};
use vramlab::engine::strategies::catalog;

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1048576.0
}

/// An out-of-memory as the page words it: where, then each change by its label on the page.
pub fn out_of_memory_text(oom: &OutOfMemory) -> String {
    oom.describe(|suggestion: &Suggestion| {
        let label = catalog::find(&suggestion.field).map_or(suggestion.field.as_str(), |e| e.label);
        let peak = match suggestion.estimated_peak_bytes {
            Some(peak) => format!("estimated peak {:.3} MiB", mib(peak)),
            None => "the live bytes fit; exclusive pages are sized to each allocation (reload \
                     the page with it to start the device that way)"
                .to_string(),
        };
        format!("set {label} to {} ({peak})", suggestion.value)
    })
}
