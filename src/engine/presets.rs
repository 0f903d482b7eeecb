//! Named experiment presets, embedded in the binary as JSON files (presets/*.json).

mod table;

pub use table::{fit_batch, table_base, use_table};

use super::config::{ModelKind, RunConfig};
use super::error::ConfigError;

pub struct Preset {
    pub name: &'static str,
    /// What the preset is for, in a few words.
    pub purpose: &'static str,
    json: &'static str,
}

impl Preset {
    /// A preset whose config is `json` (a family's own, in `engine::families`).
    pub const fn new(name: &'static str, purpose: &'static str, json: &'static str) -> Self {
        Self {
            name,
            purpose,
            json,
        }
    }
}

/// The preset `vramlab` trains when given no arguments.
pub const DEFAULT_PRESET: &str = "spiral-mlp";

pub const PRESETS: &[Preset] = &[
    Preset {
        name: "spiral-mlp",
        purpose: "the default: two spirals, an MLP wide enough that activations are MiB",
        json: include_str!("presets/spiral-mlp.json"),
    },
    Preset {
        name: "circle-tiny",
        purpose: "TensorFlow Playground's classic: a tiny tanh MLP, memory all overhead",
        json: include_str!("presets/circle-tiny.json"),
    },
    Preset {
        name: "digits-cnn",
        purpose: "8x8 handwritten digits with a small CNN",
        json: include_str!("presets/digits-cnn.json"),
    },
    Preset {
        name: "digits-mlp",
        purpose: "the same digits with an MLP, to compare parameter and activation bytes",
        json: include_str!("presets/digits-mlp.json"),
    },
    Preset {
        name: "sort-gru",
        purpose: "sort 8 tokens with a GRU: activations grow with sequence length",
        json: include_str!("presets/sort-gru.json"),
    },
    Preset {
        name: "sort-lstm",
        purpose: "the same task with an LSTM: a fourth gate's worth more memory",
        json: include_str!("presets/sort-lstm.json"),
    },
    Preset {
        name: "sort-transformer",
        purpose: "the same task with a tiny transformer encoder: attention scores grow as L^2",
        json: include_str!("presets/sort-transformer.json"),
    },
    Preset {
        name: "sort-gpt",
        purpose: "the same task as a tiny GPT-2-style decoder: causal attention, next-token loss",
        json: include_str!("presets/sort-gpt.json"),
    },
    Preset {
        name: "sort-llama",
        purpose: "the same task as a tiny Llama-style decoder: RMSNorm, SwiGLU, rotary \
                  positions, two query heads per key/value head",
        json: include_str!("presets/sort-llama.json"),
    },
];

/// Models of the sizes people train, for `vramlab plan`: far bigger than a playground (and than
/// this machine's GPU). They are valid runs too, on a GPU that holds them.
pub const PLAN_PRESETS: &[Preset] = &[
    Preset {
        name: "gpt2-small",
        purpose: "GPT-2 small as it is: a 12-layer decoder, width 768, 1024 positions, 50257 \
                  tokens, tied embeddings (124,439,808 parameters)",
        json: include_str!("presets/gpt2-small.json"),
    },
    Preset {
        name: "tinyllama-1.1b",
        purpose: "TinyLlama-1.1B's shape: 22 blocks, width 2048, 32 heads sharing 4 key/value \
                  heads, 32000 tokens, 2048 positions (1,100,048,384 parameters)",
        json: include_str!("presets/tinyllama-1.1b.json"),
    },
    Preset {
        name: "llama2-7b",
        purpose: "Llama-2-7B's shape: 32 blocks, width 4096, 32 heads, SwiGLU 11008, 32000 \
                  tokens, untied output (6,738,415,616 parameters)",
        json: include_str!("presets/llama2-7b.json"),
    },
    Preset {
        name: "wide-cnn",
        purpose: "the digits CNN at 256 and 512 channels and a 2048-wide dense layer",
        json: include_str!("presets/wide-cnn.json"),
    },
    Preset {
        name: "big-mlp",
        purpose: "sixteen 4096-wide layers: 0.25 billion parameters, 1 GB of f32 weights",
        json: include_str!("presets/big-mlp.json"),
    },
];

/// Every playground preset: those listed in [`PRESETS`], then each family's own
/// (`Family::presets`), in the registry's order.
pub fn playground() -> impl Iterator<Item = &'static Preset> {
    PRESETS.iter().chain(
        ModelKind::ALL
            .iter()
            .flat_map(|kind| kind.family().presets().0),
    )
}

/// Every preset sized for `vramlab plan`: [`PLAN_PRESETS`], then each family's own.
pub fn for_plans() -> impl Iterator<Item = &'static Preset> {
    PLAN_PRESETS.iter().chain(
        ModelKind::ALL
            .iter()
            .flat_map(|kind| kind.family().presets().1),
    )
}

/// The preset's config, parsed (presets are tested to parse and validate).
pub fn preset(name: &str) -> Result<RunConfig, ConfigError> {
    let found = playground()
        .chain(for_plans())
        .find(|p| p.name == name)
        .ok_or_else(|| ConfigError::UnknownPreset {
            name: name.to_string(),
            known: playground()
                .chain(for_plans())
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    RunConfig::from_json(found.json)
}

/// One line per preset for `vramlab presets`.
pub fn describe(preset: &Preset) -> String {
    match RunConfig::from_json(preset.json) {
        Ok(c) => {
            let model = c.model.kind.family().short(&c);
            format!(
                "{:<17} {:<8} {:<24} batch {:<5} {:>4} steps  {}",
                preset.name,
                c.data.kind.name(),
                model,
                c.batch_size,
                c.steps,
                preset.purpose
            )
        }
        Err(err) => format!("{:<17} (does not parse: {err})", preset.name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses_validates_and_is_named_as_listed() {
        for p in PRESETS.iter().chain(PLAN_PRESETS) {
            let config = preset(p.name).unwrap();
            assert_eq!(config.name, p.name);
            config
                .validate()
                .and_then(|()| config.validate_for(crate::engine::Purpose::Plan))
                .unwrap_or_else(|err| panic!("{}: {err}", p.name));
        }
        assert!(preset(DEFAULT_PRESET).is_ok());
    }

    #[test]
    fn unknown_preset_lists_the_known_ones() {
        let err = preset("nope").unwrap_err().to_string();
        assert!(err.contains("spiral-mlp"), "{err}");
    }
}
