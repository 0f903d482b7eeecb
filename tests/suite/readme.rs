//! The README and docs/ say what the code does: the commands they show parse with the binary's
//! own flags and resolve to valid configs (presets, fields and values that exist), their JSON
//! configs validate, their links and anchors resolve, their lists of strategies and lessons are
//! the catalog's, and the README stays short. Nothing here trains: it runs in milliseconds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clap::Parser;
use vramlab::engine::strategies::catalog::{self, CATALOG};
use vramlab::engine::{Purpose, RunConfig};

/// The binary's flags, compiled into this test so a command is checked by the parser `vramlab`
/// itself uses, without running it.
#[allow(dead_code)]
#[path = "../../src/bin/vramlab/args.rs"]
mod args;
/// What args.rs fetches a `--hf-config org/name` with.
#[allow(dead_code)]
#[path = "../../src/bin/vramlab/hub.rs"]
mod hub;
/// What args.rs reads a `--recipe` with.
#[allow(dead_code)]
#[path = "../../src/bin/vramlab/recipes.rs"]
mod recipes;
/// What args.rs reads a `--data` CSV with.
#[allow(dead_code)]
#[path = "../../src/bin/vramlab/table_file.rs"]
mod table_file;

use args::{Cli, Command, TrainArgs};

/// The README's size limit: a newcomer reads it in minutes; the reference lives in docs/.
const README_MAX_BYTES: usize = 10 * 1024;
/// The README's screenshot's size limit, so the clone stays light.
const SCREENSHOT_MAX_BYTES: u64 = 300 * 1024;

fn root() -> &'static Path {
    super::support::repo_root()
}

/// README.md and every page of docs/, with their text.
fn documents() -> Vec<(PathBuf, String)> {
    let mut paths = vec![root().join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ beside Cargo.toml")
        .map(|entry| entry.expect("a docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    paths.extend(pages);
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("a readable page");
            (path, text)
        })
        .collect()
}

fn name(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// A fenced code block: its info string, the line before it (what introduces it), its lines.
struct Block {
    info: String,
    intro: String,
    lines: Vec<String>,
}

fn blocks(text: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<Block> = None;
    let mut last_text = String::new();
    for line in text.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => {
                open = Some(Block {
                    info: info.trim().to_string(),
                    intro: last_text.clone(),
                    lines: Vec::new(),
                });
            }
            (Some(_), Some(_)) => found.extend(open.take()),
            (Some(block), None) => block.lines.push(line.to_string()),
            (None, None) => {
                if !line.trim().is_empty() {
                    last_text = line.to_string();
                }
            }
        }
    }
    found
}

/// A shell line's words, without a trailing `# comment`; quotes group words.
fn words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, '#') if !started => break,
            (None, c) if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

/// The arguments a shell line passes to `vramlab`, if it runs it.
fn vramlab_args(words: &[String]) -> Option<Vec<String>> {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["bash", ".ci/play", rest @ ..] if !rest.is_empty() && rest != ["--trunk"] => {
            Some(rest.iter().map(|w| w.to_string()).collect())
        }
        [bin, rest @ ..] if *bin == "vramlab" || bin.ends_with("/release/vramlab") => {
            Some(rest.iter().map(|w| w.to_string()).collect())
        }
        ["cargo", "run", rest @ ..] => {
            let after = rest.iter().position(|w| *w == "--")?;
            Some(rest[after + 1..].iter().map(|w| w.to_string()).collect())
        }
        _ => None,
    }
}

/// What is wrong with `vramlab args`, as parsed by the binary's flags and resolved to a config;
/// `--config NAME` reads `configs[NAME]` when no such file is in the repository.
fn check_command(args: &[String], configs: &BTreeMap<String, PathBuf>) -> Result<(), String> {
    let args: Vec<String> = args
        .iter()
        .map(|arg| match configs.get(arg) {
            Some(path) if !root().join(arg).exists() => path.display().to_string(),
            _ => arg.clone(),
        })
        .collect();
    let cli = Cli::try_parse_from(std::iter::once("vramlab".to_string()).chain(args))
        .map_err(|err| err.to_string())?;
    let purpose = |plan: bool| if plan { Purpose::Plan } else { Purpose::Run };
    let resolved = match &cli.command {
        None => TrainArgs::default().resolve(),
        Some(Command::Train(train)) => train.run.resolve_for(purpose(train.run.dry_run)),
        Some(Command::BenchSampling(train)) => train.resolve(),
        Some(Command::Plan(plan)) => plan.resolve(),
        Some(Command::FindBatch(find)) => {
            let config = find
                .run
                .resolve_for(purpose(find.plan))
                .map_err(|e| e.to_string())?;
            if config.budget.is_none() {
                return Err("find-batch needs a --budget".into());
            }
            Ok(config)
        }
        Some(Command::Claims(claims)) => {
            for field in &claims.only {
                if catalog::claims().all(|(entry, _)| entry.field != field) {
                    return Err(format!(
                        "claims --only {field}: no claim is about that field"
                    ));
                }
            }
            return Ok(());
        }
        // The other commands (presets, the benchmarks, and any added later) take no config:
        // their flags were parsed above.
        Some(_) => return Ok(()),
    };
    resolved.map(|_| ()).map_err(|err| err.to_string())
}

#[test]
fn the_readme_stays_short_and_shows_the_page() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    assert!(
        readme.len() < README_MAX_BYTES,
        "README.md is {} bytes, over {README_MAX_BYTES}: move reference material to docs/",
        readme.len()
    );
    let image = readme
        .split("![")
        .nth(1)
        .and_then(|rest| rest.split("](").nth(1))
        .and_then(|rest| rest.split(')').next())
        .expect("the README shows a screenshot of the page");
    let bytes = std::fs::metadata(root().join(image))
        .unwrap_or_else(|err| panic!("the README's screenshot {image}: {err}"))
        .len();
    assert!(
        bytes < SCREENSHOT_MAX_BYTES,
        "{image} is {bytes} bytes, over {SCREENSHOT_MAX_BYTES}"
    );
}

#[test]
fn every_command_shown_parses_and_every_config_shown_validates() {
    let temp = std::env::temp_dir().join(format!("vramlab-readme-{}", std::process::id()));
    std::fs::create_dir_all(&temp).expect("a temp dir");
    let mut failures = Vec::new();
    let mut checked = 0;
    for (path, text) in documents() {
        let blocks = blocks(&text);
        // JSON blocks are configs; one introduced by a file name stands for that file.
        let mut configs = BTreeMap::new();
        for (i, block) in blocks.iter().enumerate().filter(|(_, b)| b.info == "json") {
            let json = block.lines.join("\n");
            match RunConfig::from_json(&json).and_then(|c| c.validate().map(|()| c)) {
                Ok(_) => checked += 1,
                Err(err) => failures.push(format!("{}: JSON block {i}: {err}", name(&path))),
            }
            let file = block
                .intro
                .split_whitespace()
                .map(|w| {
                    w.trim_matches(|c: char| {
                        !c.is_alphanumeric() && c != '.' && c != '-' && c != '_'
                    })
                })
                .find(|w| w.ends_with(".json"));
            if let Some(file) = file {
                let written = temp.join(file);
                std::fs::write(&written, &json).expect("a temp config");
                configs.insert(file.to_string(), written);
            }
        }
        for block in blocks
            .iter()
            .filter(|b| matches!(b.info.as_str(), "sh" | "bash" | "shell"))
        {
            for line in &block.lines {
                let words = words(line);
                let Some(first) = words.first() else { continue };
                if let Some(args) = vramlab_args(&words) {
                    checked += 1;
                    if let Err(err) = check_command(&args, &configs) {
                        failures.push(format!("{}: `{}`: {err}", name(&path), line.trim()));
                    }
                } else if matches!(first.as_str(), "bash" | "node") {
                    // A script the line runs must exist.
                    let script = words.get(1).map(String::as_str).unwrap_or_default();
                    checked += 1;
                    if !root().join(script).is_file() {
                        failures.push(format!(
                            "{}: `{}`: no file {script}",
                            name(&path),
                            line.trim()
                        ));
                    }
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&temp);
    assert!(
        checked >= 20,
        "only {checked} commands and configs found: is the reader broken?"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// GitHub's anchor for a heading: lower case, spaces to hyphens, other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[test]
fn every_link_between_the_pages_resolves() {
    let documents = documents();
    let anchors: BTreeMap<PathBuf, BTreeSet<String>> = documents
        .iter()
        .map(|(path, text)| {
            let headings = text
                .lines()
                .filter_map(|l| {
                    l.trim_start_matches('#')
                        .strip_prefix(' ')
                        .filter(|_| l.starts_with('#'))
                })
                .map(anchor)
                .collect();
            (path.canonicalize().expect("a page"), headings)
        })
        .collect();
    let mut failures = Vec::new();
    for (path, text) in &documents {
        for target in text
            .split("](")
            .skip(1)
            .filter_map(|rest| rest.split(')').next())
        {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, fragment) = target.split_once('#').unwrap_or((target, ""));
            let resolved = if file.is_empty() {
                path.clone()
            } else {
                path.parent().expect("a page's folder").join(file)
            };
            let Ok(resolved) = resolved.canonicalize() else {
                failures.push(format!("{}: link to {target}: no such file", name(path)));
                continue;
            };
            if !fragment.is_empty()
                && anchors
                    .get(&resolved)
                    .is_some_and(|a| !a.contains(fragment))
            {
                failures.push(format!("{}: link to {target}: no such heading", name(path)));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_strategy_reference_lists_exactly_the_catalogs_strategies() {
    let page =
        std::fs::read_to_string(root().join("docs/strategies.md")).expect("docs/strategies.md");
    let listed: BTreeSet<&str> = page
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("- `strategies."))
        .filter_map(|rest| rest.split('`').next())
        .collect();
    let catalog: BTreeSet<&str> = CATALOG
        .iter()
        .filter_map(|entry| entry.field.strip_prefix("strategies."))
        .collect();
    assert_eq!(
        listed, catalog,
        "docs/strategies.md's strategies vs the catalog"
    );
}

#[test]
fn the_readmes_lessons_are_claims_of_the_catalog() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    // Rows of the lessons table: | folklore | `field` | verdict |
    let rows: Vec<(String, String)> = readme
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line
                .trim()
                .strip_prefix('|')?
                .split('|')
                .map(str::trim)
                .collect();
            let field = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((cells[0].to_string(), field.to_string()))
        })
        .collect();
    assert!(
        rows.len() >= 10,
        "the README's lessons table has {} rows",
        rows.len()
    );
    for (folklore, field) in rows {
        assert!(
            catalog::claims().any(|(e, c)| e.field == field && c.folklore == folklore),
            "README lesson \"{folklore}\" about {field} is not a claim of the catalog"
        );
    }
}
