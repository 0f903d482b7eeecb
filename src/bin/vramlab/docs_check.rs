//! `vramlab docs --check`: the figures README.md and docs/ print that the code can compute are
//! recomputed, and a figure that differs from what the code gives now fails the check, naming
//! its file, line, the documented and the computed value.
//!
//! A page names what computes its figures in HTML comments, which a rendered page hides:
//!
//! ```text
//! <!-- figures gpt2: plan --preset gpt2-small -->
//! <!-- check: gpt2.params; gpt2.high_water_in_use_bytes GiB; _; gpt2.predicted_peak_bytes/gpt2.high_water_in_use_bytes -->
//! | GPT-2 small | 124,439,808 parameters | 24.63 GiB at batch 8 | ratio 1.03 |
//! ```
//!
//! `figures NAME: plan ARGS` plans `vramlab plan ARGS` (parsed by the binary's own flags) on the
//! planning device, in a process of its own as a reader's command is (plans sharing a process
//! share its pools' pages, which moved a reserved figure by a GiB), so its figures depend on the
//! config and the adapter that device models (lavapipe's in CI), not on the machine's memory; `figures NAME: estimate ARGS` is the
//! analytic model's prediction for the same config (`memory::analytic`, no plan). A figure is a
//! path into that JSON (`vramlab plan --json` prints a plan's): dotted fields, `[field=value]`
//! to pick an element of a list, `[N]` its element N, `list[].field` the sum over its elements.
//! Built in, without a `figures` line: `catalog.claims` (the catalog's claims),
//! `catalog.strategies`, `presets.count`, `grid.configs` (bench-analytic's grid) and the grid's
//! own figures, `grid.within`, `grid.FAMILY.CATEGORY.max` and the rest (`Checker::grid_figure`:
//! the grid is planned once, in the full tier).
//!
//! `check:` applies to the next line of text, `check "TEXT":` to the next line that contains TEXT
//! (a table's row, a line inside a paragraph: a comment there would end the table or split the
//! paragraph): each item, in order, is compared with the next number on that line (numbers in code
//! spans and glued to a word, as in `f16` or `GPT-2`, are not counted; a date is one number, a
//! range such as `1.00-1.05` two), `_` skips one. An item is a
//! figure, figures added (`a.x+a.y`), or two of those divided (`a/b`; either may be a number as
//! written, a figure given from elsewhere; never a figure over itself, which is 1 whatever the
//! code computes), optionally with a unit it is shown in (`B`, `KiB`, `MiB`, `GiB`, `billion` for
//! a count, `%` for a share). The computed value is rounded to the documented number's decimals;
//! thousands separators are ignored.
//!
//! Measurements (timings, real runs, PyTorch's tracker) cannot be recomputed here: a block (a
//! paragraph, a table, one item of a list) that holds them is marked "measured DATE on
//! MACHINE", the date close after "measured", with the command that reproduces them in a code
//! span; a marked paragraph leads into the table or the list right after it (and a list right
//! after that table). A mark whose only commands are plans, planned searches or bench-analytic's
//! grid covers the time they took (under `time`, the process's memory too) and nothing they
//! print: those figures are the same on every machine and are checked, never marked. A figure
//! with a unit (bytes, time, a ratio, a percentage; in a code span too, unless the span is a
//! command, a flag or one setting) that no check covers, outside a marked block, fails the
//! check. `<!-- given "TEXT": WHY -->` exempts the figures inside TEXT on a line of the block
//! after it: inputs or limits (a budget, a card, a cap, a test's bar) or reference figures from
//! elsewhere, with WHY; a given whose block holds no such line is an error. `vramlab docs
//! --unmarked` lists those figures without computing any plan.
//!
//! The pages' plans model lavapipe's adapter (CI's): where the planning device models another,
//! a plan figure that differs is listed and does not fail.
//!
//! `figures NAME (full tier): plan ARGS` marks a plan of a sweep (the same run at 1, 2 and 4 GPUs
//! beside the 8 its PyTorch figure is compared at, a second model of one family, a whole recipe):
//! `--tier ci` checks every figure but those, `--tier full` only those, so the CI tier plans each
//! sweep's representative and the full tier the rest. A figure may not mix plans of both tiers.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::{Context, anyhow, bail};
use clap::Parser;
use serde_json::Value;
use vramlab::engine::memory::predict;
use vramlab::engine::presets::{PLAN_PRESETS, PRESETS};
use vramlab::engine::strategies::catalog::{self, CATALOG};
use vramlab::engine::{Gpu, plan};

use crate::args::{Cli, Command, DocsArgs, DocsTier};
use crate::bench_analytic::{self, GRID};

/// One documented figure and what the code computes for it.
pub struct Figure {
    pub file: String,
    pub line: usize,
    /// Which number of the line it is, from 0.
    pub index: usize,
    /// Whether a plan computes it (so it depends on the adapter the planning device models).
    pub from_plan: bool,
    pub item: String,
    pub documented: String,
    pub computed: String,
}

impl Figure {
    pub fn agrees(&self) -> bool {
        self.documented.replace(',', "") == self.computed.replace(',', "")
    }
}

/// Every checked figure of `args.files` (README.md and docs/*.md when none are given); with
/// `--check`, an error when any differs.
pub fn run(args: &DocsArgs) -> anyhow::Result<()> {
    let files = if args.files.is_empty() {
        default_files()?
    } else {
        args.files.clone()
    };
    let mut checker = Checker {
        tier: args.tier,
        positions_only: args.unmarked,
        ..Checker::default()
    };
    let mut pages = Vec::new();
    for file in &files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        pages.push((file.display().to_string(), text));
    }
    if !args.unmarked {
        checker.plan_ahead(
            pages
                .iter()
                .flat_map(|(_, text)| plan_commands(text, args.tier)),
        );
    }
    let mut figures = Vec::new();
    let mut unmarked_figures = Vec::new();
    for (name, text) in &pages {
        let page = checker.check_page(name, text)?;
        unmarked_figures.extend(unmarked(name, text, &page, &checker.left)?);
        figures.extend(page);
    }
    for unmarked in &unmarked_figures {
        let why = if unmarked.by_a_plan {
            "marked as measured by a plan or an estimate, which prints the same on every \
             machine: check it (`figures` and `check` lines)"
        } else {
            "neither checked nor in a block marked \"measured DATE on MACHINE ... `command`\""
        };
        println!(
            "{}:{}: {}: {why}",
            unmarked.file, unmarked.line, unmarked.figure
        );
    }
    // The pages' plans model lavapipe's adapter, as CI's planning device does; on another
    // adapter a plan may differ by its alignment or its kernels, and is reported, not failed.
    let other_adapter = checker
        .plans
        .values()
        .find_map(|plan| at_path(plan, "adapter.name")?.as_str().map(str::to_owned))
        .filter(|name| !name.contains(DOCUMENTED_ADAPTER));
    let excused = |f: &Figure| f.from_plan && other_adapter.is_some();
    let differ: Vec<&Figure> = figures
        .iter()
        .filter(|f| !f.agrees())
        .filter(|f| !excused(f))
        .collect();
    if let Some(name) = &other_adapter {
        println!(
            "the planning device models {name}, not {DOCUMENTED_ADAPTER} as the pages' plans do: \
             plan figures that differ are listed, not failed"
        );
    }
    for figure in &figures {
        if !args.check || !figure.agrees() {
            println!(
                "{}:{}: {}: documented {}, computed {}{}",
                figure.file,
                figure.line,
                figure.item,
                figure.documented,
                figure.computed,
                if figure.agrees() { "" } else { "  <- differs" }
            );
        }
    }
    let left = match args.tier {
        DocsTier::All => String::new(),
        DocsTier::Ci => format!("; {} left to the full tier", checker.left.len()),
        DocsTier::Full => format!("; {} left to the CI tier", checker.left.len()),
    };
    println!(
        "{} figures checked in {} files ({} plans and estimates); {} differ; {} unmarked{left}",
        figures.len(),
        files.len(),
        checker.plans.len(),
        differ.len(),
        unmarked_figures.len(),
    );
    if (args.check || args.unmarked) && !unmarked_figures.is_empty() {
        bail!(
            "{} figures are neither checked nor marked as measured: {}",
            unmarked_figures.len(),
            unmarked_figures
                .iter()
                .map(|u| format!("{}:{} {}", u.file, u.line, u.figure))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    if args.check && !differ.is_empty() {
        bail!(
            "{} documented figures differ from what the code computes: {}",
            differ.len(),
            differ
                .iter()
                .map(|f| format!(
                    "{}:{} {} (documented {}, computed {})",
                    f.file, f.line, f.item, f.documented, f.computed
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    Ok(())
}

/// README.md and docs/*.md under the current directory (the repository's root).
fn default_files() -> anyhow::Result<Vec<PathBuf>> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir("docs")
        .context("docs/ in the current directory: run from the repository's root")?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    let mut files = vec![PathBuf::from("README.md")];
    files.extend(pages);
    Ok(files)
}

/// A `figures` line: the command whose JSON its name stands for, and whether it is one of the
/// full tier's plans.
struct Source {
    command: String,
    full_tier: bool,
}

/// The plans computed so far, by their command line, so pages that share one plan it once.
#[derive(Default)]
struct Checker {
    plans: HashMap<String, Value>,
    planner: Option<Gpu>,
    /// The figures this check checks.
    tier: DocsTier,
    /// Where the figures of the other tier stand: (file, line, which number of the line).
    left: Vec<(String, usize, usize)>,
    /// Whether to note where checked figures stand (in `left`) without computing them.
    positions_only: bool,
    /// bench-analytic's grid, planned the first time a figure names it.
    grid: Option<Vec<bench_analytic::Row>>,
}

impl Checker {
    /// Plans every `plan` command of `commands` not planned yet, each in a `vramlab plan
    /// --json` process of its own: what a reader running the command gets (in one process,
    /// plans share the pools' pages, and a reserved figure came out a GiB above the command's).
    /// One after the other: two at once on two cores took the whole check 5 min 57 s where one
    /// at a time took 3 min 38 s (each process compiles its own kernels and keeps more than a
    /// core busy). A command whose process fails or outlives [`PLAN_SECONDS`] is said so, with
    /// its error, and left to [`Self::plan`], which plans it here (sharing this process's
    /// pools) and reports its error.
    fn plan_ahead(&mut self, commands: impl Iterator<Item = String>) {
        let mut queue: Vec<String> = commands
            .filter(|command| command.starts_with("plan ") && !self.plans.contains_key(command))
            .collect();
        queue.sort();
        queue.dedup();
        let Ok(exe) = std::env::current_exe() else {
            return;
        };
        for command in queue {
            match plan_process(&exe, &command) {
                Ok(value) => {
                    self.plans.insert(command, value);
                }
                Err(why) => eprintln!(
                    "docs --check: `{command}` in a process of its own: {why:#}; planned in \
                     this one instead"
                ),
            }
        }
    }

    fn check_page(&mut self, file: &str, text: &str) -> anyhow::Result<Vec<Figure>> {
        let at = |line: usize| format!("{file}:{line}");
        // This page's source names and the commands they stand for.
        let mut sources: HashMap<String, Source> = HashMap::new();
        // Check lines waiting for their line: where they are, the row they name, their items.
        let mut pending: Vec<(usize, Option<String>, Vec<String>)> = Vec::new();
        let mut figures = Vec::new();
        // Whether a code span opened on an earlier line of the paragraph is still open.
        let mut open_span = false;
        for (index, line) in text.lines().enumerate() {
            let number = index + 1;
            let trimmed = line.trim();
            if trimmed.is_empty() {
                open_span = false;
            }
            if let Some(rest) = comment(trimmed, "figures") {
                let (name, command) = rest
                    .split_once(':')
                    .ok_or_else(|| anyhow!("{}: expected `figures NAME: plan ARGS`", at(number)))?;
                let (name, full_tier) = source_name(name);
                let command = command.trim().to_string();
                sources.insert(name.to_string(), Source { command, full_tier });
                continue;
            }
            if let Some(rest) = comment(trimmed, "check") {
                let (row, items) = check_line(rest).ok_or_else(|| {
                    anyhow!(
                        "{}: expected `check: ITEMS` or `check \"ROW\": ITEMS`",
                        at(number)
                    )
                })?;
                pending.push((number, row, items));
                continue;
            }
            if trimmed.is_empty() || trimmed.starts_with("<!--") {
                continue;
            }
            if trimmed.starts_with('#')
                && let Some((from, _, _)) = pending.first()
            {
                bail!(
                    "{}: a check line found no line to check before the next heading",
                    at(*from)
                );
            }
            // The first check line without a row takes this line; a row takes the first that
            // holds it.
            let mut taken = Vec::new();
            let mut unlabelled_taken = false;
            for (slot, (_, row, _)) in pending.iter().enumerate() {
                let takes = match row {
                    Some(row) => trimmed.contains(row.as_str()),
                    None => !unlabelled_taken,
                };
                if takes {
                    unlabelled_taken |= row.is_none();
                    taken.push(slot);
                }
            }
            let read = if open_span {
                format!("`{line}")
            } else {
                line.to_string()
            };
            open_span ^= line.matches('`').count() % 2 == 1;
            for slot in taken.into_iter().rev() {
                let (_, _, items) = pending.remove(slot);
                figures.extend(self.check_line_figures(file, number, &read, &items, &sources)?);
            }
        }
        if let Some((from, _, _)) = pending.first() {
            bail!("{}: a check line found no line to check", at(*from));
        }
        figures.sort_by_key(|f| f.line);
        Ok(figures)
    }

    /// `items` against the numbers of `line`, in order.
    fn check_line_figures(
        &mut self,
        file: &str,
        number: usize,
        line: &str,
        items: &[String],
        sources: &HashMap<String, Source>,
    ) -> anyhow::Result<Vec<Figure>> {
        let numbers = numbers(line);
        if numbers.len() < items.len() {
            bail!(
                "{file}:{number}: {} items to check but {} numbers on the line",
                items.len(),
                numbers.len()
            );
        }
        let mut figures = Vec::new();
        for (index, (item, documented)) in items.iter().zip(&numbers).enumerate() {
            if item == "_" {
                continue;
            }
            let full_tier =
                item_tier(item, sources).with_context(|| format!("{file}:{number}: {item}"))?;
            if self.positions_only || !self.tier.checks(full_tier) {
                self.left.push((file.to_string(), number, index));
                continue;
            }
            let computed = self
                .compute(item, sources)
                .with_context(|| format!("{file}:{number}: {item}"))?;
            // The grid's figures are plans too.
            let from_plan = referenced(item, sources)
                .any(|(_, source)| source.command.starts_with("plan "))
                || grid_item(item);
            figures.push(Figure {
                file: file.to_string(),
                line: number,
                index,
                from_plan,
                item: item.clone(),
                documented: documented.clone(),
                computed: shown_as(computed, documented),
            });
        }
        Ok(figures)
    }

    /// An item's value: a figure, or two divided (either may be a number as written), in its
    /// unit.
    fn compute(&mut self, item: &str, sources: &HashMap<String, Source>) -> anyhow::Result<f64> {
        let (expression, unit) = match item.rsplit_once(' ') {
            Some((expression, unit)) => (expression.trim(), unit_bytes(unit)?),
            None => (item, 1.0),
        };
        let value = match expression.split_once('/') {
            Some((a, b)) => self.sum(a, sources)? / self.sum(b, sources)?,
            None => self.sum(expression, sources)?,
        };
        Ok(value / unit)
    }

    /// Figures added (`a.words+a.scales`), or one figure.
    fn sum(&mut self, terms: &str, sources: &HashMap<String, Source>) -> anyhow::Result<f64> {
        terms
            .split('+')
            .map(|term| self.figure(term.trim(), sources))
            .sum()
    }

    fn figure(&mut self, path: &str, sources: &HashMap<String, Source>) -> anyhow::Result<f64> {
        // A figure measured elsewhere and given beside it (PyTorch's, say): a plan divided by it
        // stays checked as the plan changes.
        if let Ok(given) = path.parse::<f64>() {
            return Ok(given);
        }
        let count = |n: usize| Ok(n as f64);
        match path {
            "catalog.claims" => return count(catalog::claims().count()),
            "catalog.strategies" => return count(CATALOG.len()),
            "grid.configs" => return count(GRID.len()),
            "presets.count" => return count(PRESETS.len() + PLAN_PRESETS.len()),
            _ => {}
        }
        if let Some(field) = path.strip_prefix("grid.") {
            return self.grid_figure(field);
        }
        let (name, field) = path
            .split_once('.')
            .ok_or_else(|| anyhow!("expected SOURCE.FIELD"))?;
        let command = &sources
            .get(name)
            .ok_or_else(|| anyhow!("no `figures {name}: ...` line above on this page"))?
            .command;
        let plan = self.plan(command)?;
        number_at(plan, field)
    }

    /// A figure of bench-analytic's grid (`vramlab bench-analytic`, planned here once):
    /// `compared` and `within` (the estimate within its tolerance) count the figures compared,
    /// over the grid or one family (`mlp.within`); `FAMILY.CATEGORY.min` and `.max` are the
    /// lowest and highest estimate / plan among the family's compared figures of a category;
    /// `FAMILY.N.CATEGORY` is the family's Nth config's (from 0) ratio, with `.predicted` or
    /// `.planned` its bytes.
    fn grid_figure(&mut self, field: &str) -> anyhow::Result<f64> {
        if self.grid.is_none() {
            eprintln!(
                "docs --check: planning bench-analytic's grid ({} configs)",
                GRID.len()
            );
            let rows = bench_analytic::rows(self.planner()?, &[], |_| {})?;
            self.grid = Some(rows);
        }
        let rows = self.grid.as_deref().expect("planned above");
        let parts: Vec<&str> = field.split('.').collect();
        let of_family = |family: &str| -> anyhow::Result<Vec<&bench_analytic::Row>> {
            let rows: Vec<&bench_analytic::Row> =
                rows.iter().filter(|row| row.family == family).collect();
            if rows.is_empty() {
                bail!("the grid has no family {family:?}");
            }
            Ok(rows)
        };
        let count = |rows: Vec<&bench_analytic::Row>, within: bool| {
            let figures = rows.iter().flat_map(|row| &row.figures);
            figures
                .filter(|f| f.compared() && (!within || f.agrees()))
                .count() as f64
        };
        let value = match parts.as_slice() {
            [what @ ("compared" | "within")] => count(rows.iter().collect(), *what == "within"),
            [family, what @ ("compared" | "within")] => {
                count(of_family(family)?, *what == "within")
            }
            [family, category, end @ ("min" | "max")] => {
                let ratios = of_family(family)?
                    .into_iter()
                    .flat_map(|row| &row.figures)
                    .filter(|f| f.category == *category && f.compared())
                    .map(|f| f.ratio());
                let pick = if *end == "min" { f64::min } else { f64::max };
                ratios
                    .reduce(pick)
                    .ok_or_else(|| anyhow!("no compared {category} figure in {family}"))?
            }
            [family, index, category, rest @ ..] => {
                let index: usize = index.parse().context("a config's number in its family")?;
                let row = of_family(family)?
                    .into_iter()
                    .nth(index)
                    .ok_or_else(|| anyhow!("{family} has no config {index}"))?;
                let figure = row
                    .figures
                    .iter()
                    .find(|f| f.category == *category)
                    .ok_or_else(|| anyhow!("no {category} figure"))?;
                match rest {
                    [] => figure.ratio(),
                    ["predicted"] => figure.predicted as f64,
                    ["planned"] => figure.planned as f64,
                    _ => bail!("grid.{field}: expected ratio, .predicted or .planned"),
                }
            }
            _ => bail!("grid.{field}: not a figure of the grid"),
        };
        Ok(value)
    }

    /// The JSON of `command`: `plan ARGS`, what `vramlab plan ARGS --json` prints, or
    /// `estimate ARGS`, the analytic model's prediction for the config those flags give (no
    /// plan: cheap for models of billions of parameters).
    /// The planning device, started the first time a figure needs a plan made here.
    fn planner(&mut self) -> anyhow::Result<&Gpu> {
        if self.planner.is_none() {
            self.planner = Some(vramlab::engine::device::planner()?);
        }
        Ok(self.planner.as_ref().expect("started above"))
    }

    fn plan(&mut self, command: &str) -> anyhow::Result<&Value> {
        if !self.plans.contains_key(command) {
            let (kind, flags) = command.split_once(' ').unwrap_or((command, ""));
            let mut words = vec!["vramlab", "plan"];
            words.extend(flags.split_whitespace());
            let cli = Cli::try_parse_from(&words).with_context(|| format!("`{command}`"))?;
            let Some(Command::Plan(args)) = cli.command else {
                unreachable!("parsed as `vramlab plan`");
            };
            let config = args.resolve()?;
            let value = match kind {
                "plan" => serde_json::to_value(pollster::block_on(plan::plan(
                    &config,
                    self.planner()?,
                    |_| {},
                ))?)?,
                "estimate" => serde_json::to_value(predict(&config))?,
                other => bail!("`{command}`: {other:?} computes no figures (plan, estimate)"),
            };
            self.plans.insert(command.to_string(), value);
        }
        Ok(&self.plans[command])
    }
}

/// Seconds a plan's process may take before it is stopped (the longest page plan takes 40).
const PLAN_SECONDS: u64 = 600;

/// `vramlab plan ARGS --json` (ARGS from `command`, `plan ARGS`) in a process of its own, its
/// output in temporary files (a plan's JSON outgrows a pipe's buffer while it is waited for).
fn plan_process(exe: &std::path::Path, command: &str) -> anyhow::Result<Value> {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    static PROCESSES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = PROCESSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = |what: &str| {
        std::env::temp_dir().join(format!("vramlab-docs-{}-{n}.{what}", std::process::id()))
    };
    let (out_path, err_path) = (file("json"), file("err"));
    let flags: Vec<&str> = command
        .trim_start_matches("plan ")
        .split_whitespace()
        .collect();
    let mut child = Command::new(exe)
        .arg("plan")
        .args(&flags)
        .args((!flags.contains(&"--json")).then_some("--json"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path)?)
        .stderr(std::fs::File::create(&err_path)?)
        .spawn()
        .context("starting vramlab plan")?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > Duration::from_secs(PLAN_SECONDS) {
            let _ = child.kill();
            let _ = child.wait();
            let _ = (
                std::fs::remove_file(&out_path),
                std::fs::remove_file(&err_path),
            );
            bail!("stopped after {PLAN_SECONDS} s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = std::fs::read(&out_path);
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = (
        std::fs::remove_file(&out_path),
        std::fs::remove_file(&err_path),
    );
    if !status.success() {
        bail!("{status}: {}", stderr.trim());
    }
    serde_json::from_slice(&stdout?).context("reading the plan's JSON")
}

/// The commands a page's `figures` lines name, of the plans `tier` checks.
fn plan_commands(text: &str, tier: DocsTier) -> Vec<String> {
    text.lines()
        .filter_map(|line| comment(line.trim(), "figures"))
        .filter_map(|rest| rest.split_once(':'))
        .filter(|(name, _)| tier.checks(source_name(name).1))
        .map(|(_, command)| command.trim().to_string())
        .collect()
}

/// A `figures` line's name, and whether it is marked `(full tier)`.
fn source_name(name: &str) -> (&str, bool) {
    let name = name.trim();
    match name.strip_suffix("(full tier)") {
        Some(plain) => (plain.trim(), true),
        None => (name, false),
    }
}

/// The sources an item's figures come from (`a.field`, `a.field/b.field`, with or without a
/// unit), by name; numbers as written and built-in figures name none.
fn referenced<'a>(
    item: &'a str,
    sources: &'a HashMap<String, Source>,
) -> impl Iterator<Item = (&'a str, &'a Source)> {
    terms(item)
        .filter_map(|term| term.split_once('.'))
        .filter_map(|(name, _)| Some((name, sources.get(name)?)))
}

/// Whether an item is a figure of the full tier's plans: refused when it divides one of them by
/// a plan of the CI tier, which neither tier alone would plan both of.
fn item_tier(item: &str, sources: &HashMap<String, Source>) -> anyhow::Result<bool> {
    let expression = expression(item);
    // bench-analytic's grid plans 48 configs (minutes): its figures are the full tier's.
    let grid = grid_item(item);
    // A figure over itself is 1 whatever the code computes: a check that cannot fail. Two
    // names for one command are one plan.
    let resolved = |side: &str| {
        let side = side.trim();
        match side.split_once('.') {
            Some((name, field)) => match sources.get(name) {
                Some(source) => format!("{} {field}", source.command),
                None => side.to_string(),
            },
            None => side.to_string(),
        }
    };
    if let Some((a, b)) = expression.split_once('/')
        && resolved(a) == resolved(b)
    {
        bail!("{a} divided by itself is always 1: write the row's base as text, unchecked");
    }
    let tiers: Vec<(&str, bool)> = referenced(item, sources)
        .map(|(name, source)| (name, source.full_tier))
        .collect();
    if let [(a, true), (b, false)] | [(b, false), (a, true)] = tiers.as_slice() {
        bail!("{a} is the full tier's plan and {b} the CI tier's: mark both or neither");
    }
    if let Some((name, _)) = tiers.iter().find(|(_, full)| grid && !full) {
        bail!(
            "bench-analytic's grid is the full tier's and {name} the CI tier's: mark both or neither"
        );
    }
    Ok(grid || tiers.iter().any(|(_, full)| *full))
}

/// Whether an item names one of bench-analytic's grid's figures (not its count of configs).
fn grid_item(item: &str) -> bool {
    terms(item).any(|term| term.starts_with("grid.") && term != "grid.configs")
}

/// An item without the unit it is shown in (`a.x/b.y` of `a.x/b.y GiB`).
fn expression(item: &str) -> &str {
    item.rsplit_once(' ')
        .map_or(item, |(expression, _)| expression)
}

/// The figures an item divides or adds (`a.x`, `b.y`, a number as written), trimmed.
fn terms(item: &str) -> impl Iterator<Item = &str> {
    expression(item).split(['/', '+']).map(str::trim)
}

/// A check line's row (`"| parameters |"`: the next line holding it; none: the next line) and
/// its items.
fn check_line(rest: &str) -> Option<(Option<String>, Vec<String>)> {
    let (row, items) = if let Some(quoted) = rest.strip_prefix('"') {
        let (row, after) = quoted.split_once('"')?;
        (Some(row.to_string()), after.trim_start().strip_prefix(':')?)
    } else {
        (None, rest.strip_prefix(':')?)
    };
    let items = items.split(';').map(|i| i.trim().to_string()).collect();
    Some((row, items))
}

/// The text of an HTML comment line `<!-- KEYWORD rest -->`, after the keyword.
fn comment<'a>(line: &'a str, keyword: &str) -> Option<&'a str> {
    line.strip_prefix("<!--")?
        .strip_suffix("-->")?
        .trim()
        .strip_prefix(keyword)
        .map(str::trim)
}

fn unit_bytes(unit: &str) -> anyhow::Result<f64> {
    Ok(match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        // A count in billions, as "0.25 B parameters" reads.
        "billion" => 1e9,
        // A share in percent: a ratio times 100.
        "%" => 0.01,
        other => bail!("unknown unit {other:?} (B, KiB, MiB, GiB, billion, %)"),
    })
}

/// The number at `path` in `value` ([`at_path`]), where `list[].field` is the sum of `field` over
/// every element of `list` (the bytes kept by every op).
fn number_at(value: &Value, path: &str) -> anyhow::Result<f64> {
    if let Some((list, field)) = path.split_once("[].") {
        let elements = at_path(value, list)
            .and_then(Value::as_array)
            .ok_or_else(|| anyhow!("the plan has no list {list}"))?;
        return elements.iter().map(|e| number_at(e, field)).sum();
    }
    let found = at_path(value, path).ok_or_else(|| anyhow!("the plan has no {path}"))?;
    found
        .as_f64()
        .ok_or_else(|| anyhow!("{path} is not a number: {found}"))
}

/// A field of `value` by a dotted path; `[key=text]` picks the element of a list whose `key` is
/// `text`, `[N]` its element N (from 0).
fn at_path<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    let mut here = value;
    for part in path.split('.') {
        let (name, pick) = match part.split_once('[') {
            Some((name, pick)) => (name, Some(pick.strip_suffix(']')?)),
            None => (part, None),
        };
        here = here.get(name)?;
        if let Some(index) = pick.and_then(|pick| pick.parse::<usize>().ok()) {
            here = here.as_array()?.get(index)?;
        } else if let Some(pick) = pick {
            let (key, text) = pick.split_once('=')?;
            here = here
                .as_array()?
                .iter()
                .find(|e| e.get(key).and_then(Value::as_str) == Some(text))?;
        }
    }
    Some(here)
}

/// The numbers of a line as written (`124,439,808`, `24.63`), outside code spans, skipping
/// digits glued to a word (`f16`, `GPT-2`, `x2`): the numbers a `check` line's items take in
/// order.
fn numbers(line: &str) -> Vec<String> {
    numbers_and_units(line)
        .into_iter()
        .filter(|found| !found.in_code)
        .map(|found| found.text)
        .collect()
}

/// A number as a line shows it.
#[derive(Debug, PartialEq)]
struct Found {
    text: String,
    /// The unit of [`UNITS`] that follows it, if one does.
    unit: Option<&'static str>,
    in_code: bool,
    /// Where it starts in the line, in characters.
    at: usize,
}

/// Units that make a number a figure a reader would take as measured or computed.
const UNITS: &[&str] = &[
    "GiB", "MiB", "KiB", "GB", "MB", "KB", "kB", "B", "ms", "s", "x", "%", "min", "minutes",
    "seconds", "hours",
];

/// Words a code span starts with when it is a command a reader types, whose numbers are its
/// inputs (`vramlab plan --budget 24GiB`), not figures.
const COMMANDS: &[&str] = &[
    "vramlab",
    "bash",
    "node",
    "cargo",
    "time",
    "/usr/bin/time",
    "python",
    "python3",
    "git",
    "perf",
    "trunk",
    "npm",
    "npx",
    "curl",
    "tune",
    "accelerate",
    "axolotl",
    "trl",
    "du",
    "RUSTC_BOOTSTRAP=1",
    "llamafactory-cli",
    "heaptrack",
];

/// Whether a code span states inputs rather than figures: a command, a flag, or one field set
/// to a value (`batch_size=4`, `micro_batch_size: 2`). Anything else in a code span (a
/// program's output quoted, a value) is read for figures.
fn input_span(span: &str) -> bool {
    let span = span.trim();
    let first = span.split_whitespace().next().unwrap_or_default();
    let setting = |separator: &str| {
        span.split_once(separator).is_some_and(|(key, value)| {
            let (key, value) = (key.trim(), value.trim());
            !key.is_empty()
                && !key.contains(char::is_whitespace)
                && !value.is_empty()
                && !value.contains(char::is_whitespace)
        })
    };
    COMMANDS.contains(&first)
        || span.starts_with('-')
        || span.contains(" --")
        || setting("=")
        || setting(":")
        || (first.contains('/') && !first.starts_with('/') && span == first)
}

/// [`numbers`] and the numbers inside code spans that are not commands or settings
/// ([`input_span`]), each with the unit of [`UNITS`] that follows it (`24.63 GiB`, `1.03x`,
/// `12%`), whether it is in a code span and where it starts.
fn numbers_and_units(line: &str) -> Vec<Found> {
    let mut found = Vec::new();
    let mut offset = 0;
    for (index, segment) in line.split('`').enumerate() {
        let in_code = index % 2 == 1;
        if !(in_code && input_span(segment)) {
            found.extend(
                segment_numbers(segment)
                    .into_iter()
                    .map(|(text, unit, at)| Found {
                        text,
                        unit,
                        in_code,
                        at: offset + at,
                    }),
            );
        }
        offset += segment.chars().count() + 1;
    }
    found
}

/// The numbers of a stretch of text without code spans, each with the unit that follows it and
/// where it starts. A date (`2026-11-25`) is one number; a range (`1.00-1.05`, `15-30`) two.
fn segment_numbers(text: &str) -> Vec<(String, Option<&'static str>, usize)> {
    let mut found = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    // Where the last number ended: a `-` right after it and a digit make a range.
    let mut last_ended = None;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let ranged = i > 0 && chars[i - 1] == '-' && last_ended == Some(i - 1);
        let glued =
            i > 0 && !ranged && (chars[i - 1].is_alphanumeric() || "_-^.".contains(chars[i - 1]));
        if !c.is_ascii_digit() || glued {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() {
            let next = chars.get(i + 1).copied();
            let after = chars.get(i + 2).copied();
            match chars[i] {
                d if d.is_ascii_digit() => i += 1,
                ',' | '.' if next.is_some_and(|n| n.is_ascii_digit()) => {
                    // A comma between groups of three, or a decimal point; not a list's comma.
                    if chars[i] == ','
                        && !(next.is_some() && after.is_some_and(|a| a.is_ascii_digit()))
                    {
                        break;
                    }
                    i += 1;
                }
                _ => break,
            }
        }
        let number: String = chars[start..i].iter().collect();
        let rest: String = chars[i..].iter().collect();
        // A date's month and day belong to its year.
        let date = number.len() == 4
            && rest.len() >= 6
            && rest.chars().take(6).enumerate().all(|(n, c)| match n {
                0 | 3 => c == '-',
                _ => c.is_ascii_digit(),
            });
        if date {
            found.push((number, None, start));
            i += 6;
            last_ended = None;
            continue;
        }
        last_ended = Some(i);
        let ends = |text: &str, unit: &str| {
            text.strip_prefix(unit)
                .is_some_and(|after| !after.starts_with(|c: char| c.is_alphanumeric()))
        };
        // `0.81x` is a ratio, `2 x L` a product; `7B` a model's size, `7 B` bytes.
        let unit = UNITS
            .iter()
            .find(|unit| **unit != "B" && ends(&rest, unit))
            .or_else(|| {
                let spaced = rest.strip_prefix(' ')?;
                UNITS
                    .iter()
                    .find(|unit| **unit != "x" && ends(spaced, unit))
            })
            .copied();
        found.push((number, unit, start));
        // Skip the rest of a word the number runs into (`8x`, `4kB`): not another number.
        while i < chars.len() && chars[i].is_alphanumeric() {
            i += 1;
        }
    }
    found
}

/// The adapter the pages' plans model (lavapipe, CI's).
const DOCUMENTED_ADAPTER: &str = "llvmpipe";

/// A figure with a unit that no check covers, in a block no measurement mark covers.
#[derive(Debug)]
pub struct Unmarked {
    pub file: String,
    pub line: usize,
    pub figure: String,
    /// Marked as measured by a plan or an estimate, which are checked, not measured.
    pub by_a_plan: bool,
    unit: &'static str,
    /// The words around the figure (its line and the next): a timed plan's process memory says
    /// so.
    around: String,
}

/// Words that name the machine a measurement was taken on.
const MACHINES: &[&str] = &[
    "machine",
    "lavapipe",
    "llvmpipe",
    "SwiftShader",
    "Chromium",
    "H200",
    "NVIDIA",
];

/// Units of time: what a plan's own run takes is measured on a machine, unlike its bytes.
const TIMES: &[&str] = &["ms", "s", "min", "minutes", "seconds", "hours"];

/// What a timed plan measures beside its time: the process's memory.
const PROCESS_MEMORY: &[&str] = &["process memory", "of memory", "resident", "RSS"];

/// How a block marks its figures.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mark {
    /// No mark: its figures are checked or unmarked.
    None,
    /// "measured" and a date (YYYY-MM-DD) close after it, the machine (one of [`MACHINES`])
    /// and, in a code span, a command that measures them.
    Measured,
    /// Marked as measured with only plans, planned searches or bench-analytic's grid for its
    /// commands: the time they took is measured (and, `timed` under `time`, the process's
    /// memory), but the bytes, counts and ratios they print are the same on every machine, so
    /// they are checked, never marked.
    ByAPlan { timed: bool },
}

/// The commands a block names in code spans (a code span whose first word is a command).
fn commands(block: &str) -> impl Iterator<Item = &str> {
    block.split('`').skip(1).step_by(2).filter(|span| {
        let first = span.split_whitespace().next().unwrap_or_default();
        COMMANDS.contains(&first)
    })
}

/// A command without what runs it: `time`, `/usr/bin/time -v`, `VAR=value`. The second is
/// whether it was timed.
fn untimed(command: &str) -> (Vec<&str>, bool) {
    let mut words: Vec<&str> = command.split_whitespace().collect();
    let mut timed = false;
    loop {
        match words.first() {
            Some(&"time" | &"/usr/bin/time") => {
                timed = true;
                words.remove(0);
                while words.first().is_some_and(|w| w.starts_with('-')) {
                    words.remove(0);
                }
            }
            Some(word) if word.contains('=') && !word.starts_with('-') => {
                words.remove(0);
            }
            _ => return (words, timed),
        }
    }
}

/// Whether a command computes what every machine computes alike: a plan, a planned search (not
/// one `--compare`d with real trials), bench-analytic's grid of plans, the docs' own check. Run
/// under `time`, the time it took is a measurement; what it prints is not.
fn deterministic(command: &str) -> bool {
    let (words, _) = untimed(command);
    matches!(
        words.as_slice(),
        ["vramlab", "plan", ..]
            | ["vramlab", "docs", ..]
            | ["vramlab", "presets", ..]
            | ["vramlab", "bench-analytic", ..]
    ) || (words.starts_with(&["vramlab", "find-batch"])
        && words.contains(&"--plan")
        && !words.contains(&"--compare"))
}

/// Whether "measured" is followed closely by a date (YYYY-MM-DD): the phrase "measured
/// 2026-11-25 on ...", not the two words anywhere in a block.
fn dated_measurement(block: &str) -> bool {
    let lower = block.to_lowercase();
    lower.match_indices("measured").any(|(at, _)| {
        let close: String = lower[at..].chars().take(60).collect();
        close.as_bytes().windows(10).any(|w| {
            w.iter().enumerate().all(|(i, b)| match i {
                4 | 7 => *b == b'-',
                _ => b.is_ascii_digit(),
            })
        })
    })
}

fn measurement_marker(block: &str) -> Mark {
    let on_a_machine = MACHINES.iter().any(|machine| block.contains(machine));
    let commands: Vec<&str> = commands(block).collect();
    if !(dated_measurement(block) && on_a_machine && !commands.is_empty()) {
        return Mark::None;
    }
    if commands.iter().all(|command| deterministic(command)) {
        Mark::ByAPlan {
            timed: commands.iter().any(|command| untimed(command).1),
        }
    } else {
        Mark::Measured
    }
}

/// Whether a block is a table's rows.
fn table(block: &str) -> bool {
    block.trim_start().starts_with('|')
}

/// Whether a line starts a list's item (`- `, `* `, `1. `).
fn list_item(line: &str) -> bool {
    let first = line.trim_start();
    first.starts_with("- ")
        || first.starts_with("* ")
        || first
            .split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// The words on either side of the number at `at` (of `len` characters) in `line`, each up to
/// the next number or 40 characters: what the figure is of ("490 MB of process memory").
fn words_around(line: &str, at: usize, len: usize) -> String {
    let chars: Vec<char> = line.chars().collect();
    let before: String = chars[..at.min(chars.len())]
        .iter()
        .rev()
        .take_while(|c| !c.is_ascii_digit())
        .take(40)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let after: String = chars
        .iter()
        .skip(at + len)
        .take_while(|c| !c.is_ascii_digit())
        .take(40)
        .collect();
    format!("{before} {after}")
}

/// A `<!-- given "TEXT": WHY -->` waiting for its line in the next block.
struct Given {
    text: String,
    /// The comment's line, for the error when no line of the next block holds TEXT.
    line: usize,
    /// Whether a block has begun since the comment: the given belongs to that block.
    armed: bool,
}

/// The figures of `text` with a unit that `figures` do not check (in this tier or, `left`, the
/// other), in blocks that hold no measurement mark and follow no marked lead-in. A block is a
/// paragraph, a table, or one item of a list; a marked paragraph leads into the table, or the
/// list's items, right after it. Code blocks are commands, not figures. `<!-- given "TEXT":
/// WHY -->` exempts the figures inside TEXT on a line of the next block (inputs or limits the
/// code sets, a test's bar, a reference figure from elsewhere), and WHY says which; a given
/// that finds no such line is an error.
fn unmarked(
    file: &str,
    text: &str,
    figures: &[Figure],
    left: &[(String, usize, usize)],
) -> anyhow::Result<Vec<Unmarked>> {
    let left_here = left
        .iter()
        .filter(|(page, _, _)| page == file)
        .map(|(_, line, index)| (*line, *index));
    let checked: std::collections::HashSet<(usize, usize)> = figures
        .iter()
        .map(|f| (f.line, f.index))
        .chain(left_here)
        .collect();
    let mut found = Vec::new();
    // The block being read: its text and its figures no check covers.
    let mut block = String::new();
    let mut pending: Vec<Unmarked> = Vec::new();
    // The mark of the paragraph that leads into this block (a table, or a list's items).
    let mut lead_in: Option<Mark> = None;
    let mut fenced = false;
    let mut given: Vec<Given> = Vec::new();
    let mut close = |block: &mut String,
                     pending: &mut Vec<Unmarked>,
                     lead_in: &mut Option<Mark>,
                     given: &mut Vec<Given>|
     -> anyhow::Result<()> {
        if block.is_empty() {
            return Ok(());
        }
        if let Some(waiting) = given.iter().find(|g| g.armed) {
            bail!(
                "{file}:{}: a given found no line holding {:?} in the block after it",
                waiting.line,
                waiting.text
            );
        }
        let introduced = table(block) || list_item(block);
        let own = measurement_marker(block);
        // A table or a list's item takes the mark of the paragraph that leads into it.
        let mark = match (own, introduced.then_some(*lead_in).flatten()) {
            (Mark::Measured, _) | (_, Some(Mark::Measured)) => Mark::Measured,
            (Mark::ByAPlan { timed: a }, Some(Mark::ByAPlan { timed: b })) => {
                Mark::ByAPlan { timed: a || b }
            }
            (Mark::None, Some(led)) => led,
            (own, _) => own,
        };
        if mark != Mark::Measured {
            if let Mark::ByAPlan { timed } = mark {
                // The time a plan took is measured, and under `time` its process's memory;
                // what it prints is not.
                pending.retain(|figure| {
                    !(TIMES.contains(&figure.unit)
                        || (timed && PROCESS_MEMORY.iter().any(|m| figure.around.contains(m))))
                });
                for figure in pending.iter_mut() {
                    figure.by_a_plan = true;
                }
            }
            found.append(pending);
        }
        pending.clear();
        // A marked paragraph leads in; the table or list after it, and a list after that
        // table, go on being led; the next paragraph ends it.
        if !introduced {
            *lead_in = (own != Mark::None).then_some(own);
        }
        block.clear();
        Ok(())
    };
    let lines: Vec<&str> = text.lines().collect();
    for (index, line) in lines.iter().copied().enumerate() {
        let number = index + 1;
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if let Some(rest) = comment(trimmed, "given") {
            let Some((Some(row), _)) = check_line(rest) else {
                bail!("{file}:{number}: expected `given \"TEXT\": WHY`");
            };
            given.push(Given {
                text: row,
                line: number,
                armed: false,
            });
            continue;
        }
        if fenced || trimmed.starts_with("<!--") {
            continue;
        }
        let heading = trimmed.starts_with('#');
        if trimmed.is_empty() || heading || (list_item(line) && !block.is_empty()) {
            close(&mut block, &mut pending, &mut lead_in, &mut given)?;
            if heading {
                lead_in = None;
            }
            if trimmed.is_empty() || heading {
                continue;
            }
        }
        if block.is_empty() {
            for waiting in &mut given {
                waiting.armed = true;
            }
        }
        // A code span the line before left open goes on into this line.
        let continues_a_span = block.matches('`').count() % 2 == 1;
        block.push_str(line);
        block.push('\n');
        let read = if continues_a_span {
            format!("`{line}")
        } else {
            line.to_string()
        };
        // What a given on this line exempts: the characters of its TEXT.
        let mut exempt: Vec<std::ops::Range<usize>> = Vec::new();
        given.retain(|waiting| {
            let Some(byte) = read.find(waiting.text.as_str()) else {
                return true;
            };
            let from = read[..byte].chars().count();
            exempt.push(from..from + waiting.text.chars().count());
            false
        });
        // Read with the paragraph's next line after it: a number that ends this line takes
        // its unit from there, and a figure's words run on into it; its own numbers are the
        // next line's to count.
        let next = lines
            .get(index + 1)
            .copied()
            .filter(|next| {
                !next.trim().is_empty() && !next.trim_start().starts_with(['<', '#', '|'])
            })
            .unwrap_or_default();
        let with_next = format!("{read} {next}");
        let own = read.chars().count();
        let mut outside_code = 0;
        for found in numbers_and_units(&with_next)
            .into_iter()
            .take_while(|found| found.at < own)
        {
            let at = outside_code;
            outside_code += usize::from(!found.in_code);
            let Some(unit) = found.unit else { continue };
            if exempt.iter().any(|range| range.contains(&found.at)) {
                continue;
            }
            if found.in_code || !checked.contains(&(number, at)) {
                let around = words_around(&with_next, found.at, found.text.chars().count());
                pending.push(Unmarked {
                    file: file.to_string(),
                    line: number,
                    figure: found.text,
                    by_a_plan: false,
                    unit,
                    around,
                });
            }
        }
    }
    close(&mut block, &mut pending, &mut lead_in, &mut given)?;
    if let Some(waiting) = given.first() {
        bail!(
            "{file}:{}: a given found no line holding {:?}",
            waiting.line,
            waiting.text
        );
    }
    Ok(found)
}

/// `value` as `documented` shows it: as many decimals, thousands separators where it has them.
fn shown_as(value: f64, documented: &str) -> String {
    let decimals = documented.split_once('.').map_or(0, |(_, d)| d.len());
    let text = format!("{value:.decimals$}");
    if !documented.contains(',') {
        return text;
    }
    let (whole, fraction) = match text.split_once('.') {
        Some((w, f)) => (w.to_string(), format!(".{f}")),
        None => (text.clone(), String::new()),
    };
    let digits: Vec<char> = whole.chars().collect();
    let mut grouped = String::new();
    for (n, digit) in digits.iter().enumerate() {
        if n > 0 && (digits.len() - n).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(*digit);
    }
    grouped + &fraction
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_numbers_a_reader_sees() {
        let line = "| `gpt2-small` GPT-2 f16 | 124,439,808 | 24.63 GiB (backward; forward 23.10, \
                    optimizer 1.85) | 1.03x, 7 |";
        assert_eq!(
            numbers(line),
            ["124,439,808", "24.63", "23.10", "1.85", "1.03", "7"]
        );
        assert_eq!(numbers("1,2 and 3, 4"), ["1", "2", "3", "4"]);
        // A range is two numbers; a date one, and a word with digits none.
        assert_eq!(
            numbers("1.00-1.05, 6-10%, 2026-11-25, 2-core, Llama-3.1-8B"),
            ["1.00", "1.05", "6", "10", "2026", "2"]
        );
    }

    #[test]
    fn every_unit_counts_in_text_and_in_code_spans_but_not_in_commands() {
        let units = |line: &str| -> Vec<(String, Option<&str>, bool)> {
            numbers_and_units(line)
                .into_iter()
                .map(|found| (found.text, found.unit, found.in_code))
                .collect()
        };
        // A percentage is a figure; a number in a code span is one unless the span is a
        // command or one setting: quoted output is read.
        assert_eq!(
            units(
                "65% of `19.24 GiB`, `vramlab plan --budget 24GiB`, `batch_size=4` 3 cores, \
                 `the plan of even routing: 72.06 MiB`"
            ),
            [
                ("65".to_string(), Some("%"), false),
                ("19.24".to_string(), Some("GiB"), true),
                ("3".to_string(), None, false),
                ("72.06".to_string(), Some("MiB"), true),
            ]
        );
        // The numbers a check line's items take are outside code spans only.
        assert_eq!(numbers("65% of `19.24 GiB` and 7 s"), ["65", "7"]);
    }

    /// The figures `unmarked` lists for `page`, as (line, figure).
    fn listed(page: &str, figures: &[Figure]) -> Vec<(usize, String)> {
        unmarked("p.md", page, figures, &[])
            .unwrap()
            .into_iter()
            .map(|u| (u.line, u.figure))
            .collect()
    }

    #[test]
    fn a_figure_needs_a_check_or_a_measured_block() {
        let page = "# A\n\n<!-- check: catalog.claims -->\n3 claims in 5 s.\n\n# B\n\nIt took \
                    7 s (measured 2026-11-25 on lavapipe, `vramlab claims`).\n\n# C\n\n2 GiB, \
                    measured once.\n\n```sh\nvramlab --budget 4GiB\n```\n\n# D\n\n<!-- given \
                    \"cap of 256 MiB\": the cap the code sets -->\nA cap of 256 MiB.\n";
        let figures = vec![Figure {
            file: "p.md".into(),
            line: 4,
            index: 0,
            from_plan: false,
            item: "catalog.claims".into(),
            documented: "3".into(),
            computed: "3".into(),
        }];
        assert_eq!(
            listed(page, &figures),
            [(4, "5".to_string()), (12, "2".to_string())]
        );
    }

    #[test]
    fn a_mark_covers_its_own_block_and_the_table_it_leads_into_and_no_further() {
        let page = "# A\n\nA step took 7 s (measured 2026-11-25 on lavapipe, `vramlab \
                    train`):\n\n| step | 8 ms |\n\nThe next paragraph: 9 ms.\n\n| 10 ms |\n\n\
                    measured 2026-11-25 on the 2-core development machine, `bash .ci/test`:\n\
                    11 s\n";
        // The mark covers its paragraph and the table after it; the paragraph after that, and
        // the table that paragraph leads into, are not covered. A date without a machine or a
        // command is no mark.
        assert_eq!(
            listed(page, &[]),
            [(7, "9".to_string()), (9, "10".to_string())]
        );
        let no_machine = "A step took 7 s (measured 2026-11-25, `vramlab train`).\n";
        assert_eq!(listed(no_machine, &[]), [(1, "7".to_string())]);
        let no_command = "A step took 7 s (measured 2026-11-25 on lavapipe).\n";
        assert_eq!(listed(no_command, &[]), [(1, "7".to_string())]);
        // "measured" and a date far apart are no mark.
        let scattered = "Never measured, this 7 s: see the notes of the development machine, \
                         which `git log` dates 2026-11-25.\n";
        assert_eq!(listed(scattered, &[]), [(1, "7".to_string())]);
    }

    #[test]
    fn a_list_item_is_a_block_and_a_marked_paragraph_leads_into_the_whole_list() {
        let page = "Steps (measured 2026-11-25 on lavapipe, `vramlab train`):\n- 7 s\n- 8 s\n\n\
                    Other runs:\n- 9 s (measured 2026-11-25 on lavapipe, `vramlab train`)\n\
                    - 10 s\n";
        // The lead-in covers both items; a mark in one item covers that item only.
        assert_eq!(listed(page, &[]), [(7, "10".to_string())]);
        // A table's notes, a list right after it, are led in with it.
        let notes = "Runs (measured 2026-11-25 on lavapipe, `vramlab train`):\n\n| 7 s |\n\n\
                     - 8 s\n\nAnd 9 s.\n";
        assert_eq!(listed(notes, &[]), [(7, "9".to_string())]);
    }

    #[test]
    fn a_given_exempts_the_figures_of_its_text_in_the_next_block_only() {
        let page = "<!-- given \"within 10%\": the bar -->\nwithin 10% in 7 s\n";
        assert_eq!(listed(page, &[]), [(2, "7".to_string())]);
        let elsewhere = "<!-- given \"within 10%\": the bar -->\nA paragraph.\n\nwithin 10%\n";
        let error = unmarked("p.md", elsewhere, &[], &[]).unwrap_err();
        assert!(
            error.to_string().contains("p.md:1: a given found no line"),
            "{error}"
        );
    }

    #[test]
    fn a_plan_marked_as_measured_is_listed_but_the_time_it_took_is_not() {
        let page = "The plan holds 14.28 GiB, 0.99x of PyTorch's, and took 26 s (measured \
                    2026-11-28 on the 2-core development machine, `vramlab plan --preset x`).\n";
        let found = unmarked("p.md", page, &[], &[]).unwrap();
        let figures: Vec<(&str, bool)> = found
            .iter()
            .map(|u| (u.figure.as_str(), u.by_a_plan))
            .collect();
        assert_eq!(figures, [("14.28", true), ("0.99", true)]);
        assert_eq!(measurement_marker(page), Mark::ByAPlan { timed: false });
        // Timed, the same command measures its time and its process's memory, and still not
        // what it prints; nor does bench-analytic's grid of plans.
        let timed = page
            .replace("`vramlab plan", "`/usr/bin/time -v vramlab plan")
            .replace("26 s", "26 s and 490 MB of process memory");
        assert_eq!(
            listed(&timed, &[]),
            [(1, "14.28".to_string()), (1, "0.99".to_string())]
        );
        assert_eq!(measurement_marker(&timed), Mark::ByAPlan { timed: true });
        let grid = page.replace("`vramlab plan --preset x`", "`vramlab bench-analytic`");
        assert_eq!(listed(&grid, &[]).len(), 2);
        let ran = page.replace("`vramlab plan --preset x`", "`vramlab train --preset x`");
        assert_eq!(measurement_marker(&ran), Mark::Measured);
    }

    #[test]
    fn a_unit_on_the_next_line_and_a_code_span_across_lines_are_read() {
        let page = "from 1.27 to 1.03\nGiB, and `vramlab plan --budget\n24GiB --plan` ran.\n";
        assert_eq!(listed(page, &[]), [(1, "1.03".to_string())]);
    }

    #[test]
    fn shows_a_value_as_the_page_does() {
        assert_eq!(shown_as(124_439_808.0, "124,439,808"), "124,439,808");
        assert_eq!(shown_as(24.6312, "24.63"), "24.63");
        assert_eq!(shown_as(23.1, "23.10"), "23.10");
        assert_eq!(shown_as(28.6, "29"), "29");
        assert_eq!(shown_as(1234.5, "1,234.5"), "1,234.5");
    }

    #[test]
    fn picks_a_field_by_path() {
        let plan: Value = serde_json::json!({
            "params": 7,
            "by_phase": { "forward": 3 },
            "kept_by_op": [{ "op": "softmax", "bytes": 9 }, { "op": "gelu", "bytes": 5 }],
        });
        assert_eq!(at_path(&plan, "params"), Some(&Value::from(7)));
        assert_eq!(at_path(&plan, "by_phase.forward"), Some(&Value::from(3)));
        assert_eq!(
            at_path(&plan, "kept_by_op[op=gelu].bytes"),
            Some(&Value::from(5))
        );
        assert_eq!(at_path(&plan, "kept_by_op[op=nope].bytes"), None);
        assert_eq!(at_path(&plan, "kept_by_op[1].bytes"), Some(&Value::from(5)));
        assert_eq!(number_at(&plan, "kept_by_op[].bytes").unwrap(), 14.0);
        assert!(number_at(&plan, "nope[].bytes").is_err());
    }

    #[test]
    fn a_built_in_count_is_checked_against_the_line() {
        let mut checker = Checker::default();
        let claims = catalog::claims().count();
        let page = format!(
            "<!-- check: catalog.claims; _; catalog.claims -->\n<!-- check \"| b\": _; catalog.claims \
             -->\n\n{claims} claims, 3 ways, {} claims\n| a | 1 |\n| b | 2 | {claims} |\n",
            claims + 1
        );
        let figures = checker.check_page("page.md", &page).unwrap();
        assert_eq!(figures.len(), 3);
        assert!(figures[0].agrees());
        assert!(!figures[1].agrees());
        assert_eq!(figures[1].line, 4);
        assert_eq!(figures[1].computed, claims.to_string());
        assert_eq!(figures[2].line, 6);
        assert!(figures[2].agrees(), "the row's second number");
        let missing = checker.check_page(
            "page.md",
            "<!-- check: catalog.claims; catalog.claims -->\none 1\n",
        );
        assert!(missing.is_err());
    }

    #[test]
    fn a_figure_belongs_to_the_tier_of_its_plans_and_may_not_mix_them() {
        let source = |preset: &str, full_tier| Source {
            command: format!("plan --preset {preset}"),
            full_tier,
        };
        assert_eq!(source_name(" l8-2 (full tier) "), ("l8-2", true));
        assert_eq!(source_name("l8-8"), ("l8-8", false));
        let sources = HashMap::from([
            ("a".to_string(), source("gpt2-small", false)),
            ("b".to_string(), source("big-mlp", true)),
            ("same-as-a".to_string(), source("gpt2-small", false)),
        ]);
        assert!(!item_tier("a.params", &sources).unwrap());
        assert!(item_tier("b.high_water_in_use_bytes GiB", &sources).unwrap());
        assert!(item_tier("b.params/25349.9 MiB", &sources).unwrap());
        assert!(!item_tier("catalog.claims", &sources).unwrap());
        let mixed = item_tier("b.params/a.params", &sources).unwrap_err();
        assert!(
            mixed.to_string().contains("mark both or neither"),
            "{mixed}"
        );
        // A figure over itself, under one name or two for the same plan.
        for item in ["a.params/a.params", "same-as-a.params/a.params"] {
            let itself = item_tier(item, &sources).unwrap_err();
            assert!(itself.to_string().contains("divided by itself"), "{itself}");
        }
        assert!(!item_tier("a.params/same-as-a.high_water_in_use_bytes", &sources).unwrap());
        assert!(DocsTier::Ci.checks(false) && !DocsTier::Ci.checks(true));
        assert!(DocsTier::Full.checks(true) && !DocsTier::Full.checks(false));
    }
}
