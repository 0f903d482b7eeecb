//! The README says what the code does: its strategy list is the catalog's.

use std::collections::BTreeSet;

use vramlab::engine::strategies::catalog::CATALOG;

#[test]
fn the_readme_lists_exactly_the_catalogs_strategies() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md beside Cargo.toml");
    let listed: BTreeSet<&str> = readme
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("- `strategies."))
        .filter_map(|rest| rest.split('`').next())
        .collect();
    let catalog: BTreeSet<&str> = CATALOG
        .iter()
        .filter_map(|entry| entry.field.strip_prefix("strategies."))
        .collect();
    assert_eq!(listed, catalog, "README strategies vs the catalog");
}
