//! A training recipe chosen on "Will it fit?" (an Axolotl, TRL, torchtune or LLaMA-Factory
//! file, with the DeepSpeed JSON or accelerate config it is launched with chosen beside it),
//! read as `vramlab plan --recipe` reads it and turned into the same config
//! (`engine::recipe::configure`), so that the page plans the command line's bytes. The page
//! fetches nothing: a recipe naming a Hub model is planned with the config.json the panel holds.

use vramlab::engine::Purpose;
use vramlab::engine::config::RunConfig;
use vramlab::engine::format::ByteFormat;
use vramlab::engine::hf_config::{self, HfModel};
use vramlab::engine::plan::{Plan, WriteBack};
use vramlab::engine::recipe::configure::{builder_model, run_config};
use vramlab::engine::recipe::{self, Format, ModelRef, Reading, Recipe};

use crate::browser::download;

/// A recipe read and put in the editor: what Export recipe writes back from.
#[derive(Clone, Debug)]
pub struct LoadedRecipe {
    /// The recipe's file name.
    pub file: String,
    pub recipe: Recipe,
    pub reading: Reading,
    /// The preset the config is built on (the model family's base run), for the editor.
    pub preset: String,
    /// The config it gave the editor.
    pub config: RunConfig,
}

impl LoadedRecipe {
    /// Whether a plan of `planned` is a plan of this recipe: its config but for the budget
    /// (the panel's card), the GPU count where the recipe leaves it to the panel, and the steps
    /// a plan follows (its config says how many it ran, with no evaluation between).
    pub fn planned_by(&self, planned: &RunConfig) -> bool {
        let mut as_loaded = planned.clone();
        as_loaded.budget = self.config.budget;
        as_loaded.steps = self.config.steps;
        as_loaded.eval_every = self.config.eval_every;
        if self.reading.gpus.is_none() {
            as_loaded.gpus = self.config.gpus;
        }
        as_loaded == self.config
    }

    /// The name Export recipe gives the written file: the recipe's, marked as the one that fits.
    pub fn written_name(&self) -> String {
        match self.file.rsplit_once('.') {
            Some((stem, extension)) => format!("{stem}-fits.{extension}"),
            None => format!("{}-fits.yaml", self.file),
        }
    }
}

/// What the panel says of a recipe: one line, and the reading block (`vramlab plan --recipe`'s
/// stderr) to open.
#[derive(Clone, Debug, PartialEq)]
pub struct Said {
    pub line: String,
    pub reading: Option<String>,
}

/// The model config.json the panel holds (dropped or picked), by file name.
pub struct HeldModel<'a> {
    pub file: &'a str,
    pub text: &'a str,
}

/// Read the chosen `files` (name and text): one recipe and the files beside it. `held` stands
/// in for a Hub model; `allow_unmodelled` plans without the fields vramlab does not model (as
/// the flag); `panel_gpus` is the panel's GPU count, which a sharded recipe that does not count
/// its processes needs above one.
pub fn read(
    files: &[(String, String)],
    held: Option<HeldModel>,
    allow_unmodelled: bool,
    panel_gpus: usize,
) -> Result<(LoadedRecipe, Said), Said> {
    let plain = |line: String| Said {
        line,
        reading: None,
    };
    let mut recipes = Vec::new();
    let mut beside = Vec::new();
    for (name, text) in files {
        let parsed = Recipe::parse(text).map_err(|err| plain(format!("{name}: {err}")))?;
        match parsed.format {
            Format::DeepSpeed | Format::Accelerate => beside.push((name.clone(), parsed)),
            _ => recipes.push((name.clone(), parsed)),
        }
    }
    let (file, recipe) = match recipes.len() {
        1 => recipes.remove(0),
        0 => {
            return Err(plain(
                "no recipe among the files chosen: a DeepSpeed JSON or an accelerate config \
                 is read beside an Axolotl, TRL, torchtune or LLaMA-Factory recipe; choose them \
                 together"
                    .into(),
            ));
        }
        _ => {
            let names: Vec<&str> = recipes.iter().map(|(n, _)| n.as_str()).collect();
            return Err(plain(format!(
                "{} are each a recipe: choose one, with the DeepSpeed or accelerate files it \
                 is launched with",
                names.join(" and ")
            )));
        }
    };
    // The file the recipe names, by its name: the page has only the files given to it.
    if let Some((field, named)) = recipe.names_file() {
        let base = named.rsplit(['/', '\\']).next().unwrap_or(named);
        match beside.iter().position(|(name, _)| name == base) {
            // First, as the command line reads it before `--launcher`'s files.
            Some(i) => {
                let named_file = beside.remove(i);
                beside.insert(0, named_file);
            }
            None => {
                return Err(plain(format!(
                    "{file}: {field}: {named} was not chosen with the recipe; choose the two \
                     files together (the page reads only the files given to it)"
                )));
            }
        }
    }
    let reading = recipe::read(&recipe, &beside).map_err(|err| plain(format!("{file}: {err}")))?;
    let block = reading.render(&file);
    let refuse = |line: String| Said {
        line,
        reading: Some(block.clone()),
    };
    let refused = reading.refused_fields();
    if !refused.is_empty() && !allow_unmodelled {
        return Err(refuse(format!(
            "{file}: {} change{} memory in a way vramlab does not model (each said in the \
             reading); tick \"plan without what vramlab does not model\" to plan without {}",
            refused.join(", "),
            if refused.len() == 1 { "s" } else { "" },
            if refused.len() == 1 { "it" } else { "them" }
        )));
    }
    if reading.shards && reading.gpus.is_none() && panel_gpus <= 1 {
        return Err(refuse(format!(
            "{file} shards over its launcher's processes, which it does not count: set the \
             GPUs (x ... GPUs) to their number, or choose the accelerate config with it"
        )));
    }
    let (hf, name, model_said) = model(&file, &reading, held).map_err(&refuse)?;
    let (config, notes) =
        run_config(&reading, &hf, &name).map_err(|err| refuse(format!("{file}: {err}")))?;
    config
        .validate_for(Purpose::Plan)
        .map_err(|err| refuse(format!("{file}: {err}")))?;
    let mut line = format!("{file}: {}, {model_said}", reading.format.name());
    if let Some(gpus) = reading.gpus {
        line.push_str(&format!("; {gpus} GPUs, as it launches"));
    }
    if !refused.is_empty() {
        line.push_str(&format!(
            "; planned WITHOUT {}: the plan is not this recipe's where they change memory",
            refused.join(", ")
        ));
    }
    for note in notes {
        line.push_str("; ");
        line.push_str(&note);
    }
    let loaded = LoadedRecipe {
        file,
        recipe,
        reading,
        preset: hf.family.base_preset().to_string(),
        config,
    };
    Ok((
        loaded,
        Said {
            line,
            reading: Some(block),
        },
    ))
}

/// The recipe's model, the run's name and what the line says of it: a torchtune builder by
/// its shapes; a Hub id (or a local path) by the config.json the panel holds.
fn model(
    file: &str,
    reading: &Reading,
    held: Option<HeldModel>,
) -> Result<(HfModel, String, String), String> {
    let named = match &reading.model {
        Some(ModelRef::Builder {
            component,
            config_json,
        }) => {
            let (hf, name) =
                builder_model(component, config_json).map_err(|err| format!("{file}: {err}"))?;
            return Ok((hf, name, format!("{component} by its published shapes")));
        }
        Some(ModelRef::Hub(id)) => id.as_str(),
        None => "no model",
    };
    let Some(held) = held else {
        return Err(format!(
            "{file} names {named}, which the page does not fetch: pick its config.json (or a \
             published one) above, then choose the recipe again"
        ));
    };
    let hf = hf_config::read(held.text).map_err(|err| format!("{}: {err}", held.file))?;
    let name = held.file.trim_end_matches(".json").to_string();
    Ok((
        hf,
        name,
        format!("{} in place of the recipe's model ({named})", held.file),
    ))
}

/// Export recipe: `loaded` written back with the first of `plan`'s fitting changes its format
/// can say (as `--write-recipe` writes it), downloaded; what the panel says of it.
pub fn export(loaded: &LoadedRecipe, plan: &Plan) -> Result<String, String> {
    if !loaded.planned_by(&plan.config) {
        return Err(format!(
            "the last plan is not of {}'s config (it was made before the recipe was chosen, or \
             the GPUs changed since): plan it, then export",
            loaded.file
        ));
    }
    let written = match plan
        .write_back(&loaded.recipe, &loaded.reading)
        .map_err(|why| format!("{}: {why}", loaded.file))?
    {
        WriteBack::FitsAsItIs { budget } => {
            return Ok(format!(
                "{} fits {} as it is: nothing to change",
                loaded.file,
                ByteFormat::MIB_OR_GIB.of(budget)
            ));
        }
        WriteBack::Written(written) => written,
    };
    let name = loaded.written_name();
    download(&name, "application/yaml", &written.text);
    Ok(format!("{name}: {}", written.note))
}
