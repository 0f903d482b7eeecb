//! The transformer: an encoder that answers at the query positions, or (`model.decoder`) a
//! GPT-2-style decoder; and GPT-2's Hugging Face config (`model_type` "gpt2").

use burn::tensor::{Device, FloatDType};

use super::{Family, PanelField, panel};
use crate::engine::config::Trainable;
use crate::engine::config::{Checkpointing, InputKind, ModelConfig, OpPath, RunConfig, limits};
use crate::engine::data::Dataset;
use crate::engine::error::ConfigError;
use crate::engine::hf_config::{Fields, HfType, divides};
use crate::engine::memory::LayerEstimate;
use crate::engine::memory::analytic::{
    F32, INT, in_gradient_dtype, linear_tensors, sequence_logits_kept,
};
use crate::engine::memory::largest::{Oversized, TensorSizes, sequence_tensors};
use crate::engine::models::{self, Model, TransformerSize};
use crate::engine::validate::{attention_sizes, attention_tables, kv_groups};

pub struct Transformer;

impl Family for Transformer {
    fn accepts(&self, input: InputKind) -> bool {
        input == InputKind::Tokens
    }

    fn is_decoder(&self, model: &ModelConfig) -> bool {
        model.decoder
    }

    fn attends(&self) -> bool {
        true
    }

    fn check(&self, config: &RunConfig) -> Result<(), ConfigError> {
        attention_sizes(config)?;
        if config.model.kv_heads() != config.model.heads {
            return Err(ConfigError::invalid(
                "model.kv_heads",
                "a transformer has one key/value head per attention head (0); grouped-query \
                 attention is a llama's",
            ));
        }
        kv_groups(config)?;
        attention_tables(config)
    }

    fn build(&self, config: &RunConfig, data: &Dataset, device: &Device, _: FloatDType) -> Model {
        let model = &config.model;
        Model::Transformer(models::Transformer::new(
            config.token_rows(),
            config.position_rows(),
            &TransformerSize {
                width: model.width,
                layers: model.layers,
                heads: model.heads,
                ff: model.ff,
                decoder: model.decoder,
                attention: config.strategies.attention,
                recompute: config.strategies.checkpointing == Checkpointing::Layers,
            },
            data.classes,
            device,
        ))
    }

    fn layers(
        &self,
        config: &RunConfig,
        _width: usize,
        classes: usize,
        b: u64,
    ) -> Vec<LayerEstimate> {
        layers(config, classes, b)
    }

    /// The larger of one encoder layer's attention (its scores before and after softmax beside
    /// six [n, L, width] tensors: the residual stream, Q, K, V, context and the projection, as
    /// plans show them) and its feed-forward block (input, hidden before and after the
    /// activation).
    fn inference_bytes(&self, config: &RunConfig, n: u64) -> u64 {
        let m = &config.model;
        let length = config.data.sample_tokens() as u64;
        let full_scores = n * m.heads as u64 * length * length * F32;
        let scores = match config.strategies.attention {
            // A decoder's adds burn's autoregressive mask (int-sized bools).
            OpPath::Naive if m.is_decoder() => 2 * full_scores + n * length * length * INT,
            OpPath::Naive => 2 * full_scores,
            // Fused attention's scores never leave its kernels.
            OpPath::Fused => 0,
        };
        // An encoder's fused attention writes the context itself (no scores, no separate
        // product of the weights and V): five [n, L, width] beside its log-sum-exp, one f32 a
        // row (sort-transformer at 64 positions: 82.25 MiB in evaluation, where six made
        // 97.25).
        let streams = match config.strategies.attention {
            OpPath::Fused if !m.is_decoder() => {
                5 * n * length * m.width as u64 * F32 + n * m.heads as u64 * length * F32
            }
            // A decoder's plans still show six (sort-gpt at 64 positions: 98.37 MiB).
            _ => 6 * n * length * m.width as u64 * F32,
        };
        let attention = scores + streams;
        let feed_forward = n * length * (m.width as u64 + 2 * m.ff as u64) * F32;
        attention.max(feed_forward)
    }

    fn backward_working_set(&self, config: &RunConfig, b: u64) -> u64 {
        attention_backward(config, b)
    }

    fn largest_tensors(&self, config: &RunConfig, sizes: &TensorSizes) -> Vec<Oversized> {
        sequence_tensors(config, sizes, true)
    }

    fn short(&self, config: &RunConfig) -> String {
        let m = &config.model;
        format!("{} w{} x{} h{}", m.kind.name(), m.width, m.layers, m.heads)
    }

    fn summary(&self, config: &RunConfig) -> String {
        let m = &config.model;
        format!(
            "{}, {} blocks of width {}, {} heads, feed-forward {}, {} tokens, {} positions",
            if m.decoder {
                "GPT-2-style decoder"
            } else {
                "transformer encoder"
            },
            m.layers,
            m.width,
            m.heads,
            m.ff,
            config.token_rows(),
            config.position_rows()
        )
    }

    fn panel(&self) -> &'static [PanelField] {
        const FIELDS: &[PanelField] = &[
            panel("width", "model.width", "model width"),
            panel("layers", "model.layers", "encoder layers"),
            panel("heads", "model.heads", "attention heads"),
            panel("ff", "model.ff", "feed-forward width"),
        ];
        FIELDS
    }

    fn hf_types(&self) -> &'static [HfType] {
        &[GPT2]
    }
}

/// What backward makes on top of the activations: with naive attention, the larger of three
/// feed-forward hiddens [b, L, ff] (the activation's backward) and two score tensors
/// [b, heads, L, L] (softmax's backward); with fused attention, a block's stream gradients.
/// The llama's too.
pub(super) fn attention_backward(config: &RunConfig, b: u64) -> u64 {
    let m = &config.model;
    let length = config.data.sample_tokens() as u64;
    let full_scores = b * m.heads as u64 * length * length * F32;
    let working_set = match config.strategies.attention {
        OpPath::Naive => (3 * b * length * m.ff as u64 * F32).max(2 * full_scores),
        // Fused attention's backward kernels recompute each score in registers, and its plans
        // show no feed-forward-wide temporaries on top of the activations either (each comes
        // as the hidden it differentiates is freed): what is added is the gradients of a
        // block's stream, two [b, L, width] (sort-gpt at 64 positions, fused: 276.37 MiB at
        // the peak, where three [b, L, ff] on top made 323.24).
        OpPath::Fused => 2 * b * length * m.width as u64 * F32,
    };
    in_gradient_dtype(config, working_set)
}

fn layers(config: &RunConfig, classes: usize, b: u64) -> Vec<LayerEstimate> {
    let m = &config.model;
    let (d, ff, heads) = (m.width as u64, m.ff as u64, m.heads as u64);
    let length = config.data.sample_tokens() as u64;
    let tokens = config.token_rows() as u64;
    let positions = config.position_rows() as u64;
    let decoder = config.model.is_decoder();
    // The embeddings' sum; an encoder's plans hold two more [B, L, d] here.
    let embedded = if decoder { 1 } else { 3 };
    let embeddings = LayerEstimate::new(
        format!("embeddings {tokens}+{positions} x{d}"),
        vec![vec![tokens, d], vec![positions, d]],
        embedded * b * length * d * F32,
    );
    // A decoder's output is its token embedding: the head trains it, and every layer lies
    // behind it.
    let mut layers = vec![if decoder {
        embeddings.in_head_keeping(0)
    } else {
        embeddings
    }];
    let (w, f) = (m.width, m.ff);
    for i in 0..m.layers {
        // Tensors of [B, L, d] an encoder (post-norm) block keeps: Q, K, V, context,
        // projection, two residual sums and two layer norms, nine in all; a decoder
        // (pre-norm) block ten, as its plans show them. Both keep the feed-forward hidden
        // before and after its activation. Naive attention adds three score-sized tensors of
        // [B, heads, L, L] (burn's softmax under autodiff is max, subtract, exp, sum and
        // divide: the exponent and the softmax are kept, and the scores themselves, masked for
        // a decoder). Fused attention keeps its output, one more [B, L, d], and one
        // log-sum-exp per row and head instead.
        // Frozen LayerNorms (LoRA freezes every base) keep neither normalized input.
        let frozen_norms = match config.strategies.trainable {
            Trainable::Lora => 2,
            _ => 0,
        };
        let kept = if decoder { 10 } else { 9 } - frozen_norms;
        let (per_token, scores) = match config.strategies.attention {
            OpPath::Naive => (kept * d + 2 * ff, 3 * heads * length * length),
            OpPath::Fused => ((kept + 1) * d + 2 * ff, 0),
        };
        let lse = match config.strategies.attention {
            OpPath::Naive => 0,
            OpPath::Fused => heads,
        };
        let mut tensors = Vec::new();
        for _ in 0..4 {
            tensors.extend(linear_tensors(w, w, true));
        }
        tensors.extend(linear_tensors(w, f, true));
        tensors.extend(linear_tensors(f, w, true));
        tensors.extend([vec![d], vec![d], vec![d], vec![d]]);
        layers.push(
            LayerEstimate::new(
                format!(
                    "{}{} d{d} ff{ff} h{heads}",
                    if decoder { "decoder" } else { "encoder" },
                    i + 1
                ),
                tensors,
                (b * length * (per_token + lse) + b * scores) * F32,
            )
            .adapting_all()
            .in_block(),
        );
    }
    if decoder {
        // The final LayerNorm, and logits from the token embedding itself (no parameters of
        // their own): one logit tensor over every position is kept for the loss.
        layers.push(
            LayerEstimate::new(
                format!("final norm, tied output {d}x{classes}"),
                vec![vec![d], vec![d]],
                (3 * b * length * d + b * length * classes as u64) * F32,
            )
            .in_head_keeping(0),
        );
    } else {
        let logits = sequence_logits_kept(config, classes, b);
        layers.push(
            LayerEstimate::new(
                format!("classifier {d}x{classes}"),
                linear_tensors(w, classes, true),
                logits,
            )
            .adapting_all()
            .in_head_keeping(logits + b * config.data.seq_len as u64 * d * F32),
        );
    }
    layers
}

/// GPT-2 as transformers builds `GPT2LMHeadModel`.
const GPT2: HfType = HfType {
    model_type: "gpt2",
    architecture: "GPT2LMHeadModel",
    base_preset: "gpt2-small",
    modelled: &[&[
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
    ]],
    // `n_ctx` is an old alias of `n_positions`; the layer norm's epsilon and the attention's
    // scaling change values, not sizes; `summary_*` configure GPT2DoubleHeadsModel's
    // multiple-choice head, which a language model does not have.
    ignored: &[
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
    positions_field: "n_positions",
    model: gpt2,
    rotary: false,
    window: |_| Ok(None),
};

/// GPT-2 as transformers builds `GPT2LMHeadModel`: vramlab's transformer as a decoder (learned
/// positions, biases everywhere, GELU, LayerNorm, output tied to the token embedding).
fn gpt2(fields: &Fields) -> Result<ModelConfig, ConfigError> {
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
        kind: super::ModelKind::Transformer,
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
