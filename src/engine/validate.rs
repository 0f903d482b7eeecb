//! Range checks for [`RunConfig`]: one function per section, each naming the field it refuses.

use super::config::{
    Activation, Checkpointing, DataKind, DataResidency, EvalMode, InputKind, Kernels,
    LossBookkeeping, MixedPrecision, ModelKind, RunConfig, WeightDtype, limits,
};
use super::error::ConfigError;

type Check = Result<(), ConfigError>;

pub(crate) fn validate(config: &RunConfig) -> Check {
    data(config)?;
    model(config)?;
    training(config)?;
    Ok(())
}

fn int_in(field: &str, value: usize, (lo, hi): (usize, usize)) -> Check {
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

fn float_in(field: &str, value: f64, (lo, hi): (f64, f64)) -> Check {
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
    if data.kind != DataKind::Digits {
        int_in("data.samples", data.samples, limits::SAMPLES)?;
    }
    float_in(
        "data.test_fraction",
        data.test_fraction,
        limits::TEST_FRACTION,
    )?;
    match data.kind.input_kind() {
        InputKind::Points => float_in("data.noise", data.noise, limits::NOISE)?,
        InputKind::Tokens => {
            int_in("data.seq_len", data.seq_len, limits::SEQ_LEN)?;
            int_in("data.vocab", data.vocab, limits::VOCAB)?;
        }
        InputKind::Images => {}
    }
    Ok(())
}

fn model(config: &RunConfig) -> Check {
    let model = &config.model;
    let input = config.data.kind.input_kind();
    if !model.kind.accepts(input) {
        let fits: Vec<&str> = [
            ModelKind::Mlp,
            ModelKind::Cnn,
            ModelKind::Gru,
            ModelKind::Lstm,
            ModelKind::Transformer,
        ]
        .into_iter()
        .filter(|kind| kind.accepts(input))
        .map(ModelKind::name)
        .collect();
        return Err(ConfigError::invalid(
            "model.kind",
            format!(
                "{} cannot train on data.kind = {}; models for it: {}",
                model.kind.name(),
                config.data.kind.name(),
                fits.join(", ")
            ),
        ));
    }
    match model.kind {
        ModelKind::Mlp => {
            int_in("model.hidden", model.hidden.len(), limits::HIDDEN_LAYERS).map_err(|_| {
                ConfigError::out_of_range(
                    "model.hidden",
                    format!("{} layers", model.hidden.len()),
                    "0..=16 layers",
                )
            })?;
            widths("model.hidden", &model.hidden, limits::WIDTH)?;
        }
        ModelKind::Cnn => {
            if model.channels.len() != 2 {
                return Err(ConfigError::invalid(
                    "model.channels",
                    format!(
                        "needs exactly 2 entries (one per convolution), got {}",
                        model.channels.len()
                    ),
                ));
            }
            widths("model.channels", &model.channels, limits::CHANNELS)?;
            if model.hidden.is_empty() {
                return Err(ConfigError::invalid(
                    "model.hidden",
                    "the CNN needs one entry: the width of its dense layer",
                ));
            }
            widths("model.hidden", &model.hidden[..1], limits::WIDTH)?;
        }
        ModelKind::Gru | ModelKind::Lstm => int_in("model.width", model.width, limits::WIDTH)?,
        ModelKind::Transformer => {
            int_in("model.width", model.width, limits::WIDTH)?;
            int_in("model.layers", model.layers, limits::LAYERS)?;
            int_in("model.heads", model.heads, limits::HEADS)?;
            int_in("model.ff", model.ff, limits::WIDTH)?;
            if model.width % model.heads != 0 {
                return Err(ConfigError::invalid(
                    "model.heads",
                    format!(
                        "{} does not divide model.width = {}",
                        model.heads, model.width
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn widths(field: &str, values: &[usize], range: (usize, usize)) -> Check {
    for (i, &w) in values.iter().enumerate() {
        int_in(&format!("{field}[{i}]"), w, range)?;
    }
    Ok(())
}

fn training(config: &RunConfig) -> Check {
    float_in("learning_rate", config.learning_rate, limits::LEARNING_RATE)?;
    int_in("batch_size", config.batch_size, limits::BATCH_SIZE)?;
    let train_len = super::data::split_sizes(&config.data).0;
    if config.batch_size > train_len {
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
    let k = config.strategies.grad_accumulation;
    if !(1..=config.batch_size).contains(&k) {
        return Err(ConfigError::out_of_range(
            "strategies.grad_accumulation",
            k,
            format!("1..={} (the batch size)", config.batch_size),
        ));
    }
    int_in("eval_every", config.eval_every, (0, limits::STEPS.1))?;
    strategies(config)
}

fn strategies(config: &RunConfig) -> Check {
    if config.strategies.kernels == Kernels::Fused {
        fused_kernels(config)?;
    }
    let precision = config.strategies.mixed_precision;
    let weights = config.strategies.weight_dtype;
    let kind = config.model.kind;
    if weights == WeightDtype::F16 && precision == MixedPrecision::F16 {
        return Err(ConfigError::invalid(
            "strategies.weight_dtype",
            "f16 stores the weights themselves in f16, while mixed_precision f16 keeps f32 \
             master weights: use one (weight_dtype f16 with mixed_precision off or f16_unscaled)",
        ));
    }
    if weights == WeightDtype::F16 && matches!(kind, ModelKind::Gru | ModelKind::Lstm) {
        return Err(ConfigError::invalid(
            "strategies.weight_dtype",
            format!(
                "f16 is not available for model.kind = {} (burn's recurrent cells keep f32 \
                 state); models for it: mlp, cnn, transformer; or use f32",
                kind.name()
            ),
        ));
    }
    if weights == WeightDtype::Int8 && config.strategies.eval_mode == EvalMode::Autodiff {
        return Err(ConfigError::invalid(
            "strategies.weight_dtype",
            "int8 weights are an evaluation copy without autodiff; use eval_mode no_grad with it",
        ));
    }
    if weights == WeightDtype::Int8 && !matches!(kind, ModelKind::Mlp | ModelKind::Cnn) {
        // Quantized weights go through burn's quantized matmul (dense layers) or are
        // dequantized by its convolution; the sequence models' weights meet ops that refuse them.
        return Err(ConfigError::invalid(
            "strategies.weight_dtype",
            format!(
                "int8 is not available for model.kind = {}; models for it: mlp, cnn; or use f32 \
                 or f16",
                kind.name()
            ),
        ));
    }
    if precision != MixedPrecision::Off && matches!(kind, ModelKind::Gru | ModelKind::Lstm) {
        // burn's GRU and LSTM build their hidden-state buffers in the default float type (f32)
        // inside their forward pass, which cannot mix with f16 activations.
        return Err(ConfigError::invalid(
            "strategies.mixed_precision",
            format!(
                "{} is not available for model.kind = {} (burn's recurrent cells keep f32 state); \
                 models for it: mlp, cnn, transformer; or use off",
                precision.name(),
                kind.name()
            ),
        ));
    }
    Ok(())
}

/// The fused kernels implement one thing, a ReLU MLP's f32 step on float inputs with the plain
/// strategies; every other choice is named with what it needs.
fn fused_kernels(config: &RunConfig) -> Check {
    let needs = |field: &str, what: &str| {
        Err(ConfigError::invalid(
            field,
            format!("strategies.kernels = fused needs {what}, or use kernels = burn"),
        ))
    };
    let s = &config.strategies;
    if config.model.kind != ModelKind::Mlp {
        return needs(
            "strategies.kernels",
            &format!("model.kind = mlp (got {})", config.model.kind.name()),
        );
    }
    if config.model.activation != Activation::Relu {
        return needs("model.activation", "activation = relu");
    }
    if config.data.kind.input_kind() == InputKind::Tokens {
        return needs("data.kind", "a data set of points or images");
    }
    if s.grad_accumulation != 1 {
        return needs("strategies.grad_accumulation", "grad_accumulation = 1");
    }
    if s.mixed_precision != MixedPrecision::Off {
        return needs(
            "strategies.mixed_precision",
            "mixed_precision = off (f32 kernels)",
        );
    }
    if s.weight_dtype != WeightDtype::F32 {
        return needs("strategies.weight_dtype", "weight_dtype = f32");
    }
    if s.checkpointing != Checkpointing::None {
        return needs(
            "strategies.checkpointing",
            "checkpointing = none (no graph to checkpoint)",
        );
    }
    if s.loss_bookkeeping != LossBookkeeping::Scalar {
        return needs(
            "strategies.loss_bookkeeping",
            "loss_bookkeeping = scalar (no graph to keep)",
        );
    }
    if s.eval_mode != EvalMode::NoGrad {
        return needs(
            "strategies.eval_mode",
            "eval_mode = no_grad (no graph to record)",
        );
    }
    if !s.inplace_activation {
        return needs(
            "strategies.inplace_activation",
            "inplace_activation = true (ReLU is fused)",
        );
    }
    if s.data_residency != DataResidency::Host {
        return needs("strategies.data_residency", "data_residency = host");
    }
    Ok(())
}
