//! "Will it fit?": the engine's plan of the editor's config (a preset as edited, or a Hugging
//! Face config.json dropped here) against a GPU's memory, made in this tab: cubecl's dry run on
//! a planning device with no memory behind it (wgpu's noop backend, modelling the browser's
//! adapter), on the same sub-slicing pools as `vramlab plan`. Nothing leaves the machine.

use std::cell::Cell;
use std::rc::Rc;

use leptos::prelude::*;
use leptos::task::spawn_local;
use vramlab::engine::Purpose;
use vramlab::engine::config::InputKind;
use vramlab::engine::config::{Budget, Offload};
use vramlab::engine::device::this_modelled_adapter;
use vramlab::engine::finder::{Axis, Search};
use vramlab::engine::format::ByteFormat;
use vramlab::engine::hf_config::{self, Stated};
use vramlab::engine::link::hash::encode;
use vramlab::engine::memory::Categories;
use vramlab::engine::memory::predict;
use vramlab::engine::plan::{Checked, Plan};
use vramlab::engine::presets::preset;
use vramlab::engine::recipe::ModelRef;

use crate::browser::{download, wasm_bytes};
use crate::editor::Editor;
use crate::plan_worker::{Answer, Ask, Planned, plan_off_page};
use crate::published::PUBLISHED;
use crate::recipe_input::{self, HeldModel, LoadedRecipe, Said};

/// Cards people ask about, with the memory their maker states (GiB unless it says GB).
pub const CARDS: [(&str, u64); 9] = [
    ("RTX 4060 (8 GiB)", 8 << 30),
    ("RTX 3060 12 GB (12 GiB)", 12 << 30),
    ("RTX 4080 (16 GiB)", 16 << 30),
    ("RTX 4090 (24 GiB)", 24 << 30),
    ("RTX 5090 (32 GiB)", 32 << 30),
    ("RTX 6000 Ada / L40S (48 GiB)", 48 << 30),
    ("A100 / H100 80 GB (80 GiB)", 80 << 30),
    ("H200 (141 GB)", 141_000_000_000),
    ("another size (type it)", 0),
];

/// The card a plan is for when the link names none.
const DEFAULT_CARD: usize = 3;
/// The card whose memory is typed in.
const TYPED_CARD: usize = CARDS.len() - 1;
/// The size the typed card starts with.
const TYPED_DEFAULT: &str = "20GiB";

/// The panel's question beyond the editor's config: which card, how many of them share the
/// run (`gpus`) and what lives on the host (`strategies.offload`): a plan takes both and a run
/// refuses them, so they are the panel's and not the editor's. The link carries them as `gpu=`
/// (a card's name, or the size typed), `gpus=` and `strategies.offload=`, so a shared link asks
/// the same question.
#[derive(Clone, Copy)]
pub struct PlanGpu {
    card: RwSignal<usize>,
    typed: RwSignal<String>,
    gpus: RwSignal<String>,
    offload: RwSignal<Offload>,
}

impl PlanGpu {
    /// The card a link's `gpu=` names: a listed card by its name, anything else as a typed
    /// size (refused at Plan, naming the field, when it is not one).
    pub fn from_link(gpu: Option<&str>, gpus: Option<&str>, offload: Option<Offload>) -> Self {
        let (card, typed) = match gpu {
            None => (DEFAULT_CARD, TYPED_DEFAULT.to_string()),
            Some(text) => match CARDS[..TYPED_CARD]
                .iter()
                .position(|(name, _)| *name == text)
            {
                Some(card) => (card, TYPED_DEFAULT.to_string()),
                None => (TYPED_CARD, text.to_string()),
            },
        };
        Self {
            card: RwSignal::new(card),
            typed: RwSignal::new(typed),
            gpus: RwSignal::new(gpus.unwrap_or("1").to_string()),
            offload: RwSignal::new(offload.unwrap_or_default()),
        }
    }

    /// Set from a link loaded in this tab.
    pub fn load(&self, gpu: Option<&str>, gpus: Option<&str>, offload: Option<Offload>) {
        let from = Self::from_link(gpu, gpus, offload);
        self.card.set(from.card.get_untracked());
        self.typed.set(from.typed.get_untracked());
        self.gpus.set(from.gpus.get_untracked());
        self.offload.set(from.offload.get_untracked());
    }

    /// The link's `gpu=`, `gpus=` and `strategies.offload=` parts; none for the question a
    /// link without them asks (the default card, one GPU, nothing on the host).
    pub fn link_part(&self) -> Option<String> {
        let parts: Vec<String> = [self.card_and_gpus(), self.offload_part()]
            .into_iter()
            .flatten()
            .collect();
        (!parts.is_empty()).then(|| parts.join("&"))
    }

    fn offload_part(&self) -> Option<String> {
        match self.offload.get() {
            Offload::None => None,
            offload => Some(format!("strategies.offload={}", offload.name())),
        }
    }

    fn card_and_gpus(&self) -> Option<String> {
        let card = self.card.get();
        let card = match card {
            DEFAULT_CARD => None,
            TYPED_CARD => Some(format!("gpu={}", encode(&self.typed.get()))),
            _ => Some(format!("gpu={}", encode(CARDS[card].0))),
        };
        let gpus = self.gpus.get();
        let gpus = (gpus.trim() != "1").then(|| format!("gpus={}", encode(gpus.trim())));
        match (card, gpus) {
            (None, None) => None,
            (Some(one), None) | (None, Some(one)) => Some(one),
            (Some(card), Some(gpus)) => Some(format!("{card}&{gpus}")),
        }
    }

    /// How many GPUs the plan is one's share of; an error names the field and its range.
    fn gpus(&self) -> Result<usize, String> {
        let typed = self.gpus.get_untracked();
        typed
            .trim()
            .parse()
            .map_err(|_| format!("gpus: {typed:?} is not a whole number of GPUs (1 to 1024)"))
    }

    /// The card's memory, or the typed size; an error names the field and the forms it takes.
    fn budget(&self) -> Result<Budget, String> {
        let (_, bytes) = CARDS[self.card.get_untracked().min(TYPED_CARD)];
        if bytes > 0 {
            return Ok(Budget::Bytes(bytes));
        }
        Budget::parse(&self.typed.get_untracked()).map_err(|err| format!("GPU memory: {err}"))
    }
}

#[component]
pub fn PlanPanel(editor: Editor, gpu: PlanGpu) -> impl IntoView {
    let question = gpu;
    let planning = RwSignal::new(false);
    let progress = RwSignal::new(String::new());
    let result: RwSignal<Option<Result<Planned, String>>> = RwSignal::new(None);
    let dropped = RwSignal::new(None::<Result<String, String>>);
    // The model the last dropped config.json put in the editor.
    let dropped_model = StoredValue::new(None::<vramlab::engine::config::ModelConfig>);
    // That config.json's name and text: a recipe naming a Hub model is planned with it while
    // the editor holds its model.
    let held_model = StoredValue::new(None::<(String, String)>);
    // A recipe chosen here: how it was read (or why not), the config it gave the editor while
    // the editor still holds it, and what Export recipe did.
    let recipe_said = RwSignal::new(None::<Result<Said, Said>>);
    let loaded_recipe = RwSignal::new(None::<LoadedRecipe>);
    let allow_unmodelled = RwSignal::new(false);
    let recipe_exported = RwSignal::new(None::<Result<String, String>>);
    // Set by Cancel; the plan in flight is dropped at the browser's next turn, its tensors freed.
    let cancelled: Rc<Cell<bool>> = Rc::new(Cell::new(false));

    let start = {
        let cancelled = cancelled.clone();
        move |ask: Ask| {
            let mut config = editor.config.get_untracked();
            config.budget = match question.budget() {
                Ok(budget) => Some(budget),
                Err(err) => {
                    result.set(Some(Err(err)));
                    return;
                }
            };
            config.gpus = match question.gpus() {
                Ok(gpus) => gpus,
                Err(err) => {
                    result.set(Some(Err(err)));
                    return;
                }
            };
            config.strategies.offload = question.offload.get_untracked();
            if let Err(err) = config.validate_for(Purpose::Plan) {
                result.set(Some(Err(err.to_string())));
                return;
            }
            cancelled.set(false);
            planning.set(true);
            result.set(None);
            progress.set("starting the planning worker".into());
            let cancelled = cancelled.clone();
            spawn_local(async move {
                let outcome = plan_in_worker(config, ask, progress, cancelled).await;
                result.set(Some(outcome));
                planning.set(false);
            });
        }
    };
    let cancel = {
        let cancelled = cancelled.clone();
        move |_| cancelled.set(true)
    };
    let load = move |name: &str, text: &str| {
        let loaded = load_hf_config(&editor, name, text);
        if loaded.is_ok() {
            dropped_model.set_value(Some(editor.config.with_untracked(|c| c.model.clone())));
            held_model.set_value(Some((name.to_string(), text.to_string())));
        }
        dropped.set(Some(loaded));
    };
    // A config.json vramlab ships, as though its file were dropped.
    let pick_published = move |ev| {
        if let Some((_, file, text)) = event_target_value(&ev)
            .parse::<usize>()
            .ok()
            .and_then(|i| PUBLISHED.get(i))
        {
            load(file, text);
        }
    };
    let pick = move |ev| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        let Some(file) = input.files().and_then(|f| f.get(0)) else {
            return;
        };
        let name = file.name();
        spawn_local(async move {
            let text = wasm_bindgen_futures::JsFuture::from(file.text()).await;
            let text = text.ok().and_then(|t| t.as_string()).unwrap_or_default();
            load(&name, &text);
        });
    };
    // The note speaks of the dropped file's model: once the editor holds another (a link
    // loaded, a preset picked, a model field edited) it is gone.
    Effect::new(move |_| {
        editor.config.with(|config| {
            if dropped_model.with_value(|model| model.as_ref().is_some_and(|m| *m != config.model))
            {
                dropped_model.set_value(None);
                held_model.set_value(None);
                dropped.set(None);
            }
            // Likewise the recipe's note, and Export recipe, once the editor holds another run.
            if loaded_recipe.with_untracked(|r| r.as_ref().is_some_and(|r| r.config != *config)) {
                loaded_recipe.set(None);
                recipe_said.set(None);
                recipe_exported.set(None);
            }
        });
    });
    // A recipe and the files beside it, read as `vramlab plan --recipe` reads them; its config
    // goes in the editor and its GPU count in the panel.
    let pick_recipe = move |ev| {
        let input: web_sys::HtmlInputElement = event_target(&ev);
        let Some(list) = input.files() else {
            return;
        };
        let files: Vec<web_sys::File> = (0..list.length()).filter_map(|i| list.get(i)).collect();
        // Cleared, so that choosing the same files again (the box ticked) reads them again.
        input.set_value("");
        spawn_local(async move {
            let mut read = Vec::new();
            for file in files {
                let text = wasm_bindgen_futures::JsFuture::from(file.text()).await;
                let text = text.ok().and_then(|t| t.as_string()).unwrap_or_default();
                read.push((file.name(), text));
            }
            let held = held_model.get_value();
            let held = held.as_ref().map(|(file, text)| HeldModel { file, text });
            let gpus = question.gpus().unwrap_or(1);
            recipe_exported.set(None);
            match recipe_input::read(&read, held, allow_unmodelled.get_untracked(), gpus) {
                Ok((loaded, said)) => {
                    if let Some(gpus) = loaded.reading.gpus {
                        question.gpus.set(gpus.to_string());
                    }
                    // What the recipe offloads is asked here, as a link asks it; the editor
                    // holds what a run would take.
                    question.offload.set(loaded.config.strategies.offload);
                    // A builder's shapes replace the held config.json: its note goes.
                    if matches!(loaded.reading.model, Some(ModelRef::Builder { .. })) {
                        dropped_model.set_value(None);
                        held_model.set_value(None);
                        dropped.set(None);
                    } else {
                        // The held config.json's notes spoke of the run the editor held before
                        // (its weights' type among them); the recipe's note says them of the
                        // recipe's run, so the config.json's keeps only what it is.
                        dropped.update(|note| {
                            if let Some(Ok(text)) = note
                                && let Some((what, _)) = text.split_once("; ")
                            {
                                *text = format!("{what}; the recipe's model (its notes below)");
                            }
                        });
                    }
                    let (preset_name, mut config) = (loaded.preset.clone(), loaded.config.clone());
                    config.strategies.offload = Offload::None;
                    loaded_recipe.set(Some(loaded));
                    editor.preset.set(preset_name);
                    editor.config.set(config);
                    editor.refused.set(None);
                    recipe_said.set(Some(Ok(said)));
                }
                Err(said) => {
                    loaded_recipe.set(None);
                    recipe_said.set(Some(Err(said)));
                }
            }
        });
    };
    // The recipe with the plan's first fitting change its format can say, downloaded.
    let export_recipe = move |_| {
        let (
            Some(Ok(Planned {
                answer: Answer::Plan(plan),
                ..
            })),
            Some(loaded),
        ) = (result.get_untracked(), loaded_recipe.get_untracked())
        else {
            return;
        };
        recipe_exported.set(Some(recipe_input::export(&loaded, &plan)));
    };
    let export = move |_| {
        // The plan as `vramlab plan --json` writes it; a search as `find-batch --json` does.
        let exported = match result.get_untracked() {
            Some(Ok(Planned {
                answer: Answer::Plan(plan),
                ..
            })) => serde_json::to_string_pretty(&plan)
                .map(|json| (format!("{}-plan", plan.name), json)),
            Some(Ok(Planned {
                answer: Answer::Search(search),
                ..
            })) => serde_json::to_string_pretty(&search).map(|json| {
                let what = match search.axis {
                    Axis::Batch => "largest-batch",
                    Axis::SeqLen => "longest-sequence",
                };
                (
                    format!("{}-{what}", editor.config.get_untracked().name),
                    json,
                )
            }),
            _ => return,
        };
        if let Ok((name, json)) = exported {
            download(&format!("{name}.json"), "application/json", &json);
        }
    };
    // The plan's answer as an SVG card (engine::plan::card).
    let export_image = move |_| {
        if let Some(Ok(Planned {
            answer: Answer::Plan(plan),
            ..
        })) = result.get_untracked()
        {
            download(
                &format!("{}-plan.svg", plan.name),
                "image/svg+xml",
                &plan.svg(),
            );
        }
    };

    view! {
        <section class="panel" id="will-it-fit">
            <h2>"Will it fit?"</h2>
            <p class="explain">
                "The allocator's own answer for the config above, from cubecl's dry run in this \
                 tab: every kernel compiled, nothing run, no GPU memory used. Drop a Hugging Face \
                 config.json (or pick one vramlab ships) to plan that model; LoRA, QLoRA, precision, checkpointing, \
                 attention, batch and tokens are the strategies' and training fields."
            </p>
            <label class="button">"config.json"
                <input type="file" data-testid="plan-config" id="plan-config"
                    accept=".json,application/json" on:change=pick />
            </label>
            <label>" or a published one "
                <select data-testid="plan-published" id="plan-published" on:change=pick_published>
                    <option value="" selected=true>"pick a model"</option>
                    {PUBLISHED.iter().enumerate().map(|(i, (label, _, _))| view! {
                        <option value=i.to_string()>{*label}</option>
                    }).collect_view()}
                </select>
            </label>
            {move || dropped.get().map(|loaded| match loaded {
                Ok(note) => view! { <p class="note" id="plan-config-note">{note}</p> }.into_any(),
                Err(err) => view! { <p class="error" id="plan-config-error">{err}</p> }.into_any(),
            })}
            <div class="recipe-input">
                <label class="button" title="An Axolotl, TRL, torchtune or LLaMA-Factory recipe, with the DeepSpeed JSON or accelerate config it is launched with chosen beside it: read as vramlab plan --recipe reads it">"recipe"
                    <input type="file" multiple=true data-testid="plan-recipe" id="plan-recipe"
                        accept=".yaml,.yml,.json" on:change=pick_recipe />
                </label>
                <label title="As --allow-unmodelled: plan without the fields that change memory in a way vramlab does not model (LoRA dropout, a subset of target modules...), each named in the note">
                    <input type="checkbox" data-testid="plan-recipe-allow" id="plan-recipe-allow"
                        prop:checked=allow_unmodelled
                        on:change=move |ev| allow_unmodelled.set(event_target_checked(&ev)) />
                    " plan without what vramlab does not model"
                </label>
                <span class="explain">" A recipe naming a Hub model is planned with the config.json above."</span>
            </div>
            {move || recipe_said.get().map(|said| {
                let (class, id, said) = match said {
                    Ok(said) => ("note", "plan-recipe-note", said),
                    Err(said) => ("error", "plan-recipe-error", said),
                };
                view! {
                    <div class=class id=id>
                        <p>{said.line}</p>
                        {said.reading.map(|block| view! {
                            <details id="plan-recipe-reading">
                                <summary>"How the recipe was read"</summary>
                                <pre>{block}</pre>
                            </details>
                        })}
                    </div>
                }
            })}
            <label>"GPU "
                <select data-testid="plan-gpu" id="plan-gpu"
                    on:change=move |ev| {
                        if let Ok(i) = event_target_value(&ev).parse() { question.card.set(i) }
                    }>
                    {CARDS.iter().enumerate().map(|(i, (name, _))| view! {
                        <option value=i.to_string() selected=move || question.card.get() == i>{*name}</option>
                    }).collect_view()}
                </select>
            </label>
            {move || (CARDS[question.card.get()].1 == 0).then(|| view! {
                <input id="plan-gpu-size" type="text" prop:value=question.typed
                    on:input=move |ev| question.typed.set(event_target_value(&ev)) />
            })}
            <label title="GPUs the run is spread over: the plan is one GPU's share, as strategies.sharding cuts it (full: FSDP's FULL_SHARD; optimizer: ZeRO-1; none: data parallel, DDP)">
                " x "
                <input data-testid="plan-gpus" id="plan-gpus" type="number" min="1" max="1024"
                    prop:value=question.gpus
                    on:input=move |ev| question.gpus.set(event_target_value(&ev)) />
                " GPUs"
            </label>
            <label title="What lives in host memory instead of on each GPU (strategies.offload, planned, never run): optimizer, the optimizer state stepped there (ZeRO-Offload, under full or gradients sharding); parameters, the shards with their gradients and optimizer state (FSDP2's CPUOffloadPolicy, under full sharding); activations, each checkpointed block's input (with checkpointing = layers)">
                " offload "
                <select data-testid="plan-offload" id="plan-offload"
                    on:change=move |ev| {
                        if let Some(offload) = Offload::from_name(&event_target_value(&ev)) {
                            question.offload.set(offload);
                        }
                    }>
                    {Offload::ALL.into_iter().map(|offload| view! {
                        <option value=offload.name() selected=move || question.offload.get() == offload>{offload.name()}</option>
                    }).collect_view()}
                </select>
            </label>
            <button data-testid="plan-start" id="plan-start" class="primary"
                on:click={
                    let start = start.clone();
                    move |_| start(Ask::Plan)
                } disabled=move || planning.get()>"Plan"</button>
            <button data-testid="plan-largest-batch" id="plan-largest-batch"
                title="The largest batch under this card's memory: the max-batch finder, each trial a plan"
                on:click={
                    let start = start.clone();
                    move |_| start(Ask::Largest(Axis::Batch))
                } disabled=move || planning.get()>"Largest batch"</button>
            <button data-testid="plan-longest-sequence" id="plan-longest-sequence"
                title="The longest sequence (tokens per sample) at the config's batch under this card's memory: the finder, each trial a plan"
                on:click=move |_| start(Ask::Largest(Axis::SeqLen)) disabled=move || planning.get()>"Longest sequence"</button>
            <button id="plan-cancel" on:click=cancel disabled=move || !planning.get()>"Cancel"</button>
            <button data-testid="plan-export" id="plan-export" on:click=export
                disabled=move || !matches!(result.get(), Some(Ok(_)))>"Export JSON"</button>
            <button data-testid="plan-export-image" id="plan-export-image" on:click=export_image
                disabled=move || !matches!(result.get(), Some(Ok(Planned { answer: Answer::Plan(_), .. })))>"Export image"</button>
            <button data-testid="plan-export-recipe" id="plan-export-recipe" on:click=export_recipe
                title="The recipe with the first planned change that fits and that its format can say, every other line and comment kept"
                disabled=move || loaded_recipe.with(Option::is_none)
                    || !matches!(result.get(), Some(Ok(Planned { answer: Answer::Plan(_), .. })))>"Export recipe"</button>
            {move || recipe_exported.get().map(|said| match said {
                Ok(said) => view! { <p class="note" id="plan-recipe-exported">{said}</p> }.into_any(),
                Err(err) => view! { <p class="error" id="plan-recipe-exported">{err}</p> }.into_any(),
            })}
            {move || planning.get().then(|| view! { <p class="status" id="plan-progress">{progress}</p> })}
            {move || result.get().map(|outcome| match outcome {
                Ok(Planned { answer: Answer::Plan(plan), worker_wasm_bytes, received_at_ms }) => view! {
                    <PlanAnswer plan=*plan worker_wasm_bytes received_at_ms />
                }.into_any(),
                Ok(Planned { answer: Answer::Search(search), worker_wasm_bytes, received_at_ms }) => view! {
                    <SearchAnswer search=*search editor worker_wasm_bytes received_at_ms />
                }.into_any(),
                Err(err) => view! { <p class="error" id="plan-error">{err}</p> }.into_any(),
            })}
        </section>
    }
}

/// Plan `config` in a worker of its own (the page answers input meanwhile), on the browser's
/// adapter as a planning device models it; stops within a tenth of a second once `cancelled`
/// is set.
async fn plan_in_worker(
    config: vramlab::engine::RunConfig,
    ask: Ask,
    progress: RwSignal<String>,
    cancelled: Rc<Cell<bool>>,
) -> Result<Planned, String> {
    // Modelled here: the worker's navigator has WebGPU too, but the page's adapter is the one
    // a person's run gets. SwiftShader lacks shader-f16 and every listed card has it.
    let modelled = this_modelled_adapter()
        .await
        .map_err(|err| err.to_string())?
        .with_shader_f16();
    plan_off_page(
        config,
        modelled,
        ask,
        |said| progress.set(said),
        || cancelled.get(),
    )
    .await?
    .ok_or_else(|| "plan cancelled".to_string())
}

/// Read a dropped config.json into the editor: its model replaces the editor's (a transformer
/// keeps how it trains; otherwise the family's base preset supplies it), as `vramlab plan
/// --hf-config` does. The note says what changed; a refusal names the JSON field.
fn load_hf_config(editor: &Editor, name: &str, text: &str) -> Result<String, String> {
    let hf = hf_config::read(text).map_err(|err| format!("{name}: {err}"))?;
    let current = editor.config.get_untracked();
    let (preset_name, base) = if current.data.kind.input_kind() == InputKind::Tokens {
        (editor.preset.get_untracked(), current)
    } else {
        let base_name = hf.family.base_preset();
        let base = preset(base_name).map_err(|err| format!("{name}: {err}"))?;
        (base_name.to_string(), base)
    };
    let (config, mut notes) = hf.apply(base, name.trim_end_matches(".json"), Stated::default());
    notes.extend(
        hf.notes_for(&config)
            .map_err(|err| format!("{name}: {err}"))?,
    );
    config
        .validate_for(Purpose::Plan)
        .map_err(|err| format!("{name}: {err}"))?;
    let mut text = format!(
        "{name}: {} ({} parameters)",
        hf.family.model_type(),
        predict(&config).param_count
    );
    for note in notes {
        text.push_str("; ");
        text.push_str(&note);
    }
    editor.preset.set(preset_name);
    editor.config.set(config);
    editor.refused.set(None);
    Ok(text)
}

/// The answer: fits or not with the margin, the training step's high-water by category, each
/// phase, what forward keeps most, and each suggestion planned in turn.
#[component]
fn PlanAnswer(plan: Plan, worker_wasm_bytes: f64, received_at_ms: f64) -> impl IntoView {
    let gib = ByteFormat::MIB_OR_GIB;
    let verdict = plan.verdict();
    let categories = plan.high_water_by_category.unwrap_or_default();
    let total = categories.values().iter().sum::<u64>().max(1);
    let bar = Categories::NAMES
        .iter()
        .zip(categories.values())
        .filter(|(_, bytes)| *bytes > 0)
        .map(|(name, bytes)| {
            let width = format!("width: {:.2}%", 100.0 * bytes as f64 / total as f64);
            let title = format!("{name}: {}", gib.of(bytes));
            view! { <span class=format!("segment {name}") style=width title=title.clone()>{title.clone()}</span> }
        })
        .collect_view();
    let phases = plan
        .high_water_in_use_by_phase
        .iter()
        .map(|(phase, bytes)| {
            let reserved = plan.reserved_by_phase.get(phase).copied().unwrap_or(0);
            view! { <tr><td>{phase.name()}</td><td>{gib.of(*bytes)}</td><td>{gib.of(reserved)}</td></tr> }
        })
        .collect_view();
    let mut kept = plan.kept_by_op.clone();
    kept.sort_by_key(|k| std::cmp::Reverse(k.bytes));
    let kept = kept
        .into_iter()
        .take(4)
        .map(|k| view! { <li>{k.op.name()}": "{gib.of(k.bytes)}</li> })
        .collect_view();
    let suggestions = plan
        .suggestions
        .iter()
        .map(|s| {
            let change = s.suggestion.assignments().join(" ");
            let answer = match &s.checked {
                Checked::Fits {
                    high_water_in_use_bytes,
                    ..
                } => format!("fits, {} in use", gib.of(*high_water_in_use_bytes)),
                Checked::DoesNotFit { out_of_memory } => {
                    format!(
                        "still out of memory ({} in use)",
                        gib.of(out_of_memory.in_use_bytes)
                    )
                }
                Checked::NotPlanned { reason } => format!("not planned: {reason}"),
            };
            view! { <li><code>{change}</code>": "{answer}</li> }
        })
        .collect_view();
    let fallbacks = plan
        .fallbacks
        .iter()
        .map(|f| view! { <li><code>{format!("{} = {}", f.field, f.value)}</code>": "{f.reason.clone()}</li> })
        .collect_view();
    let oversized = (!plan.oversized.is_empty()).then(|| {
        view! {
            <p class="note" id="plan-oversized">
                {format!("{} tensor(s) are larger than one binding of the modelled adapter and \
                          are left out: these figures are a lower bound.", plan.oversized.len())}
            </p>
        }
    });
    let fits = match plan.fits {
        Some(true) => "yes",
        Some(false) => "no",
        None => "",
    };
    view! {
        <div id="plan-answer" data-fits=fits data-high-water=plan.high_water_in_use_bytes.to_string()
            data-seconds=format!("{:.1}", plan.seconds) data-wasm-bytes=wasm_bytes().to_string()
            data-worker-wasm-bytes=worker_wasm_bytes.to_string()
            data-received-at=received_at_ms.to_string()>
            <p class=if plan.fits == Some(false) { "verdict oom" } else { "verdict fits" }>{verdict}</p>
            {plan.per_gpu().map(|line| view! { <p class="note" id="plan-per-gpu">{line}</p> })}
            {plan.host_line().map(|line| view! { <p class="note" id="plan-host">{line}</p> })}
            <p class="explain">{format!(
                "{}: {} parameters ({} train{}), planned for the browser's adapter, {}, on a \
                 device with no memory, in {:.1} s, in a worker that held {} of wasm memory. \
                 The analytic estimate: {}.",
                plan.name, plan.params, plan.trainable_params,
                if plan.adapter_params > 0 { format!(", {} in adapters", plan.adapter_params) } else { String::new() },
                plan.modelled.as_ref().map_or("this adapter", |m| m.name.as_str()),
                plan.seconds, gib.of(worker_wasm_bytes as u64), gib.of(plan.predicted_peak_bytes),
            )}</p>
            <div class="stacked" id="plan-categories">{bar}</div>
            <table class="phases">
                <thead><tr><th>"phase"</th><th>"in use"</th><th>"reserved"</th></tr></thead>
                <tbody id="plan-phases">{phases}</tbody>
            </table>
            <h3>"What forward keeps most for backward"</h3>
            <ul id="plan-kept">{kept}</ul>
            {(!plan.fewest_gpus.is_empty()).then(|| view! {
                <h3>"On more GPUs, sharded: the fewest that fit, planned"</h3>
                <ul id="plan-fewest-gpus">
                    {plan.fewest_gpus_lines().into_iter().map(|line| view! { <li>{line}</li> }).collect_view()}
                </ul>
            })}
            {(!plan.suggestions.is_empty()).then(|| view! {
                <h3>"Each suggestion, planned"</h3>
                <ul id="plan-suggestions">{suggestions}</ul>
            })}
            {(!plan.fallbacks.is_empty()).then(|| view! {
                <h3>"Planned otherwise than asked"</h3>
                <ul id="plan-fallbacks">{fallbacks}</ul>
            })}
            {oversized}
        </div>
    }
}

/// The largest batch (or longest sequence) that fits the card, found by the finder with each
/// trial a plan; every trial listed, and the value can be taken into the editor.
#[component]
fn SearchAnswer(
    search: Search,
    editor: Editor,
    worker_wasm_bytes: f64,
    received_at_ms: f64,
) -> impl IntoView {
    let gib = ByteFormat::MIB_OR_GIB;
    let (largest, unit, use_it, column, command) = match search.axis {
        Axis::Batch => (
            "Largest batch",
            "batch",
            "Use this batch",
            "batch",
            "find-batch --plan",
        ),
        Axis::SeqLen => (
            "Longest sequence",
            "sequence",
            "Use this length",
            "data.seq_len",
            "find-batch --plan --longest-sequence",
        ),
    };
    let verdict = match search.found() {
        Some(value) => format!(
            "{largest} that fits: {value} ({} trials planned, {} did not fit, {:.1} s).",
            search.trials, search.ooms, search.seconds
        ),
        None => match search.smallest_failure() {
            Some((value, _)) => format!("No {unit} fits: even {value} does not."),
            None => format!("No {unit} fits."),
        },
    };
    let found = search
        .found()
        .map_or(String::new(), |value| value.to_string());
    let field = search.axis.field();
    let apply = search.found().map(|value| {
        view! {
            <button id="plan-use-found" on:click=move |_| editor.set(field, &value.to_string())>
                {use_it}
            </button>
        }
    });
    let rows = search
        .trials_log
        .iter()
        .map(|trial| {
            view! {
                <tr class=if trial.fits { "fits" } else { "oom" }>
                    <td>{trial.value()}</td>
                    <td>{if trial.fits { "fits" } else { "does not fit" }}</td>
                    <td>{gib.of(trial.peak_in_use_bytes)}</td>
                    <td>{gib.of(trial.peak_reserved_bytes)}</td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <div id="plan-search" data-found=found data-axis=field data-trials=search.trials.to_string()
            data-wasm-bytes=wasm_bytes().to_string()
            data-worker-wasm-bytes=worker_wasm_bytes.to_string()
            data-received-at=received_at_ms.to_string()>
            <p class=if search.found().is_some() { "verdict fits" } else { "verdict oom" }>{verdict} " " {apply}</p>
            <p class="explain">
                {format!("The finder's search (as vramlab {command}), each trial a plan \
                 of two steps on a planning device of its own; the other fields as the config \
                 above has them.")}
            </p>
            <table class="trials">
                <thead><tr><th>{column}</th><th>"trial"</th><th>"high-water in use"</th><th>"reserved"</th></tr></thead>
                <tbody>{rows}</tbody>
            </table>
            {search.notes.iter().map(|note| view! { <p class="note">{note.clone()}</p> }).collect_view()}
        </div>
    }
}
