//! A Hugging Face `config.json` read into vramlab's model config, for the four families
//! vramlab builds: GPT-2 (`model_type` "gpt2": the transformer as a decoder) and Llama, Mistral
//! and Qwen2 ("llama", "mistral", "qwen2": the llama). A pure function of the file's text: the
//! fronts read the file.
//!
//! Nothing is guessed. A field that sizes the model must be stated, or be one transformers
//! derives (named in `families`); a field whose value would change memory in a way vramlab does
//! not build (biases it has no place for, another activation, a head width that is not
//! `hidden_size / heads`, cross-attention, tensor-parallel slices) is accepted only at the value
//! vramlab builds; fields that change no tensor's size (ids, the checkpoint's dtype, dropout,
//! rotary scaling) are read from an explicit list, and each one that makes a plan differ from a
//! PyTorch run of the same file is said in a note. Any other field is refused by name, with the
//! list of what is understood.

mod families;
mod fields;

use serde_json::Value;

use super::config::{DataKind, InputKind, ModelConfig, ModelKind, OpPath, RunConfig};
use super::error::ConfigError;

pub use families::HfType;
pub(crate) use families::divides;
use families::{DROPOUT, understood};
pub(crate) use fields::Fields;

/// A model read from a `config.json`, with what the file says beyond the model config.
#[derive(Clone, Debug, PartialEq)]
pub struct HfModel {
    /// The `model_type` read, as the family that reads it describes it.
    pub family: &'static HfType,
    /// The model as vramlab builds it.
    pub model: ModelConfig,
    /// `_name_or_path`, when the file names its model.
    pub name: Option<String>,
    /// The attention window (Mistral's `sliding_window`; Qwen2's with `use_sliding_window`).
    pub sliding_window: Option<usize>,
    /// The checkpoint's storage type (`torch_dtype`).
    pub torch_dtype: Option<String>,
    /// Dropout probabilities above zero, by field.
    pub dropout: Vec<(String, f64)>,
    /// The rotary scaling type (`rope_scaling`), when there is one.
    pub rope_scaling: Option<String>,
}

/// Fields the user states (in a `--config` file or a `--set`), which keep their values over what
/// a Hugging Face user gets without asking. A preset states nothing a user chose.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stated {
    /// `data.kind`; otherwise the run trains on the next-token stream, as a causal language
    /// model does.
    pub data_kind: bool,
    /// `strategies.attention`; otherwise fused, as transformers' default attention (SDPA)
    /// keeps no `L x L` scores for backward.
    pub attention: bool,
}

impl Stated {
    /// What a config file's JSON states (nothing, if it is not a JSON object).
    pub fn in_json(text: &str) -> Self {
        Self::in_value(&serde_json::from_str(text).unwrap_or(Value::Null))
    }

    /// What a `--set PATH=VALUE` states (`data.kind=sort`, or a whole section:
    /// `strategies={"attention": "naive"}`).
    pub fn in_set(assignment: &str) -> Self {
        let Some((path, raw)) = assignment.split_once('=') else {
            return Self::default();
        };
        let value = serde_json::from_str(raw.trim()).unwrap_or(Value::String(raw.into()));
        let doc = path.trim().split('.').rev().fold(value, |inner, key| {
            Value::Object(serde_json::Map::from_iter([(key.to_string(), inner)]))
        });
        Self::in_value(&doc)
    }

    fn in_value(doc: &Value) -> Self {
        let has = |section: &str, field: &str| {
            doc.get(section)
                .and_then(|section| section.get(field))
                .is_some()
        };
        Self {
            data_kind: has("data", "kind"),
            attention: has("strategies", "attention"),
        }
    }

    /// Stated by either.
    pub fn or(self, other: Self) -> Self {
        Self {
            data_kind: self.data_kind || other.data_kind,
            attention: self.attention || other.attention,
        }
    }
}

/// Read a `config.json`. Errors name the JSON field and what vramlab accepts there.
pub fn read(text: &str) -> Result<HfModel, ConfigError> {
    let value: Value = serde_json::from_str(text)
        .map_err(|err| ConfigError::invalid("config.json", err.to_string()))?;
    let Value::Object(map) = &value else {
        return Err(ConfigError::invalid(
            "config.json",
            "a Hugging Face config is one JSON object",
        ));
    };
    let fields = Fields::new(map);
    let model_type = fields.text("model_type")?.ok_or_else(|| {
        ConfigError::invalid(
            "model_type",
            format!("missing; vramlab reads {}", quoted_types()),
        )
    })?;
    let family = HfType::from_model_type(model_type).ok_or_else(|| {
        ConfigError::invalid(
            "model_type",
            format!(
                "{model_type:?} is not a family vramlab builds; it reads {}",
                quoted_types()
            ),
        )
    })?;
    let understood = understood(family);
    if let Some(unknown) = fields.names().find(|name| !understood.contains(name)) {
        return Err(ConfigError::invalid(
            unknown,
            format!(
                "not a field vramlab models in a {} config, and what it would change is not \
                 guessed; understood: {}",
                family.model_type(),
                understood.join(", ")
            ),
        ));
    }
    architectures(family, &fields)?;
    let model = (family.model)(&fields)?;
    let rope_scaling = match family.rotary {
        false => None,
        true => families::rope_scaling(&fields)?,
    };
    let mut dropout = Vec::new();
    for name in DROPOUT.iter().filter(|name| map.contains_key(**name)) {
        let p = fields.number_or(name, 0.0, (0.0, 1.0))?;
        if p > 0.0 {
            dropout.push((name.to_string(), p));
        }
    }
    Ok(HfModel {
        family,
        sliding_window: (family.window)(&fields)?,
        name: fields
            .text("_name_or_path")?
            .filter(|name| !name.is_empty())
            .map(str::to_string),
        torch_dtype: fields.text("torch_dtype")?.map(str::to_string),
        dropout,
        rope_scaling,
        model,
    })
}

fn quoted_types() -> String {
    ModelKind::hf_types()
        .map(|family| format!("{:?}", family.model_type()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `architectures` names the class the file's weights belong to: vramlab plans the causal
/// language model, so another head (a classifier) is refused.
fn architectures(family: &HfType, fields: &Fields) -> Result<(), ConfigError> {
    let Some(value) = fields.get("architectures") else {
        return Ok(());
    };
    let built = family.architecture();
    match value.as_array().map(Vec::as_slice) {
        Some([one]) if one.as_str() == Some(built) => Ok(()),
        _ => Err(ConfigError::invalid(
            "architectures",
            format!(
                "{value} is not modelled; vramlab builds [{built:?}], the causal language model"
            ),
        )),
    }
}

impl HfModel {
    /// `base` with this model, trained as a Hugging Face user trains it unless `stated` says
    /// the base chose otherwise: on the next-token stream (`data.seq_len` tokens a sample) and
    /// with fused attention (SDPA, transformers' default); the loss stays naive, as
    /// transformers computes it over f32 logits. Then what must follow the model: the data
    /// needs a row in the token table for each of its tokens (and a query task's query token),
    /// and a position for each token of a sample (in the attention window too). Where the
    /// base's data does not fit, `data.vocab` and `data.seq_len` shrink to what does, and a note
    /// says so; later `--set`s are the user's and are validated as they are. `fallback_name`
    /// names the run when the file does not (`_name_or_path`).
    pub fn apply(
        &self,
        base: RunConfig,
        fallback_name: &str,
        stated: Stated,
    ) -> (RunConfig, Vec<String>) {
        let mut config = base;
        let mut notes = Vec::new();
        config.model = self.model.clone();
        config.name = self.name.clone().unwrap_or_else(|| fallback_name.into());
        if !stated.data_kind && config.data.kind != DataKind::Stream {
            notes.push(format!(
                "data.kind {} -> stream: a causal language model trains on next tokens, \
                 data.seq_len = {} of them a sample (--set data.kind={} keeps the base's task)",
                config.data.kind.name(),
                config.data.seq_len,
                config.data.kind.name(),
            ));
            config.data.kind = DataKind::Stream;
        }
        if !stated.attention && config.strategies.attention != OpPath::Fused {
            notes.push(
                "strategies.attention = fused, as transformers' default attention (SDPA) keeps \
                 no L x L scores for backward (--set strategies.attention=naive for eager \
                 attention)"
                    .to_string(),
            );
            config.strategies.attention = OpPath::Fused;
        }
        if config.data.kind.input_kind() != InputKind::Tokens {
            // Validation says which data the model takes; nothing here to fit.
            return (config, notes);
        }
        let stream = config.data.kind == DataKind::Stream;
        let rows = self.model.vocab;
        if config.data.token_ids() > rows {
            let vocab = if stream { rows } else { rows - 1 };
            notes.push(format!(
                "data.vocab {} -> {vocab}: the model's {rows} tokens (vocab_size) hold the \
                 task's tokens{}",
                config.data.vocab,
                if stream { "" } else { " and its query token" },
            ));
            config.data.vocab = vocab;
        }
        let (room, field) = self.longest_sequence();
        if config.data.sample_tokens() > room {
            let (seq_len, sample) = if stream {
                (room, "data.seq_len tokens")
            } else {
                (
                    room / 2,
                    "2 x data.seq_len tokens (the sequence and its answer)",
                )
            };
            notes.push(format!(
                "data.seq_len {} -> {seq_len}: each sample is {sample}, and {field} is {room}",
                config.data.seq_len,
            ));
            config.data.seq_len = seq_len;
        }
        (config, notes)
    }

    /// What the file says about `config` (the run after its `--set`s) that the model config
    /// cannot: the attention window (refused when the samples are longer, since vramlab plans
    /// full attention), dropout, the checkpoint's dtype, rotary scaling.
    pub fn notes_for(&self, config: &RunConfig) -> Result<Vec<String>, ConfigError> {
        let mut notes = Vec::new();
        let tokens = config.data.sample_tokens();
        if let Some(window) = self.sliding_window {
            if tokens > window {
                let (sample, most) = match config.data.kind {
                    DataKind::Stream => ("data.seq_len", window),
                    _ => ("2 x data.seq_len", window / 2),
                };
                return Err(ConfigError::invalid(
                    "sliding_window",
                    format!(
                        "{window} tokens, fewer than the {tokens} of each sample ({sample}, \
                         data.seq_len = {}); vramlab plans full causal attention, not a window: \
                         --set data.seq_len={most} or less",
                        config.data.seq_len,
                    ),
                ));
            }
            notes.push(format!(
                "sliding_window = {window}: each sample's {tokens} tokens fit in the window, so \
                 every token attends to all before it: full causal attention is what is planned"
            ));
        }
        if !self.dropout.is_empty() {
            let listed: Vec<String> = self
                .dropout
                .iter()
                .map(|(field, p)| format!("{field} = {p}"))
                .collect();
            notes.push(format!(
                "{}: vramlab trains without dropout (PyTorch keeps a mask per dropout for \
                 backward, which this plan does not count)",
                listed.join(", ")
            ));
        }
        if let Some(dtype) = &self.torch_dtype {
            notes.push(format!(
                "torch_dtype = {dtype} is how the checkpoint is stored; the plan keeps the \
                 weights in strategies.weight_dtype = {}",
                config.strategies.weight_dtype.name()
            ));
        }
        if let Some(kind) = &self.rope_scaling {
            notes.push(format!(
                "rope_scaling {kind:?} changes the rotary frequencies, not any tensor's size: \
                 planned with unscaled ones"
            ));
        }
        Ok(notes)
    }

    /// The longest sample the model takes, and the field that says so.
    fn longest_sequence(&self) -> (usize, &'static str) {
        let positions = (self.model.positions, self.family.positions_field);
        match self.sliding_window {
            Some(window) if window < positions.0 => (window, "sliding_window"),
            _ => positions,
        }
    }
}

#[cfg(test)]
mod tests;
