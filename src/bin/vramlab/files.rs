//! The run's files: timeline.json (the contract other tools read), timeline.csv, memory.svg
//! (readings per phase), categories.svg (each step's high-water mark by what held it) and
//! one-step.svg (the memory of the last step).

use std::path::Path;

use anyhow::Context;
use plotters::prelude::*;
use vramlab::engine::Timeline;
use vramlab::engine::format::mib;
use vramlab::engine::memory::Categories;
use vramlab::engine::phase::Phase;

pub fn write_all(dir: &Path, timeline: &Timeline) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let json = serde_json::to_string_pretty(timeline)?;
    std::fs::write(dir.join("timeline.json"), json).context("writing timeline.json")?;
    write_csv(&dir.join("timeline.csv"), timeline).context("writing timeline.csv")?;
    write_svg(&dir.join("memory.svg"), timeline).context("writing memory.svg")?;
    write_categories_svg(&dir.join("categories.svg"), timeline)
        .context("writing categories.svg")?;
    write_one_step_svg(&dir.join("one-step.svg"), timeline).context("writing one-step.svg")?;
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

/// The categories' colours, in [`Categories::NAMES`] order (the page uses the same).
const CATEGORY_COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(148, 103, 189),
    RGBColor(127, 127, 127),
    RGBColor(214, 39, 40),
    RGBColor(255, 127, 14),
    RGBColor(188, 189, 34),
];

/// Each step's high-water mark of bytes in use, stacked by category, with the predicted peak and
/// the budget as lines. Steps without categories (step sampling) are left out.
fn write_categories_svg(path: &Path, timeline: &Timeline) -> anyhow::Result<()> {
    let stacks: Vec<(f64, [f64; 6])> = timeline
        .steps
        .iter()
        .filter_map(|s| s.categories.map(|c| (s.step as f64, c.values().map(mib))))
        .collect();
    let predicted = mib(timeline.summary.predicted_peak_bytes);
    let budget = timeline
        .config
        .budget
        .map(|b| mib(b.bytes(timeline.summary.adapter.max_buffer_size)));
    let top = stacks
        .iter()
        .map(|(_, values)| values.iter().sum::<f64>())
        .chain([predicted, budget.unwrap_or(0.0)])
        .fold(0.0, f64::max)
        * 1.1
        + 0.1;
    let last = timeline.steps.len().max(2) as f64;
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{}: each step's high-water mark by category (allocator differences)",
                timeline.summary.name
            ),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(1f64..last, 0f64..top)?;
    chart.configure_mesh().x_desc("step").y_desc("MiB").draw()?;
    // Drawn from the whole stack down, each area to the sum of the categories below and it.
    for (index, name) in Categories::NAMES.iter().enumerate().rev() {
        let color = CATEGORY_COLORS[index];
        let points: Vec<(f64, f64)> = stacks
            .iter()
            .map(|(step, values)| (*step, values[..=index].iter().sum()))
            .collect();
        chart
            .draw_series(AreaSeries::new(points, 0.0, color.mix(0.85)))?
            .label(name.replace('_', " "))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled()));
    }
    chart
        .draw_series(LineSeries::new(
            [(1.0, predicted), (last, predicted)],
            BLACK.stroke_width(1),
        ))?
        .label("predicted peak (estimate)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLACK));
    if let Some(budget) = budget {
        chart
            .draw_series(LineSeries::new(
                [(1.0, budget), (last, budget)],
                RED.stroke_width(2),
            ))?
            .label("budget")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], RED.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

/// The last step's bytes in use at every launch and check point, each check point a dot in its
/// phase's colour.
fn write_one_step_svg(path: &Path, timeline: &Timeline) -> anyhow::Result<()> {
    let Some(trace) = &timeline.one_step else {
        return Ok(());
    };
    let points: Vec<(f64, f64)> = trace
        .in_use_bytes
        .iter()
        .enumerate()
        .map(|(i, &bytes)| (i as f64, mib(bytes)))
        .collect();
    let top = mib(trace.peak()) * 1.1 + 0.1;
    let last = (points.len().max(2) - 1) as f64;
    let root = SVGBackend::new(path, (960, 400)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{}: step {} in use at {} (allocator)",
                timeline.summary.name,
                trace.step,
                if trace.launches {
                    "every kernel launch and check point"
                } else {
                    "its check points"
                }
            ),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..last, 0f64..top)?;
    chart
        .configure_mesh()
        .x_desc("reading, in order")
        .y_desc("MiB")
        .draw()?;
    chart.draw_series(LineSeries::new(points.clone(), BLACK.stroke_width(2)))?;
    for phase in Phase::ALL {
        let color = phase_color(phase);
        let dots: Vec<(f64, f64)> = trace
            .marks
            .iter()
            .filter(|mark| mark.phase == phase)
            .filter_map(|mark| points.get(mark.at).copied())
            .collect();
        if dots.is_empty() {
            continue;
        }
        chart
            .draw_series(dots.into_iter().map(|p| Circle::new(p, 5, color.filled())))?
            .label(format!("{} check point", phase.name()))
            .legend(move |(x, y)| Circle::new((x + 7, y), 5, color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()?;
    Ok(())
}
