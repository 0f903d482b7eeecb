//! CI's check that the page's lessons and the native claims agree (`vramlab claims
//! --compare-page`, .ci/test): a page table and a native report written as the fronts write
//! them, then the native one doctored. No GPU: the rows are staged, the command only compares.

use std::path::Path;

use vramlab::engine::claims::{
    Bench, Measure, Report, Row, Verdict, cannot_run, left_out_of_run_all,
};
use vramlab::engine::strategies::catalog;

use crate::suite::support::vramlab;

/// Every claim as a front on `bench` writes it: "not run here" with the engine's reason where
/// the bench cannot run it or Run all leaves it out, else held.
fn report(bench: Bench, adapter: &str) -> Report {
    let rows = catalog::claims()
        .map(|(entry, claim)| {
            let not_run =
                cannot_run(entry, claim, bench).or_else(|| left_out_of_run_all(entry, claim));
            let base = claim.base.label();
            match not_run {
                Some(why) => Row::unmeasured(entry, claim, base, Verdict::NotRunHere, why),
                None => Row {
                    runs_per_side: 1,
                    off: Measure::of(vec![2.0; 11], 1),
                    on: Measure::of(vec![1.0; 11], 1),
                    ..Row::unmeasured(entry, claim, base, Verdict::Holds, "0.50x".into())
                },
            }
        })
        .collect();
    Report {
        adapter: adapter.into(),
        bench,
        seconds: 1.0,
        rows,
    }
}

fn write(path: &Path, report: &Report) {
    std::fs::write(path, serde_json::to_string_pretty(report).unwrap()).unwrap();
}

fn compare(page: &Path, native: &Path) -> (Option<i32>, String) {
    let out = vramlab(&[
        "claims",
        "--compare-page",
        page.to_str().unwrap(),
        "--native",
        native.to_str().unwrap(),
    ]);
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code(), text)
}

#[test]
fn the_compare_page_command_fails_on_a_doctored_native_verdict() {
    let dir = std::env::temp_dir().join(format!("vramlab-page-native-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (page, native) = (dir.join("lessons.json"), dir.join("native-claims.json"));
    write(&page, &report(Bench::page(false), "SwiftShader"));
    let mut theirs = report(Bench::as_page(), "llvmpipe");
    write(&native, &theirs);
    let (code, text) = compare(&page, &native);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("cards the page ran have the native verdict"),
        "{text}"
    );

    // One verdict flipped: the command fails and names the card.
    let row = theirs
        .rows
        .iter_mut()
        .find(|row| row.field == "eval_batch_size")
        .unwrap();
    row.verdict = Verdict::DoesNotHoldHere;
    write(&native, &theirs);
    let (code, text) = compare(&page, &native);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("differs: eval_batch_size \"keep the eval batch small\": page holds"),
        "{text}"
    );
    assert!(text.contains("1 card(s) of the page differ"), "{text}");

    // free_cache's verdict depends on the allocator's page kind: flipped, it is allowed.
    for row in &mut theirs.rows {
        row.verdict = match row.field.as_str() {
            "strategies.free_cache" => Verdict::HoldsPartly,
            "eval_batch_size" => Verdict::Holds,
            _ => row.verdict,
        };
    }
    write(&native, &theirs);
    let (code, text) = compare(&page, &native);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("differs where the claim allows it: strategies.free_cache"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `vramlab plan --compare-page`, as CI runs it on the page's exported plans: a plan written as
/// the page's Export writes it (made here, on this machine's modelled adapter) is made again
/// and found equal; the same file with one phase's figure doctored is named and exits 1; a plan
/// without its modelled adapter is refused naming the field.
#[test]
fn the_plan_compare_finds_a_plan_equal_and_names_a_doctored_figure() {
    use vramlab::engine::phase::Phase;
    use vramlab::engine::plan::plan;
    use vramlab::engine::presets::preset;

    let dir = std::env::temp_dir().join(format!("vramlab-plan-compare-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let gpu = own_planning_device();
    let mut config = preset("sort-llama").unwrap();
    config.strategies.trainable = vramlab::engine::config::Trainable::Lora;
    let made = pollster::block_on(plan(&config, &gpu, |_| {})).unwrap();
    assert!(
        made.modelled.is_some(),
        "a plan states the adapter it modelled"
    );
    let run = |name: &str, plan: &vramlab::engine::plan::Plan| {
        let file = dir.join(name);
        std::fs::write(&file, serde_json::to_string_pretty(plan).unwrap()).unwrap();
        let out = vramlab(&["plan", "--compare-page", file.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    };

    let (code, text) = run("equal.json", &made);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("the page's plan equals this one"), "{text}");

    let mut doctored = made.clone();
    *doctored
        .high_water_in_use_by_phase
        .get_mut(&Phase::Forward)
        .unwrap() += 1;
    let (code, text) = run("doctored.json", &doctored);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("high_water_in_use_by_phase.forward: page"),
        "{text}"
    );

    let mut unmodelled = made;
    unmodelled.modelled = None;
    let (code, text) = run("unmodelled.json", &unmodelled);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("field `modelled`"), "{text}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The page's Export image: a plan's SVG card carries its verdict against the budget, each
/// category that holds memory and each phase with its figures, and nothing unescaped.
#[test]
fn a_plans_card_shows_its_verdict_categories_and_phases() {
    use vramlab::engine::config::Budget;
    use vramlab::engine::format::ByteFormat;
    use vramlab::engine::memory::Categories;
    use vramlab::engine::plan::plan;
    use vramlab::engine::presets::preset;

    let gpu = own_planning_device();
    let mut config = preset("sort-llama").unwrap();
    config.name = "sort-llama <&>".into();
    config.budget = Some(Budget::Bytes(1 << 30));
    let made = pollster::block_on(plan(&config, &gpu, |_| {})).unwrap();
    let card = made.svg();
    assert!(card.starts_with("<svg") && card.trim_end().ends_with("</svg>"));
    assert!(
        made.verdict().starts_with("Fits: high-water"),
        "{}",
        made.verdict()
    );
    assert!(card.contains(&made.verdict()), "{card}");
    assert!(card.contains("sort-llama &lt;&amp;&gt;") && !card.contains("<&>"));
    let gib = ByteFormat::MIB_OR_GIB;
    let categories = made
        .high_water_by_category
        .expect("a training step's categories");
    for (name, bytes) in Categories::NAMES.iter().zip(categories.values()) {
        assert_eq!(
            card.contains(&format!("{name}: {}", gib.of(bytes))),
            bytes > 0,
            "{name}"
        );
    }
    for (phase, bytes) in &made.high_water_in_use_by_phase {
        assert!(
            card.contains(&format!(">{}</text>", phase.name()))
                && card.contains(&format!(">{}</text>", gib.of(*bytes))),
            "{}",
            phase.name()
        );
    }
}

/// A planning device of its own, modelling this machine's adapter, as the page plans each
/// question: the process's shared one keeps the pools' history of every plan the suite made
/// before the test.
fn own_planning_device() -> vramlab::engine::Gpu {
    pollster::block_on(async {
        let modelled = vramlab::engine::device::this_modelled_adapter().await?;
        vramlab::engine::device::fresh_planner(modelled).await
    })
    .unwrap()
    .gpu
}
