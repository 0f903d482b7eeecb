//! Figures that cannot go stale: every figure README.md and docs/ print that the code computes
//! (plans, parameter counts, analytic estimates and their ratios, counts of claims and configs)
//! sits under a comment naming what computes it, and `vramlab docs --check` recomputes each and
//! fails naming the file, the line, the documented and the computed value. Measurements are
//! marked on the pages with their date, machine and command instead.

use vramlab::engine::plan::Plan;

use crate::suite::support::{vramlab, vramlab_json};

/// The pages the CI tier checks: README.md and docs/, but for the recipe page, whose plans are
/// of whole recipes (minutes of dry runs) and left to the full tier.
fn pages_but_recipes() -> Vec<String> {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut pages = vec![format!("{root}/README.md")];
    let mut docs: Vec<String> = std::fs::read_dir(format!("{root}/docs"))
        .expect("docs/")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .filter(|path| !path.ends_with("recipes.md"))
        .map(|path| path.display().to_string())
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

#[test]
fn every_checked_figure_in_the_docs_is_what_the_code_computes() {
    let mut args = vec!["docs".to_string(), "--check".to_string()];
    args.extend(pages_but_recipes());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = vramlab(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "vramlab docs --check: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The GPT-2 tables of plans.md and transformers.md are among them, and no figure is left
    // unchecked and unmarked.
    let summary = stdout.lines().last().unwrap_or_default();
    let checked: usize = summary
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(checked >= 40, "{summary}");
    assert!(summary.contains("; 0 unmarked"), "{summary}");
}

/// docs/recipes.md's plans: each format's worked example planned from its recipe.
#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn the_recipe_pages_plans_are_what_the_code_computes() {
    let page = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/recipes.md");
    let out = vramlab(&["docs", "--check", page]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "vramlab docs --check docs/recipes.md: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = stdout.lines().last().unwrap_or_default();
    assert!(summary.starts_with("9 "), "{summary}");
    assert!(summary.contains("; 0 unmarked"), "{summary}");
}

#[test]
fn the_docs_check_fails_on_a_figure_edited_by_hand() {
    let params = vramlab_json::<Plan>(&["plan", "--json", "--preset", "spiral-mlp"]).params;
    let dir = std::env::temp_dir().join(format!("vramlab-docs-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("page.md");
    let write = |documented: u64| {
        let text = format!(
            "# A page\n\n<!-- figures s: plan --preset spiral-mlp -->\n<!-- check: s.params -->\n\
             spiral-mlp has {documented} parameters.\n"
        );
        std::fs::write(&page, text).unwrap();
    };
    let path = page.to_str().unwrap();

    write(params);
    let out = vramlab(&["docs", "--check", path]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    write(params + 1);
    let out = vramlab(&["docs", "--check", path]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let named = format!(
        "{path}:5 s.params (documented {}, computed {params})",
        params + 1
    );
    assert!(stderr.contains(&named), "{stderr} names {named}");

    // A figure that nothing computes needs its section marked as a measurement.
    let text = "# A page\n\nA step took 3.5 s.\n";
    std::fs::write(&page, text).unwrap();
    let out = vramlab(&["docs", "--check", path]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{path}:3 3.5")) && stderr.contains("marked as measured"),
        "{stderr}"
    );
    let marked =
        "# A page\n\nA step took 3.5 s (measured 2026-11-26 on lavapipe, `vramlab train`).\n";
    std::fs::write(&page, marked).unwrap();
    let out = vramlab(&["docs", "--check", path]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
