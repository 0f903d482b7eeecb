//! Plans: a dry run's allocator figures match a real run's where both can run, a model far
//! bigger than this device plans in seconds, and a plan's suggestions are themselves planned.

use vramlab::engine::Gpu;
use vramlab::engine::data::split_sizes;
use vramlab::engine::memory::sampler::largest_page_bytes;
use vramlab::engine::phase::Phase;
use vramlab::engine::plan::{self, Checked, Plan};
use vramlab::engine::presets::playground;
use vramlab::engine::strategies::catalog;

use crate::suite::support::{config, gpu, mib, run, vramlab_json};

/// A preset's two training steps and one evaluation, with `sets`, planned and run at `batch`:
/// each check point's reading and each phase's high-water mark of bytes in the pools, as
/// `(step, phase, what, planned, measured)` where they differ, and the reserved bytes' largest
/// gap.
fn plan_and_run(
    gpu: &Gpu,
    planner: &Gpu,
    name: &str,
    sets: &[&str],
    batch: usize,
) -> (Vec<String>, u64, u64) {
    let mut sets = sets.to_vec();
    sets.push("eval_every=0");
    let mut config = config(name, &sets);
    config.batch_size = batch;
    config.steps = plan::PLAN_STEPS;
    // A quarter of the generated sets' 4,096 samples (digits and tables keep theirs): plan and
    // run agree or not at any split, and the run's evaluation of the whole test split, 1,024
    // sequences in one batch, took about 5 s of each case on lavapipe (256 here).
    if !sets.iter().any(|set| set.starts_with("data.samples=")) {
        config.data.samples = config.data.samples.min(1024);
    }
    // The whole test split as one evaluation batch, unless `sets` names a batch: a plan
    // evaluates two batches at most, and every later one repeats the second.
    if !sets.iter().any(|set| set.starts_with("eval_batch_size=")) {
        config.eval_batch_size = split_sizes(&config.data).1;
    }
    // A mixture of experts is planned with the routing the run measured (a plan of even
    // routing holds what even routing would): the counts are data, the rest is the plan's.
    let measured = run(gpu, config.clone());
    let routed = measured.expert_load.as_ref().map(|load| load.log.clone());
    let planned = pollster::block_on(plan::follow_routed(config, planner, &mut |_| {}, routed))
        .expect("planned");
    // Zipped below: a plan with fewer (or more) steps than its run would compare only some.
    assert_eq!(
        planned.steps.len(),
        measured.steps.len(),
        "{name} b{batch} {sets:?}: planned and measured steps"
    );
    let mut differences = Vec::new();
    let mut reserved_gap = 0u64;
    for (p, m) in planned.steps.iter().zip(&measured.steps) {
        assert_eq!(
            p.phases.keys().collect::<Vec<_>>(),
            m.phases.keys().collect::<Vec<_>>()
        );
        for (phase, planned_reading) in &p.phases {
            // A dry run launches nothing: all it holds is in the pools.
            assert_eq!(
                planned_reading.in_use_bytes,
                planned_reading.pooled_in_use_bytes
            );
            let pairs = [
                (
                    "reading",
                    planned_reading.pooled_in_use_bytes,
                    m.phases[phase].pooled_in_use_bytes,
                ),
                (
                    "high-water",
                    p.phase_high_water[phase].pooled_in_use_bytes,
                    m.phase_high_water[phase].pooled_in_use_bytes,
                ),
            ];
            for (what, planned_bytes, measured_bytes) in pairs {
                if planned_bytes != measured_bytes {
                    differences.push(format!(
                        "step {} {} {what}: planned {planned_bytes} B, measured {measured_bytes} B",
                        p.step,
                        phase.name()
                    ));
                }
            }
            reserved_gap = reserved_gap.max(
                planned_reading
                    .reserved_bytes
                    .abs_diff(m.phases[phase].reserved_bytes),
            );
        }
    }
    (differences, reserved_gap, largest_page_bytes(&gpu.device))
}

/// [`plan_and_run`] for `preset` with `sets` at `batch`, which must agree: every reading and
/// phase high-water mark to the byte, the reserved bytes within a page.
fn plans_exactly(gpu: &Gpu, planner: &Gpu, preset: &str, sets: &[&str], batch: usize) {
    let (differ, reserved_gap, page) = plan_and_run(gpu, planner, preset, sets, batch);
    println!(
        "{preset} b{batch} {sets:?}: {} readings differ; reserved within {reserved_gap} B",
        differ.len()
    );
    assert!(differ.is_empty(), "{preset} {sets:?}: {differ:#?}");
    assert!(
        reserved_gap <= page,
        "{preset} {sets:?}: reserved {reserved_gap} B apart"
    );
}

/// [`plans_exactly`] for each `(preset, sets)` at `batch`, under one GPU lock and planner.
fn each_plans_exactly(cases: &[(&str, &[&str])], batch: usize) {
    let (_lock, gpu) = gpu();
    let planner = vramlab::engine::device::planner().expect("the planning device");
    for (preset, sets) in cases {
        plans_exactly(&gpu, &planner, preset, sets, batch);
    }
}

/// Each of `presets` planned and run at its own batch and at half of it: every reading equal,
/// the reserved bytes within a page; then a real run starts from the baseline.
fn presets_plan_exactly<'a>(presets: impl IntoIterator<Item = &'a str>) {
    let (_lock, gpu) = gpu();
    let planner = vramlab::engine::device::planner().expect("the planning device");
    let mut differences = Vec::new();
    for name in presets {
        let batch = vramlab::engine::presets::preset(name).unwrap().batch_size;
        for batch in [batch, batch / 2] {
            let (differ, reserved_gap, page) = plan_and_run(&gpu, &planner, name, &[], batch);
            println!(
                "{name} b{batch}: {} readings differ; reserved within {reserved_gap} B (a page: \
                 {page} B)",
                differ.len()
            );
            assert!(
                reserved_gap <= page,
                "{name} b{batch}: reserved {reserved_gap} B apart"
            );
            differences.extend(differ.into_iter().map(|d| format!("{name} b{batch}: {d}")));
        }
    }
    assert!(differences.is_empty(), "{differences:#?}");
    // The dry runs left nothing behind: the next real run starts from the baseline.
    run(&gpu, config("spiral-mlp", &["steps=2", "eval_every=0"]));
}

/// The CI tier's representative of the sweep below: the kinds of model no other plan test
/// here follows (a convolution, a recurrent cell; the transformers, Llama-style families,
/// mixtures of experts and MLPs have tests of their own), each at two batches.
#[test]
fn a_plan_reproduces_a_convolutions_and_a_recurrent_cells_readings_exactly() {
    presets_plan_exactly(["digits-cnn", "sort-gru"]);
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn a_plan_reproduces_every_presets_readings_exactly() {
    presets_plan_exactly(playground().map(|preset| preset.name));
}

/// A plan trains on `Dataset::shapes`, a run on `Dataset::build`: for the token stream they must
/// be the same shapes, so every reading agrees to the byte.
const STREAM: [&str; 3] = ["data.kind=stream", "data.seq_len=32", "data.vocab=64"];

#[test]
fn a_token_stream_plans_exactly_as_it_runs() {
    each_plans_exactly(&[("sort-llama", &STREAM)], 64);
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn a_token_stream_plans_exactly_as_it_runs_on_a_gpt_too() {
    each_plans_exactly(&[("sort-gpt", &STREAM)], 64);
}

/// An evaluation in many batches: the second starts while the first one's loss and hits are
/// still pending, so a plan that followed one batch came out short (by the running sums here,
/// by a whole batch of logits in GPT-2 small's evaluation on an H200).
#[test]
fn an_evaluation_in_many_batches_plans_exactly() {
    let (_lock, gpu) = gpu();
    let planner = vramlab::engine::device::planner().expect("the planning device");
    let sets = [
        "data.kind=stream",
        "data.seq_len=32",
        "data.vocab=64",
        "eval_batch_size=16",
    ];
    plans_exactly(&gpu, &planner, "sort-gpt", &sets, 64);
}

#[test]
fn weights_in_f16_or_int8_and_an_autodiff_evaluation_plan_exactly() {
    let (_lock, gpu) = gpu();
    let planner = vramlab::engine::device::planner().expect("the planning device");
    for set in [
        "strategies.weight_dtype=f16",
        "strategies.weight_dtype=int8",
        "strategies.eval_mode=autodiff",
    ] {
        plans_exactly(&gpu, &planner, "spiral-mlp", &[set], 256);
    }
}

/// Phi-3's fused projections split into views of one output: a plan follows them to the byte,
/// trained whole and with LoRA over per-layer checkpointing.
#[test]
fn phi3_plans_exactly() {
    let (_lock, gpu) = gpu();
    let planner = vramlab::engine::device::planner().expect("the planning device");
    let lora = [
        "strategies.trainable=lora",
        "strategies.checkpointing=layers",
        "strategies.attention=fused",
    ];
    plans_exactly(&gpu, &planner, "sort-phi3", &lora, 128);
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn phi3_plans_exactly_trained_whole() {
    each_plans_exactly(&[("sort-phi3", &[])], 128);
}

const FUSED: [&str; 2] = [
    "strategies.attention=fused",
    "strategies.cross_entropy=fused",
];

#[test]
fn fused_attention_and_loss_plan_exactly() {
    each_plans_exactly(&[("sort-gpt", &FUSED)], 128);
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn fused_attention_and_loss_plan_exactly_in_an_encoder() {
    each_plans_exactly(&[("sort-transformer", &FUSED)], 128);
}

/// The CI tier's case of per-layer checkpointing's plans: LoRA and fused attention over it.
#[test]
fn layer_checkpointing_plans_exactly() {
    let sets = [
        "strategies.checkpointing=layers",
        "strategies.trainable=lora",
        "strategies.attention=fused",
    ];
    each_plans_exactly(&[("sort-llama", &sets)], 64);
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn layer_checkpointing_plans_exactly_whole_in_a_gpt_and_over_a_q4_base() {
    let layers = ["strategies.checkpointing=layers"];
    let q4_lora = [
        "strategies.checkpointing=layers",
        "strategies.trainable=lora",
        "strategies.weight_dtype=q4",
    ];
    each_plans_exactly(
        &[
            ("sort-llama", &layers),
            ("sort-gpt", &layers),
            ("sort-llama", &q4_lora),
        ],
        64,
    );
}

/// Gemma's windows, caps, post-norms and GeGLU: plans equal real runs, with naive and fused
/// attention, per-layer checkpointing and LoRA.
#[test]
fn gemma_plans_exactly() {
    // The CI tier's cases: one of each Gemma, between them fused attention, per-layer
    // checkpointing and LoRA; the full tier adds the rest below.
    each_plans_exactly(
        &[
            ("sort-gemma2", &["strategies.attention=fused"]),
            ("sort-gemma3", &LORA_LAYERS),
        ],
        64,
    );
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn gemma_plans_exactly_every_case() {
    each_plans_exactly(
        &[
            ("sort-gemma2", &[]),
            ("sort-gemma3", &[]),
            ("sort-gemma3", &["strategies.attention=fused"]),
        ],
        64,
    );
}

/// Mixtral's experts hold activations for the tokens they received: planned with the routing
/// the run measured, every reading agrees to the byte, with either attention, and under LoRA
/// with per-layer checkpointing (each block's routing read again as it is recomputed: the CI
/// tier's case).
const LORA_LAYERS: [&str; 2] = [
    "strategies.checkpointing=layers",
    "strategies.trainable=lora",
];

#[test]
fn mixtral_plans_exactly_the_routing_it_ran() {
    each_plans_exactly(&[("sort-mixtral", &LORA_LAYERS)], 64);
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn mixtral_plans_exactly_the_routing_it_ran_every_case() {
    // Qwen3-MoE's eight experts under LoRA with per-layer checkpointing too, and the experts
    // run as the loop (one Linear and one product an expert), which holds other tensors.
    let looped = [LORA_LAYERS.as_slice(), &["strategies.experts=loop"]].concat();
    each_plans_exactly(
        &[
            ("sort-mixtral", &[]),
            ("sort-mixtral", &["strategies.attention=fused"]),
            ("sort-qwen3-moe", &LORA_LAYERS),
            ("sort-mixtral", &looped),
        ],
        64,
    );
}

#[test]
fn adamw8bit_plans_exactly() {
    let (_lock, gpu) = gpu();
    let planner = vramlab::engine::device::planner().expect("the planning device");
    // digits-mlp's weight matrices are over 4,096 values (8-bit state), its biases under (f32).
    plans_exactly(&gpu, &planner, "digits-mlp", &["optimizer=adamw8bit"], 128);
}

#[test]
fn a_quantized_base_plans_exactly() {
    let sets = [
        "strategies.weight_dtype=q4",
        "strategies.trainable=lora",
        "strategies.attention=fused",
    ];
    each_plans_exactly(&[("sort-llama", &sets)], 64);
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn an_8_bit_base_plans_exactly() {
    let sets = ["strategies.weight_dtype=q8", "strategies.trainable=head"];
    each_plans_exactly(&[("sort-llama", &sets)], 64);
}

/// `vramlab plan --json`, parsed.
fn plan_cli(args: &[&str]) -> Plan {
    let mut all = vec!["plan", "--json"];
    all.extend(args);
    vramlab_json(&all)
}

#[test]
fn a_model_bigger_than_the_device_plans_in_seconds() {
    // big-mlp: 0.25 billion parameters in 4096-wide layers, each weight under this adapter's
    // largest binding, the whole far over its largest buffer.
    let planned = plan_cli(&["--preset", "big-mlp"]);
    let params = planned.params;
    println!(
        "big-mlp: {params} parameters, high-water {:.0} MiB in use, {:.0} MiB reserved, \
         estimate {:.0} MiB, {:.1} s",
        mib(planned.high_water_in_use_bytes),
        mib(planned.high_water_reserved_bytes),
        mib(planned.predicted_peak_bytes),
        planned.seconds
    );
    assert!(planned.oversized.is_empty(), "{:?}", planned.oversized);
    let (_lock, gpu) = gpu();
    assert!(planned.high_water_in_use_bytes > gpu.adapter.max_buffer_size);
    // Weights, gradients and Adam's two moments are all alive during the optimizer's step.
    assert!(planned.high_water_in_use_by_phase[&Phase::Optimizer] >= 4 * 4 * params);
}

#[test]
fn a_q4_plan_stores_the_body_in_blocks() {
    // The catalog's QLoRA lesson: LoRA of rank 2 on sort-llama at width 256.
    let claim = catalog::claims()
        .find(|(_, claim)| claim.folklore == "QLoRA: a 4-bit base")
        .expect("the lesson")
        .1;
    let with = |dtype: &str| {
        let mut args = vec!["--preset".to_string(), claim.base.preset.to_string()];
        for set in claim.base.sets {
            args.extend(["--set".to_string(), set.to_string()]);
        }
        args.extend(["--set".into(), format!("strategies.weight_dtype={dtype}")]);
        plan_cli(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let (f16, q4) = (with("f16"), with("q4"));
    let stored = q4.quantized.expect("a q4 plan says what its base stores");
    let ratio = q4.weight_bytes as f64 / f16.weight_bytes as f64;
    println!(
        "{}: weights {} B with an f16 base, {} B with a q4 base ({ratio:.3}x); {} values in {}",
        claim.base.label(),
        f16.weight_bytes,
        q4.weight_bytes,
        stored.values,
        stored.format.describe()
    );
    assert!(f16.quantized.is_none());
    assert_eq!(stored.untiled_matrices, 0);
    // 4.25 bits a body weight against 16, with the f32 adapters and the f16 rest on top.
    assert!(
        (0.266..=claim.holds_at).contains(&ratio),
        "{ratio} (the lesson holds at {})",
        claim.holds_at
    );
    // The analytic estimate counts the same blocks; it leaves out the rotary tables (not
    // parameters) and the allocator's alignment.
    let gap = q4.predicted.params.abs_diff(q4.weight_bytes);
    assert!(
        gap < q4.weight_bytes / 50,
        "estimate {} B",
        q4.predicted.params
    );
}

#[test]
fn a_plans_suggestions_are_planned_too() {
    let planned = plan_cli(&["--preset", "wide-cnn", "--budget", "480MiB"]);
    assert_eq!(planned.fits, Some(false));
    let oom = planned.out_of_memory.as_ref().expect("where it ran out");
    println!("wide-cnn under 480 MiB: {}", oom.headline());
    let budget = planned.budget_bytes.unwrap();
    let mut fitting = 0;
    for checked in &planned.suggestions {
        println!(
            "  {}={}: {:?}",
            checked.suggestion.field,
            checked.suggestion.value,
            checked.checked.fits()
        );
        if let Checked::Fits {
            high_water_in_use_bytes,
            reserved_at_checks_bytes,
            ..
        } = checked.checked
        {
            // The budget holds the live bytes at every launch and the pages at every check
            // point (see `Checked::Fits`).
            assert!(high_water_in_use_bytes <= budget && reserved_at_checks_bytes <= budget);
            fitting += 1;
        }
    }
    assert!(fitting > 0, "no suggestion was planned to fit");
}

#[test]
fn gpt2_small_plans_whole_on_the_planning_device() {
    let planned = plan_cli(&["--preset", "gpt2-small"]);
    println!(
        "gpt2-small: {} parameters, high-water {:.2} GiB in use, {:.2} GiB reserved, estimate \
         {:.2} GiB, {:.1} s",
        planned.params,
        mib(planned.high_water_in_use_bytes) / 1024.0,
        mib(planned.high_water_reserved_bytes) / 1024.0,
        mib(planned.predicted_peak_bytes) / 1024.0,
        planned.seconds
    );
    // GPT-2 small's published count: a decoder with tied embeddings and a final layer norm
    // (its 50,257 embeddings are the token stream's 50,257 tokens, 1,024 a sample).
    assert_eq!(planned.params, 124_439_808);
    // The logits (1.5 GiB at batch 8) are over lavapipe's 128 MiB binding, not the planner's.
    let logits = 8 * 1024 * 50_257 * 4;
    assert!(planned.adapter.max_binding_size > logits);
    assert!(planned.oversized.is_empty(), "{:?}", planned.oversized);
    // Weights, gradients, Adam's moments and the logits are alive at once in the backward pass.
    assert!(planned.high_water_in_use_by_phase[&Phase::Backward] > 4 * 4 * planned.params + logits);
}

/// LoRA over an f16 base keeps its factors in f32 by default, as PEFT does: planned and run to
/// the byte, and against `adapter_dtype = base` (16-bit factors) exactly two more bytes a
/// factor value stored, two more a gradient value and four more of AdamW's state.
#[test]
fn lora_over_an_f16_base_keeps_f32_adapters_unless_asked_and_plans_exactly() {
    let lora = [
        "strategies.trainable=lora",
        "strategies.weight_dtype=f16",
        "optimizer=adamw",
    ];
    each_plans_exactly(&[("sort-llama", &lora)], 32);
    let planner = vramlab::engine::device::planner().expect("the planning device");
    let planned = |sets: &[&str]| {
        let mut config = config("sort-llama", sets);
        config.steps = 2;
        pollster::block_on(plan::plan(&config, &planner, |_| {})).expect("a plan")
    };
    let f32_adapters = planned(&lora);
    let mut base = lora.to_vec();
    base.push("strategies.adapter_dtype=base");
    let f16_adapters = planned(&base);
    let adapters = f32_adapters.adapter_params;
    assert!(adapters > 0 && adapters == f16_adapters.adapter_params);
    let (wide, narrow) = (
        f32_adapters.category_sizes.expect("categories"),
        f16_adapters.category_sizes.expect("categories"),
    );
    assert_eq!(
        f32_adapters.weight_bytes - f16_adapters.weight_bytes,
        2 * adapters
    );
    assert_eq!(wide.gradient - narrow.gradient, 2 * adapters);
    assert_eq!(wide.optimizer_state - narrow.optimizer_state, 4 * adapters);
}

/// A llama's 16-bit weights, and the 16-bit base a 4-bit one is quantized from, are drawn in
/// 16 bits (`models::Drawn`), as PyTorch loads a checkpoint with `torch_dtype=torch.bfloat16`:
/// under a budget nothing fits, set-up stops asking exactly the stored weights. Drawn in f32 and
/// cast, it asked for the f32 original of the parameter being cast beside every one cast
/// before it (a two-block Llama-3.1-8B: 4.85 GiB against 2.90 GiB of weights).
#[test]
fn a_llamas_set_up_holds_its_stored_weights_and_nothing_beside_them() {
    for sets in [
        &["strategies.weight_dtype=f16"][..],
        &[
            "strategies.weight_dtype=q4",
            "strategies.trainable=lora",
            "strategies.adapter_dtype=f32",
        ],
    ] {
        let mut args = vec![
            "plan",
            "--preset",
            "sort-llama",
            "--budget",
            "1KiB",
            "--json",
        ];
        for set in sets {
            args.extend(["--set", set]);
        }
        let plan: Plan = vramlab_json(&args);
        let oom = plan.out_of_memory.expect("1 KiB holds no model");
        assert_eq!((oom.step, oom.in_use_bytes), (None, 0), "{sets:?}");
        assert_eq!(oom.asked_bytes, plan.weight_bytes, "{sets:?}");
    }
}
