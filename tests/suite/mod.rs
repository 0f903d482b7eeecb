mod budget;
mod cli;
mod config_errors;
mod finder;
mod memory;
mod strategies;
mod support;
mod training;
