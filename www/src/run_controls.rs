//! The run's buttons: start, pause, resume, one step, reset, pin for A/B, import, and Plan, which
//! says at the button why plans run natively here and gives the command.

use leptos::prelude::*;
use vramlab::engine::AdapterInfo;
use vramlab::engine::config::MemoryPool;
use vramlab::engine::format::mib;
use vramlab::engine::memory::predict;
use vramlab::engine::strategies::memory_pool;

use crate::editor::Editor;
use crate::session::{Session, Status};
use crate::url_state;

#[component]
pub fn RunControls(
    editor: Editor,
    session: Session,
    lessons_running: RwSignal<bool>,
) -> impl IntoView {
    let live = session.live;
    let running = move || live.status.get().busy() || lessons_running.get();
    let start = move |_| session.start(editor.config.get_untracked(), true);
    let pause = move |_| session.pause();
    let resume = move |_| session.resume();
    let one_step = move |_| session.one_step(editor.config.get_untracked());
    let reset = move |_| session.reset();
    let plan_open = RwSignal::new(false);
    view! {
        <section class="panel controls">
            <button id="start" class="primary" on:click=start disabled=running>"Start"</button>
            <button id="pause" on:click=pause disabled=move || !running()>"Pause"</button>
            <button id="resume" on:click=resume
                disabled=move || live.status.get() != Status::Paused>"Resume"</button>
            <button id="step" on:click=one_step disabled=running>"One step"</button>
            <button id="reset" on:click=reset>"Reset"</button>
            <button id="pin" title="keep this run on the charts to compare with the next"
                disabled=move || live.timeline.with(Option::is_none)
                on:click=move |_| live.pinned.set(live.timeline.get_untracked())>"Pin for A/B"</button>
            <button id="unpin" disabled=move || live.pinned.with(Option::is_none)
                on:click=move |_| live.pinned.set(None)>"Unpin"</button>
            <button id="plan" title="what the allocator would hold for this config, without running it"
                on:click=move |_| plan_open.update(|open| *open = !*open)>"Plan"</button>
            <label class="import button" title="view a run exported as JSON">"Import JSON"
                <input type="file" id="import-json" accept=".json,application/json"
                    on:change=move |ev| {
                        let input: web_sys::HtmlInputElement = event_target(&ev);
                        if let Some(file) = input.files().and_then(|f| f.get(0)) {
                            session.import(file);
                        }
                    } />
            </label>
            <span id="status" class="status">{move || live.status.get().label()}</span>
            <span class="progress">{move || {
                let done = live.steps.with(Vec::len);
                format!("step {done} / {}", editor.config.with(|c| c.steps))
            }}</span>
        </section>
        {move || plan_open.get().then(|| view! {
            <PlanNote editor=editor pools=live.pools adapter=live.adapter close=plan_open />
        })}
    }
}

/// Why this page cannot plan on the pools its device started with; `None` until it started.
fn plan_refusal(pools: Option<MemoryPool>) -> Option<String> {
    let reason = memory_pool::cannot_plan(pools?)?;
    Some(format!(
        "Plans are off on this page: WebGPU builds of cubecl have only exclusive pages, and {reason}."
    ))
}

/// What a plan would answer and where to get it: why not here, the native command for this
/// config, and whether the estimate already says it will not fit this adapter.
#[component]
fn PlanNote(
    editor: Editor,
    pools: RwSignal<Option<MemoryPool>>,
    adapter: RwSignal<Option<AdapterInfo>>,
    close: RwSignal<bool>,
) -> impl IntoView {
    move || {
        let refusal = plan_refusal(pools.get());
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
        view! {
            <p class="note" id="plan-note">
                {over}{refusal}" A plan (the allocator's own figures from a dry run, no device \
                 memory) runs natively: "<code id="plan-command">{command}</code>
                " "<button class="close" title="close" on:click=move |_| close.set(false)>"\u{d7}"</button>
            </p>
        }
    }
}
