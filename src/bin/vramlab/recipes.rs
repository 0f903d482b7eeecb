//! `--recipe FILE`: a training recipe read from disk with the DeepSpeed JSON it names (or an
//! accelerate config or DeepSpeed JSON given with `--launcher`), its reading printed as one
//! block on stderr, and what it refuses turned into an error unless `--allow-unmodelled`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use vramlab::engine::ConfigError;
use vramlab::engine::format::ByteFormat;
use vramlab::engine::plan::{Plan, WriteBack};
use vramlab::engine::recipe::{self, Reading, Recipe};

/// A recipe as read: its label (the path) and reading.
pub struct ReadRecipe {
    pub label: String,
    pub reading: Reading,
}

fn invalid(flag: &str, path: &Path, err: impl std::fmt::Display) -> ConfigError {
    ConfigError::invalid(flag, format!("{}: {err}", path.display()))
}

fn parse(flag: &str, path: &Path) -> Result<Recipe, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|err| invalid(flag, path, err))?;
    Recipe::parse(&text).map_err(|err| invalid(flag, path, err))
}

/// Where a file a recipe names is: as written from the working directory (the projects run
/// from their repository's root), else beside the recipe.
fn named_file(recipe: &Path, named: &str) -> Option<PathBuf> {
    let as_written = PathBuf::from(named);
    if as_written.is_file() {
        return Some(as_written);
    }
    let beside = recipe.parent()?.join(named);
    beside.is_file().then_some(beside)
}

/// Read `path`, the file its `deepspeed` field names and `launcher`; print the reading.
pub fn read(path: &Path, launcher: &[PathBuf]) -> Result<ReadRecipe, ConfigError> {
    let (_, reading) = load(path, launcher)?;
    let label = path.display().to_string();
    eprint!("{}", reading.render(&label));
    Ok(ReadRecipe { label, reading })
}

/// The recipe at `path` and its reading (with the files beside it), printing nothing.
fn load(path: &Path, launcher: &[PathBuf]) -> Result<(Recipe, Reading), ConfigError> {
    let recipe = parse("--recipe", path)?;
    let mut beside = Vec::new();
    if let Some((field, named)) = recipe.names_file() {
        let file = named_file(path, named).ok_or_else(|| {
            invalid(
                "--recipe",
                path,
                format!(
                    "{field}: {named} is neither a file from here nor beside the recipe; run \
                     from where the recipe is launched, or pass it with --launcher FILE"
                ),
            )
        })?;
        beside.push((file.display().to_string(), parse("--recipe", &file)?));
    }
    for file in launcher {
        beside.push((file.display().to_string(), parse("--launcher", file)?));
    }
    let reading = recipe::read(&recipe, &beside).map_err(|err| invalid("--recipe", path, err))?;
    Ok((recipe, reading))
}

/// `--write-recipe OUT`: the recipe with the first of the plan's suggestions that fits and
/// that its format can say, written to `out`; nothing written when the plan fits as it is.
pub fn write_back(
    path: &Path,
    launcher: &[PathBuf],
    planned: &Plan,
    out: &Path,
) -> anyhow::Result<()> {
    if planned.budget_bytes.is_none() {
        anyhow::bail!("--write-recipe needs --budget: the change is one that fits it");
    }
    let (recipe, reading) = load(path, launcher)?;
    let written = match planned
        .write_back(&recipe, &reading)
        .map_err(|why| anyhow::anyhow!("{why}: {} not written", out.display()))?
    {
        WriteBack::FitsAsItIs { budget } => {
            eprintln!(
                "{} fits {} as it is: {} not written",
                path.display(),
                ByteFormat::MIB_OR_GIB.of(budget),
                out.display()
            );
            return Ok(());
        }
        WriteBack::Written(written) => written,
    };
    std::fs::write(out, &written.text).with_context(|| format!("writing {}", out.display()))?;
    // On stderr, so that `--json` leaves stdout the plan's JSON alone.
    eprintln!("wrote {}: {}", out.display(), written.note);
    for e in &written.edits {
        eprintln!("  {}: {}", e.path, e.value);
    }
    eprintln!(
        "  (--set flags given here are not written into it; plan it with the same ones: \
         vramlab plan --recipe {} ...)",
        out.display()
    );
    Ok(())
}

/// A Hub id as `--hf-config` takes it; a local model directory as its config.json.
pub fn model_path(id: &str) -> PathBuf {
    let path = PathBuf::from(id);
    if path.is_dir() {
        path.join("config.json")
    } else {
        path
    }
}

impl ReadRecipe {
    /// Refusals (unless allowed) and a sharded recipe with no GPU count are errors; what
    /// replaced the recipe's model is said.
    pub fn check(
        &self,
        hf_config: Option<&Path>,
        gpus: Option<usize>,
        allow_unmodelled: bool,
    ) -> Result<(), ConfigError> {
        if let (Some(arg), Some(model)) = (hf_config, &self.reading.model) {
            eprintln!(
                "  --hf-config {} replaces the recipe's model ({})",
                arg.display(),
                model.shown()
            );
        }
        let refused = self.reading.refused_fields();
        if !refused.is_empty() {
            if !allow_unmodelled {
                return Err(ConfigError::invalid(
                    "--recipe",
                    format!(
                        "{}: {} change{} memory in a way vramlab does not model (each said \
                         above); --allow-unmodelled plans without {}",
                        self.label,
                        refused.join(", "),
                        if refused.len() == 1 { "s" } else { "" },
                        if refused.len() == 1 { "it" } else { "them" }
                    ),
                ));
            }
            eprintln!(
                "  --allow-unmodelled: planned WITHOUT {}; the plan is not this recipe's where \
                 they change memory",
                refused.join(", ")
            );
        }
        if self.reading.shards && gpus.is_none() && self.reading.gpus.is_none() {
            return Err(ConfigError::invalid(
                "--gpus",
                format!(
                    "{} shards over its launcher's processes, which it does not count: give \
                     --gpus N (or the accelerate config with --launcher)",
                    self.label
                ),
            ));
        }
        eprintln!("  the same config as flags: {}", self.reading.as_flags());
        Ok(())
    }
}
