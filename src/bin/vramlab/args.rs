//! Command-line flags (clap) and their second stage: a validated [`RunConfig`].

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand, ValueEnum};
use vramlab::engine::config::Budget;
use vramlab::engine::config::{DataConfig, DataKind, MemorySampling};
use vramlab::engine::hf_config::{self, HfModel, Stated};
use vramlab::engine::overrides::apply_overrides;
use vramlab::engine::presets::{DEFAULT_PRESET, fit_batch, preset, table_base};
use vramlab::engine::{ConfigError, Purpose, RunConfig};

use vramlab::engine::recipe::{ModelRef, configure};

use super::hub::HubId;
use super::recipes;
use super::table_file;

#[derive(Parser, Debug)]
#[command(
    name = "vramlab",
    version,
    about = "Train a real model on the GPU and measure what each memory-saving trick does",
    long_about = "Train a real model on the GPU (burn on wgpu: Vulkan, Metal, DX12) and record \
                  what the allocator holds after every phase of every step, beside an analytic \
                  prediction. With no command, trains the default preset and prints the summary."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Train one experiment and report its memory, loss and speed.
    Train(TrainCommand),
    /// Test every memory-saving tip: off and on, same seed, and a verdict from the measurements.
    Claims(ClaimsArgs),
    /// Find the largest batch whose training step and evaluation fit a --budget.
    FindBatch(FindArgs),
    /// What the allocator would hold for a config, however big: its first steps and one
    /// evaluation batch under a dry run (kernels compiled, not run), beside the estimate.
    Plan(PlanArgs),
    /// List the embedded presets, one line each.
    Presets,
    /// Benchmark: ms/step with per-phase vs per-step allocator readings, same run side by side.
    BenchSampling(TrainArgs),
    /// Benchmark: the analytic model against plans, category by category, on a grid of sizes
    /// for each model family.
    BenchAnalytic(BenchAnalyticArgs),
    /// Benchmark: long runs with Adam (10,000 steps of spiral-mlp and digits-cnn by default)
    /// printing bytes in use at every step's end and reserved every 100 steps, then whether
    /// they stayed flat. Minutes to hours: not part of the tests.
    Soak(SoakArgs),
    /// Feed every parser generated input (random bytes, and mutations of valid inputs that
    /// know their shape) and count, per parser, inputs, panics and parses that held more
    /// memory than a bound in their input's size. Exits 1 on any.
    Fuzz(FuzzArgs),
    /// Benchmark: naive against fused attention and loss, in GPT-2 small's plans from 512 to
    /// 4,096 positions and in steps on this GPU at 64 and 512 positions.
    BenchAttention(BenchAttentionArgs),
    /// Benchmark: burn's GRU and LSTM cells against the stacked cells (all time steps' input
    /// projections in one matmul, as cuDNN runs them), a forward and backward pass on this GPU.
    BenchCells,
    /// Benchmark for a real GPU, in one call: burn's best matmul FLOP/s on this device in f32
    /// and f16 (the limit), then ms a step, tokens a second and model FLOP/s as a share of
    /// that limit for gpt2-small, a TinyLlama LoRA step and sort-mixtral.
    BenchGpu(BenchGpuArgs),
    /// The figures README.md and docs/ print that the code computes (plans, parameter counts,
    /// estimates, counts of claims), recomputed beside what the pages say; with --check, exits
    /// 1 naming each figure that differs.
    Docs(DocsArgs),
}

#[derive(Args, Debug, Default)]
pub struct DocsArgs {
    /// Exit 1 when a documented figure differs from the computed one (print only those).
    #[arg(long)]
    pub check: bool,
    /// The pages to read (default: README.md and docs/*.md of the current directory).
    #[arg(value_name = "FILE.md")]
    pub files: Vec<PathBuf>,
    /// Which figures: all of them, the CI tier's (all but those of plans marked `(full tier)`
    /// on their `figures` line), or only the full tier's (docs/architecture.md, "The two tiers").
    #[arg(long, value_enum, default_value_t = DocsTier::All)]
    pub tier: DocsTier,
    /// List only the figures neither checked nor marked as measured, computing no plan (seconds,
    /// where the check takes minutes): what a page's author runs while writing.
    #[arg(long, conflicts_with = "check")]
    pub unmarked: bool,
}

/// The figures `vramlab docs --check` checks. A plan of a sweep (one run at 1, 2 and 4 GPUs
/// beside the 8 a PyTorch figure is compared at, a second model of the same family) is marked
/// `(full tier)` on its `figures` line: the CI tier checks the sweep's representative, the full
/// tier the rest, and the two together every figure.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DocsTier {
    #[default]
    All,
    Ci,
    Full,
}

impl DocsTier {
    /// Whether this tier checks a figure of plans marked `(full tier)` (`full_tier`) or not.
    pub fn checks(self, full_tier: bool) -> bool {
        match self {
            DocsTier::All => true,
            DocsTier::Ci => !full_tier,
            DocsTier::Full => full_tier,
        }
    }
}

#[derive(Args, Debug, Default)]
pub struct BenchAnalyticArgs {
    /// Only the grid's rows of this family (mlp, cnn, gru, lstm, transformer, llama,
    /// finetune, sharded). Repeatable.
    #[arg(long, value_name = "FAMILY")]
    pub only: Vec<String>,
}

#[derive(Args, Debug, Default)]
pub struct BenchAttentionArgs {
    /// Only the plans (no GPU needed).
    #[arg(long)]
    pub plans: bool,
    /// Only the timed steps on this machine's GPU.
    #[arg(long)]
    pub steps: bool,
}

#[derive(Args, Debug)]
pub struct BenchGpuArgs {
    /// Small shapes and few steps (a minute on lavapipe): that the benchmark runs, not what a
    /// GPU can do.
    #[arg(long)]
    pub smoke: bool,
    /// Print the results as JSON on stdout (progress stays on stderr).
    #[arg(long)]
    pub json: bool,
    /// Steps each model runs (the first two, which compile kernels, are not timed).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u64).range(3..=1000))]
    pub steps: u64,
    /// Stop a model's steps once they have taken this long (after its third step at least).
    #[arg(long, value_name = "SECONDS", default_value_t = 90, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub seconds: u64,
}

#[derive(Args, Debug)]
pub struct SoakArgs {
    /// Presets to soak, in turn (repeatable).
    #[arg(long = "preset", value_name = "NAME", default_values_t = ["spiral-mlp".to_string(), "digits-cnn".to_string()])]
    pub presets: Vec<String>,
    /// Steps of each run.
    #[arg(long, default_value_t = 10_000)]
    pub steps: usize,
    /// The step from which in use and reserved must hold flat.
    #[arg(long, default_value_t = 500)]
    pub from: usize,
    /// Override a field of every run (after optimizer=adam, step sampling, no evaluations
    /// until the last step). Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub sets: Vec<String>,
}

#[derive(Args, Debug)]
pub struct FuzzArgs {
    /// Inputs per parser.
    #[arg(long, default_value_t = 1_000_000)]
    pub inputs: u64,
    /// The run's seed (a fresh one, printed, when left out).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Only this parser (repeatable): config-json, set, budget, url-hash, lessons-link,
    /// import-json, csv, hf-config, recipe.
    #[arg(long, value_name = "NAME")]
    pub target: Vec<String>,
    /// Print input INDEX of the run and parse it uncaught: the replay of a failure.
    #[arg(long, requires = "seed", value_name = "INDEX")]
    pub index: Option<u64>,
    /// Worker threads (default: one per core).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Where a config comes from: a preset or a file, then overrides and a budget.
#[derive(Args, Debug, Default)]
pub struct ConfigArgs {
    /// A named preset (see `vramlab presets`; gpt2-small, wide-cnn and big-mlp are sized for
    /// `vramlab plan`).
    #[arg(long, conflicts_with = "config")]
    pub preset: Option<String>,
    /// A JSON config file; fields left out take their defaults.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A Hugging Face config.json (model_type gpt2, llama, mistral, qwen2, qwen3 or phi3), or
    /// a Hub id such as microsoft/Phi-3-mini-4k-instruct: its config.json is fetched from
    /// $HF_ENDPOINT (default https://huggingface.co) with $HF_TOKEN as a bearer token when set,
    /// and cached under $XDG_CACHE_HOME (else ~/.cache)/vramlab/hf/ for later runs without the
    /// network. Its model replaces the base run's (the preset's or --config's; without either,
    /// gpt2-small's run for GPT-2 and llama2-7b's for the others), before the --sets. It trains
    /// as transformers would: on the next-token stream (data.seq_len tokens a sample) with
    /// fused (SDPA-style) attention, unless --config states data.kind or strategies.attention.
    /// Fields vramlab does not model are refused by name.
    #[arg(long, value_name = "CONFIG.JSON|ORG/NAME")]
    pub hf_config: Option<PathBuf>,
    /// With --hf-config ORG/NAME: fetch its config.json from the Hub again, replacing the
    /// cached copy (a cached copy is otherwise read, and the run says so).
    #[arg(long, requires = "hf_config")]
    pub refresh: bool,
    /// A training recipe: an Axolotl, TRL (`trl sft --config`), torchtune or LLaMA-Factory
    /// YAML, told from its fields. Each field that decides memory is read as its project
    /// defines it (printed, one line a field); its model is the Hub id's config.json as
    /// --hf-config fetches it (or --hf-config's, which replaces it), a DeepSpeed JSON it names is
    /// read beside it, and --sets apply after it. A field that changes memory in a way vramlab
    /// does not model is refused by name (exit 2) unless --allow-unmodelled.
    #[arg(long, value_name = "RECIPE.yaml", conflicts_with_all = ["preset", "config", "data"])]
    pub recipe: Option<PathBuf>,
    /// With --recipe: the accelerate config (YAML) or DeepSpeed JSON the recipe is launched
    /// with (its process count, sharding, offload and precision); repeatable (an accelerate
    /// config and the DeepSpeed JSON it names).
    #[arg(long, value_name = "FILE", requires = "recipe")]
    pub launcher: Vec<PathBuf>,
    /// With --recipe: plan even where the recipe has a field vramlab does not model (each
    /// named, and the plan said to be without it).
    #[arg(long, requires = "recipe")]
    pub allow_unmodelled: bool,
    /// Override a field, e.g. --set batch_size=1024 --set model.hidden=[128,128]. Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub overrides: Vec<String>,
    /// The GPU's memory: 512MiB, 24GiB, 1536KiB, plain bytes, or a fraction of the adapter's
    /// largest buffer such as 0.8 (same as --set budget=SIZE). A run behaves as if the GPU had
    /// only this much; a plan says whether it fits.
    #[arg(long, value_name = "SIZE")]
    pub budget: Option<String>,
    /// GPUs the run is spread over (same as --set gpus=N): a plan is then one GPU's share of
    /// it, as strategies.sharding cuts it (full: FSDP's FULL_SHARD, ZeRO-3; optimizer:
    /// ZeRO-1; none: data parallel, DDP's buckets beside the whole run). Runs train on one.
    #[arg(long, value_name = "N")]
    pub gpus: Option<usize>,
    /// Train on a CSV table: a header row, numeric feature columns and a label column (the
    /// last, or --set data.label=NAME or a 1-based position). Without --preset or --config,
    /// an MLP sized for tables (the table-mlp config). Same as --set data.kind=csv --set
    /// data.path=FILE.csv.
    #[arg(long, value_name = "FILE.csv")]
    pub data: Option<PathBuf>,
}

/// `train`: a run's arguments, and how to watch it on the page.
#[derive(Args, Debug, Default)]
pub struct TrainCommand {
    #[command(flatten)]
    pub run: TrainArgs,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Run for a live `find-batch` or `claims` (internal): events on standard error, the
    /// page's controls on standard input.
    #[arg(long, hide = true, conflicts_with_all = ["live", "dry_run"])]
    pub relay_live: bool,
}

#[derive(Args, Debug, Default)]
pub struct LiveArgs {
    /// Serve the page on the loopback and show the training there as it runs (with
    /// find-batch and claims: each of their runs in turn, and what each showed): the same
    /// charts as a run in the browser, with Pause, Resume and Stop acting on the native
    /// process. The address is printed; nothing is opened. Files and printed results are
    /// those without --live. Not with --dry-run or find-batch --plan (plans have no steps).
    #[arg(long)]
    pub live: bool,
    /// The loopback port --live listens on (0: a free one).
    #[arg(long, default_value_t = 8765, requires = "live")]
    pub port: u16,
    /// The built page --live serves (default: where `bash .ci/play` builds it,
    /// $VRAMLAB_CACHE/dist).
    #[arg(long, value_name = "DIR", requires = "live")]
    pub page: Option<PathBuf>,
}

#[derive(Args, Debug, Default)]
pub struct TrainArgs {
    #[command(flatten)]
    pub source: ConfigArgs,
    /// Number of training steps (same as --set steps=N).
    #[arg(long)]
    pub steps: Option<usize>,
    /// When to read the allocator: after each phase, or once per step (cheaper).
    #[arg(long, value_enum)]
    pub sampling: Option<SamplingArg>,
    /// Write timeline.json, timeline.csv, memory.svg, categories.svg and one-step.svg into
    /// this directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the summary as one JSON object on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Print the whole timeline (summary, steps and evaluations) as one JSON object on stdout.
    #[arg(long, conflicts_with = "json")]
    pub json_timeline: bool,
    /// Follow the run under a dry run, as `vramlab plan` does: the allocator's figures on
    /// batches of zeros, kernels compiled and not run, so no losses.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args, Debug, Default)]
pub struct PlanArgs {
    #[command(flatten)]
    pub source: ConfigArgs,
    /// Print the plan as one JSON object on stdout instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Plan on the adapter another plan modelled: FILE is a plan's JSON (`vramlab plan
    /// --json`, or the page's Export), whose `modelled` adapter the planning device states in
    /// place of this machine's.
    #[arg(long, value_name = "PLAN.json")]
    pub model_adapter: Option<PathBuf>,
    /// Make the page's exported plan again here, its config on the adapter it modelled, and
    /// name every figure that differs (exit 1 when one does).
    #[arg(long, value_name = "PLAN.json", conflicts_with_all = ["model_adapter", "preset", "config", "hf_config"])]
    pub compare_page: Option<PathBuf>,
    /// With --recipe and --budget: when the recipe does not fit, write it to OUT with the
    /// first planned change that fits (a smaller micro-batch, checkpointing, an 8-bit
    /// optimizer, a 4-bit base...) as its own fields, every other line and comment kept, a
    /// comment above each change with the planned figure.
    #[arg(long, value_name = "OUT.yaml", requires_all = ["recipe", "budget"])]
    pub write_recipe: Option<PathBuf>,
}

impl PlanArgs {
    /// Preset or file, then `--set`s, then the budget; validated for a plan (no data is
    /// generated, so the batch is not bounded by the training split).
    pub fn resolve(&self) -> Result<RunConfig, ConfigError> {
        let config = self.source.configure()?;
        config.validate_for(Purpose::Plan)?;
        Ok(config)
    }
}

#[derive(Args, Debug)]
pub struct FindArgs {
    #[command(flatten)]
    pub run: TrainArgs,
    /// The batch is a multiple of this.
    #[arg(long, default_value_t = 1)]
    pub multiple_of: usize,
    /// The search: vramlab's, or one of the others for comparison.
    #[arg(long, value_enum, default_value_t = MethodArg::Vramlab)]
    pub method: MethodArg,
    /// Stop each search after this many trials (its answer is then a lower bound).
    #[arg(long, value_name = "N")]
    pub max_trials: Option<usize>,
    /// Run every method and print a comparison table; with --plan, vramlab's search as plans
    /// and as runs, side by side.
    #[arg(long, conflicts_with = "method")]
    pub compare: bool,
    /// Trials as plans (dry runs in this process): seconds for any budget, no real memory.
    #[arg(long)]
    pub plan: bool,
    /// Search the longest sequence (data.seq_len) at the configured batch instead of the
    /// largest batch (vramlab's search; a token task).
    #[arg(long, conflicts_with = "compare")]
    pub longest_sequence: bool,
    #[command(flatten)]
    pub live: LiveArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum MethodArg {
    SeedLinear,
    Accelerate,
    LightningPower,
    LightningBinsearch,
    Vramlab,
}

#[derive(Args, Debug, Default)]
pub struct ClaimsArgs {
    /// Print the report as one JSON object (adapter, seconds, one row per claim) instead of
    /// the table.
    #[arg(long)]
    pub json: bool,
    /// Also write the report as Markdown to this file.
    #[arg(long, value_name = "FILE.md")]
    pub out: Option<PathBuf>,
    /// Only the claims about this config field (e.g. strategies.loss_bookkeeping). Repeatable.
    #[arg(long, value_name = "FIELD")]
    pub only: Vec<String>,
    /// Only the claims whose folklore contains this text (e.g. "trades time"), of those --only
    /// keeps. Repeatable.
    #[arg(long, value_name = "TEXT")]
    pub claim: Vec<String>,
    /// Run the claims on this CSV table instead of each claim's data set: the claims whose
    /// model can take the table, with batches no larger than its training split.
    #[arg(long, value_name = "FILE.csv")]
    pub data: Option<PathBuf>,
    /// With --data: a field of the table's data section, e.g. --set data.label=species.
    #[arg(long = "set", value_name = "data.FIELD=VALUE", requires = "data")]
    pub overrides: Vec<String>,
    /// Judge as the page's "Run all lessons" does: no step timing (a page cannot wait for the
    /// GPU inside a step), so one run a side; no claim about the allocator's pools, and every
    /// run on one device in this process, as a page keeps one device (with --live each run is
    /// its own process, as without --as-page); the transformer claims Run all leaves to their
    /// own card not run. The verdicts to hold the page's lessons to (--compare-page).
    #[arg(long)]
    pub as_page: bool,
    #[command(flatten)]
    pub live: LiveArgs,
    /// Run nothing: hold the page's lessons (its "Export JSON" after "Run all lessons") to the
    /// native report --native (`vramlab claims --as-page --json`), card by card; exit 1 naming
    /// each card whose verdict differs, that the native report lacks, or that the page left
    /// "not run here" although its adapter can run it.
    #[arg(long, value_name = "LESSONS.json", requires = "native",
          conflicts_with_all = ["as_page", "json", "out", "only", "claim", "data", "live"])]
    pub compare_page: Option<PathBuf>,
    /// With --compare-page: the native report, as `vramlab claims --as-page --json` prints it.
    #[arg(long, value_name = "CLAIMS.json", requires = "compare_page")]
    pub native: Option<PathBuf>,
    /// With --compare-page: the page ran some cards on their own buttons, not "Run all
    /// lessons" (the CI tier's page test): a card without a row is not a difference, each card
    /// that ran is held to the native verdict, and at least one must have run.
    #[arg(long, requires = "compare_page")]
    pub some_cards: bool,
}

impl ClaimsArgs {
    /// The table's data section, read and labelled; `None` without --data.
    pub fn table(&self) -> Result<Option<DataConfig>, ConfigError> {
        let Some(path) = &self.data else {
            return Ok(None);
        };
        if let Some(other) = self
            .overrides
            .iter()
            .find(|s| !s.trim().starts_with("data."))
        {
            return Err(ConfigError::invalid(
                "--set",
                format!(
                    "{other}: claims set their own runs; with --data only data.* fields \
                     (data.label, data.test_fraction) may be set"
                ),
            ));
        }
        let mut config = table_base();
        config.data.path = path.display().to_string();
        let mut config = apply_overrides(config, self.overrides.iter().map(String::as_str))?;
        table_file::load(&mut config)?;
        config.validate()?;
        Ok(Some(config.data))
    }
}

#[derive(ValueEnum, Clone, Copy, Debug)]
pub enum SamplingArg {
    Phase,
    Step,
}

impl ConfigArgs {
    /// Preset, file, the table base or the Hugging Face model's family preset; then the
    /// Hugging Face model, `--data`, the `--set`s in order and the budget; a table is read from
    /// `data.path`. Not yet validated. What the Hugging Face file changed or could not say goes
    /// to stderr.
    fn configure(&self) -> Result<RunConfig, ConfigError> {
        let recipe = self
            .recipe
            .as_deref()
            .map(|path| recipes::read(path, &self.launcher))
            .transpose()?;
        // Refusals before the model: a recipe that cannot be planned needs no download.
        if let Some(recipe) = &recipe {
            recipe.check(self.hf_config.as_deref(), self.gpus, self.allow_unmodelled)?;
        }
        let hf = match (
            &self.hf_config,
            recipe.as_ref().and_then(|r| r.reading.model.as_ref()),
        ) {
            (Some(arg), _) => Some(read_hf(arg, self.refresh)?),
            (None, Some(ModelRef::Hub(id))) => {
                Some(read_hf(&recipes::model_path(id), self.refresh)?)
            }
            (
                None,
                Some(ModelRef::Builder {
                    component,
                    config_json,
                }),
            ) => {
                let (hf, name) = configure::builder_model(component, config_json)?;
                Some((
                    hf,
                    HfOrigin {
                        label: component.clone(),
                        name,
                    },
                ))
            }
            (None, None) => None,
        };
        let recipe_sets: Vec<String> = recipe
            .as_ref()
            .map(|r| r.reading.sets.clone())
            .unwrap_or_default();
        let overrides: Vec<&String> = recipe_sets.iter().chain(self.overrides.iter()).collect();
        // What a config file or a --set states keeps its value over a Hugging Face user's
        // defaults.
        let mut stated = Stated::default();
        let base = match (&self.preset, &self.config, &self.data, &hf) {
            (_, Some(path), _, _) => {
                let (config, in_file) = config_file(path)?;
                stated = in_file;
                config
            }
            (Some(name), None, _, _) => preset(name)?,
            (None, None, _, Some((hf, _))) => preset(hf.family.base_preset())?,
            (None, None, Some(file), None) => {
                let mut base = table_base();
                if let Some(stem) = file.file_stem() {
                    base.name = stem.to_string_lossy().into_owned();
                }
                base
            }
            (None, None, None, None) => preset(DEFAULT_PRESET)?,
        };
        // A --set applies after the model, and its value is the user's, not a default to note.
        let stated = overrides
            .iter()
            .fold(stated, |stated, set| stated.or(Stated::in_set(set)));
        let (mut base, mut notes) = match &hf {
            Some((hf, origin)) => hf.apply(base, &origin.name, stated),
            None => (base, Vec::new()),
        };
        if let Some(file) = &self.data {
            base.data.kind = DataKind::Csv;
            base.data.path = file.display().to_string();
        }
        let mut config = apply_overrides(base, overrides.iter().map(|s| s.as_str()))?;
        if let Some(budget) = &self.budget {
            let budget =
                Budget::parse(budget).map_err(|err| ConfigError::invalid("--budget", err))?;
            config.budget = Some(budget);
        }
        if let Some(gpus) = self.gpus.or(recipe.as_ref().and_then(|r| r.reading.gpus)) {
            config.gpus = gpus;
        }
        table_file::load(&mut config)?;
        // A preset's batch was sized for its own data set; a config file's or a --set one is
        // the user's, and validation holds it to the table.
        let batch_set = overrides
            .iter()
            .any(|s| s.trim_start().starts_with("batch_size="));
        if self.config.is_none()
            && !batch_set
            && let Some(note) = fit_batch(&mut config)
        {
            eprintln!("vramlab: {note}");
        }
        if let Some((hf, origin)) = &hf {
            notes.extend(
                hf.notes_for(&config)
                    .map_err(|err| in_file(&origin.label, err))?,
            );
            for note in notes {
                eprintln!("vramlab: {}: {note}", origin.label);
            }
        }
        Ok(config)
    }
}

/// A JSON config file, and which fields it states that a Hugging Face model's defaults would
/// otherwise set; a relative `data.path` in it is relative to the file.
fn config_file(path: &Path) -> Result<(RunConfig, Stated), ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| ConfigError::invalid("--config", format!("{}: {err}", path.display())))?;
    let mut config = RunConfig::from_json(&text)?;
    let data_path = Path::new(&config.data.path);
    if !config.data.path.is_empty() && data_path.is_relative() {
        let dir = path.parent().unwrap_or(Path::new(""));
        config.data.path = dir.join(data_path).display().to_string();
    }
    Ok((config, Stated::in_json(&text)))
}

/// Where a Hugging Face config came from: how notes and errors name it (the file, or the Hub
/// id), and the run's name when the file does not state its model's.
struct HfOrigin {
    label: String,
    name: String,
}

/// `--hf-config`'s file, or the Hub id's config.json (`hub`), fetched again when `refresh`.
fn read_hf(arg: &Path, refresh: bool) -> Result<(HfModel, HfOrigin), ConfigError> {
    let (text, origin) = match HubId::parse(arg) {
        Some(id) => {
            let (text, cached) = id.config_json(refresh)?;
            let origin = HfOrigin {
                label: id.to_string(),
                name: id.name.clone(),
            };
            if let Some(note) = cached {
                eprintln!("vramlab: {}: {note}", origin.label);
            }
            (text, origin)
        }
        None if refresh => {
            return Err(ConfigError::invalid(
                "--refresh",
                format!(
                    "{} is a file, not a Hub id (org/name): --refresh fetches a Hub id's \
                     config.json again; a file is read as it is",
                    arg.display()
                ),
            ));
        }
        None => {
            let label = arg.display().to_string();
            let text = std::fs::read_to_string(arg).map_err(|err| in_file(&label, err))?;
            let name = file_stem(arg);
            (text, HfOrigin { label, name })
        }
    };
    let hf = hf_config::read(&text).map_err(|err| in_file(&origin.label, err))?;
    Ok((hf, origin))
}

/// An error about the Hugging Face file, named by the flag and the file (or Hub id).
fn in_file(label: &str, err: impl std::fmt::Display) -> ConfigError {
    ConfigError::invalid("--hf-config", format!("{label}: {err}"))
}

/// The run's name when the file does not state its model's: the file's name.
fn file_stem(path: &Path) -> String {
    path.file_stem().map_or("hf-config".into(), |stem| {
        stem.to_string_lossy().into_owned()
    })
}

impl TrainArgs {
    /// Preset or file, then `--set`s in order, then the dedicated flags; validated (for a plan
    /// when `purpose` says so).
    pub fn resolve_for(&self, purpose: Purpose) -> Result<RunConfig, ConfigError> {
        let mut config = self.source.configure()?;
        if let Some(steps) = self.steps {
            config.steps = steps;
        }
        if let Some(sampling) = self.sampling {
            config.memory_sampling = match sampling {
                SamplingArg::Phase => MemorySampling::Phase,
                SamplingArg::Step => MemorySampling::Step,
            };
        }
        config.validate_for(purpose)?;
        Ok(config)
    }

    pub fn resolve(&self) -> Result<RunConfig, ConfigError> {
        self.resolve_for(Purpose::Run)
    }
}
