//! The analytic estimate holds against plans for the transformer and llama families at small
//! shapes: every category `vramlab bench-analytic` compares (parameters, optimizer state,
//! activations, gradients, the evaluation's and the run's high-water marks) within
//! `estimate_check::TOLERANCE` of the planning device's figure. The same comparison as the bench
//! (`engine::estimate_check`), on shapes that plan in about a second each.

use vramlab::engine::estimate_check::{TOLERANCE, against_plan};

use crate::suite::support::{config, gpu};

/// bench-analytic's transformer and llama rows at small shapes (its GPT-2 and TinyLlama rows
/// take seconds each): encoder and decoder, naive and fused attention and loss, the llama with
/// grouped and ungrouped heads and with per-layer checkpointing.
const SMALL_SHAPES: &[(&str, &[&str])] = &[
    ("sort-transformer", &[]),
    (
        "sort-transformer",
        &[
            "model.width=256",
            "model.layers=4",
            "model.heads=8",
            "model.ff=1024",
            "data.seq_len=256",
            "data.vocab=1000",
            "batch_size=8",
            "eval_batch_size=64",
        ],
    ),
    (
        "sort-transformer",
        &[
            "model.width=128",
            "model.layers=3",
            "model.ff=512",
            "data.seq_len=64",
            "batch_size=32",
        ],
    ),
    (
        "sort-transformer",
        &[
            "data.seq_len=64",
            "batch_size=32",
            "strategies.attention=fused",
        ],
    ),
    (
        "sort-transformer",
        &[
            "data.vocab=4096",
            "batch_size=32",
            "strategies.cross_entropy=fused",
        ],
    ),
    ("sort-gpt", &[]),
    (
        "sort-gpt",
        &[
            "data.seq_len=64",
            "strategies.attention=fused",
            "strategies.cross_entropy=fused",
        ],
    ),
    ("sort-llama", &[]),
    ("sort-mixtral", &[]),
    (
        "sort-llama",
        &[
            "model.width=256",
            "model.layers=4",
            "model.heads=8",
            "model.kv_heads=2",
            "model.ff=688",
            "data.seq_len=128",
            "data.vocab=1000",
            "batch_size=8",
            "eval_batch_size=16",
        ],
    ),
    (
        "sort-llama",
        &[
            "model.width=256",
            "model.layers=4",
            "model.heads=8",
            "model.kv_heads=8",
            "model.ff=688",
            "data.seq_len=128",
            "data.vocab=1000",
            "batch_size=8",
            "eval_batch_size=16",
            "strategies.attention=fused",
            "strategies.cross_entropy=fused",
        ],
    ),
    (
        "sort-llama",
        &[
            "model.width=256",
            "model.layers=4",
            "model.heads=8",
            "model.kv_heads=2",
            "model.ff=688",
            "data.seq_len=128",
            "data.vocab=1000",
            "batch_size=8",
            "eval_batch_size=16",
            "strategies.checkpointing=layers",
        ],
    ),
];

/// Figures the model is known to miss, as (preset, sets, category): each must still be off, so
/// a fix of the model removes it here. The tiny decoder's gradient at 64 tokens with both ops
/// fused reads 1.76x: the reading after backward is a difference of two readings, and
/// something freed between them offsets it (docs/plans.md).
const KNOWN_MISSES: &[(&str, &[&str], &str)] = &[(
    "sort-gpt",
    &[
        "data.seq_len=64",
        "strategies.attention=fused",
        "strategies.cross_entropy=fused",
    ],
    "gradient",
)];

#[test]
fn the_analytic_estimate_is_within_ten_percent_of_plans_for_transformers_and_llamas() {
    // The planning device is the process's own; the lock keeps other tests' runs off it.
    let (_lock, _gpu) = gpu();
    let planner = vramlab::engine::device::planner().expect("the planning device");
    let mut off = Vec::new();
    let mut compared = 0;
    for (preset, sets) in SMALL_SHAPES {
        let figures = pollster::block_on(against_plan(config(preset, sets), &planner))
            .expect("a small shape plans");
        for figure in figures.iter().filter(|f| f.compared()) {
            compared += 1;
            println!(
                "{preset} {sets:?} {}: estimate {} B, plan {} B, {:.3}",
                figure.category,
                figure.predicted,
                figure.planned,
                figure.ratio()
            );
            let known = KNOWN_MISSES
                .iter()
                .any(|(p, s, c)| p == preset && s == sets && *c == figure.category);
            if known {
                assert!(
                    !figure.agrees(),
                    "{preset} {sets:?} {} now agrees: take it out of KNOWN_MISSES",
                    figure.category
                );
            } else if !figure.agrees() {
                off.push(format!(
                    "{preset} {sets:?} {}: estimate {} B against the plan's {} B ({:.2}x)",
                    figure.category,
                    figure.predicted,
                    figure.planned,
                    figure.ratio()
                ));
            }
        }
    }
    // Every shape compares most of its categories: a small shape that compared nothing would
    // pass without holding anything.
    assert!(
        compared >= 4 * SMALL_SHAPES.len(),
        "{compared} figures compared"
    );
    assert!(
        off.is_empty(),
        "beyond {:.0}% of the plan: {off:#?}",
        TOLERANCE * 100.0
    );
}
