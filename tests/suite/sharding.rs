//! Per-GPU plans of fully sharded runs (`gpus`, `strategies.sharding = full`): one GPU is the
//! unsharded plan to the byte, what is sharded shrinks with the GPUs and the rest does not, the
//! reference case lands on PyTorch's FSDPMemTracker, and what is not planned yet is refused by
//! name.

use vramlab::engine::config::Offload;
use vramlab::engine::device::planner;
use vramlab::engine::overrides::apply_overrides;
use vramlab::engine::plan::{self, Plan};
use vramlab::engine::presets::preset;
use vramlab::engine::{Purpose, RunConfig};

use crate::suite::support::{config, gpu, mib, vramlab_json};

fn sharded(gpus: usize, sharding: &str) -> RunConfig {
    let mut config = config(
        "sort-llama",
        &[
            "strategies.checkpointing=layers",
            &format!("strategies.sharding={sharding}"),
        ],
    );
    config.gpus = gpus;
    config
}

fn planned(config: &RunConfig) -> Plan {
    let gpu = planner().expect("the planning device");
    pollster::block_on(plan::plan(config, &gpu, |_| {})).expect("planned")
}

#[test]
fn a_sharded_plan_shrinks_what_is_sharded_and_one_gpu_is_the_unsharded_plan() {
    // One GPU holds every shard whole: nothing is cut or gathered, and the plan is the
    // unsharded one to the byte (each from a process of its own, as the pools' pages are).
    let on_one = |sharding: &str| -> Plan {
        vramlab_json(&[
            "plan",
            "--preset",
            "sort-llama",
            "--set",
            "strategies.checkpointing=layers",
            "--set",
            &format!("strategies.sharding={sharding}"),
            "--gpus",
            "1",
            "--json",
        ])
    };
    let (whole, one) = (on_one("none"), on_one("full"));
    assert_eq!(one.sharded, None);
    assert_eq!(one.high_water_in_use_bytes, whole.high_water_in_use_bytes);
    assert_eq!(
        one.high_water_reserved_bytes,
        whole.high_water_reserved_bytes
    );
    assert_eq!(
        one.high_water_in_use_by_phase,
        whole.high_water_in_use_by_phase
    );
    assert_eq!(one.reserved_by_phase, whole.reserved_by_phase);
    assert_eq!(one.category_sizes, whole.category_sizes);
    let (_lock, _) = gpu();
    let sizes = |plan: &Plan| plan.category_sizes.expect("a step's categories");
    let mut before = whole;
    for gpus in [2, 4, 8] {
        let plan = planned(&sharded(gpus, "full"));
        let share = plan.sharded.expect("a sharded plan says what it holds");
        assert_eq!(share.gpus, gpus);
        assert_eq!(
            plan.params, before.params,
            "the model's own count stays whole"
        );
        assert_eq!(share.model_values, plan.params);
        // Each parameter's shard: ceil(rows / N) rows, so at least 1/N of the model, and
        // less than 1/N plus a row of each parameter.
        let values = share.model_values;
        assert!(
            share.shard_values * gpus as u64 >= values,
            "{gpus}: {share:?}"
        );
        assert!(
            share.shard_values < values / gpus as u64 + values / 16,
            "{share:?}"
        );
        // The allocator's figures: the shards as stored (pool alignment on top), AdamW's two
        // moments of each, a gradient no larger than its shard.
        let (now, was) = (sizes(&plan), sizes(&before));
        let stored = share.shard_values * 4;
        assert!(
            (stored..stored + 4096).contains(&now.parameter),
            "{gpus}: parameters {} for {stored} bytes of shards",
            now.parameter
        );
        assert!(
            now.optimizer_state.abs_diff(2 * now.parameter) <= 4096,
            "{gpus}: {now:?}"
        );
        assert!(now.gradient <= now.parameter, "{gpus}: {now:?}");
        // Sharded categories shrink with the GPUs; the activations (one GPU's own batch) do
        // not; and the peak falls.
        for (what, now, was) in [
            ("parameter", now.parameter, was.parameter),
            ("optimizer state", now.optimizer_state, was.optimizer_state),
            ("gradient", now.gradient, was.gradient),
        ] {
            assert!(now < was, "{gpus} GPUs: {what} {now} after {was}");
        }
        assert!(
            now.activation.abs_diff(was.activation) < was.activation / 100,
            "{gpus}: activations {} after {}",
            now.activation,
            was.activation
        );
        assert!(
            plan.high_water_in_use_bytes < before.high_water_in_use_bytes,
            "{gpus} GPUs: {} after {}",
            plan.high_water_in_use_bytes,
            before.high_water_in_use_bytes
        );
        before = plan;
    }
}

#[test]
fn data_parallel_holds_the_whole_run_and_a_copy_of_its_gradients_in_ddps_buckets() {
    // DDP with its defaults: every GPU holds the one-GPU run, and from set-up on the flat
    // buckets its trained gradients are copied into, all-reduced and copied back out of (25 MB
    // each, the first 1 MiB). Per-layer checkpointing as the sharded plans take it; the AdamW
    // foreach temporary (the trained parameters' size) rises over the step.
    let (_lock, _) = gpu();
    let sizes = |plan: &Plan| plan.category_sizes.expect("a step's categories");
    let whole = planned(&sharded(1, "none"));
    let trained_bytes = whole.trainable_params * 4;
    for gpus in [2, 8] {
        let plan = planned(&sharded(gpus, "none"));
        let run = plan
            .sharded
            .expect("a data-parallel plan says what it holds");
        assert_eq!(
            (run.gpus, run.trained_values),
            (gpus, whole.trainable_params)
        );
        assert_eq!(
            run.shard_values, whole.params,
            "every GPU holds every value"
        );
        let (now, was) = (sizes(&plan), sizes(&whole));
        assert_eq!(
            (now.parameter, now.optimizer_state, now.input),
            (was.parameter, was.optimizer_state, was.input),
            "{gpus} GPUs: what is not a gradient is the one-GPU run's"
        );
        // The buckets as the allocator counted them: the trained gradients' bytes, a little
        // alignment on top of each bucket.
        let buckets = now.gradient - was.gradient;
        assert!(
            (trained_bytes..trained_bytes + 4096).contains(&buckets),
            "{gpus} GPUs: buckets {buckets} for {trained_bytes} bytes of trained gradients"
        );
        assert!(
            plan.high_water_in_use_bytes >= whole.high_water_in_use_bytes + buckets,
            "{gpus} GPUs: {} for the one-GPU {} and buckets of {buckets}",
            plan.high_water_in_use_bytes,
            whole.high_water_in_use_bytes
        );
    }
}

#[test]
fn zero_1_keeps_the_optimizer_state_of_its_share_beside_data_parallels_run() {
    // ZeRO-1 as PyTorch runs it (DDP and ZeroRedundancyOptimizer): each GPU steps whole
    // parameters, the largest first to the emptiest GPU, and keeps their state alone; the
    // plan is the GPU with the largest share. Everything else is data parallel's.
    let (_lock, _) = gpu();
    let sizes = |plan: &Plan| plan.category_sizes.expect("a step's categories");
    for gpus in [2, 8] {
        let ddp = planned(&sharded(gpus, "none"));
        let zero = planned(&sharded(gpus, "optimizer"));
        let share = zero.sharded.expect("a ZeRO-1 plan says what it holds");
        assert_eq!(share.trained_values, ddp.trainable_params);
        // The largest share: at least an even one, short of it by less than a parameter.
        assert!(
            share.optimizer_values * gpus as u64 >= share.trained_values
                && share.optimizer_values < share.trained_values,
            "{gpus} GPUs: {share:?}"
        );
        let (zero_sizes, ddp_sizes) = (sizes(&zero), sizes(&ddp));
        assert_eq!(
            (zero_sizes.parameter, zero_sizes.input, zero_sizes.gradient),
            (ddp_sizes.parameter, ddp_sizes.input, ddp_sizes.gradient),
            "{gpus} GPUs: parameters, the batch, gradients and buckets are data parallel's"
        );
        // AdamW's two moments of the share's values (pool alignment on top).
        let moments = 2 * 4 * share.optimizer_values;
        assert!(
            (moments..moments + 8192).contains(&zero_sizes.optimizer_state),
            "{gpus} GPUs: state {} for {moments} bytes of moments",
            zero_sizes.optimizer_state
        );
        assert!(
            zero.high_water_in_use_bytes < ddp.high_water_in_use_bytes,
            "{gpus} GPUs: {} against data parallel's {}",
            zero.high_water_in_use_bytes,
            ddp.high_water_in_use_bytes
        );
    }
}

/// Issue 55's reference: PyTorch 2.15's FSDPMemTracker (fake process group of 8 ranks,
/// `fully_shard` on each block and then the root, fp32, AdamW foreach, SDPA, every block
/// checkpointed, 1 x 2,048 tokens a rank, steady second step) measured 17,425 MiB a rank
/// (../shared/STACK-NOTES.md). The plan is deterministic, so docs/plans.md's figure is this.
#[test]
fn a_fully_sharded_llama_2_7b_plans_near_pytorchs_fsdp_tracker() {
    let plan: Plan = vramlab_json(&[
        "plan",
        "--hf-config",
        "tests/data/hf/llama-2-7b.json",
        "--gpus",
        "8",
        "--set",
        "strategies.sharding=full",
        "--set",
        "strategies.checkpointing=layers",
        "--set",
        "strategies.attention=fused",
        "--set",
        "optimizer=adamw",
        "--set",
        "batch_size=1",
        "--set",
        "data.seq_len=2048",
        "--json",
    ]);
    let share = plan.sharded.expect("sharded");
    assert_eq!(share.shard_values, 6_738_415_616 / 8);
    let ratio = mib(plan.high_water_in_use_bytes) / 17_425.0;
    assert!(
        (0.95..=1.05).contains(&ratio),
        "{:.0} MiB a GPU, {ratio:.3}x PyTorch's",
        mib(plan.high_water_in_use_bytes)
    );
}

/// LoRA under full sharding, over an f16 base: the frozen base is sharded and gathered like any
/// weight, the adapters (f32) are what trains, and the counts are the whole model's.
#[test]
fn a_sharded_lora_run_keeps_a_shard_of_the_base_and_trains_its_adapters() {
    let (_lock, _) = gpu();
    let lora = |gpus: usize| {
        let mut config = config(
            "sort-llama",
            &[
                "strategies.checkpointing=layers",
                "strategies.sharding=full",
                "strategies.trainable=lora",
                "strategies.weight_dtype=f16",
            ],
        );
        config.gpus = gpus;
        planned(&config)
    };
    let whole = lora(1);
    let sizes = |plan: &Plan| plan.category_sizes.expect("a step's categories");
    for gpus in [2, 4] {
        let plan = lora(gpus);
        let share = plan.sharded.expect("sharded");
        // The whole model's counts, as the unsharded plan gives them.
        assert_eq!(
            (plan.params, plan.trainable_params, plan.adapter_params),
            (whole.params, whole.trainable_params, whole.adapter_params),
            "{gpus} GPUs"
        );
        assert_eq!(share.trained_values, share.adapter_values);
        assert_eq!(share.adapter_values, whole.adapter_params);
        // Two bytes a stored base value, four an adapter's (f32 over the f16 base, PEFT's
        // default); the adapters' moments are a shard of theirs.
        let adapter_shard = share.adapter_values.div_ceil(gpus as u64);
        let stored = 2 * share.shard_values + 2 * adapter_shard;
        let now = sizes(&plan);
        assert!(
            (stored..stored + 4096).contains(&now.parameter),
            "{gpus}: parameters {} for {stored} bytes of f16 shards and f32 adapters",
            now.parameter
        );
        let adapters = 4 * share.adapter_values / gpus as u64;
        assert!(
            now.optimizer_state >= 2 * adapters && now.optimizer_state < 2 * adapters + 8192,
            "{gpus}: AdamW state {} for adapters of {adapters} bytes a GPU",
            now.optimizer_state
        );
        assert!(now.parameter < sizes(&whole).parameter, "{gpus}: {now:?}");
    }
}

/// QLoRA under full sharding, as FSDP-QLoRA runs it: each GPU keeps its shard of every body
/// matrix's packed codes and the matrix's block scales whole (bitsandbytes' quant state stays on
/// every rank), beside the f16 rest and the f32 adapters, sharded; with its parameters on the
/// host, the GPU keeps none of them and the host all of its share.
#[test]
fn a_sharded_qlora_run_keeps_a_shard_of_the_codes_and_its_quant_state_whole() {
    let (_lock, _) = gpu();
    let qlora = |gpus: usize, offload: Offload| {
        // A feed-forward of 256 and 2 key/value heads of 16: every shard's rows divide by the
        // 4-bit words at 2 and 4 GPUs, so every body matrix stays quantized.
        let mut config = config(
            "sort-llama",
            &[
                "model.ff=256",
                "strategies.checkpointing=layers",
                "strategies.sharding=full",
                "strategies.trainable=lora",
                "strategies.weight_dtype=q4",
            ],
        );
        config.gpus = gpus;
        config.strategies.offload = offload;
        planned(&config)
    };
    let whole = qlora(1, Offload::None);
    let stored = whole.quantized.expect("a quantized base");
    assert_eq!(stored.untiled_matrices, 0, "{stored:?}");
    let sizes = |plan: &Plan| plan.category_sizes.expect("a step's categories");
    let mut before = sizes(&whole).parameter;
    for gpus in [2u64, 4] {
        let plan = qlora(gpus as usize, Offload::None);
        let share = plan.sharded.expect("sharded");
        // The whole model's counts, as one GPU's plan gives them.
        assert_eq!(plan.quantized, Some(stored), "{gpus} GPUs");
        assert_eq!(
            (share.quantized_values, share.quantized_codes_bytes),
            (stored.values, stored.packed_bytes)
        );
        assert_eq!(
            (plan.params, plan.adapter_params),
            (whole.params, whole.adapter_params)
        );
        // Bytes a GPU keeps: its share of the codes, every block scale, two bytes a value of
        // the other shards and four an adapter's (a shard each, the ranks dividing evenly).
        let adapters = share.adapter_values / gpus;
        let f16_values = share.shard_values - stored.values / gpus - adapters;
        let expected =
            stored.packed_bytes / gpus + stored.scale_bytes + 2 * f16_values + 4 * adapters;
        let now = sizes(&plan).parameter;
        assert!(
            (expected..expected + 4096).contains(&now),
            "{gpus} GPUs: parameters {now} for {expected} bytes of shards and quant state"
        );
        assert!(now < before, "{gpus} GPUs: {now} after {before}");
        before = now;
        assert!(plan.high_water_in_use_bytes < whole.high_water_in_use_bytes);
    }
    // On the host: the GPU keeps what a plan keeps with no parameter at all (the rotary
    // tables), the host the same shares as above, the adapters' with their gradients and
    // AdamW's two moments.
    let on_host = qlora(2, Offload::Parameters);
    let mut f32_offload = sharded(2, "full");
    f32_offload.strategies.offload = Offload::Parameters;
    let none_kept = planned(&f32_offload);
    assert_eq!(sizes(&on_host).parameter, sizes(&none_kept).parameter);
    let share = on_host.sharded.expect("sharded");
    let adapters = share.adapter_values / 2;
    let f16_values = share.shard_values - stored.values / 2 - adapters;
    assert_eq!(
        on_host.host_bytes,
        Some(stored.packed_bytes / 2 + stored.scale_bytes + 2 * f16_values + 16 * adapters)
    );
}

/// Mixed precision under full sharding (FSDP2's `MixedPrecisionPolicy`, f16 for bf16): the
/// shards, their gradients and AdamW's state stay f32, each gather casts to f16, and no f16
/// copy of the model is kept beside the shards.
#[test]
fn mixed_precision_keeps_f32_shards_and_gathers_them_in_f16() {
    let (_lock, _) = gpu();
    let plan_of = |set: &str| {
        let mut config = config(
            "sort-llama",
            &[
                "strategies.checkpointing=layers",
                "strategies.sharding=full",
                set,
            ],
        );
        config.gpus = 4;
        planned(&config)
    };
    let (f32_run, mixed, f16_run) = (
        plan_of("strategies.mixed_precision=off"),
        plan_of("strategies.mixed_precision=f16"),
        plan_of("strategies.weight_dtype=f16"),
    );
    let sizes = |plan: &Plan| plan.category_sizes.expect("a step's categories");
    let (was, now, half) = (sizes(&f32_run), sizes(&mixed), sizes(&f16_run));
    assert_eq!(
        (now.parameter, now.optimizer_state),
        (was.parameter, was.optimizer_state),
        "f32 shards and their state"
    );
    // f32 shard gradients as the f32 run's, and the loss scaler's one inf-check value (a
    // 32-byte slot) beside them.
    assert!(
        (was.gradient..=was.gradient + 32).contains(&now.gradient),
        "gradients {} against {}",
        now.gradient,
        was.gradient
    );
    // Gathered in f16 and computing in f16 as the f16 run does, and nothing more kept: a kept
    // f16 copy of the shards would add two bytes a shard value.
    assert_eq!(
        now.activation, half.activation,
        "activations beside the f16 run's ({} in f32)",
        was.activation
    );
    assert!(
        mixed.high_water_in_use_bytes < f32_run.high_water_in_use_bytes,
        "{} against {}",
        mixed.high_water_in_use_bytes,
        f32_run.high_water_in_use_bytes
    );
}

/// `offload = activations` (torchtune's activation offloading): each checkpointed block's
/// input waits on the host between forward and its recomputation, so the GPU keeps none of
/// them past forward and the host holds every one, counted to the byte; a run refuses it, and
/// what is not planned of offload is refused by name.
#[test]
fn offloaded_activations_wait_on_the_host_and_leave_the_gpu() {
    let (_lock, _) = gpu();
    // Set after `config`, which validates for a run.
    let with = |offload: Offload| {
        let mut config = config("sort-llama", &["strategies.checkpointing=layers"]);
        config.strategies.offload = offload;
        config
    };
    let c = with(Offload::Activations);
    let (kept, offloaded) = (planned(&with(Offload::None)), planned(&c));
    let input = (c.batch_size * c.data.sample_tokens() * c.model.width * 4) as u64;
    assert_eq!(kept.host_bytes, None);
    assert_eq!(
        offloaded.host_bytes,
        Some(c.model.layers as u64 * input),
        "every block's input, {input} bytes each"
    );
    let activation = |plan: &Plan| plan.category_sizes.expect("categories").activation;
    assert!(
        activation(&kept) >= activation(&offloaded) + c.model.layers as u64 * input,
        "activations {} kept, {} offloaded, {input} a block input",
        activation(&kept),
        activation(&offloaded)
    );
    assert!(offloaded.high_water_in_use_bytes < kept.high_water_in_use_bytes);
    let refused = |config: &RunConfig, purpose: Purpose| {
        config
            .validate_for(purpose)
            .expect_err("refused")
            .to_string()
    };
    assert!(refused(&c, Purpose::Run).contains("planned, not run"));
    assert!(refused(&with(Offload::Parameters), Purpose::Plan).contains("under full sharding"));
    let mut whole = config("sort-llama", &[]);
    whole.strategies.offload = Offload::Activations;
    assert!(refused(&whole, Purpose::Plan).contains("checkpointing = layers"));
}

/// `offload = optimizer` under full sharding (ZeRO-3 with `offload_optimizer`): each gradient
/// shard leaves the GPU after its reduce-scatter and the host's optimizer steps, so the GPU
/// keeps no optimizer state and no step temporary, and the host holds 16 bytes a trained shard
/// value; it is refused where no reduce-scatter hands the gradients over.
#[test]
fn an_offloaded_optimizer_leaves_its_state_and_the_gradients_to_the_host() {
    let (_lock, _) = gpu();
    let with = |offload: Offload| {
        let mut config = sharded(4, "full");
        config.strategies.offload = offload;
        config
    };
    let (on_gpu, on_host) = (
        planned(&with(Offload::None)),
        planned(&with(Offload::Optimizer)),
    );
    let share = on_host.sharded.expect("sharded");
    assert_eq!(on_host.host_bytes, Some(share.optimizer_values * 16));
    let sizes = |plan: &Plan| plan.category_sizes.expect("categories");
    let (was, now) = (sizes(&on_gpu), sizes(&on_host));
    // No moments: what the step still allocates is a scalar's page at most (64 bytes here).
    assert!(
        now.optimizer_state * 1000 < was.optimizer_state,
        "{now:?} against {was:?}"
    );
    assert_eq!(now.parameter, was.parameter);
    assert!(now.gradient < was.gradient, "{now:?} against {was:?}");
    assert!(on_host.high_water_in_use_bytes < on_gpu.high_water_in_use_bytes);
    // No reduce-scatter hands the gradients over: one GPU, data parallel, ZeRO-1.
    for (gpus, sharding) in [(1, "full"), (4, "none"), (4, "optimizer")] {
        let mut unplanned = sharded(gpus, sharding);
        unplanned.strategies.offload = Offload::Optimizer;
        let refused = unplanned
            .validate_for(Purpose::Plan)
            .expect_err("refused")
            .to_string();
        assert!(
            refused.contains("full or gradients sharding"),
            "{gpus} {sharding}: {refused}"
        );
    }
}

/// `offload = parameters` under full sharding (FSDP2's `CPUOffloadPolicy`): the shards, their
/// gradients and the optimizer state live on the host, so the GPU's parameters are the shards'
/// bytes fewer (the model's constants stay), and it keeps no gradient and no optimizer state;
/// what it gathers is whole on any count of GPUs, so one GPU holds what four do but for the
/// shards' copies; the host holds each f32 shard and its gradient and two moments. One GPU plans
/// it too; it is refused without full sharding.
#[test]
fn offloaded_parameters_leave_the_gpu_with_their_gradients_and_state() {
    let (_lock, _) = gpu();
    let with = |gpus: usize, offload: Offload| {
        let mut config = sharded(gpus, "full");
        config.strategies.offload = offload;
        config
    };
    let kept = planned(&with(4, Offload::None));
    let on_host = planned(&with(4, Offload::Parameters));
    let one = planned(&with(1, Offload::Parameters));
    let sizes = |plan: &Plan| plan.category_sizes.expect("categories");
    let (was, now) = (sizes(&kept), sizes(&on_host));
    let share = on_host.sharded.expect("sharded");
    assert_eq!(was.parameter - now.parameter, share.shard_values * 4);
    assert_eq!(on_host.host_bytes, Some(share.shard_values * 16));
    assert_eq!(now.gradient, 0, "{now:?}");
    // What the step still allocates is a scalar's page at most.
    assert!(
        now.optimizer_state * 1000 < was.optimizer_state,
        "{now:?} against {was:?}"
    );
    assert!(on_host.high_water_in_use_bytes < kept.high_water_in_use_bytes);
    let whole = one
        .sharded
        .expect("one GPU's run is cut into a shard of one");
    assert_eq!((whole.gpus, whole.shard_values), (1, whole.model_values));
    assert_eq!(one.host_bytes, Some(whole.shard_values * 16));
    assert_eq!(sizes(&one).parameter, now.parameter);
    let block_bytes = (whole.model_values - whole.root_values) / 2 * 4;
    assert!(
        one.high_water_in_use_bytes
            .abs_diff(on_host.high_water_in_use_bytes)
            <= block_bytes,
        "{} on one GPU, {} on four",
        one.high_water_in_use_bytes,
        on_host.high_water_in_use_bytes
    );
    for (gpus, sharding) in [(4, "gradients"), (1, "none")] {
        let mut unplanned = sharded(gpus, sharding);
        unplanned.strategies.offload = Offload::Parameters;
        let refused = unplanned
            .validate_for(Purpose::Plan)
            .expect_err("refused")
            .to_string();
        assert!(
            refused.contains("under full sharding"),
            "{gpus} {sharding}: {refused}"
        );
    }
}

/// SHARD_GRAD_OP (`gradients`, FSDP2's `reshard_after_forward=False`) shards what FULL_SHARD
/// shards, and keeps each block gathered from its forward pass to its backward.
#[test]
fn shard_grad_op_keeps_every_block_gathered_through_forward() {
    let (_lock, _) = gpu();
    let (full, kept) = (
        planned(&sharded(4, "full")),
        planned(&sharded(4, "gradients")),
    );
    let sizes = |plan: &Plan| plan.category_sizes.expect("a step's categories");
    let (f, k) = (sizes(&full), sizes(&kept));
    assert_eq!(
        (f.parameter, f.optimizer_state, f.gradient),
        (k.parameter, k.optimizer_state, k.gradient)
    );
    // At the end of forward every block but the last is still gathered (the last one's
    // backward comes first and uses it): at least (blocks - 1) x (gathered - shard) more.
    let share = kept.sharded.expect("sharded");
    let blocks = 2u64;
    let body = share.model_values - share.root_values;
    let more = (blocks - 1) * (body / blocks) * 4 * 3 / 4;
    let forward =
        |plan: &Plan| plan.high_water_in_use_by_phase[&vramlab::engine::phase::Phase::Forward];
    assert!(
        forward(&kept) >= forward(&full) + more,
        "forward {} against FULL_SHARD's {} (+{more} expected at least)",
        forward(&kept),
        forward(&full)
    );
}

/// Under a budget a run does not fit on one GPU, the plan says on how few it fits at each
/// sharding, each count planned: the fewest fits, half as many does not.
#[test]
fn a_budget_one_gpu_misses_is_answered_with_the_fewest_gpus_at_each_sharding() {
    let (_lock, _) = gpu();
    let mut config = config(
        "sort-llama",
        &[
            "model.width=512",
            "model.ff=2048",
            "batch_size=4",
            "eval_batch_size=4",
            "strategies.checkpointing=layers",
        ],
    );
    let budget = 75 << 20;
    config.budget = Some(vramlab::engine::config::Budget::Bytes(budget));
    let plan = planned(&config);
    assert_eq!(plan.fits, Some(false));
    let shardings: Vec<_> = plan.fewest_gpus.iter().map(|f| f.sharding.name()).collect();
    assert_eq!(shardings, ["full", "gradients", "optimizer"]);
    for fewest in &plan.fewest_gpus {
        let Some(gpus) = fewest.gpus else {
            // ZeRO-1 keeps the parameters and gradients whole: past the budget on any count,
            // as its estimate said before anything was planned.
            assert_eq!(fewest.sharding.name(), "optimizer", "{fewest:?}");
            assert!(fewest.planned.is_empty(), "{fewest:?}");
            continue;
        };
        assert!(gpus >= 2, "{fewest:?}");
        assert!(
            fewest.high_water_in_use_bytes.unwrap() <= budget,
            "{fewest:?}"
        );
        assert!(fewest.planned.contains(&(gpus, true)), "{fewest:?}");
        if gpus > 2 {
            assert!(fewest.planned.contains(&(gpus / 2, false)), "{fewest:?}");
        }
    }
    let full = &plan.fewest_gpus[0];
    assert!(
        full.gpus.unwrap() <= plan.fewest_gpus[1].gpus.unwrap(),
        "{:?}",
        plan.fewest_gpus
    );
}

#[test]
fn what_sharding_cannot_plan_is_refused_by_name() {
    // (preset, sets beside gpus = 2 and full sharding with per-layer checkpointing, the
    // field, text)
    let cases: &[(&str, &[&str], &str, &str)] = &[
        (
            "sort-llama",
            &["gpus=0"],
            "gpus",
            "0 is out of range 1..=1024",
        ),
        (
            "sort-llama",
            &["gpus=2000"],
            "gpus",
            "out of range 1..=1024",
        ),
        (
            "sort-llama",
            &["strategies.sharding=none", "optimizer=sgd"],
            "optimizer",
            "data parallel",
        ),
        (
            "spiral-mlp",
            &[
                "strategies.sharding=none",
                "strategies.checkpointing=none",
                "strategies.kernels=fused",
            ],
            "strategies.kernels",
            "data parallel",
        ),
        (
            "sort-llama",
            &["strategies.sharding=optimizer", "optimizer=lion"],
            "optimizer",
            "ZeRO-1",
        ),
        (
            "sort-llama",
            &["strategies.checkpointing=none"],
            "strategies.checkpointing",
            "planned with layers",
        ),
        (
            "sort-llama",
            &["strategies.mixed_precision=f16_unscaled"],
            "strategies.mixed_precision",
            "weight_dtype = f16",
        ),
        (
            "sort-llama",
            &["optimizer=sgd"],
            "optimizer",
            "adam or adamw",
        ),
        ("sort-mixtral", &[], "model.experts", "mixture of experts"),
        (
            "sort-gpt",
            &[],
            "strategies.sharding",
            "llama-built families",
        ),
    ];
    for &(base, sets, field, text) in cases {
        let sharded = [
            "gpus=2",
            "strategies.sharding=full",
            "strategies.checkpointing=layers",
        ];
        let err = apply_overrides(
            preset(base).unwrap(),
            sharded.into_iter().chain(sets.iter().copied()),
        )
        .and_then(|config| config.validate_for(Purpose::Plan))
        .expect_err(&format!("{base} {sets:?} should be refused"));
        assert_eq!(err.field(), Some(field), "{base} {sets:?}: {err}");
        assert!(err.to_string().contains(text), "{base} {sets:?}: {err}");
    }
    // A run trains on one device: several are planned, not run.
    let run = apply_overrides(
        preset("sort-llama").unwrap(),
        [
            "gpus=2",
            "strategies.sharding=full",
            "strategies.checkpointing=layers",
        ],
    )
    .unwrap();
    let err = run.validate().expect_err("a run over two GPUs");
    assert_eq!(err.field(), Some("gpus"), "{err}");
    assert!(err.to_string().contains("planned, not run"), "{err}");
}
