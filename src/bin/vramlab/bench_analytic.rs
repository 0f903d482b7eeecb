//! `vramlab bench-analytic`: the analytic model against plans, category by category, on a grid
//! of sizes for each model family. Each config is planned on the planning device (its first two
//! steps and its evaluation under a dry run); the second step's measured categories, the
//! evaluation's high-water mark and the plan's are set beside what `memory::analytic` predicts
//! for them (`engine::estimate_check`, which the suite holds for small shapes). A benchmark that
//! prints ratios, not a test: it is where the analytic model's misses are found.

use vramlab::engine::Gpu;
use vramlab::engine::estimate_check::{Figure, TOLERANCE, against_plan};
use vramlab::engine::format::ByteFormat;
use vramlab::engine::overrides::apply_overrides;
use vramlab::engine::presets::preset;

/// The grid: a model family, the preset it starts from, and the `--set` changes that size it.
/// The model was fitted to the first twelve; the rest check it at sizes it was not fitted to.
/// No tensor in it is over the planning device's largest binding (a plan leaves those out and
/// names them; at eval batch 512 the width-256 transformer's scores would be 4 GiB).
pub const GRID: &[(&str, &str, &str)] = &[
    ("mlp", "spiral-mlp", ""),
    (
        "mlp",
        "spiral-mlp",
        "batch_size=4096 model.hidden=[1024,1024]",
    ),
    ("mlp", "big-mlp", "batch_size=64"),
    ("cnn", "digits-cnn", ""),
    ("cnn", "wide-cnn", "batch_size=64"),
    ("gru", "sort-gru", ""),
    (
        "gru",
        "sort-gru",
        "data.seq_len=128 model.width=512 batch_size=32",
    ),
    ("lstm", "sort-lstm", ""),
    (
        "lstm",
        "sort-lstm",
        "data.seq_len=128 model.width=512 batch_size=32",
    ),
    ("transformer", "sort-transformer", ""),
    (
        "transformer",
        "sort-transformer",
        "model.width=256 model.layers=4 model.heads=8 model.ff=1024 data.seq_len=256 \
         data.vocab=1000 batch_size=8 eval_batch_size=64",
    ),
    (
        "transformer",
        "gpt2-small",
        "batch_size=1 data.seq_len=2048",
    ),
    // Not used to fit the model: checks of it at other sizes.
    ("mlp", "digits-mlp", "batch_size=1024"),
    (
        "mlp",
        "spiral-mlp",
        "batch_size=2048 model.hidden=[512,512,512]",
    ),
    (
        "cnn",
        "digits-cnn",
        "batch_size=1024 model.channels=[32,64]",
    ),
    (
        "gru",
        "sort-gru",
        "data.seq_len=32 model.width=256 batch_size=64",
    ),
    (
        "gru",
        "sort-gru",
        "data.seq_len=64 data.vocab=50000 model.width=256 batch_size=8 eval_batch_size=64",
    ),
    (
        "lstm",
        "sort-lstm",
        "data.seq_len=64 data.vocab=100 model.width=256 batch_size=128",
    ),
    (
        "transformer",
        "sort-transformer",
        "model.width=128 model.layers=3 model.ff=512 data.seq_len=64 batch_size=32",
    ),
    ("transformer", "gpt2-small", ""),
    // Fused attention and loss (`engine::ops`), and the decoder, at both settings.
    (
        "transformer",
        "sort-transformer",
        "data.seq_len=64 batch_size=32 strategies.attention=fused",
    ),
    (
        "transformer",
        "sort-transformer",
        "data.vocab=4096 batch_size=32 strategies.cross_entropy=fused",
    ),
    ("transformer", "sort-gpt", ""),
    (
        "transformer",
        "sort-gpt",
        "data.seq_len=64 strategies.attention=fused strategies.cross_entropy=fused",
    ),
    (
        "transformer",
        "gpt2-small",
        "strategies.attention=fused strategies.cross_entropy=fused",
    ),
    (
        "transformer",
        "gpt2-small",
        "batch_size=2 eval_batch_size=2 data.seq_len=4096 strategies.attention=fused \
         strategies.cross_entropy=fused",
    ),
    // The Llama-style family, naive and fused, grouped heads and not.
    ("llama", "sort-llama", ""),
    (
        "llama",
        "sort-llama",
        "model.width=256 model.layers=4 model.heads=8 model.kv_heads=2 model.ff=688 \
         data.seq_len=128 data.vocab=1000 batch_size=8 eval_batch_size=16",
    ),
    (
        "llama",
        "sort-llama",
        "model.width=256 model.layers=4 model.heads=8 model.kv_heads=8 model.ff=688 \
         data.seq_len=128 data.vocab=1000 batch_size=8 eval_batch_size=16 \
         strategies.attention=fused strategies.cross_entropy=fused",
    ),
    (
        "llama",
        "tinyllama-1.1b",
        "data.seq_len=512 strategies.attention=fused strategies.cross_entropy=fused",
    ),
    // Fine-tuning: frozen bodies, adapters, leaner optimizers.
    ("finetune", "spiral-mlp", "strategies.trainable=head"),
    (
        "finetune",
        "spiral-mlp",
        "strategies.trainable=lora strategies.lora_rank=4",
    ),
    ("finetune", "spiral-mlp", "optimizer=adafactor"),
    ("finetune", "spiral-mlp", "optimizer=lion"),
    (
        "finetune",
        "sort-llama",
        "strategies.trainable=lora model.tied=false data.seq_len=64 batch_size=32",
    ),
    (
        "finetune",
        "sort-llama",
        "strategies.trainable=head model.tied=false data.seq_len=64 batch_size=32",
    ),
    (
        "finetune",
        "gpt2-small",
        "batch_size=2 strategies.trainable=lora strategies.attention=fused \
         strategies.cross_entropy=fused",
    ),
    (
        "finetune",
        "tinyllama-1.1b",
        "data.seq_len=512 strategies.trainable=lora strategies.lora_rank=16 \
         strategies.attention=fused strategies.cross_entropy=fused",
    ),
    // Per-layer checkpointing, QLoRA's 4-bit base, 8-bit AdamW.
    (
        "finetune",
        "sort-llama",
        "model.width=256 model.layers=4 model.heads=8 model.kv_heads=2 model.ff=688 \
         data.seq_len=128 data.vocab=1000 batch_size=8 eval_batch_size=16 \
         strategies.checkpointing=layers",
    ),
    (
        "finetune",
        "gpt2-small",
        "batch_size=2 strategies.attention=fused strategies.checkpointing=layers",
    ),
    (
        "finetune",
        "tinyllama-1.1b",
        "data.seq_len=512 strategies.trainable=lora strategies.lora_rank=16 \
         strategies.weight_dtype=q4 strategies.attention=fused strategies.checkpointing=layers",
    ),
    (
        "finetune",
        "digits-mlp",
        "batch_size=1024 optimizer=adamw8bit",
    ),
    // One GPU's share of a sharded run: full sharding, SHARD_GRAD_OP, the parameters offloaded,
    // QLoRA's 4-bit base (its codes sharded, its quant state whole), data parallel and ZeRO-1.
    (
        "sharded",
        "tinyllama-1.1b",
        "gpus=8 strategies.sharding=full data.seq_len=512 strategies.attention=fused \
         strategies.checkpointing=layers",
    ),
    (
        "sharded",
        "tinyllama-1.1b",
        "gpus=4 strategies.sharding=gradients data.seq_len=512 strategies.attention=fused \
         strategies.checkpointing=layers",
    ),
    (
        "sharded",
        "tinyllama-1.1b",
        "gpus=8 strategies.offload=parameters strategies.sharding=full data.seq_len=512 \
         strategies.attention=fused strategies.checkpointing=layers",
    ),
    (
        "sharded",
        "tinyllama-1.1b",
        "gpus=1 strategies.offload=parameters strategies.trainable=lora \
         strategies.lora_rank=16 strategies.sharding=full data.seq_len=512 \
         strategies.attention=fused strategies.checkpointing=layers",
    ),
    (
        "sharded",
        "tinyllama-1.1b",
        "gpus=4 strategies.sharding=full strategies.trainable=lora strategies.lora_rank=16 \
         strategies.weight_dtype=q4 data.seq_len=512 strategies.attention=fused \
         strategies.checkpointing=layers",
    ),
    (
        "sharded",
        "tinyllama-1.1b",
        "gpus=4 strategies.sharding=none data.seq_len=512 strategies.attention=fused \
         strategies.checkpointing=layers",
    ),
    (
        "sharded",
        "tinyllama-1.1b",
        "gpus=4 strategies.sharding=optimizer data.seq_len=512 strategies.attention=fused \
         strategies.checkpointing=layers",
    ),
];

/// Printed after a figure off by more than the tolerance.
const OFF: &str = "  <- off";

/// One config of the grid, planned and set beside its estimate.
pub struct Row {
    pub family: &'static str,
    pub label: String,
    pub figures: Vec<Figure>,
}

/// The grid's rows planned on `gpu`, or those of the `only` families, each handed to `each` as
/// it is planned.
pub fn rows(gpu: &Gpu, only: &[String], mut each: impl FnMut(&Row)) -> anyhow::Result<Vec<Row>> {
    let chosen = GRID
        .iter()
        .filter(|(family, _, _)| only.is_empty() || only.iter().any(|f| f == family));
    let mut rows = Vec::new();
    for (family, name, sets) in chosen {
        let config = apply_overrides(preset(name)?, sets.split_whitespace())?;
        let row = Row {
            family,
            label: format!("{name} {sets}"),
            figures: pollster::block_on(against_plan(config, gpu))?,
        };
        each(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// The grid's rows, or those of the `only` families.
pub fn run(gpu: &Gpu, only: &[String]) -> anyhow::Result<()> {
    println!(
        "{:<12} {:<58} {:<16} {:>11} {:>11} {:>6}",
        "family", "config", "category", "predicted", "planned", "ratio"
    );
    let (mut agree, mut compared) = (0, 0);
    rows(gpu, only, |row| {
        let (family, label) = (row.family, &row.label);
        for figure in &row.figures {
            if figure.compared() {
                compared += 1;
                agree += usize::from(figure.agrees());
            }
            println!(
                "{family:<12} {label:<58.58} {:<16} {:>11} {:>11} {:>6.2}{}",
                figure.category,
                ByteFormat::MIB_OR_GIB.of(figure.predicted),
                ByteFormat::MIB_OR_GIB.of(figure.planned),
                figure.ratio(),
                if !figure.compared() {
                    "  (too small to compare)"
                } else if !figure.agrees() {
                    OFF
                } else {
                    ""
                }
            );
        }
    })?;
    println!(
        "within {:.0}% of the plan: {agree} of {compared} figures (input and other are not \
         predicted)",
        TOLERANCE * 100.0
    );
    Ok(())
}
