//! `vramlab bench-gpu`: what a machine with a real GPU runs in one call.
//!
//! 1. The limit: burn's matmul on this device, square products from 1,024 (64 with `--smoke`)
//!    up, doubling while one product takes under a second and fits a binding, in f32 and (where
//!    the device has shader-f16) f16. Each size runs twice untimed (compiling its kernel), then
//!    enough times for about a third of a second; the best FLOP/s of each type is its limit.
//! 2. Training steps of three configs people run: gpt2-small as the preset (8 x 1,024 tokens,
//!    Adam), TinyLlama with LoRA r16 (1 x 2,048 tokens) and sort-mixtral (routed experts), each
//!    read once a step as a training loop would (`memory_sampling = step`), with no evaluation.
//!    The first two steps compile kernels and are reported apart; the median of the rest is
//!    ms a step, turned into tokens a second and model FLOP/s (`engine::flops`, an estimate
//!    from the shapes), and that as a share of the limit in the type the model computes in.
//!
//! A benchmark that prints (a table for docs/performance.md, or JSON), not a timed test; with
//! `--smoke`, small shapes that run on lavapipe in a minute, which the suite runs.

use std::time::Duration;

use burn::tensor::{Distribution, FloatDType, Tensor};
use serde::Serialize;
use vramlab::engine::config::{MemorySampling, MixedPrecision};
use vramlab::engine::format::mib;
use vramlab::engine::overrides::apply_overrides;
use vramlab::engine::presets::preset;
use vramlab::engine::{self, Gpu, Run, RunConfig, flops};
use web_time::Instant;

use crate::args::BenchGpuArgs;

/// Matmul sizes start here and double while a product is quick enough.
const FIRST_SIZE: usize = 1024;
const SMOKE_FIRST_SIZE: usize = 64;
const LAST_SIZE: usize = 8192;
const SMOKE_LAST_SIZE: usize = 128;
/// A product slower than this ends the doubling (lavapipe stops near 1,024).
const SLOW_PRODUCT_S: f64 = 1.0;
/// Timed products a size runs for about this long in all.
const TIMED_S: f64 = 0.33;

#[derive(Serialize)]
struct Report {
    adapter: String,
    backend: String,
    /// The kernels' compiler on this device, as cubecl names its runtime: `wgpu<wgsl>` (WGSL
    /// that wgpu translates) or, in a build with the `spirv` feature on a Vulkan adapter,
    /// `wgpu<spirv>` (cubecl's own SPIR-V).
    compiler: String,
    settings: &'static str,
    matmul: Vec<MatmulRow>,
    /// The best FLOP/s each type reached: the limits the steps are held against.
    limit_f32: f64,
    limit_f16: Option<f64>,
    models: Vec<ModelRow>,
}

#[derive(Serialize)]
struct MatmulRow {
    dtype: &'static str,
    size: usize,
    products: usize,
    ms_each: f64,
    flops_per_s: f64,
}

#[derive(Serialize, Default)]
struct ModelRow {
    name: String,
    /// What was trained, in words.
    what: String,
    tokens_per_step: usize,
    /// Model FLOPs of one step (an estimate from the shapes, `engine::flops`).
    model_flops_per_step: f64,
    first_step_ms: f64,
    second_step_ms: f64,
    steps_timed: usize,
    median_step_ms: f64,
    tokens_per_s: f64,
    achieved_flops_per_s: f64,
    /// The type the model computes in, whose limit `share_of_limit` is against.
    dtype: &'static str,
    share_of_limit: f64,
    high_water_in_use_bytes: u64,
    /// Why the model did not run to its timed steps, if it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

pub fn run(args: &BenchGpuArgs) -> anyhow::Result<()> {
    let gpu = pollster::block_on(engine::acquire())?;
    let compiler = engine::device::cube_client(&gpu.device).map_or_else(
        || "not cubecl".to_string(),
        |client| client.name().to_string(),
    );
    eprintln!(
        "bench-gpu on {} ({}, {compiler})",
        gpu.adapter.name, gpu.adapter.backend
    );
    let mut matmul = products(&gpu, FloatDType::F32, args.smoke)?;
    if gpu.adapter.shader_f16 {
        matmul.extend(products(&gpu, FloatDType::F16, args.smoke)?);
    }
    let best = |dtype: &str| {
        matmul
            .iter()
            .filter(|row| row.dtype == dtype)
            .map(|row| row.flops_per_s)
            .reduce(f64::max)
    };
    let limit_f32 = best("f32").unwrap_or(0.0);
    let limit_f16 = best("f16");
    let mut models = Vec::new();
    for (name, what, sets) in configs(args.smoke) {
        let row = match steps(&gpu, name, what, sets, args) {
            Ok(row) => row,
            Err(err) => ModelRow {
                name: name.into(),
                what: what.into(),
                error: Some(format!("{err:#}")),
                ..ModelRow::default()
            },
        };
        models.push(row);
    }
    for row in &mut models {
        let limit = match row.dtype {
            "f16" => limit_f16.unwrap_or(limit_f32),
            _ => limit_f32,
        };
        row.share_of_limit = row.achieved_flops_per_s / limit.max(f64::MIN_POSITIVE);
    }
    let report = Report {
        adapter: gpu.adapter.name.clone(),
        backend: gpu.adapter.backend.clone(),
        compiler,
        settings: if args.smoke { "smoke" } else { "full" },
        matmul,
        limit_f32,
        limit_f16,
        models,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_tables(&report);
    }
    if let Some(failed) = report.models.iter().find(|row| row.error.is_some()) {
        anyhow::bail!(
            "{} did not run: {}",
            failed.name,
            failed.error.as_deref().unwrap_or_default()
        );
    }
    Ok(())
}

fn dtype_name(dtype: FloatDType) -> &'static str {
    match dtype {
        FloatDType::F16 => "f16",
        _ => "f32",
    }
}

/// Square products of one type, doubling in size while each is quick and fits a binding.
fn products(gpu: &Gpu, dtype: FloatDType, smoke: bool) -> anyhow::Result<Vec<MatmulRow>> {
    let device = &gpu.device;
    let value_bytes = if dtype == FloatDType::F16 { 2 } else { 4 };
    let (mut size, last) = if smoke {
        (SMOKE_FIRST_SIZE, SMOKE_LAST_SIZE)
    } else {
        (FIRST_SIZE, LAST_SIZE)
    };
    let mut rows = Vec::new();
    while size <= last && (size * size * value_bytes) as u64 <= gpu.adapter.max_binding_size {
        let a =
            Tensor::<2>::random([size, size], Distribution::Uniform(-1.0, 1.0), device).cast(dtype);
        let b =
            Tensor::<2>::random([size, size], Distribution::Uniform(-1.0, 1.0), device).cast(dtype);
        let timed = |count: usize| -> anyhow::Result<f64> {
            device
                .sync()
                .map_err(|err| anyhow::anyhow!("matmul: {err:?}"))?;
            let started = Instant::now();
            // Kept until the sync, so no product is left out of the timing as unused.
            let outputs: Vec<Tensor<2>> = (0..count).map(|_| a.clone().matmul(b.clone())).collect();
            device
                .sync()
                .map_err(|err| anyhow::anyhow!("matmul: {err:?}"))?;
            drop(outputs);
            Ok(started.elapsed().as_secs_f64() / count as f64)
        };
        timed(1)?;
        let each = timed(1)?;
        let count = ((TIMED_S / each.max(1e-6)).ceil() as usize).clamp(2, 64);
        let each = timed(count)?;
        let flops_per_s = 2.0 * (size as f64).powi(3) / each;
        eprintln!(
            "matmul {} {size}: {:.3} ms each, {:.1} GFLOP/s",
            dtype_name(dtype),
            each * 1e3,
            flops_per_s / 1e9
        );
        rows.push(MatmulRow {
            dtype: dtype_name(dtype),
            size,
            products: count,
            ms_each: each * 1e3,
            flops_per_s,
        });
        if each > SLOW_PRODUCT_S {
            break;
        }
        size *= 2;
    }
    Ok(rows)
}

/// The configs timed: (preset, what it is, overrides), full or small.
fn configs(smoke: bool) -> Vec<(&'static str, &'static str, Vec<&'static str>)> {
    let tiny_decoder = [
        "model.width=64",
        "model.heads=4",
        "model.ff=128",
        "model.layers=1",
        "data.seq_len=64",
        "data.vocab=256",
    ];
    let mut gpt2 = vec![];
    let mut tinyllama = vec!["strategies.trainable=lora", "strategies.lora_rank=16"];
    let mut mixtral = vec![];
    if smoke {
        gpt2.extend(tiny_decoder);
        gpt2.push("batch_size=2");
        tinyllama.extend(tiny_decoder);
        tinyllama.extend(["model.kv_heads=2", "model.vocab=256", "model.positions=64"]);
        mixtral.push("batch_size=16");
    }
    vec![
        ("gpt2-small", "full fine-tune, Adam, f32", gpt2),
        (
            "tinyllama-1.1b",
            "LoRA r16 on every body matrix, AdamW, f32",
            tinyllama,
        ),
        ("sort-mixtral", "4 experts, 2 a token, AdamW, f32", mixtral),
    ]
}

/// The type a config's matmuls run in.
fn compute_dtype(config: &RunConfig) -> &'static str {
    match config.strategies.training_precision() {
        MixedPrecision::Off => "f32",
        _ => "f16",
    }
}

fn steps(
    gpu: &Gpu,
    name: &str,
    what: &str,
    sets: Vec<&str>,
    args: &BenchGpuArgs,
) -> anyhow::Result<ModelRow> {
    let mut config = apply_overrides(preset(name)?, sets)?;
    // Never the last step: a run evaluates at its last, and the benchmark times training.
    config.steps = 1_000_000;
    config.eval_every = 0;
    config.memory_sampling = MemorySampling::Step;
    // Enough samples for the steps, not the preset's thousands to generate.
    config.data.samples = (config.batch_size * 64).clamp(64, config.data.samples.max(64));
    let flops = flops::training_step(&config)
        .ok_or_else(|| anyhow::anyhow!("{name}: no FLOP count for its family"))?;
    let tokens_per_step = config.batch_size * config.data.sample_tokens();
    let dtype = compute_dtype(&config);
    let mut run = Run::new(config, gpu)?;
    let budget = Duration::from_secs(args.seconds);
    let started = Instant::now();
    let mut ms = Vec::new();
    let mut high_water = 0;
    while ms.len() < args.steps as usize && (ms.len() < 3 || started.elapsed() < budget) {
        let outcome = pollster::block_on(run.step())?;
        eprintln!("{name}: step {} {:.1} ms", ms.len() + 1, outcome.record.ms);
        high_water = high_water.max(outcome.record.high_water.in_use_bytes);
        ms.push(outcome.record.ms);
    }
    let mut timed = ms[2..].to_vec();
    timed.sort_by(f64::total_cmp);
    let median_ms = timed[timed.len() / 2];
    let seconds = median_ms / 1e3;
    Ok(ModelRow {
        name: name.into(),
        what: what.into(),
        tokens_per_step,
        model_flops_per_step: flops.total(),
        first_step_ms: ms[0],
        second_step_ms: ms[1],
        steps_timed: timed.len(),
        median_step_ms: median_ms,
        tokens_per_s: tokens_per_step as f64 / seconds,
        achieved_flops_per_s: flops.total() / seconds,
        dtype,
        share_of_limit: 0.0,
        high_water_in_use_bytes: high_water,
        error: None,
    })
}

fn print_tables(report: &Report) {
    println!(
        "{} ({}, {}), {} settings\n",
        report.adapter, report.backend, report.compiler, report.settings
    );
    println!("| matmul | size | ms each | GFLOP/s |\n|---|---|---|---|");
    for row in &report.matmul {
        println!(
            "| {} | {} | {:.3} | {:.1} |",
            row.dtype,
            row.size,
            row.ms_each,
            row.flops_per_s / 1e9
        );
    }
    println!(
        "\n| config | tokens a step | first step ms | second | ms a step (median of) | \
         tokens/s | model GFLOP/s | share of its type's limit | high-water in use |\n\
         |---|---|---|---|---|---|---|---|---|"
    );
    for row in &report.models {
        if let Some(err) = &row.error {
            println!("| {} ({}) | not run: {err} |||||||", row.name, row.what);
            continue;
        }
        println!(
            "| {} ({}) | {} | {:.0} | {:.0} | {:.1} ({}) | {:.0} | {:.1} | {:.1}% ({}) | {:.1} MiB |",
            row.name,
            row.what,
            row.tokens_per_step,
            row.first_step_ms,
            row.second_step_ms,
            row.median_step_ms,
            row.steps_timed,
            row.tokens_per_s,
            row.achieved_flops_per_s / 1e9,
            row.share_of_limit * 100.0,
            row.dtype,
            mib(row.high_water_in_use_bytes),
        );
    }
}
