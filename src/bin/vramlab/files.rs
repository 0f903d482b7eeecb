//! The run's files: timeline.json (the contract other tools read), timeline.csv and memory.svg.

use std::path::Path;

use anyhow::Context;
use plotters::prelude::*;
use vramlab::engine::Timeline;
use vramlab::engine::phase::Phase;

use crate::report::mib;

pub fn write_all(dir: &Path, timeline: &Timeline) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let json = serde_json::to_string_pretty(timeline)?;
    std::fs::write(dir.join("timeline.json"), json).context("writing timeline.json")?;
    write_csv(&dir.join("timeline.csv"), timeline).context("writing timeline.csv")?;
    write_svg(&dir.join("memory.svg"), timeline).context("writing memory.svg")?;
    Ok(())
}

fn write_csv(path: &Path, timeline: &Timeline) -> anyhow::Result<()> {
    let mut out = csv::Writer::from_path(path)?;
    for row in timeline.table_rows() {
        out.write_record(&row)?;
    }
    out.flush()?;
    Ok(())
}

fn phase_color(phase: Phase) -> RGBColor {
    match phase {
        Phase::Setup | Phase::Upload => RGBColor(120, 120, 120),
        Phase::Forward => RGBColor(214, 39, 40),
        Phase::Backward => RGBColor(255, 127, 14),
        Phase::Optimizer => RGBColor(31, 119, 180),
        Phase::Eval => RGBColor(44, 160, 44),
    }
}

/// In use (solid) and reserved (faint) per phase over steps, the step's high-water mark of bytes
/// in use as a thick black line, the predicted peak as a thin one.
fn write_svg(path: &Path, timeline: &Timeline) -> anyhow::Result<()> {
    let steps = &timeline.steps;
    let predicted = mib(timeline.summary.predicted_peak_bytes);
    let top = steps
        .iter()
        .flat_map(|s| {
            s.phases
                .values()
                .map(|r| mib(r.reserved_bytes.max(r.in_use_bytes)))
                .chain([mib(s.high_water.reserved_bytes)])
        })
        .fold(predicted, f64::max)
        * 1.1
        + 0.1;
    let last = steps.len().max(2) as f64;
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{}: GPU memory per phase and at its high-water mark (allocator)",
                timeline.summary.name
            ),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(1f64..last, 0f64..top)?;
    chart.configure_mesh().x_desc("step").y_desc("MiB").draw()?;
    for phase in Phase::ALL {
        let color = phase_color(phase);
        let points = |reserved: bool| -> Vec<(f64, f64)> {
            steps
                .iter()
                .filter_map(|s| {
                    s.phases.get(&phase).map(|r| {
                        let bytes = if reserved {
                            r.reserved_bytes
                        } else {
                            r.in_use_bytes
                        };
                        (s.step as f64, mib(bytes))
                    })
                })
                .collect()
        };
        let in_use = points(false);
        if in_use.is_empty() {
            continue;
        }
        chart
            .draw_series(LineSeries::new(in_use, color.stroke_width(2)))?
            .label(format!("{} in use", phase.name()))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.stroke_width(2)));
        chart
            .draw_series(LineSeries::new(
                points(true),
                color.mix(0.35).stroke_width(1),
            ))?
            .label(format!("{} reserved", phase.name()))
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color.mix(0.35)));
    }
    let high_water: Vec<(f64, f64)> = steps
        .iter()
        .map(|s| (s.step as f64, mib(s.high_water.in_use_bytes)))
        .collect();
    chart
        .draw_series(LineSeries::new(high_water, BLACK.stroke_width(3)))?
        .label("high-water in use (every kernel launch)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLACK.stroke_width(3)));
    chart
        .draw_series(LineSeries::new(
            [(1.0, predicted), (last, predicted)],
            BLACK.stroke_width(1),
        ))?
        .label("predicted peak (estimate)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLACK));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()?;
    Ok(())
}
