//! A user's table as the data card shows it: the file, the columns found, the classes and how
//! many rows each has, and the first rows as written in the file.

use leptos::prelude::*;
use vramlab::engine::table::LabelledTable;

/// Rows of the file shown.
const FIRST_ROWS: usize = 5;

/// A value as the file had it (an f32 prints the shortest text that reads back the same).
fn cell(value: f32) -> String {
    value.to_string()
}

pub fn table_preview(table: &LabelledTable) -> AnyView {
    let width = table.width();
    // The file's column order: the label sits where it was.
    let label_at = table.label_column - 1;
    let mut header: Vec<String> = table.features.clone();
    header.insert(label_at, table.label.clone());
    let head = header
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let class = if i == label_at { "label" } else { "" };
            view! { <th class=class>{name.clone()}</th> }
        })
        .collect_view();
    let rows = (0..table.rows().min(FIRST_ROWS))
        .map(|row| {
            let mut cells: Vec<String> = table.values[row * width..(row + 1) * width]
                .iter()
                .map(|&v| cell(v))
                .collect();
            cells.insert(label_at, table.classes[table.targets[row] as usize].clone());
            let cells = cells
                .into_iter()
                .enumerate()
                .map(|(i, text)| {
                    let class = if i == label_at { "label" } else { "" };
                    view! { <td class=class>{text}</td> }
                })
                .collect_view();
            view! { <tr>{cells}</tr> }
        })
        .collect_view();
    let classes = table
        .classes
        .iter()
        .zip(table.class_counts())
        .map(|(name, count)| view! { <li>{format!("{name}: {count}")}</li> })
        .collect_view();
    view! {
        <div class="table-preview" id="table-preview">
            <p class="explain" id="table-shape">
                {format!(
                    "{}: {} rows, {} columns: {} numeric features and the label {} (column {}). \
                     Features are standardised by the training split's mean and spread.",
                    table.source.name,
                    table.rows(),
                    table.columns(),
                    width,
                    table.label,
                    table.label_column
                )}
            </p>
            <div class="table-scroll">
                <table>
                    <thead><tr>{head}</tr></thead>
                    <tbody>{rows}</tbody>
                </table>
            </div>
            <p class="explain">{format!("{} classes, rows of each:", table.classes.len())}</p>
            <ul class="table-classes" id="table-classes">{classes}</ul>
        </div>
    }
    .into_any()
}
