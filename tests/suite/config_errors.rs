//! Every invalid field gets its own error, naming the field, the value and the allowed range.

use vramlab::engine::overrides::apply_override;
use vramlab::engine::presets::preset;
use vramlab::engine::{ConfigError, Purpose, RunConfig};

fn error_for(base: &str, assignment: &str) -> ConfigError {
    let config = preset(base).unwrap();
    match apply_override(&config, assignment) {
        Err(err) => err,
        Ok(config) => config
            .validate()
            .expect_err(&format!("{assignment} on {base} should be refused")),
    }
}

#[test]
fn each_invalid_field_is_named_in_its_error() {
    // (preset, assignment, the field the error must name, text the message must contain)
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "spiral-mlp",
            "batch_size=0",
            "batch_size",
            "batch_size: 0 is out of range 1..=65536",
        ),
        (
            "spiral-mlp",
            "batch_size=100000",
            "batch_size",
            "out of range 1..=65536",
        ),
        (
            "spiral-mlp",
            "batch_size=7000",
            "batch_size",
            "1..=6144 (the size of the training split)",
        ),
        (
            "spiral-mlp",
            "eval_batch_size=0",
            "eval_batch_size",
            "out of range 1..=65536",
        ),
        ("spiral-mlp", "steps=0", "steps", "out of range 1..=1000000"),
        (
            "spiral-mlp",
            "learning_rate=0",
            "learning_rate",
            "out of range",
        ),
        (
            "spiral-mlp",
            "learning_rate=50",
            "learning_rate",
            "out of range",
        ),
        (
            "spiral-mlp",
            "data.samples=3",
            "data.samples",
            "out of range 16..=1000000",
        ),
        (
            "spiral-mlp",
            "data.noise=2",
            "data.noise",
            "out of range 0..=1",
        ),
        (
            "spiral-mlp",
            "data.test_fraction=0.99",
            "data.test_fraction",
            "out of range",
        ),
        (
            "spiral-mlp",
            "data.kind=moons",
            "data.kind",
            "unknown variant",
        ),
        (
            "spiral-mlp",
            "model.kind=cnn",
            "model.kind",
            "cannot train on data.kind = spiral",
        ),
        (
            "spiral-mlp",
            "model.hidden=[64,0]",
            "model.hidden[1]",
            "0 is out of range 1..=8192",
        ),
        (
            "spiral-mlp",
            "model.activation=swish",
            "model.activation",
            "unknown variant",
        ),
        (
            "spiral-mlp",
            "optimizer=lbfgs",
            "optimizer",
            "unknown variant",
        ),
        (
            "spiral-mlp",
            "memory_sampling=never",
            "memory_sampling",
            "unknown variant",
        ),
        (
            "digits-cnn",
            "model.channels=[8]",
            "model.channels",
            "exactly 2 entries",
        ),
        (
            "digits-cnn",
            "model.channels=[8,9999]",
            "model.channels[1]",
            "out of range 1..=512",
        ),
        ("digits-cnn", "model.hidden=[]", "model.hidden", "one entry"),
        (
            "digits-cnn",
            "strategies.kernels=fused",
            "strategies.kernels",
            "fused needs model.kind = mlp (got cnn)",
        ),
        (
            "sort-gru",
            "data.seq_len=1",
            "data.seq_len",
            "out of range 2..=4096",
        ),
        (
            "sort-gru",
            "data.vocab=1",
            "data.vocab",
            "out of range 2..=262144",
        ),
        (
            "sort-gru",
            "data.seq_len=4096",
            "data.samples",
            "`vramlab plan`, which needs no data",
        ),
        (
            "sort-gru",
            "model.width=0",
            "model.width",
            "out of range 1..=8192",
        ),
        (
            "sort-gru",
            "model.kind=mlp",
            "model.kind",
            "models for it: gru, lstm, transformer",
        ),
        (
            "sort-transformer",
            "model.heads=3",
            "model.heads",
            "does not divide model.width = 64",
        ),
        (
            "sort-transformer",
            "model.layers=0",
            "model.layers",
            "out of range 1..=96",
        ),
        ("sort-transformer", "model.ff=0", "model.ff", "out of range"),
        (
            "spiral-mlp",
            "strategies.grad_accumulation=0",
            "strategies.grad_accumulation",
            "1..=512 (the batch size)",
        ),
        (
            "spiral-mlp",
            "strategies.grad_accumulation=513",
            "strategies.grad_accumulation",
            "1..=512 (the batch size)",
        ),
        (
            "sort-gru",
            "strategies.mixed_precision=f16",
            "strategies.mixed_precision",
            "models for it: mlp, cnn, transformer",
        ),
        ("spiral-mlp", "budget=1.5", "budget", "(0, 1]"),
        (
            "sort-gru",
            "strategies.weight_dtype=int8",
            "strategies.weight_dtype",
            "models for it: mlp, cnn",
        ),
        (
            "sort-lstm",
            "strategies.weight_dtype=f16",
            "strategies.weight_dtype",
            "models for it: mlp, cnn, transformer",
        ),
        // Fields only a llama-built family reads are refused elsewhere, not ignored.
        (
            "sort-transformer",
            "model.window=64",
            "model.window",
            "64 means nothing to model.kind = transformer: only the families built as a llama \
             read it (llama, qwen3, gemma2, gemma3, phi3, mixtral, qwen3_moe)",
        ),
        (
            "sort-gpt",
            "model.final_softcap=30",
            "model.final_softcap",
            "means nothing to model.kind = transformer",
        ),
        (
            "sort-gru",
            "model.experts=8",
            "model.experts",
            "8 means nothing to model.kind = gru",
        ),
        (
            "sort-llama",
            "model.experts=8",
            "model.experts",
            "8: llama has one dense feed-forward a block",
        ),
        (
            "spiral-mlp",
            "strategies.attention=fused",
            "strategies.attention",
            "fused means nothing to model.kind = mlp, which has no attention: naive (the \
             default), or a model with attention (transformer, llama, qwen3,",
        ),
        ("spiral-mlp", "budget=12parsecs", "budget", "512MiB, 6GiB"),
        ("spiral-mlp", "budget=-3MiB", "budget", "above zero"),
        // The token stream is a decoder's task; the others name what takes it.
        (
            "sort-gru",
            "data.kind=stream",
            "data.kind",
            "stream is next-token prediction, which only a decoder trains on: model.kind = \
             llama, or transformer with model.decoder = true (got model.kind = gru)",
        ),
        (
            "sort-transformer",
            "data.kind=stream",
            "data.kind",
            "(got a transformer encoder (model.decoder = false))",
        ),
        (
            "spiral-mlp",
            "data.kind=stream",
            "data.kind",
            "(got model.kind = mlp)",
        ),
        (
            "digits-cnn",
            "data.kind=stream",
            "data.kind",
            "(got model.kind = cnn)",
        ),
        (
            "gpt2-small",
            "data.seq_len=40000",
            "data.seq_len",
            "40000 is out of range 2..=32768",
        ),
        (
            "sort-gpt",
            "data.seq_len=4097",
            "data.seq_len",
            "4097 is out of range 2..=4096",
        ),
        (
            "tinyllama-1.1b",
            "data.seq_len=4096",
            "model.positions",
            "4096..=131072 (each sample is data.seq_len = 4096 tokens; 0: exactly that)",
        ),
        (
            "gpt2-small",
            "data.samples=100000",
            "data.samples",
            "100000 samples of 1024 tokens are 102400000 tokens to generate",
        ),
    ];
    for &(base, assignment, field, text) in cases {
        let err = error_for(base, assignment);
        let message = err.to_string();
        assert!(
            message.contains(field) && message.contains(text),
            "{assignment}: expected field {field:?} and {text:?} in {message:?}"
        );
    }
}

#[test]
fn a_plan_of_a_stream_takes_the_context_lengths_people_fine_tune_at() {
    for (base, sets) in [
        ("gpt2-small", &["data.seq_len=8192"][..]),
        ("tinyllama-1.1b", &["data.seq_len=2048"]),
        ("llama2-7b", &["data.seq_len=4096"]),
        ("llama2-7b", &["data.seq_len=8192", "model.positions=8192"]),
    ] {
        let config = vramlab::engine::overrides::apply_overrides(
            preset(base).unwrap(),
            sets.iter().copied(),
        )
        .unwrap();
        config
            .validate_for(Purpose::Plan)
            .unwrap_or_else(|err| panic!("{base} {sets:?}: {err}"));
        assert_eq!(
            config.position_rows(),
            config.data.seq_len,
            "{base} {sets:?}"
        );
    }
}

#[test]
fn unknown_fields_in_a_file_are_refused_by_path() {
    let err = RunConfig::from_json(r#"{"model": {"kind": "mlp", "depth": 3}}"#).unwrap_err();
    assert!(err.field().is_some_and(|f| f.starts_with("model")), "{err}");
    assert!(err.to_string().contains("unknown field `depth`"), "{err}");
    let err = RunConfig::from_json(r#"{"batch_size": -4}"#).unwrap_err();
    assert_eq!(err.field(), Some("batch_size"), "{err}");
    let err = RunConfig::from_json("{ not json").unwrap_err();
    assert!(err.to_string().contains("line 1"), "{err}");
}

#[test]
fn fused_kernels_name_the_strategy_they_cannot_run_with() {
    let base = apply_override(&preset("spiral-mlp").unwrap(), "strategies.kernels=fused").unwrap();
    base.validate().unwrap();
    for (assignment, field) in [
        (
            "strategies.grad_accumulation=2",
            "strategies.grad_accumulation",
        ),
        (
            "strategies.mixed_precision=f16",
            "strategies.mixed_precision",
        ),
        (
            "strategies.checkpointing=balanced",
            "strategies.checkpointing",
        ),
        ("model.activation=tanh", "model.activation"),
    ] {
        let config = apply_override(&base, assignment).unwrap();
        let err = config.validate().unwrap_err();
        assert_eq!(err.field(), Some(field), "{assignment}: {err}");
        assert!(err.to_string().contains("or use kernels = burn"), "{err}");
    }
}

#[test]
fn a_plan_names_what_it_cannot_follow() {
    for (assignment, field, text) in [
        (
            "strategies.memory_pool=exclusive",
            "strategies.memory_pool",
            "allocated on the device even in a dry run",
        ),
        ("budget=0.5", "budget", "a size such as 24GiB"),
    ] {
        let config = apply_override(&preset("digits-cnn").unwrap(), assignment).unwrap();
        config.validate().unwrap();
        let err = config.validate_for(Purpose::Plan).unwrap_err();
        assert_eq!(err.field(), Some(field), "{assignment}: {err}");
        assert!(err.to_string().contains(text), "{assignment}: {err}");
    }
}
