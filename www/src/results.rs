//! What a finished run measured: its summary (with JSON and CSV export) and, when a run is
//! pinned, the A/B table beside it with the category that moved most.

use leptos::prelude::*;
use vramlab::engine::format::ByteFormat;
use vramlab::engine::memory::Categories;
use vramlab::engine::phase::Phase;
use vramlab::engine::train::{Summary, Timeline};

use crate::browser::download;
use crate::session::Pinned;

/// The most bytes in use over the training steps' phases (the evaluation left out).
fn training_high_water(summary: &Summary) -> u64 {
    summary
        .high_water_in_use_by_phase
        .iter()
        .filter(|(phase, _)| **phase != Phase::Eval)
        .map(|(_, &bytes)| bytes)
        .max()
        .unwrap_or(summary.high_water_in_use_bytes)
}

/// ms per step of finished work (wall time between awaited loss readbacks), or why there is
/// none.
fn completed(summary: &Summary) -> String {
    summary
        .completed_step_ms
        .map_or("- (too few steps)".into(), |ms| format!("{ms:.1}"))
}

/// The pinned run beside the current one: the differences that matter.
#[component]
pub fn Comparison(
    pinned: RwSignal<Option<Pinned>>,
    timeline: RwSignal<Option<Timeline>>,
) -> impl IntoView {
    move || {
        // The summaries only: the runs' steps stay where they are.
        let a = pinned.with(|p| p.as_ref().map(|p| p.summary.clone()))?;
        let b = timeline.with(|t| t.as_ref().map(|t| t.summary.clone()));
        let loss = |l: Option<f32>| l.map_or("NaN".to_string(), |v| format!("{v:.4}"));
        let ratio = |x: f64, y: Option<f64>| y.filter(|_| x > 0.0).map(|y| y / x);
        let mib_row = |name: &'static str, pick: fn(&Summary) -> u64| {
            (
                name,
                ByteFormat::MIB.of(pick(&a)),
                b.as_ref().map(|b| ByteFormat::MIB.of(pick(b))),
                ratio(pick(&a) as f64, b.as_ref().map(|b| pick(b) as f64)),
            )
        };
        let rows = [
            mib_row("high-water in use: training", training_high_water),
            mib_row("high-water in use: evaluation", |s| {
                s.high_water_in_use_by_phase
                    .get(&Phase::Eval)
                    .copied()
                    .unwrap_or(0)
            }),
            mib_row("high-water reserved", |s| s.high_water_reserved_bytes),
            (
                "ms/step completed",
                completed(&a),
                b.as_ref().map(completed),
                ratio(
                    a.completed_step_ms.unwrap_or(f64::NAN),
                    b.as_ref().and_then(|b| b.completed_step_ms),
                ),
            ),
            (
                "final loss",
                loss(a.final_loss),
                b.as_ref().map(|b| loss(b.final_loss)),
                None,
            ),
        ];
        let rows = rows
            .into_iter()
            .map(|(name, pinned, now, ratio)| {
                view! {
                    <tr>
                        <td>{name}</td>
                        <td>{pinned}</td>
                        <td>{now.unwrap_or_else(|| "-".into())}</td>
                        <td>{ratio.map_or("-".to_string(), |r| format!("{r:.2}x"))}</td>
                    </tr>
                }
            })
            .collect_view();
        let categories = category_rows(
            a.high_water_by_category,
            b.as_ref().and_then(|b| b.high_water_by_category),
        );
        Some(view! {
            <section class="panel" id="comparison">
                <h2>"A/B: pinned run vs this run"</h2>
                <table>
                    <tr><th></th><th>"pinned"</th><th>"this run"</th><th>"this / pinned"</th></tr>
                    {rows}
                    {categories}
                </table>
            </section>
        })
    }
}

/// The training high-water mark's categories, pinned beside current, the one that moved most
/// marked: which category a strategy changed.
fn category_rows(pinned: Option<Categories>, now: Option<Categories>) -> Option<impl IntoView> {
    let pinned = pinned?;
    let changes: Vec<i128> = match now {
        Some(now) => pinned
            .values()
            .iter()
            .zip(now.values())
            .map(|(&a, b)| i128::from(b) - i128::from(a))
            .collect(),
        None => vec![0; Categories::NAMES.len()],
    };
    let most = changes
        .iter()
        .enumerate()
        .max_by_key(|(_, change)| change.unsigned_abs())
        .filter(|(_, change)| **change != 0)
        .map(|(i, _)| i);
    let rows = Categories::NAMES
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let a = pinned.values()[i];
            let b = now.map(|now| now.values()[i]);
            let class = if most == Some(i) { "moved-most" } else { "" };
            let change = b.map_or("-".to_string(), |_| {
                ByteFormat::MIB.signed().of_f64(changes[i] as f64)
            });
            view! {
                <tr class=class data-category=*name>
                    <td>{format!("  {}", name.replace('_', " "))}</td>
                    <td>{ByteFormat::MIB.of(a)}</td>
                    <td>{b.map_or("-".to_string(), |b| ByteFormat::MIB.of(b))}</td>
                    <td>{change}</td>
                </tr>
            }
        })
        .collect_view();
    Some(view! {
        <tr><th>"training high-water by category"</th><th></th><th></th><th>"change"</th></tr>
        {rows}
    })
}

#[component]
pub fn SummaryCard(timeline: RwSignal<Option<Timeline>>) -> impl IntoView {
    view! {
        {move || timeline.with(|t| t.as_ref().map(|t| {
            let s = &t.summary;
            let loss = |l: Option<f32>| l.map_or("NaN".to_string(), |v| format!("{v:.4}"));
            view! {
                <section class="panel" id="summary">
                    <h2>"Summary (measured)"</h2>
                    <dl>
                        <dt title=s.high_water_is.clone()>"high-water in use"</dt><dd id="peak-in-use">{ByteFormat::MIB.of(s.high_water_in_use_bytes)}</dd>
                        <dt>"of which training steps"</dt><dd id="training-high-water">{ByteFormat::MIB.of(training_high_water(s))}</dd>
                        <dt title=s.high_water_is.clone()>"high-water reserved"</dt><dd>{ByteFormat::MIB.of(s.high_water_reserved_bytes)}</dd>
                        <dt title=s.peak_is.clone()>"largest reading in use"</dt><dd id="largest-reading">{ByteFormat::MIB.of(s.peak_in_use_bytes)}</dd>
                        <dt>"predicted peak (estimate)"</dt><dd>{ByteFormat::MIB.of(s.predicted_peak_bytes)}</dd>
                        <dt>"loss"</dt><dd>{format!("{} -> {}", loss(s.first_loss), loss(s.final_loss))}</dd>
                        <dt>"test accuracy"</dt><dd>{s.eval_accuracy.map_or("-".into(), |a| format!("{:.1}%", a * 100.0))}</dd>
                        <dt title="wall time between awaited loss readbacks, per step: the time the GPU took to finish the work">"ms/step completed"</dt><dd id="completed-ms">{completed(s)}</dd>
                        <dt title="in the browser the page cannot wait for the GPU inside a step: this is the time to queue it">"ms/step to queue (median)"</dt><dd>{format!("{:.1}", s.median_step_ms)}</dd>
                    </dl>
                    <p class="explain" id="high-water-is">"High-water: " {s.high_water_is.clone()}</p>
                    {t.expert_load.as_ref().map(|load| view! { <p class="explain" id="expert-load">{load.describe()}</p> })}
                    <dl>
                    </dl>
                    {s.fallbacks.iter().map(|f| view! { <p class="note fallback">{f.to_string()}</p> }).collect_view()}
                    // Written when asked for: a long run's JSON is megabytes, and kept ready
                    // it was the largest thing the page held (docs/performance.md, the soak).
                    <button id="export-json" on:click=move |_| timeline.with_untracked(|t| {
                        if let Some(t) = t {
                            let json = serde_json::to_string_pretty(t).unwrap_or_default();
                            download("vramlab-run.json", "application/json", &json);
                        }
                    })>"Export JSON"</button>
                    <button id="export-csv" on:click=move |_| timeline.with_untracked(|t| {
                        if let Some(t) = t {
                            download("vramlab-run.csv", "text/csv", &t.to_csv());
                        }
                    })>"Export CSV"</button>
                </section>
            }
        }))}
    }
}
