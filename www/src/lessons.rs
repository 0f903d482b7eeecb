//! The lessons: each folklore claim of the catalog as a card that runs the claim with the
//! engine (`engine::claims::run_claim`, the same runs and verdicts as `vramlab claims`) on this
//! page's adapter, overlays its two runs on a chart and gives the verdict with its figures and
//! the reason it came out so. "Run all lessons" runs every card in turn; its table exports as JSON or CSV and
//! travels as a URL (`#lessons=` and a letter per claim).

use leptos::prelude::*;
use leptos::task::spawn_local;
use vramlab::engine::claims::{
    Bench, Measure, Outcome, Report, Row, Verdict, cannot_run, left_out_of_run_all, run_claim,
    side_config,
};
use vramlab::engine::format::mib;
use vramlab::engine::link::verdicts::letter;
use vramlab::engine::strategies::catalog::{self, Claim, Entry, Metric};
use vramlab::engine::train::{InProcess, RunOutcome, Runner};
use vramlab::engine::{EngineError, Gpu, RunConfig, Timeline};

use crate::browser::{download, scroll_to};
use crate::charts::{LineChart, Series};
use crate::editor::Editor;
use crate::session::{Session, now_ms, yield_to_browser};

/// Set while lessons run: the page's own Start waits, since both would share the device.
#[derive(Clone, Copy)]
pub struct LessonsRunning(pub RwSignal<bool>);

/// Every claim of the catalog, in the order the CLI's report runs them.
fn all_claims() -> Vec<(&'static Entry, &'static Claim)> {
    catalog::claims().collect()
}

/// The card id of `entry`'s `claim`, for the links from the strategy fields. Found by field and
/// folklore: the catalog is a `const`, so its claims have no one address to compare.
pub fn card_id(entry: &Entry, claim: &Claim) -> Option<String> {
    catalog::claims()
        .position(|(e, c)| e.field == entry.field && c.folklore == claim.folklore)
        .map(|i| format!("lesson-{i}"))
}

/// The lessons' runs on this page's device, handing the page back to the browser between steps.
struct Stepwise<'a>(InProcess<'a>);

impl Runner for Stepwise<'_> {
    async fn train(&mut self, config: RunConfig) -> Result<RunOutcome, EngineError> {
        self.0.train_pausing(config, yield_to_browser).await
    }
}

/// What this page measures on an adapter with or without shader-f16.
fn bench_of(shader_f16: bool) -> Bench {
    Bench::page(shader_f16)
}

/// Cards "Run all lessons" runs on `bench`: every card but those the engine says the bench
/// cannot measure or "Run all" leaves to their own button. The e2e holds the cards that ran to
/// this count.
fn run_all_can_run(bench: Bench) -> usize {
    all_claims()
        .into_iter()
        .filter(|(entry, claim)| {
            cannot_run(entry, claim, bench).is_none() && left_out_of_run_all(entry, claim).is_none()
        })
        .count()
}

/// Run `claim` with the engine, unless "Run all" (`alone` false) leaves it to its own button;
/// the engine says when this page cannot measure it.
async fn run_lesson(
    entry: &'static Entry,
    claim: &'static Claim,
    gpu: &Gpu,
    alone: bool,
) -> Outcome {
    let started = now_ms();
    let bench = bench_of(gpu.adapter.shader_f16);
    let left_out = if alone {
        None
    } else {
        left_out_of_run_all(entry, claim)
    };
    let mut outcome = match left_out {
        Some(why) => Outcome {
            row: Row::unmeasured(entry, claim, claim.base.label(), Verdict::NotRunHere, why),
            off: None,
            on: None,
        },
        None => run_claim(&mut Stepwise(InProcess { gpu }), entry, claim, bench, None).await,
    };
    outcome.row.seconds = (now_ms() - started) / 1000.0;
    outcome
}

fn csv_field(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

fn csv(rows: &[Row]) -> String {
    let mut out = String::from("field,claim,metric,verdict,off_median,on_median,seconds,reason\n");
    let median = |m: &Option<Measure>| m.as_ref().map_or(String::new(), |m| m.median.to_string());
    for row in rows {
        out.push_str(&format!(
            "{},{},{},{},{},{},{:.1},{}\n",
            row.field,
            csv_field(&row.claim),
            row.metric,
            row.verdict,
            median(&row.off),
            median(&row.on),
            row.seconds,
            csv_field(&row.reason)
        ));
    }
    out
}

/// The two runs of a card: bytes in use at each step's high-water mark (at each evaluation's,
/// for a claim about evaluation), without and with the tip.
fn chart_series(off: &Option<Timeline>, on: &Option<Timeline>, metric: Metric) -> Vec<Series> {
    let points = |timeline: &Timeline| -> Vec<(f64, f64)> {
        if metric == Metric::EvalPeak {
            timeline
                .evals
                .iter()
                .map(|e| (e.step as f64, mib(e.high_water.in_use_bytes)))
                .collect()
        } else {
            timeline
                .steps
                .iter()
                .map(|s| (s.step as f64, mib(s.high_water.in_use_bytes)))
                .collect()
        }
    };
    let line = |timeline: &Timeline, name: &str, color: &'static str, dashed: bool| Series {
        name: name.to_string(),
        color,
        points: points(timeline),
        dashed,
    };
    let budget = metric == Metric::StopsUnderBudget;
    let on_name = if budget {
        "the run after the stop"
    } else {
        "with the tip"
    };
    off.iter()
        .map(|t| line(t, "without the tip", "#6b7280", false))
        .chain(on.iter().map(|t| line(t, on_name, "#2563eb", true)))
        .collect()
}

/// The playground set up as the card's run with the tip.
fn open_in_playground(editor: Editor, claim: &Claim) {
    editor.load_preset(claim.base.preset);
    if let Ok(config) = side_config(claim, claim.on, None) {
        editor.config.set(config);
    }
    scroll_to("data-panel");
}

#[component]
pub fn LessonsPanel(editor: Editor, shared: Option<Vec<Option<Verdict>>>) -> impl IntoView {
    let session = expect_context::<Session>();
    let LessonsRunning(running) = expect_context::<LessonsRunning>();
    let status = session.live.status;
    let claims = all_claims();
    let count = claims.len();
    let outcomes: RwSignal<Vec<Option<Outcome>>> = RwSignal::new(vec![None; count]);
    let current: RwSignal<Option<usize>> = RwSignal::new(None);
    let done: RwSignal<usize> = RwSignal::new(0);
    let all_seconds: RwSignal<Option<f64>> = RwSignal::new(None);
    let busy = move || running.get() || status.get().busy();

    // Run the cards `indices` in turn on this page's device.
    let run = move |indices: Vec<usize>| {
        session.reset();
        running.set(true);
        done.set(0);
        all_seconds.set(None);
        let started = now_ms();
        let total = indices.len();
        spawn_local(async move {
            let pool = RunConfig::default().strategies.memory_pool;
            let Some(gpu) = session.gpu(pool).await else {
                running.set(false);
                return;
            };
            for i in indices {
                let (entry, claim) = all_claims()[i];
                current.set(Some(i));
                let outcome = run_lesson(entry, claim, &gpu, total == 1).await;
                outcomes.update(|o| o[i] = Some(outcome));
                done.update(|d| *d += 1);
            }
            current.set(None);
            if total > 1 {
                all_seconds.set(Some((now_ms() - started) / 1000.0));
            }
            running.set(false);
        });
    };

    let rows = move || -> Vec<Row> {
        outcomes.with(|o| o.iter().flatten().map(|o| o.row.clone()).collect())
    };
    // What this page measures, once its adapter is known.
    let bench = move || {
        session
            .live
            .adapter
            .with(|a| a.as_ref().map(|a| bench_of(a.shader_f16)))
    };
    let export_json = move |_| {
        let report = Report {
            adapter: session
                .live
                .adapter
                .with_untracked(|a| a.as_ref().map(|a| a.name.clone()).unwrap_or_default()),
            bench: bench_of(
                session
                    .live
                    .adapter
                    .with_untracked(|a| a.as_ref().is_some_and(|a| a.shader_f16)),
            ),
            seconds: all_seconds.get_untracked().unwrap_or_default(),
            rows: rows(),
        };
        if let Ok(json) = serde_json::to_string_pretty(&report) {
            download("vramlab-lessons.json", "application/json", &json);
        }
    };
    let export_csv = move |_| download("vramlab-lessons.csv", "text/csv", &csv(&rows()));
    let share = move || {
        let letters: String = outcomes.with(|o| {
            o.iter()
                .map(|o| letter(o.as_ref().map(|o| o.row.verdict)))
                .collect()
        });
        format!("#lessons={letters}")
    };
    let shared_note = shared.as_ref().map(|verdicts| {
        let holds = verdicts
            .iter()
            .filter(|v| **v == Some(Verdict::Holds))
            .count();
        format!(
            "A shared link's verdicts are shown on the cards (\"from the link\") until these \
             lessons run here: {holds} of {count} held where they were run."
        )
    });
    let shared = StoredValue::new(shared);

    let cards = claims
        .into_iter()
        .enumerate()
        .map(|(i, (entry, claim))| {
            let outcome = move || outcomes.with(|o| o[i].clone());
            let from_link = move || shared.with_value(|s| s.as_ref().and_then(|s| s[i]));
            let series = Signal::derive(move || {
                outcomes.with(|o| {
                    o[i].as_ref()
                        .map(|o| chart_series(&o.off, &o.on, claim.metric))
                        .unwrap_or_default()
                })
            });
            let chart_title = if claim.metric == Metric::EvalPeak {
                "high-water in use per evaluation"
            } else {
                "high-water in use per step"
            };
            let sides = format!(
                "without: {} · with: {}",
                if claim.off.is_empty() { "no change".to_string() } else { claim.off.join(", ") },
                if claim.on.is_empty() { "a budget of half the high-water in use".to_string() } else { claim.on.join(", ") },
            );
            // The card's line when closed: the verdict (or where it stands), the ratio, the time.
            let badge = move || {
                if current.get() == Some(i) {
                    return ("running…".to_string(), "r".to_string());
                }
                match (outcome(), from_link()) {
                    (Some(o), _) => (o.row.verdict.to_string(), letter(Some(o.row.verdict)).to_string()),
                    (None, Some(v)) => (format!("{v} (from the link)"), letter(Some(v)).to_string()),
                    (None, None) => ("not run yet".to_string(), "-".to_string()),
                }
            };
            let figures = move || {
                outcome().filter(|o| o.row.verdict != Verdict::NotRunHere).map_or(String::new(), |o| {
                    let ratio = match (o.row.off, o.row.on) {
                        (Some(a), Some(b)) if a.median > 0.0 => format!("{:.2}x · ", b.median / a.median),
                        _ => String::new(),
                    };
                    format!("{ratio}{:.1} s", o.row.seconds)
                })
            };
            let data_verdict = move || outcome().map(|o| letter(Some(o.row.verdict)).to_string());
            let verdict = move || match outcome() {
                Some(o) => view! {
                    <p class="verdict" data-verdict=letter(Some(o.row.verdict)).to_string()
                        data-unjudged=o.row.unjudged.join("; ")>
                        <strong>{o.row.verdict.to_string()}</strong> ": " {o.row.reason.clone()}
                    </p>
                }
                .into_any(),
                None => view! {
                    <p class="verdict">"Not run yet: both runs train on this page's GPU, then the verdict shows here."</p>
                }
                .into_any(),
            };
            view! {
                <details class="lesson" id=format!("lesson-{i}") data-field=entry.field
                    data-claim=claim.folklore data-verdict=data_verdict>
                    <summary>
                        <span class="badge" data-verdict=move || badge().1>{move || badge().0}</span>
                        <span class="figures">{figures}</span>
                        <span class="lesson-claim">{claim.folklore}
                            <code class="lesson-field">{entry.field}</code></span>
                    </summary>
                    <p class="explain">"On " <code>{claim.base.label()}</code> ", " {claim.steps}
                        " steps, judged on " {claim.judged_on()} ". " {sides}</p>
                    <button class="run-lesson" disabled=busy on:click=move |_| run(vec![i])>"Run this lesson"</button>
                    " "
                    <button class="open-lesson" on:click=move |_| open_in_playground(editor, claim)>
                        "Open in the playground"
                    </button>
                    {verdict}
                    <p class="mechanism">{claim.mechanism}</p>
                    {claim.depends_on.map(|depends| view! {
                        <p class="depends-on">"The verdict depends on " {depends}
                            ": on another adapter it may differ."</p>
                    })}
                    {move || (!series.with(Vec::is_empty)).then(|| view! {
                        <LineChart title=chart_title unit="MiB" series=series
                            id=format!("lesson-chart-{i}") />
                    })}
                </details>
            }
        })
        .collect_view();

    view! {
        <section class="panel" id="lessons"
            data-can-run=move || bench().map(|b| run_all_can_run(b).to_string())>
            <div class="lessons-bar">
                <h2>"Lessons"</h2>
                <button id="run-all-lessons" disabled=busy on:click=move |_| run((0..count).collect())>
                    "Run all lessons"
                </button>
                <progress id="lessons-progress" max=count value=move || done.get()></progress>
                <span id="lessons-status" class="status">{move || {
                    let seconds = all_seconds.get().map(|s| format!(", all in {s:.1} s")).unwrap_or_default();
                    let now = current.get().map(|i| format!(": {}", all_claims()[i].1.folklore)).unwrap_or_default();
                    format!("{} of {count} run{now}{seconds}", outcomes.with(|o| o.iter().flatten().count()))
                }}</span>
                <span class="exports">
                    <button id="lessons-json" on:click=export_json>"Export JSON"</button>
                    <button id="lessons-csv" on:click=export_csv>"Export CSV"</button>
                    <a id="lessons-share" href=share title="these verdicts as a link">"Link to these verdicts"</a>
                </span>
            </div>
            <p class="explain">
                "Each card is a piece of out-of-memory folklore, run without and with the tip on \
                 this browser's GPU (the same runs as " <code>"vramlab claims"</code> "), judged \
                 on the figure the claim is about: a verdict needs a difference beyond the \
                 steps' spread. Open a card for its runs and why it came out so."
            </p>
            {shared_note.map(|n| view! { <p class="note" id="lessons-shared">{n}</p> })}
            <div class="lesson-grid">{cards}</div>
        </section>
    }
}
