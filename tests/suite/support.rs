//! Shared helpers: the GPU lock and short runs of presets.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use burn::tensor::{FloatDType, Tensor};

use vramlab::engine::device::{Launches, Turn, take_turn};
use vramlab::engine::overrides::apply_overrides;
use vramlab::engine::presets::preset;
use vramlab::engine::{self, Gpu, RunConfig, Timeline};

static GPU_LOCK: Mutex<()> = Mutex::new(());

/// Exclusive use of the process's GPU while it is held, beside no other thread's plan.
pub struct GpuLock {
    /// A run's turn (`engine::device::take_turn`) for the whole test: a plan's dry run in
    /// another test would drop this test's launches, including those of tests that launch
    /// kernels directly, outside a `Run`. Plans this test makes itself do not wait for it.
    /// Declared first, so it ends before the lock is let go: a plan waiting in another thread
    /// gets its turn before the next GPU test takes one.
    _turn: Turn,
    _exclusive: MutexGuard<'static, ()>,
}

/// Exclusive use of the process's GPU for the caller's lifetime of the guard.
pub fn gpu() -> (GpuLock, Gpu) {
    let exclusive = GPU_LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let turn = take_turn(Launches::Executed);
    let gpu = pollster::block_on(engine::acquire()).expect("a wgpu adapter (lavapipe in CI)");
    (
        GpuLock {
            _turn: turn,
            _exclusive: exclusive,
        },
        gpu,
    )
}

/// A preset with `--set`-style overrides applied.
pub fn config(name: &str, sets: &[&str]) -> RunConfig {
    let config = apply_overrides(preset(name).unwrap(), sets.iter().copied()).unwrap();
    config.validate().unwrap();
    config
}

pub fn run(gpu: &Gpu, config: RunConfig) -> Timeline {
    let timeline =
        pollster::block_on(engine::train(config, gpu, |_| {})).expect("the run completes");
    // Every run must start where a fresh process would: nothing of an earlier run left alive.
    assert_eq!(
        timeline.summary.baseline_in_use_bytes, 0,
        "{}: a previous run left bytes in use",
        timeline.summary.name
    );
    timeline
}

/// The tiny families' short training runs in the suite: falling loss, naive against fused,
/// LoRA, QLoRA and per-layer checkpointing. Batches of 16 sequences: on lavapipe a step of
/// these models is mostly its launches, so 64 sequences took twice as long (sort-mixtral's 20
/// steps 8.5 s against 3.8 s in `vramlab train`) and the checks read the same things.
pub const TINY_BATCH: &str = "batch_size=16";

/// Runs made by [`shared_run`], by their configuration's JSON.
static SHARED_RUNS: Mutex<BTreeMap<String, Arc<Timeline>>> = Mutex::new(BTreeMap::new());

/// A run of `config` that the suite may share: the timeline of an identical configuration run
/// earlier in this process, else a new run (kept for the next test that asks). For tests that
/// only read a run's losses and bytes in use. Sharing loses nothing they check: [`run`] holds
/// every run to start from the baseline, so an identical configuration trains to the same
/// losses and in-use figures wherever it runs (same seed, same kernels). Not for reserved
/// bytes: the pools a process has grown stay reserved, so those depend on what ran before.
/// Several tests train the same short run of a preset (a tiny family's falling loss and the
/// naive side of its fused comparison), and on lavapipe each costs seconds of the suite's wall
/// time. The caller holds the GPU lock, so holding this map's lock across the run waits on
/// nothing else.
pub fn shared_run(gpu: &Gpu, config: RunConfig) -> Arc<Timeline> {
    let key = serde_json::to_string(&config).expect("a configuration serializes");
    let mut runs = SHARED_RUNS.lock().unwrap_or_else(|p| p.into_inner());
    runs.entry(key)
        .or_insert_with(|| Arc::new(run(gpu, config)))
        .clone()
}

/// The built binary, as a user runs it.
pub fn vramlab(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_vramlab"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// The built binary's JSON output, for a command that must succeed.
pub fn vramlab_json<T: serde::de::DeserializeOwned>(args: &[&str]) -> T {
    let out = vramlab(args);
    assert!(
        out.status.success(),
        "vramlab {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

/// The repository's root, found when the suite runs, not where it was built: CI runs a clone at
/// a path of its own on the build cache, and a path compiled in (`env!("CARGO_MANIFEST_DIR")`)
/// made cargo rebuild the suite and the library's unit tests in every new clone (cargo tracks the
/// `env!` values a crate read; 286 s of a warm CI run, measured 2026-12-02 on the 2-core
/// development machine). `cargo test` runs a test binary with `CARGO_MANIFEST_DIR` set;
/// `.ci/native-tests` runs it from the repository's root.
pub fn repo_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let root = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| std::env::current_dir().expect("a working directory"));
        assert!(
            root.join("tests/suite").is_dir(),
            "run the suite from the repository's root (or through cargo test): {} has no tests/suite",
            root.display()
        );
        root
    })
}

/// A path inside the repository, written out from [`repo_root`] where it is formatted
/// (`format!("{DIR}/gpt2.json")`).
pub struct InRepo(pub &'static str);

impl fmt::Display for InRepo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", repo_root().join(self.0).display())
    }
}

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Mean of the first and last `n` losses.
pub fn loss_ends(timeline: &Timeline, n: usize) -> (f32, f32) {
    let losses: Vec<f32> = timeline
        .steps
        .iter()
        .map(|s| s.loss.expect("all read back"))
        .collect();
    let mean = |xs: &[f32]| xs.iter().sum::<f32>() / xs.len() as f32;
    (mean(&losses[..n]), mean(&losses[losses.len() - n..]))
}

/// The largest difference between two tensors (compared in f32), relative to the larger's
/// largest magnitude.
pub fn relative_gap<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> f32 {
    let (a, b) = (a.cast(FloatDType::F32), b.cast(FloatDType::F32));
    let scale = a
        .clone()
        .abs()
        .max()
        .into_scalar::<f32>()
        .max(b.clone().abs().max().into_scalar::<f32>());
    let gap = (a - b).abs().max().into_scalar::<f32>();
    gap / scale.max(f32::MIN_POSITIVE)
}
