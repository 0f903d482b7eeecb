//! Plans off the page's thread: a dedicated worker instantiates this same wasm module (handed
//! over compiled, so nothing is fetched or compiled again) and runs the plan there on a
//! planning device of its own. The page keeps drawing and answering input while a plan's step
//! runs (a step is one synchronous backward pass: seconds for a 7B model), Cancel terminates the
//! worker at once, and every byte a plan used goes with the worker when it ends: wasm memory
//! only grows, so plans made in the page's own instance stayed in the tab (1,283 MiB after five).
//!
//! The worker's script is a few lines of JavaScript made into a blob; it imports the page's
//! wasm-bindgen glue by the URL the glue was loaded from (`import.meta.url`), which is the same
//! under trunk (hashed names) and `.ci/build-page`.

use futures::StreamExt;
use futures::channel::mpsc;
use futures::future::{Either, select};
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::*;

use vramlab::engine::device::{ModelledAdapter, Planner, fresh_planner};
use vramlab::engine::error::EngineError;
use vramlab::engine::finder::{self, Axis, Method, Question, Search, Trial};
use vramlab::engine::memory::largest;
use vramlab::engine::plan::{self, PLAN_STEPS, Plan};
use vramlab::engine::train::{RunOutcome, Runner};
use vramlab::engine::{Purpose, RunConfig};

#[wasm_bindgen]
extern "C" {
    /// The URL of the wasm-bindgen glue this module was loaded through.
    #[wasm_bindgen(thread_local_v2, js_namespace = ["import", "meta"], js_name = url)]
    static GLUE_URL: String;

    /// A dedicated worker (declared here rather than through web-sys, whose features would
    /// rebuild the whole wasm dependency tree).
    type Worker;
    #[wasm_bindgen(constructor, catch)]
    fn new(url: &str, options: &JsValue) -> Result<Worker, JsValue>;
    #[wasm_bindgen(method, js_name = postMessage)]
    fn post_message(this: &Worker, message: &JsValue);
    #[wasm_bindgen(method)]
    fn terminate(this: &Worker);
    #[wasm_bindgen(method, setter)]
    fn set_onmessage(this: &Worker, handler: &js_sys::Function);
    #[wasm_bindgen(method, setter)]
    fn set_onerror(this: &Worker, handler: &js_sys::Function);

    /// The worker's own `postMessage` (its global scope's), to the page.
    #[wasm_bindgen(js_name = postMessage)]
    fn post_to_page(message: &JsValue);
}

/// The worker's script: load the page's glue with the module the page sent, run the plan, and
/// report a failure the plan could not (a trap, a module that would not load) as one message.
const WORKER_SCRIPT: &str = r#"
self.onmessage = async (event) => {
  const { glue, module, request } = event.data;
  try {
    const page = await import(glue);
    await page.default({ module_or_path: module });
    await page.plan_in_worker(request);
  } catch (error) {
    self.postMessage(JSON.stringify({ Failed: `the planning worker stopped: ${error}` }));
  }
};
"#;

/// What the page asks the worker.
#[derive(Serialize, Deserialize)]
struct PlanRequest {
    config: RunConfig,
    modelled: ModelledAdapter,
    ask: Ask,
}

/// The question a worker answers about its config and budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Ask {
    /// The plan, with the budget's answer and each suggestion planned.
    Plan,
    /// The largest batch, or the longest sequence at the config's batch, that fits: the
    /// finder with each trial a plan on a planning device of its own, as `vramlab find-batch
    /// --plan` (`--longest-sequence`) makes each one in a process of its own.
    Largest(Axis),
}

/// What the worker tells the page, one JSON message at a time.
#[derive(Serialize, Deserialize)]
enum FromWorker {
    Progress(String),
    Answered {
        answer: Answer,
        /// The worker's wasm memory when it finished: the most the plan held at once, since
        /// wasm memory only grows.
        wasm_bytes: f64,
    },
    Failed(String),
}

/// What the worker found.
#[derive(Clone, Serialize, Deserialize)]
pub enum Answer {
    Plan(Box<Plan>),
    Search(Box<Search>),
}

/// The worker's answer, as the page received it.
#[derive(Clone)]
pub struct Planned {
    pub answer: Answer,
    /// The worker's wasm memory at the end (its peak).
    pub worker_wasm_bytes: f64,
    /// When the answer reached the page (`performance.now()`, ms): the page's own work on it
    /// (reading it, drawing it) comes after the plan.
    pub received_at_ms: f64,
}

/// Answer `ask` about `config` against the adapter `modelled` in a worker of its own, reporting
/// progress through `progress`; checks `cancelled` every tenth of a second and terminates the
/// worker once it says so (`Ok(None)`).
pub async fn plan_off_page(
    config: RunConfig,
    modelled: ModelledAdapter,
    ask: Ask,
    mut progress: impl FnMut(String),
    cancelled: impl Fn() -> bool,
) -> Result<Option<Planned>, String> {
    let request = serde_json::to_string(&PlanRequest {
        config,
        modelled,
        ask,
    })
    .map_err(|err| format!("the plan's request: {err}"))?;
    // Terminated however this ends (answer, failure, cancel or the caller dropping the future).
    let (_worker, mut messages) = start_worker(&request)?;
    loop {
        // Checked at every message too: progress can arrive more often than the tick.
        if cancelled() {
            return Ok(None);
        }
        let tick = Box::pin(crate::session::wait_ms(100));
        let next = match select(messages.next(), tick).await {
            Either::Left((next, _)) => next,
            Either::Right(_) => continue,
        };
        let Some(text) = next else {
            return Err("the planning worker stopped without an answer".into());
        };
        let received_at = web_sys::window()
            .and_then(|window| window.performance())
            .map_or(0.0, |performance| performance.now());
        match serde_json::from_str::<FromWorker>(&text) {
            Ok(FromWorker::Progress(said)) => progress(said),
            Ok(FromWorker::Answered { answer, wasm_bytes }) => {
                return Ok(Some(Planned {
                    answer,
                    worker_wasm_bytes: wasm_bytes,
                    received_at_ms: received_at,
                }));
            }
            Ok(FromWorker::Failed(err)) => return Err(err),
            Err(err) => return Err(format!("the planning worker's message: {err}")),
        }
    }
}

/// A worker terminated, and its script's URL revoked, when this is dropped.
struct Terminated {
    worker: Worker,
    script_url: String,
}

impl Drop for Terminated {
    fn drop(&mut self) {
        self.worker.terminate();
        let _ = web_sys::Url::revoke_object_url(&self.script_url);
    }
}

/// Start a worker on `request`; its messages (and a failure to load, as a `Failed` message)
/// arrive on the stream.
fn start_worker(request: &str) -> Result<(Terminated, mpsc::UnboundedReceiver<String>), String> {
    let blob = {
        let parts = js_sys::Array::of1(&JsValue::from_str(WORKER_SCRIPT));
        let options = web_sys::BlobPropertyBag::new();
        options.set_type("text/javascript");
        web_sys::Blob::new_with_str_sequence_and_options(&parts, &options)
            .map_err(|err| format!("the planning worker's script: {err:?}"))?
    };
    let url = web_sys::Url::create_object_url_with_blob(&blob)
        .map_err(|err| format!("the planning worker's script: {err:?}"))?;
    let options = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&options, &"type".into(), &"module".into());
    let worker = match Worker::new(&url, &options) {
        Ok(worker) => Terminated {
            worker,
            script_url: url,
        },
        Err(err) => {
            let _ = web_sys::Url::revoke_object_url(&url);
            return Err(format!("could not start a planning worker: {err:?}"));
        }
    };

    let (sender, receiver) = mpsc::unbounded();
    let on_message = {
        let sender = sender.clone();
        Closure::<dyn FnMut(web_sys::MessageEvent)>::new(move |event: web_sys::MessageEvent| {
            let _ = sender.unbounded_send(event.data().as_string().unwrap_or_default());
        })
    };
    // An error in the worker's code is an ErrorEvent with a message; a script that could not
    // load at all is a plain Event without one.
    let on_error = Closure::<dyn FnMut(JsValue)>::new(move |event: JsValue| {
        let message = js_sys::Reflect::get(&event, &"message".into())
            .ok()
            .and_then(|message| message.as_string())
            .unwrap_or_else(|| "its script did not load".into());
        let failed = FromWorker::Failed(format!("the planning worker failed: {message}"));
        let _ = sender.unbounded_send(serde_json::to_string(&failed).unwrap_or_default());
    });
    worker
        .worker
        .set_onmessage(on_message.as_ref().unchecked_ref());
    worker.worker.set_onerror(on_error.as_ref().unchecked_ref());
    // The worker calls them until it is terminated; they are small and few (one a plan).
    on_message.forget();
    on_error.forget();

    let message = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&message, &"glue".into(), &GLUE_URL.with(|url| url.into()));
    let _ = js_sys::Reflect::set(&message, &"module".into(), &wasm_bindgen::module());
    let _ = js_sys::Reflect::set(&message, &"request".into(), &request.into());
    worker.worker.post_message(&message);
    Ok((worker, receiver))
}

/// In the worker: the answer to `request` (a [`PlanRequest`]), its progress and its answer
/// posted to the page.
#[wasm_bindgen]
pub async fn plan_in_worker(request: String) {
    let say = |message: FromWorker| {
        if let Ok(text) = serde_json::to_string(&message) {
            post_to_page(&JsValue::from_str(&text));
        }
    };
    let answer = match answered(&request, &mut |said| say(FromWorker::Progress(said))).await {
        Ok(answer) => FromWorker::Answered {
            answer,
            wasm_bytes: crate::browser::wasm_bytes(),
        },
        Err(err) => FromWorker::Failed(err),
    };
    say(answer);
}

async fn answered(request: &str, progress: &mut dyn FnMut(String)) -> Result<Answer, String> {
    let PlanRequest {
        config,
        modelled,
        ask,
    } = serde_json::from_str(request).map_err(|err| format!("the plan's request: {err}"))?;
    match ask {
        Ask::Plan => planned(&config, modelled, progress)
            .await
            .map(|plan| Answer::Plan(Box::new(plan))),
        Ask::Largest(axis) => largest(&config, axis, modelled, progress)
            .await
            .map(|search| Answer::Search(Box::new(search))),
    }
}

async fn planned(
    config: &RunConfig,
    modelled: ModelledAdapter,
    progress: &mut dyn FnMut(String),
) -> Result<Plan, String> {
    // A device of its own, as `vramlab plan` has a process of its own (and the worker has).
    let planner = fresh_planner(modelled)
        .await
        .map_err(|err| err.to_string())?;
    // A budget the config does not fit is planned again with it, then each suggestion: every
    // plan starts again at step 1.
    let mut plans = 0usize;
    let planning = plan::plan(config, &planner.gpu, |step| {
        if step == 1 {
            plans += 1;
        }
        progress(format!("plan {plans}, step {step} of {PLAN_STEPS}"));
    });
    pumped(planning, &planner)
        .await
        .map_err(|err| err.to_string())
}

/// The largest batch (or longest sequence) of `config` under its budget, as `vramlab find-batch
/// --plan` searches it.
async fn largest(
    config: &RunConfig,
    axis: Axis,
    modelled: ModelledAdapter,
    progress: &mut dyn FnMut(String),
) -> Result<Search, String> {
    let adapter = fresh_planner(modelled.clone())
        .await
        .map_err(|err| err.to_string())?
        .gpu
        .adapter;
    let budget = config
        .budget
        .ok_or("the search needs a budget: pick a card or type a size")?;
    let question = Question {
        config,
        axis,
        budget_bytes: budget.bytes(adapter.max_buffer_size),
        multiple_of: 1,
        max_trials: None,
        purpose: Purpose::Plan,
        bound: Some(finder::plan_bound(config, &adapter, axis).map_err(|err| err.to_string())?),
    };
    let mut runner = FreshPlans { modelled };
    let mut on_trial = |trial: &Trial| {
        progress(format!(
            "{} {}: {}",
            axis.field(),
            trial.value(),
            if trial.fits { "fits" } else { "does not fit" }
        ));
    };
    finder::find(&question, Method::Vramlab, &mut runner, &mut on_trial)
        .await
        .map_err(|err| err.to_string())
}

/// Each trial a plan on a planning device of its own (a device's pools keep their history).
struct FreshPlans {
    modelled: ModelledAdapter,
}

impl Runner for FreshPlans {
    async fn train(&mut self, config: RunConfig) -> Result<RunOutcome, EngineError> {
        let planner = fresh_planner(self.modelled.clone()).await?;
        // A plan would leave such a tensor out; a trial must not pass on that.
        largest::bindable(&config, &planner.gpu.adapter)?;
        match pumped(plan::follow(config, &planner.gpu, &mut |_| {}), &planner).await {
            Ok(timeline) => Ok(RunOutcome::Fit(Box::new(timeline))),
            Err(EngineError::OutOfMemory(oom)) => Ok(RunOutcome::OutOfMemory(oom)),
            Err(err) => Err(err),
        }
    }
}

/// `future` run to its end while this loop polls `planner`: nothing else polls a wgpu-core
/// device here, and the plan's reads wait on its buffer maps. A microtask a turn (the worker has
/// nothing else to do, and a timer turn would cost milliseconds at each of a plan's reads).
async fn pumped<T>(future: impl std::future::Future<Output = T>, planner: &Planner) -> T {
    let turns = async {
        loop {
            planner.poll();
            let _ = wasm_bindgen_futures::JsFuture::from(js_sys::Promise::resolve(&JsValue::NULL))
                .await;
        }
    };
    match select(Box::pin(future), Box::pin(turns)).await {
        Either::Left((value, _)) => value,
        Either::Right(((), _)) => unreachable!("the turns loop never ends"),
    }
}
