//! The configuration panels: preset, data, model, training and strategies. Every control edits
//! one field through the engine's `path=value` overrides, so the page refuses exactly what the
//! CLI refuses, with the same message naming the field.

use leptos::prelude::*;
use vramlab::engine::config::{InputKind, ModelKind};
use vramlab::engine::overrides::apply_override;
use vramlab::engine::presets::{PRESETS, preset};
use vramlab::engine::{AdapterInfo, RunConfig};

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

/// A strategy the page offers: its field, a one-line explanation, and the folklore claim.
struct StrategyInfo {
    path: &'static str,
    label: &'static str,
    explain: &'static str,
    claim: &'static str,
    choices: &'static [&'static str],
}

/// Settings with f16 choices, disabled when the adapter has no shader-f16.
const F16_PATHS: [&str; 2] = ["strategies.mixed_precision", "strategies.weight_dtype"];

const STRATEGIES: &[StrategyInfo] = &[
    StrategyInfo {
        path: "strategies.grad_accumulation",
        label: "gradient accumulation (k)",
        explain: "k micro-batches per optimizer step, each loss scaled by its share",
        claim: "same gradients, about 1/k of the activation memory",
        choices: &[],
    },
    StrategyInfo {
        path: "strategies.mixed_precision",
        label: "mixed precision",
        explain: "f16: f16 compute from f32 master weights with a loss scaler; f16_unscaled: model.half()",
        claim: "half the activation memory, same accuracy (with the scaler)",
        choices: &["off", "f16", "f16_unscaled"],
    },
    StrategyInfo {
        path: "strategies.eval_mode",
        label: "evaluation mode",
        explain: "no_grad evaluates without recording a graph; autodiff records one per batch",
        claim: "evaluate under no_grad or memory balloons",
        choices: &["no_grad", "autodiff"],
    },
    StrategyInfo {
        path: "strategies.checkpointing",
        label: "gradient checkpointing",
        explain: "balanced: recompute cheap activations in backward instead of keeping them",
        claim: "less activation memory for some extra time",
        choices: &["none", "balanced"],
    },
    StrategyInfo {
        path: "strategies.loss_bookkeeping",
        label: "loss bookkeeping",
        explain: "graph keeps every step's loss, logits and layer outputs (total_loss += loss)",
        claim: "sum loss.item(), not the loss tensor, or memory grows every step",
        choices: &["scalar", "graph"],
    },
    StrategyInfo {
        path: "strategies.free_cache",
        label: "free cached memory",
        explain: "hand the allocator's unused pages back after every step or epoch",
        claim: "call empty_cache() to free GPU memory",
        choices: &["never", "step", "epoch"],
    },
    StrategyInfo {
        path: "strategies.data_residency",
        label: "data residency",
        explain: "device: the training split lives on the GPU and batches are gathered there",
        claim: "keep the data on the GPU (pin_memory, workers) so loading is not the bottleneck",
        choices: &["host", "device"],
    },
    StrategyInfo {
        path: "strategies.memory_pool",
        label: "allocator pools",
        explain: "subslices: small allocations share pages; exclusive: a page each (taken at page load)",
        claim: "tune max_split_size_mb to fight fragmentation",
        choices: &["subslices", "exclusive"],
    },
    StrategyInfo {
        path: "strategies.weight_dtype",
        label: "weight precision",
        explain: "f16: model.half(), gradients and optimizer state too; int8: quantized copy for evaluation",
        claim: "halve the model, or quantize it, and it still works",
        choices: &["f32", "f16", "int8"],
    },
    StrategyInfo {
        path: "strategies.kernels",
        label: "kernels",
        explain: "fused: vramlab's own WGSL step for a ReLU MLP (3L+1 dispatches, no autodiff graph)",
        claim: "fused kernels keep fewer intermediates and run faster",
        choices: &["burn", "fused"],
    },
    StrategyInfo {
        path: "strategies.inplace_activation",
        label: "in-place activation",
        explain: "false: the activation writes a copy while its input stays alive",
        claim: "ReLU(inplace=True) saves memory",
        choices: &["true", "false"],
    },
];

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
    disabled_reason: Signal<Option<String>>,
) -> impl IntoView {
    let value = move || json_field(&editor.config.get(), path);
    let options = choices
        .iter()
        .map(|&c| {
            let off = move || c.starts_with("f16") && disabled_reason.get().is_some();
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

#[component]
pub fn ConfigPanel(editor: Editor, adapter: RwSignal<Option<AdapterInfo>>) -> impl IntoView {
    let kind = move || editor.config.with(|c| c.model.kind);
    let input = move || editor.config.with(|c| c.data.kind.input_kind());
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
    let strategies = STRATEGIES
        .iter()
        .map(|s| {
            let control = if s.choices.is_empty() {
                field(editor, s.label, s.path, s.explain).into_any()
            } else if F16_PATHS.contains(&s.path) {
                choice(editor, s.label, s.path, s.choices, no_f16).into_any()
            } else {
                choice(editor, s.label, s.path, s.choices, Signal::derive(|| None)).into_any()
            };
            let reason = F16_PATHS.contains(&s.path).then(|| {
                move || {
                    no_f16
                        .get()
                        .map(|r| view! { <p class="disabled-reason">{r}</p> })
                }
            });
            view! {
                <div class="strategy">
                    {control}
                    <p class="explain">{s.explain}</p>
                    <p class="claim">"Claim: " {s.claim}</p>
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
                InputKind::Points => view! {
                    {field(editor, "samples", "data.samples", "points in the data set")}
                    {field(editor, "noise", "data.noise", "label noise, 0..0.5")}
                }.into_any(),
                InputKind::Tokens => view! {
                    {field(editor, "sequence length", "data.seq_len", "tokens per sequence")}
                }.into_any(),
                InputKind::Images => view! { <p class="explain">"8x8 UCI digits"</p> }.into_any(),
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
            }}
        </section>
        <section class="panel" id="training-panel">
            <h2>"Training"</h2>
            {choice(editor, "optimizer", "optimizer", &["sgd", "momentum", "adam"], Signal::derive(|| None))}
            {field(editor, "learning rate", "learning_rate", "step size")}
            {field(editor, "batch size", "batch_size", "samples per step")}
            {field(editor, "eval batch size", "eval_batch_size", "samples per evaluation batch")}
            {field(editor, "memory budget", "budget",
                "pretend this GPU has only this much: 512MiB, 1536KiB, bytes, or 0.8 of the adapter's largest buffer; empty for none")}
            {field(editor, "steps", "steps", "optimizer steps")}
            {field(editor, "evaluate every", "eval_every", "steps between evaluations (0: only at the end)")}
        </section>
        <section class="panel" id="strategies-panel">
            <h2>"Strategies"</h2>
            {strategies}
        </section>
    }
}
