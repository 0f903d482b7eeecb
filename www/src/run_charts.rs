//! The run's live charts: memory over steps, where it went by category, the memory of one step,
//! each phase of the last step, loss and throughput; a pinned run drawn dashed beside them.

use leptos::prelude::*;
use vramlab::engine::RunConfig;
use vramlab::engine::format::mib;
use vramlab::engine::phase::Phase;
use vramlab::engine::plot::{steps_per_second, thin, thin_by};
use vramlab::engine::train::LOSS_READBACK_EVERY;

use crate::chart_steps::ChartStep;
use crate::charts::{LineChart, MAX_POINTS, Marker, NO_RUN, PhaseBar, PhaseBars, Rule, Series};
use crate::memory_charts::{CategoryChart, OneStepChart, predicted_stack, stacks_of};
use crate::session::Live;

/// The run's charts, the memory chart first: it is the one the first screen must show.
#[component]
pub fn Charts(live: Live, config: RwSignal<RunConfig>) -> impl IntoView {
    let memory = Signal::derive(move || {
        let mut series = live.steps.with(|steps| {
            // Thinned as the chart thins, from the steps: no full-length copy each redraw.
            let pick = |f: fn(&ChartStep) -> u64| {
                let point = |i: usize| (steps[i].step as f64, mib(f(&steps[i])));
                thin_by(steps.len(), point, MAX_POINTS)
            };
            vec![
                Series {
                    name: "in use: the step's high-water".into(),
                    color: "#1f77b4",
                    points: pick(|s| s.high_water_in_use_bytes),
                    dashed: false,
                },
                Series {
                    name: "reserved: the step's high-water".into(),
                    color: "#ff7f0e",
                    points: pick(|s| s.high_water_reserved_bytes),
                    dashed: false,
                },
                Series {
                    name: "in use at the step's end".into(),
                    color: "#17becf",
                    points: pick(|s| s.end_in_use_bytes),
                    dashed: true,
                },
            ]
        });
        // Read in place: the pinned run's chart steps, not a copy of them each redraw.
        let pinned = live.pinned.with(|p| {
            p.as_ref().map(|p| {
                p.steps
                    .iter()
                    .map(|s| (s.step as f64, mib(s.high_water_in_use_bytes)))
                    .collect()
            })
        });
        if let Some(points) = pinned {
            series.push(Series {
                name: "pinned: in use, high-water".into(),
                color: "#7f7f7f",
                points,
                dashed: true,
            });
        }
        series
    });
    let memory_rules = Signal::derive(move || {
        let predicted = live.prediction.get().map(|p| Rule {
            label: "predicted peak (estimate)".into(),
            y: mib(p.peak),
            color: "#2ca02c",
        });
        let budget = live
            .timeline
            .with(|t| t.as_ref().and_then(|t| t.config.budget));
        let budget = budget.or_else(|| config.with(|c| c.budget));
        let budget = budget.zip(live.adapter.get()).map(|(budget, adapter)| {
            let bytes = budget.bytes(adapter.max_buffer_size);
            Rule {
                label: "budget".into(),
                y: mib(bytes),
                color: "#d62728",
            }
        });
        predicted.into_iter().chain(budget).collect::<Vec<_>>()
    });
    let losses = Signal::derive(move || {
        let train = live.steps.with(|s| {
            s.iter()
                .filter_map(|r| r.loss.map(|l| (r.step as f64, l as f64)))
                .collect()
        });
        let test = live
            .evals
            .with(|e| e.iter().map(|r| (r.step as f64, r.loss as f64)).collect());
        let mut series = vec![
            Series {
                name: "train".into(),
                color: "#1f77b4",
                points: train,
                dashed: false,
            },
            Series {
                name: "test".into(),
                color: "#d62728",
                points: test,
                dashed: false,
            },
        ];
        let pinned = live.pinned.with(|p| {
            p.as_ref().map(|p| {
                p.steps
                    .iter()
                    .filter_map(|r| r.loss.map(|l| (r.step as f64, l as f64)))
                    .collect()
            })
        });
        if let Some(points) = pinned {
            series.push(Series {
                name: "pinned: train".into(),
                color: "#7f7f7f",
                points,
                dashed: true,
            });
        }
        series
    });
    let throughput = Signal::derive(move || {
        let batch = live.batch_size.get() as f64;
        // Steps count once their losses are back (the device finished them), from the time
        // the run's first step was queued, so the first group of readbacks has a rate too.
        let done: Vec<(usize, f64)> = live
            .started_ms
            .get()
            .map(|at| (0, at))
            .into_iter()
            .chain(live.completed_ms.with(|c| {
                c.iter()
                    .copied()
                    .enumerate()
                    .map(|(i, at)| (i + 1, at))
                    .collect::<Vec<_>>()
            }))
            .collect();
        // Thinned before the samples' copy is made (the chart's own thinning then keeps all).
        let steps_per_s = thin(&steps_per_second(&done, THROUGHPUT_WINDOW), MAX_POINTS);
        vec![
            Series {
                name: format!("steps/s (over {THROUGHPUT_WINDOW} steps)"),
                color: "#9467bd",
                points: steps_per_s.clone(),
                dashed: false,
            },
            Series {
                name: "samples/s / 1000".into(),
                color: "#8c564b",
                points: steps_per_s
                    .iter()
                    .map(|&(x, y)| (x, y * batch / 1000.0))
                    .collect(),
                dashed: true,
            },
        ]
    });
    let failure_marker = Signal::derive(move || {
        live.failed.with(|failed| {
            failed.as_ref().map(|trace| Marker {
                x: trace.step as f64,
                label: format!("out of memory at step {}", trace.step),
            })
        })
    });
    let stacks = Signal::derive(move || live.steps.with(|steps| stacks_of(steps)));
    let predicted =
        Signal::derive(move || live.prediction.with(|p| p.as_ref().map(predicted_stack)));
    let pinned_totals = Signal::derive(move || {
        live.pinned.with(|pinned| {
            pinned.as_ref().map_or(Vec::new(), |p| {
                p.steps
                    .iter()
                    .filter_map(|s| s.categories.map(|c| (s.step as f64, mib(c.total()))))
                    .collect()
            })
        })
    });
    let one_step = Signal::derive(move || match live.failed.get() {
        Some(failed) => Some((failed, true)),
        None => live.trace.get().map(|trace| (trace, false)),
    });
    let phases = Signal::derive(move || {
        live.last_step.with(|last| {
            last.as_ref()
                .map(|s| {
                    Phase::ALL
                        .iter()
                        .filter_map(|p| {
                            s.phases.get(p).map(|r| PhaseBar {
                                name: p.name(),
                                at_end: mib(r.in_use_bytes),
                                high_water: s.phase_high_water.get(p).map(|m| mib(m.in_use_bytes)),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default()
        })
    });
    // Losses, and so completed steps, come back in groups: say so while the first is awaited.
    let awaiting_losses = Signal::derive(move || {
        if live.status.get().busy() {
            format!(
                "the first losses come back after {LOSS_READBACK_EVERY} steps (the GPU works ahead)"
            )
        } else {
            NO_RUN.to_string()
        }
    });
    view! {
        <LineChart id="memory-chart" title="Memory over steps" unit="MiB" series=memory rules=memory_rules
            marker=failure_marker />
        <CategoryChart stacks=stacks predicted=predicted rules=memory_rules marker=failure_marker
            pinned=pinned_totals />
        <OneStepChart trace=one_step rules=memory_rules />
        <PhaseBars phases=phases />
        <LineChart id="loss-chart" title="Loss" unit="cross-entropy" series=losses empty=awaiting_losses />
        <LineChart id="throughput-chart" title="Throughput: steps the GPU finished" unit="per second"
            series=throughput empty=awaiting_losses />
    }
}

/// Steps per second over a window of this many steps: one step's rate swings with every
/// readback and redraw.
const THROUGHPUT_WINDOW: usize = 10;
