//! The max-batch finder on the page: the engine's search, run in this page's process, with its
//! trials listed as they happen and the answer one click from the batch size field.

use leptos::prelude::*;
use leptos::task::spawn_local;
use vramlab::engine::finder::{self, Method, Question, Search, Trial};
use vramlab::engine::format::ByteFormat;
use vramlab::engine::train::{InProcess, RunOutcome, Runner};
use vramlab::engine::{EngineError, Purpose, RunConfig};

use crate::editor::Editor;
use crate::format::out_of_memory_text;
use crate::session::{self, Session};

/// The engine's in-process trials, handing the page back to the browser between them.
struct Yielding<'a>(InProcess<'a>);

impl Runner for Yielding<'_> {
    async fn train(&mut self, config: RunConfig) -> Result<RunOutcome, EngineError> {
        let result = self.0.train(config).await;
        session::yield_to_browser().await;
        result
    }
}

#[component]
pub fn FinderPanel(editor: Editor) -> impl IntoView {
    let session = expect_context::<Session>();
    let status = session.live.status;
    let trials: RwSignal<Vec<Trial>> = RwSignal::new(Vec::new());
    let result: RwSignal<Option<Result<Search, String>>> = RwSignal::new(None);
    let searching = RwSignal::new(false);
    let no_budget = move || editor.config.with(|c| c.budget.is_none());
    let busy = move || searching.get() || status.get().busy();
    let find = move |_| {
        let config = editor.config.get_untracked();
        let Some(budget) = config.budget else { return };
        // The search measures from the device's baseline: no other run may hold memory.
        session.reset();
        trials.set(Vec::new());
        result.set(None);
        searching.set(true);
        spawn_local(async move {
            let Some(gpu) = session.gpu(config.strategies.memory_pool).await else {
                searching.set(false);
                return;
            };
            let question = Question {
                config: &config,
                axis: finder::Axis::Batch,
                budget_bytes: budget.bytes(gpu.adapter.max_buffer_size),
                multiple_of: 1,
                max_trials: None,
                purpose: Purpose::Run,
                bound: None,
            };
            let mut runner = Yielding(InProcess { gpu: &gpu });
            let mut on_trial = |trial: &Trial| trials.update(|t| t.push(trial.clone()));
            let found = finder::find(&question, Method::Vramlab, &mut runner, &mut on_trial).await;
            result.set(Some(found.map_err(|err| err.to_string())));
            searching.set(false);
        });
    };
    let rows = move || {
        trials
            .get()
            .into_iter()
            .map(|t| {
                let verdict = if t.fits { "fits" } else { "out of memory" };
                view! {
                    <tr class=if t.fits { "fits" } else { "oom" }>
                        <td>{t.batch}</td>
                        <td>{verdict}</td>
                        <td>{ByteFormat::MIB.number(t.peak_in_use_bytes)}</td>
                        <td>{ByteFormat::MIB.number(t.peak_reserved_bytes)}</td>
                    </tr>
                }
            })
            .collect_view()
    };
    let answer = move || {
        result.get().map(|found| match found {
            Ok(search) => {
                let text = match search.max_batch {
                    Some(b) => format!(
                        "largest batch: {b} ({} trials, {} out of memory, {:.1} s)",
                        search.trials, search.ooms, search.seconds
                    ),
                    None => match search.smallest_failure() {
                        Some((batch, oom)) => format!(
                            "no batch fits this budget: even batch {batch} ran out of memory.\n{}",
                            out_of_memory_text(oom)
                        ),
                        None => "no batch fits this budget".to_string(),
                    },
                };
                let apply = search.max_batch.map(|b| {
                    view! {
                        <button id="use-batch" on:click=move |_| editor.set("batch_size", &b.to_string())>
                            "Use this batch"
                        </button>
                    }
                });
                view! { <p id="finder-result">{text} " " {apply}</p> }.into_any()
            }
            Err(err) => view! { <p class="error" id="finder-error">{err}</p> }.into_any(),
        })
    };
    view! {
        <section class="panel" id="finder">
            <h2>"Max-batch finder"</h2>
            <p class="explain">
                "The largest batch whose training step (the optimizer's first included) and \
                 evaluation fit the memory budget: calibrated prediction, then real trials."
            </p>
            <button id="find-batch" on:click=find disabled=move || busy() || no_budget()>
                "Find max batch"
            </button>
            {move || no_budget().then(|| view! { <span class="explain">" set a memory budget first"</span> })}
            {move || searching.get().then(|| view! { <span class="status">" searching…"</span> })}
            <table class="trials">
                <thead><tr><th>"batch"</th><th>"trial"</th><th>"peak in use MiB"</th><th>"reserved MiB"</th></tr></thead>
                <tbody id="finder-trials">{rows}</tbody>
            </table>
            {answer}
        </section>
    }
}
