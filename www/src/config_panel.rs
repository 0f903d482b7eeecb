//! The configuration panels: preset, data, model, training and strategies. Every control edits
//! one field through the engine's `path=value` overrides, so the page refuses exactly what the
//! CLI refuses, with the same message naming the field.

use leptos::prelude::*;
use vramlab::engine::config::{DataKind, InputKind, ModelKind};
use vramlab::engine::overrides::apply_override;
use vramlab::engine::presets::{PRESETS, preset};
use vramlab::engine::strategies::catalog::{self, CATALOG, Entry};
use vramlab::engine::{AdapterInfo, RunConfig};

use crate::lessons::{card_id, scroll_to};

/// The page's editable state.
#[derive(Clone, Copy)]
pub struct Editor {
    pub preset: RwSignal<String>,
    pub config: RwSignal<RunConfig>,
    /// The last refused edit, naming the field and its range.
    pub refused: RwSignal<Option<String>>,
}

impl Editor {
    pub fn set(&self, path: &str, value: &str) {
        let current = self.config.get_untracked();
        let next = apply_override(&current, &format!("{path}={value}"))
            .and_then(|c| c.validate().map(|()| c));
        match next {
            Ok(config) => {
                self.config.set(config);
                self.refused.set(None);
            }
            Err(err) => self.refused.set(Some(err.to_string())),
        }
    }

    pub fn load_preset(&self, name: &str) {
        if let Ok(config) = preset(name) {
            self.preset.set(name.to_string());
            self.config.set(config);
            self.refused.set(None);
        }
    }
}

fn json_field(config: &RunConfig, path: &str) -> String {
    let mut value = serde_json::to_value(config).unwrap_or_default();
    for key in path.split('.') {
        value = value.get(key).cloned().unwrap_or_default();
    }
    match value {
        serde_json::Value::String(s) => s,
        serde_json::Value::Array(items) => items
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(","),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A number or text field bound to `path`.
fn field(
    editor: Editor,
    label: &'static str,
    path: &'static str,
    hint: &'static str,
) -> impl IntoView {
    let value = move || json_field(&editor.config.get(), path);
    let array = path == "model.hidden" || path == "model.channels";
    view! {
        <label class="field" title=hint>
            <span>{label}</span>
            <input
                name=path
                prop:value=value
                on:change=move |ev| {
                    let raw = event_target_value(&ev);
                    let raw = if array { format!("[{raw}]") } else { raw };
                    // An emptied optional field (the budget) means "none".
                    let raw = if raw.trim().is_empty() && path == "budget" {
                        "null".to_string()
                    } else {
                        raw
                    };
                    editor.set(path, &raw);
                }
            />
        </label>
    }
}

fn choice(
    editor: Editor,
    label: &'static str,
    path: &'static str,
    choices: &'static [&'static str],
    needs_f16: &'static [&'static str],
    disabled_reason: Signal<Option<String>>,
) -> impl IntoView {
    let value = move || json_field(&editor.config.get(), path);
    let options = choices
        .iter()
        .map(|&c| {
            let off = move || needs_f16.contains(&c) && disabled_reason.get().is_some();
            view! { <option value=c disabled=off>{c}</option> }
        })
        .collect_view();
    view! {
        <label class="field">
            <span>{label}</span>
            <select
                name=path
                prop:value=value
                on:change=move |ev| editor.set(path, &event_target_value(&ev))
            >
                {options}
            </select>
        </label>
    }
}

/// A catalog entry's control: a choice, or a field for a number.
fn control(editor: Editor, entry: &'static Entry, no_f16: Signal<Option<String>>) -> AnyView {
    if entry.choices.is_empty() {
        field(editor, entry.label, entry.field, entry.explain).into_any()
    } else {
        choice(
            editor,
            entry.label,
            entry.field,
            entry.choices,
            entry.f16_choices,
            no_f16,
        )
        .into_any()
    }
}

/// The catalog's entry for a plain field the page shows with its own words.
fn entry(field_name: &str) -> &'static Entry {
    catalog::find(field_name).expect("the catalog lists every field the page edits")
}

#[component]
pub fn ConfigPanel(editor: Editor, adapter: RwSignal<Option<AdapterInfo>>) -> impl IntoView {
    let kind = move || editor.config.with(|c| c.model.kind);
    let input = move || editor.config.with(|c| c.data.input_kind());
    let on_table = move || editor.config.with(|c| c.data.kind == DataKind::Csv);
    let presets = PRESETS
        .iter()
        .map(|p| view! { <option value=p.name title=p.purpose>{p.name}</option> })
        .collect_view();
    let no_f16 = Signal::derive(move || {
        adapter.get().and_then(|a| {
            (!a.shader_f16)
                .then(|| format!("{} has no shader-f16: f16 would fall back to f32", a.name))
        })
    });
    let strategies = CATALOG
        .iter()
        .filter(|entry| entry.is_strategy())
        .map(|entry| {
            let reason = (!entry.f16_choices.is_empty()).then_some(move || {
                no_f16
                    .get()
                    .map(|r| view! { <p class="disabled-reason">{r}</p> })
            });
            let claims = entry
                .claims
                .iter()
                .map(|claim| {
                    let card = card_id(entry, claim);
                    let link = card.map(|card| view! {
                        " "
                        <button class="lesson-link" title="this claim's lesson: run it off and on"
                            on:click=move |_| scroll_to(&card)>"lesson"</button>
                    });
                    view! { <p class="claim">"Claim: " {claim.folklore} {link}</p> }
                })
                .collect_view();
            view! {
                <div class="strategy">
                    {control(editor, entry, no_f16)}
                    <p class="explain">{entry.explain}</p>
                    {claims}
                    {reason}
                </div>
            }
        })
        .collect_view();
    view! {
        <section class="panel" id="data-panel">
            <h2>"Data and model"</h2>
            <label class="field">
                <span>"preset"</span>
                <select name="preset" prop:value=move || editor.preset.get()
                    on:change=move |ev| editor.load_preset(&event_target_value(&ev))>
                    {presets}
                </select>
            </label>
            <p class="explain">{move || format!("data: {}, model: {}",
                editor.config.with(|c| c.data.kind.name()), kind().name())}</p>
            {move || match input() {
                _ if on_table() => view! {
                    <p class="explain">"your table: its file and label column are on the data card"</p>
                }.into_any(),
                InputKind::Points => view! {
                    {field(editor, "samples", "data.samples", "points in the data set")}
                    {field(editor, "noise", "data.noise", "label noise, 0..0.5")}
                }.into_any(),
                InputKind::Tokens => view! {
                    {field(editor, "sequence length", "data.seq_len", "tokens per sequence")}
                }.into_any(),
                InputKind::Images => view! { <p class="explain">"8x8 UCI digits"</p> }.into_any(),
                InputKind::Features => ().into_any(),
            }}
            {field(editor, "test fraction", "data.test_fraction", "share held out for testing")}
            {move || match kind() {
                ModelKind::Mlp => field(editor, "hidden widths", "model.hidden", "comma-separated").into_any(),
                ModelKind::Cnn => view! {
                    {field(editor, "channels", "model.channels", "two convolutions")}
                    {field(editor, "dense width", "model.hidden", "one entry")}
                }.into_any(),
                ModelKind::Gru | ModelKind::Lstm => field(editor, "width", "model.width", "hidden size").into_any(),
                ModelKind::Transformer => view! {
                    {field(editor, "width", "model.width", "model width")}
                    {field(editor, "layers", "model.layers", "encoder layers")}
                    {field(editor, "heads", "model.heads", "attention heads")}
                    {field(editor, "ff", "model.ff", "feed-forward width")}
                }.into_any(),
                ModelKind::Llama => view! {
                    {field(editor, "width", "model.width", "model width")}
                    {field(editor, "layers", "model.layers", "decoder blocks")}
                    {field(editor, "heads", "model.heads", "attention heads")}
                    {field(editor, "kv heads", "model.kv_heads", "key/value heads (0: one per head)")}
                    {field(editor, "ff", "model.ff", "SwiGLU width")}
                }.into_any(),
            }}
        </section>
        <section class="panel" id="training-panel">
            <h2>"Training"</h2>
            {control(editor, entry("optimizer"), no_f16)}
            {field(editor, "learning rate", "learning_rate", "step size")}
            {control(editor, entry("batch_size"), no_f16)}
            {control(editor, entry("eval_batch_size"), no_f16)}
            {control(editor, entry("budget"), no_f16)}
            {field(editor, "steps", "steps", "optimizer steps")}
            {field(editor, "evaluate every", "eval_every", "steps between evaluations (0: only at the end)")}
        </section>
        <section class="panel" id="strategies-panel">
            <h2>"Strategies"</h2>
            {strategies}
        </section>
    }
}
