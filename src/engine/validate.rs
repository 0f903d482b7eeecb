//! Range checks for [`RunConfig`]: one function per section, each naming the field it refuses.
//! A strategy's own refusals (what it cannot run with) live in its file under `strategies`.

use super::config::{
    Budget, DataConfig, DataKind, InputKind, Kernels, ModelKind, OpPath, RunConfig, limits,
};
use super::error::ConfigError;
use super::strategies;

pub(crate) type Check = Result<(), ConfigError>;

/// What a config is checked for: a run generates its data and trains on it; a plan follows
/// shapes only, so neither the data's host size nor the training split bounds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    Run,
    Plan,
}

impl RunConfig {
    /// Check every field against its allowed range for a run; the first bad field is reported.
    pub fn validate(&self) -> Check {
        self.validate_for(Purpose::Run)
    }

    pub fn validate_for(&self, purpose: Purpose) -> Check {
        data(self)?;
        if purpose == Purpose::Run {
            host_data(self)?;
            one_gpu(self)?;
            on_the_device(self)?;
        }
        model(self)?;
        training(self, purpose)?;
        strategies::check(self)?;
        if purpose == Purpose::Plan {
            plannable(self)?;
        }
        Ok(())
    }
}

/// A run generates its sequences in host memory before the first step.
fn host_data(config: &RunConfig) -> Check {
    let data = &config.data;
    if data.input_kind() != InputKind::Tokens {
        return Ok(());
    }
    let tokens = data.samples.saturating_mul(data.sample_tokens());
    if tokens > limits::HOST_TOKENS {
        return Err(ConfigError::invalid(
            "data.samples",
            format!(
                "{} samples of {} tokens{} are {tokens} tokens to generate; a run holds at most \
                 {} in host memory. Fewer samples, or `vramlab plan`, which needs no data",
                data.samples,
                data.sample_tokens(),
                if data.kind == DataKind::Stream {
                    ""
                } else {
                    " (query half included)"
                },
                limits::HOST_TOKENS
            ),
        ));
    }
    Ok(())
}

/// A run trains on the one device it has: a run over several GPUs is planned, never run.
fn one_gpu(config: &RunConfig) -> Check {
    if config.gpus > 1 {
        return Err(ConfigError::invalid(
            "gpus",
            format!(
                "a run trains on this one device; gpus = {} is planned, not run (`vramlab plan \
                 --gpus {}` gives one GPU's share). Use 1 to train",
                config.gpus, config.gpus
            ),
        ));
    }
    Ok(())
}

/// A run keeps its tensors on its device: offloading to the host is planned, never run (a
/// plan allocates the device's side and counts the host's; no values travel).
fn on_the_device(config: &RunConfig) -> Check {
    if config.strategies.offload != crate::engine::config::Offload::None {
        return Err(ConfigError::invalid(
            "strategies.offload",
            format!(
                "{} is planned, not run (`vramlab plan` gives what the GPU and the host hold). \
                 Use none to train",
                config.strategies.offload.name()
            ),
        ));
    }
    Ok(())
}

/// What a dry run cannot follow without executing.
fn plannable(config: &RunConfig) -> Check {
    if let Some(why) = strategies::memory_pool::cannot_plan(config.strategies.memory_pool) {
        return Err(ConfigError::invalid(
            "strategies.memory_pool",
            format!("{why}; plan with subslices"),
        ));
    }
    if config.strategies.kernels == Kernels::Fused {
        return Err(ConfigError::invalid(
            "strategies.kernels",
            "the fused kernels copy weights and logits to the host, which a dry run cannot \
             follow; plan with burn",
        ));
    }
    if let Some(Budget::Fraction(_)) = config.budget {
        return Err(ConfigError::invalid(
            "budget",
            "a plan runs on no device, so a share of one means nothing; give a size such as \
             24GiB",
        ));
    }
    Ok(())
}

pub(crate) fn int_in(field: &str, value: usize, (lo, hi): (usize, usize)) -> Check {
    if (lo..=hi).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::out_of_range(
            field,
            value,
            format!("{lo}..={hi}"),
        ))
    }
}

/// A size where 0 means "exactly what the data needs", else within `(lo, hi)` and at least
/// `needed`; `why` says where the floor comes from.
fn zero_or_enough(
    field: &str,
    value: usize,
    needed: usize,
    (lo, hi): (usize, usize),
    why: String,
) -> Check {
    if value == 0 {
        return Ok(());
    }
    int_in(field, value, (lo, hi))?;
    if value < needed {
        return Err(ConfigError::out_of_range(
            field,
            value,
            format!("{needed}..={hi} ({why})"),
        ));
    }
    Ok(())
}

pub(crate) fn float_in(field: &str, value: f64, (lo, hi): (f64, f64)) -> Check {
    if value.is_finite() && (lo..=hi).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::out_of_range(
            field,
            value,
            format!("{lo}..={hi}"),
        ))
    }
}

fn data(config: &RunConfig) -> Check {
    let data = &config.data;
    if data.kind == DataKind::Csv {
        table(data)?;
    } else if data.kind != DataKind::Digits {
        int_in("data.samples", data.samples, limits::SAMPLES)?;
    }
    float_in(
        "data.test_fraction",
        data.test_fraction,
        limits::TEST_FRACTION,
    )?;
    if data.kind == DataKind::Csv {
        return Ok(());
    }
    match data.kind.input_kind() {
        InputKind::Points => float_in("data.noise", data.noise, limits::NOISE)?,
        InputKind::Tokens => {
            int_in("data.seq_len", data.seq_len, data.seq_len_limits())?;
            int_in("data.vocab", data.vocab, limits::VOCAB)?;
        }
        InputKind::Images | InputKind::Features => {}
    }
    Ok(())
}

/// A table must have been read (the fronts read `data.path`), labelled as `data.label` says.
fn table(data: &DataConfig) -> Check {
    let Some(table) = &data.table else {
        return Err(ConfigError::invalid(
            "data.path",
            format!(
                "data.kind = csv needs its table, and none was read{}: the command line reads \
                 it from data.path (`--data FILE.csv`); the page reads the file chosen on its \
                 data card, and a link cannot carry it",
                if data.path.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", data.path)
                }
            ),
        ));
    };
    if table.label_spec.trim() != data.label.trim() {
        return Err(ConfigError::invalid(
            "data.label",
            format!(
                "the table was labelled by {:?} (column {}, {}); read it again to label it by \
                 {:?}",
                table.label_spec, table.label_column, table.label, data.label
            ),
        ));
    }
    Ok(())
}

fn model(config: &RunConfig) -> Check {
    let model = &config.model;
    stream_needs_a_decoder(config)?;
    let input = config.data.input_kind();
    if !model.kind.accepts(input) {
        let fits: Vec<&str> = ModelKind::ALL
            .iter()
            .copied()
            .filter(|kind| kind.accepts(input))
            .map(ModelKind::name)
            .collect();
        let shape = match &config.data.table {
            Some(table) if config.data.kind == DataKind::Csv => format!(
                " (a table of {} features{})",
                table.width(),
                if model.kind == ModelKind::Cnn {
                    "; the CNN takes 64, as 8x8 images"
                } else {
                    ""
                }
            ),
            _ => String::new(),
        };
        return Err(ConfigError::invalid(
            "model.kind",
            format!(
                "{} cannot train on data.kind = {}{shape}; models for it: {}",
                model.kind.name(),
                config.data.kind.name(),
                fits.join(", ")
            ),
        ));
    }
    // A llama is always a decoder: the flag says nothing new there.
    if model.decoder && !model.kind.family().attends() {
        return Err(ConfigError::invalid(
            "model.decoder",
            format!(
                "only a transformer (or a llama, always one) can be a decoder (model.kind = \
                 {}); set model.kind = transformer or model.decoder = false",
                model.kind.name()
            ),
        ));
    }
    llama_fields(config)?;
    if config.strategies.attention == OpPath::Fused && !model.kind.family().attends() {
        return Err(ConfigError::invalid(
            "strategies.attention",
            format!(
                "fused means nothing to model.kind = {}, which has no attention: naive (the \
                 default), or a model with attention ({})",
                model.kind.name(),
                ModelKind::names_where(|family| family.attends())
            ),
        ));
    }
    model.kind.family().check(config)
}

/// The fields only a llama-built family reads: set on any other, they would be ignored in
/// silence, so they are refused.
fn llama_fields(config: &RunConfig) -> Check {
    let model = &config.model;
    if model.kind.family().builds_a_llama() {
        return Ok(());
    }
    let set = [
        ("model.head_dim", model.head_dim as f64),
        ("model.window", model.window as f64),
        ("model.global_every", model.global_every as f64),
        ("model.local_rope_theta", model.local_rope_theta),
        ("model.attn_softcap", model.attn_softcap),
        ("model.final_softcap", model.final_softcap),
        ("model.experts", model.experts as f64),
        ("model.experts_per_token", model.experts_per_token as f64),
    ];
    match set.into_iter().find(|(_, value)| *value != 0.0) {
        None => Ok(()),
        Some((field, value)) => Err(ConfigError::invalid(
            field,
            format!(
                "{value} means nothing to model.kind = {}: only the families built as a llama \
                 read it ({}); 0, or leave it out",
                model.kind.name(),
                ModelKind::names_where(|family| family.builds_a_llama())
            ),
        )),
    }
}

/// A stream has no answer to classify, only the next token at every position: a decoder's task.
fn stream_needs_a_decoder(config: &RunConfig) -> Check {
    let model = &config.model;
    if config.data.kind != DataKind::Stream || model.is_decoder() {
        return Ok(());
    }
    let model_is = match model.kind {
        ModelKind::Transformer => "a transformer encoder (model.decoder = false)".to_string(),
        kind => format!("model.kind = {}", kind.name()),
    };
    Err(ConfigError::invalid(
        "data.kind",
        format!(
            "stream is next-token prediction, which only a decoder trains on: model.kind = \
             llama, or transformer with model.decoder = true (got {model_is}); the query tasks \
             copy, reverse and sort train gru, lstm and transformer encoders too"
        ),
    ))
}

/// An attention model's sizes (width, blocks, heads, feed-forward), heads dividing the width.
pub(crate) fn attention_sizes(config: &RunConfig) -> Check {
    let model = &config.model;
    int_in("model.width", model.width, limits::WIDTH)?;
    int_in("model.layers", model.layers, limits::LAYERS)?;
    int_in("model.heads", model.heads, limits::HEADS)?;
    int_in("model.ff", model.ff, limits::FF)?;
    if !model.width.is_multiple_of(model.heads) {
        return Err(ConfigError::invalid(
            "model.heads",
            format!(
                "{} does not divide model.width = {}",
                model.heads, model.width
            ),
        ));
    }
    Ok(())
}

/// Key/value heads shared by equal groups of query heads.
pub(crate) fn kv_groups(config: &RunConfig) -> Check {
    let model = &config.model;
    let kv_heads = model.kv_heads();
    if !(1..=model.heads).contains(&kv_heads) || !model.heads.is_multiple_of(kv_heads) {
        return Err(ConfigError::invalid(
            "model.kv_heads",
            format!(
                "{kv_heads} must divide model.heads = {} (0: one per head)",
                model.heads
            ),
        ));
    }
    Ok(())
}

/// The token and position tables an attention model states: rows for every token of the data
/// and a position for every token of a sample.
pub(crate) fn attention_tables(config: &RunConfig) -> Check {
    let model = &config.model;
    let data = &config.data;
    let stream = data.kind == DataKind::Stream;
    zero_or_enough(
        "model.vocab",
        model.vocab,
        data.token_ids(),
        limits::MODEL_VOCAB,
        format!(
            "the data's {} tokens{} must have rows; 0: exactly those",
            data.vocab,
            if stream { "" } else { " and its query token" }
        ),
    )?;
    let length = data.sample_tokens();
    zero_or_enough(
        "model.positions",
        model.positions,
        length,
        limits::POSITIONS,
        if stream {
            format!("each sample is data.seq_len = {length} tokens; 0: exactly that")
        } else {
            format!(
                "each sample is {length} tokens: data.seq_len = {} and as many answers; 0: \
                 exactly that",
                data.seq_len
            )
        },
    )?;
    Ok(())
}

pub(crate) fn widths(field: &str, values: &[usize], range: (usize, usize)) -> Check {
    for (i, &w) in values.iter().enumerate() {
        int_in(&format!("{field}[{i}]"), w, range)?;
    }
    Ok(())
}

fn training(config: &RunConfig, purpose: Purpose) -> Check {
    float_in("learning_rate", config.learning_rate, limits::LEARNING_RATE)?;
    int_in("batch_size", config.batch_size, limits::BATCH_SIZE)?;
    let train_len = super::data::split_sizes(&config.data).0;
    if purpose == Purpose::Run && config.batch_size > train_len {
        return Err(ConfigError::out_of_range(
            "batch_size",
            config.batch_size,
            format!("1..={train_len} (the size of the training split)"),
        ));
    }
    int_in(
        "eval_batch_size",
        config.eval_batch_size,
        limits::BATCH_SIZE,
    )?;
    int_in("steps", config.steps, limits::STEPS)?;
    int_in("gpus", config.gpus, limits::GPUS)?;
    let k = config.strategies.grad_accumulation;
    if !(1..=config.batch_size).contains(&k) {
        return Err(ConfigError::out_of_range(
            "strategies.grad_accumulation",
            k,
            format!("1..={} (the batch size)", config.batch_size),
        ));
    }
    int_in("eval_batches", config.eval_batches, (0, limits::STEPS.1))?;
    int_in("eval_every", config.eval_every, (0, limits::STEPS.1))
}
