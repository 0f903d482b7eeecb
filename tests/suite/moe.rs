//! Mixtures of experts (`engine::models::moe`): the tiny Mixtral builds what its estimate
//! counts, trains with falling loss and reports what its router did; a plan says it assumed
//! even routing; the fields a dense family has no place for, and a router vramlab does not
//! build, are refused by name. (Plans of the routing a run measured: `plan.rs`.)

use super::support::{InRepo, TINY_BATCH, config, gpu, loss_ends, run, shared_run};
use vramlab::engine::config::ModelKind;
use vramlab::engine::device::planner;
use vramlab::engine::hf_config;
use vramlab::engine::memory::predict;
use vramlab::engine::overrides::apply_override;
use vramlab::engine::presets::preset;
use vramlab::engine::strategies::checkpointing::lora_expert_block_parents;
use vramlab::engine::{Purpose, Run};

const DIR: InRepo = InRepo("tests/data/hf");

#[test]
fn the_tiny_mixtral_builds_what_its_estimate_counts() {
    // A plan's dry run is the whole process's: no run may train beside it.
    let (_lock, _) = gpu();
    let small = config("sort-mixtral", &[]);
    assert_eq!(small.model.kind, ModelKind::Mixtral);
    let gpu = planner().expect("the planning device");
    let built = Run::plan(small.clone(), &gpu)
        .expect("the model builds")
        .param_counts()
        .model;
    assert_eq!(built, predict(&small).param_count);
    // Against the same llama with one dense SwiGLU of the experts' width: each block adds the
    // router (64 x 4) and three more experts (3 x 3 x 64 x 96).
    let mut dense = small.clone();
    dense.model.kind = ModelKind::Llama;
    (dense.model.experts, dense.model.experts_per_token) = (0, 0);
    let per_block = 64 * 4 + 3 * 3 * 64 * 96;
    assert_eq!(predict(&dense).param_count + 2 * per_block, built);
}

#[test]
fn the_tiny_mixtral_trains_with_falling_loss_and_reports_its_routing() {
    let (_lock, gpu) = gpu();
    let timeline = shared_run(
        &gpu,
        config("sort-mixtral", &["steps=20", "eval_every=0", TINY_BATCH]),
    );
    let (first, last) = loss_ends(&timeline, 4);
    let load = timeline
        .expert_load
        .as_ref()
        .expect("a mixture of experts reports its routing");
    println!(
        "sort-mixtral: loss {first:.4} -> {last:.4}; {}",
        load.describe()
    );
    assert!(last < 0.9 * first, "loss {first} -> {last}");
    // Each step routes new counts to each expert, sizes the grouped products take at launch:
    // after the second step the training steps compile nothing new. (What the first steps
    // compile depends on the tests before: kernels are compiled once a device, and the suite
    // shares one.)
    let compiled: Vec<usize> = timeline.steps.iter().map(|s| s.kernels_compiled).collect();
    println!("kernels compiled a step: {compiled:?}");
    assert!(
        compiled[2..].iter().all(|&n| n == 0),
        "kernels compiled a step: {compiled:?}"
    );
    assert_eq!(load.source, "measured");
    assert_eq!((load.experts, load.top_k), (4, 2));
    // Every training step routes both blocks (the end-of-run probes route more passes).
    assert!(load.passes >= 2 * 20, "{} passes", load.passes);
    assert_eq!(load.log.len(), load.passes);
    // Each pass sends every token to two experts: 16 samples of 16 tokens in a step.
    assert!(
        load.log
            .iter()
            .all(|pass| pass.iter().sum::<usize>() % 2 == 0)
    );
    assert_eq!(load.log[0].iter().sum::<usize>(), 16 * 16 * 2);
    let routed: u64 = load.log.iter().flatten().map(|&n| n as u64).sum();
    assert_eq!(routed, load.tokens_per_expert.iter().sum::<u64>());
    assert!(load.busiest_pass_tokens >= load.busiest_pass_even_tokens);
    // The router's own choices, every pass read: balanced routing (a plan's assumption, or
    // the fallback of a pass whose read failed) would give each expert 128 in every training
    // pass.
    assert_eq!(load.unread_passes, 0, "{}", load.describe());
    assert!(
        load.log
            .iter()
            .filter(|pass| pass.iter().sum::<usize>() == 16 * 16 * 2)
            .any(|pass| pass.iter().any(|&n| n != 128)),
        "every pass routed evenly: {}",
        load.describe()
    );
}

#[test]
fn a_plan_of_a_mixture_of_experts_says_it_assumed_even_routing() {
    let (_lock, _) = gpu();
    let gpu = planner().expect("the planning device");
    let plan = pollster::block_on(vramlab::engine::plan::plan(
        &config("sort-mixtral", &["batch_size=63"]),
        &gpu,
        |_| {},
    ))
    .expect("planned");
    let load = plan.expert_load.expect("the plan states its routing");
    assert_eq!(load.source, "balanced");
    // 63 samples of 16 tokens, two experts each, over four: 504 each, none more than one apart.
    for pass in &load.log {
        let (least, most) = (pass.iter().min().unwrap(), pass.iter().max().unwrap());
        assert!(most - least <= 1, "{pass:?}");
    }
    assert_eq!(load.log[0], vec![504; 4]);
    assert!(
        load.describe().starts_with("routing assumed even"),
        "{}",
        load.describe()
    );
}

/// A config may send every token to every expert (`experts_per_token = experts`): it plans
/// (each expert receives every token) and trains, where burn's top-k asks for fewer than all
/// (the plan panicked).
#[test]
fn every_token_to_every_expert_plans_and_trains() {
    let (_lock, gpu) = gpu();
    let all = [
        "model.experts_per_token=4",
        "batch_size=16",
        "steps=3",
        "eval_every=0",
    ];
    let planner = planner().expect("the planning device");
    let plan = pollster::block_on(vramlab::engine::plan::plan(
        &config("sort-mixtral", &all),
        &planner,
        |_| {},
    ))
    .expect("planned");
    let load = plan.expert_load.expect("the plan states its routing");
    assert_eq!(
        load.log[0],
        vec![16 * 16; 4],
        "every expert gets every token"
    );
    let timeline = run(&gpu, config("sort-mixtral", &all));
    let measured = timeline.expert_load.expect("the run reports its routing");
    assert_eq!(measured.log[0], vec![16 * 16; 4]);
    assert!(
        timeline
            .steps
            .iter()
            .all(|s| s.loss.is_some_and(f32::is_finite))
    );
}

/// Per-layer checkpointing makes a block one autodiff node of at most 2,048 parents; under LoRA
/// a block of many experts run as the loop tracks more. The check's count is the built block's
/// own (one block, so the model's trained tensors are its adapters'), and past the node it is
/// refused by name. Grouped experts track three stacked matrices' factors whatever the experts.
#[test]
fn a_checkpointed_block_past_its_nodes_parents_is_refused_not_run_whole() {
    let (_lock, _) = gpu();
    let with = |experts: usize, path: &str| {
        let sets = [
            "model.layers=1".to_string(),
            format!("model.experts={experts}"),
            "strategies.trainable=lora".to_string(),
            "strategies.checkpointing=layers".to_string(),
            format!("strategies.experts={path}"),
        ];
        vramlab::engine::overrides::apply_overrides(
            preset("sort-mixtral").unwrap(),
            sets.iter().map(String::as_str),
        )
        .unwrap()
    };
    let at = |experts: usize| with(experts, "loop");
    let refused = at(340)
        .validate_for(Purpose::Plan)
        .expect_err("340 experts under LoRA pass the node's parents")
        .to_string();
    assert!(
        refused.contains("strategies.checkpointing")
            && refused.contains("tracks 2051 tensors")
            && refused.contains("at most 339"),
        "{refused}"
    );
    let most = at(339);
    most.validate_for(Purpose::Plan)
        .expect("339 experts: 2,045 parents");
    let gpu = planner().expect("the planning device");
    let built = Run::plan(most.clone(), &gpu).expect("the model builds");
    assert_eq!(
        Some(1 + built.param_counts().trainable_tensors),
        lora_expert_block_parents(&most),
        "the block's input and its trained tensors"
    );
    let grouped = with(340, "grouped");
    grouped
        .validate_for(Purpose::Plan)
        .expect("340 grouped experts: 17 parents");
    assert_eq!(lora_expert_block_parents(&grouped), None);
    let built = Run::plan(grouped, &gpu).expect("the model builds");
    // Two factors for each of Q, K, V, the output, the router and the three stacks.
    assert_eq!(built.param_counts().trainable_tensors, 2 * (5 + 3));
}

#[test]
#[ignore = "full tier (bash .ci/test --full)"]
fn mixtral_takes_lora_qlora_and_per_layer_checkpointing() {
    let (_lock, gpu) = gpu();
    let short = ["steps=8", "eval_every=0", TINY_BATCH];
    let with = |extra: &[&str]| {
        let sets: Vec<&str> = short.iter().chain(extra).copied().collect();
        config("sort-mixtral", &sets)
    };
    let timeline = run(&gpu, with(&["strategies.trainable=lora"]));
    assert!(timeline.summary.trainable_params < timeline.summary.params / 4);
    let (first, last) = loss_ends(&timeline, 2);
    println!("sort-mixtral lora: loss {first:.4} -> {last:.4}");
    assert!(last < first, "lora: loss {first} -> {last}");
    let layers = run(&gpu, with(&["strategies.checkpointing=layers"]));
    let (first, last) = loss_ends(&layers, 2);
    assert!(last < first, "checkpointing layers: loss {first} -> {last}");
    // A recomputed block routes as its forward pass did, without reading again: as many
    // routed passes as the plain run's.
    let plain = run(&gpu, with(&[]));
    let passes = |t: &vramlab::engine::Timeline| t.expert_load.as_ref().unwrap().passes;
    assert_eq!(passes(&layers), passes(&plain));
    let qlora = with(&["strategies.trainable=lora", "strategies.weight_dtype=q4"]);
    qlora
        .validate_for(Purpose::Run)
        .expect("QLoRA on a Mixtral");
    let planner = planner().expect("the planning device");
    Run::plan(qlora, &planner).expect("the QLoRA model builds");
}

#[test]
fn expert_fields_are_refused_by_name_where_they_do_not_build() {
    let refused = |base: &str, assignment: &str| {
        let config = preset(base).unwrap();
        match apply_override(&config, assignment) {
            Err(err) => err.to_string(),
            Ok(config) => config
                .validate()
                .expect_err(&format!("{assignment} on {base}"))
                .to_string(),
        }
    };
    let dense = refused("sort-llama", "model.experts=4");
    assert!(
        dense.contains("model.experts") && dense.contains("one dense feed-forward"),
        "{dense}"
    );
    let too_many = refused("sort-mixtral", "model.experts_per_token=5");
    assert!(
        too_many.contains("model.experts_per_token") && too_many.contains("1..=4"),
        "{too_many}"
    );
    let none = refused("sort-mixtral", "model.experts=0");
    assert!(
        none.contains("model.experts") && none.contains("1..=512"),
        "{none}"
    );
    let text = std::fs::read_to_string(format!("{DIR}/mixtral-8x7b-v0.1.json")).unwrap();
    for (from, to, expected) in [
        (
            "\"output_router_logits\": false",
            "\"output_router_logits\": true",
            "output_router_logits: true is not modelled",
        ),
        (
            "\"use_cache\": true",
            "\"use_cache\": true, \"router_jitter_noise\": 0.1",
            "router_jitter_noise: 0.1 is not modelled",
        ),
        (
            "\"num_experts_per_tok\": 2",
            "\"num_experts_per_tok\": 9",
            "num_experts_per_tok: 9 is out of range 1..=8",
        ),
    ] {
        let changed = text.replace(from, to);
        assert_ne!(changed, text, "{from}");
        let err = hf_config::read(&changed).unwrap_err().to_string();
        assert!(err.contains(expected), "{to}: {err}");
    }
}

#[test]
fn the_tiny_qwen3_moe_trains_with_falling_loss() {
    let (_lock, gpu) = gpu();
    let timeline = shared_run(
        &gpu,
        config("sort-qwen3-moe", &["steps=20", "eval_every=0", TINY_BATCH]),
    );
    let (first, last) = loss_ends(&timeline, 4);
    let load = timeline.expert_load.as_ref().expect("its routing");
    println!(
        "sort-qwen3-moe: loss {first:.4} -> {last:.4}; {}",
        load.describe()
    );
    assert!(last < 0.9 * first, "loss {first} -> {last}");
    assert_eq!((load.experts, load.top_k), (8, 2));
}

/// Qwen3-30B-A3B as read: Qwen3's heads, 128 experts of `moe_intermediate_size` (the dense
/// `intermediate_size` sizes nothing when every layer is sparse), and what vramlab's Qwen3-MoE
/// does not build refused by name.
#[test]
fn qwen3_moe_reads_its_experts_and_refuses_what_it_does_not_build() {
    let text = std::fs::read_to_string(format!("{DIR}/qwen3-30b-a3b.json")).unwrap();
    let model = hf_config::read(&text).unwrap().model;
    assert_eq!(model.kind, ModelKind::Qwen3Moe);
    assert_eq!(
        (
            model.experts,
            model.experts_per_token,
            model.ff,
            model.head_dim
        ),
        (128, 8, 768, 128)
    );
    for (from, to, expected) in [
        (
            "\"norm_topk_prob\": true",
            "\"norm_topk_prob\": false",
            "norm_topk_prob: false (the class default when absent) is not modelled",
        ),
        (
            "\"mlp_only_layers\": []",
            "\"mlp_only_layers\": [0, 1]",
            "mlp_only_layers: [0,1] is not modelled",
        ),
        (
            "\"decoder_sparse_step\": 1",
            "\"decoder_sparse_step\": 2",
            "decoder_sparse_step: 2 is not modelled",
        ),
        (
            "\"num_experts_per_tok\": 8",
            "\"num_experts_per_tok\": 129",
            "num_experts_per_tok: 129 is out of range 1..=128",
        ),
    ] {
        let changed = text.replace(from, to);
        assert_ne!(changed, text, "{from}");
        let err = hf_config::read(&changed).unwrap_err().to_string();
        assert!(err.contains(expected), "{to}: {err}");
    }
}
