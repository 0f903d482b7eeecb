//! How a run starts: the config checked, the data and model built, the strategies set up, and
//! what set-up left in use measured; or the same under a dry run, for a plan.

use burn::cubecl::dry_run::DryRun;
use web_time::Instant;

use crate::engine::config::{Offload, RunConfig};
use crate::engine::data::{BatchOrder, Dataset, split_sizes};
use crate::engine::device::{Gpu, Launches, Turn, host_stand_in, take_turn};
use crate::engine::error::{ConfigError, EngineError};
use crate::engine::memory::categories::SetupBytes;
use crate::engine::memory::largest::bindable;
use crate::engine::memory::meter::Meter;
use crate::engine::memory::{predict, sampler};
use crate::engine::models::Model;
use crate::engine::outcome::Site;
use crate::engine::phase::Phase;
use crate::engine::strategies::{Hooks, Setup};
use crate::engine::suggest;
use crate::engine::train::pace::Pace;
use crate::engine::train::records::StepFigures;
use crate::engine::train::trainer::{Context, Trainer};
use crate::engine::validate::Purpose;

use super::Run;

impl Run {
    /// Validate the config, build data and model, and start from the device's baseline memory.
    pub fn new(config: RunConfig, gpu: &Gpu) -> Result<Self, EngineError> {
        let started = Instant::now();
        config.validate()?;
        bindable(&config, &gpu.adapter)?;
        let data =
            Dataset::build(&config.data, config.seed).map_err(|message| EngineError::Device {
                phase: "data".into(),
                message,
            })?;
        // After any plan another thread has open: its dry run would drop this run's launches.
        let turn = take_turn(Launches::Executed);
        let mut run = Self::start(config.clone(), gpu, data, (turn, None))
            .map_err(|err| suggest::explain(err, None, &config, gpu, Purpose::Run))?;
        run.setup_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(run)
    }

    /// The same run under a dry run: every launch compiled and dropped, every allocation
    /// carved by the real pools without device memory, on batches of zeros. What the
    /// allocator reports is what it would hold; losses and accuracies are meaningless and
    /// nothing read back steers the run. Its test split is two evaluation batches at most.
    pub fn plan(config: RunConfig, gpu: &Gpu) -> Result<Self, EngineError> {
        let started = Instant::now();
        config.validate_for(Purpose::Plan)?;
        let (train, test) = split_sizes(&config.data);
        // Up to two evaluation batches, each as large as a real run's largest (the test split
        // may be smaller than `eval_batch_size`: digits, 449 samples against 512). Two, because
        // a real run's second batch starts while the first one's loss and hits are still
        // pending in burn's fusion streams, which keep that batch's logits alive: on an H200
        // GPT-2 small's evaluation held 1.6 GB more than one batch does (docs/performance.md).
        // Every later batch repeats the second.
        let data = Dataset::shapes(
            &config.data,
            train.max(config.batch_size),
            config
                .evaluated_samples(test)
                .min(2 * config.eval_batch_size),
        );
        // The dry run opens once no other thread's run is open: it drops every launch in the
        // process.
        let turn = take_turn(Launches::Dropped);
        let dry_run = DryRun::new();
        let mut run = Self::start(config.clone(), gpu, data, (turn, Some(dry_run)))
            .map_err(|err| suggest::explain(err, None, &config, gpu, Purpose::Plan))?;
        run.setup_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(run)
    }

    fn start(
        config: RunConfig,
        gpu: &Gpu,
        data: Dataset,
        (turn, dry_run): (Turn, Option<DryRun>),
    ) -> Result<Self, EngineError> {
        let data = if config.model.is_decoder() {
            data.next_token()
        } else {
            data
        };
        let budget = config
            .budget
            .map(|budget| budget.bytes(gpu.adapter.max_buffer_size));
        // A previous run on this device may have left graphs and cached pages; start where a
        // fresh process would, so runs compare.
        sampler::start_clean(&gpu.device)?;
        let baseline = sampler::read(&gpu.device, "start")?;
        gpu.device.seed(config.seed);
        // Parameters kept on the host (FSDP2's `CPUOffloadPolicy`) live on a device of their
        // own, beside the planning device whose pools are the GPU's figures.
        let host = match config.strategies.offload {
            Offload::Parameters => Some(match &gpu.modelled {
                Some(modelled) => host_stand_in(modelled)?,
                None => {
                    return Err(ConfigError::invalid(
                        "strategies.offload",
                        "parameters on the host are planned, not run",
                    )
                    .into());
                }
            }),
            _ => None,
        };
        let mut hooks = Hooks::new(&config, gpu, host);
        let device = hooks.training_device(gpu.device.clone().autodiff());
        let mut meter = Meter::new(&device, config.memory_sampling, budget, baseline);
        let stored = hooks.stored_dtype();
        let model = hooks.prepare_model(Model::build(&config, &data, &device, stored));
        let routing = model.routing();
        model.initialise_params();
        let with_weights = meter.read(Phase::Setup, Site::ModelParameters)?;
        let mut kept = Setup {
            data: &data,
            device: &device,
            meter: &mut meter,
            model: &model,
            gradient_buckets: 0,
        };
        hooks.setup(&mut kept)?;
        let gradient_buckets = kept.gradient_buckets;
        let after_setup = meter.peek(Phase::Setup)?;
        let setup = SetupBytes {
            parameter: with_weights
                .pooled_in_use_bytes
                .saturating_sub(baseline.pooled_in_use_bytes),
            resident_input: after_setup
                .pooled_in_use_bytes
                .saturating_sub(with_weights.pooled_in_use_bytes)
                .saturating_sub(gradient_buckets),
            gradient_buckets,
            in_use: after_setup.pooled_in_use_bytes,
        };
        Ok(Self {
            trainer: Trainer::new(&config, model, &device, &gpu.device),
            order: BatchOrder::new(data.train.len, config.seed),
            prediction: predict(&config),
            baseline,
            setup,
            carried_in_use: setup.in_use,
            last_trace: None,
            steps: Vec::new(),
            left_out: None,
            figures: StepFigures::default(),
            evals: Vec::new(),
            latest_loss: None,
            pace: Pace::default(),
            setup_ms: 0.0,
            routing,
            ctx: Context {
                config,
                gpu: gpu.clone(),
                device,
                data,
                hooks,
                meter,
                plan: dry_run.is_some(),
            },
            _dry_run: dry_run,
            _turn: turn,
        })
    }
}
