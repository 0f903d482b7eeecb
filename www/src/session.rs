//! The training session behind the page: one engine `Run` at a time, stepped in short async
//! slices that hand control back to the browser between steps so the page never freezes.
//! What the charts show lives in signals; the run itself (GPU tensors, not `Send`) stays in a
//! thread-local, the page having one thread.

use std::cell::{Cell, RefCell};

use leptos::prelude::*;
use leptos::task::spawn_local;
use vramlab::engine::config::MemoryPool;
use vramlab::engine::memory::MemoryPrediction;
use vramlab::engine::train::{EvalRecord, StepRecord, Timeline};
use vramlab::engine::{AdapterInfo, EngineError, Gpu, Run, RunConfig, acquire_with};
use wasm_bindgen::JsCast;

use crate::data_preview::{Grid, extent};

/// Cells per side of the decision-boundary grid.
const GRID_N: usize = 32;

/// Refresh the heat map from the run's current model (2-D sets only).
async fn refresh_grid(live: Live, run: &Run) {
    if let Ok(Some(probability)) = run.decision_grid(GRID_N, extent(run.dataset())).await {
        live.grid.set(Some(Grid {
            n: GRID_N,
            probability,
        }));
    }
}

/// While training runs through, the charts redraw at most this often. A step of a small model
/// takes a few milliseconds; redrawing every chart after each one took more of the machine than
/// the training did (on a software GPU the two share the same cores).
const REDRAW_EVERY_MS: f64 = 50.0;

thread_local! {
    static RUN: RefCell<Option<Run>> = const { RefCell::new(None) };
    /// When the charts last took the run's records, and the wall-clock ends of the steps since.
    static LAST_REDRAW_MS: Cell<f64> = const { Cell::new(f64::NEG_INFINITY) };
    static UNDRAWN_STEP_ENDS: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
    /// Bumped by reset and by every new start, so a loop from an older run stops.
    static GENERATION: Cell<u64> = const { Cell::new(0) };
}

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
}

/// Everything the page shows about the current run.
#[derive(Clone, Copy)]
pub struct Live {
    pub status: RwSignal<Status>,
    pub error: RwSignal<Option<String>>,
    pub adapter: RwSignal<Option<AdapterInfo>>,
    /// Set when no adapter could be had: what is missing and how to get it.
    pub no_webgpu: RwSignal<Option<String>>,
    pub steps: RwSignal<Vec<StepRecord>>,
    pub evals: RwSignal<Vec<EvalRecord>>,
    /// Page-clock time (ms) at the end of each step, for throughput.
    pub wall_ms: RwSignal<Vec<f64>>,
    pub prediction: RwSignal<Option<MemoryPrediction>>,
    pub batch_size: RwSignal<usize>,
    pub timeline: RwSignal<Option<Timeline>>,
    /// The model's decision boundary on the 2-D sets, refreshed at each evaluation.
    pub grid: RwSignal<Option<Grid>>,
    /// A finished run kept for comparison with the next (A/B).
    pub pinned: RwSignal<Option<Timeline>>,
}

impl Live {
    pub fn new() -> Self {
        Self {
            status: RwSignal::new(Status::Idle),
            error: RwSignal::new(None),
            adapter: RwSignal::new(None),
            no_webgpu: RwSignal::new(None),
            steps: RwSignal::new(Vec::new()),
            evals: RwSignal::new(Vec::new()),
            wall_ms: RwSignal::new(Vec::new()),
            prediction: RwSignal::new(None),
            batch_size: RwSignal::new(0),
            timeline: RwSignal::new(None),
            grid: RwSignal::new(None),
            pinned: RwSignal::new(None),
        }
    }

    fn clear(&self) {
        self.error.set(None);
        self.steps.set(Vec::new());
        self.evals.set(Vec::new());
        self.wall_ms.set(Vec::new());
        UNDRAWN_STEP_ENDS.with(|ends| ends.borrow_mut().clear());
        LAST_REDRAW_MS.with(|t| t.set(f64::NEG_INFINITY));
        self.timeline.set(None);
        self.grid.set(None);
    }

    fn fail(&self, message: String) {
        self.error.set(Some(message));
        self.status.set(Status::Failed);
    }
}

pub fn now_ms() -> f64 {
    web_sys::window()
        .and_then(|w| js_sys::Reflect::get(&w, &"performance".into()).ok())
        .and_then(|p| p.dyn_into::<web_sys::Performance>().ok())
        .map_or(0.0, |p| p.now())
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

/// The device (started with `pool` if it is not running yet), or the page's message when there
/// is none.
pub async fn gpu(live: Live, pool: MemoryPool) -> Option<Gpu> {
    match acquire_with(pool).await {
        Ok(gpu) => {
            live.adapter.set(Some(gpu.adapter.clone()));
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

/// Hand control back to the browser (a macrotask, so rendering and input get their turn).
pub async fn yield_to_browser() {
    let promise = js_sys::Promise::new(&mut |resolve, _| {
        if let Some(window) = web_sys::window() {
            let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(&resolve, 0);
        }
    });
    let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
}

/// Start a new run of `config` (dropping any previous one) and train until done or paused.
pub fn start(live: Live, config: RunConfig, run_through: bool) {
    let generation = GENERATION.with(|g| {
        g.set(g.get() + 1);
        g.get()
    });
    RUN.with(|r| r.borrow_mut().take());
    live.clear();
    live.status.set(Status::Starting);
    live.batch_size.set(config.batch_size);
    spawn_local(async move {
        let Some(gpu) = gpu(live, config.strategies.memory_pool).await else {
            live.status.set(Status::Failed);
            return;
        };
        match Run::new(config, &gpu) {
            Ok(run) => {
                live.prediction.set(Some(run.prediction().clone()));
                RUN.with(|r| *r.borrow_mut() = Some(run));
            }
            Err(err) => return live.fail(err.to_string()),
        }
        live.status.set(Status::Running);
        if run_through {
            drive(live, generation).await;
        } else {
            step_once(live, generation).await;
        }
    });
}

/// Continue a paused run.
pub fn resume(live: Live) {
    let generation = GENERATION.with(Cell::get);
    if RUN.with(|r| r.borrow().is_none()) {
        return;
    }
    live.status.set(Status::Running);
    spawn_local(drive(live, generation));
}

pub fn pause(live: Live) {
    if live.status.get_untracked() == Status::Running {
        live.status.set(Status::Paused);
    }
}

/// One step of the current run (starting one when there is none is the caller's business).
pub fn single_step(live: Live) {
    let generation = GENERATION.with(Cell::get);
    live.status.set(Status::Running);
    spawn_local(step_once(live, generation));
}

pub fn has_run() -> bool {
    RUN.with(|r| r.borrow().is_some())
}

/// Show a run exported earlier (its timeline JSON) as if it had just finished here.
pub fn import(live: Live, file: web_sys::File) {
    reset(live);
    spawn_local(async move {
        let text = match wasm_bindgen_futures::JsFuture::from(file.text()).await {
            Ok(text) => text.as_string().unwrap_or_default(),
            Err(_) => return live.fail(format!("import: could not read {}", file.name())),
        };
        match serde_json::from_str::<Timeline>(&text) {
            Ok(timeline) => {
                live.batch_size.set(timeline.config.batch_size);
                live.steps.set(timeline.steps.clone());
                live.evals.set(timeline.evals.clone());
                live.timeline.set(Some(timeline));
                live.status.set(Status::Finished);
            }
            Err(err) => live.fail(format!(
                "import: {} is not a vramlab run export ({err})",
                file.name()
            )),
        }
    });
}

/// Drop the run and its charts.
pub fn reset(live: Live) {
    GENERATION.with(|g| g.set(g.get() + 1));
    RUN.with(|r| r.borrow_mut().take());
    live.clear();
    live.prediction.set(None);
    live.status.set(Status::Idle);
}

async fn drive(live: Live, generation: u64) {
    while live.status.get_untracked() == Status::Running && GENERATION.with(Cell::get) == generation
    {
        if !advance(live, false).await {
            return;
        }
        yield_to_browser().await;
    }
    // Paused: show the steps the throttle held back.
    if GENERATION.with(Cell::get) == generation {
        RUN.with(|r| {
            if let Some(run) = r.borrow().as_ref() {
                redraw(live, run);
            }
        });
    }
}

async fn step_once(live: Live, generation: u64) {
    if GENERATION.with(Cell::get) == generation && advance(live, true).await {
        live.status.set(Status::Paused);
    }
}

/// Hand the charts the records of the steps since the last redraw.
fn redraw(live: Live, run: &Run) {
    // Losses arrive in grouped readbacks: refresh from the first step still without one,
    // rather than copying every record every time.
    let records = run.records();
    live.steps.update(|steps| {
        let from = steps
            .iter()
            .position(|s| s.loss.is_none())
            .unwrap_or(steps.len());
        steps.truncate(from);
        steps.extend_from_slice(&records[from..]);
    });
    let ends = UNDRAWN_STEP_ENDS.with(|ends| std::mem::take(&mut *ends.borrow_mut()));
    if !ends.is_empty() {
        live.wall_ms.update(|w| w.extend(ends));
    }
    LAST_REDRAW_MS.with(|t| t.set(now_ms()));
}

/// One step; false when the run ended (finished or failed). The charts see it now when
/// `redraw_now`, at an evaluation or the end, or once `REDRAW_EVERY_MS` has passed.
async fn advance(live: Live, redraw_now: bool) -> bool {
    let Some(mut run) = RUN.with(|r| r.borrow_mut().take()) else {
        return false;
    };
    match run.step().await {
        Ok(outcome) => {
            let now = now_ms();
            UNDRAWN_STEP_ENDS.with(|ends| ends.borrow_mut().push(now));
            let due = now - LAST_REDRAW_MS.with(Cell::get) >= REDRAW_EVERY_MS;
            if redraw_now || due || outcome.eval.is_some() || run.is_finished() {
                redraw(live, &run);
            }
            if let Some(eval) = outcome.eval {
                live.evals.update(|e| e.push(eval));
                refresh_grid(live, &run).await;
            }
        }
        Err(err) => {
            // The run is dropped with its tensors; the device stays usable for the next one.
            live.fail(match err {
                // It names its step, and what would fit.
                EngineError::OutOfMemory(_) => err.to_string(),
                _ => format!("step {}: {err}", run.steps_done() + 1),
            });
            return false;
        }
    }
    if run.is_finished() {
        match run.finish().await {
            Ok(timeline) => {
                live.steps.set(timeline.steps.clone());
                live.timeline.set(Some(timeline));
                live.status.set(Status::Finished);
            }
            Err(err) => live.fail(err.to_string()),
        }
        return false;
    }
    RUN.with(|r| *r.borrow_mut() = Some(run));
    true
}
