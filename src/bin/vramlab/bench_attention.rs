//! `vramlab bench-attention`: what fused attention and the fused loss change, printed as ratios.
//!
//! 1. Plans of GPT-2 small with the tokens per batch fixed at 8,192 and the sequence from 512 to
//!    4,096 tokens, naive (burn's attention and loss) and fused (both of vramlab's ops): each
//!    plan's high-water mark in use and its growth over the 512-token plan.
//! 2. Steps on this machine's GPU: the sort transformer at 64 and at 512 positions (tokens per
//!    batch fixed), naive against fused attention, ms/step side by side in one process (read
//!    once a step, as a training loop would), each side once untimed first so compiling
//!    kernels lands in neither timing. Memory is the plans' part.
//!
//! A benchmark that prints, not a timed test.

use vramlab::engine::format::ByteFormat;
use vramlab::engine::overrides::apply_overrides;
use vramlab::engine::presets::preset;
use vramlab::engine::{self, RunConfig};

/// Tokens per batch in the plans (GPT-2 small's preset: batch 8 of 1,024).
const PLAN_TOKENS: usize = 8192;
/// Positions per sequence planned.
const PLAN_LENGTHS: [usize; 4] = [512, 1024, 2048, 4096];
/// Tokens per batch in the timed steps, and the positions timed.
const STEP_TOKENS: usize = 4096;
const STEP_LENGTHS: [usize; 2] = [64, 512];

const NAIVE: [&str; 2] = [
    "strategies.attention=naive",
    "strategies.cross_entropy=naive",
];
const FUSED: [&str; 2] = [
    "strategies.attention=fused",
    "strategies.cross_entropy=fused",
];

fn sized(name: &str, sets: &[String]) -> anyhow::Result<RunConfig> {
    Ok(apply_overrides(
        preset(name)?,
        sets.iter().map(String::as_str),
    )?)
}

pub fn run(plans: bool, steps: bool) -> anyhow::Result<()> {
    if plans {
        plan_growth()?;
    }
    if steps {
        step_times()?;
    }
    Ok(())
}

fn plan_growth() -> anyhow::Result<()> {
    let gpu = engine::device::planner()?;
    println!("GPT-2 small, {PLAN_TOKENS} tokens a batch, f32, Adam: plan's high-water mark in use");
    println!(
        "{:>9} {:>6} {:>14} {:>8} {:>14} {:>8} {:>12}",
        "positions", "batch", "naive", "growth", "fused", "growth", "fused/naive"
    );
    let mut first: Option<(u64, u64)> = None;
    for length in PLAN_LENGTHS {
        let batch = PLAN_TOKENS / length;
        let shape = [
            // gpt2-small trains on the token stream: a sample is data.seq_len tokens.
            format!("data.seq_len={length}"),
            format!("batch_size={batch}"),
            format!("eval_batch_size={batch}"),
            "steps=2".to_string(),
        ];
        let mut peaks = [0u64; 2];
        for (peak, path) in peaks.iter_mut().zip([NAIVE, FUSED]) {
            let sets: Vec<String> = shape
                .iter()
                .cloned()
                .chain(path.iter().map(|s| s.to_string()))
                .collect();
            let config = sized("gpt2-small", &sets)?;
            let plan = pollster::block_on(engine::plan::plan(&config, &gpu, |_| {}))?;
            *peak = plan.high_water_in_use_bytes;
        }
        let [naive, fused] = peaks;
        let (naive_0, fused_0) = *first.get_or_insert((naive, fused));
        println!(
            "{length:>9} {batch:>6} {:>14} {:>7.2}x {:>14} {:>7.2}x {:>11.2}x",
            ByteFormat::MIB_OR_GIB.of(naive),
            naive as f64 / naive_0 as f64,
            ByteFormat::MIB_OR_GIB.of(fused),
            fused as f64 / fused_0 as f64,
            fused as f64 / naive as f64,
        );
    }
    Ok(())
}

fn step_times() -> anyhow::Result<()> {
    let gpu = pollster::block_on(engine::acquire())?;
    println!(
        "\nsort-transformer steps on {} ({STEP_TOKENS} tokens a batch, width 64, 2 layers, 4 \
         heads): naive vs fused attention",
        gpu.adapter.name
    );
    println!(
        "{:>9} {:>6} {:>12} {:>12} {:>12}",
        "positions", "batch", "naive ms", "fused ms", "fused/naive"
    );
    for length in STEP_LENGTHS {
        let batch = STEP_TOKENS / length;
        let mut rows = Vec::new();
        for attention in ["naive", "fused"] {
            let sets = [
                format!("data.seq_len={}", length / 2),
                format!("batch_size={batch}"),
                format!("eval_batch_size={batch}"),
                "eval_every=0".to_string(),
                // A small test split: the run's one evaluation is not what is timed.
                "data.samples=256".to_string(),
                format!("strategies.attention={attention}"),
                "memory_sampling=step".to_string(),
            ];
            let mut timed = None;
            for steps in [3, 8] {
                let mut config = sized("sort-transformer", &sets)?;
                config.steps = steps;
                timed = Some(pollster::block_on(engine::train(config, &gpu, |_| {}))?.summary);
            }
            rows.push(timed.expect("two runs"));
        }
        let (naive, fused) = (&rows[0], &rows[1]);
        println!(
            "{length:>9} {batch:>6} {:>12.1} {:>12.1} {:>11.2}x",
            naive.median_step_ms,
            fused.median_step_ms,
            fused.median_step_ms / naive.median_step_ms.max(1e-9),
        );
    }
    Ok(())
}
