//! The memory-saving strategies, one file per config field of `strategies`.

pub mod checkpointing;
pub mod data_residency;
pub mod eval_mode;
pub mod free_cache;
pub mod grad_accumulation;
pub mod inplace_activation;
pub mod loss_bookkeeping;
pub mod mixed_precision;
pub mod weight_dtype;
