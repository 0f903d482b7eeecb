//! Recipes people hold (tests/data/recipes: real examples from Axolotl, torchtune, LLaMA-Factory
//! and TRL, their sources in its README), read field by field; and `vramlab plan --recipe`
//! against the same config given as `--set` flags.

use vramlab::engine::plan::Plan;
use vramlab::engine::recipe::{self, Kind, ModelRef, Reading, Recipe};

use super::support::{InRepo, vramlab, vramlab_json};

const RECIPES: InRepo = InRepo("tests/data/recipes");

fn parse(path: &str) -> Recipe {
    let text = std::fs::read_to_string(format!("{RECIPES}/{path}")).unwrap();
    Recipe::parse(&text).unwrap_or_else(|err| panic!("{path}: {err}"))
}

fn reading(path: &str, beside: &[&str]) -> Reading {
    let beside: Vec<(String, Recipe)> = beside.iter().map(|p| (p.to_string(), parse(p))).collect();
    recipe::read(&parse(path), &beside).unwrap()
}

fn refused(r: &Reading) -> Vec<&str> {
    r.refused().map(|l| l.field.as_str()).collect()
}

fn line_of<'a>(r: &'a Reading, field: &str) -> &'a recipe::Line {
    r.lines
        .iter()
        .find(|l| l.field == field)
        .unwrap_or_else(|| panic!("no line for {field}"))
}

/// Every fixture read: the `--set`s each maps to, the fields it refuses by name, and nothing
/// of a fixture left unread that its project documents.
#[test]
fn each_fixture_maps_its_fields_and_names_what_it_refuses() {
    let lora_sets = |extra: &[&'static str]| -> Vec<&'static str> {
        let mut sets = vec![
            "strategies.trainable=lora",
            "strategies.lora_rank=8",
            "strategies.lora_alpha=16",
        ];
        sets.extend_from_slice(extra);
        sets
    };

    let axolotl = reading("axolotl/qlora.yml", &[]);
    assert_eq!(
        axolotl.model,
        Some(ModelRef::Hub("NousResearch/Meta-Llama-3-8B".into()))
    );
    assert_eq!(
        axolotl.sets,
        [
            "strategies.trainable=lora",
            "strategies.lora_rank=32",
            "strategies.lora_alpha=16",
            "strategies.weight_dtype=q4",
            "data.seq_len=4096",
            "batch_size=8",
            "eval_batch_size=2",
            "strategies.grad_accumulation=4",
            "strategies.checkpointing=layers",
            "optimizer=adamw",
            "strategies.attention=fused",
        ]
    );
    assert_eq!(refused(&axolotl), ["lora_dropout"]);
    assert_eq!(line_of(&axolotl, "lora_dropout").line, Some(27));
    assert_eq!(line_of(&axolotl, "learning_rate").kind, Kind::Ignored);

    let axolotl_8bit = reading("axolotl/lora-8b.yml", &[]);
    assert!(
        axolotl_8bit
            .sets
            .contains(&"strategies.weight_dtype=q8".to_string())
    );
    assert!(
        axolotl_8bit
            .sets
            .contains(&"optimizer=adamw8bit".to_string())
    );
    assert_eq!(
        refused(&axolotl_8bit),
        ["lora_dropout", "lora_modules_to_save"]
    );

    let sharded = reading("axolotl/qlora-fsdp-70b.yaml", &[]);
    assert!(sharded.shards);
    assert_eq!(
        sharded.gpus, None,
        "Axolotl's YAML does not count its processes"
    );
    assert_eq!(refused(&sharded), ["lora_dropout"]);
    assert!(
        sharded
            .sets
            .contains(&"strategies.offload=parameters".to_string())
    );

    let full = reading("axolotl/fft-8b-liger-fsdp.yaml", &[]);
    assert!(full.sets.contains(&"strategies.sharding=full".to_string()));
    assert!(
        full.sets
            .contains(&"strategies.cross_entropy=fused".to_string())
    );
    assert_eq!(
        refused(&full),
        ["liger_rope", "liger_rms_norm", "liger_glu_activation",]
    );

    let qlora = reading("torchtune/8B_qlora_single_device.yaml", &[]);
    let Some(ModelRef::Builder { component, .. }) = &qlora.model else {
        panic!("{:?}", qlora.model)
    };
    assert_eq!(component, "torchtune.models.llama3_1.qlora_llama3_1_8b");
    assert_eq!(
        qlora.sets,
        [
            "strategies.trainable=lora",
            "strategies.lora_rank=8",
            "strategies.lora_alpha=16",
            "strategies.weight_dtype=q4",
            "data.seq_len=2048",
            "batch_size=16",
            "eval_batch_size=2",
            "strategies.grad_accumulation=8",
            "strategies.checkpointing=layers",
            "optimizer=adamw",
            "strategies.cross_entropy=fused",
        ]
    );
    assert_eq!(refused(&qlora), ["model.lora_attn_modules"]);
    assert!(
        line_of(&qlora, "model.lora_attn_modules")
            .text
            .contains("leaves out k_proj")
    );
    assert_eq!(line_of(&qlora, "tokenizer.max_seq_len").kind, Kind::Ignored);
    let planned = qlora
        .lines
        .iter()
        .find(|l| l.kind == Kind::Default)
        .unwrap();
    assert!(
        planned.text.contains("data.seq_len=2048"),
        "{}",
        planned.text
    );

    let distributed = reading("torchtune/8B_full.yaml", &[]);
    assert_eq!(distributed.gpus, Some(4));
    assert!(
        distributed
            .sets
            .contains(&"strategies.sharding=full".to_string())
    );
    assert!(
        distributed
            .sets
            .contains(&"strategies.weight_dtype=f16".to_string())
    );
    assert_eq!(refused(&distributed), Vec::<&str>::new());

    let lora = reading("llama-factory/qwen3_lora_sft.yaml", &[]);
    assert_eq!(
        lora.sets,
        lora_sets(&[
            "strategies.weight_dtype=f16",
            "data.seq_len=2048",
            "batch_size=8",
            "eval_batch_size=1",
            "strategies.grad_accumulation=8",
            "strategies.checkpointing=layers",
            "optimizer=adamw",
            "strategies.attention=fused",
        ])
    );
    assert_eq!(refused(&lora), Vec::<&str>::new());
    let otfq = reading("llama-factory/qwen3_lora_sft_otfq.yaml", &[]);
    assert!(
        otfq.sets
            .contains(&"strategies.weight_dtype=q4".to_string())
    );
    assert_eq!(refused(&otfq), Vec::<&str>::new());

    let zero3 = reading(
        "llama-factory/qwen3_full_sft.yaml",
        &["llama-factory/examples/deepspeed/ds_z3_config.json"],
    );
    assert!(
        zero3.sets.contains(&"strategies.sharding=full".to_string()),
        "{:?}",
        zero3.sets
    );
    assert!(
        zero3
            .sets
            .contains(&"strategies.weight_dtype=f16".to_string())
    );
    assert_eq!(
        line_of(&zero3, "zero_optimization.stage").kind,
        Kind::Mapped
    );

    // ZeRO-3 with offload_param and offload_optimizer on cpu: parameters on the host.
    let offloaded = reading(
        "llama-factory/qwen3_full_sft.yaml",
        &["llama-factory/examples/deepspeed/ds_z3_offload_config.json"],
    );
    assert!(
        offloaded
            .sets
            .contains(&"strategies.offload=parameters".to_string()),
        "{:?}",
        offloaded.sets
    );

    let trl = reading("trl/example_config.yaml", &["trl/fsdp2.yaml"]);
    assert_eq!(trl.gpus, Some(8));
    assert!(
        trl.sets.contains(&"data.seq_len=1024".to_string()),
        "TRL's default max_length"
    );
    assert!(trl.sets.contains(&"strategies.sharding=full".to_string()));
    assert_eq!(
        line_of(&trl, "fsdp_config.fsdp_reshard_after_forward").kind,
        Kind::Mapped
    );
    let zero = reading("trl/example_config.yaml", &["trl/zero3.yaml"]);
    assert!(zero.sets.contains(&"strategies.sharding=full".to_string()));

    // Every fixture: no field its project documents is left unread.
    for (path, beside) in [
        ("axolotl/qlora.yml", vec![]),
        ("axolotl/lora-8b.yml", vec![]),
        ("axolotl/qlora-fsdp-70b.yaml", vec![]),
        ("axolotl/fft-8b-liger-fsdp.yaml", vec![]),
        ("torchtune/8B_qlora_single_device.yaml", vec![]),
        ("torchtune/8B_lora_single_device.yaml", vec![]),
        ("torchtune/70B_lora.yaml", vec![]),
        ("llama-factory/qwen3_lora_sft.yaml", vec![]),
        ("llama-factory/qwen3_lora_sft_otfq.yaml", vec![]),
        (
            "llama-factory/qwen3_full_sft.yaml",
            vec!["llama-factory/examples/deepspeed/ds_z3_offload_config.json"],
        ),
        ("trl/example_config.yaml", vec!["trl/zero3.yaml"]),
    ] {
        let r = reading(path, &beside);
        let unread: Vec<&str> = r
            .lines
            .iter()
            .filter(|l| l.kind == Kind::Unread)
            .map(|l| l.field.as_str())
            .collect();
        assert!(unread.is_empty(), "{path}: unread {unread:?}");
    }
}

/// `plan --recipe` plans what the same config given as flags plans, to the byte; a refusal
/// stops with exit 2 naming the field and its line, and `--allow-unmodelled` plans.
#[test]
fn a_recipe_plans_as_its_flags_and_refuses_by_name() {
    let hf = &InRepo("tests/data/hf/qwen3-8b.json").to_string();
    let qlora = format!("{RECIPES}/llama-factory/qwen3_lora_sft_otfq.yaml");
    // Two blocks keep the plans short; the recipe's micro-batch of 1 over 8 accumulation steps
    // is planned as it is.
    let by_recipe: Plan = vramlab_json(&[
        "plan",
        "--recipe",
        &qlora,
        "--hf-config",
        hf,
        "--set",
        "model.layers=2",
        "--json",
    ]);
    let mut flags = vec!["plan", "--hf-config", hf];
    for set in [
        "strategies.trainable=lora",
        "strategies.lora_rank=8",
        "strategies.lora_alpha=16",
        "strategies.weight_dtype=q4",
        "data.seq_len=2048",
        "batch_size=8",
        "eval_batch_size=1",
        "strategies.grad_accumulation=8",
        "strategies.checkpointing=layers",
        "optimizer=adamw",
        "strategies.attention=fused",
        "model.layers=2",
    ] {
        flags.extend(["--set", set]);
    }
    flags.push("--json");
    let by_flags: Plan = vramlab_json(&flags);
    assert_eq!(
        by_recipe.config.to_json_pretty(),
        by_flags.config.to_json_pretty()
    );
    assert_eq!(
        by_recipe.high_water_in_use_bytes,
        by_flags.high_water_in_use_bytes
    );
    assert_eq!(
        by_recipe.high_water_reserved_bytes,
        by_flags.high_water_reserved_bytes
    );

    let axolotl = format!("{RECIPES}/axolotl/qlora.yml");
    let out = vramlab(&["plan", "--recipe", &axolotl, "--hf-config", hf]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("lora_dropout (line 27)"), "{stderr}");
    assert!(stderr.contains("--allow-unmodelled"), "{stderr}");

    let sharded = format!("{RECIPES}/axolotl/qlora-fsdp-70b.yaml");
    let out = vramlab(&["plan", "--recipe", &sharded, "--allow-unmodelled"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--gpus: "), "{stderr}");

    let bad = std::env::temp_dir().join("vramlab-bad-recipe.yaml");
    std::fs::write(&bad, "base_model: a/b\nmicro_batch_size: [1\n").unwrap();
    let out = vramlab(&["plan", "--recipe", bad.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("line 3, column"), "{stderr}");
}

/// A recipe of each format written back: its file, the model planned for it, the budget (below
/// what the recipe plans, above what the first change its format can say plans) and a line that
/// change writes.
struct WriteCase {
    recipe: &'static str,
    hf_config: Option<&'static str>,
    layers: &'static str,
    seq_len: &'static str,
    budget: &'static str,
    /// `--gpus`, for a recipe launched over several.
    gpus: Option<&'static str>,
    written: &'static str,
}

/// Small enough to plan in seconds: a few blocks, a 32,000-token vocabulary (so the blocks, not
/// the token table, hold what a change saves), short sequences. Each budget is between the
/// figures `vramlab plan` prints for the recipe and for its change with the same flags.
const WRITE_CASES: [WriteCase; 4] = [
    // 1.90 GiB planned; a micro-batch of 1 with twice the accumulation steps: 1.56 GiB.
    WriteCase {
        recipe: "axolotl/lora-8b.yml",
        hf_config: Some("llama-3.1-8b-instruct.json"),
        layers: "model.layers=2",
        seq_len: "data.seq_len=1024",
        budget: "1.75GiB",
        gpus: None,
        written: "\nmicro_batch_size: 1\n",
    },
    // 1.79 GiB planned; the QLoRA builder (its factors in f32, as vramlab plans a 4-bit
    // base's): 1.23 GiB.
    WriteCase {
        recipe: "torchtune/8B_lora_single_device.yaml",
        hf_config: None,
        layers: "model.layers=2",
        seq_len: "data.seq_len=512",
        budget: "1.6GiB",
        gpus: None,
        written: "\n  _component_: torchtune.models.llama3_1.qlora_llama3_1_8b\n",
    },
    // The full fine-tune launched on 4 GPUs without sharding (DDP), 1.16 GiB asked on each;
    // sharded as FSDP's SHARD_GRAD_OP (transformers' `fsdp` argument): 742 MiB, the same
    // training (ahead of LoRA, which is not).
    WriteCase {
        recipe: "trl/example_config.yaml",
        hf_config: Some("qwen2-0.5b.json"),
        layers: "model.layers=2",
        seq_len: "data.seq_len=256",
        budget: "1GiB",
        gpus: Some("4"),
        written: "\nfsdp: shard_grad_op auto_wrap\n",
    },
    // 428 MiB planned; a 4-bit base: 340 MiB.
    WriteCase {
        recipe: "llama-factory/qwen3_lora_sft.yaml",
        hf_config: Some("qwen3-0.6b.json"),
        layers: "model.layers=4",
        seq_len: "data.seq_len=512",
        budget: "390MiB",
        gpus: None,
        written: "\nquantization_bit: 4\n",
    },
];

/// `--write-recipe`: a recipe of each format that does not fit its budget is written back with
/// the first planned change that fits, as its project's own fields, every comment of the user's
/// kept; planned again from the written file, it fits.
#[test]
fn a_recipe_that_does_not_fit_is_written_back_as_one_that_fits() {
    for case in WRITE_CASES {
        let source = format!("{RECIPES}/{}", case.recipe);
        let name = case.recipe.replace('/', "-");
        let written = std::env::temp_dir().join(format!("vramlab-written-{name}"));
        let _ = std::fs::remove_file(&written);
        let hf = case
            .hf_config
            .map(|file| format!("{}/{file}", InRepo("tests/data/hf")));
        let mut common = vec!["--allow-unmodelled", "--budget", case.budget];
        if let Some(hf) = &hf {
            common.extend(["--hf-config", hf]);
        }
        if let Some(gpus) = case.gpus {
            common.extend(["--gpus", gpus]);
        }
        for set in [
            case.layers,
            case.seq_len,
            "model.vocab=32000",
            "data.vocab=32000",
        ] {
            common.extend(["--set", set]);
        }
        let mut args = vec!["plan", "--recipe", &source];
        args.extend(&common);
        let out_path = written.to_str().unwrap();
        args.extend(["--write-recipe", out_path]);
        let out = vramlab(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{}: {stdout}\n{stderr}", case.recipe);
        assert!(
            stdout.contains("does not fit") && stderr.contains("wrote "),
            "{}: {stdout}\n{stderr}",
            case.recipe
        );

        let before = std::fs::read_to_string(&source).unwrap();
        let after = std::fs::read_to_string(&written).unwrap();
        for comment in before.lines().filter(|l| l.trim_start().starts_with('#')) {
            assert!(after.contains(comment), "{comment:?} lost:\n{after}");
        }
        assert!(after.contains(case.written), "{}:\n{after}", case.recipe);
        assert!(after.contains("# vramlab: "), "{after}");
        assert!(after.lines().count() > before.lines().count());

        let mut again = vec!["plan", "--recipe", out_path];
        again.extend(&common);
        again.push("--json");
        let replanned: Plan = vramlab_json(&again);
        assert_eq!(replanned.fits, Some(true), "{}:\n{after}", case.recipe);
    }
}
