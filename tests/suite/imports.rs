//! How modules may import each other, read from the sources so that a new import that breaks
//! the rule fails here, naming it. The page's modules import each other without a circle (a
//! module that needs something from another never has that other need something back from it);
//! the engine's modules sit in layers (`LAYERS`) and import only from their own layer and those
//! below.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The code of a Rust file with comments, string and char literals blanked, so a path inside
/// them (a doc comment that mentions `crate::app`) is not read as an import.
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        if rest.starts_with(&['/', '/']) {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if rest.starts_with(&['/', '*']) {
            // Block comments nest in Rust.
            let mut depth = 0;
            while i < chars.len() {
                if chars[i..].starts_with(&['/', '*']) {
                    depth += 1;
                    i += 2;
                } else if chars[i..].starts_with(&['*', '/']) {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if chars[i] == 'r' && matches!(rest.get(1), Some('"' | '#')) {
            // A raw string: r"...", r#"..."#.
            let hashes = rest[1..].iter().take_while(|&&c| c == '#').count();
            if rest.get(1 + hashes) != Some(&'"') {
                out.push(chars[i]);
                i += 1;
                continue;
            }
            i += 2 + hashes;
            while i < chars.len() {
                if chars[i] == '"'
                    && chars[i + 1..].iter().take_while(|&&c| c == '#').count() >= hashes
                {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
            out.push_str("\"\"");
        } else if chars[i] == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if chars[i] == '\'' {
            // A char literal ('x', '\n', '\u{..}'), or else a lifetime, which is kept.
            let end = match rest.get(1) {
                // The escaped char is at 2, so the closing quote comes after it.
                Some('\\') => rest.iter().skip(3).position(|&c| c == '\'').map(|p| p + 4),
                Some(_) if rest.get(2) == Some(&'\'') => Some(3),
                _ => None,
            };
            match end {
                Some(len) => {
                    i += len;
                    out.push_str("' '");
                }
                None => {
                    out.push('\'');
                    i += 1;
                }
            }
        } else {
            out.push(chars[i]);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The names a path starts with, read from just after its prefix: `a::b` names `a`, and
/// `{a::B, c}` names `a` and `c`.
fn names_after(rest: &str) -> Vec<String> {
    let rest = rest.trim_start();
    let Some(group) = rest.strip_prefix('{') else {
        let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
        return if name.is_empty() { vec![] } else { vec![name] };
    };
    // The group's top-level items, up to its closing brace.
    let mut names = Vec::new();
    let mut depth = 0;
    let mut item_start = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if item_start && is_ident(c) => {
                names.push(group[i..].chars().take_while(|&c| is_ident(c)).collect());
                item_start = false;
            }
            c if !c.is_whitespace() => item_start = false,
            _ => {}
        }
    }
    names
}

/// The first name after each `crate::` in `code`: `crate::a::b` and `use crate::{a::B, c}` name
/// `a` (and `c`).
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        names.extend(names_after(&code[at + "crate::".len()..]));
    }
    names
}

/// The engine modules that `code`, a file `depth` modules below the engine (`memory.rs` and
/// `memory/mod.rs` are 1, `memory/meter.rs` is 2), names: through `crate::engine::x`, or through
/// `super::` repeated `depth` times or more (a `mod tests` inside the file adds one).
fn engine_paths(code: &str, depth: usize) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("crate::engine::") {
        if !code[..at].chars().next_back().is_some_and(is_ident) {
            names.extend(names_after(&code[at + "crate::engine::".len()..]));
        }
    }
    for (at, _) in code.match_indices("super::") {
        // Only where a chain of them starts.
        if code[..at]
            .chars()
            .next_back()
            .is_some_and(|c| is_ident(c) || c == ':')
        {
            continue;
        }
        let mut rest = &code[at..];
        let mut ups = 0;
        while let Some(after) = rest.strip_prefix("super::") {
            rest = after;
            ups += 1;
        }
        if ups >= depth {
            names.extend(names_after(rest));
        }
    }
    names
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("a source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// Which of the crate's top-level modules each module names, read from the files under `src`
/// (a module is `name.rs` or the folder `name/`; the crate root, `lib.rs`, is left out).
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let module_of = |path: &Path| -> Option<String> {
        let relative = path.strip_prefix(src).ok()?;
        let first = relative.components().next()?.as_os_str().to_str()?;
        let name = first.strip_suffix(".rs").unwrap_or(first);
        (name != "lib" && name != "main").then(|| name.to_string())
    };
    let files = rust_files(src);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for file in &files {
        let Some(from) = module_of(file) else {
            continue;
        };
        let source = std::fs::read_to_string(file).expect("a readable source file");
        for to in crate_paths(&code_only(&source)) {
            if to != from && modules.contains(&to) {
                graph.get_mut(&from).expect("every module").insert(to);
            }
        }
    }
    graph
}

/// Which of the engine's top-level modules each one names, read from the files under `engine`
/// (a module is `name.rs` or the folder `name/`; `mod.rs`, the engine's root, is left out).
fn engine_graph(engine: &Path) -> BTreeMap<String, BTreeSet<String>> {
    // The module a file belongs to, and how many modules below the engine it sits.
    let place = |path: &Path| -> Option<(String, usize)> {
        let parts: Vec<&str> = path
            .strip_prefix(engine)
            .ok()?
            .components()
            .map(|c| c.as_os_str().to_str())
            .collect::<Option<_>>()?;
        let depth = parts.len() - usize::from(parts.last() == Some(&"mod.rs"));
        let module = parts[0].strip_suffix(".rs").unwrap_or(parts[0]);
        (module != "mod").then(|| (module.to_string(), depth))
    };
    let files = rust_files(engine);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| place(f)).map(|p| p.0).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for file in &files {
        let Some((from, depth)) = place(file) else {
            continue;
        };
        let source = std::fs::read_to_string(file).expect("a readable source file");
        for to in engine_paths(&code_only(&source), depth) {
            if to != from && modules.contains(&to) {
                graph.get_mut(&from).expect("every module").insert(to);
            }
        }
    }
    graph
}

/// The engine's modules in layers, from the bottom up. A module may import from its own layer
/// and those below it, never from one above: plain types at the bottom, then the config, what
/// a run is built from, how memory is read and predicted, the strategies, the model families,
/// the training loop, and on top the searches and the claims that drive whole runs.
const LAYERS: &[&[&str]] = &[
    // Plain values and helpers that name no other engine module.
    &["format", "phase", "plot", "table"],
    &["outcome"],
    &["error"],
    &["config", "overrides"],
    &["data", "device", "layout"],
    &["presets", "hf_config", "recipe"],
    // What a model is built from: vramlab's autodiff ops, burn modules, the fused WGSL step.
    &["ops", "models", "fused"],
    &["memory", "flops"],
    &["strategies", "validate"],
    &["families"],
    &["suggest"],
    &["train"],
    &["plan", "estimate_check", "finder", "claims"],
    // The page's URL state, which names claims' verdicts.
    &["link"],
];

/// The imports of `graph` that go up a layer of `layers`, as lines; or the modules that no
/// layer places (each must be placed to be checked). None is allowed: what a lower module needs
/// from a higher one moves down, or registers against the lower one from above.
fn upward_imports(
    graph: &BTreeMap<String, BTreeSet<String>>,
    layers: &[&[&str]],
) -> Result<Vec<String>, Vec<String>> {
    let mut layer_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, layer) in layers.iter().enumerate() {
        for &module in *layer {
            layer_of.insert(module, i);
        }
    }
    let unplaced: Vec<String> = graph
        .keys()
        .filter(|m| !layer_of.contains_key(m.as_str()))
        .cloned()
        .collect();
    if !unplaced.is_empty() {
        return Err(unplaced);
    }
    let mut upward = Vec::new();
    for (from, imports) in graph {
        for to in imports {
            let (below, above) = (layer_of[from.as_str()], layer_of[to.as_str()]);
            if above > below {
                upward.push(format!(
                    "{from} (layer {below}) imports {to} (layer {above})"
                ));
            }
        }
    }
    Ok(upward)
}

#[test]
fn no_engine_module_imports_one_above_it() {
    let engine = &super::support::repo_root().join("src/engine");
    let graph = engine_graph(engine);
    assert!(
        graph.len() >= 20 && graph.values().map(BTreeSet::len).sum::<usize>() >= 50,
        "src/engine read as {graph:?}: too few modules or imports to be the engine"
    );
    for layer in LAYERS {
        for module in *layer {
            assert!(
                graph.contains_key(*module),
                "LAYERS places `{module}`, which src/engine no longer has"
            );
        }
    }
    match upward_imports(&graph, LAYERS) {
        Err(unplaced) => panic!(
            "src/engine modules in no layer: {unplaced:?}; place each in LAYERS (tests/suite/\
             imports.rs) above every module it imports"
        ),
        Ok(upward) => assert!(
            upward.is_empty(),
            "src/engine imports up a layer (see LAYERS in tests/suite/imports.rs; move what is \
             needed down, or the import up):\n  {}",
            upward.join("\n  ")
        ),
    }
    // Peers in a layer may import each other, but not in a circle.
    let mut peers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for layer in LAYERS {
        for &module in *layer {
            let imports = graph[module]
                .iter()
                .filter(|to| layer.contains(&to.as_str()))
                .cloned();
            peers.insert(module.to_string(), imports.collect());
        }
    }
    if let Some(cycle) = find_cycle(&peers) {
        panic!(
            "src/engine imports in a circle within a layer: {}",
            cycle.join(" -> ")
        );
    }
}

/// A circle of imports in `graph` (its modules in order, the first repeated at the end), if any.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let from = path
                    .iter()
                    .position(|n| n == node)
                    .expect("open nodes are on the path");
                let mut cycle = path[from..].to_vec();
                cycle.push(node.to_string());
                return Some(cycle);
            }
            None => {}
        }
        marks.insert(node.to_string(), Mark::Open);
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, marks, path) {
                return Some(cycle);
            }
        }
        path.pop();
        marks.insert(node.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut marks, &mut Vec::new()))
}

#[test]
fn the_pages_modules_import_each_other_without_a_circle() {
    let src = &super::support::repo_root().join("www/src");
    let graph = module_graph(src);
    assert!(
        graph.len() >= 10 && graph.values().map(BTreeSet::len).sum::<usize>() >= 10,
        "www/src read as {graph:?}: too few modules or imports to be the page"
    );
    if let Some(cycle) = find_cycle(&graph) {
        panic!("www/src imports in a circle: {}", cycle.join(" -> "));
    }
}

#[test]
fn the_import_reader_finds_paths_in_code_and_not_in_comments_or_strings() {
    let code = code_only(
        "use crate::a::B;\nuse crate::{c::D, e};\n// crate::f\nlet s = \"crate::g\";\n\
         let c = '\"'; let q = '\\''; x(crate::h::i());\n/* crate::j */ fn k<'a>(_: &'a str) {}\n",
    );
    let found: Vec<String> = crate_paths(&code).into_iter().collect();
    assert_eq!(found, ["a", "c", "e", "h"]);

    // In `memory/meter.rs` (two below the engine) `super::` is `memory`, `super::super::` the
    // engine; in `memory.rs` one `super::` is the engine.
    let code = code_only(
        "use crate::engine::{config::RunConfig, train};\nuse super::sampler;\n\
         use super::super::device::Gpu;\nlet x = crate::engine::phase::Phase::Forward;\n\
         // crate::engine::claims\n",
    );
    let found: Vec<String> = engine_paths(&code, 2).into_iter().collect();
    assert_eq!(found, ["config", "device", "phase", "train"]);
    let found: Vec<String> = engine_paths(&code, 1).into_iter().collect();
    assert_eq!(found, ["config", "device", "phase", "sampler", "train"]);

    let engine: BTreeMap<String, BTreeSet<String>> = [
        ("low", vec![]),
        ("mid", vec!["low"]),
        ("top", vec!["mid", "low"]),
    ]
    .into_iter()
    .map(|(m, to)| (m.to_string(), to.into_iter().map(String::from).collect()))
    .collect();
    let layers: &[&[&str]] = &[&["low"], &["mid"], &["top"]];
    assert_eq!(upward_imports(&engine, layers), Ok(vec![]));
    let mut up = engine.clone();
    up.get_mut("low").unwrap().insert("top".into());
    assert_eq!(
        upward_imports(&up, layers),
        Ok(vec!["low (layer 0) imports top (layer 2)".to_string()])
    );
    assert_eq!(
        upward_imports(&engine, &[&["low"], &["mid"]]),
        Err(vec!["top".to_string()])
    );

    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(m, to)| (m.to_string(), to.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    let mut open = graph.clone();
    open.get_mut("c").unwrap().clear();
    assert_eq!(find_cycle(&open), None);
}

/// No module or test compiles the checkout's path in (the manifest directory through `env!`):
/// cargo tracks the values a crate read with `env!`, so such a path rebuilt the suite and the
/// library's unit tests in every new clone (CI runs one on the build cache).
/// `support::repo_root` finds the root when the suite runs.
#[test]
fn no_source_compiles_the_checkouts_path_in() {
    // Spelled in two pieces, so this file does not name it.
    let needle = ["env!(\"CARGO", "_MANIFEST_DIR\")"].concat();
    let root = super::support::repo_root();
    let mut found = Vec::new();
    for dir in ["src", "tests", "www/src", "www/tests"] {
        for file in rust_files(&root.join(dir)) {
            let text = std::fs::read_to_string(&file).expect("a source file");
            for (number, line) in text.lines().enumerate() {
                if line.contains(&needle) && !line.trim_start().starts_with("//") {
                    found.push(format!("{}:{}", file.display(), number + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the manifest directory compiled in: {found:?}"
    );
}
