//! The page's modules import each other without a circle: a module that needs something from
//! another never has that other need something back from it. Read from the sources, so a new
//! `use crate::...` (or a `crate::x::y` path in the code) that closes a loop fails here, naming it.

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

/// The first name after each `crate::` in `code`: `crate::a::b` and `use crate::{a::B, c}` name
/// `a` (and `c`).
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].chars().next_back().is_some_and(is_ident) {
            continue;
        }
        let rest = code[at + "crate::".len()..].trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            // The group's top-level items, up to its closing brace.
            let mut depth = 0;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => item_start = true,
                    c if item_start && is_ident(c) => {
                        let name: String =
                            group[i..].chars().take_while(|&c| is_ident(c)).collect();
                        names.insert(name);
                        item_start = false;
                    }
                    c if !c.is_whitespace() => item_start = false,
                    _ => {}
                }
            }
        } else {
            let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
            if !name.is_empty() {
                names.insert(name);
            }
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
    let src = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/www/src"));
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
