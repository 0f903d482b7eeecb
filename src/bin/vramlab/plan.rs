//! `vramlab plan`: the engine's plan, as a table for people or one JSON object for programs.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use vramlab::engine::phase::Phase;
use vramlab::engine::plan::{self, Checked, PLAN_STEPS, Plan};
use vramlab::engine::{Gpu, RunConfig};

use crate::report::{as_set_flag, size};

pub fn run(config: &RunConfig, gpu: &Gpu, json: bool) -> anyhow::Result<()> {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] planning: {msg}")
            .expect("the template is valid"),
    );
    let mut plans = 1;
    let planned = pollster::block_on(plan::plan(config, gpu, |step| {
        if step == 1 && bar.position() > 0 {
            plans += 1;
        }
        bar.inc(1);
        bar.set_message(format!("plan {plans}, step {step} of {PLAN_STEPS}"));
    }));
    bar.finish_and_clear();
    let planned = planned?;
    if json {
        println!("{}", serde_json::to_string_pretty(&planned)?);
    } else {
        print_table(&planned);
    }
    Ok(())
}

fn print_table(plan: &Plan) {
    let config = &plan.config;
    println!(
        "plan of {} for {}: {} parameters, {PLAN_STEPS} training steps at batch {} and one \
         evaluation batch of {}, {:.1} s",
        plan.name,
        plan.adapter.name,
        plan.params,
        config.batch_size,
        config.eval_batch_size,
        plan.seconds
    );
    println!(
        "a dry run on a {} device stating that adapter's features and limits, with bindings up \
         to {}: every kernel compiled, none executed; the pools carved pages without device \
         memory. No losses: nothing ran.",
        plan.adapter.backend,
        size(plan.adapter.max_binding_size)
    );
    println!();
    println!("{:<22} {:>16} {:>16}", "", "high-water in use", "reserved");
    for phase in std::iter::once(Phase::Setup).chain(Phase::ALL) {
        let in_use = plan.high_water_in_use_by_phase.get(&phase);
        let reserved = plan.reserved_by_phase.get(&phase);
        if in_use.is_none() && reserved.is_none() {
            continue;
        }
        let cell = |v: Option<&u64>| v.map_or("-".to_string(), |b| size(*b));
        println!(
            "{:<22} {:>16} {:>16}",
            phase.name(),
            cell(in_use),
            cell(reserved)
        );
    }
    println!(
        "{:<22} {:>16} {:>16}",
        "whole plan",
        size(plan.high_water_in_use_bytes),
        size(plan.high_water_reserved_bytes)
    );
    let p = &plan.predicted;
    println!(
        "{:<22} {:>16}   (estimate: parameters {}, gradients {}, optimizer {}, activations {})",
        "analytic model",
        size(plan.predicted_peak_bytes),
        size(p.params),
        size(p.grads),
        size(p.optimizer_state),
        size(p.activations)
    );
    println!(
        "{:<22} {:>16}   (in use after the parameters were created)",
        "weights as stored",
        size(plan.weight_bytes)
    );
    println!("high-water taken {}", plan.high_water_is);
    if !plan.kept_by_op.is_empty() {
        let total: u64 = plan.kept_by_op.iter().map(|k| k.bytes).sum();
        println!(
            "\nkept for backward by one training forward pass ({}), by the op that made it:",
            size(total)
        );
        for kept in &plan.kept_by_op {
            println!(
                "  {:<60} {:>12} {:>5.1}%",
                kept.op.name(),
                size(kept.bytes),
                100.0 * kept.bytes as f64 / total.max(1) as f64
            );
        }
    }
    if !plan.oversized.is_empty() {
        let listed: Vec<String> = plan
            .oversized
            .iter()
            .map(|t| format!("{} {}", t.tensor, size(t.bytes)))
            .collect();
        println!(
            "INCOMPLETE: {} exceed the largest binding a device can state ({}); the pools \
             refuse such tensors, in a dry run too, so every figure above leaves them out and is \
             a lower bound.",
            listed.join(", "),
            size(plan.adapter.max_binding_size)
        );
    }
    for fallback in &plan.fallbacks {
        println!(
            "fallback: {} = {}: {}",
            fallback.field, fallback.value, fallback.reason
        );
    }
    println!();
    let (Some(budget), Some(fits)) = (plan.budget_bytes, plan.fits) else {
        println!("no budget given: pass --budget (e.g. 24GiB) to ask whether it fits");
        return;
    };
    if fits {
        println!("fits {}: every check a run makes passed", size(budget));
        if plan.high_water_reserved_bytes > budget {
            println!(
                "(the pages reserved, {} unbudgeted, pass it: a budgeted run releases its cached \
                 pages at the check points, as an allocator frees its cache before it fails)",
                size(plan.high_water_reserved_bytes)
            );
        }
        return;
    }
    println!("does not fit {}", size(budget));
    if let Some(oom) = &plan.out_of_memory {
        println!("{}", oom.headline());
    }
    if plan.suggestions.is_empty() {
        println!("no single change is estimated to fit: a smaller model or a larger budget");
        return;
    }
    println!("single changes the analytic model expects to fit, each planned under the budget:");
    for checked in &plan.suggestions {
        let verdict = match &checked.checked {
            Checked::Fits {
                high_water_in_use_bytes,
                high_water_reserved_bytes,
                ..
            } => format!(
                "planned: fits (high-water {} in use, {} reserved)",
                size(*high_water_in_use_bytes),
                size(*high_water_reserved_bytes)
            ),
            Checked::DoesNotFit { out_of_memory } => {
                format!("planned: does not fit ({})", out_of_memory.headline())
            }
            Checked::NotPlanned { reason } => format!("not planned: {reason}"),
        };
        println!("  {}\n      {verdict}", as_set_flag(&checked.suggestion));
    }
}
