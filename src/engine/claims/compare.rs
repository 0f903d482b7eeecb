//! The page's lessons held to the native claims: both fronts run the same catalog through
//! [`run_claim`](super::run_claim), so a card the page ran must come to the native verdict,
//! except on a claim whose verdict the catalog says depends on the adapter
//! (`Claim::depends_on`); and a card may be "not run here" only for the reason the page's
//! bench gives ([`cannot_run`]) or because "Run all" leaves it to its own button.

use std::fmt;

use crate::engine::strategies::catalog::{self, Claim, Entry};

use super::{Bench, Row, Verdict, cannot_run, left_out_of_run_all, unmeasurable};

/// A card where the page and the native report disagree, or where the page ran less than its
/// bench allows.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    pub field: String,
    pub claim: String,
    /// What differs, in words.
    pub what: String,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} \"{}\": {}", self.field, self.claim, self.what)
    }
}

/// The page's lessons against the native report, card by card in the catalog's order.
#[derive(Clone, Debug, Default)]
pub struct Comparison {
    /// Cards the page ran (a verdict, not "not run here").
    pub ran: usize,
    /// Of those, cards with the native verdict.
    pub same: usize,
    /// Cards whose verdicts differ where the claim says they may, with what they depend on.
    pub allowed: Vec<Difference>,
    /// Everything else that differs: the check fails on any.
    pub differences: Vec<Difference>,
}

/// Which of the catalog's cards the page's table must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cards {
    /// The table of "Run all lessons": a card of the catalog without a row is a difference.
    All,
    /// Cards run on their own buttons (the CI tier's page test runs a few): a card without a
    /// row was not asked for; each card with one is held as under `All`, and at least one must
    /// have run.
    Some,
}

/// A verdict that judged the claim (as opposed to not running it, or a missing figure).
fn measured(verdict: Verdict) -> bool {
    matches!(
        verdict,
        Verdict::Holds | Verdict::HoldsPartly | Verdict::DoesNotHoldHere
    )
}

/// The figures of `claim` that `bench` cannot measure, by name: two fronts' verdicts are
/// comparable only where they leave out the same ones.
fn unjudged_on(claim: &Claim, bench: Bench) -> Vec<&'static str> {
    claim
        .metrics()
        .filter(|&metric| unmeasurable(metric, bench).is_some())
        .map(|metric| metric.name())
        .collect()
}

fn find<'a>(rows: &'a [Row], entry: &Entry, claim: &Claim) -> Option<&'a Row> {
    rows.iter()
        .find(|row| row.field == entry.field && row.claim == claim.folklore)
}

/// Compare the page's rows (`page`, run on `page_bench`) with the native report's (`native`,
/// run on `native_bench`). A difference is: a card of the catalog the page has no row for; a
/// card "not run here" whose reason is neither what the page's bench cannot measure nor "Run
/// all"'s (so fewer cards ran than the adapter allows); a card the page ran although its bench
/// cannot; a card the page ran that the native report lacks, or judged on other figures; and a
/// verdict other than the native one, unless the claim names what its verdict depends on and
/// both fronts judged it. The same verdict counts as agreeing only where it judged the claim:
/// two runs that failed (not measured) are a difference. With [`Cards::Some`], a card without a
/// row is none, but a table in which no card ran is one.
pub fn compare(
    page: &[Row],
    page_bench: Bench,
    native: &[Row],
    native_bench: Bench,
    cards: Cards,
) -> Comparison {
    let mut out = Comparison::default();
    for (entry, claim) in catalog::claims() {
        let differs = |what: String| Difference {
            field: entry.field.to_string(),
            claim: claim.folklore.to_string(),
            what,
        };
        let Some(ours) = find(page, entry, claim) else {
            if cards == Cards::All {
                out.differences
                    .push(differs("the page has no card for it".into()));
            }
            continue;
        };
        let refused = cannot_run(entry, claim, page_bench);
        if ours.verdict == Verdict::NotRunHere {
            let allowed = [refused, left_out_of_run_all(entry, claim)];
            if !allowed.iter().flatten().any(|why| *why == ours.reason) {
                out.differences.push(differs(format!(
                    "not run here on the page, which its adapter allows ({})",
                    ours.reason
                )));
            }
            continue;
        }
        out.ran += 1;
        if let Some(why) = refused {
            out.differences.push(differs(format!(
                "the page ran it ({}) although its bench cannot: {why}",
                ours.verdict
            )));
            continue;
        }
        let Some(theirs) = find(native, entry, claim) else {
            out.differences.push(differs(format!(
                "the page ran it ({}), the native report has no row for it",
                ours.verdict
            )));
            continue;
        };
        let (page_unjudged, native_unjudged) = (
            unjudged_on(claim, page_bench),
            unjudged_on(claim, native_bench),
        );
        if page_unjudged != native_unjudged {
            out.differences.push(differs(format!(
                "judged on other figures: the page leaves out [{}], the native report [{}] (run \
                 the native claims with --as-page)",
                page_unjudged.join(", "),
                native_unjudged.join(", ")
            )));
            continue;
        }
        if ours.verdict == theirs.verdict && measured(ours.verdict) {
            out.same += 1;
            continue;
        }
        let what = format!(
            "page {} ({}), native {} ({})",
            ours.verdict, ours.reason, theirs.verdict, theirs.reason
        );
        match claim.depends_on {
            Some(depends) if measured(ours.verdict) && measured(theirs.verdict) => out
                .allowed
                .push(differs(format!("{what}; the verdict depends on {depends}"))),
            _ => out.differences.push(differs(what)),
        }
    }
    if cards == Cards::Some && out.ran == 0 {
        out.differences.push(Difference {
            field: "lessons".into(),
            claim: "the cards run on their own".into(),
            what: "the page's table holds no card that ran".into(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::claims::{Measure, PartJudgement};

    const SWIFTSHADER: Bench = Bench::page(false);

    /// What the native front judges when it runs as the page: no timing, no pools.
    const NATIVE_AS_PAGE: Bench = Bench::as_page();

    fn measure(median: f64) -> Option<Measure> {
        Measure::of(vec![median; 11], 1)
    }

    /// A row as a front that ran `claim` would write it, with `verdict`.
    fn ran(entry: &Entry, claim: &Claim, verdict: Verdict) -> Row {
        Row {
            runs_per_side: 1,
            off: measure(2.0),
            on: measure(1.0),
            parts: Vec::<PartJudgement>::new(),
            ..Row::unmeasured(
                entry,
                claim,
                claim.base.label(),
                verdict,
                format!("staged {verdict}"),
            )
        }
    }

    /// The page's rows on `bench` as its "Run all" writes them: every card its bench allows
    /// ran and held, the others not run here with the reason.
    fn page_rows(bench: Bench) -> Vec<Row> {
        catalog::claims()
            .map(|(entry, claim)| {
                match cannot_run(entry, claim, bench).or_else(|| left_out_of_run_all(entry, claim))
                {
                    Some(why) => {
                        Row::unmeasured(entry, claim, claim.base.label(), Verdict::NotRunHere, why)
                    }
                    None => ran(entry, claim, Verdict::Holds),
                }
            })
            .collect()
    }

    /// The native report as `--as-page` writes it: every claim its bench allows held.
    fn native_rows() -> Vec<Row> {
        catalog::claims()
            .map(
                |(entry, claim)| match cannot_run(entry, claim, NATIVE_AS_PAGE) {
                    Some(why) => {
                        Row::unmeasured(entry, claim, claim.base.label(), Verdict::NotRunHere, why)
                    }
                    None => ran(entry, claim, Verdict::Holds),
                },
            )
            .collect()
    }

    /// `page` (on SwiftShader, "Run all"'s table) against `native` (as the page judges).
    fn against(page: &[Row], native: &[Row]) -> Comparison {
        compare(page, SWIFTSHADER, native, NATIVE_AS_PAGE, Cards::All)
    }

    fn doctor(rows: &mut [Row], folklore: &str, verdict: Verdict) {
        let row = rows
            .iter_mut()
            .find(|row| row.claim.starts_with(folklore))
            .unwrap_or_else(|| panic!("no row \"{folklore}\""));
        row.verdict = verdict;
    }

    fn claims_of(differences: &[Difference]) -> Vec<&str> {
        differences.iter().map(|d| d.claim.as_str()).collect()
    }

    #[test]
    fn the_same_verdicts_agree_and_count_the_cards_the_page_ran() {
        let page = page_rows(SWIFTSHADER);
        let ran = page
            .iter()
            .filter(|r| r.verdict != Verdict::NotRunHere)
            .count();
        let out = against(&page, &native_rows());
        assert_eq!(out.differences, []);
        assert!(out.allowed.is_empty());
        assert_eq!((out.ran, out.same), (ran, ran));
        assert!(ran >= 14, "{ran} cards ran");
    }

    #[test]
    fn a_doctored_native_verdict_is_a_difference() {
        let mut native = native_rows();
        doctor(&mut native, "halve the batch", Verdict::HoldsPartly);
        let out = against(&page_rows(SWIFTSHADER), &native);
        assert_eq!(
            claims_of(&out.differences),
            ["halve the batch, halve the activation memory"]
        );
        let what = &out.differences[0].what;
        assert!(
            what.starts_with("page holds (staged holds), native holds partly"),
            "{what}"
        );
        // A native run that failed is no agreement either.
        let mut native = native_rows();
        doctor(&mut native, "halve the batch", Verdict::NotMeasured);
        let out = against(&page_rows(SWIFTSHADER), &native);
        assert_eq!(out.differences.len(), 1);
    }

    #[test]
    fn the_claim_that_names_its_adapter_dependence_may_differ_and_no_other() {
        let dependent: Vec<&str> = catalog::claims()
            .filter(|(_, claim)| claim.depends_on.is_some())
            .map(|(_, claim)| claim.folklore)
            .collect();
        assert_eq!(dependent, ["empty_cache() frees GPU memory"]);
        let mut native = native_rows();
        doctor(&mut native, "empty_cache()", Verdict::HoldsPartly);
        let out = against(&page_rows(SWIFTSHADER), &native);
        assert_eq!(out.differences, []);
        assert_eq!(claims_of(&out.allowed), dependent);
        assert!(
            out.allowed[0].what.contains("the allocator's page kind"),
            "{}",
            out.allowed[0].what
        );
        // The allowance is for two judged verdicts: a run that failed natively is not one.
        doctor(&mut native, "empty_cache()", Verdict::NotMeasured);
        let out = against(&page_rows(SWIFTSHADER), &native);
        assert_eq!(claims_of(&out.differences), dependent);
    }

    #[test]
    fn a_card_the_native_report_lacks_is_a_difference() {
        let mut native = native_rows();
        native.retain(|row| !row.claim.starts_with("keep the eval batch small"));
        let out = against(&page_rows(SWIFTSHADER), &native);
        assert_eq!(claims_of(&out.differences), ["keep the eval batch small"]);
        assert!(out.differences[0].what.contains("no row"));
    }

    #[test]
    fn a_card_not_run_without_its_benchs_reason_is_a_difference() {
        // "Not run here" on a card the page's adapter can run: fewer cards ran than it allows.
        let mut page = page_rows(SWIFTSHADER);
        let row = page
            .iter_mut()
            .find(|row| row.claim.starts_with("halve the batch"))
            .unwrap();
        row.verdict = Verdict::NotRunHere;
        row.reason = "this adapter has no shader-f16".into();
        let out = against(&page, &native_rows());
        assert_eq!(
            claims_of(&out.differences),
            ["halve the batch, halve the activation memory"]
        );
        // Every card not run here: each one the adapter allows is a difference.
        let mut page = page_rows(SWIFTSHADER);
        for row in &mut page {
            row.verdict = Verdict::NotRunHere;
        }
        let out = against(&page, &native_rows());
        let allowed = page_rows(SWIFTSHADER)
            .iter()
            .filter(|r| r.verdict != Verdict::NotRunHere)
            .count();
        assert_eq!((out.ran, out.differences.len()), (0, allowed));
        // The f16 claims are refused on SwiftShader, not on an adapter with shader-f16.
        let on_f16 = compare(
            &page_rows(SWIFTSHADER),
            Bench::page(true),
            &native_rows(),
            NATIVE_AS_PAGE,
            Cards::All,
        );
        assert!(
            claims_of(&on_f16.differences).contains(&"model.half() halves the model"),
            "{:?}",
            on_f16.differences
        );
    }

    #[test]
    fn a_missing_card_and_a_native_report_judged_on_other_figures_are_differences() {
        let mut page = page_rows(SWIFTSHADER);
        page.retain(|row| !row.claim.starts_with("keep the eval batch small"));
        let out = against(&page, &native_rows());
        assert_eq!(claims_of(&out.differences), ["keep the eval batch small"]);
        // The full native report judges checkpointing's step time too, which the page cannot.
        let out = compare(
            &page_rows(SWIFTSHADER),
            SWIFTSHADER,
            &native_rows(),
            Bench::NATIVE,
            Cards::All,
        );
        assert_eq!(
            claims_of(&out.differences),
            ["checkpointing trades time for activation memory"]
        );
        assert!(out.differences[0].what.contains("--as-page"));
    }

    #[test]
    fn two_runs_that_failed_are_a_difference_not_the_same_verdict() {
        let (mut page, mut native) = (page_rows(SWIFTSHADER), native_rows());
        doctor(&mut page, "halve the batch", Verdict::NotMeasured);
        doctor(&mut native, "halve the batch", Verdict::NotMeasured);
        let out = against(&page, &native);
        assert_eq!(
            claims_of(&out.differences),
            ["halve the batch, halve the activation memory"]
        );
        assert_eq!(out.same + 1, out.ran);
    }

    #[test]
    fn cards_run_on_their_own_are_held_alone_and_at_least_one_must_run() {
        let ran_alone = |folklores: &[&str]| -> Vec<Row> {
            page_rows(SWIFTSHADER)
                .into_iter()
                .filter(|row| folklores.iter().any(|f| row.claim.starts_with(f)))
                .collect()
        };
        let page = ran_alone(&["halve the batch", "keep the eval batch small"]);
        assert_eq!(page.len(), 2);
        let out = compare(
            &page,
            SWIFTSHADER,
            &native_rows(),
            NATIVE_AS_PAGE,
            Cards::Some,
        );
        assert_eq!(out.differences, []);
        assert_eq!((out.ran, out.same), (2, 2));
        // The same table as "Run all"'s misses every other card.
        let all = against(&page, &native_rows());
        assert!(all.differences.len() > 10, "{:?}", all.differences);
        // A card that ran is still held to the native verdict.
        let mut native = native_rows();
        doctor(
            &mut native,
            "keep the eval batch small",
            Verdict::DoesNotHoldHere,
        );
        let out = compare(&page, SWIFTSHADER, &native, NATIVE_AS_PAGE, Cards::Some);
        assert_eq!(claims_of(&out.differences), ["keep the eval batch small"]);
        // A table in which nothing ran holds nothing.
        let out = compare(
            &[],
            SWIFTSHADER,
            &native_rows(),
            NATIVE_AS_PAGE,
            Cards::Some,
        );
        assert_eq!(out.differences.len(), 1);
        assert!(out.differences[0].what.contains("no card that ran"));
    }
}
