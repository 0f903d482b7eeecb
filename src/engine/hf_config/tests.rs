use serde_json::{Value, json};

use super::*;
use crate::engine::config::{DataKind, ModelKind, OpPath};
use crate::engine::presets::preset;

const GPT2: &str = include_str!("../../../tests/data/hf/gpt2.json");
const TINYLLAMA: &str = include_str!("../../../tests/data/hf/tinyllama-1.1b-chat-v1.0.json");
const LLAMA2: &str = include_str!("../../../tests/data/hf/llama-2-7b.json");
const MISTRAL: &str = include_str!("../../../tests/data/hf/mistral-7b-v0.1.json");
const QWEN2: &str = include_str!("../../../tests/data/hf/qwen2-0.5b.json");

/// `text` with `field` set to `value` (`null` removes it).
fn with(text: &str, field: &str, value: Value) -> String {
    let mut doc: Value = serde_json::from_str(text).unwrap();
    let map = doc.as_object_mut().unwrap();
    if value.is_null() {
        map.remove(field);
    } else {
        map.insert(field.into(), value);
    }
    doc.to_string()
}

fn refused(text: &str) -> (String, String) {
    let err = read(text).expect_err("refused");
    (err.field().unwrap_or_default().to_string(), err.to_string())
}

#[test]
fn llama_files_read_as_the_presets_of_their_shape() {
    for (text, name) in [(LLAMA2, "llama2-7b"), (TINYLLAMA, "tinyllama-1.1b")] {
        let hf = read(text).unwrap();
        assert_eq!(hf.family.model_type(), "llama");
        assert_eq!(hf.model, preset(name).unwrap().model, "{name}");
    }
    assert_eq!(
        read(LLAMA2).unwrap().name.as_deref(),
        Some("meta-llama/Llama-2-7b-hf")
    );
}

#[test]
fn gpt2_reads_as_the_decoder_with_its_tables() {
    let hf = read(GPT2).unwrap();
    let m = &hf.model;
    assert_eq!((m.kind, m.decoder), (ModelKind::Transformer, true));
    assert_eq!((m.width, m.layers, m.heads, m.ff), (768, 12, 12, 3072));
    assert_eq!((m.vocab, m.positions), (50257, 1024));
    let drops: Vec<&str> = hf.dropout.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(drops, ["attn_pdrop", "embd_pdrop", "resid_pdrop"]);
    let (config, notes) = hf.apply(preset("gpt2-small").unwrap(), "gpt2", Stated::default());
    assert_eq!(notes.len(), 1, "only the attention is changed: {notes:?}");
    assert!(
        notes[0].starts_with("strategies.attention = fused"),
        "{notes:?}"
    );
    assert_eq!(config.name, "gpt2");
    assert_eq!((config.token_rows(), config.position_rows()), (50257, 1024));
}

#[test]
fn a_model_trains_as_transformers_would_unless_the_base_states_otherwise() {
    let hf = read(LLAMA2).unwrap();
    let (config, notes) = hf.apply(preset("sort-llama").unwrap(), "x", Stated::default());
    assert_eq!(config.data.kind, DataKind::Stream);
    assert_eq!(
        config.data.sample_tokens(),
        8,
        "data.seq_len tokens a sample"
    );
    assert_eq!(config.strategies.attention, OpPath::Fused);
    assert_eq!(config.strategies.cross_entropy, OpPath::Naive);
    assert!(
        notes[0].starts_with("data.kind sort -> stream"),
        "{notes:?}"
    );
    let stated =
        Stated::in_json(r#"{"data": {"kind": "sort"}, "strategies": {"attention": "naive"}}"#);
    assert_eq!(
        stated,
        Stated {
            data_kind: true,
            attention: true
        }
    );
    let (config, notes) = hf.apply(preset("sort-llama").unwrap(), "x", stated);
    assert_eq!(config.data.kind, DataKind::Sort);
    assert_eq!(config.strategies.attention, OpPath::Naive);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(
        Stated::in_json(r#"{"data": {"seq_len": 4}}"#),
        Stated::default()
    );
    let set = |assignment| Stated::in_set(assignment);
    assert!(set("data.kind=sort").data_kind && !set("data.kind=sort").attention);
    assert!(set(r#"strategies={"attention": "naive"}"#).attention);
    assert_eq!(set("data.seq_len=2048"), Stated::default());
    assert_eq!(
        set("data.kind=sort").or(set(" strategies.attention = naive")),
        stated
    );
}

#[test]
fn qwen2_has_its_qkv_biases_tied_output_and_no_window_unless_asked() {
    let hf = read(QWEN2).unwrap();
    let m = &hf.model;
    assert!(m.qkv_bias && m.tied);
    assert_eq!((m.heads, m.kv_heads, m.vocab), (14, 2, 151936));
    assert_eq!(m.rope_theta, 1e6);
    assert_eq!(hf.sliding_window, None, "use_sliding_window is false");
    let windowed = read(&with(QWEN2, "use_sliding_window", json!(true))).unwrap();
    assert_eq!(windowed.sliding_window, Some(131072));
}

#[test]
fn the_base_data_shrinks_to_fit_the_model_and_says_so() {
    let hf = read(GPT2).unwrap();
    // llama2-7b's samples are 2,048 tokens; GPT-2 has 1024 positions.
    let (config, notes) = hf.apply(preset("llama2-7b").unwrap(), "gpt2", Stated::default());
    assert_eq!(config.data.seq_len, 1024);
    let fit = notes
        .iter()
        .find(|n| n.starts_with("data.seq_len 2048 -> 1024"));
    assert!(
        fit.is_some_and(|n| n.contains("n_positions is 1024")),
        "{notes:?}"
    );
    config.validate_for(crate::engine::Purpose::Plan).unwrap();

    let small = read(&with(LLAMA2, "vocab_size", json!(1000))).unwrap();
    let (config, notes) = small.apply(preset("llama2-7b").unwrap(), "x", Stated::default());
    assert_eq!(config.data.vocab, 1000);
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("data.vocab 32000 -> 1000")),
        "{notes:?}"
    );

    // A query task keeps a row for its query token and a position for each query.
    let (config, notes) = small.apply(
        preset("sort-llama").unwrap(),
        "x",
        Stated {
            data_kind: true,
            attention: false,
        },
    );
    let mut long = preset("sort-llama").unwrap();
    long.data.vocab = 5000;
    long.data.seq_len = 4000;
    assert_eq!(config.data.vocab, 8, "sort-llama's 8 tokens fit");
    let (config, notes_long) = small.apply(
        long,
        "x",
        Stated {
            data_kind: true,
            attention: false,
        },
    );
    assert_eq!((config.data.vocab, config.data.seq_len), (999, 2048));
    assert!(
        notes.len() == 1 && notes_long.len() == 3,
        "{notes:?} {notes_long:?}"
    );
}

#[test]
fn a_sliding_window_is_planned_as_full_attention_only_when_the_samples_fit() {
    let hf = read(MISTRAL).unwrap();
    assert_eq!(hf.sliding_window, Some(4096));
    let (mut config, notes) = hf.apply(preset("llama2-7b").unwrap(), "mistral", Stated::default());
    assert!(!notes.iter().any(|n| n.starts_with("data.")), "{notes:?}");
    let notes = hf.notes_for(&config).unwrap();
    assert!(
        notes[0].contains("full causal attention is what is planned"),
        "{notes:?}"
    );
    // A stream's sample is data.seq_len tokens: 4,096 fill the window, 4,097 do not.
    config.data.seq_len = 4096;
    assert!(hf.notes_for(&config).is_ok());
    config.data.seq_len = 4097;
    let err = hf.notes_for(&config).unwrap_err();
    assert_eq!(err.field(), Some("sliding_window"));
    assert!(
        err.to_string().contains("--set data.seq_len=4096 or less"),
        "{err}"
    );
    config.data.kind = DataKind::Sort;
    config.data.seq_len = 2049;
    let err = hf.notes_for(&config).unwrap_err();
    assert!(
        err.to_string().contains("--set data.seq_len=2048 or less"),
        "{err}"
    );
}

#[test]
fn unknown_families_and_fields_are_refused_by_name() {
    let (field, message) = refused(&with(MISTRAL, "model_type", json!("deepseek_v3")));
    assert_eq!(field, "model_type");
    assert!(
        message
            .contains(r#""deepseek_v3" is not a family vramlab builds; it reads "gpt2", "llama""#),
        "{message}"
    );
    let (field, message) = refused(&with(LLAMA2, "num_local_experts", json!(8)));
    assert_eq!(field, "num_local_experts");
    assert!(
        message.contains("not a field vramlab models in a llama config")
            && message.contains("understood: _name_or_path, architectures, attention_bias"),
        "{message}"
    );
    let (field, _) = refused(&with(GPT2, "sliding_window", json!(512)));
    assert_eq!(field, "sliding_window", "a gpt2 config has no window");
    let (field, message) = refused(&with(LLAMA2, "model_type", Value::Null));
    assert_eq!(field, "model_type");
    assert!(message.contains("missing"), "{message}");
}

#[test]
fn values_vramlab_does_not_build_are_refused_naming_what_it_accepts() {
    let cases = [
        (
            with(LLAMA2, "hidden_act", json!("gelu")),
            "hidden_act",
            r#"hidden_act: "gelu" is not modelled; vramlab accepts "silu", "swish""#,
        ),
        (
            with(LLAMA2, "attention_bias", json!(true)),
            "attention_bias",
            "attention_bias: true is not modelled; vramlab accepts false",
        ),
        (
            with(LLAMA2, "mlp_bias", json!(true)),
            "mlp_bias",
            "mlp_bias: true is not modelled",
        ),
        (
            with(MISTRAL, "head_dim", json!(160)),
            "head_dim",
            "head_dim: 160 is not modelled; vramlab's heads are hidden_size / \
             num_attention_heads = 128 wide",
        ),
        (
            with(GPT2, "tie_word_embeddings", json!(false)),
            "tie_word_embeddings",
            "tie_word_embeddings: false is not modelled; vramlab accepts true",
        ),
        (
            with(LLAMA2, "rope_scaling", json!({"type": "mrope"})),
            "rope_scaling",
            "rope_scaling: {\"type\":\"mrope\"} is not modelled",
        ),
        (
            with(
                LLAMA2,
                "architectures",
                json!(["LlamaForSequenceClassification"]),
            ),
            "architectures",
            "vramlab builds [\"LlamaForCausalLM\"]",
        ),
        (
            with(LLAMA2, "hidden_size", json!(100_000)),
            "hidden_size",
            "hidden_size: 100000 is out of range 1..=8192",
        ),
        (
            with(LLAMA2, "num_key_value_heads", json!(5)),
            "num_key_value_heads",
            "num_key_value_heads: 5 does not divide num_attention_heads = 32",
        ),
        (
            with(LLAMA2, "vocab_size", json!("32000")),
            "vocab_size",
            r#"vocab_size: "32000" is not a whole number"#,
        ),
        (
            with(MISTRAL, "num_key_value_heads", Value::Null),
            "num_key_value_heads",
            "num_key_value_heads: missing; it sizes the model",
        ),
        (
            with(QWEN2, "rms_norm_eps", json!(0.5)),
            "rms_norm_eps",
            "rms_norm_eps: 0.5 is out of range",
        ),
    ];
    for (text, want_field, want) in cases {
        let (field, message) = refused(&text);
        assert_eq!(field, want_field, "{message}");
        assert!(message.contains(want), "{message}\n  wanted: {want}");
    }
    let (field, message) = refused("{\"model_type\": \"llama\",");
    assert_eq!(field, "config.json");
    assert!(message.contains("line 1"), "{message}");
}

#[test]
fn rope_scaling_and_the_checkpoint_dtype_are_said_not_guessed() {
    let scaled = with(
        LLAMA2,
        "rope_scaling",
        json!({"type": "linear", "factor": 2.0}),
    );
    let hf = read(&scaled).unwrap();
    let (config, _) = hf.apply(preset("llama2-7b").unwrap(), "x", Stated::default());
    let notes = hf.notes_for(&config).unwrap().join("\n");
    assert!(notes.contains("torch_dtype = float16"), "{notes}");
    assert!(notes.contains("rope_scaling \"linear\""), "{notes}");
}
