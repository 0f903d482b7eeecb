//! What every Hugging Face `model_type` shares: [`HfType`], the description a model family
//! gives of each type it reads (in `engine::families`), and the fields and checks common to
//! them. A field either sizes the model, is checked to be a value vramlab builds, or is on a
//! list of fields that change nothing a plan counts; anything else is refused by name.

use crate::engine::config::{ModelConfig, ModelKind};
use crate::engine::error::ConfigError;

use super::fields::{Fields, quoted};

/// One Hugging Face `model_type` a model family reads ([`Family::hf_types`]): the fields its
/// transformers config class has and what vramlab builds from them.
///
/// [`Family::hf_types`]: crate::engine::families::Family::hf_types
pub struct HfType {
    /// The `model_type`, as its config.json writes it.
    pub model_type: &'static str,
    /// The causal language model vramlab builds for it (its `architectures` entry).
    pub architecture: &'static str,
    /// The preset whose data, optimizer and batch a plan starts from when neither `--preset`
    /// nor `--config` gives a base run: the family's own full-size preset.
    pub base_preset: &'static str,
    /// Lists of fields read into the model or checked against what vramlab builds.
    pub modelled: &'static [&'static [&'static str]],
    /// The type's own fields that change nothing vramlab plans.
    pub ignored: &'static [&'static str],
    /// The field that states the longest sequence the model takes.
    pub positions_field: &'static str,
    /// The model vramlab builds from the file.
    pub(crate) model: fn(&Fields) -> Result<ModelConfig, ConfigError>,
    /// Whether the file may ask for a rotary scaling (`rope_scaling`).
    pub rotary: bool,
    /// The attention window the file asks for, when it asks for one.
    pub(crate) window: fn(&Fields) -> Result<Option<usize>, ConfigError>,
}

impl HfType {
    pub fn model_type(&self) -> &'static str {
        self.model_type
    }

    pub fn architecture(&self) -> &'static str {
        self.architecture
    }

    pub fn base_preset(&self) -> &'static str {
        self.base_preset
    }

    /// The type some registered family reads as `model_type`.
    pub fn from_model_type(model_type: &str) -> Option<&'static Self> {
        ModelKind::hf_types().find(|hf| hf.model_type == model_type)
    }
}

// A type is its `model_type`: no two families read the same one.
impl PartialEq for HfType {
    fn eq(&self, other: &Self) -> bool {
        self.model_type == other.model_type
    }
}

impl std::fmt::Debug for HfType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HfType({:?})", self.model_type)
    }
}

/// Fields of every family that change nothing a plan counts: names and ids, the checkpoint's
/// storage type (the plan's is `strategies.weight_dtype`), initialisation, the inference cache,
/// generation defaults.
pub const NO_MEMORY: &[&str] = &[
    "_name_or_path",
    "architectures",
    "transformers_version",
    "torch_dtype",
    "bos_token_id",
    "eos_token_id",
    "pad_token_id",
    "initializer_range",
    "use_cache",
    "tokenizer_class",
];

/// Dropout probabilities: vramlab trains without dropout, so they are read only to say so.
pub const DROPOUT: &[&str] = &[
    "attention_dropout",
    "attn_pdrop",
    "embd_pdrop",
    "resid_pdrop",
    "hidden_dropout",
];

/// Every field vramlab reads in a `family` config, sorted.
pub fn understood(family: &HfType) -> Vec<&'static str> {
    let mut all: Vec<&str> = std::iter::once("model_type")
        .chain(family.modelled.iter().flat_map(|list| list.iter().copied()))
        .chain(family.ignored.iter().copied())
        .chain(NO_MEMORY.iter().copied())
        .chain(DROPOUT.iter().copied())
        .collect();
    all.sort_unstable();
    all
}

/// A Llama-family `rope_scaling` type: each changes the rotary frequencies, none the size of
/// any tensor, so the plan is the same with the unscaled ones.
pub const ROPE_SCALINGS: &[&str] = &["default", "linear", "dynamic", "yarn", "llama3", "longrope"];

/// The rotary scaling a Llama-family file asks for, when it asks for one.
pub fn rope_scaling(fields: &Fields) -> Result<Option<String>, ConfigError> {
    let Some(scaling) = fields.get("rope_scaling") else {
        return Ok(None);
    };
    let kind = scaling
        .get("rope_type")
        .or_else(|| scaling.get("type"))
        .and_then(|kind| kind.as_str());
    match kind {
        Some(kind) if ROPE_SCALINGS.contains(&kind) => Ok(Some(kind.to_string())),
        _ => Err(ConfigError::invalid(
            "rope_scaling",
            format!(
                "{scaling} is not modelled; vramlab accepts null or a rope_type of {}",
                quoted(ROPE_SCALINGS)
            ),
        )),
    }
}

/// `part` must divide `whole`, or the error names `part_name`.
pub(crate) fn divides(
    part: usize,
    part_name: &str,
    whole: usize,
    whole_name: &str,
) -> Result<(), ConfigError> {
    if whole.is_multiple_of(part) {
        Ok(())
    } else {
        Err(ConfigError::invalid(
            part_name,
            format!("{part} does not divide {whole_name} = {whole}"),
        ))
    }
}
