//! What the data looks like: the 2-D sets as a scatter (with the model's decision boundary as
//! a heat map behind it once a run has one), digits as thumbnails, a sequence task as one
//! example; a user's table as its first rows, columns and classes (and, with two features, the
//! same scatter). Drawn from the same seeded generator the run uses, so it is the run's data.

use leptos::prelude::*;
use vramlab::engine::RunConfig;
use vramlab::engine::config::DataKind;
use vramlab::engine::data::{Dataset, HostInputs};

use crate::table_preview::table_preview;

/// Half the side of the square drawn for a 2-D set: its largest coordinate, with a margin.
/// The heat map is computed over the same square.
pub fn extent(data: &Dataset) -> f32 {
    match &data.train.inputs {
        HostInputs::Floats { values, width: 2 } => {
            values.iter().fold(1e-3_f32, |m, v| m.max(v.abs())) * 1.1
        }
        _ => 1.0,
    }
}
const SIDE: f64 = 220.0;

/// A decision grid: `n` x `n` probabilities of class 1, row by row from the top.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    pub n: usize,
    pub probability: Vec<f32>,
}

/// Class 0 blue and class 1 orange (the heat map's ends), then more for a table's classes.
fn class_color(class: i64) -> &'static str {
    const PALETTE: [&str; 8] = [
        "#2f7fc1", "#e8833a", "#3a9a5b", "#c0392b", "#8e6bbf", "#8c5a3c", "#d16fb0", "#7f7f7f",
    ];
    PALETTE[class.rem_euclid(PALETTE.len() as i64) as usize]
}

/// Blue (class 0) through white to orange (class 1).
fn heat(p: f32) -> String {
    let p = p.clamp(0.0, 1.0);
    let (from, to) = if p < 0.5 {
        ((47.0, 127.0, 193.0), (255.0, 255.0, 255.0))
    } else {
        ((255.0, 255.0, 255.0), (232.0, 131.0, 58.0))
    };
    let t = if p < 0.5 { p * 2.0 } else { (p - 0.5) * 2.0 };
    let mix = |a: f32, b: f32| (a + (b - a) * t) as u8;
    format!(
        "rgb({},{},{})",
        mix(from.0, to.0),
        mix(from.1, to.1),
        mix(from.2, to.2)
    )
}

fn to_px(v: f32, extent: f32) -> f64 {
    ((v + extent) / (2.0 * extent)) as f64 * SIDE
}

fn scatter(data: &Dataset, grid: Option<Grid>) -> AnyView {
    let HostInputs::Floats { values, .. } = &data.train.inputs else {
        return ().into_any();
    };
    let cells = grid.map(|g| {
        let size = SIDE / g.n as f64;
        g.probability
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let (row, col) = (i / g.n, i % g.n);
                view! {
                    <rect x=col as f64 * size y=row as f64 * size width=size + 0.5
                        height=size + 0.5 fill=heat(p) />
                }
            })
            .collect_view()
    });
    let step = (data.train.len / 400).max(1);
    let e = extent(data);
    let dots = (0..data.train.len)
        .step_by(step)
        .map(|i| {
            let (x, y) = (values[2 * i], values[2 * i + 1]);
            view! {
                <circle cx=to_px(x, e) cy=SIDE - to_px(y, e) r="2.2" fill=class_color(data.train.targets[i])
                    stroke="white" stroke-width="0.5" />
            }
        })
        .collect_view();
    view! {
        <svg viewBox=format!("0 0 {SIDE} {SIDE}") class="scatter" id="scatter">
            <rect width=SIDE height=SIDE fill="#f4f4f4" />
            {cells}
            {dots}
        </svg>
    }
    .into_any()
}

fn digits(data: &Dataset) -> AnyView {
    let HostInputs::Floats { values, width } = &data.train.inputs else {
        return ().into_any();
    };
    let top = values.iter().cloned().fold(1e-6_f32, f32::max);
    (0..data.train.len.min(10))
        .map(|i| {
            let pixels = (0..*width)
                .map(|p| {
                    let v = values[i * width + p] / top;
                    let shade = (255.0 * (1.0 - v)) as u8;
                    view! {
                        <rect x=(p % 8) as f64 y=(p / 8) as f64 width="1.05" height="1.05"
                            fill=format!("rgb({shade},{shade},{shade})") />
                    }
                })
                .collect_view();
            view! {
                <figure class="digit">
                    <svg viewBox="0 0 8 8" width="40" height="40">{pixels}</svg>
                    <figcaption>{data.train.targets[i]}</figcaption>
                </figure>
            }
        })
        .collect_view()
        .into_any()
}

fn sequence(data: &Dataset) -> AnyView {
    let HostInputs::Tokens { values, width } = &data.train.inputs else {
        return ().into_any();
    };
    // A query task's sample is its input then as many query tokens; a stream's is all input,
    // its targets the next token at each position.
    let (shown, answer) = match data.kind {
        DataKind::Stream => (*width, "next "),
        _ => (width / 2, "answer "),
    };
    let input: Vec<String> = values[..shown].iter().map(|t| t.to_string()).collect();
    let target: Vec<String> = data.train.targets[..data.targets_per_sample]
        .iter()
        .map(|t| t.to_string())
        .collect();
    view! {
        <p class="example">"input " <code>{input.join(" ")}</code></p>
        <p class="example">{answer} <code>{target.join(" ")}</code></p>
    }
    .into_any()
}

#[component]
pub fn DataPreview(
    #[prop(into)] config: Signal<RunConfig>,
    #[prop(into)] grid: Signal<Option<Grid>>,
) -> impl IntoView {
    // Rebuilt only when the data section or the seed change.
    let data = Memo::new(move |_| {
        let c = config.get();
        (c.data.clone(), c.seed)
    });
    let built = Memo::new(move |_| {
        let (data, seed) = data.get();
        Dataset::preview(&data, seed).map_err(|e| e.to_string())
    });
    view! {
        <div class="preview">
            {move || match built.get() {
                Err(e) => view! { <p class="error">{e}</p> }.into_any(),
                Ok(d) if d.kind == DataKind::Csv => {
                    let table = config.with(|c| c.data.table.clone());
                    // The heat map is the probability of class 1: a boundary only for two classes.
                    let boundary = grid.get().filter(|_| d.classes == 2);
                    let points = matches!(d.train.inputs, HostInputs::Floats { width: 2, .. })
                        .then(|| scatter(&d, boundary));
                    view! { {table.map(|t| table_preview(&t))} {points} }.into_any()
                }
                Ok(d) => match d.train.inputs {
                    HostInputs::Tokens { .. } => sequence(&d),
                    HostInputs::Floats { width: 2, .. } => scatter(&d, grid.get()),
                    HostInputs::Floats { .. } => digits(&d),
                    // Dataset::build always has samples; only plans use shapes.
                    HostInputs::Shape { .. } => ().into_any(),
                },
            }}
        </div>
    }
}
