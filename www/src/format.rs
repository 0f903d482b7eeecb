//! How the page words an out-of-memory: each suggested change by its label on the page (bytes
//! through the engine's `format`). Shared by the panels, so none of them imports another for it.

use vramlab::engine::format::ByteFormat;
use vramlab::engine::outcome::{OutOfMemory, Suggestion};
use vramlab::engine::strategies::catalog;

/// An out-of-memory as the page words it: where, then each change by its label on the page.
pub fn out_of_memory_text(oom: &OutOfMemory) -> String {
    oom.describe(|suggestion: &Suggestion| {
        let label = catalog::find(&suggestion.field).map_or(suggestion.field.as_str(), |e| e.label);
        let peak = match suggestion.estimated_peak_bytes {
            Some(peak) => format!("estimated peak {}", ByteFormat::MIB.decimals(3).of(peak)),
            None => "the live bytes fit; exclusive pages are sized to each allocation (reload \
                     the page with it to start the device that way)"
                .to_string(),
        };
        format!("set {label} to {} ({peak})", suggestion.value)
    })
}
