//! The four families vramlab reads, each as the fields its transformers config class has and
//! what vramlab builds from them. A field either sizes the model, is checked to be a value
//! vramlab builds, or is on a list of fields that change nothing a plan counts; anything else is
//! refused by name.

use crate::engine::config::{ModelConfig, ModelKind, limits};
use crate::engine::error::ConfigError;

use super::fields::{Fields, quoted};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Gpt2,
    Llama,
    Mistral,
    Qwen2,
}

impl Family {
    pub const ALL: [Family; 4] = [Self::Gpt2, Self::Llama, Self::Mistral, Self::Qwen2];

    /// The family's `model_type`, as its config.json writes it.
    pub fn model_type(self) -> &'static str {
        match self {
            Self::Gpt2 => "gpt2",
            Self::Llama => "llama",
            Self::Mistral => "mistral",
            Self::Qwen2 => "qwen2",
        }
    }

    pub fn from_model_type(model_type: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|family| family.model_type() == model_type)
    }

    /// The causal language model vramlab builds for the family (its `architectures` entry).
    pub fn architecture(self) -> &'static str {
        match self {
            Self::Gpt2 => "GPT2LMHeadModel",
            Self::Llama => "LlamaForCausalLM",
            Self::Mistral => "MistralForCausalLM",
            Self::Qwen2 => "Qwen2ForCausalLM",
        }
    }

    /// The preset whose data, optimizer and batch a plan starts from when neither `--preset`
    /// nor `--config` gives a base run: the family's own full-size preset.
    pub fn base_preset(self) -> &'static str {
        match self {
            Self::Gpt2 => "gpt2-small",
            Self::Llama | Self::Mistral | Self::Qwen2 => "llama2-7b",
        }
    }

    /// Fields read into the model or checked against what vramlab builds, beside
    /// [`LLAMA_STYLE`] for the Llama-style families.
    fn modelled(self) -> &'static [&'static str] {
        match self {
            Self::Gpt2 => &[
                "n_embd",
                "n_layer",
                "n_head",
                "n_inner",
                "n_positions",
                "vocab_size",
                "activation_function",
                "tie_word_embeddings",
                "reorder_and_upcast_attn",
                "add_cross_attention",
            ],
            Self::Llama => &["attention_bias", "mlp_bias", "pretraining_tp"],
            Self::Mistral => &["sliding_window"],
            Self::Qwen2 => &["sliding_window", "use_sliding_window", "use_mrope"],
        }
    }

    /// The family's own fields that change nothing vramlab plans.
    fn ignored(self) -> &'static [&'static str] {
        match self {
            // `n_ctx` is an old alias of `n_positions`; the layer norm's epsilon and the
            // attention's scaling change values, not sizes; `summary_*` configure
            // GPT2DoubleHeadsModel's multiple-choice head, which a language model does not have.
            Self::Gpt2 => &[
                "n_ctx",
                "layer_norm_epsilon",
                "scale_attn_weights",
                "scale_attn_by_inverse_layer_idx",
                "summary_type",
                "summary_use_proj",
                "summary_activation",
                "summary_proj_to_labels",
                "summary_first_dropout",
                "task_specific_params",
            ],
            // Which layers a sliding window would skip: no window, no effect (and a window the
            // sequence fits in is full attention in every layer).
            Self::Qwen2 => &["max_window_layers"],
            Self::Llama | Self::Mistral => &[],
        }
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

/// The fields Llama, Mistral and Qwen2 share: one decoder, read the same way.
const LLAMA_STYLE: &[&str] = &[
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "hidden_act",
    "tie_word_embeddings",
    "rope_theta",
    "rope_scaling",
    "rms_norm_eps",
];

/// Every field vramlab reads in a `family` config, sorted.
pub fn understood(family: Family) -> Vec<&'static str> {
    let shared = match family {
        Family::Gpt2 => &[][..],
        Family::Llama | Family::Mistral | Family::Qwen2 => LLAMA_STYLE,
    };
    let mut all: Vec<&str> = std::iter::once("model_type")
        .chain(shared.iter().copied())
        .chain(family.modelled().iter().copied())
        .chain(family.ignored().iter().copied())
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

/// GPT-2 as transformers builds `GPT2LMHeadModel`: vramlab's transformer as a decoder (learned
/// positions, biases everywhere, GELU, LayerNorm, output tied to the token embedding).
pub fn gpt2(fields: &Fields) -> Result<ModelConfig, ConfigError> {
    let width = fields.count("n_embd", limits::WIDTH)?;
    let heads = fields.count("n_head", limits::HEADS)?;
    divides(heads, "n_head", width, "n_embd")?;
    fields.one_of(
        "activation_function",
        "gelu_new",
        GELUS,
        "vramlab's GPT-2 block has a GELU feed-forward (every GELU keeps the same tensors)",
    )?;
    fields.flag_must_be(
        "tie_word_embeddings",
        true,
        "vramlab's GPT-2 decoder computes its logits with the token embedding",
    )?;
    fields.flag_must_be(
        "reorder_and_upcast_attn",
        false,
        "vramlab's attention scores are in the training precision, not upcast to f32",
    )?;
    fields.flag_must_be(
        "add_cross_attention",
        false,
        "vramlab's GPT-2 blocks have self-attention only",
    )?;
    Ok(ModelConfig {
        kind: ModelKind::Transformer,
        decoder: true,
        width,
        layers: fields.count("n_layer", limits::LAYERS)?,
        heads,
        kv_heads: 0,
        // transformers: `n_inner` unset (null) is four times the width.
        ff: fields.count_or("n_inner", 4 * width, limits::FF)?,
        vocab: fields.count("vocab_size", limits::MODEL_VOCAB)?,
        positions: fields.count("n_positions", limits::POSITIONS)?,
        ..ModelConfig::default()
    })
}

/// GPT-2's activations by the names transformers gives them.
const GELUS: &[&str] = &["gelu_new", "gelu", "gelu_fast", "gelu_pytorch_tanh"];

/// Llama, Mistral and Qwen2 as transformers builds their `*ForCausalLM`: vramlab's llama
/// (RMSNorm, SwiGLU, rotary positions, grouped-query attention), with Qwen2's biases on Q, K
/// and V. Where the file leaves a field out, transformers' class default is taken and named
/// here: one key/value head per head (Llama), rope_theta 10,000, RMSNorm epsilon 1e-6, and an
/// untied output.
pub fn llama(family: Family, fields: &Fields) -> Result<ModelConfig, ConfigError> {
    let width = fields.count("hidden_size", limits::WIDTH)?;
    let heads = fields.count("num_attention_heads", limits::HEADS)?;
    divides(heads, "num_attention_heads", width, "hidden_size")?;
    let head_dim = width / heads;
    if !head_dim.is_multiple_of(2) {
        return Err(ConfigError::invalid(
            "num_attention_heads",
            format!(
                "hidden_size / num_attention_heads = {head_dim} is odd; rotary positions turn \
                 pairs of a head's dimensions"
            ),
        ));
    }
    if let Some(stated) = fields.get("head_dim")
        && stated.as_u64() != Some(head_dim as u64)
    {
        return Err(ConfigError::invalid(
            "head_dim",
            format!(
                "{stated} is not modelled; vramlab's heads are hidden_size / \
                 num_attention_heads = {head_dim} wide (null or {head_dim})"
            ),
        ));
    }
    // Mistral's and Qwen2's classes default to fixed counts (8 and 32) rather than one per
    // head: a file that leaves it out does not say its own shape.
    let kv_heads = match family {
        Family::Llama => fields.count_or("num_key_value_heads", heads, limits::HEADS)?,
        _ => fields.count("num_key_value_heads", limits::HEADS)?,
    };
    divides(
        kv_heads,
        "num_key_value_heads",
        heads,
        "num_attention_heads",
    )?;
    fields.one_of(
        "hidden_act",
        "silu",
        &["silu", "swish"],
        "vramlab's feed-forward is SwiGLU (a SiLU gate times the up projection)",
    )?;
    if family == Family::Llama {
        fields.flag_must_be(
            "attention_bias",
            false,
            "transformers puts it on Q, K, V and the output projection; vramlab builds no \
             attention biases for Llama (Qwen2's Q, K and V biases are its own family)",
        )?;
        fields.flag_must_be(
            "mlp_bias",
            false,
            "vramlab's SwiGLU projections have no biases",
        )?;
        let split = fields.count_or("pretraining_tp", 1, (1, usize::MAX))?;
        if split != 1 {
            return Err(ConfigError::invalid(
                "pretraining_tp",
                format!(
                    "{split} is not modelled; vramlab accepts 1: it computes each projection \
                     whole, not in {split} slices"
                ),
            ));
        }
    }
    if family == Family::Qwen2 {
        fields.flag_must_be(
            "use_mrope",
            false,
            "multimodal rotary positions are Qwen2-VL's; vramlab's are one sequence's",
        )?;
    }
    Ok(ModelConfig {
        kind: ModelKind::Llama,
        width,
        layers: fields.count("num_hidden_layers", limits::LAYERS)?,
        heads,
        kv_heads,
        ff: fields.count("intermediate_size", limits::FF)?,
        vocab: fields.count("vocab_size", limits::MODEL_VOCAB)?,
        positions: fields.count("max_position_embeddings", limits::POSITIONS)?,
        tied: fields.flag_or("tie_word_embeddings", false)?,
        qkv_bias: family == Family::Qwen2,
        rope_theta: fields.number_or("rope_theta", 10_000.0, limits::ROPE_THETA)?,
        norm_eps: fields.number_or("rms_norm_eps", 1e-6, limits::NORM_EPS)?,
        ..ModelConfig::default()
    })
}

/// The attention window a Mistral or Qwen2 file asks for (Qwen2's only with
/// `use_sliding_window`).
pub fn sliding_window(family: Family, fields: &Fields) -> Result<Option<usize>, ConfigError> {
    let applies = match family {
        Family::Mistral => true,
        Family::Qwen2 => fields.flag_or("use_sliding_window", false)?,
        Family::Gpt2 | Family::Llama => false,
    };
    if !applies {
        return Ok(None);
    }
    let window = (1, usize::MAX);
    match family {
        // Mistral's window is on unless the file sets it to null.
        Family::Mistral => fields
            .get("sliding_window")
            .map(|_| fields.count("sliding_window", window))
            .transpose(),
        _ => fields.count("sliding_window", window).map(Some),
    }
}

/// `part` must divide `whole`, or the error names `part_name`.
fn divides(
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
