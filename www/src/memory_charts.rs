//! Where the memory went: each step's high-water mark stacked by category beside the analytic
//! model's stack, and the memory of one step as a line through its launches. Both read out the
//! figures under the pointer.

use leptos::prelude::*;
use vramlab::engine::format::mib;
use vramlab::engine::memory::{Categories, MemoryPrediction, StepTrace};
use vramlab::engine::phase::Phase;

use crate::chart_steps::ChartStep;
use crate::charts::{
    Axis, BOTTOM, H, LEFT, Marker, NO_RUN, Rule, TOP, W, empty_chart, legend_view, marker_view,
    rules_view, ticks_view,
};
use crate::hover;

/// The categories' colours, in [`Categories::NAMES`] order (the CLI's categories.svg uses the
/// same).
pub const CATEGORY_COLORS: [&str; 6] = [
    "#1f77b4", "#9467bd", "#7f7f7f", "#d62728", "#ff7f0e", "#bcbd22",
];

/// Where the plot ends on the right: the predicted stack stands beyond it.
const PLOT_RIGHT: f64 = W - 64.0;

fn label(name: &str) -> String {
    name.replace('_', " ")
}

/// The analytic model's categories in the measured ones' order (it predicts no input and no
/// temporaries), in MiB.
pub fn predicted_stack(prediction: &MemoryPrediction) -> [f64; 6] {
    [
        mib(prediction.params),
        mib(prediction.optimizer_state),
        0.0,
        mib(prediction.activations),
        mib(prediction.grads),
        0.0,
    ]
}

/// One step's stack, in MiB.
#[derive(Clone, Debug, PartialEq)]
pub struct Stack {
    pub step: f64,
    pub mib: [f64; 6],
}

impl Stack {
    pub fn of(step: usize, categories: &Categories) -> Self {
        Self {
            step: step as f64,
            mib: categories.values().map(mib),
        }
    }

    fn below(&self, index: usize) -> f64 {
        self.mib[..index].iter().sum()
    }

    fn total(&self) -> f64 {
        self.mib.iter().sum()
    }
}

#[derive(Clone, Debug, PartialEq)]
struct StackFrame {
    stacks: Vec<Stack>,
    predicted: Option<[f64; 6]>,
    rules: Vec<Rule>,
    marker: Option<Marker>,
    /// The pinned run's totals, for A/B.
    pinned: Vec<(f64, f64)>,
    x_max: f64,
    axis: Axis,
}

impl StackFrame {
    fn sx(&self, x: f64) -> f64 {
        LEFT + (x / self.x_max) * (PLOT_RIGHT - LEFT)
    }

    fn sy(&self, y: f64) -> f64 {
        TOP + (1.0 - (y / self.axis.top_given()).clamp(0.0, 1.0)) * (H - TOP - BOTTOM)
    }
}

/// Each step's high-water mark of bytes in use as a stack of categories (measured), the
/// predicted stack at the right, the budget and predicted peak as rules, an out-of-memory's
/// step as a marker and the pinned run's totals dashed. `stacks` are drawn as given: pick them
/// with [`stacks_of`].
#[component]
pub fn CategoryChart(
    #[prop(into)] stacks: Signal<Vec<Stack>>,
    #[prop(into)] predicted: Signal<Option<[f64; 6]>>,
    #[prop(into)] rules: Signal<Vec<Rule>>,
    #[prop(into)] marker: Signal<Option<Marker>>,
    #[prop(into)] pinned: Signal<Vec<(f64, f64)>>,
) -> impl IntoView {
    let frame = Memo::new(move |_| {
        // Picked by `stacks_of`: thinning them again would halve a long run's stacks.
        let stacks = stacks.get();
        let predicted = predicted.get();
        let rules = rules.get();
        let marker = marker.get();
        let pinned = pinned.get();
        let x_max = stacks
            .iter()
            .map(|s| s.step)
            .chain(marker.iter().map(|m| m.x))
            .chain(pinned.iter().map(|p| p.0))
            .fold(1.0_f64, f64::max);
        let y_max = stacks
            .iter()
            .map(Stack::total)
            .chain(predicted.iter().map(|p| p.iter().sum()))
            .chain(rules.iter().map(|r| r.y))
            .chain(pinned.iter().map(|p| p.1))
            .fold(0.0_f64, f64::max);
        StackFrame {
            stacks,
            predicted,
            rules,
            marker,
            pinned,
            x_max,
            axis: Axis::new(y_max, "MiB"),
        }
    });
    let hovered = RwSignal::new(None::<usize>);
    let body = move || {
        let frame = frame.get();
        if frame.stacks.is_empty() {
            return empty_chart(NO_RUN);
        }
        let areas = (0..Categories::NAMES.len())
            .map(|index| {
                let upper = frame
                    .stacks
                    .iter()
                    .map(|s| (frame.sx(s.step), frame.sy(s.below(index + 1))));
                let lower = frame
                    .stacks
                    .iter()
                    .rev()
                    .map(|s| (frame.sx(s.step), frame.sy(s.below(index))));
                let points = upper
                    .chain(lower)
                    .map(|(x, y)| format!("{x:.1},{y:.1}"))
                    .collect::<Vec<_>>()
                    .join(" ");
                view! {
                    <polygon points=points fill=CATEGORY_COLORS[index] fill-opacity="0.85"
                        class="category-area" data-category=Categories::NAMES[index] />
                }
            })
            .collect_view();
        let predicted = frame.predicted.map(|stack| {
            let x = PLOT_RIGHT + 18.0;
            let bars = (0..stack.len())
                .filter(|&i| stack[i] > 0.0)
                .map(|i| {
                    let below: f64 = stack[..i].iter().sum();
                    let (top, bottom) = (frame.sy(below + stack[i]), frame.sy(below));
                    view! {
                        <rect x=x y=top width="24" height=(bottom - top).max(0.5)
                            fill=CATEGORY_COLORS[i] fill-opacity="0.5" stroke=CATEGORY_COLORS[i] />
                    }
                })
                .collect_view();
            view! {
                <g id="predicted-stack">
                    {bars}
                    <text x=x + 12.0 y=H - 6.0 text-anchor="middle" class="tick">"predicted"</text>
                </g>
            }
        });
        let pinned = (!frame.pinned.is_empty()).then(|| {
            let points = frame
                .pinned
                .iter()
                .map(|&(x, y)| format!("{:.1},{:.1}", frame.sx(x), frame.sy(y)))
                .collect::<Vec<_>>()
                .join(" ");
            view! {
                <polyline points=points fill="none" stroke="#333" stroke-width="1.5"
                    stroke-dasharray="5 4" />
            }
        });
        let xs: Vec<f64> = frame.stacks.iter().map(|s| frame.sx(s.step)).collect();
        let guide = {
            let xs = xs.clone();
            move || {
                let x = xs.get(hovered.get()?)?;
                Some(view! { <line x1=*x x2=*x y1=TOP y2=H - BOTTOM class="guide" /> })
            }
        };
        let marker = frame.marker.as_ref().map(|m| marker_view(m, frame.sx(m.x)));
        let last_step = frame.stacks.last().map_or(0.0, |s| s.step);
        view! {
            <svg viewBox=format!("0 0 {W} {H}") class="chart"
                data-points=frame.stacks.len() data-last-total=last_total(&frame.stacks)
                on:mousemove=move |ev| hovered.set(
                    hover::view_x(&ev, W).and_then(|vx| vramlab::engine::plot::nearest(&xs, vx)))
                on:mouseleave=move |_| hovered.set(None)>
                <line x1=LEFT x2=LEFT y1=TOP y2=H - BOTTOM class="axis" />
                <line x1=LEFT x2=PLOT_RIGHT y1=H - BOTTOM y2=H - BOTTOM class="axis" />
                {ticks_view(&frame.axis, &|y| frame.sy(y))}
                <text x=PLOT_RIGHT y=H - 6.0 text-anchor="end" class="tick">
                    {format!("step {last_step}")}
                </text>
                {areas}
                {pinned}
                {rules_view(&frame.rules, &frame.axis, &|y| frame.sy(y))}
                {marker}
                {predicted}
                {guide}
            </svg>
            <div class="legend">
                {legend_view(Categories::NAMES.iter().zip(CATEGORY_COLORS).map(|(n, c)| (label(n), c)))}
                {(!frame.pinned.is_empty()).then(|| view! {
                    <span class="legend-item">"- - pinned run's high-water"</span>
                })}
            </div>
        }
        .into_any()
    };
    let readout = move || {
        let frame = frame.get();
        let stack = frame.stacks.get(hovered.get()?)?;
        let parts = Categories::NAMES
            .iter()
            .zip(stack.mib)
            .map(|(name, v)| format!("{} {}", label(name), frame.axis.number(v)))
            .collect::<Vec<_>>()
            .join(" · ");
        Some(format!(
            "step {}: {parts} (total {})",
            stack.step,
            frame.axis.reading(stack.total())
        ))
    };
    let unit = move || frame.with(|f| f.axis.unit);
    view! {
        <figure class="chart-box" id="category-chart">
            <figcaption>
                "Where the memory went: each step's high-water mark by category (measured, \
                 allocator differences), the analytic model's stack at the right (estimate)"
                <span class="unit">" (" {unit} ")"</span>
            </figcaption>
            {body}
            <div class="readout" id="category-chart-readout">{readout}</div>
        </figure>
    }
}

/// The last stack's total in MiB, for tests to read.
fn last_total(stacks: &[Stack]) -> String {
    stacks
        .last()
        .map_or(String::new(), |s| format!("{:.4}", s.total()))
}

/// Stacks drawn at most.
const MAX_STACKS: usize = 1000;

/// Whether the `index`th of `len` stacks is drawn: every one up to [`MAX_STACKS`], else evenly
/// picked to at most [`MAX_STACKS`], and the last always.
fn drawn(index: usize, len: usize) -> bool {
    len <= MAX_STACKS || index.is_multiple_of(len.div_ceil(MAX_STACKS)) || index + 1 == len
}

/// The stacks the chart draws of `steps` (those with categories), picked before they are made:
/// a long run's redraw does not make one for every step only to thin them.
pub fn stacks_of(steps: &[ChartStep]) -> Vec<Stack> {
    let len = steps.iter().filter(|s| s.categories.is_some()).count();
    steps
        .iter()
        .filter_map(|s| s.categories.map(|c| (s.step, c)))
        .enumerate()
        .filter(|(i, _)| drawn(*i, len))
        .map(|(_, (step, categories))| Stack::of(step, &categories))
        .collect()
}

fn phase_color(phase: Phase) -> &'static str {
    match phase {
        Phase::Setup | Phase::Upload => "#7f7f7f",
        Phase::Forward => "#d62728",
        Phase::Backward => "#ff7f0e",
        Phase::Optimizer => "#1f77b4",
        Phase::Eval => "#2ca02c",
    }
}

/// The phase a reading belongs to: that of the first check point at or after it.
fn phase_at(trace: &StepTrace, index: usize) -> Option<Phase> {
    trace
        .marks
        .iter()
        .find(|mark| mark.at >= index)
        .map(|mark| mark.phase)
}

/// The memory of one step: bytes in use at every launch and check point, check points as dots
/// in their phase's colour; after an out-of-memory, the failed step up to the reading that broke
/// the budget, marked.
#[component]
pub fn OneStepChart(
    /// The trace, and whether its step failed.
    #[prop(into)]
    trace: Signal<Option<(StepTrace, bool)>>,
    #[prop(into)] rules: Signal<Vec<Rule>>,
) -> impl IntoView {
    let hovered = RwSignal::new(None::<usize>);
    let axis = Memo::new(move |_| {
        let peak = trace.with(|t| t.as_ref().map_or(0, |(trace, _)| trace.peak()));
        let rules = rules.with(|rules| rules.iter().map(|r| r.y).fold(0.0, f64::max));
        Axis::new(mib(peak).max(rules), "MiB")
    });
    let body = move || {
        let Some((trace, failed)) = trace.get() else {
            return empty_chart(NO_RUN);
        };
        let rules = rules.get();
        let n = trace.in_use_bytes.len();
        if n == 0 {
            return empty_chart(NO_RUN);
        }
        let axis = axis.get();
        let x_max = (n.max(2) - 1) as f64;
        let y_max = axis.top_given();
        let sx = move |i: f64| LEFT + i / x_max * (W - LEFT - 8.0);
        let sy = move |y: f64| TOP + (1.0 - (y / y_max).clamp(0.0, 1.0)) * (H - TOP - BOTTOM);
        let points = trace
            .in_use_bytes
            .iter()
            .enumerate()
            .map(|(i, &b)| format!("{:.1},{:.1}", sx(i as f64), sy(mib(b))))
            .collect::<Vec<_>>()
            .join(" ");
        let dots = trace
            .marks
            .iter()
            .filter_map(|mark| {
                let bytes = *trace.in_use_bytes.get(mark.at)?;
                Some(view! {
                    <circle cx=sx(mark.at as f64) cy=sy(mib(bytes)) r="3.5"
                        fill=phase_color(mark.phase) class="check-point" />
                })
            })
            .collect_view();
        let failure = failed.then(|| {
            let marker = Marker {
                x: x_max,
                label: format!("out of memory in step {}", trace.step),
            };
            marker_view(&marker, sx(x_max))
        });
        let xs: Vec<f64> = (0..n).map(|i| sx(i as f64)).collect();
        let guide = {
            let xs = xs.clone();
            move || {
                let x = xs.get(hovered.get()?)?;
                Some(view! { <line x1=*x x2=*x y1=TOP y2=H - BOTTOM class="guide" /> })
            }
        };
        let legend = [
            Phase::Upload,
            Phase::Forward,
            Phase::Backward,
            Phase::Optimizer,
            Phase::Eval,
        ]
        .into_iter()
        .map(|p| (format!("{} check point", p.name()), phase_color(p)));
        let caption_kind = if trace.launches {
            "every kernel launch and check point"
        } else {
            "its check points (step sampling reads no launches)"
        };
        view! {
            <p class="explain">{format!("Step {}: in use at {caption_kind}, in order.", trace.step)}</p>
            <svg viewBox=format!("0 0 {W} {H}") class="chart" data-points=n
                data-peak=trace.peak() data-step=trace.step data-failed=failed.to_string()
                on:mousemove=move |ev| hovered.set(
                    crate::hover::view_x(&ev, W).and_then(|vx| vramlab::engine::plot::nearest(&xs, vx)))
                on:mouseleave=move |_| hovered.set(None)>
                <line x1=LEFT x2=LEFT y1=TOP y2=H - BOTTOM class="axis" />
                <line x1=LEFT x2=W - 8.0 y1=H - BOTTOM y2=H - BOTTOM class="axis" />
                {ticks_view(&axis, &sy)}
                <text x=W - 8.0 y=H - 6.0 text-anchor="end" class="tick">
                    {format!("reading {n}")}
                </text>
                {rules_view(&rules, &axis, &sy)}
                <polyline points=points fill="none" stroke="#222" stroke-width="1.6" />
                {dots}
                {failure}
                {guide}
            </svg>
            <div class="legend">{legend_view(legend)}</div>
        }
        .into_any()
    };
    let readout = move || {
        let (trace, _) = trace.get()?;
        let index = hovered.get()?;
        let bytes = trace.in_use_bytes.get(index)?;
        let phase = phase_at(&trace, index).map_or("after the last check point", Phase::name);
        Some(format!(
            "reading {} ({phase}): {} in use",
            index + 1,
            axis.get().reading(mib(*bytes))
        ))
    };
    view! {
        <figure class="chart-box" id="one-step-chart">
            <figcaption>
                "The memory of one step: the hill of activations in forward, its release in \
                 backward (measured)"
                <span class="unit">" (" {move || axis.get().unit} ")"</span>
            </figcaption>
            {body}
            <div class="readout" id="one-step-chart-readout">{readout}</div>
        </figure>
    }
}
