//! The parsers under test, one entry each: a name, what its input looks like (which picks the
//! structure-aware mutations), valid inputs to mutate from, and the parse itself. A parse
//! returns whether it accepted its input; it must never panic, and where a round trip is
//! cheap it asserts one (a failed assertion counts as a panic).

use vramlab::engine::config::Budget;
use vramlab::engine::data::table_inputs::{self, Outcome};
use vramlab::engine::hf_config;
use vramlab::engine::link::{hash, verdicts};
use vramlab::engine::overrides::apply_override;
use vramlab::engine::presets::{for_plans, playground, preset};
use vramlab::engine::recipe;
use vramlab::engine::strategies::catalog;
use vramlab::engine::{Purpose, RunConfig, Timeline};

use super::generate::Shape;

pub struct Target {
    pub name: &'static str,
    /// What reads this input, for the report.
    pub reads: &'static str,
    pub shape: Shape,
    pub seeds: fn() -> Vec<Vec<u8>>,
    pub parse: fn(&[u8]) -> bool,
}

pub const TARGETS: &[Target] = &[
    Target {
        name: "config-json",
        reads: "RunConfig::from_json, then validation (--config, presets)",
        shape: Shape::Json,
        seeds: config_seeds,
        parse: config_json,
    },
    Target {
        name: "set",
        reads: "engine::overrides::apply_override, then validation (--set path=value)",
        shape: Shape::Assignment,
        seeds: assignment_seeds,
        parse: set,
    },
    Target {
        name: "budget",
        reads: "Budget::parse (--budget, budget=)",
        shape: Shape::Size,
        seeds: budget_seeds,
        parse: budget,
    },
    Target {
        name: "url-hash",
        reads: "engine::link::hash::parse (the page's URL)",
        shape: Shape::Hash,
        seeds: hash_seeds,
        parse: url_hash,
    },
    Target {
        name: "lessons-link",
        reads: "engine::link::verdicts::shared_verdicts (#lessons=)",
        shape: Shape::Letters("hpdnm-"),
        seeds: letter_seeds,
        parse: lessons_link,
    },
    Target {
        name: "import-json",
        reads: "Timeline::from_json, then its CSV (the page's Import JSON)",
        shape: Shape::Json,
        seeds: timeline_seeds,
        parse: import_json,
    },
    Target {
        name: "csv",
        reads: "engine::table: parse, label, split, standardise (--data, the page's data card)",
        shape: Shape::Lines,
        seeds: table_seeds,
        parse: csv,
    },
    Target {
        name: "hf-config",
        reads: "engine::hf_config::read, apply to its family's preset, notes, plan validation",
        shape: Shape::Json,
        seeds: hf_seeds,
        parse: hf_config_json,
    },
    Target {
        name: "recipe",
        reads: "engine::recipe: YAML read, format told, mapped; its --sets over llama2-7b",
        shape: Shape::Lines,
        seeds: recipe_seeds,
        parse: recipe_yaml,
    },
];

fn text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

fn config_json(bytes: &[u8]) -> bool {
    let Ok(config) = RunConfig::from_json(&text(bytes)) else {
        return false;
    };
    let plan = config.validate_for(Purpose::Plan);
    config.validate().is_ok() && plan.is_ok()
}

fn set(bytes: &[u8]) -> bool {
    apply_override(&RunConfig::default(), &text(bytes)).is_ok_and(|c| c.validate().is_ok())
}

fn budget(bytes: &[u8]) -> bool {
    let Ok(budget) = Budget::parse(&text(bytes)) else {
        return false;
    };
    let _ = budget.bytes(1 << 30);
    let written = budget.to_string();
    assert_eq!(Budget::parse(&written), Ok(budget), "{written}");
    let json = serde_json::to_string(&budget).expect("a budget serializes");
    let back = serde_json::from_str::<Budget>(&json).expect("a written budget reads back");
    assert!(same_budget(back, budget), "{json}: {back:?}");
    true
}

/// Equal, but for a fraction's last bit: serde_json (without its `float_roundtrip` feature,
/// which would rebuild burn) may read a 17-digit number one unit in the last place off.
fn same_budget(a: Budget, b: Budget) -> bool {
    match (a, b) {
        (Budget::Fraction(a), Budget::Fraction(b)) => a.to_bits().abs_diff(b.to_bits()) <= 1,
        _ => a == b,
    }
}

fn url_hash(bytes: &[u8]) -> bool {
    let from = hash::parse(&text(bytes));
    assert!(from.config.validate().is_ok(), "the URL's config validates");
    let again = hash::parse(&hash::render(&from.preset, &from.config));
    assert_eq!(
        again.config, from.config,
        "a rendered hash reads back the same"
    );
    from.refused.is_empty()
}

fn lessons_link(bytes: &[u8]) -> bool {
    let letters = text(bytes);
    let Ok(verdicts) = verdicts::shared_verdicts(&letters) else {
        return false;
    };
    let back: String = verdicts.into_iter().map(verdicts::letter).collect();
    assert_eq!(back, letters, "the letters read back the same");
    true
}

fn import_json(bytes: &[u8]) -> bool {
    let Ok(timeline) = Timeline::from_json(&text(bytes)) else {
        return false;
    };
    let _ = timeline.to_csv();
    true
}

fn csv(bytes: &[u8]) -> bool {
    matches!(table_inputs::check(bytes), Outcome::Accepted { .. })
}

/// A config.json the whole way `--hf-config` takes it: read, applied to its family's preset
/// (which must then validate for a plan, or be refused by the notes), its notes written.
fn hf_config_json(bytes: &[u8]) -> bool {
    let Ok(model) = hf_config::read(&text(bytes)) else {
        return false;
    };
    let Ok(base) = preset(model.family.base_preset()) else {
        return false;
    };
    let (config, _) = model.apply(base, "fuzzed", hf_config::Stated::default());
    model.notes_for(&config).is_ok() && config.validate_for(Purpose::Plan).is_ok()
}

/// A recipe the whole way `--recipe` takes it: read, its format told, mapped; every refusal
/// names its field and says why, and its `--set`s apply to a model's base run.
fn recipe_yaml(bytes: &[u8]) -> bool {
    let Ok(read) = recipe::Recipe::parse(&text(bytes)) else {
        return false;
    };
    let Ok(reading) = recipe::read(&read, &[]) else {
        return false;
    };
    for line in reading.refused() {
        assert!(
            !line.field.is_empty() && !line.text.is_empty(),
            "a refusal without its field or reason: {line:?}"
        );
    }
    let Ok(base) = preset("llama2-7b") else {
        return false;
    };
    reading
        .sets
        .iter()
        .try_fold(base, |config, set| apply_override(&config, set))
        .is_ok()
}

fn recipe_seeds() -> Vec<Vec<u8>> {
    [
        include_str!("../../../../tests/data/recipes/axolotl/qlora.yml"),
        include_str!("../../../../tests/data/recipes/axolotl/qlora-fsdp-70b.yaml"),
        include_str!("../../../../tests/data/recipes/torchtune/8B_lora_single_device.yaml"),
        include_str!("../../../../tests/data/recipes/torchtune/8B_full.yaml"),
        include_str!("../../../../tests/data/recipes/llama-factory/qwen3_lora_sft_otfq.yaml"),
        include_str!("../../../../tests/data/recipes/llama-factory/qwen3_full_sft.yaml"),
        include_str!("../../../../tests/data/recipes/trl/example_config.yaml"),
    ]
    .map(|s| s.as_bytes().to_vec())
    .to_vec()
}

fn table_seeds() -> Vec<Vec<u8>> {
    vec![
        include_bytes!("../../../../tests/data/iris.csv").to_vec(),
        include_bytes!("../../../../tests/data/wine.csv").to_vec(),
        b"x,y,label\r\n0.5,-1,a\r\n\"1,5\",2,b\r\n".to_vec(),
    ]
}

fn hf_seeds() -> Vec<Vec<u8>> {
    [
        include_str!("../../../../tests/data/hf/gpt2.json"),
        include_str!("../../../../tests/data/hf/llama-2-7b.json"),
        include_str!("../../../../tests/data/hf/mistral-7b-v0.1.json"),
        include_str!("../../../../tests/data/hf/qwen2-0.5b.json"),
        include_str!("../../../../tests/data/hf/tinyllama-1.1b-chat-v1.0.json"),
        include_str!("../../../../tests/data/hf/qwen3-0.6b.json"),
        include_str!("../../../../tests/data/hf/gemma-2-2b.json"),
        include_str!("../../../../tests/data/hf/gemma-3-1b.json"),
        include_str!("../../../../tests/data/hf/phi-3-mini-4k.json"),
        include_str!("../../../../tests/data/hf/mixtral-8x7b-v0.1.json"),
        include_str!("../../../../tests/data/hf/qwen3-30b-a3b.json"),
    ]
    .map(|s| s.as_bytes().to_vec())
    .to_vec()
}

fn config_seeds() -> Vec<Vec<u8>> {
    let mut seeds: Vec<Vec<u8>> = playground()
        .chain(for_plans())
        .filter_map(|p| preset(p.name).ok())
        .map(|c| c.to_json_pretty().into_bytes())
        .collect();
    seeds.push(b"{}".to_vec());
    seeds.push(br#"{"batch_size": 64, "model": {"hidden": [8]}, "budget": "64MiB"}"#.to_vec());
    seeds
}

fn assignment_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for p in playground() {
        if let Ok(config) = preset(p.name) {
            // Every leaf field as `path=value`, as the CLI takes it.
            let json = serde_json::to_value(config).unwrap_or_default();
            seeds.extend(
                hash::leaves(&json).iter().map(|(path, value)| {
                    format!("{path}={}", hash::value_text(value)).into_bytes()
                }),
            );
        }
    }
    seeds.push(b"budget=64MiB".to_vec());
    seeds
}

fn budget_seeds() -> Vec<Vec<u8>> {
    [
        "512MiB", "6GiB", "1536KiB", "1048576", "0.8", "1", "1.5MiB", "100mb",
    ]
    .map(|s| s.as_bytes().to_vec())
    .to_vec()
}

fn hash_seeds() -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for p in playground() {
        let Ok(mut config) = preset(p.name) else {
            continue;
        };
        seeds.push(hash::render(p.name, &config).into_bytes());
        config.batch_size = 100;
        config.strategies.grad_accumulation = 2;
        config.learning_rate = 0.003;
        config.name = "a run & a name".into();
        seeds.push(hash::render(p.name, &config).into_bytes());
    }
    let letters: String = std::iter::repeat_n('h', catalog::claims().count()).collect();
    seeds.push(format!("#preset=spiral-mlp&lessons={letters}").into_bytes());
    seeds
}

fn letter_seeds() -> Vec<Vec<u8>> {
    let count = catalog::claims().count();
    ["hpdnm-", "-", "h"]
        .iter()
        .map(|alphabet| {
            alphabet
                .chars()
                .cycle()
                .take(count)
                .collect::<String>()
                .into_bytes()
        })
        .collect()
}

fn timeline_seeds() -> Vec<Vec<u8>> {
    vec![
        include_str!("seeds/timeline-spiral.json")
            .as_bytes()
            .to_vec(),
        include_str!("seeds/timeline-digits-budget.json")
            .as_bytes()
            .to_vec(),
    ]
}
