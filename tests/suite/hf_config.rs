//! Hugging Face config.json files as `--hf-config` reads them: the models vramlab builds from
//! them have the published parameter counts, by the analytic model and by the model built on
//! the planning device; and the binary refuses what it does not model, naming the field.

use vramlab::engine::device::planner;
use vramlab::engine::hf_config;
use vramlab::engine::memory::predict;
use vramlab::engine::presets::preset;
use vramlab::engine::{Purpose, Run, RunConfig};

use super::support::{InRepo, gpu, vramlab};

const DIR: InRepo = InRepo("tests/data/hf");

/// The run `vramlab plan --hf-config FILE` starts from: the family's base preset with the
/// file's model.
fn from_file(file: &str) -> RunConfig {
    let text = std::fs::read_to_string(format!("{DIR}/{file}")).unwrap();
    let hf = hf_config::read(&text).unwrap_or_else(|err| panic!("{file}: {err}"));
    let (config, _) = hf.apply(
        preset(hf.family.base_preset()).unwrap(),
        file,
        hf_config::Stated::default(),
    );
    config.validate_for(Purpose::Plan).unwrap();
    config
}

#[test]
fn hf_configs_build_their_published_parameter_counts() {
    // A plan's dry run is the whole process's: no run may train beside it.
    let (_lock, _) = gpu();
    let gpu = planner().expect("the planning device");
    for (file, published) in [
        ("gpt2.json", 124_439_808),
        ("tinyllama-1.1b-chat-v1.0.json", 1_100_048_384),
        ("llama-2-7b.json", 6_738_415_616),
        ("llama-3.1-8b-instruct.json", 8_030_261_248),
        ("llama-3.1-70b-instruct.json", 70_553_706_496),
        ("mistral-7b-v0.1.json", 7_241_732_096),
        ("qwen2-0.5b.json", 494_032_768),
        ("qwen3-0.6b.json", 596_049_920),
        ("qwen3-8b.json", 8_190_735_360),
        ("gemma-2-2b.json", 2_614_341_888),
        ("gemma-3-1b.json", 999_885_952),
        ("phi-3-mini-4k.json", 3_821_079_552),
        ("mixtral-8x7b-v0.1.json", 46_702_792_704),
        ("qwen3-30b-a3b.json", 30_532_122_624),
    ] {
        let config = from_file(file);
        assert_eq!(
            predict(&config).param_count,
            published,
            "{file}: the estimate"
        );
        let run = Run::plan(config, &gpu).expect("the model builds");
        assert_eq!(
            run.param_counts().model,
            published,
            "{file}: the model built"
        );
    }
}

fn refused(args: &[&str]) -> String {
    let out = vramlab(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn the_binary_refuses_what_it_does_not_model_naming_the_field() {
    let dir = std::env::temp_dir().join(format!("vramlab-hf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let llama = std::fs::read_to_string(format!("{DIR}/llama-2-7b.json")).unwrap();
    let moe = write(
        "moe.json",
        llama.replacen('{', "{\n  \"num_local_experts\": 8,", 1),
    );
    let err = refused(&["plan", "--hf-config", &moe]);
    assert!(
        err.contains("--hf-config")
            && err.contains("num_local_experts: not a field vramlab models"),
        "{err}"
    );
    let deepseek = write(
        "deepseek.json",
        llama.replace("\"llama\"", "\"deepseek_v3\""),
    );
    let err = refused(&["plan", "--hf-config", &deepseek]);
    assert!(
        err.contains("model_type: \"deepseek_v3\" is not a family vramlab builds"),
        "{err}"
    );
    let gelu = write("gelu.json", llama.replace("\"silu\"", "\"gelu\""));
    let err = refused(&["train", "--dry-run", "--hf-config", &gelu]);
    assert!(
        err.contains("hidden_act: \"gelu\" is not modelled"),
        "{err}"
    );
    // Mistral-7B's window is 4,096 tokens: a sample of 4,097 does not fit in it.
    let mistral = format!("{DIR}/mistral-7b-v0.1.json");
    let err = refused(&[
        "plan",
        "--hf-config",
        &mistral,
        "--set",
        "data.seq_len=4097",
    ]);
    assert!(err.contains("sliding_window: 4096 tokens"), "{err}");
    let err = refused(&["plan", "--hf-config", "/nonexistent/config.json"]);
    assert!(
        err.contains("--hf-config: /nonexistent/config.json"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_plan_from_an_hf_config_reports_its_model_and_says_what_it_changed() {
    let file = format!("{DIR}/gpt2.json");
    let out = vramlab(&[
        "plan",
        "--hf-config",
        &file,
        "--preset",
        "sort-gpt",
        "--set",
        "batch_size=1",
        "--set",
        "eval_batch_size=1",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["params"], 124_439_808);
    assert_eq!(plan["config"]["model"]["positions"], 1024);
    assert_eq!(plan["name"], "gpt2");
    // A causal language model on sort-gpt's 8 tokens a sample, with SDPA-style attention.
    assert_eq!(plan["config"]["data"]["kind"], "stream");
    assert_eq!(plan["config"]["strategies"]["attention"], "fused");
    assert!(
        stderr.contains("data.kind sort -> stream: a causal language model trains on next tokens"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "attn_pdrop = 0.1, embd_pdrop = 0.1, resid_pdrop = 0.1: vramlab trains without dropout"
        ),
        "{stderr}"
    );
}

/// `data.seq_len` is the tokens a sample holds, as a Hugging Face user means it: 2,048 tokens of
/// Llama-2-7B are 2,048 positions, and its logits `[2048, 32000]` in f32.
#[test]
fn an_hf_config_plans_data_seq_len_tokens_a_sample_with_sdpa_style_attention() {
    let file = format!("{DIR}/llama-2-7b.json");
    let out = vramlab(&[
        "plan",
        "--hf-config",
        &file,
        "--set",
        "data.seq_len=2048",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let config = &plan["config"];
    assert_eq!(config["data"]["kind"], "stream");
    assert_eq!(config["data"]["seq_len"], 2048);
    assert_eq!(config["batch_size"], 1);
    assert_eq!(config["strategies"]["attention"], "fused");
    assert_eq!(config["strategies"]["cross_entropy"], "naive");
    let kept = |op: &str| {
        plan["kept_by_op"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["op"] == op)
            .unwrap_or_else(|| panic!("{op} missing from {}", plan["kept_by_op"]))["bytes"]
            .as_u64()
            .unwrap()
    };
    // One sample of 2,048 tokens: the logits the forward pass keeps for the loss.
    assert_eq!(kept("logits"), 2048 * 32_000 * 4);
}

#[test]
fn the_plan_report_answers_the_fine_tuning_question_on_one_screen() {
    let out = vramlab(&[
        "plan",
        "--preset",
        "sort-llama",
        "--set",
        "strategies.trainable=lora",
        "--budget",
        "1GiB",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "  recipe: batch 256 x 16 tokens (sort task: 8 tokens, then as many queries), adamw on \
         LoRA adapters of rank 8 (alpha 16), f32, attention naive (eager-style), loss naive, \
         checkpointing none",
        "parameters          93,056",
        "LoRA adapters of rank 8 beside the frozen weights",
        "by category              at the mark    own size    estimate",
        "  optimizer state",
        "  whole plan",
        "kept for backward by one training forward pass",
        "fits 1.00 GiB",
    ] {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }
    assert!(text.lines().count() <= 40, "{text}");
    let out = vramlab(&[
        "plan",
        "--preset",
        "sort-llama",
        "--set",
        "data.kind=stream",
        "--set",
        "strategies.attention=fused",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "  recipe: batch 256 x 8 tokens (next-token stream), adamw on every weight, f32, \
             attention fused (SDPA-style), loss naive, checkpointing none"
        ),
        "{text}"
    );
}

/// Gemma's files read as the models transformers builds: heads of `head_dim`, a tied output,
/// the window in the layers the pattern says, Gemma 2's caps (Gemma 3's `null`s turn them off);
/// and what vramlab does not build refused by the field's name with what it accepts.
#[test]
fn gemma_files_read_their_windows_and_caps_and_refuse_what_is_not_modelled() {
    let text = |file: &str| std::fs::read_to_string(format!("{DIR}/{file}")).unwrap();
    let two = hf_config::read(&text("gemma-2-2b.json")).unwrap().model;
    assert_eq!(two.kind.name(), "gemma2");
    assert_eq!((two.head_dim, two.window, two.global_every), (256, 4096, 2));
    assert_eq!((two.attn_softcap, two.final_softcap), (50.0, 30.0));
    assert!(two.tied);
    let three = hf_config::read(&text("gemma-3-1b.json")).unwrap().model;
    assert_eq!(three.kind.name(), "gemma3");
    assert_eq!((three.window, three.global_every), (512, 6));
    assert_eq!((three.attn_softcap, three.final_softcap), (0.0, 0.0));
    assert_eq!((three.rope_theta, three.local_rope_theta), (1e6, 1e4));
    // Gemma 2's caps are on when the file leaves them out (the class default), off at null.
    let uncapped = text("gemma-2-2b.json").replace(
        "\"attn_logit_softcapping\": 50.0",
        "\"attn_logit_softcapping\": null",
    );
    assert_eq!(hf_config::read(&uncapped).unwrap().model.attn_softcap, 0.0);
    // layer_types spells the same pattern out; another arrangement is refused.
    let layers = |kinds: Vec<&str>| {
        let list = serde_json::to_string(&kinds).unwrap();
        text("gemma-3-1b.json").replacen('{', &format!("{{\n  \"layer_types\": {list},"), 1)
    };
    let sixth = |i: usize| match (i + 1) % 6 {
        0 => "full_attention",
        _ => "sliding_attention",
    };
    let spelled = layers((0..26).map(sixth).collect());
    assert_eq!(hf_config::read(&spelled).unwrap().model.global_every, 6);
    let mut kinds: Vec<&str> = (0..26).map(sixth).collect();
    kinds[0] = "full_attention";
    let err = hf_config::read(&layers(kinds)).unwrap_err().to_string();
    assert!(
        err.contains("layer_types") && err.contains("every n-th"),
        "{err}"
    );
    let refusals = [
        (
            "gemma-2-2b.json",
            "\"query_pre_attn_scalar\": 256",
            "\"query_pre_attn_scalar\": 144",
            "query_pre_attn_scalar: 144 is not modelled",
        ),
        (
            "gemma-2-2b.json",
            "\"hidden_activation\": \"gelu_pytorch_tanh\"",
            "\"hidden_activation\": \"gelu\"",
            "hidden_activation: \"gelu\" is not modelled; vramlab accepts \"gelu_pytorch_tanh\"",
        ),
        (
            "gemma-3-1b.json",
            "\"head_dim\": 256,",
            "",
            "head_dim: missing",
        ),
        (
            "gemma-3-1b.json",
            "\"attention_bias\": false",
            "\"attention_bias\": true",
            "attention_bias: true is not modelled",
        ),
        (
            "gemma-3-1b.json",
            "\"use_cache\": true",
            "\"use_cache\": true, \"use_bidirectional_attention\": true",
            "use_bidirectional_attention: true is not modelled",
        ),
        (
            "gemma-3-1b.json",
            "\"use_cache\": true",
            "\"use_cache\": true, \"attn_logit_softcap\": 50.0",
            "attn_logit_softcap: not a field vramlab models in a gemma3_text config",
        ),
    ];
    for (file, from, to, expected) in refusals {
        let changed = text(file).replace(from, to);
        assert_ne!(changed, text(file), "{from}");
        let err = hf_config::read(&changed).unwrap_err().to_string();
        assert!(err.contains(expected), "{file} {to}: {err}");
    }
}

/// Phi-3-mini-4k as read: its 2,047-token window holds every sample the plan makes (the base
/// preset's samples shrink to it), and what vramlab's Phi-3 does not build is refused by name.
#[test]
fn phi3_reads_its_window_and_refuses_what_it_does_not_build() {
    let text = std::fs::read_to_string(format!("{DIR}/phi-3-mini-4k.json")).unwrap();
    let hf = hf_config::read(&text).unwrap();
    assert_eq!(hf.model.kind, vramlab::engine::config::ModelKind::Phi3);
    assert_eq!((hf.model.heads, hf.model.kv_heads), (32, 32));
    assert_eq!(hf.model.norm_eps, 1e-5);
    assert_eq!(hf.sliding_window, Some(2047));
    let config = from_file("phi-3-mini-4k.json");
    assert!(config.data.sample_tokens() <= 2047);
    let refusal = |from: &str, to: &str| {
        assert!(text.contains(from), "{from}");
        hf_config::read(&text.replacen(from, to, 1))
            .expect_err(to)
            .to_string()
    };
    let err = refusal(
        "\"rope_scaling\": null,",
        "\"partial_rotary_factor\": 0.75,",
    );
    assert!(
        err.contains("partial_rotary_factor") && err.contains("accepts 1"),
        "{err}"
    );
    let err = refusal(
        "\"rope_scaling\": null,",
        "\"rope_scaling\": {\"type\": \"su\", \"short_factor\": [1.0], \"long_factor\": [1.0]},",
    );
    assert!(
        err.contains("rope_scaling") && err.contains("longrope"),
        "{err}"
    );
    let err = refusal("\"attention_bias\": false", "\"attention_bias\": true");
    assert!(
        err.contains("attention_bias: true is not modelled"),
        "{err}"
    );
    let err = refusal(
        "\"use_cache\": true,",
        "\"use_cache\": true, \"head_dim\": 64,",
    );
    assert!(err.contains("head_dim: 64 is not modelled"), "{err}");
    // A window the samples outgrow is refused (vramlab plans full causal attention).
    let mut long = config.clone();
    long.data.seq_len = 2048;
    let err = hf.notes_for(&long).expect_err("a sample past the window");
    assert!(
        err.to_string().contains("sliding_window: 2047 tokens"),
        "{err}"
    );
}
