//! A native run watched live (`vramlab train --live` served this page with `?live`): its
//! events (engine::train::live) arrive over one server-sent event stream and land in the same
//! signals a browser run fills, so the charts, categories, one-step view, pin and export are
//! the ones a browser run has. Pause, Resume and Stop are posted to the native run. A live
//! `find-batch` or `claims` sends its runs one after another on the same stream, each shown
//! as it trains, and notes on what each showed, listed in the banner.

use leptos::prelude::*;
use leptos::task::spawn_local;
use vramlab::engine::memory::StepTrace;
use vramlab::engine::presets::playground;
use vramlab::engine::train::live::{
    self, CONTROL_PATH, Control, EVENTS_PATH, Failed, Losses, RunState, Started, Stepped, event,
};
use vramlab::engine::train::{EvalRecord, StepRecord, Timeline};
use wasm_bindgen::JsCast;
use wasm_bindgen::closure::Closure;

use crate::chart_steps::ChartStep;
use crate::editor::Editor;
use crate::session::{Live, Status, now_ms};

/// Steps arrive as fast as the native GPU makes them; the charts take them at most this often
/// (as a browser run's redraws are throttled).
const DRAW_EVERY_MS: i32 = 50;

/// Whether this page was opened to watch a native run (`?live` in its address).
pub fn requested() -> bool {
    web_sys::window()
        .and_then(|w| w.location().search().ok())
        .is_some_and(|search| {
            search
                .trim_start_matches('?')
                .split('&')
                .any(|part| part.split('=').next() == Some(live::PAGE_QUERY))
        })
}

/// What arrived since the charts last took it.
#[derive(Default)]
struct Pending {
    steps: Vec<StepRecord>,
    evals: Vec<EvalRecord>,
    losses: Losses,
    trace: Option<StepTrace>,
    /// A draw is already due.
    scheduled: bool,
}

/// The native run the page watches.
#[derive(Clone, Copy)]
pub struct NativeRun {
    live: Live,
    editor: Editor,
    pending: StoredValue<Pending, LocalStorage>,
    source: StoredValue<Option<web_sys::EventSource>, LocalStorage>,
    /// The command sent its last event: the stream's closing is expected.
    over: RwSignal<bool>,
    /// What the command said about itself and its runs (a search's trials, its answer).
    notes: RwSignal<Vec<String>>,
    /// Runs started on this stream (a search's trials; one for `train --live`).
    runs: RwSignal<usize>,
    /// The command is paused (its last state event): a search's trial that ends, or starts,
    /// while it is leaves the page saying so.
    paused: StoredValue<bool>,
    /// How the last run ended (finished or failed): what the page says once the command is
    /// over, whatever a pause said between.
    last_end: StoredValue<Status>,
}

impl NativeRun {
    /// Start watching the run that served this page.
    pub fn watch(live: Live, editor: Editor) -> Self {
        let native = Self {
            live,
            editor,
            pending: StoredValue::new_local(Pending::default()),
            source: StoredValue::new_local(None),
            over: RwSignal::new(false),
            notes: RwSignal::new(Vec::new()),
            runs: RwSignal::new(0),
            paused: StoredValue::new(false),
            last_end: StoredValue::new(Status::Finished),
        };
        live.native.set(true);
        live.status.set(Status::Starting);
        match web_sys::EventSource::new(EVENTS_PATH) {
            Ok(source) => {
                native.listen(&source);
                native.source.set_value(Some(source));
            }
            Err(err) => live.fail(format!(
                "could not open the native run's events at {EVENTS_PATH}: {err:?}"
            )),
        }
        native
    }

    fn listen(self, source: &web_sys::EventSource) {
        self.on(source, event::STARTED, Self::started);
        self.on(source, event::STEP, Self::stepped);
        self.on(source, event::LOSSES, Self::losses);
        self.on(source, event::TRACE, Self::traced);
        self.on(source, event::STATE, Self::state);
        self.on(source, event::ENDED, Self::ended);
        self.on(source, event::FAILED, Self::failed);
        self.on(source, event::NOTE, Self::noted);
        self.on(source, event::OVER, |native, ()| native.close());
        // A (re)connection is sent every event from the first: what was counted goes.
        let (notes, runs) = (self.notes, self.runs);
        let opened = Closure::<dyn Fn()>::new(move || {
            notes.set(Vec::new());
            runs.set(0);
        });
        source.set_onopen(Some(opened.as_ref().unchecked_ref()));
        opened.forget();
        let live = self.live;
        let over = self.over;
        let closed = Closure::<dyn Fn()>::new(move || {
            if !over.get_untracked() {
                live.error.set(Some(
                    "The connection to the native run was lost (did its process end?); the \
                     page keeps what it received and reconnects if the run is still there."
                        .to_string(),
                ));
            }
        });
        source.set_onerror(Some(closed.as_ref().unchecked_ref()));
        closed.forget();
    }

    /// Hand each `name` event's JSON, parsed, to `then`; a malformed event is named on the page.
    fn on<T: serde::de::DeserializeOwned + 'static>(
        self,
        source: &web_sys::EventSource,
        name: &str,
        then: fn(Self, T),
    ) {
        let closure =
            Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |message: web_sys::MessageEvent| {
                let data = message.data().as_string().unwrap_or_default();
                match serde_json::from_str(&data) {
                    Ok(value) => then(self, value),
                    Err(err) => self.live.error.set(Some(format!(
                        "the native run sent an event the page cannot read: {err}"
                    ))),
                }
            });
        let _ = source.add_event_listener_with_callback(name, closure.as_ref().unchecked_ref());
        // The stream lives as long as the page.
        closure.forget();
    }

    /// A run's first event (again after a reconnect: everything is replayed); a search's
    /// next trial replaces the last one's charts.
    fn started(self, started: Started) {
        let live = self.live;
        self.runs.update(|n| *n += 1);
        self.pending.set_value(Pending::default());
        live.clear();
        live.adapter.set(Some(started.adapter));
        live.pools.set(Some(started.pools));
        live.prediction.set(Some(started.prediction));
        live.batch_size.set(started.config.batch_size);
        live.started_ms.set(Some(now_ms()));
        if playground().any(|p| p.name == started.config.name) {
            self.editor.preset.set(started.config.name.clone());
        }
        self.editor.config.set(started.config);
        live.status.set(self.status_going());
    }

    /// What a command that has not ended is doing: training, or paused by the page.
    fn status_going(self) -> Status {
        if self.paused.get_value() {
            Status::Paused
        } else {
            Status::Running
        }
    }

    /// The command has not sent its last event: Pause and Stop act on it (a search between
    /// two trials too).
    pub fn going(self) -> bool {
        !self.over.get()
    }

    fn stepped(self, stepped: Stepped) {
        self.pending.update_value(|p| {
            p.steps.push(stepped.record);
            p.evals.extend(stepped.eval);
        });
        self.schedule();
    }

    fn losses(self, losses: Losses) {
        self.pending.update_value(|p| p.losses.extend(losses));
        self.schedule();
    }

    fn traced(self, trace: StepTrace) {
        self.pending.update_value(|p| p.trace = Some(trace));
        self.schedule();
    }

    fn state(self, state: RunState) {
        self.paused.set_value(state == RunState::Paused);
        // Every step before the state is drawn with it: a page that says "paused" shows the
        // steps the run made before it paused.
        self.draw();
        let now = self.live.status.get_untracked();
        // Between a search's trials the last one shows as finished or failed (out of memory),
        // and the search goes on.
        let between =
            matches!(now, Status::Finished | Status::Failed) && !self.over.get_untracked();
        if now.busy() || now == Status::Paused || between {
            self.live.status.set(self.status_going());
        }
    }

    fn noted(self, note: String) {
        self.notes.update(|n| n.push(note));
    }

    fn ended(self, timeline: Timeline) {
        self.pending.set_value(Pending::default());
        let live = self.live;
        live.stamp_completed(
            timeline
                .steps
                .iter()
                .take_while(|s| s.loss.is_some())
                .count(),
        );
        live.show_finished(timeline);
        self.run_ended(Status::Finished);
    }

    fn failed(self, failed: Failed) {
        self.draw();
        self.live.failed.set(failed.trace);
        self.live.fail(failed.message);
        self.run_ended(Status::Failed);
    }

    /// A run ended as `how` (its status already set): what the page says once the command is
    /// over. A command paused meanwhile (a search at a trial that finished or ran out of
    /// memory) still says "paused" and waits for Resume.
    fn run_ended(self, how: Status) {
        self.last_end.set_value(how);
        if self.paused.get_value() && !self.over.get_untracked() {
            self.live.status.set(Status::Paused);
        }
    }

    /// The command sent its last event: the browser must not reconnect (it would replay it
    /// all).
    fn close(self) {
        self.over.set(true);
        // A pause that came during the last run's last step is over with the command.
        let now = self.live.status.get_untracked();
        if now.busy() || now == Status::Paused {
            self.live.status.set(self.last_end.get_value());
        }
        self.source.with_value(|s| {
            if let Some(source) = s {
                source.close();
            }
        });
    }

    fn schedule(self) {
        if self.pending.with_value(|p| p.scheduled) {
            return;
        }
        self.pending.update_value(|p| p.scheduled = true);
        spawn_local(async move {
            crate::session::wait_ms(DRAW_EVERY_MS).await;
            self.draw();
        });
    }

    /// Hand the charts what arrived since the last draw.
    fn draw(self) {
        let Some(pending) = self.pending.try_update_value(std::mem::take) else {
            return;
        };
        let live = self.live;
        let mut last = pending.steps.last().cloned();
        live.steps.update(|steps| {
            steps.extend(pending.steps.iter().map(ChartStep::from));
            for &(step, loss) in &pending.losses {
                if let Some(chart) = step.checked_sub(1).and_then(|i| steps.get_mut(i)) {
                    chart.loss = Some(loss);
                }
                if let Some(record) = last.as_mut().filter(|r| r.step == step) {
                    record.loss = Some(loss);
                }
            }
        });
        if last.is_some() {
            live.last_step.set(last);
        }
        if !pending.evals.is_empty() {
            live.evals.update(|e| e.extend(pending.evals));
        }
        if let Some(trace) = pending.trace {
            live.trace.set(Some(trace));
        }
        live.stamp_completed(
            live.steps
                .with_untracked(|s| s.iter().take_while(|s| s.loss.is_some()).count()),
        );
    }

    /// Ask the native run to pause, resume or stop; its answer comes back as an event.
    pub fn send(self, control: Control) {
        let live = self.live;
        spawn_local(async move {
            if let Err(err) = post(control).await {
                live.error.set(Some(format!(
                    "could not send {} to the native run: {err}",
                    control.word()
                )));
            }
        });
    }
}

async fn post(control: Control) -> Result<(), String> {
    let window = web_sys::window().ok_or("no window")?;
    let init = web_sys::RequestInit::new();
    init.set_method("POST");
    init.set_body(&control.word().into());
    let answer =
        wasm_bindgen_futures::JsFuture::from(window.fetch_with_str_and_init(CONTROL_PATH, &init))
            .await
            .map_err(|err| format!("{err:?}"))?;
    let response: web_sys::Response = answer.dyn_into().map_err(|_| "not a response")?;
    if response.ok() {
        return Ok(());
    }
    let text = match response.text() {
        Ok(promise) => wasm_bindgen_futures::JsFuture::from(promise)
            .await
            .ok()
            .and_then(|t| t.as_string())
            .unwrap_or_default(),
        Err(_) => String::new(),
    };
    Err(format!("HTTP {}: {text}", response.status()))
}

/// Says the run on the page is a native one, and where it runs, and lists what a search or
/// a claims report noted. Its data attributes are the figures the charts drew last
/// (tests/e2e/live.mjs holds them to the native timeline.json), the runs started and whether
/// the command is over.
#[component]
pub fn NativeBanner(live: Live, native: NativeRun) -> impl IntoView {
    let last = move |figure: fn(&ChartStep) -> u64| live.steps.with(|s| s.last().map_or(0, figure));
    let notes = native.notes;
    view! {
        <div id="native-run" class="note"
            data-steps=move || live.steps.with(Vec::len)
            data-last-step=move || last(|c| c.step as u64)
            data-last-high-water-in-use=move || last(|c| c.high_water_in_use_bytes)
            data-last-end-in-use=move || last(|c| c.end_in_use_bytes)
            data-runs=move || native.runs.get()
            data-over=move || native.over.get().to_string()>
            <p>
                "A native run, watched live: "
                {move || live.adapter.with(|a| a.as_ref().map(|a| format!("{} ({})", a.name, a.backend)))}
                ". Pause, Resume and Stop act on that process; closing this tab does not stop \
                 it, and it writes its files when it ends."
            </p>
            {move || (!notes.with(Vec::is_empty)).then(|| view! {
                <ol id="native-notes">
                    {move || notes.get().into_iter().map(|n| view! { <li>{n}</li> }).collect_view()}
                </ol>
            })}
        </div>
    }
}
