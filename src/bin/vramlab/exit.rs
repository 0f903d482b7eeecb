//! The process's exit codes, one table for `main` and for the runs it starts as subprocesses.

pub const OK: i32 = 0;
/// Anything that is not one of the others.
pub const FAILURE: u8 = 1;
/// A bad config, flag or file: nothing ran.
pub const BAD_INPUT: u8 = 2;
/// The run needed more than its budget.
pub const OUT_OF_MEMORY: u8 = 3;
