//! The run's buttons: start, pause, resume, one step, reset, pin for A/B, import, and Plan, which
//! takes the reader to the "Will it fit?" panel.

use leptos::prelude::*;

use vramlab::engine::train::live::Control;

use crate::editor::Editor;
use crate::native_run::NativeRun;
use crate::session::{Session, Status};

#[component]
pub fn RunControls(
    editor: Editor,
    session: Session,
    lessons_running: RwSignal<bool>,
    /// Set when the page watches a native run: the run's buttons act on it, and the page's own
    /// runs wait.
    native: Option<NativeRun>,
) -> impl IntoView {
    let live = session.live;
    // A native command can be paused until its last event, between a search's trials too.
    let running = move || match native {
        Some(native) => native.going() && live.status.get() != Status::Paused,
        None => live.status.get().busy() || lessons_running.get(),
    };
    // Nothing of the page's own starts beside a native run.
    let own = move || running() || native.is_some();
    let start = move |_| session.start(editor.config.get_untracked(), true);
    let pause = move |_| match native {
        Some(native) => native.send(Control::Pause),
        None => session.pause(),
    };
    let resume = move |_| match native {
        Some(native) => native.send(Control::Resume),
        None => session.resume(),
    };
    let stop = move |_| {
        if let Some(native) = native {
            native.send(Control::Stop);
        }
    };
    let stoppable = move || native.is_some_and(NativeRun::going);
    let one_step = move |_| session.one_step(editor.config.get_untracked());
    let reset = move |_| session.reset();
    view! {
        <section class="panel controls">
            <button id="start" class="primary" on:click=start disabled=own>"Start"</button>
            <button id="pause" on:click=pause disabled=move || !running()>"Pause"</button>
            <button id="resume" on:click=resume
                disabled=move || live.status.get() != Status::Paused>"Resume"</button>
            {native.map(|_| view! {
                <button id="stop" title="end the native run after this step; it writes its files"
                    on:click=stop disabled=move || !stoppable()>"Stop"</button>
            })}
            <button id="step" on:click=one_step disabled=own>"One step"</button>
            <button id="reset" on:click=reset disabled=native.is_some()>"Reset"</button>
            <button id="pin" title="keep this run on the charts to compare with the next"
                disabled=move || live.timeline.with(Option::is_none)
                on:click=move |_| live.pin()>"Pin for A/B"</button>
            <button id="unpin" disabled=move || live.pinned.with(Option::is_none)
                on:click=move |_| live.pinned.set(None)>"Unpin"</button>
            <button id="plan" title="what the allocator would hold for this config, without running it"
                on:click=move |_| crate::browser::scroll_to("will-it-fit")>"Plan"</button>
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
    }
}
