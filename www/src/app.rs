//! The page: configuration on the left, live charts on the right.

use leptos::prelude::*;
use vramlab::engine::AdapterInfo;
use vramlab::engine::RunConfig;
use vramlab::engine::config::MemoryPool;
use vramlab::engine::memory::{Categories, predict};
use vramlab::engine::outcome::{OutOfMemory, Suggestion};
use vramlab::engine::phase::Phase;
use vramlab::engine::strategies::{catalog, memory_pool};
use vramlab::engine::train::{StepRecord, Summary, Timeline};
use wasm_bindgen::JsCast;

use crate::charts::{LineChart, Marker, PhaseBar, PhaseBars, Rule, Series};
use crate::config_panel::{ConfigPanel, Editor};
use crate::data_preview::DataPreview;
use crate::finder_panel::FinderPanel;
use crate::lessons::{LessonsPanel, LessonsRunning, shared_verdicts};
use crate::memory_charts::{CategoryChart, OneStepChart, Stack, predicted_stack};
use crate::session::{Live, Session, Status};
use crate::table_input::TableInput;
use crate::url_state;

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1048576.0
}

/// An out-of-memory as the page words it: where, then each change by its label on the page.
pub fn out_of_memory_text(oom: &OutOfMemory) -> String {
    oom.describe(|suggestion: &Suggestion| {
        let label = catalog::find(&suggestion.field).map_or(suggestion.field.as_str(), |e| e.label);
        let peak = match suggestion.estimated_peak_bytes {
            Some(peak) => format!("estimated peak {:.3} MiB", mib(peak)),
            None => "the live bytes fit; exclusive pages are sized to each allocation (reload \
                     the page with it to start the device that way)"
                .to_string(),
        };
        format!("set {label} to {} ({peak})", suggestion.value)
    })
}

#[component]
pub fn App() -> impl IntoView {
    let from_url = url_state::parse(&url_state::current_hash());
    let editor = Editor {
        preset: RwSignal::new(from_url.preset),
        config: RwSignal::new(from_url.config),
        refused: RwSignal::new(None),
    };
    let (shared_lessons, lessons_note) = match from_url.lessons.as_deref().map(shared_verdicts) {
        Some(Ok(verdicts)) => (Some(verdicts), None),
        Some(Err(note)) => (None, Some(note)),
        None => (None, None),
    };
    let url_note = RwSignal::new(from_url.note.or(lessons_note));
    let session = Session::new();
    provide_context(session);
    let lessons_running = RwSignal::new(false);
    provide_context(LessonsRunning(lessons_running));
    let live = session.live;

    // The URL follows the configuration, so a link reproduces the setup.
    Effect::new(move |_| {
        let hash = url_state::render(&editor.preset.get(), &editor.config.get());
        url_state::store(&hash);
    });
    // Ask for the adapter up front: the adapter card, and the f16 choice, depend on it.
    // The pools are fixed when the device starts: the URL's choice is taken at page load.
    let pool = editor.config.with_untracked(|c| c.strategies.memory_pool);
    leptos::task::spawn_local(async move {
        session.gpu(pool).await;
    });

    let running = move || live.status.get().busy() || lessons_running.get();
    let start = move |_| session.start(editor.config.get_untracked(), true);
    let pause = move |_| session.pause();
    let resume = move |_| session.resume();
    let one_step = move |_| session.one_step(editor.config.get_untracked());
    let reset = move |_| session.reset();

    view! {
        <header>
            <h1>"vramlab"</h1>
            <p class="tagline">
                "Train a real model on your GPU (WebGPU) and watch what each memory-saving trick does \
                 to the allocator's bytes. Measured numbers come from the allocator; predictions are estimates."
            </p>
        </header>
        {move || url_note.get().map(|n| view! { <p class="note" id="url-note">{n}</p> })}
        {move || live.no_webgpu.get().map(|m| view! { <p class="error" id="no-webgpu">{m}</p> })}
        <main>
            <div class="left">
                <AdapterCard adapter=live.adapter no_webgpu=live.no_webgpu />
                <section class="panel" id="data-preview">
                    <h2>"Data"</h2>
                    <TableInput editor=editor />
                    <DataPreview config=editor.config grid=live.grid />
                </section>
                <ConfigPanel editor=editor adapter=live.adapter />
                {move || editor.refused.get().map(|r| view! { <p class="error" id="refused">{r}</p> })}
                <PredictionCard config=editor.config />
            </div>
            <div class="right">
                <section class="panel controls">
                    <button id="start" on:click=start disabled=running>"Start"</button>
                    <button id="pause" on:click=pause disabled=move || !running()>"Pause"</button>
                    <button id="resume" on:click=resume
                        disabled=move || live.status.get() != Status::Paused>"Resume"</button>
                    <button id="step" on:click=one_step disabled=running>"One step"</button>
                    <PlanButton pools=live.pools />
                    <button id="reset" on:click=reset>"Reset"</button>
                    <button id="pin" title="keep this run on the charts to compare with the next"
                        disabled=move || live.timeline.with(Option::is_none)
                        on:click=move |_| live.pinned.set(live.timeline.get_untracked())>"Pin for A/B"</button>
                    <label class="import" title="view a run exported as JSON">"Import JSON "
                        <input type="file" id="import-json" accept=".json,application/json"
                            on:change=move |ev| {
                                let input: web_sys::HtmlInputElement = event_target(&ev);
                                if let Some(file) = input.files().and_then(|f| f.get(0)) {
                                    session.import(file);
                                }
                            } />
                    </label>
                    <button id="unpin" disabled=move || live.pinned.with(Option::is_none)
                        on:click=move |_| live.pinned.set(None)>"Unpin"</button>
                    <span id="status" class="status">{move || live.status.get().label()}</span>
                    <span class="progress">{move || {
                        let done = live.steps.with(Vec::len);
                        format!("step {done} / {}", editor.config.with(|c| c.steps))
                    }}</span>
                </section>
                <PlanNote editor=editor pools=live.pools adapter=live.adapter />
                {move || live.error.get().map(|e| view! { <p class="error" id="run-error">{e}</p> })}
                <Charts live=live config=editor.config />
                <Comparison pinned=live.pinned timeline=live.timeline />
                <FinderPanel editor=editor />
                <SummaryCard timeline=live.timeline />
            </div>
        </main>
        <LessonsPanel editor=editor shared=shared_lessons />
    }
}

/// Why this page cannot plan on the pools its device started with; `None` until it started.
fn plan_refusal(pools: Option<MemoryPool>) -> Option<String> {
    let reason = memory_pool::cannot_plan(pools?)?;
    Some(format!(
        "Plans are off on this page: WebGPU builds of cubecl have only exclusive pages, and {reason}."
    ))
}

/// Plans need pools that carve pages lazily, which a WebGPU build of cubecl does not have: the
/// button stays off and says why once the device has started.
#[component]
fn PlanButton(pools: RwSignal<Option<MemoryPool>>) -> impl IntoView {
    view! {
        <button id="plan" disabled=true
            title=move || plan_refusal(pools.get()).unwrap_or_default()>"Plan"</button>
    }
}

/// What a plan would answer and where to get it: the native command for this config, and
/// whether the estimate already says it will not fit this adapter.
#[component]
fn PlanNote(
    editor: Editor,
    pools: RwSignal<Option<MemoryPool>>,
    adapter: RwSignal<Option<AdapterInfo>>,
) -> impl IntoView {
    move || {
        let refusal = plan_refusal(pools.get())?;
        let command = url_state::command_line("plan", &editor.preset.get(), &editor.config.get());
        let estimate = editor.config.with(predict).peak;
        let over = adapter
            .get()
            .filter(|a| estimate > a.max_buffer_size)
            .map(|a| {
                format!(
                    "The estimate for this config, {:.0} MiB, is over this adapter's {:.0} MiB. ",
                    mib(estimate),
                    mib(a.max_buffer_size)
                )
            });
        Some(view! {
            <p class="note" id="plan-note">
                {over}{refusal}" A plan (the allocator's own figures from a dry run, no device \
                 memory) runs natively: "<code id="plan-command">{command}</code>
            </p>
        })
    }
}

#[component]
fn AdapterCard(
    adapter: RwSignal<Option<AdapterInfo>>,
    no_webgpu: RwSignal<Option<String>>,
) -> impl IntoView {
    view! {
        <section class="panel" id="adapter-card">
            <h2>"Adapter"</h2>
            {move || match adapter.get() {
                Some(a) => view! {
                    <dl>
                        <dt>"name"</dt><dd>{if a.name.is_empty() { "(not disclosed by the browser)".to_string() } else { a.name.clone() }}</dd>
                        <dt>"backend"</dt><dd>{a.backend.clone()}</dd>
                        <dt>"shader-f16"</dt><dd id="shader-f16">{if a.shader_f16 { "yes" } else { "no" }}</dd>
                        <dt>"max buffer"</dt><dd>{format!("{:.0} MiB", mib(a.max_buffer_size))}</dd>
                    </dl>
                }.into_any(),
                None if no_webgpu.with(Option::is_some) => {
                    view! { <p>"no WebGPU adapter (see the message above)"</p> }.into_any()
                }
                None => view! { <p>"asking the browser for a WebGPU adapter..."</p> }.into_any(),
            }}
        </section>
    }
}

#[component]
fn PredictionCard(config: RwSignal<RunConfig>) -> impl IntoView {
    let prediction = Memo::new(move |_| predict(&config.get()));
    view! {
        <section class="panel" id="prediction">
            <h2>"Analytic prediction (estimate)"</h2>
            {move || {
                let p = prediction.get();
                view! {
                    <dl>
                        <dt>"parameters"</dt><dd id="param-count">{p.param_count}</dd>
                        <dt>"params"</dt><dd>{format!("{:.2} MiB", mib(p.params))}</dd>
                        <dt>"gradients"</dt><dd>{format!("{:.2} MiB", mib(p.grads))}</dd>
                        <dt>"optimizer state"</dt><dd>{format!("{:.2} MiB", mib(p.optimizer_state))}</dd>
                        <dt>"activations"</dt><dd>{format!("{:.2} MiB", mib(p.activations))}</dd>
                        <dt>"peak"</dt><dd id="predicted-peak">{format!("{:.2} MiB", mib(p.peak))}</dd>
                    </dl>
                }
            }}
        </section>
    }
}

#[component]
fn Charts(live: Live, config: RwSignal<RunConfig>) -> impl IntoView {
    let memory = Signal::derive(move || {
        let mut series = live.steps.with(|steps| {
            let pick = |f: fn(&StepRecord) -> u64| {
                steps
                    .iter()
                    .map(|s| (s.step as f64, mib(f(s))))
                    .collect::<Vec<_>>()
            };
            vec![
                Series {
                    name: "in use: the step's high-water".into(),
                    color: "#1f77b4",
                    points: pick(|s| s.high_water.in_use_bytes),
                    dashed: false,
                },
                Series {
                    name: "reserved: the step's high-water".into(),
                    color: "#ff7f0e",
                    points: pick(|s| s.high_water.reserved_bytes),
                    dashed: false,
                },
                Series {
                    name: "in use at the step's end".into(),
                    color: "#17becf",
                    points: pick(|s| {
                        s.phases
                            .get(&Phase::Optimizer)
                            .map_or(0, |r| r.in_use_bytes)
                    }),
                    dashed: true,
                },
            ]
        });
        if let Some(pinned) = live.pinned.get() {
            series.push(Series {
                name: "pinned: in use, high-water".into(),
                color: "#7f7f7f",
                points: pinned
                    .steps
                    .iter()
                    .map(|s| (s.step as f64, mib(s.high_water.in_use_bytes)))
                    .collect(),
                dashed: true,
            });
        }
        series
    });
    let memory_rules = Signal::derive(move || {
        let predicted = live.prediction.get().map(|p| Rule {
            label: format!("predicted peak {:.2} MiB", mib(p.peak)),
            y: mib(p.peak),
            color: "#2ca02c",
        });
        let budget = live
            .timeline
            .with(|t| t.as_ref().and_then(|t| t.config.budget));
        let budget = budget.or_else(|| config.with(|c| c.budget));
        let budget = budget.zip(live.adapter.get()).map(|(budget, adapter)| {
            let bytes = budget.bytes(adapter.max_buffer_size);
            Rule {
                label: format!("budget {:.2} MiB", mib(bytes)),
                y: mib(bytes),
                color: "#d62728",
            }
        });
        predicted.into_iter().chain(budget).collect::<Vec<_>>()
    });
    let losses = Signal::derive(move || {
        let train = live.steps.with(|s| {
            s.iter()
                .filter_map(|r| r.loss.map(|l| (r.step as f64, l as f64)))
                .collect()
        });
        let test = live
            .evals
            .with(|e| e.iter().map(|r| (r.step as f64, r.loss as f64)).collect());
        let mut series = vec![
            Series {
                name: "train".into(),
                color: "#1f77b4",
                points: train,
                dashed: false,
            },
            Series {
                name: "test".into(),
                color: "#d62728",
                points: test,
                dashed: false,
            },
        ];
        if let Some(pinned) = live.pinned.get() {
            series.push(Series {
                name: "pinned: train".into(),
                color: "#7f7f7f",
                points: pinned
                    .steps
                    .iter()
                    .filter_map(|r| r.loss.map(|l| (r.step as f64, l as f64)))
                    .collect(),
                dashed: true,
            });
        }
        series
    });
    let throughput = Signal::derive(move || {
        let batch = live.batch_size.get() as f64;
        let steps_per_s = live
            .completed_ms
            .with(|completed| smoothed_rate(completed, THROUGHPUT_WINDOW));
        vec![
            Series {
                name: format!("steps/s (over {THROUGHPUT_WINDOW} steps)"),
                color: "#9467bd",
                points: steps_per_s.clone(),
                dashed: false,
            },
            Series {
                name: "samples/s / 1000".into(),
                color: "#8c564b",
                points: steps_per_s
                    .iter()
                    .map(|&(x, y)| (x, y * batch / 1000.0))
                    .collect(),
                dashed: true,
            },
        ]
    });
    let failure_marker = Signal::derive(move || {
        live.failed.with(|failed| {
            failed.as_ref().map(|trace| Marker {
                x: trace.step as f64,
                label: format!("out of memory at step {}", trace.step),
            })
        })
    });
    let stacks = Signal::derive(move || {
        live.steps.with(|steps| {
            steps
                .iter()
                .filter_map(|s| s.categories.map(|c| Stack::of(s.step, &c)))
                .collect::<Vec<_>>()
        })
    });
    let predicted =
        Signal::derive(move || live.prediction.with(|p| p.as_ref().map(predicted_stack)));
    let pinned_totals = Signal::derive(move || {
        live.pinned.with(|pinned| {
            pinned.as_ref().map_or(Vec::new(), |t| {
                t.steps
                    .iter()
                    .filter_map(|s| s.categories.map(|c| (s.step as f64, mib(c.total()))))
                    .collect()
            })
        })
    });
    let one_step = Signal::derive(move || match live.failed.get() {
        Some(failed) => Some((failed, true)),
        None => live.trace.get().map(|trace| (trace, false)),
    });
    let phases = Signal::derive(move || {
        live.steps.with(|steps| {
            steps
                .last()
                .map(|s| {
                    Phase::ALL
                        .iter()
                        .filter_map(|p| {
                            s.phases.get(p).map(|r| PhaseBar {
                                name: p.name(),
                                at_end: mib(r.in_use_bytes),
                                high_water: s.phase_high_water.get(p).map(|m| mib(m.in_use_bytes)),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
    });
    view! {
        <LineChart id="memory-chart" title="Memory over steps" unit="MiB" series=memory rules=memory_rules
            marker=failure_marker />
        <CategoryChart stacks=stacks predicted=predicted rules=memory_rules marker=failure_marker
            pinned=pinned_totals />
        <OneStepChart trace=one_step rules=memory_rules />
        <PhaseBars phases=phases />
        <LineChart id="loss-chart" title="Loss" unit="cross-entropy" series=losses />
        <LineChart id="throughput-chart" title="Throughput" unit="per second" series=throughput />
    }
}

/// Steps per second over a window of this many steps: one step's rate swings with every
/// readback and redraw.
const THROUGHPUT_WINDOW: usize = 10;

/// Steps per second at each step, over up to `window` steps before it; `completed` holds the
/// page-clock time each step's loss came back.
fn smoothed_rate(completed: &[f64], window: usize) -> Vec<(f64, f64)> {
    // Losses come back in groups, so neighbouring steps share a time: each rate is taken
    // from the last window steps' first earlier time, and a step with none has no rate.
    (1..completed.len())
        .filter_map(|i| {
            let from = (i.saturating_sub(window)..i).find(|&j| completed[j] < completed[i])?;
            let seconds = (completed[i] - completed[from]) / 1000.0;
            Some(((i + 1) as f64, (i - from) as f64 / seconds))
        })
        .collect()
}

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
fn Comparison(
    pinned: RwSignal<Option<Timeline>>,
    timeline: RwSignal<Option<Timeline>>,
) -> impl IntoView {
    move || {
        let pinned = pinned.get()?;
        let current = timeline.get();
        let (a, b) = (pinned.summary, current.map(|t| t.summary));
        let loss = |l: Option<f32>| l.map_or("NaN".to_string(), |v| format!("{v:.4}"));
        let ratio = |x: f64, y: Option<f64>| y.filter(|_| x > 0.0).map(|y| y / x);
        let mib_row = |name: &'static str, pick: fn(&Summary) -> u64| {
            (
                name,
                format!("{:.2} MiB", mib(pick(&a))),
                b.as_ref().map(|b| format!("{:.2} MiB", mib(pick(b)))),
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
                format!("{:+.2} MiB", changes[i] as f64 / 1048576.0)
            });
            view! {
                <tr class=class data-category=*name>
                    <td>{format!("  {}", name.replace('_', " "))}</td>
                    <td>{format!("{:.2} MiB", mib(a))}</td>
                    <td>{b.map_or("-".to_string(), |b| format!("{:.2} MiB", mib(b)))}</td>
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

pub fn download(name: &str, mime: &str, text: &str) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let parts = js_sys::Array::of1(&text.into());
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    if let Ok(anchor) = document.create_element("a")
        && let Ok(anchor) = anchor.dyn_into::<web_sys::HtmlAnchorElement>()
    {
        anchor.set_href(&url);
        anchor.set_download(name);
        anchor.click();
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}

#[component]
fn SummaryCard(timeline: RwSignal<Option<Timeline>>) -> impl IntoView {
    view! {
        {move || timeline.get().map(|t| {
            let s = &t.summary;
            let json = serde_json::to_string_pretty(&t).unwrap_or_default();
            let table = t.to_csv();
            let loss = |l: Option<f32>| l.map_or("NaN".to_string(), |v| format!("{v:.4}"));
            view! {
                <section class="panel" id="summary">
                    <h2>"Summary (measured)"</h2>
                    <dl>
                        <dt title=s.high_water_is.clone()>"high-water in use"</dt><dd id="peak-in-use">{format!("{:.2} MiB", mib(s.high_water_in_use_bytes))}</dd>
                        <dt>"of which training steps"</dt><dd id="training-high-water">{format!("{:.2} MiB", mib(training_high_water(s)))}</dd>
                        <dt title=s.high_water_is.clone()>"high-water reserved"</dt><dd>{format!("{:.2} MiB", mib(s.high_water_reserved_bytes))}</dd>
                        <dt title=s.peak_is.clone()>"largest reading in use"</dt><dd id="largest-reading">{format!("{:.2} MiB", mib(s.peak_in_use_bytes))}</dd>
                        <dt>"predicted peak (estimate)"</dt><dd>{format!("{:.2} MiB", mib(s.predicted_peak_bytes))}</dd>
                        <dt>"loss"</dt><dd>{format!("{} -> {}", loss(s.first_loss), loss(s.final_loss))}</dd>
                        <dt>"test accuracy"</dt><dd>{s.eval_accuracy.map_or("-".into(), |a| format!("{:.1}%", a * 100.0))}</dd>
                        <dt title="wall time between awaited loss readbacks, per step: the time the GPU took to finish the work">"ms/step completed"</dt><dd id="completed-ms">{completed(s)}</dd>
                        <dt title="in the browser the page cannot wait for the GPU inside a step: this is the time to queue it">"ms/step to queue (median)"</dt><dd>{format!("{:.1}", s.median_step_ms)}</dd>
                    </dl>
                    <p class="explain" id="high-water-is">"High-water: " {s.high_water_is.clone()}</p>
                    <dl>
                    </dl>
                    {s.fallbacks.iter().map(|f| view! { <p class="note fallback">{f.to_string()}</p> }).collect_view()}
                    <button id="export-json" on:click=move |_| download("vramlab-run.json", "application/json", &json)>"Export JSON"</button>
                    <button id="export-csv" on:click=move |_| download("vramlab-run.csv", "text/csv", &table)>"Export CSV"</button>
                </section>
            }
        })}
    }
}
