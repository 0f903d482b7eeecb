//! The summary as a table for people, or as one JSON object for programs.

use vramlab::engine::EngineError;
use vramlab::engine::format::{ByteFormat, mib};
use vramlab::engine::memory::Categories;
use vramlab::engine::outcome::Suggestion;
use vramlab::engine::phase::Phase;
use vramlab::engine::train::Summary;

/// An error as the command line words it: an out-of-memory's suggestions as the `--set` that
/// makes each change.
pub fn error(err: &anyhow::Error) -> String {
    match err.downcast_ref::<EngineError>() {
        Some(EngineError::OutOfMemory(oom)) => oom.describe(as_set_flag),
        _ => format!("{err:#}"),
    }
}

pub fn as_set_flag(suggestion: &Suggestion) -> String {
    let change = suggestion
        .assignments()
        .iter()
        .map(|assignment| format!("--set {assignment}"))
        .collect::<Vec<_>>()
        .join(" ");
    match suggestion.estimated_peak_bytes {
        Some(peak) => format!(
            "{change} (estimated peak {})",
            ByteFormat::MIB.decimals(3).of(peak)
        ),
        None => format!(
            "{change} (the live bytes fit; exclusive pages are sized to each allocation; a new \
             process starts with them)"
        ),
    }
}

pub fn print_table(summary: &Summary) {
    let loss = |l: Option<f32>| l.map_or("-".to_string(), |v| format!("{v:.4}"));
    let mut rows: Vec<(String, String)> = vec![
        ("run".into(), summary.name.clone()),
        (
            "adapter".into(),
            format!(
                "{} ({}, shader-f16 {})",
                summary.adapter.name,
                summary.adapter.backend,
                if summary.adapter.shader_f16 {
                    "yes"
                } else {
                    "no"
                }
            ),
        ),
        ("parameters".into(), summary.params.to_string()),
        ("steps".into(), summary.steps.to_string()),
        (
            "loss first -> final".into(),
            format!(
                "{} -> {}",
                loss(summary.first_loss),
                loss(summary.final_loss)
            ),
        ),
        (
            "test accuracy".into(),
            summary.eval_accuracy.map_or("-".into(), |a| {
                format!(
                    "{:.1}% (loss {}){}",
                    a * 100.0,
                    loss(summary.eval_loss),
                    coverage(summary)
                )
            }),
        ),
        (
            "high-water in use (measured)".into(),
            ByteFormat::MIB.of(summary.high_water_in_use_bytes),
        ),
        (
            "high-water reserved (measured)".into(),
            ByteFormat::MIB.of(summary.high_water_reserved_bytes),
        ),
        ("high-water read".into(), summary.high_water_is.clone()),
        (
            "largest reading in use".into(),
            format!(
                "{:.2} MiB (reserved {:.2} MiB): {}",
                mib(summary.peak_in_use_bytes),
                mib(summary.peak_reserved_bytes),
                summary.peak_is
            ),
        ),
        (
            "predicted peak (estimate)".into(),
            ByteFormat::MIB.of(summary.predicted_peak_bytes),
        ),
        (
            "predicted split (estimate)".into(),
            format!(
                "params {:.2} / grads {:.2} / optimizer {:.2} / activations {:.2} MiB",
                mib(summary.predicted.params),
                mib(summary.predicted.grads),
                mib(summary.predicted.optimizer_state),
                mib(summary.predicted.activations)
            ),
        ),
        (
            "high-water by category (measured)".into(),
            summary.high_water_by_category.map_or(
                "- (needs memory_sampling=phase or a budget)".into(),
                |c| {
                    Categories::NAMES
                        .iter()
                        .zip(c.values())
                        .map(|(name, bytes)| format!("{name} {}", ByteFormat::MIB.number(bytes)))
                        .collect::<Vec<_>>()
                        .join(" / ")
                        + " MiB"
                },
            ),
        ),
        (
            "kept for backward, by op (one forward pass)".into(),
            if summary.kept_by_op.is_empty() {
                "- (a transformer's figure)".into()
            } else {
                summary
                    .kept_by_op
                    .iter()
                    .map(|kept| {
                        format!("{} {}", kept.op.name(), ByteFormat::MIB.number(kept.bytes))
                    })
                    .collect::<Vec<_>>()
                    .join(" / ")
                    + " MiB"
            },
        ),
        (
            "high-water in use by phase".into(),
            by_phase(&summary.high_water_in_use_by_phase),
        ),
        (
            "in use at phase ends".into(),
            by_phase(&summary.peak_in_use_by_phase),
        ),
        (
            "ms/step (median, first)".into(),
            format!(
                "{:.1} ms, {:.0} ms",
                summary.median_step_ms, summary.first_step_ms
            ),
        ),
    ];
    rows.push(("wall time".into(), wall_time(summary)));
    rows.splice(1..1, table_rows(summary));
    if let Some(ms) = summary.completed_step_ms {
        rows.push((
            "ms/step completed".into(),
            format!("{ms:.1} ms (wall time between awaited loss readbacks, per step)"),
        ));
    }
    rows.push(("strategies".into(), strategies_line(summary)));
    if let Some(scale) = summary.loss_scale {
        rows.push((
            "loss scale (f16)".into(),
            format!(
                "{scale} at the end, {} steps skipped",
                summary.skipped_steps
            ),
        ));
    }
    rows.push((
        "weights (measured)".into(),
        match summary.eval_weight_bytes {
            Some(int8) => format!(
                "{:.3} MiB; int8 copy for evaluation {:.3} MiB",
                mib(summary.weight_bytes),
                mib(int8)
            ),
            None => ByteFormat::MIB.decimals(3).of(summary.weight_bytes),
        },
    ));
    if summary.leaked_bytes > 0 {
        rows.push((
            "held by loss bookkeeping".into(),
            ByteFormat::MIB.of(summary.leaked_bytes),
        ));
    }
    for fallback in &summary.fallbacks {
        rows.push(("note".into(), fallback.to_string()));
    }
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (key, value) in rows {
        println!("{key:<width$}  {value}");
    }
}

/// ", on 8 of 1,024 test samples (...)" when an evaluation read part of the split.
fn coverage(summary: &Summary) -> String {
    match summary.eval_coverage {
        Some(c) if c.samples < c.split_samples => format!(
            ", on the first {} of {} test samples (--set eval_batches=0 reads them all)",
            c.samples, c.split_samples
        ),
        _ => String::new(),
    }
}

/// The run's wall time by what it went to.
fn wall_time(summary: &Summary) -> String {
    let w = summary.wall;
    let s = |ms: f64| format!("{:.1} s", ms / 1e3);
    format!(
        "set-up {} / first step {} (compiles most kernels) / later steps {} / evaluation {} / \
         finish {}",
        s(w.setup_ms),
        s(w.first_step_ms),
        s(w.later_steps_ms),
        s(w.eval_ms),
        s(w.finish_ms)
    )
}

/// A run on a table: the file, the classes and each feature's standardisation.
fn table_rows(summary: &Summary) -> Vec<(String, String)> {
    let Some(table) = &summary.table else {
        return Vec::new();
    };
    let mut rows = vec![
        (
            "data".to_string(),
            format!(
                "{}: {} rows, {} columns, {} bytes, sha256 {}",
                table.source.name,
                table.rows,
                table.columns,
                table.source.bytes,
                table.source.sha256
            ),
        ),
        (
            format!("classes ({}: train / test)", table.label),
            table
                .classes
                .iter()
                .map(|c| format!("{} {} / {}", c.name, c.train, c.test))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        (
            "standardised by".into(),
            "the training split's mean and spread: (x - mean) / spread".into(),
        ),
    ];
    rows.extend(table.standardisation.iter().map(|scale| {
        (
            format!("  {}", scale.name),
            format!("mean {:.4}, spread {:.4}", scale.mean, scale.spread),
        )
    }));
    rows
}

/// Bytes by phase, in the phases' order.
fn by_phase(bytes: &std::collections::BTreeMap<Phase, u64>) -> String {
    Phase::ALL
        .iter()
        .filter_map(|p| {
            bytes
                .get(p)
                .map(|b| format!("{} {}", p.name(), ByteFormat::MIB.number(*b)))
        })
        .collect::<Vec<_>>()
        .join(" / ")
        + " MiB"
}

/// The strategies as `name=value` pairs, in the names `--set strategies.<name>` takes.
fn strategies_line(summary: &Summary) -> String {
    match serde_json::to_value(&summary.strategies) {
        Ok(serde_json::Value::Object(fields)) => fields
            .iter()
            .map(|(name, value)| format!("{name}={}", value.to_string().trim_matches('"')))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

pub fn print_json(summary: &Summary) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string(summary)?);
    Ok(())
}
