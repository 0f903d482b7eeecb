//! Charts drawn as SVG by Leptos: a line chart with optional horizontal reference lines, a
//! marker and a read-out of the hovered step, and a bar row for the phases of one step. A
//! series longer than [`MAX_POINTS`] is thinned before drawing, so a long run keeps the page
//! fast. Every chart ticks its y axis at round numbers in one unit ([`Axis`]).

use leptos::prelude::*;
pub use vramlab::engine::plot::Axis;
use vramlab::engine::plot::thin;

pub const W: f64 = 560.0;
pub const H: f64 = 180.0;
pub const LEFT: f64 = 56.0;
pub const BOTTOM: f64 = 22.0;
pub const TOP: f64 = 8.0;

/// Points drawn per series at most.
pub const MAX_POINTS: usize = 2000;

#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub color: &'static str,
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed (an overlay of a pinned run, or an estimate).
    pub dashed: bool,
}

/// A horizontal line at `y`, labelled with its name and its value in the chart's unit.
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

/// What a line chart draws: the thinned series and its scales.
#[derive(Clone, Debug, PartialEq)]
struct Frame {
    series: Vec<Series>,
    rules: Vec<Rule>,
    marker: Option<Marker>,
    x_max: f64,
    axis: Axis,
}

impl Frame {
    fn sx(&self, x: f64) -> f64 {
        LEFT + (x / self.x_max) * (W - LEFT - 8.0)
    }

    fn sy(&self, y: f64) -> f64 {
        TOP + (1.0 - (y / self.axis.top_given()).clamp(0.0, 1.0)) * (H - TOP - BOTTOM)
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
fn hover_view(frame: &Frame, vx: f64) -> Option<(AnyView, String)> {
    let xs = frame.xs();
    let x = xs[vramlab::engine::plot::nearest(&xs, frame.x_at(vx))?];
    let values = frame
        .series
        .iter()
        .filter_map(|s| {
            s.points
                .iter()
                .find(|p| p.0 == x)
                .map(|p| format!("{} {}", s.name, frame.axis.reading(p.1)))
        })
        .collect::<Vec<_>>()
        .join(" · ");
    let gx = frame.sx(x);
    let guide = view! { <line x1=gx x2=gx y1=TOP y2=H - BOTTOM class="guide" /> }.into_any();
    Some((guide, format!("step {x}: {values}")))
}

/// A line chart over steps, with a read-out of each series at the hovered step. `series`,
/// `rules` and `marker` are read inside closures so the chart redraws. `unit` is the unit the
/// points are in; a chart of MiB may read in KiB or GiB. `empty` is what it says with no points.
#[component]
pub fn LineChart(
    title: &'static str,
    unit: &'static str,
    #[prop(into)] series: Signal<Vec<Series>>,
    #[prop(into, optional)] rules: Option<Signal<Vec<Rule>>>,
    #[prop(into, optional)] marker: Option<Signal<Option<Marker>>>,
    #[prop(into, optional)] empty: Option<Signal<String>>,
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
        let axis = Axis::new(ys.fold(0.0_f64, f64::max), unit);
        Frame {
            series,
            rules,
            marker,
            x_max,
            axis,
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
                // A lone point draws no line: mark it.
                let lone = match s.points.as_slice() {
                    [(x, y)] if y.is_finite() => Some(view! {
                        <circle cx=frame.sx(*x) cy=frame.sy(*y) r="3" fill=s.color />
                    }),
                    _ => None,
                };
                view! {
                    <polyline points=points fill="none" stroke=s.color stroke-width="1.8"
                        stroke-dasharray=dash />
                    {lone}
                }
            })
            .collect_view();
        let rule_lines = rules_view(&frame.rules, &frame.axis, &|y| frame.sy(y));
        let marker = frame.marker.as_ref().map(|m| marker_view(m, frame.sx(m.x)));
        let ticks = ticks_view(&frame.axis, &|y| frame.sy(y));
        let legend = legend_view(frame.series.iter().map(|s| (s.name.clone(), s.color)));
        let points = frame.series.iter().map(|s| s.points.len()).sum::<usize>();
        if points == 0 && frame.marker.is_none() {
            return empty_chart(&empty.map_or_else(|| NO_RUN.to_string(), |e| e.get()));
        }
        let guide = {
            let frame = frame.clone();
            move || hover_view(&frame, hovered.get()?).map(|(guide, _)| guide)
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
        hover_view(&frame.get(), vx).map(|(_, text)| text)
    };
    let readout_id = format!("{id}-readout");
    let shown_unit = move || frame.with(|f| f.axis.unit);
    view! {
        <figure class="chart-box" id=id>
            <figcaption>{title} <span class="unit">"(" {shown_unit} ")"</span></figcaption>
            {body}
            <div class="readout" id=readout_id>{readout}</div>
        </figure>
    }
}

/// What an empty chart says when no run is going.
pub const NO_RUN: &str = "no data yet: press Start";

/// The placeholder before a run has put any point on a chart, saying why.
pub fn empty_chart(message: &str) -> AnyView {
    view! {
        <svg viewBox=format!("0 0 {W} {H}") class="chart" data-points=0>
            <text x=W / 2.0 y=H / 2.0 text-anchor="middle" class="tick">
                {message.to_string()}
            </text>
        </svg>
    }
    .into_any()
}

/// Dashed horizontal lines with their labels (name and value) at the right.
pub fn rules_view(rules: &[Rule], axis: &Axis, sy: &dyn Fn(f64) -> f64) -> impl IntoView + use<> {
    rules
        .iter()
        .map(|r| {
            let y = sy(r.y);
            let label = format!("{} {}", r.label, axis.reading(r.y));
            view! {
                <line x1=LEFT x2=W - 8.0 y1=y y2=y stroke=r.color stroke-dasharray="3 3" />
                <text x=W - 10.0 y=y - 3.0 text-anchor="end" class="rule-label" fill=r.color>
                    {label}
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

/// The axis's ticks, from 0 to its top, each with a faint grid line; `sy` takes values in the
/// chart's own unit.
pub fn ticks_view(axis: &Axis, sy: &dyn Fn(f64) -> f64) -> impl IntoView + use<> {
    axis.ticks()
        .into_iter()
        .map(|tick| {
            let y = sy(tick / axis.scale);
            view! {
                <line x1=LEFT x2=W - 8.0 y1=y y2=y class="grid" />
                <text x=LEFT - 4.0 y=y + 4.0 text-anchor="end" class="tick">
                    {axis.label(tick)}
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
