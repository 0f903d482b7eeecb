mod cli;
mod config_errors;
mod memory;
mod support;
mod training;
