//! The suite's two tiers (docs/architecture.md, "The two tiers"): every test left to the full
//! tier (`#[ignore = "full tier ..."]`, run by `bash .ci/test --full`) is listed there with a
//! representative that the CI tier runs, and each representative is a test that exists and runs
//! in the CI tier. Nothing here trains: it reads the sources and the page.

use std::collections::BTreeSet;

const FULL_TIER: &str = "#[ignore = \"full tier (bash .ci/test --full)\"]";

/// Every `#[test]` of tests/suite as `module::name`, with whether it is the full tier's.
fn suite_tests() -> Vec<(String, bool)> {
    let dir = super::support::repo_root().join("tests/suite");
    let mut found = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("tests/suite")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    for path in files {
        let module = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).expect("a readable test file");
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        for (i, line) in lines.iter().enumerate() {
            if *line != "#[test]" {
                continue;
            }
            // The attributes between #[test] and the function.
            let mut full = false;
            for next in &lines[i + 1..] {
                if let Some(rest) = next.strip_prefix("fn ") {
                    let name = rest.split('(').next().unwrap();
                    found.push((format!("{module}::{name}"), full));
                    break;
                }
                if next.starts_with("#[ignore") {
                    assert_eq!(
                        *next, FULL_TIER,
                        "{module}: a test is ignored for another reason than the full tier"
                    );
                    full = true;
                }
            }
        }
    }
    found
}

/// The rows of the table in docs/architecture.md's "The two tiers": (full-tier tests, CI-tier
/// representatives), each cell's `module::name` spans.
fn documented_rows() -> Vec<(Vec<String>, Vec<String>)> {
    let page = std::fs::read_to_string(super::support::repo_root().join("docs/architecture.md"))
        .expect("docs/architecture.md");
    let start = page
        .find("### The two tiers")
        .expect("docs/architecture.md has a section \"The two tiers\"");
    let section = &page[start..];
    let end = section[3..].find("\n#").map_or(section.len(), |i| i + 3);
    let names = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .filter(|span| span.contains("::") && !span.contains(' '))
            .map(str::to_string)
            .collect()
    };
    section[..end]
        .lines()
        .filter(|line| line.starts_with('|') && !line.starts_with("|---"))
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').collect();
            let (full, ci) = (names(cells.get(1)?), names(cells.get(2)?));
            (!full.is_empty()).then_some((full, ci))
        })
        .collect()
}

#[test]
fn every_full_tier_test_is_listed_with_a_representative_the_ci_tier_runs() {
    let tests = suite_tests();
    assert!(tests.len() > 150, "{} tests found", tests.len());
    let full: BTreeSet<&str> = tests
        .iter()
        .filter(|(_, f)| *f)
        .map(|(n, _)| n.as_str())
        .collect();
    let ci: BTreeSet<&str> = tests
        .iter()
        .filter(|(_, f)| !*f)
        .map(|(n, _)| n.as_str())
        .collect();
    assert!(!full.is_empty(), "no test is the full tier's");
    let rows = documented_rows();
    let listed: BTreeSet<&str> = rows
        .iter()
        .flat_map(|(full, _)| full.iter().map(String::as_str))
        .collect();
    assert_eq!(
        listed, full,
        "docs/architecture.md's full tier lists exactly the tests marked full tier"
    );
    for (full_tests, representatives) in &rows {
        assert!(
            !representatives.is_empty(),
            "{full_tests:?}: no representative in the CI tier"
        );
        for name in representatives {
            assert!(
                ci.contains(name.as_str()),
                "{full_tests:?}: its representative {name} is not a CI-tier test"
            );
        }
    }
}
