//! What a shared link carries: the configuration in the page's URL hash, and the table of lesson
//! verdicts. Plain text in, plain values out: the page reads `location.hash` and hands it here,
//! so the parsing runs (and is fuzzed) natively too.

pub mod hash;
pub mod verdicts;
