//! Figures that cannot go stale: every figure README.md and docs/ print that the code computes
//! (plans, parameter counts, analytic estimates and their ratios, counts of claims and configs)
//! sits under a comment naming what computes it, and `vramlab docs --check` recomputes each and
//! fails naming the file, the line, the documented and the computed value. Measurements are
//! marked on the pages with their date, machine and command instead.

use vramlab::engine::plan::Plan;

use crate::suite::support::{repo_root, vramlab, vramlab_json};

/// README.md and every page of docs/.
fn pages() -> Vec<String> {
    let root = repo_root().display();
    let mut pages = vec![format!("{root}/README.md")];
    let mut docs: Vec<String> = std::fs::read_dir(format!("{root}/docs"))
        .expect("docs/")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .map(|path| path.display().to_string())
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// `vramlab docs --check --tier TIER` over every page: its summary line, after asserting it
/// passed with nothing unmarked.
fn check_pages(tier: &str) -> String {
    let mut args = vec![
        "docs".to_string(),
        "--check".to_string(),
        "--tier".to_string(),
        tier.to_string(),
    ];
    args.extend(pages());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = vramlab(&args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "vramlab docs --check --tier {tier}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = stdout.lines().last().unwrap_or_default().to_string();
    assert!(summary.contains("; 0 differ; 0 unmarked"), "{summary}");
    summary
}

/// The number a summary line starts with (the figures checked).
fn checked(summary: &str) -> usize {
    summary
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// The plans and estimates a summary line says were computed.
fn computed(summary: &str) -> usize {
    summary
        .split_once(" files (")
        .and_then(|(_, rest)| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The distinct commands of the pages' `figures` lines marked `(full tier)`, or of the others.
fn figure_commands(full_tier: bool) -> usize {
    let mut commands = std::collections::BTreeSet::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("a readable page");
        for line in text.lines() {
            let Some(rest) = line.trim().strip_prefix("<!-- figures ") else {
                continue;
            };
            let Some((name, command)) = rest.split_once(':') else {
                continue;
            };
            if name.ends_with("(full tier)") == full_tier {
                commands.insert(command.trim().trim_end_matches("-->").trim().to_string());
            }
        }
    }
    commands.len()
}

/// The CI tier's figures: every page's, but those of the plans marked `(full tier)` (the rest
/// of a sweep whose representative is planned here, and docs/recipes.md's whole recipes).
#[test]
fn every_checked_figure_in_the_docs_is_what_the_code_computes() {
    let summary = check_pages("ci");
    // The GPT-2 tables of plans.md and transformers.md are among them, with a plan of each
    // sharding (full, gradients, optimizer, none), of mixed precision and of each offload.
    assert!(checked(&summary) >= 140, "{summary}");
    assert!(!summary.contains("; 0 left to the full tier"), "{summary}");
    assert_eq!(computed(&summary), figure_commands(false), "{summary}");
}

/// The full tier's: the sweeps' other plans (1, 2 and 4 GPUs beside 8, Llama-3.1-70B beside
/// 8B) and each recipe format's worked example planned from its recipe.
#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn the_full_tiers_plans_in_the_docs_are_what_the_code_computes() {
    let summary = check_pages("full");
    assert!(checked(&summary) >= 200, "{summary}");
    assert_eq!(computed(&summary), figure_commands(true), "{summary}");
}

#[test]
fn the_docs_check_fails_on_a_plan_table_edited_by_hand_and_on_an_unmarked_figure() {
    let plan = vramlab_json::<Plan>(&["plan", "--json", "--preset", "spiral-mlp"]);
    let (params, high_water) = (plan.params, plan.high_water_in_use_bytes);
    let dir = std::env::temp_dir().join(format!("vramlab-docs-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("page.md");
    let write = |documented: u64| {
        let text = format!(
            "# A page\n\n<!-- figures s: plan --preset spiral-mlp -->\n\
             <!-- check \"| spiral-mlp |\": s.params; s.high_water_in_use_bytes B -->\n\n\
             | preset | parameters | high-water in use |\n|---|---|---|\n\
             | spiral-mlp | {params} | {documented} B |\n"
        );
        std::fs::write(&page, text).unwrap();
    };
    let path = page.to_str().unwrap();
    let check = |text: Option<&str>| {
        if let Some(text) = text {
            std::fs::write(&page, text).unwrap();
        }
        let out = vramlab(&["docs", "--check", path]);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };

    write(high_water);
    let (code, stderr) = check(None);
    assert_eq!(code, Some(0), "{stderr}");

    // The table's row edited by hand fails, naming its line and both values.
    write(high_water + 1);
    let (code, stderr) = check(None);
    assert_eq!(code, Some(1), "{stderr}");
    let named = format!(
        "{path}:8 s.high_water_in_use_bytes B (documented {}, computed {high_water})",
        high_water + 1
    );
    assert!(stderr.contains(&named), "{stderr} names {named}");

    // A figure that nothing computes needs its block marked as a measurement; a mark in the
    // paragraph before does not cover the next one; percentages count.
    let (code, stderr) = check(Some("# A page\n\nA step took 3.5 s, 12% of it waiting.\n"));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{path}:3 3.5")) && stderr.contains(&format!("{path}:3 12")),
        "{stderr}"
    );
    let (code, stderr) = check(Some(
        "# A page\n\nA step took 3.5 s (measured 2026-11-26 on lavapipe, `vramlab train`).\n\n\
         The next took 4.5 s.\n",
    ));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{path}:5 4.5")) && !stderr.contains(":3 3.5"),
        "{stderr}"
    );
    // A plan's bytes marked as measured are refused: they are checked, not marked.
    let (code, stderr) = check(Some(
        "# A page\n\nIt holds 9.5 MiB (measured 2026-11-26 on lavapipe, `vramlab plan --preset \
         spiral-mlp`).\n",
    ));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains(&format!("{path}:3 9.5")), "{stderr}");
    let (code, stderr) = check(Some(
        "# A page\n\nA step took 3.5 s (measured 2026-11-26 on lavapipe, `vramlab train`).\n",
    ));
    assert_eq!(code, Some(0), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
