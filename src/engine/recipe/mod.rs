//! Training recipes people hold (Axolotl, TRL, torchtune and LLaMA-Factory YAML, with a
//! DeepSpeed JSON or an accelerate config beside them) read into vramlab's config: each field
//! that decides memory mapped as its project defines it, the rest ignored or refused by name
//! (`reading`). The format is told from the file's own fields.

mod axolotl;
pub mod configure;
pub mod document;
pub mod intent;
mod launch;
mod llama_factory;
mod names;
pub mod reading;
mod shared;
mod torchtune;
mod trl;
pub mod write;
pub mod write_back;

use serde::Serialize;
use thiserror::Error;

pub use document::{Document, Value};
pub use intent::{Intent, ModelRef};
pub use reading::{Kind, Line};

use reading::Mapper;

/// A recipe that cannot be read at all.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum RecipeError {
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{0}")]
    Format(String),
}

impl RecipeError {
    pub fn syntax(line: usize, column: usize, message: impl Into<String>) -> Self {
        Self::Syntax {
            line,
            column,
            message: message.into(),
        }
    }
}

/// Whose recipe a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    Axolotl,
    Trl,
    Torchtune,
    LlamaFactory,
    /// A DeepSpeed JSON: only beside a recipe.
    DeepSpeed,
    /// An accelerate config: only beside a recipe.
    Accelerate,
}

impl Format {
    pub fn name(self) -> &'static str {
        match self {
            Self::Axolotl => "Axolotl",
            Self::Trl => "TRL (SFTConfig / TrainingArguments)",
            Self::Torchtune => "torchtune",
            Self::LlamaFactory => "LLaMA-Factory",
            Self::DeepSpeed => "a DeepSpeed config",
            Self::Accelerate => "an accelerate config",
        }
    }

    /// What the file's own fields say it is: torchtune names a `model._component_`;
    /// LLaMA-Factory a `finetuning_type`, `cutoff_len` or `template`; Axolotl a `base_model`,
    /// `micro_batch_size` or `sequence_len`; TRL a `model_name_or_path` with transformers'
    /// names; DeepSpeed a `zero_optimization`; accelerate a `distributed_type`.
    fn of(doc: &Document) -> Option<Self> {
        let has = |path: &str| doc.get(path).is_some();
        let any = |paths: &[&str]| paths.iter().any(|p| has(p));
        if has("model._component_") {
            Some(Self::Torchtune)
        } else if any(&[
            "finetuning_type",
            "cutoff_len",
            "template",
            "quantization_bit",
        ]) {
            Some(Self::LlamaFactory)
        } else if any(&["base_model", "micro_batch_size", "sequence_len", "adapter"]) {
            Some(Self::Axolotl)
        } else if any(&[
            "model_name_or_path",
            "per_device_train_batch_size",
            "use_peft",
            "max_length",
        ]) {
            Some(Self::Trl)
        } else if doc.fields.iter().any(|f| {
            f.path.starts_with("zero_optimization") || f.path == "train_micro_batch_size_per_gpu"
        }) {
            Some(Self::DeepSpeed)
        } else if any(&["distributed_type", "compute_environment", "num_processes"]) {
            Some(Self::Accelerate)
        } else {
            None
        }
    }
}

/// A recipe file, read and its format told.
#[derive(Clone, Debug)]
pub struct Recipe {
    pub format: Format,
    pub document: Document,
    pub text: String,
}

impl Recipe {
    pub fn parse(text: &str) -> Result<Self, RecipeError> {
        let document = Document::parse(text)?;
        let format = Format::of(&document).ok_or_else(|| {
            RecipeError::Format(
                "not a recipe vramlab reads: no field says whose it is (torchtune's \
                 model._component_, LLaMA-Factory's finetuning_type or cutoff_len, Axolotl's \
                 base_model or micro_batch_size, TRL's model_name_or_path or \
                 per_device_train_batch_size, DeepSpeed's zero_optimization, accelerate's \
                 distributed_type)"
                    .into(),
            )
        })?;
        Ok(Self {
            format,
            document,
            text: text.to_string(),
        })
    }

    /// The DeepSpeed or accelerate file the recipe names (field and path), to be read beside it.
    pub fn names_file(&self) -> Option<(&str, &str)> {
        ["deepspeed", "accelerate_config"].iter().find_map(|key| {
            let field = self.document.get(key)?;
            Some((field.path.as_str(), field.value.as_text()?))
        })
    }
}

/// How a recipe was read: its format, the model it names, the `--set`s that make vramlab's
/// config what it asks for, and a line for each field.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reading {
    pub format: Format,
    pub model: Option<ModelRef>,
    pub sets: Vec<String>,
    /// Whether the recipe shards (FSDP, ZeRO): its GPU count must come from it or `--gpus`.
    pub shards: bool,
    pub gpus: Option<usize>,
    pub lines: Vec<Line>,
    /// What the recipe asked for, as read (what `--write-recipe` changes).
    #[serde(skip)]
    pub intent: Intent,
}

impl Reading {
    pub fn refused(&self) -> impl Iterator<Item = &Line> {
        self.lines.iter().filter(|l| l.kind == Kind::Refused)
    }

    /// Each refused field with its line, as an error names it: `lora_dropout (line 27)`.
    pub fn refused_fields(&self) -> Vec<String> {
        self.refused()
            .map(|l| match l.line {
                Some(n) => format!("{} (line {n})", l.field),
                None => l.field.clone(),
            })
            .collect()
    }

    /// The reading as one block of text: mapped fields, defaults, refusals and unread fields
    /// one a line, the ignored ones listed together, then the same config as flags.
    pub fn render(&self, label: &str) -> String {
        let mut out = format!("recipe {label}, read as {}:\n", self.format.name());
        let at = |line: &Line| {
            let file = line
                .file
                .as_ref()
                .map(|f| format!("{f} "))
                .unwrap_or_default();
            match line.line {
                Some(n) => format!("{file}line {n:>3}"),
                None => format!("{file}(default)"),
            }
        };
        for (kind, heading) in [
            (Kind::Mapped, "mapped"),
            (
                Kind::Default,
                "not in the recipe: its project's default, planned",
            ),
            (
                Kind::Refused,
                "REFUSED: changes memory in a way vramlab does not model",
            ),
            (Kind::Unread, "unread: not a field vramlab reads here"),
        ] {
            let mut lines: Vec<&Line> = self.lines.iter().filter(|l| l.kind == kind).collect();
            lines.sort_by_key(|l| (l.file.clone(), l.line));
            if lines.is_empty() {
                continue;
            }
            out.push_str(&format!("  {heading}\n"));
            for line in lines {
                let text = if kind == Kind::Unread {
                    String::new()
                } else {
                    format!(": {}", line.text)
                };
                out.push_str(&format!(
                    "    {}  {} = {}{text}\n",
                    at(line),
                    line.field,
                    line.value
                ));
            }
        }
        // Ignored fields listed by their top-level key, with the lines they span.
        let mut ignored: Vec<(String, usize, usize)> = Vec::new();
        for line in self.lines.iter().filter(|l| l.kind == Kind::Ignored) {
            let key = line
                .field
                .split('.')
                .next()
                .unwrap_or(&line.field)
                .to_string();
            let n = line.line.unwrap_or(0);
            match ignored.iter_mut().find(|(k, _, _)| *k == key) {
                Some((_, lo, hi)) => {
                    *lo = (*lo).min(n);
                    *hi = (*hi).max(n);
                }
                None => ignored.push((key, n, n)),
            }
        }
        ignored.sort_by_key(|(_, lo, _)| *lo);
        let ignored: Vec<String> = ignored
            .into_iter()
            .map(|(key, lo, hi)| match (lo, hi) {
                (0, _) => key,
                (lo, hi) if lo == hi => format!("{key} ({lo})"),
                (lo, hi) => format!("{key} ({lo}-{hi})"),
            })
            .collect();
        if !ignored.is_empty() {
            out.push_str(&format!(
                "  ignored, as not changing what a GPU holds (line): {}\n",
                ignored.join(", ")
            ));
        }
        out
    }

    /// The same config as `vramlab plan` flags (the model, then each --set).
    pub fn as_flags(&self) -> String {
        let mut flags = Vec::new();
        match &self.model {
            Some(ModelRef::Hub(id)) => flags.push(format!("--hf-config {id}")),
            Some(ModelRef::Builder { component, .. }) => {
                flags.push(format!("--hf-config <{component}'s config.json>"))
            }
            None => {}
        }
        flags.extend(self.sets.iter().map(|s| format!("--set {s}")));
        if let Some(gpus) = self.gpus {
            flags.push(format!("--gpus {gpus}"));
        }
        flags.join(" ")
    }
}

/// Read `recipe`, with the files beside it (`(label, file)`: the DeepSpeed JSON it names, an
/// accelerate config passed with it).
pub fn read(recipe: &Recipe, beside: &[(String, Recipe)]) -> Result<Reading, RecipeError> {
    let mut m = Mapper::new(&recipe.document);
    match recipe.format {
        Format::Axolotl => axolotl::read(&mut m),
        Format::Trl => trl::read(&mut m),
        Format::Torchtune => torchtune::read(&mut m, &recipe.text),
        Format::LlamaFactory => llama_factory::read(&mut m),
        Format::DeepSpeed | Format::Accelerate => {
            return Err(RecipeError::Format(format!(
                "this is {}, which goes beside a recipe (--launcher FILE), not in its place",
                recipe.format.name()
            )));
        }
    }
    for (label, file) in beside {
        m = m.beside(&file.document, label);
        match file.format {
            Format::DeepSpeed => launch::deepspeed(&mut m),
            Format::Accelerate => launch::accelerate(&mut m),
            other => {
                return Err(RecipeError::Format(format!(
                    "{label}: {} is a recipe, not a DeepSpeed or accelerate config",
                    other.name()
                )));
            }
        }
    }
    // An accelerate config that names its DeepSpeed file needs that file read too.
    let deepspeed_beside = beside.iter().any(|(_, f)| f.format == Format::DeepSpeed);
    if !deepspeed_beside
        && let Some(line) = m
            .lines
            .iter_mut()
            .find(|l| l.field == "deepspeed_config.deepspeed_config_file")
    {
        line.kind = Kind::Refused;
        line.text =
            "its ZeRO stage and offload are in that file: give it with --launcher as well".into();
    }
    if recipe.format == Format::LlamaFactory {
        llama_factory::after_launch(&mut m);
    }
    let shards = m
        .intent
        .sharding
        .is_some_and(|s| s != crate::engine::config::Sharding::None)
        || m.intent.gpus.is_some_and(|n| n > 1);
    // FSDP2's and ZeRO-3's parameter offload is planned under full sharding only: under any
    // other the reading says so rather than handing the plan a refused config.
    if m.intent.offload_params && m.intent.sharding != Some(crate::engine::config::Sharding::Full) {
        m.intent.offload_params = false;
        m.refused_default(
            "offload",
            "parameters",
            format!(
                "refused: parameters on the host are planned under full sharding (FULL_SHARD, \
                 ZeRO-3); the recipe shards {}",
                m.intent
                    .sharding
                    .map_or("nothing", |sharding| sharding.name())
            ),
        );
    }
    if m.intent.offload_params && m.intent.offload_activations {
        m.intent.offload_activations = false;
        m.refused_default(
            "offload",
            "parameters and activations",
            "refused: one offload is planned at a time; the parameters' is planned",
        );
    }
    if m.intent.offload_optimizer && m.intent.offload_activations {
        m.intent.offload_activations = false;
        m.refused_default(
            "offload",
            "optimizer and activations",
            "refused: one offload is planned at a time; the optimizer's is planned",
        );
    }
    let mut intent = m.intent;
    let gpus = intent.gpus.take();
    Ok(Reading {
        format: recipe.format,
        model: intent.model.clone(),
        sets: intent.sets(),
        shards,
        gpus,
        lines: m.lines,
        intent,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(text: &str) -> Reading {
        read(&Recipe::parse(text).unwrap(), &[]).unwrap()
    }

    #[test]
    fn each_format_is_told_from_its_fields() {
        let format = |text: &str| Recipe::parse(text).map(|r| r.format);
        assert_eq!(
            format("model:\n  _component_: torchtune.models.llama3_1.lora_llama3_1_8b\n"),
            Ok(Format::Torchtune)
        );
        assert_eq!(
            format("model_name_or_path: a/b\nfinetuning_type: lora\n"),
            Ok(Format::LlamaFactory)
        );
        assert_eq!(format("base_model: a/b\n"), Ok(Format::Axolotl));
        assert_eq!(
            format("model_name_or_path: a/b\nper_device_train_batch_size: 2\n"),
            Ok(Format::Trl)
        );
        assert_eq!(
            format("{\"zero_optimization\": {\"stage\": 2}}"),
            Ok(Format::DeepSpeed)
        );
        assert_eq!(
            format("distributed_type: FSDP\nnum_processes: 8\n"),
            Ok(Format::Accelerate)
        );
        assert!(matches!(
            format("learning_rate: 1\n"),
            Err(RecipeError::Format(_))
        ));
    }

    #[test]
    fn a_qlora_recipe_becomes_the_sets_a_user_would_type() {
        let r = reading(
            "base_model: org/model\nload_in_4bit: true\nadapter: qlora\nlora_r: 16\n\
             lora_alpha: 32\nlora_dropout: 0.0\nlora_target_linear: true\nsequence_len: 4096\n\
             sample_packing: true\nmicro_batch_size: 2\ngradient_accumulation_steps: 4\n\
             optimizer: paged_adamw_8bit\nbf16: auto\ngradient_checkpointing: true\n\
             flash_attention: true\nlearning_rate: 0.0002\nwandb_project:\n",
        );
        assert_eq!(r.model, Some(ModelRef::Hub("org/model".into())));
        assert_eq!(
            r.sets,
            [
                "strategies.trainable=lora",
                "strategies.lora_rank=16",
                "strategies.lora_alpha=32",
                "strategies.weight_dtype=q4",
                "data.seq_len=4096",
                "batch_size=8",
                "eval_batch_size=2",
                "strategies.grad_accumulation=4",
                "strategies.checkpointing=layers",
                "optimizer=adamw8bit",
                "strategies.attention=fused",
            ]
        );
        assert_eq!(r.refused().count(), 0, "{:#?}", r.lines);
        let kind = |field: &str| r.lines.iter().find(|l| l.field == field).map(|l| l.kind);
        assert_eq!(kind("learning_rate"), Some(Kind::Ignored));
        assert_eq!(kind("wandb_project"), Some(Kind::Ignored));
        assert_eq!(kind("load_in_4bit"), Some(Kind::Mapped));
    }

    #[test]
    fn what_changes_memory_unmodelled_is_refused_by_name() {
        let r = reading(
            "base_model: a/b\nadapter: lora\nlora_dropout: 0.05\nlora_target_modules: [q_proj, v_proj]\n\
             lora_modules_to_save: [embed_tokens]\nmicro_batch_size: x\nfsdp: [full_shard, offload]\n\
             some_new_switch: 3\n",
        );
        let refused: Vec<&str> = r.refused().map(|l| l.field.as_str()).collect();
        assert_eq!(
            refused,
            [
                "lora_dropout",
                "lora_target_modules",
                "lora_modules_to_save",
                "micro_batch_size",
            ]
        );
        let unread = r
            .lines
            .iter()
            .find(|l| l.field == "some_new_switch")
            .unwrap();
        assert_eq!((unread.kind, unread.line), (Kind::Unread, Some(8)));
        let batch = r
            .lines
            .iter()
            .find(|l| l.field == "micro_batch_size")
            .unwrap();
        assert!(batch.text.contains("whole number from 1"), "{}", batch.text);
    }

    #[test]
    fn torchtune_builders_name_their_shapes_and_launch() {
        let r = reading(
            "# tune run --nproc_per_node 4 lora_finetune_distributed --config llama3_1/8B_lora\n\
             model:\n  _component_: torchtune.models.llama3_1.lora_llama3_1_8b\n  \
             lora_attn_modules: ['q_proj', 'k_proj', 'v_proj', 'output_proj']\n  \
             apply_lora_to_mlp: True\n  lora_rank: 8\n  lora_alpha: 16\n  lora_dropout: 0.0\n\
             tokenizer:\n  max_seq_len: null\nbatch_size: 2\ndtype: bf16\n\
             enable_activation_checkpointing: True\n",
        );
        let Some(ModelRef::Builder { config_json, .. }) = &r.model else {
            panic!("{:?}", r.model)
        };
        assert!(
            config_json.contains("\"intermediate_size\":14336"),
            "{config_json}"
        );
        assert_eq!(r.gpus, Some(4));
        assert!(r.sets.contains(&"strategies.sharding=full".to_string()));
        assert!(
            r.sets
                .contains(&"strategies.adapter_dtype=base".to_string())
        );
        assert!(r.sets.contains(&"data.seq_len=2048".to_string()));
        assert_eq!(r.refused().count(), 0, "{:#?}", r.lines);
    }

    #[test]
    fn a_distributed_torchtune_launch_says_the_sharding_its_recipe_chose() {
        let r = reading(
            "# tune run --nproc_per_node 2 full_finetune_distributed --config llama3_1/8B_full\n\
             model:\n  _component_: torchtune.models.llama3_1.llama3_1_8b\n\
             fsdp_reshard_after_forward: False\nbatch_size: 2\ndtype: bf16\n",
        );
        assert_eq!(r.gpus, Some(2));
        assert!(
            r.sets
                .contains(&"strategies.sharding=gradients".to_string()),
            "{:?}",
            r.sets
        );
        let launch = r
            .lines
            .iter()
            .find(|l| l.field == "(launch line in a comment)")
            .unwrap();
        assert!(
            launch.text.contains("strategies.sharding=gradients")
                && launch.text.contains("SHARD_GRAD_OP"),
            "{}",
            launch.text
        );
    }

    #[test]
    fn a_deepspeed_file_beside_the_recipe_shards_it() {
        let recipe = Recipe::parse(
            "model_name_or_path: a/b\nfinetuning_type: full\nbf16: true\ndeepspeed: ds.json\n",
        )
        .unwrap();
        assert_eq!(recipe.names_file(), Some(("deepspeed", "ds.json")));
        let ds = Recipe::parse(
            "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\"}, \"overlap_comm\": true},\n\"train_micro_batch_size_per_gpu\": \"auto\"}",
        )
        .unwrap();
        let r = read(&recipe, &[("ds.json".into(), ds)]).unwrap();
        assert!(r.shards);
        assert!(
            r.sets.contains(&"strategies.sharding=full".to_string()),
            "{:?}",
            r.sets
        );
        assert!(r.sets.contains(&"strategies.offload=optimizer".to_string()));
        assert!(r.sets.contains(&"strategies.weight_dtype=f16".to_string()));
        let overlap = r
            .lines
            .iter()
            .find(|l| l.field == "zero_optimization.overlap_comm")
            .unwrap();
        assert_eq!(
            (overlap.kind, overlap.file.as_deref()),
            (Kind::Ignored, Some("ds.json"))
        );
    }
}
