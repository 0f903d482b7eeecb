//! The configuration panels: preset, data and model, training; and the controls every panel
//! uses. Every control edits one field through the engine's `path=value` overrides, so the page
//! refuses exactly what the CLI refuses, with the same message naming the field.

use leptos::prelude::*;
use vramlab::engine::config::{DataKind, InputKind};
use vramlab::engine::presets::playground;
use vramlab::engine::strategies::catalog::{self, Entry};
use vramlab::engine::{AdapterInfo, RunConfig};

use crate::editor::Editor;

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
    // A choice this adapter cannot run is shown, disabled, saying why where it is chosen.
    let options = choices
        .iter()
        .map(|&c| {
            let off = move || needs_f16.contains(&c) && disabled_reason.get().is_some();
            let text = move || {
                if off() {
                    format!("{c} (needs shader-f16)")
                } else {
                    c.to_string()
                }
            };
            let why = move || off().then(|| disabled_reason.get()).flatten();
            view! { <option value=c disabled=off title=why>{text}</option> }
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
pub fn control(editor: Editor, entry: &'static Entry, no_f16: Signal<Option<String>>) -> AnyView {
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

/// Why f16 choices are off on `adapter`, if they are.
pub fn no_f16(adapter: RwSignal<Option<AdapterInfo>>) -> Signal<Option<String>> {
    Signal::derive(move || {
        adapter.get().and_then(|a| {
            (!a.shader_f16)
                .then(|| format!("{} has no shader-f16: f16 would fall back to f32", a.name))
        })
    })
}

#[component]
pub fn ConfigPanel(editor: Editor) -> impl IntoView {
    let kind = move || editor.config.with(|c| c.model.kind);
    let input = move || editor.config.with(|c| c.data.input_kind());
    let on_table = move || editor.config.with(|c| c.data.kind == DataKind::Csv);
    let presets = playground()
        .map(|p| view! { <option value=p.name title=p.purpose>{p.name}</option> })
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
            // The model card's fields are the family's (`Family::panel`).
            {move || kind().family().panel().iter()
                .map(|f| field(editor, f.label, f.path, f.hint))
                .collect_view()}
        </section>
    }
}

/// The training fields: how long, how big a batch, and the memory budget the run must fit.
#[component]
pub fn TrainingPanel(editor: Editor, adapter: RwSignal<Option<AdapterInfo>>) -> impl IntoView {
    let no_f16 = no_f16(adapter);
    view! {
        <section class="panel" id="training-panel">
            <h2>"Training"</h2>
            {field(editor, "learning rate", "learning_rate", "step size")}
            {control(editor, entry("batch_size"), no_f16)}
            {control(editor, entry("eval_batch_size"), no_f16)}
            {control(editor, entry("budget"), no_f16)}
            {field(editor, "steps", "steps", "optimizer steps")}
            {field(editor, "evaluate every", "eval_every", "steps between evaluations (0: only at the end)")}
            {field(editor, "evaluation batches", "eval_batches", "batches of the test split each evaluation reads (0: all of it)")}
        </section>
    }
}
