//! `vramlab plan`: the engine's plan, as a table for people or one JSON object for programs.

use std::path::Path;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use vramlab::engine::config::{
    DataConfig, DataKind, InputKind, MixedPrecision, Offload, OpPath, Sharding, Trainable,
    WeightDtype,
};
use vramlab::engine::data::split_sizes;
use vramlab::engine::device::ModelledAdapter;
use vramlab::engine::format::{ByteFormat, grouped};
use vramlab::engine::memory::Categories;
use vramlab::engine::outcome::Suggestion;
use vramlab::engine::phase::Phase;
use vramlab::engine::plan::{self, Checked, PLAN_STEPS, Plan};
use vramlab::engine::strategies::weight_dtype::QuantizedWeights;
use vramlab::engine::{Gpu, RunConfig};

pub fn run(config: &RunConfig, gpu: &Gpu, json: bool) -> anyhow::Result<Plan> {
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
    Ok(planned)
}

/// A plan's JSON read back: the page's export or `vramlab plan --json`.
fn read_plan(file: &Path) -> anyhow::Result<Plan> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("reading the plan {}", file.display()))?;
    let mut reader = serde_json::Deserializer::from_str(&text);
    serde_path_to_error::deserialize(&mut reader).map_err(|err| {
        anyhow::anyhow!(
            "{}: not a plan's JSON at {} (line {}, column {}): {}",
            file.display(),
            err.path(),
            err.inner().line(),
            err.inner().column(),
            err.inner()
        )
    })
}

/// The adapter the plan in `file` modelled.
pub fn modelled_in(file: &Path) -> anyhow::Result<ModelledAdapter> {
    modelled_by(read_plan(file)?.modelled, file)
}

/// A plan's `modelled` adapter (the plan read from `file`), or why there is none.
fn modelled_by(modelled: Option<ModelledAdapter>, file: &Path) -> anyhow::Result<ModelledAdapter> {
    modelled.ok_or_else(|| {
        anyhow::anyhow!(
            "{}: the plan states no modelled adapter (field `modelled`): plans made before it \
             was recorded cannot be made again on their adapter",
            file.display()
        )
    })
}

/// `vramlab plan --compare-page PLAN.json`: the page's plan made again here, its config on the
/// adapter it modelled; every figure that differs is named, and the process exits 1 when one
/// does.
pub fn compare_page(file: &Path) -> anyhow::Result<()> {
    let page = read_plan(file)?;
    let modelled = modelled_by(page.modelled.clone(), file)?;
    let gpu = vramlab::engine::device::planner_modelling(modelled)?;
    let native = pollster::block_on(plan::plan(&page.config, &gpu, |_| {}))?;
    let differences = plan::compare::differences(&page, &native);
    for apart in plan::compare::check_points_apart(&page, &native) {
        println!("{}: note, not a high-water figure: {apart}", page.name);
    }
    let format = ByteFormat::MIB_OR_GIB;
    if differences.is_empty() {
        println!(
            "{}: the page's plan equals this one: high-water in use {} ({} B), reserved {}, \
             every phase's and category's high-water to the byte (page {:.1} s, here {:.1} s)",
            page.name,
            format.of(native.high_water_in_use_bytes),
            native.high_water_in_use_bytes,
            format.of(native.high_water_reserved_bytes),
            page.seconds,
            native.seconds
        );
        return Ok(());
    }
    for difference in &differences {
        println!("{}: {difference}", page.name);
    }
    anyhow::bail!(
        "{} figure(s) of {}'s plan differ between the page and here",
        differences.len(),
        page.name
    )
}

/// The fine-tuning question in one screen: what is planned, its parameters and what trains,
/// the training step's high-water mark by category beside each category's own size and the
/// analytic estimate, the phases, what forward keeps for backward, and the budget's answer with
/// each suggested change planned.
fn print_table(plan: &Plan) {
    print_header(plan);
    println!();
    print_parameters(plan);
    println!();
    print_memory(plan);
    print_kept(plan);
    if let Some(load) = &plan.expert_load {
        println!("{}", load.describe());
    }
    for fallback in &plan.fallbacks {
        println!(
            "fallback: {} = {}: {}",
            fallback.field, fallback.value, fallback.reason
        );
    }
    if !plan.oversized.is_empty() {
        let listed: Vec<String> = plan
            .oversized
            .iter()
            .map(|t| format!("{} {}", t.tensor, ByteFormat::MIB_OR_GIB.of(t.bytes)))
            .collect();
        println!(
            "INCOMPLETE: {} exceed the largest binding a device can state ({}); the pools \
             refuse such tensors, in a dry run too, so every figure above leaves them out and is \
             a lower bound.",
            listed.join(", "),
            ByteFormat::MIB_OR_GIB.of(plan.adapter.max_binding_size)
        );
    }
    println!();
    print_budget(plan);
}

fn print_header(plan: &Plan) {
    let config = &plan.config;
    println!("plan of {}: {}", plan.name, describe_model(config));
    let s = &config.strategies;
    let data = &config.data;
    let tokens = match (data.kind, data.kind.input_kind()) {
        (DataKind::Stream, _) => format!(
            " x {} tokens (next-token stream)",
            grouped(data.sample_tokens() as u64)
        ),
        (kind, InputKind::Tokens) => format!(
            " x {} tokens ({} task: {} tokens, then as many queries)",
            grouped(data.sample_tokens() as u64),
            kind.name(),
            grouped(data.seq_len as u64)
        ),
        _ => String::new(),
    };
    let trains = match s.trainable {
        Trainable::All => "every weight".to_string(),
        Trainable::Head => "the output layer".to_string(),
        Trainable::Lora => format!(
            "LoRA adapters of rank {} (alpha {})",
            s.lora_rank, s.lora_alpha
        ),
    };
    let attends = config.model.kind.family().attends();
    // In the words of PyTorch's choices: SDPA keeps the output and a log-sum-exp per row, eager
    // attention its scores and weights.
    let attention = match (attends, s.attention) {
        (false, _) => String::new(),
        (true, OpPath::Fused) => ", attention fused (SDPA-style)".to_string(),
        (true, OpPath::Naive) => ", attention naive (eager-style)".to_string(),
    };
    let precision = match (s.weight_dtype, s.training_precision()) {
        (WeightDtype::F16, _) => "all in f16",
        (WeightDtype::Q4, _) => "body in 4-bit blocks, the rest in f16",
        (WeightDtype::Q8, _) => "body in 8-bit blocks, the rest in f16",
        (_, MixedPrecision::F16) => "f16 compute on f32 weights",
        (_, MixedPrecision::F16Unscaled) => "all in f16",
        _ => "f32",
    };
    // LoRA's factors beside 16-bit weights: f32 by default (PEFT's), or the base's type.
    let adapters = match (s.trainable, s.weight_value_bytes(), s.trained_value_bytes()) {
        (Trainable::Lora, 2, 4) => ", adapters in f32",
        (Trainable::Lora, 2, _) => ", adapters in f16 (adapter_dtype = base)",
        _ => "",
    };
    println!(
        "  recipe: batch {}{tokens}, {} on {trains}, {precision}{adapters}{attention}, loss {}, \
         checkpointing {}",
        config.batch_size,
        config.optimizer.name(),
        s.cross_entropy.name(),
        s.checkpointing.name()
    );
    if let Some(sharded) = plan.sharded.filter(|run| run.mode == Sharding::Optimizer) {
        println!(
            "  ZeRO-1: the GPU of {} with the largest share (DDP with its defaults and PyTorch's \
             ZeroRedundancyOptimizer: parameters whole, to each GPU by size; this one keeps the \
             optimizer state of {} of {} trained values and steps them, every gradient held \
             over the step; AdamW's foreach step over its share): every figure below is this \
             GPU's",
            sharded.gpus,
            grouped(sharded.optimizer_values),
            grouped(sharded.trained_values)
        );
    } else if let Some(sharded) = plan.sharded.filter(|run| run.mode == Sharding::None) {
        println!(
            "  data parallel: one GPU of {} (DDP with its defaults: bucket_cap_mb 25, a first \
             bucket of 1 MiB, gradient_as_bucket_view off, so the buckets are a second copy of \
             the trained gradients, kept from set-up on; AdamW's foreach step): every figure \
             below is this GPU's",
            sharded.gpus
        );
    } else if let Some(sharded) = &plan.sharded {
        let step = match config.strategies.offload {
            Offload::Parameters | Offload::Optimizer => "the optimizer steps on the host",
            _ => "AdamW's foreach step",
        };
        let share = match sharded.gpus {
            1 => "one GPU, its parameters on the host".to_string(),
            gpus => format!("one GPU's share of {gpus}"),
        };
        println!(
            "  sharding: {share}, {} (FSDP2's {}: fully_shard on each block, then on the model; \
             {}; {step}): every figure below is this GPU's",
            sharded.mode.name(),
            sharded.mode.fsdp_name(),
            match sharded.mode {
                Sharding::Gradients => "each block kept gathered from its forward to its backward",
                _ =>
                    "each block gathered around its use, the one before gathered ahead in backward",
            }
        );
    }
    let eval_batches = config
        .evaluated_samples(split_sizes(&config.data).1)
        .div_ceil(config.eval_batch_size.max(1))
        .min(2);
    println!(
        "  dry run: {PLAN_STEPS} training steps and {} of {}, kernels compiled for {}",
        if eval_batches == 1 {
            "one evaluation batch"
        } else {
            "two evaluation batches (every later one holds what the second does)"
        },
        config.eval_batch_size,
        plan.adapter.name,
    );
    println!(
        "  and none run, pages carved with no memory behind them (bindings up to {}), no losses; \
         {:.1} s",
        ByteFormat::MIB_OR_GIB.of(plan.adapter.max_binding_size),
        plan.seconds
    );
}

/// The model in a few words: its family and sizes.
fn describe_model(config: &RunConfig) -> String {
    config.model.kind.family().summary(config)
}

fn print_parameters(plan: &Plan) {
    let s = &plan.config.strategies;
    let shard = plan
        .sharded
        .map_or(String::new(), |sharded| match sharded.mode {
            Sharding::None | Sharding::Optimizer => {
                format!(", all of them on each of {} GPUs", sharded.gpus)
            }
            _ => format!(
                ", this GPU's shard: {} values, padded to {} GPUs{}",
                grouped(sharded.shard_values),
                sharded.gpus,
                match s.offload {
                    Offload::Parameters => ", on the host",
                    _ => "",
                }
            ),
        });
    println!(
        "parameters {:>15}   {} as stored ({}{shard})",
        grouped(plan.params),
        ByteFormat::MIB_OR_GIB.of(plan.weight_bytes),
        s.weight_dtype.name()
    );
    if let Some(q) = &plan.quantized {
        print_quantized(plan, q);
    }
    let share = 100.0 * plan.trainable_params as f64 / plan.params.max(1) as f64;
    let which = match s.trainable {
        Trainable::All => "every weight: gradients and optimizer state for all".to_string(),
        Trainable::Head => {
            "the output layer; the rest frozen (no gradient, no optimizer state)".to_string()
        }
        Trainable::Lora => format!(
            "LoRA adapters of rank {} beside the frozen weights (no gradient, no optimizer \
             state for those)",
            s.lora_rank
        ),
    };
    println!(
        "  training {:>15}   {share:.2}%: {which}",
        grouped(plan.trainable_params)
    );
}

/// A quantized base's parameter bytes, explained: the blocks, the 16-bit rest, the adapters.
fn print_quantized(plan: &Plan, q: &QuantizedWeights) {
    // The scales are f16 exactly when the run computes in f16 (an adapter without shader-f16
    // runs the rest, and the scales, in f32).
    let rest_dtype = if q.format.scale_bytes == 2 {
        "f16"
    } else {
        "f32"
    };
    let untiled = if q.untiled_matrices > 0 {
        format!(
            "; among them {} body matrices ({}) no block tiles",
            q.untiled_matrices,
            count(q.untiled_values)
        )
    } else {
        String::new()
    };
    let adapters = if plan.adapter_params > 0 {
        format!(", adapters {} in f32", count(plan.adapter_params))
    } else {
        String::new()
    };
    let gib = ByteFormat::MIB_OR_GIB;
    let sharded = plan
        .sharded
        .filter(|sharded| sharded.mode.shards_parameters() && q.matrices > 0);
    let whole = match sharded {
        // FSDP-QLoRA: the codes cut with the other weights, the quant state on every GPU.
        Some(sharded) => format!(
            "{} for the whole model; this GPU keeps its shard of the packed words and every \
             block scale ({}), as bitsandbytes keeps each layer's quant state on each of the {} \
             GPUs",
            gib.of(q.packed_bytes + q.scale_bytes),
            gib.of(q.scale_bytes),
            sharded.gpus
        ),
        None => gib.of(q.packed_bytes + q.scale_bytes),
    };
    println!(
        "  {}: {} body weights in {} ({whole}), {} in {rest_dtype} (embeddings, norms, biases, \
         output{untiled}){adapters}",
        gib.of(plan.weight_bytes),
        count(q.values),
        q.format.describe(),
        count(plan.params - q.values),
    );
}

/// A count in a few digits: 6.74 G, 40.0 M, 12.3 k.
fn count(n: u64) -> String {
    let n = n as f64;
    if n >= 1e9 {
        format!("{:.2} G", n / 1e9)
    } else if n >= 1e6 {
        format!("{:.1} M", n / 1e6)
    } else if n >= 1e3 {
        format!("{:.1} k", n / 1e3)
    } else {
        format!("{n}")
    }
}

fn print_memory(plan: &Plan) {
    let cell = |bytes: Option<u64>| bytes.map_or("-".to_string(), |b| ByteFormat::MIB_OR_GIB.of(b));
    let p = &plan.predicted;
    let estimate = [
        Some(p.params),
        Some(p.optimizer_state),
        None,
        Some(p.activations),
        Some(p.grads),
        None,
    ];
    let peak_phase = plan
        .high_water_in_use_by_phase
        .iter()
        .max_by_key(|(_, bytes)| **bytes)
        .map_or("-", |(phase, _)| phase.name());
    if let (Some(mark), Some(own)) = (plan.high_water_by_category, plan.category_sizes) {
        println!(
            "{:<24}{:>12}{:>12}{:>12}",
            "by category", "at the mark", "own size", "estimate"
        );
        for (i, name) in Categories::NAMES.iter().enumerate() {
            println!(
                "  {:<22}{:>12}{:>12}{:>12}{}",
                name.replace('_', " "),
                ByteFormat::MIB_OR_GIB.of(mark.values()[i]),
                if i == 5 {
                    "-".into()
                } else {
                    ByteFormat::MIB_OR_GIB.of(own.values()[i])
                },
                cell(estimate[i]),
                plan.sharded
                    .map_or("", |run| with_more_gpus(run.mode, name))
            );
        }
        println!(
            "  {:<22}{:>12}{:>12}{:>12}",
            "in use",
            ByteFormat::MIB_OR_GIB.of(mark.total()),
            "",
            ByteFormat::MIB_OR_GIB.of(plan.predicted_peak_bytes)
        );
    }
    println!("{:<24}{:>12}{:>12}", "by phase", "in use", "reserved");
    for phase in std::iter::once(Phase::Setup).chain(Phase::ALL) {
        let Some(in_use) = plan.high_water_in_use_by_phase.get(&phase) else {
            continue;
        };
        let reserved = plan.reserved_by_phase.get(&phase).copied();
        println!(
            "  {:<22}{:>12}{:>12}",
            phase.name(),
            ByteFormat::MIB_OR_GIB.of(*in_use),
            cell(reserved)
        );
    }
    println!(
        "  {:<22}{:>12}{:>12}   high-water mark in {peak_phase}",
        "whole plan",
        ByteFormat::MIB_OR_GIB.of(plan.high_water_in_use_bytes),
        ByteFormat::MIB_OR_GIB.of(plan.high_water_reserved_bytes)
    );
    if let Some(per_gpu) = plan.per_gpu() {
        for line in wrapped(&per_gpu, 100) {
            println!("{line}");
        }
    }
    if let Some(host) = plan.host_line() {
        for line in wrapped(&host, 100) {
            println!("{line}");
        }
    }
}

/// Whether a category shrinks as a sharded run spreads over more GPUs.
fn with_more_gpus(mode: Sharding, category: &str) -> &'static str {
    if matches!(mode, Sharding::None | Sharding::Optimizer) {
        return match category {
            "optimizer_state" if mode == Sharding::Optimizer => "   a share: about 1/N",
            "gradient" => "   with the buckets: stays",
            "input" | "activation" => "   this GPU's batch: stays",
            _ => "   whole on every GPU: stays",
        };
    }
    match category {
        "parameter" | "optimizer_state" | "gradient" => "   a shard: 1/N",
        "input" => "   this GPU's batch: stays",
        "activation" => "   this GPU's batch, the root's gathered weights: stay",
        _ => "   gathered blocks, buffers, temporaries: stay",
    }
}

/// What one training forward pass keeps for backward, by op: the largest few, the rest summed.
fn print_kept(plan: &Plan) {
    if plan.kept_by_op.is_empty() {
        return;
    }
    const SHOWN: usize = 4;
    let total: u64 = plan.kept_by_op.iter().map(|k| k.bytes).sum();
    let share = |bytes: u64| 100.0 * bytes as f64 / total.max(1) as f64;
    let mut kept = plan.kept_by_op.clone();
    kept.sort_by_key(|k| std::cmp::Reverse(k.bytes));
    println!(
        "kept for backward by one training forward pass: {}",
        ByteFormat::MIB_OR_GIB.of(total)
    );
    for k in kept.iter().take(SHOWN) {
        println!(
            "  {:<58}{:>12} {:>5.1}%",
            k.op.name(),
            ByteFormat::MIB_OR_GIB.of(k.bytes),
            share(k.bytes)
        );
    }
    if kept.len() > SHOWN {
        let rest: u64 = kept[SHOWN..].iter().map(|k| k.bytes).sum();
        println!(
            "  {:<58}{:>12} {:>5.1}%",
            format!("{} more ops", kept.len() - SHOWN),
            ByteFormat::MIB_OR_GIB.of(rest),
            share(rest)
        );
    }
}

fn print_budget(plan: &Plan) {
    let (Some(budget), Some(fits)) = (plan.budget_bytes, plan.fits) else {
        println!("no budget given: pass --budget (e.g. 24GiB) to ask whether it fits");
        return;
    };
    if fits {
        println!(
            "fits {}: {} in use and {} reserved at most, under every check a run makes",
            ByteFormat::MIB_OR_GIB.of(budget),
            ByteFormat::MIB_OR_GIB.of(plan.high_water_in_use_bytes),
            ByteFormat::MIB_OR_GIB.of(plan.high_water_reserved_bytes)
        );
        if plan.high_water_reserved_bytes > budget {
            println!(
                "(the pages reserved unbudgeted pass it: a budgeted run releases its cached \
                 pages at the check points, as an allocator frees its cache before it fails)"
            );
        }
        return;
    }
    print!("does not fit {}", ByteFormat::MIB_OR_GIB.of(budget));
    match &plan.out_of_memory {
        Some(oom) => {
            let at = match oom.step {
                Some(step) => format!("step {step}, {}", oom.phase.name()),
                None => "set-up".to_string(),
            };
            let held = match oom.in_use_bytes {
                0 => String::new(),
                bytes => format!("{} in use and ", ByteFormat::MIB_OR_GIB.of(bytes)),
            };
            println!(
                ": a run stops at {at} ({}): {held}{} more asked",
                oom.site,
                ByteFormat::MIB_OR_GIB.of(oom.asked_bytes)
            );
        }
        None => println!(),
    }
    let fewest = plan.fewest_gpus_lines();
    if !fewest.is_empty() {
        println!(
            "on more GPUs, sharded (--gpus N --set strategies.sharding=...), each count planned:"
        );
        for line in fewest {
            for line in wrapped(&line, 100) {
                println!("  {line}");
            }
        }
    }
    if plan.suggestions.is_empty() {
        println!(
            "no change vramlab knows is estimated to fit (the weights alone take {}): a smaller \
             model or a larger budget",
            ByteFormat::MIB_OR_GIB.of(plan.weight_bytes)
        );
        return;
    }
    println!("what to change, each planned under the same budget:");
    for checked in &plan.suggestions {
        let verdict = match &checked.checked {
            Checked::Fits {
                high_water_in_use_bytes,
                high_water_reserved_bytes,
                ..
            } => format!(
                "fits: {} in use, {} reserved",
                ByteFormat::MIB_OR_GIB.of(*high_water_in_use_bytes),
                ByteFormat::MIB_OR_GIB.of(*high_water_reserved_bytes)
            ),
            Checked::DoesNotFit { out_of_memory } => format!(
                "does not fit: stops at {} ({})",
                out_of_memory.step.map_or("set-up".to_string(), |s| format!(
                    "step {s}, {}",
                    out_of_memory.phase.name()
                )),
                out_of_memory.site
            ),
            Checked::NotPlanned { reason } => format!("not planned: {reason}"),
        };
        for line in wrapped(&change(&checked.suggestion, &plan.config.data), 100) {
            println!("  {line}");
        }
        println!("      {verdict}");
    }
}

/// A suggestion to the run on `data` as the flags that make it, with the analytic model's
/// estimate.
fn change(suggestion: &Suggestion, data: &DataConfig) -> String {
    let flags: Vec<String> = suggestion
        .assignments()
        .iter()
        .map(|assignment| format!("--set {assignment}"))
        .collect();
    // A query task's sample is twice data.seq_len tokens, a stream's data.seq_len: say what the
    // change means in them.
    let tokens = suggestion
        .assignments()
        .iter()
        .filter_map(|a| a.strip_prefix("data.seq_len=")?.parse::<usize>().ok())
        .map(|seq_len| {
            let shorter = DataConfig {
                seq_len,
                ..data.clone()
            };
            format!(
                ", {} tokens a sample",
                grouped(shorter.sample_tokens() as u64)
            )
        })
        .next()
        .unwrap_or_default();
    match suggestion.estimated_peak_bytes {
        Some(peak) => format!(
            "{}{tokens} (estimated {})",
            flags.join(" "),
            ByteFormat::MIB_OR_GIB.of(peak)
        ),
        None => format!(
            "{} (the live bytes fit; exclusive pages are sized to each allocation)",
            flags.join(" ")
        ),
    }
}

/// `text` in lines of at most `width` characters (longer words stand alone), the lines after
/// the first indented by two.
fn wrapped(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let line = lines.last_mut().expect("one line at least");
        if !line.trim().is_empty() && line.len() + 1 + word.len() > width {
            lines.push(format!("  {word}"));
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    lines
}
