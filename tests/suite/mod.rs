mod budget;
mod cli;
mod config_errors;
mod memory;
mod strategies;
mod support;
mod training;
