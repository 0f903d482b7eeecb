//! Charts drawn as SVG by Leptos: a line chart with optional horizontal reference lines, and
//! a bar row for the phases of one step. A series longer than [`MAX_POINTS`] is thinned before
//! drawing, so a long run keeps the page fast.

use leptos::prelude::*;
use vramlab::engine::plot::thin;

const W: f64 = 560.0;
const H: f64 = 180.0;
const LEFT: f64 = 56.0;
const BOTTOM: f64 = 22.0;
const TOP: f64 = 8.0;

/// Points drawn per series at most.
const MAX_POINTS: usize = 2000;

#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub color: &'static str,
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed (an overlay of a pinned run, or an estimate).
    pub dashed: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub label: String,
    pub y: f64,
    pub color: &'static str,
}

fn fmt_tick(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// A line chart over steps. `series` and `rules` are read inside the closure so it redraws.
#[component]
pub fn LineChart(
    title: &'static str,
    unit: &'static str,
    #[prop(into)] series: Signal<Vec<Series>>,
    #[prop(into, optional)] rules: Option<Signal<Vec<Rule>>>,
    /// Test hook: the chart's id in the DOM.
    id: &'static str,
) -> impl IntoView {
    let body = move || {
        let series: Vec<Series> = series
            .get()
            .into_iter()
            .map(|s| Series {
                points: thin(&s.points, MAX_POINTS),
                ..s
            })
            .collect();
        let rules = rules.map(|r| r.get()).unwrap_or_default();
        let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
        let x_max = xs.fold(1.0_f64, f64::max);
        let ys = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(rules.iter().map(|r| r.y))
            .filter(|y| y.is_finite());
        let y_max = ys.fold(0.0_f64, f64::max).max(1e-9) * 1.08;
        let sx = move |x: f64| LEFT + (x / x_max) * (W - LEFT - 8.0);
        let sy = move |y: f64| TOP + (1.0 - (y / y_max).clamp(0.0, 1.0)) * (H - TOP - BOTTOM);
        let lines = series
            .iter()
            .map(|s| {
                let points = s
                    .points
                    .iter()
                    .filter(|p| p.1.is_finite())
                    .map(|&(x, y)| format!("{:.1},{:.1}", sx(x), sy(y)))
                    .collect::<Vec<_>>()
                    .join(" ");
                let dash = if s.dashed { "5 4" } else { "" };
                view! {
                    <polyline points=points fill="none" stroke=s.color stroke-width="1.8"
                        stroke-dasharray=dash />
                }
            })
            .collect_view();
        let rule_lines = rules
            .iter()
            .map(|r| {
                let y = sy(r.y);
                view! {
                    <line x1=LEFT x2=W - 8.0 y1=y y2=y stroke=r.color stroke-dasharray="3 3" />
                    <text x=W - 10.0 y=y - 3.0 text-anchor="end" class="rule-label" fill=r.color>
                        {r.label.clone()}
                    </text>
                }
            })
            .collect_view();
        let ticks = (0..=4)
            .map(|i| {
                let v = y_max / 1.08 * i as f64 / 4.0;
                view! {
                    <text x=LEFT - 4.0 y=sy(v) + 4.0 text-anchor="end" class="tick">
                        {fmt_tick(v)}
                    </text>
                }
            })
            .collect_view();
        let legend = series
            .iter()
            .map(|s| {
                view! {
                    <span class="legend-item">
                        <span class="swatch" style=format!("background:{}", s.color)></span>
                        {s.name.clone()}
                    </span>
                }
            })
            .collect_view();
        let points = series.iter().map(|s| s.points.len()).sum::<usize>();
        if points == 0 {
            return view! {
                <svg viewBox=format!("0 0 {W} {H}") class="chart" data-points=0>
                    <text x=W / 2.0 y=H / 2.0 text-anchor="middle" class="tick">
                        "no data yet: start a run"
                    </text>
                </svg>
            }
            .into_any();
        }
        view! {
            <svg viewBox=format!("0 0 {W} {H}") class="chart" data-points=points>
                <line x1=LEFT x2=LEFT y1=TOP y2=H - BOTTOM class="axis" />
                <line x1=LEFT x2=W - 8.0 y1=H - BOTTOM y2=H - BOTTOM class="axis" />
                {ticks}
                <text x=W - 8.0 y=H - 6.0 text-anchor="end" class="tick">
                    {format!("step {}", x_max as u64)}
                </text>
                {rule_lines}
                {lines}
            </svg>
            <div class="legend">{legend}</div>
        }
        .into_any()
    };
    view! {
        <figure class="chart-box" id=id>
            <figcaption>{title} <span class="unit">"(" {unit} ")"</span></figcaption>
            {body}
        </figure>
    }
}

/// One phase of a step, in MiB: in use at its end, and the most it held inside.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseBar {
    pub name: &'static str,
    pub at_end: f64,
    pub high_water: Option<f64>,
}

/// One row per phase of a step: a faint bar to the phase's high-water mark, a solid one to what
/// is in use at its end; the largest figure is the full width.
#[component]
pub fn PhaseBars(#[prop(into)] phases: Signal<Vec<PhaseBar>>) -> impl IntoView {
    let body = move || {
        let phases = phases.get();
        let top = phases
            .iter()
            .map(|p| p.high_water.unwrap_or(p.at_end).max(p.at_end))
            .fold(1e-9, f64::max);
        let width = move |mib: f64| format!("width:{:.1}%", mib / top * 100.0);
        phases
            .into_iter()
            .map(|bar| {
                let high_water = bar.high_water.map(|mark| {
                    view! { <span class="bar-high" style=width(mark)></span> }
                });
                let value = match bar.high_water {
                    Some(mark) => format!("{:.2} / {mark:.2} MiB", bar.at_end),
                    None => format!("{:.2} MiB", bar.at_end),
                };
                view! {
                    <div class="bar-row">
                        <span class="bar-name">{bar.name}</span>
                        <span class="bar">{high_water}<span class="bar-fill" style=width(bar.at_end)></span></span>
                        <span class="bar-value">{value}</span>
                    </div>
                }
            })
            .collect_view()
    };
    view! {
        <figure class="chart-box" id="phase-chart">
            <figcaption>
                "Memory inside the last step, by phase: in use at the phase's end (solid) / its \
                 high-water mark inside the phase (faint)"
            </figcaption>
            {body}
        </figure>
    }
}
