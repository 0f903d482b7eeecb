//! The data card's own table: a CSV chosen with the file picker or dropped on the card, read in
//! this browser (never sent anywhere) by the engine's reader, and its label column. A broken
//! file is refused on the card, naming the line and column, and the config and the run stay as
//! they were. The link (the URL) names the file; it cannot carry the rows, and the card says so.

use std::sync::Arc;

use leptos::prelude::*;
use vramlab::engine::config::DataKind;
use vramlab::engine::presets::use_table;
use vramlab::engine::table::{SharedTable, Table, limits, parse};
use wasm_bindgen::JsCast;

use crate::editor::Editor;

/// What the card knows about the table beyond the config: the parsed cells, kept so another
/// label column can be chosen without reading the file again.
#[derive(Clone, Copy)]
struct Cells(RwSignal<Option<Arc<Table>>>);

/// Label `table` by `spec` and make it the config's data; the error text otherwise, the config
/// untouched.
fn adopt(editor: Editor, table: &Table, spec: &str) -> Result<Vec<String>, String> {
    let labelled = table.label(spec).map_err(|err| err.to_string())?;
    let mut config = editor.config.get_untracked();
    let name = table.source.name.clone();
    let notes = use_table(&mut config, SharedTable::new(labelled), &name, false);
    config.validate().map_err(|err| err.to_string())?;
    editor.config.set(config);
    editor.refused.set(None);
    Ok(notes)
}

/// Read `file` (at most the byte limit and one byte more: past it the reader says where the
/// limit fell) and take it as the data.
fn read(
    editor: Editor,
    cells: Cells,
    error: RwSignal<Option<String>>,
    notes: RwSignal<Vec<String>>,
    file: web_sys::File,
) {
    let name = file.name();
    let blob: web_sys::Blob = if file.size() > (limits::BYTES + 1) as f64 {
        file.slice_with_f64_and_f64(0.0, (limits::BYTES + 1) as f64)
            .unwrap_or_else(|_| file.clone().into())
    } else {
        file.into()
    };
    leptos::task::spawn_local(async move {
        let buffer = wasm_bindgen_futures::JsFuture::from(blob.array_buffer()).await;
        let Ok(buffer) = buffer else {
            error.set(Some(format!("{name}: the browser could not read the file")));
            return;
        };
        let bytes = js_sys::Uint8Array::new(&buffer).to_vec();
        let table = match parse(&bytes) {
            Ok(table) => table.named(name.clone()),
            Err(err) => return error.set(Some(format!("{name}: {err}"))),
        };
        // A label chosen before (or by a link) is kept when the new file has that column.
        let current = editor.config.with_untracked(|c| c.data.label.clone());
        let spec = if table.columns().contains(&current) {
            current
        } else {
            String::new()
        };
        match adopt(editor, &table, &spec) {
            Ok(changed) => {
                error.set(None);
                notes.set(changed);
                cells.0.set(Some(Arc::new(table)));
            }
            Err(err) => error.set(Some(format!("{name}: {err}"))),
        }
    });
}

fn first_file(files: Option<web_sys::FileList>) -> Option<web_sys::File> {
    files.and_then(|f| f.get(0))
}

/// The files of a drop, read through `dataTransfer` by name (no extra web-sys feature).
fn dropped_files(ev: &web_sys::DragEvent) -> Option<web_sys::FileList> {
    let transfer = js_sys::Reflect::get(ev, &"dataTransfer".into()).ok()?;
    js_sys::Reflect::get(&transfer, &"files".into())
        .ok()?
        .dyn_into::<web_sys::FileList>()
        .ok()
}

/// The file picker, the drop zone, the label column and what the card has to say.
#[component]
pub fn TableInput(editor: Editor) -> impl IntoView {
    let cells = Cells(RwSignal::new(None));
    let error = RwSignal::new(None::<String>);
    let notes = RwSignal::new(Vec::<String>::new());
    let dragging = RwSignal::new(false);
    let on_table = move || {
        editor
            .config
            .with(|c| c.data.kind == DataKind::Csv && c.data.table.is_some())
    };
    let label_choice = move || {
        let table = cells.0.get().filter(|_| on_table())?;
        let current = editor
            .config
            .with(|c| c.data.table.as_ref().map(|t| t.label.clone()))?;
        let options = table
            .columns()
            .iter()
            .map(|c| view! { <option value=c.clone() selected=*c == current>{c.clone()}</option> })
            .collect_view();
        Some(view! {
            <label class="field">
                <span>"label column"</span>
                <select name="data.label" on:change=move |ev| {
                    let spec = event_target_value(&ev);
                    if let Some(table) = cells.0.get_untracked() {
                        match adopt(editor, &table, &spec) {
                            Ok(changed) => { error.set(None); notes.set(changed); }
                            Err(err) => error.set(Some(format!("{}: {err}", table.source.name))),
                        }
                    }
                }>{options}</select>
            </label>
        })
    };
    let link_note = move || {
        editor.config.with(|c| {
            let table = c.data.table.as_ref().filter(|_| c.data.kind == DataKind::Csv)?;
            Some(view! {
                <p class="note" id="table-link-note">
                    "The link in the address bar carries these settings, not the table: whoever opens it chooses "
                    <code>{table.source.name.clone()}</code>
                    {format!(" ({} rows, {} columns, SHA-256 {}…) on this card again. An exported run records the same.",
                        table.rows(), table.columns(), &table.source.sha256[..12])}
                </p>
            })
        })
    };
    view! {
        <div class=move || if dragging.get() { "table-drop dragging" } else { "table-drop" }
            on:dragover=move |ev: web_sys::DragEvent| { ev.prevent_default(); dragging.set(true); }
            on:dragleave=move |_| dragging.set(false)
            on:drop=move |ev: web_sys::DragEvent| {
                ev.prevent_default();
                dragging.set(false);
                if let Some(file) = first_file(dropped_files(&ev)) {
                    read(editor, cells, error, notes, file);
                }
            }>
            <label class="table-file">"Your own data: a CSV with a header row "
                <input type="file" data-testid="data-file" id="data-file" accept=".csv,text/csv,text/plain"
                    on:change=move |ev| {
                        let input: web_sys::HtmlInputElement = event_target(&ev);
                        if let Some(file) = first_file(input.files()) {
                            read(editor, cells, error, notes, file);
                        }
                        // The same file chosen again (after fixing it) must fire a change.
                        input.set_value("");
                    } />
            </label>
            <span class="explain">" or drop one here. It is read in this browser and never sent anywhere."</span>
        </div>
        {label_choice}
        {move || error.get().map(|e| view! { <p class="error" id="data-error">{e}</p> })}
        {move || (!notes.get().is_empty()).then(|| view! {
            <p class="note" id="table-notes">{notes.get().join("; ")}</p>
        })}
        {link_note}
    }
}
