//! The training session behind the page: one engine `Run` at a time, stepped in short async
//! slices that hand control back to the browser between steps so the page never freezes.
//! What the charts show lives in signals ([`Live`]); the run itself (GPU tensors, not `Send`)
//! lives in the session's local storage. The session is provided through context.
//!
//! Every start, reset and import begins a new generation. A step awaits the GPU; when it
//! returns into a newer generation, its run is dropped, so a reset or an import made while a
//! step was in flight is never undone by it.

use leptos::prelude::*;
use leptos::task::spawn_local;
use vramlab::engine::config::MemoryPool;
use vramlab::engine::memory::{MemoryPrediction, StepTrace};
use vramlab::engine::train::{EvalRecord, KEEP_RECORDS_WHOLE, StepRecord, Summary, Timeline};
use vramlab::engine::{AdapterInfo, EngineError, Gpu, Run, RunConfig, acquire_with};
use wasm_bindgen::JsCast;

use crate::chart_steps::{self, ChartStep};
use crate::data_preview::{Grid, extent};

/// Cells per side of the decision-boundary grid.
const GRID_N: usize = 32;

/// While training runs through, the charts redraw at most this often. A step of a small model
/// takes a few milliseconds; redrawing every chart after each one took more of the machine than
/// the training did (on a software GPU the two share the same cores).
const REDRAW_EVERY_MS: f64 = 50.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Idle,
    Starting,
    Running,
    Paused,
    Finished,
    Failed,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Self::Idle => "ready",
            Self::Starting => "starting (compiling kernels)",
            Self::Running => "training",
            Self::Paused => "paused",
            Self::Finished => "finished",
            Self::Failed => "stopped",
        }
    }

    pub fn busy(self) -> bool {
        matches!(self, Self::Running | Self::Starting)
    }
}

/// A finished run pinned for A/B: its summary for the table, its steps as the charts drew them
/// (a long run's timeline leaves out records the charts had: `Run::thin_records`).
#[derive(Clone, Debug, PartialEq)]
pub struct Pinned {
    pub summary: Summary,
    pub steps: Vec<ChartStep>,
}

/// Everything the page shows about the current run.
#[derive(Clone, Copy)]
pub struct Live {
    pub status: RwSignal<Status>,
    pub error: RwSignal<Option<String>>,
    pub adapter: RwSignal<Option<AdapterInfo>>,
    /// The pools the device started with (cubecl fixes them at start).
    pub pools: RwSignal<Option<MemoryPool>>,
    /// Set when no adapter could be had: what is missing and how to get it.
    pub no_webgpu: RwSignal<Option<String>>,
    /// What the charts draw of each step (`chart_steps`); the run keeps the records.
    pub steps: RwSignal<Vec<ChartStep>>,
    /// The last step's whole record: its phases, for the phase bars.
    pub last_step: RwSignal<Option<StepRecord>>,
    pub evals: RwSignal<Vec<EvalRecord>>,
    /// Page-clock time (ms) at which each step's loss came back: the step had completed on the
    /// device. Steps return once queued, so their own ends would time the queue, not the work.
    pub completed_ms: RwSignal<Vec<f64>>,
    /// Page-clock time (ms) at which the run's first step was queued: where throughput starts.
    pub started_ms: RwSignal<Option<f64>>,
    pub prediction: RwSignal<Option<MemoryPrediction>>,
    pub batch_size: RwSignal<usize>,
    pub timeline: RwSignal<Option<Timeline>>,
    /// The model's decision boundary on the 2-D sets, refreshed at each evaluation.
    pub grid: RwSignal<Option<Grid>>,
    /// A finished run kept for comparison with the next (A/B).
    pub pinned: RwSignal<Option<Pinned>>,
    /// The memory of the latest step drawn.
    pub trace: RwSignal<Option<StepTrace>>,
    /// What a step that ran out of memory recorded up to the failure.
    pub failed: RwSignal<Option<StepTrace>>,
    /// Set once the GPU device is lost: what happened and how to recover. Never cleared: the
    /// page cannot have its device back without a reload.
    pub device_lost: RwSignal<Option<String>>,
    /// The page watches a native run (`vramlab train --live`) instead of training its own.
    pub native: RwSignal<bool>,
}

impl Live {
    fn new() -> Self {
        Self {
            status: RwSignal::new(Status::Idle),
            error: RwSignal::new(None),
            adapter: RwSignal::new(None),
            pools: RwSignal::new(None),
            no_webgpu: RwSignal::new(None),
            steps: RwSignal::new(Vec::new()),
            last_step: RwSignal::new(None),
            evals: RwSignal::new(Vec::new()),
            completed_ms: RwSignal::new(Vec::new()),
            started_ms: RwSignal::new(None),
            prediction: RwSignal::new(None),
            batch_size: RwSignal::new(0),
            timeline: RwSignal::new(None),
            grid: RwSignal::new(None),
            pinned: RwSignal::new(None),
            trace: RwSignal::new(None),
            failed: RwSignal::new(None),
            device_lost: RwSignal::new(None),
            native: RwSignal::new(false),
        }
    }

    /// The charts' steps drawn from a whole timeline's records (a run ended, or one imported).
    pub(crate) fn draw_records(&self, records: &[StepRecord]) {
        self.steps.set(chart_steps::of(records));
        self.last_step.set(records.last().cloned());
    }

    /// Show a whole timeline as a finished run (one imported, or a native run's end).
    pub(crate) fn show_finished(&self, timeline: Timeline) {
        self.batch_size.set(timeline.config.batch_size);
        self.draw_records(&timeline.steps);
        self.evals.set(timeline.evals.clone());
        self.trace.set(timeline.one_step.clone());
        self.timeline.set(Some(timeline));
        self.status.set(Status::Finished);
    }

    /// Take into the charts what `records` (a run's kept records, in step order) has that they
    /// do not have final yet: losses come back in groups, so from the first step still without
    /// one. Returns how many steps from the first the charts now have final (losses back): the
    /// run may drop those records (`Run::thin_records`), since the charts keep what they draw.
    pub(crate) fn take_records(&self, records: &[StepRecord]) -> usize {
        let mut done = 0;
        self.steps.update(|steps| {
            let from = steps
                .iter()
                .position(|s| s.loss.is_none())
                .unwrap_or(steps.len());
            steps.truncate(from);
            let first_new = records.partition_point(|r| r.step <= from);
            steps.extend(records[first_new..].iter().map(ChartStep::from));
            done = steps[from..]
                .iter()
                .position(|s| s.loss.is_none())
                .map_or(steps.len(), |undone| from + undone);
        });
        self.last_step.set(records.last().cloned());
        self.stamp_completed(done);
        done
    }

    /// Keep the finished run for comparison with the next.
    pub(crate) fn pin(&self) {
        let summary = self
            .timeline
            .with_untracked(|t| t.as_ref().map(|t| t.summary.clone()));
        self.pinned.set(summary.map(|summary| Pinned {
            summary,
            steps: self.steps.get_untracked(),
        }));
    }

    /// The first `completed` steps have their losses back: stamp those not yet stamped now.
    pub(crate) fn stamp_completed(&self, completed: usize) {
        if completed > self.completed_ms.with_untracked(Vec::len) {
            let now = now_ms();
            self.completed_ms.update(|c| c.resize(completed, now));
        }
    }

    pub(crate) fn clear(&self) {
        self.error.set(None);
        self.steps.set(Vec::new());
        self.last_step.set(None);
        self.evals.set(Vec::new());
        self.completed_ms.set(Vec::new());
        self.started_ms.set(None);
        self.timeline.set(None);
        self.grid.set(None);
        self.trace.set(None);
        self.failed.set(None);
    }

    pub(crate) fn fail(&self, message: String) {
        self.error.set(Some(message));
        self.status.set(Status::Failed);
    }

    /// Stop on `err`: a lost device gets its own message (it will not come back, and a reload
    /// gets a new one); any other error shows as `message`.
    fn stop(&self, err: &EngineError, message: String) {
        match err {
            EngineError::DeviceLost { phase, reason } => {
                self.device_lost.set(Some(format!(
                    "The GPU device was lost during {phase} ({reason}). A browser does not give \
                     a page its device back: reload the page to get a new one (the \
                     configuration is kept in the link)."
                )));
                self.status.set(Status::Failed);
            }
            _ => self.fail(message),
        }
    }
}

/// Reload the page: the way back from a lost device.
pub fn reload_page() {
    if let Some(window) = web_sys::window() {
        let _ = window.location().reload();
    }
}

/// The page's one training session.
#[derive(Clone, Copy)]
pub struct Session {
    pub live: Live,
    run: StoredValue<Option<Run>, LocalStorage>,
    /// Bumped by every start, reset and import; work from an older generation is dropped.
    generation: StoredValue<u64>,
    /// When the charts last took the run's records.
    last_redraw_ms: StoredValue<f64>,
    /// The latest step's memory, drawn at the next redraw.
    undrawn_trace: StoredValue<Option<StepTrace>>,
}

pub fn now_ms() -> f64 {
    performance().map_or(0.0, |p| p.now())
}

/// A named point on the browser's performance timeline: tests/e2e/timing.mjs reads these to split
/// the wait for a first step into the device, the data and model, and the step itself. Marked only
/// on the way to a run's first step and on Step, so long runs add nothing to the timeline.
fn mark(name: &str) {
    if let Some(performance) = performance() {
        let _ = performance.mark(name);
    }
}

fn performance() -> Option<web_sys::Performance> {
    web_sys::window()
        .and_then(|w| js_sys::Reflect::get(&w, &"performance".into()).ok())
        .and_then(|p| p.dyn_into::<web_sys::Performance>().ok())
}

/// Whether the browser exposes WebGPU at all (`navigator.gpu`).
fn browser_has_webgpu() -> bool {
    web_sys::window()
        .and_then(|w| js_sys::Reflect::get(&w.navigator(), &"gpu".into()).ok())
        .is_some_and(|gpu| !gpu.is_undefined() && !gpu.is_null())
}

fn no_webgpu_message(detail: &str) -> String {
    let what = if browser_has_webgpu() {
        "This browser has WebGPU, but it refused to give vramlab an adapter"
    } else {
        "This browser does not offer WebGPU (navigator.gpu is missing)"
    };
    format!(
        "{what}: {detail}. vramlab trains on the GPU through WebGPU: use a recent Chrome, Edge \
         or another Chromium (113+), or Firefox/Safari with WebGPU enabled; on Linux Chromium \
         may need chrome://flags/#enable-unsafe-webgpu (or --enable-unsafe-webgpu)."
    )
}

/// Hand control back to the browser (a macrotask, so rendering and input get their turn).
pub async fn yield_to_browser() {
    wait_ms(0).await;
}

/// Resume after `ms` milliseconds of the browser's own work.
pub async fn wait_ms(ms: i32) {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, ms);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// How long a failed step waits for the browser to report a lost device before it is shown as
/// the step's own failure: `DEVICE_PROBES` probes, `DEVICE_PROBE_MS` apart.
const DEVICE_PROBES: u32 = 20;
const DEVICE_PROBE_MS: i32 = 100;

/// `err` as the user should read it. A destroyed device fails the step in flight before the
/// browser resolves the device's `lost` promise, so that first failure reads as a plain device
/// error; probe the device until it answers (the step's own failure) or says it is lost.
async fn device_lost_or(err: EngineError) -> EngineError {
    let EngineError::Device { phase, .. } = &err else {
        return err;
    };
    let phase = phase.clone();
    let Ok(gpu) = vramlab::engine::acquire().await else {
        return err;
    };
    for _ in 0..DEVICE_PROBES {
        wait_ms(DEVICE_PROBE_MS).await;
        match vramlab::engine::device::probe(&gpu.device).await {
            Ok(()) => return err,
            // Named for the phase that met the loss, not for the probe.
            Err(EngineError::DeviceLost { reason, .. }) => {
                return EngineError::DeviceLost { phase, reason };
            }
            Err(_) => {}
        }
    }
    err
}

impl Session {
    pub fn new() -> Self {
        Self {
            live: Live::new(),
            run: StoredValue::new_local(None),
            generation: StoredValue::new(0),
            last_redraw_ms: StoredValue::new(f64::NEG_INFINITY),
            undrawn_trace: StoredValue::new(None),
        }
    }

    /// The device (started with `pool` if it is not running yet), or the page's message when
    /// there is none.
    pub async fn gpu(self, pool: MemoryPool) -> Option<Gpu> {
        let live = self.live;
        match acquire_with(pool).await {
            Ok(gpu) => {
                live.adapter.set(Some(gpu.adapter.clone()));
                live.pools.set(Some(gpu.memory_pool));
                Some(gpu)
            }
            Err(err) => {
                let detail = match &err {
                    EngineError::NoAdapter(d) => d.clone(),
                    other => other.to_string(),
                };
                live.no_webgpu.set(Some(no_webgpu_message(&detail)));
                None
            }
        }
    }

    /// Drop the run and begin a new generation; returns it.
    fn begin(self) -> u64 {
        self.run.set_value(None);
        self.undrawn_trace.set_value(None);
        self.last_redraw_ms.set_value(f64::NEG_INFINITY);
        self.live.clear();
        self.generation.update_value(|g| *g += 1);
        self.generation.get_value()
    }

    fn current(self, generation: u64) -> bool {
        self.generation.get_value() == generation
    }

    pub fn has_run(self) -> bool {
        self.run.with_value(Option::is_some)
    }

    /// Start a new run of `config` (dropping any previous one) and train until done or paused.
    pub fn start(self, config: RunConfig, run_through: bool) {
        let generation = self.begin();
        let live = self.live;
        live.status.set(Status::Starting);
        live.batch_size.set(config.batch_size);
        mark("vramlab:start");
        spawn_local(async move {
            let gpu = self.gpu(config.strategies.memory_pool).await;
            mark("vramlab:device");
            if !self.current(generation) {
                return;
            }
            let Some(gpu) = gpu else {
                live.status.set(Status::Failed);
                return;
            };
            match Run::new(config, &gpu) {
                Ok(run) => {
                    mark("vramlab:run-built");
                    live.prediction.set(Some(run.prediction().clone()));
                    self.run.set_value(Some(run));
                }
                Err(err) => {
                    let err = device_lost_or(err).await;
                    if self.current(generation) {
                        live.stop(&err, err.to_string());
                    }
                    return;
                }
            }
            live.status.set(Status::Running);
            live.started_ms.set(Some(now_ms()));
            if run_through {
                self.drive(generation).await;
            } else {
                self.step_once(generation).await;
            }
        });
    }

    /// Continue a paused run.
    pub fn resume(self) {
        if !self.has_run() {
            return;
        }
        self.live.status.set(Status::Running);
        spawn_local(self.drive(self.generation.get_value()));
    }

    pub fn pause(self) {
        if self.live.status.get_untracked() == Status::Running {
            self.live.status.set(Status::Paused);
        }
    }

    /// One step of the current run, or of a new one when there is none.
    pub fn one_step(self, config: RunConfig) {
        if !self.has_run() {
            return self.start(config, false);
        }
        self.live.status.set(Status::Running);
        spawn_local(self.step_once(self.generation.get_value()));
    }

    /// Drop the run and its charts.
    pub fn reset(self) {
        self.begin();
        self.live.prediction.set(None);
        self.live.status.set(Status::Idle);
    }

    /// Show a run exported earlier (its timeline JSON) as if it had just finished here.
    pub fn import(self, file: web_sys::File) {
        self.reset();
        let generation = self.generation.get_value();
        let live = self.live;
        spawn_local(async move {
            let text = wasm_bindgen_futures::JsFuture::from(file.text()).await;
            if !self.current(generation) {
                return;
            }
            let Ok(text) = text else {
                return live.fail(format!("import: could not read {}", file.name()));
            };
            match Timeline::from_json(&text.as_string().unwrap_or_default()) {
                Ok(timeline) => live.show_finished(timeline),
                Err(err) => live.fail(format!(
                    "import: {} is not a vramlab run export ({err})",
                    file.name()
                )),
            }
        });
    }

    async fn drive(self, generation: u64) {
        while self.live.status.get_untracked() == Status::Running && self.current(generation) {
            if !self.advance(generation, false).await {
                return;
            }
            yield_to_browser().await;
        }
        // Paused: show the steps the throttle held back.
        if self.current(generation) {
            self.run.update_value(|run| {
                if let Some(run) = run {
                    self.redraw(run);
                }
            });
        }
    }

    async fn step_once(self, generation: u64) {
        mark("vramlab:step");
        if self.current(generation) && self.advance(generation, true).await {
            mark("vramlab:stepped");
            self.live.status.set(Status::Paused);
        }
    }

    /// Hand the charts the records of the steps since the last redraw, and let the run drop
    /// those the charts now keep (past its first [`KEEP_RECORDS_WHOLE`]): the page holds one copy
    /// of a long run's steps, not two.
    fn redraw(self, run: &mut Run) {
        let drawn = self.live.take_records(run.records());
        run.thin_records(KEEP_RECORDS_WHOLE, drawn);
        if let Some(trace) = self.undrawn_trace.try_update_value(Option::take).flatten() {
            self.live.trace.set(Some(trace));
        }
        self.last_redraw_ms.set_value(now_ms());
    }

    /// One step; false when the run ended (finished, failed, or replaced while the step was in
    /// flight). The charts see it now when `redraw_now`, at an evaluation or the end, or once
    /// `REDRAW_EVERY_MS` has passed.
    async fn advance(self, generation: u64, redraw_now: bool) -> bool {
        let live = self.live;
        let Some(mut run) = self.run.try_update_value(Option::take).flatten() else {
            return false;
        };
        let stepped = run.step().await;
        if !self.current(generation) {
            return false;
        }
        match stepped {
            Ok(outcome) => {
                let now = now_ms();
                self.undrawn_trace.set_value(Some(outcome.trace));
                let due = now - self.last_redraw_ms.get_value() >= REDRAW_EVERY_MS;
                if redraw_now || due || outcome.eval.is_some() || run.is_finished() {
                    self.redraw(&mut run);
                }
                if let Some(eval) = outcome.eval {
                    live.evals.update(|e| e.push(eval));
                    let probability = run.decision_grid(GRID_N, extent(run.dataset())).await;
                    if !self.current(generation) {
                        return false;
                    }
                    if let Ok(Some(probability)) = probability {
                        live.grid.set(Some(Grid {
                            n: GRID_N,
                            probability,
                        }));
                    }
                }
            }
            Err(err) => {
                // The run is dropped with its tensors; the device stays usable for the next one.
                // The charts keep what the failed step recorded.
                self.redraw(&mut run);
                let err = device_lost_or(err).await;
                if !self.current(generation) {
                    return false;
                }
                let message = match &err {
                    EngineError::OutOfMemory(oom) => {
                        live.failed.set(Some(run.failed_step()));
                        crate::format::out_of_memory_text(oom)
                    }
                    _ => format!("step {}: {err}", run.steps_done() + 1),
                };
                live.stop(&err, message);
                return false;
            }
        }
        if run.is_finished() {
            let finished = run.finish().await;
            if !self.current(generation) {
                return false;
            }
            match finished {
                Ok(timeline) => {
                    // Merged, not redrawn: the timeline leaves out records the charts have.
                    live.take_records(&timeline.steps);
                    live.timeline.set(Some(timeline));
                    live.status.set(Status::Finished);
                }
                Err(err) => {
                    let err = device_lost_or(err).await;
                    if self.current(generation) {
                        live.stop(&err, err.to_string());
                    }
                }
            }
            return false;
        }
        self.run.set_value(Some(run));
        true
    }
}
