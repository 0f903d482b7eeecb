//! The page, laid out as one screen: data and model on the left, the strategies in the middle,
//! the run's controls and charts on the right, the lessons below.

use leptos::prelude::*;
use vramlab::engine::AdapterInfo;
use vramlab::engine::RunConfig;
use vramlab::engine::format::ByteFormat;
use vramlab::engine::memory::predict;

use crate::config_panel::{ConfigPanel, TrainingPanel};
use crate::data_preview::DataPreview;
use crate::editor::Editor;
use crate::finder_panel::FinderPanel;
use crate::lessons::{LessonsPanel, LessonsRunning};
use crate::native_run::{self, NativeBanner, NativeRun};
use crate::plan_panel::{PlanGpu, PlanPanel};
use crate::results::{Comparison, SummaryCard};
use crate::run_charts::Charts;
use crate::run_controls::RunControls;
use crate::session::Session;
use crate::strategies_panel::StrategiesPanel;
use crate::table_input::TableInput;
use crate::tour::{Tour, TourLine};
use crate::url_state;

#[component]
pub fn App() -> impl IntoView {
    let from_url = url_state::parse(&url_state::current_hash());
    // The hash's refusals (preset, fields, the lessons table) come as one note naming them all.
    let url_note = RwSignal::new(from_url.note());
    let shared_lessons = from_url.lessons;
    let editor = Editor {
        preset: RwSignal::new(from_url.preset),
        config: RwSignal::new(from_url.config),
        refused: RwSignal::new(None),
    };
    let plan_gpu = PlanGpu::from_link(
        from_url.gpu.as_deref(),
        from_url.gpus.as_deref(),
        from_url.offload,
    );
    let session = Session::new();
    provide_context(session);
    let lessons_running = RwSignal::new(false);
    provide_context(LessonsRunning(lessons_running));
    let live = session.live;
    let tour = Tour::new();

    // The URL follows the configuration (and the card "Will it fit?" plans for), so a link
    // reproduces the setup.
    Effect::new(move |_| {
        let mut hash = url_state::render(&editor.preset.get(), &editor.config.get());
        if let Some(gpu) = plan_gpu.link_part() {
            hash.push('&');
            hash.push_str(&gpu);
        }
        url_state::store(&hash);
    });
    // A link pasted into this tab (the hash changed by hand or by a link on the page) loads
    // its configuration as a fresh page would; the page's own updates replace the hash without
    // this event.
    let on_hash = wasm_bindgen::closure::Closure::<dyn Fn()>::new(move || {
        let hash = url_state::current_hash();
        let from_url = url_state::parse(&hash);
        // A lessons table is read when the page starts (its cards are built then), and a link
        // with refusals is noted then: loading either here would rewrite the hash (the page
        // keeps it in step with the config) and lose the table or the refused fields. Those
        // links wait for a reload, as every link did before.
        if hash.contains("lessons=") || from_url.note().is_some() {
            return;
        }
        url_note.set(None);
        plan_gpu.load(
            from_url.gpu.as_deref(),
            from_url.gpus.as_deref(),
            from_url.offload,
        );
        editor.preset.set(from_url.preset);
        editor.config.set(from_url.config);
        editor.refused.set(None);
    });
    if let Some(window) = web_sys::window() {
        use wasm_bindgen::JsCast;
        let _ =
            window.add_event_listener_with_callback("hashchange", on_hash.as_ref().unchecked_ref());
    }
    // The page lives as long as the tab.
    on_hash.forget();
    // Opened by `vramlab train --live`: the page shows that run, on its native adapter.
    let native = native_run::requested().then(|| NativeRun::watch(live, editor));
    if native.is_none() {
        // Ask for the adapter up front: the adapter card, and the f16 choice, depend on it.
        // The pools are fixed when the device starts: the URL's choice is taken at page load.
        let pool = editor.config.with_untracked(|c| c.strategies.memory_pool);
        leptos::task::spawn_local(async move {
            session.gpu(pool).await;
        });
    }

    view! {
        <header>
            <h1>"vramlab"</h1>
            <p class="tagline">
                "Train a real model on your GPU and see what each memory-saving trick does to the \
                 bytes the allocator holds: measured, beside the analytic model's estimate."
            </p>
            <AdapterCard adapter=live.adapter no_webgpu=live.no_webgpu />
        </header>
        {move || url_note.get().map(|n| view! { <p class="note" id="url-note">{n}</p> })}
        {move || live.no_webgpu.get().map(|m| view! { <p class="error" id="no-webgpu">{m}</p> })}
        <main data-tour=move || tour.0.get().map(|s| s.name())>
            <div class="column setup">
                <ConfigPanel editor=editor />
                {move || editor.refused.get().map(|r| view! { <p class="error" id="refused">{r}</p> })}
                <section class="panel" id="data-preview">
                    <TableInput editor=editor />
                    <DataPreview config=editor.config grid=live.grid />
                </section>
                <TrainingPanel editor=editor adapter=live.adapter />
                <PredictionCard config=editor.config />
            </div>
            <div class="column strategies">
                <StrategiesPanel editor=editor adapter=live.adapter />
            </div>
            <div class="column run">
                {native.map(|native| view! { <NativeBanner live=live native=native /> })}
                <RunControls editor=editor session=session lessons_running=lessons_running native=native />
                // The tour walks through the page's own runs, which wait beside a native one.
                {native.is_none().then(|| view! { <TourLine tour=tour live=live config=editor.config /> })}
                {move || live.error.get().map(|e| view! { <p class="error" id="run-error">{e}</p> })}
                {move || live.device_lost.get().map(|m| view! { <p class="error" id="device-lost">{m}" "
                    <button id="reload" on:click=|_| crate::session::reload_page()>"Reload the page"</button></p> })}
                <Charts live=live config=editor.config />
                <Comparison pinned=live.pinned timeline=live.timeline />
                <SummaryCard timeline=live.timeline />
                <PlanPanel editor=editor gpu=plan_gpu />
                <FinderPanel editor=editor />
            </div>
        </main>
        <LessonsPanel editor=editor shared=shared_lessons />
    }
}

/// The adapter in one line of the header: the figures a run's limits come from.
#[component]
fn AdapterCard(
    adapter: RwSignal<Option<AdapterInfo>>,
    no_webgpu: RwSignal<Option<String>>,
) -> impl IntoView {
    view! {
        <div id="adapter-card" class="adapter">
            {move || match adapter.get() {
                Some(a) => view! {
                    <dl>
                        <dt>"GPU"</dt><dd>{if a.name.is_empty() { "(not disclosed by the browser)".to_string() } else { a.name.clone() }}</dd>
                        <dt>"backend"</dt><dd>{a.backend.clone()}</dd>
                        <dt>"shader-f16"</dt><dd id="shader-f16">{if a.shader_f16 { "yes" } else { "no" }}</dd>
                        <dt>"max buffer"</dt><dd>{ByteFormat::MIB.decimals(0).of(a.max_buffer_size)}</dd>
                    </dl>
                }.into_any(),
                None if no_webgpu.with(Option::is_some) => {
                    view! { <p>"no WebGPU adapter (see below)"</p> }.into_any()
                }
                None => view! { <p>"asking the browser for a WebGPU adapter..."</p> }.into_any(),
            }}
        </div>
    }
}

#[component]
fn PredictionCard(config: RwSignal<RunConfig>) -> impl IntoView {
    let prediction = Memo::new(move |_| predict(&config.get()));
    view! {
        <section class="panel" id="prediction">
            <h2>"Analytic model (estimate)"</h2>
            {move || {
                let p = prediction.get();
                view! {
                    <dl>
                        <dt>"parameters"</dt><dd id="param-count">{p.param_count}</dd>
                        <dt>"params"</dt><dd>{ByteFormat::MIB.of(p.params)}</dd>
                        <dt>"gradients"</dt><dd>{ByteFormat::MIB.of(p.grads)}</dd>
                        <dt>"optimizer state"</dt><dd>{ByteFormat::MIB.of(p.optimizer_state)}</dd>
                        <dt>"activations"</dt><dd>{ByteFormat::MIB.of(p.activations)}</dd>
                        <dt>"peak"</dt><dd id="predicted-peak">{ByteFormat::MIB.of(p.peak)}</dd>
                    </dl>
                }
            }}
        </section>
    }
}
