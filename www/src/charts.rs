//! Charts drawn as SVG by Leptos: a line chart with optional horizontal reference lines, a
//! marker and a read-out of the hovered step, and a bar row for the phases of one step. A series longer than [`MAX_POINTS`] is thinned before
//! drawing, so a long run keeps the page fast.

use leptos::prelude::*;
use vramlab::engine::plot::thin;

pub const W: f64 = 560.0;
pub const H: f64 = 180.0;
pub const LEFT: f64 = 56.0;
pub const BOTTOM: f64 = 22.0;
pub const TOP: f64 = 8.0;

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

/// A vertical marker at `x` (an out-of-memory's step).
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    pub x: f64,
    pub label: String,
}

pub fn fmt_tick(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// A value in a read-out: two decimals, or three significant figures below 1.
pub fn fmt_value(v: f64) -> String {
    if v.abs() >= 1.0 || v == 0.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// What a line chart draws: the thinned series and its scales.
#[derive(Clone, Debug, PartialEq)]
struct Frame {
    series: Vec<Series>,
    rules: Vec<Rule>,
    marker: Option<Marker>,
    x_max: f64,
    y_max: f64,
}

impl Frame {
    fn sx(&self, x: f64) -> f64 {
        LEFT + (x / self.x_max) * (W - LEFT - 8.0)
    }

    fn sy(&self, y: f64) -> f64 {
        TOP + (1.0 - (y / self.y_max).clamp(0.0, 1.0)) * (H - TOP - BOTTOM)
    }

    /// The data x at view-box x `vx`.
    fn x_at(&self, vx: f64) -> f64 {
        (vx - LEFT) / (W - LEFT - 8.0) * self.x_max
    }

    /// The steps any series has a point at, ascending.
    fn xs(&self) -> Vec<f64> {
        let mut xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.dedup();
        xs
    }
}

/// The frame's guide line at the hovered step, and the read-out of every series there.
fn hover_view(frame: &Frame, vx: f64, unit: &'static str) -> Option<(AnyView, String)> {
    let xs = frame.xs();
    let x = xs[crate::hover::nearest(&xs, frame.x_at(vx))?];
    let values = frame
        .series
        .iter()
        .filter_map(|s| {
            s.points
                .iter()
                .find(|p| p.0 == x)
                .map(|p| format!("{} {} {unit}", s.name, fmt_value(p.1)))
        })
        .collect::<Vec<_>>()
        .join(" · ");
    let gx = frame.sx(x);
    let guide = view! { <line x1=gx x2=gx y1=TOP y2=H - BOTTOM class="guide" /> }.into_any();
    Some((guide, format!("step {x}: {values}")))
}

/// A line chart over steps, with a read-out of each series at the hovered step. `series`,
/// `rules` and `marker` are read inside closures so the chart redraws.
#[component]
pub fn LineChart(
    title: &'static str,
    unit: &'static str,
    #[prop(into)] series: Signal<Vec<Series>>,
    #[prop(into, optional)] rules: Option<Signal<Vec<Rule>>>,
    #[prop(into, optional)] marker: Option<Signal<Option<Marker>>>,
    /// Test hook: the chart's id in the DOM.
    #[prop(into)]
    id: String,
) -> impl IntoView {
    let frame = Memo::new(move |_| {
        let series: Vec<Series> = series
            .get()
            .into_iter()
            .map(|s| Series {
                points: thin(&s.points, MAX_POINTS),
                ..s
            })
            .collect();
        let rules = rules.map(|r| r.get()).unwrap_or_default();
        let marker = marker.and_then(|m| m.get());
        let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
        let x_max = xs.chain(marker.iter().map(|m| m.x)).fold(1.0_f64, f64::max);
        let ys = series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(rules.iter().map(|r| r.y))
            .filter(|y| y.is_finite());
        let y_max = ys.fold(0.0_f64, f64::max).max(1e-9) * 1.08;
        Frame {
            series,
            rules,
            marker,
            x_max,
            y_max,
        }
    });
    let hovered = RwSignal::new(None::<f64>);
    let body = move || {
        let frame = frame.get();
        let lines = frame
            .series
            .iter()
            .map(|s| {
                let points = s
                    .points
                    .iter()
                    .filter(|p| p.1.is_finite())
                    .map(|&(x, y)| format!("{:.1},{:.1}", frame.sx(x), frame.sy(y)))
                    .collect::<Vec<_>>()
                    .join(" ");
                let dash = if s.dashed { "5 4" } else { "" };
                view! {
                    <polyline points=points fill="none" stroke=s.color stroke-width="1.8"
                        stroke-dasharray=dash />
                }
            })
            .collect_view();
        let rule_lines = rules_view(&frame.rules, &|y| frame.sy(y));
        let marker = frame.marker.as_ref().map(|m| marker_view(m, frame.sx(m.x)));
        let ticks = ticks_view(frame.y_max, &|y| frame.sy(y));
        let legend = legend_view(frame.series.iter().map(|s| (s.name.clone(), s.color)));
        let points = frame.series.iter().map(|s| s.points.len()).sum::<usize>();
        if points == 0 && frame.marker.is_none() {
            return empty_chart();
        }
        let guide = {
            let frame = frame.clone();
            move || hover_view(&frame, hovered.get()?, unit).map(|(guide, _)| guide)
        };
        view! {
            <svg viewBox=format!("0 0 {W} {H}") class="chart" data-points=points
                on:mousemove=move |ev| hovered.set(crate::hover::view_x(&ev, W))
                on:mouseleave=move |_| hovered.set(None)>
                <line x1=LEFT x2=LEFT y1=TOP y2=H - BOTTOM class="axis" />
                <line x1=LEFT x2=W - 8.0 y1=H - BOTTOM y2=H - BOTTOM class="axis" />
                {ticks}
                <text x=W - 8.0 y=H - 6.0 text-anchor="end" class="tick">
                    {format!("step {}", frame.x_max as u64)}
                </text>
                {rule_lines}
                {marker}
                {lines}
                {guide}
            </svg>
            <div class="legend">{legend}</div>
        }
        .into_any()
    };
    let readout = move || {
        let vx = hovered.get()?;
        hover_view(&frame.get(), vx, unit).map(|(_, text)| text)
    };
    let readout_id = format!("{id}-readout");
    view! {
        <figure class="chart-box" id=id>
            <figcaption>{title} <span class="unit">"(" {unit} ")"</span></figcaption>
            {body}
            <div class="readout" id=readout_id>{readout}</div>
        </figure>
    }
}

/// The placeholder before a run has put any point on a chart.
pub fn empty_chart() -> AnyView {
    view! {
        <svg viewBox=format!("0 0 {W} {H}") class="chart" data-points=0>
            <text x=W / 2.0 y=H / 2.0 text-anchor="middle" class="tick">
                "no data yet: start a run"
            </text>
        </svg>
    }
    .into_any()
}

/// Dashed horizontal lines with their labels at the right.
pub fn rules_view(rules: &[Rule], sy: &dyn Fn(f64) -> f64) -> impl IntoView + use<> {
    rules
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
        .collect_view()
}

/// A red vertical line at view-box x `x` with its label at its foot (the rules' labels are at
/// the top right).
pub fn marker_view(marker: &Marker, x: f64) -> impl IntoView + use<> {
    view! {
        <line x1=x x2=x y1=TOP y2=H - BOTTOM class="oom-marker" />
        <text x=x - 3.0 y=H - BOTTOM - 4.0 text-anchor="end" class="oom-label">
            {marker.label.clone()}
        </text>
    }
}

/// Five y ticks from 0 to the top of the scale.
pub fn ticks_view(y_max: f64, sy: &dyn Fn(f64) -> f64) -> impl IntoView + use<> {
    (0..=4)
        .map(|i| {
            let v = y_max / 1.08 * i as f64 / 4.0;
            view! {
                <text x=LEFT - 4.0 y=sy(v) + 4.0 text-anchor="end" class="tick">
                    {fmt_tick(v)}
                </text>
            }
        })
        .collect_view()
}

pub fn legend_view(items: impl Iterator<Item = (String, &'static str)>) -> impl IntoView {
    items
        .map(|(name, color)| {
            view! {
                <span class="legend-item">
                    <span class="swatch" style=format!("background:{color}")></span>
                    {name}
                </span>
            }
        })
        .collect_view()
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
