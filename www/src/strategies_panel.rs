//! The strategies, grouped by what they shrink: activations, weights and data, gradients and
//! optimizer state, the allocator. The catalog (`engine::strategies::catalog`) says what each does and claims; the
//! groups are the page's own small table, so a strategy the catalog gains shows at once, under
//! "Other" until a group names it.

use leptos::prelude::*;
use vramlab::engine::AdapterInfo;
use vramlab::engine::strategies::catalog::{CATALOG, Entry};

use crate::browser::open_card;
use crate::config_panel::{control, no_f16};
use crate::editor::Editor;
use crate::lessons::card_id;

/// A group of settings that shrink the same thing.
struct Group {
    name: &'static str,
    /// What the group shrinks, in a few words.
    what: &'static str,
    /// Catalog fields, in the order shown.
    fields: &'static [&'static str],
}

const GROUPS: &[Group] = &[
    Group {
        name: "Activations",
        what: "what forward keeps for backward",
        fields: &[
            "strategies.grad_accumulation",
            "strategies.checkpointing",
            "strategies.mixed_precision",
            "strategies.eval_mode",
            "strategies.inplace_activation",
            "strategies.loss_bookkeeping",
            "strategies.attention",
            "strategies.cross_entropy",
            "strategies.kernels",
        ],
    },
    Group {
        name: "Weights and data",
        what: "the model's bytes and the data's",
        fields: &["strategies.weight_dtype", "strategies.data_residency"],
    },
    Group {
        name: "Gradients and optimizer state",
        what: "what training a weight keeps",
        fields: &[
            "strategies.trainable",
            "strategies.lora_rank",
            "strategies.lora_alpha",
            "optimizer",
        ],
    },
    Group {
        name: "The allocator",
        what: "how the pools hold and give back pages",
        fields: &["strategies.memory_pool", "strategies.free_cache"],
    },
];

/// Strategies "Will it fit?" asks about beside its card and GPU count: planned, refused by a
/// run, so not the editor's.
const PLAN_PANELS: &[&str] = &["strategies.offload"];

/// The strategies no group names, for "Other".
fn ungrouped() -> Vec<&'static Entry> {
    CATALOG
        .iter()
        .filter(|e| {
            e.is_strategy()
                && !GROUPS.iter().any(|g| g.fields.contains(&e.field))
                && !PLAN_PANELS.contains(&e.field)
        })
        .collect()
}

/// One setting: its control (the catalog's words in its tooltip) and each claim about it on one
/// line, with a link to its lesson.
fn setting(editor: Editor, entry: &'static Entry, no_f16: Signal<Option<String>>) -> impl IntoView {
    let claims = entry
        .claims
        .iter()
        .map(|claim| {
            let link = card_id(entry, claim).map(|card| {
                view! {
                    <button class="lesson-link" title="this claim's lesson: run it off and on"
                        on:click=move |_| open_card(&card)>"lesson"</button>
                }
            });
            view! {
                <p class="claim" title=claim.folklore>
                    <span class="claim-text">"“" {claim.folklore} "”"</span> {link}
                </p>
            }
        })
        .collect_view();
    view! {
        <div class="strategy" data-field=entry.field title=entry.explain>
            {control(editor, entry, no_f16)}
            {claims}
        </div>
    }
}

#[component]
pub fn StrategiesPanel(editor: Editor, adapter: RwSignal<Option<AdapterInfo>>) -> impl IntoView {
    let no_f16 = no_f16(adapter);
    let entries = |fields: &[&str]| -> Vec<&'static Entry> {
        fields
            .iter()
            .filter_map(|f| CATALOG.iter().find(|e| e.field == *f))
            .collect()
    };
    let other = ungrouped();
    let groups = GROUPS
        .iter()
        .map(|g| (g.name, g.what, entries(g.fields)))
        .chain((!other.is_empty()).then_some(("Other", "more settings", other)))
        .filter(|(_, _, entries)| !entries.is_empty())
        .map(|(name, what, entries)| {
            let settings = entries
                .into_iter()
                .map(|e| setting(editor, e, no_f16))
                .collect_view();
            view! {
                <div class="group">
                    <h3>{name} <span class="what">{what}</span></h3>
                    {settings}
                </div>
            }
        })
        .collect_view();
    view! {
        <section class="panel" id="strategies-panel">
            <h2>"Strategies " <span class="what">"and the folklore about each"</span></h2>
            {groups}
        </section>
    }
}
