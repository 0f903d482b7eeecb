//! The run a recipe asks for, built as `vramlab plan --recipe` builds it with no preset or
//! config file beside it: the model's family base run, the model read from its config.json,
//! then the recipe's assignments. The page builds its config here so that a recipe dropped on
//! "Will it fit?" plans what the command line plans for the same file, to the byte.

use crate::engine::RunConfig;
use crate::engine::error::ConfigError;
use crate::engine::hf_config::{self, HfModel, Stated};
use crate::engine::overrides::apply_overrides;
use crate::engine::presets::preset;

use super::Reading;

/// A torchtune builder's model: its published shapes read as a config.json, and the run's
/// name (the builder's own, `qlora_llama3_1_8b`).
pub fn builder_model(component: &str, config_json: &str) -> Result<(HfModel, String), ConfigError> {
    let hf = hf_config::read(config_json)
        .map_err(|err| ConfigError::invalid("model._component_", format!("{component}: {err}")))?;
    let name = component.rsplit('.').next().unwrap_or(component);
    Ok((hf, name.to_string()))
}

/// vramlab's config for `reading` with `hf` as its model (`name` names the run where the file
/// names no model), and the notes on what the model changed; not yet validated.
pub fn run_config(
    reading: &Reading,
    hf: &HfModel,
    name: &str,
) -> Result<(RunConfig, Vec<String>), ConfigError> {
    // What the recipe states keeps its value over a Hugging Face user's defaults, as a --set's.
    let stated = reading.sets.iter().fold(Stated::default(), |stated, set| {
        stated.or(Stated::in_set(set))
    });
    let base = preset(hf.family.base_preset())?;
    let (base, mut notes) = hf.apply(base, name, stated);
    let config = apply_overrides(base, reading.sets.iter().map(String::as_str))?;
    notes.extend(hf.notes_for(&config)?);
    Ok((config, notes))
}
