//! `vramlab`: the native front. Parses flags, hands a validated config to the engine, shows
//! progress, and writes or prints what the engine measured.

mod args;
mod bench;
mod bench_analytic;
mod bench_attention;
mod bench_cells;
mod bench_gpu;
mod claims;
mod docs_check;
mod exit;
mod files;
mod find_batch;
mod fuzz;
mod hub;
mod live;
mod plan;
mod progress;
mod recipes;
mod report;
mod runtime_dir;
mod soak;
mod subprocess;
mod table_file;

use std::process::ExitCode;

use clap::Parser;
use vramlab::engine::{self, ConfigError, EngineError};

use args::{ClaimsArgs, Cli, Command, TrainArgs, TrainCommand};

/// The system allocator, counting per thread: `vramlab fuzz` holds each parse to a bound.
#[global_allocator]
static ALLOCATOR: fuzz::alloc::Counting = fuzz::alloc::Counting;

fn main() -> ExitCode {
    runtime_dir::ensure();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() {
                ExitCode::from(exit::BAD_INPUT)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let result = match cli.command {
        None => train(&TrainCommand::default()),
        Some(Command::Train(args)) => train(&args),
        Some(Command::BenchSampling(args)) => bench_sampling(&args),
        Some(Command::BenchAnalytic(args)) => engine::device::planner()
            .map_err(anyhow::Error::from)
            .and_then(|gpu| bench_analytic::run(&gpu, &args.only)),
        Some(Command::BenchAttention(args)) => {
            let both = !args.plans && !args.steps;
            bench_attention::run(args.plans || both, args.steps || both)
        }
        Some(Command::BenchCells) => bench_cells::run(),
        Some(Command::BenchGpu(args)) => bench_gpu::run(&args),
        Some(Command::Claims(args)) => claims_report(&args),
        Some(Command::Docs(args)) => docs_check::run(&args),
        Some(Command::Fuzz(args)) => fuzz::run(&args),
        Some(Command::Soak(args)) => soak::run(&args),
        Some(Command::FindBatch(args)) => find_batch(&args),
        Some(Command::Plan(args)) => plan(&args),
        Some(Command::Presets) => {
            for preset in engine::presets::playground() {
                println!("{}", engine::presets::describe(preset));
            }
            println!("\nsized for `vramlab plan` (bigger than a playground):");
            for preset in engine::presets::for_plans() {
                println!("{}", engine::presets::describe(preset));
            }
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("vramlab: {}", report::error(&err));
            ExitCode::from(exit_code(&err))
        }
    }
}

fn exit_code(err: &anyhow::Error) -> u8 {
    let bad_input = err.downcast_ref::<ConfigError>().is_some()
        || matches!(
            err.downcast_ref::<EngineError>(),
            Some(EngineError::Config(_))
        );
    if bad_input {
        exit::BAD_INPUT
    } else if matches!(
        err.downcast_ref::<EngineError>(),
        Some(EngineError::OutOfMemory(_))
    ) {
        exit::OUT_OF_MEMORY
    } else {
        exit::FAILURE
    }
}

/// `engine::train` with the bar told before a step that ends with an evaluation (a language
/// model's can take longer than its steps).
fn train_showing_progress(
    config: engine::RunConfig,
    gpu: &engine::Gpu,
    progress: &progress::Progress,
) -> Result<engine::Timeline, EngineError> {
    let mut run = engine::Run::new(config, gpu)?;
    while !run.is_finished() {
        if let Some(samples) = run.evaluation_after_next_step() {
            progress.evaluating_after(run.steps_done() + 1, samples);
        }
        let outcome = pollster::block_on(run.step())?;
        progress.update(&outcome);
    }
    pollster::block_on(run.finish())
}

/// Runs go to the GPU, started with the config's pools; plans to the planning device.
/// A mixture of experts' routing: what the router did (or a plan assumed), and for a real run
/// what that did to the high-water mark against the plan of even routing.
fn print_routing(timeline: &engine::Timeline, planned: bool) -> anyhow::Result<()> {
    let Some(load) = &timeline.expert_load else {
        return Ok(());
    };
    println!("{}", load.describe());
    if planned {
        return Ok(());
    }
    let mut config = timeline.config.clone();
    config.budget = None;
    let planner = engine::device::planner()?;
    let even = pollster::block_on(engine::plan::plan(&config, &planner, |_| {}))?;
    let measured = timeline.summary.high_water_in_use_bytes;
    let format = engine::format::ByteFormat::MIB_OR_GIB;
    println!(
        "high-water in use {}; the plan of even routing: {} ({} B {} by this run's routing)",
        format.of(measured),
        format.of(even.high_water_in_use_bytes),
        measured.abs_diff(even.high_water_in_use_bytes),
        if measured >= even.high_water_in_use_bytes {
            "more"
        } else {
            "fewer"
        }
    );
    Ok(())
}

fn device_for(purpose: engine::Purpose, config: &engine::RunConfig) -> anyhow::Result<engine::Gpu> {
    Ok(match purpose {
        engine::Purpose::Run => {
            pollster::block_on(engine::acquire_with(config.strategies.memory_pool))?
        }
        engine::Purpose::Plan => engine::device::planner()?,
    })
}

fn find_batch(args: &args::FindArgs) -> anyhow::Result<()> {
    let purpose = if args.plan {
        engine::Purpose::Plan
    } else {
        engine::Purpose::Run
    };
    let config = args.run.resolve_for(purpose)?;
    let gpu = device_for(purpose, &config)?;
    find_batch::run(args, &config, &gpu)
}

fn plan(args: &args::PlanArgs) -> anyhow::Result<()> {
    if let Some(page) = &args.compare_page {
        return plan::compare_page(page);
    }
    let config = args.resolve()?;
    let gpu = match &args.model_adapter {
        Some(file) => engine::device::planner_modelling(plan::modelled_in(file)?)?,
        None => engine::device::planner()?,
    };
    let planned = plan::run(&config, &gpu, args.json)?;
    match (&args.write_recipe, &args.source.recipe) {
        (Some(out), Some(recipe)) => {
            recipes::write_back(recipe, &args.source.launcher, &planned, out)
        }
        _ => Ok(()),
    }
}

fn claims_report(args: &ClaimsArgs) -> anyhow::Result<()> {
    if let (Some(page), Some(native)) = (&args.compare_page, &args.native) {
        return claims::compare_page(page, native, args.some_cards);
    }
    let table = args.table()?;
    let claims::Judged { report, stopped } = claims::run_all(
        &args.only,
        &args.claim,
        table.as_ref(),
        args.as_page,
        &args.live,
    )?;
    let markdown = claims::markdown(&report);
    if let Some(path) = &args.out {
        claims::write(path, &markdown)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{markdown}");
    }
    // The report of the claims judged is out; that it lacks the rest is an error to a script.
    match stopped {
        Some(why) => anyhow::bail!("claims {why}"),
        None => Ok(()),
    }
}

fn bench_sampling(args: &TrainArgs) -> anyhow::Result<()> {
    let config = args.resolve()?;
    let gpu = pollster::block_on(engine::acquire_with(config.strategies.memory_pool))?;
    bench::sampling_cost(&gpu, &config)
}

fn train(command: &TrainCommand) -> anyhow::Result<()> {
    let TrainCommand {
        run: args,
        live,
        relay_live,
    } = command;
    if live.live && args.dry_run {
        return Err(ConfigError::invalid(
            "--live",
            "a dry run has no steps to watch: pass --live or --dry-run, not both",
        )
        .into());
    }
    let purpose = if args.dry_run {
        engine::Purpose::Plan
    } else {
        engine::Purpose::Run
    };
    let config = args.resolve_for(purpose)?;
    let gpu = device_for(purpose, &config)?;
    let progress = progress::Progress::new(config.steps);
    let timeline = if args.dry_run {
        // A plan would leave such a tensor out; a trial must not pass on that.
        engine::memory::largest::bindable(&config, &gpu.adapter)?;
        pollster::block_on(engine::plan::follow(config, &gpu, &mut |_| {}))
    } else if live.live {
        // The outer error is the server's (the page, the port), before any step.
        live::train(config, &gpu, live, &progress)?
    } else if *relay_live {
        live::relay::serve_parent(config, &gpu, &progress)
    } else {
        train_showing_progress(config, &gpu, &progress)
    };
    progress.finish();
    let timeline = match timeline {
        // The finder reads this to learn where a trial ran out.
        Err(EngineError::OutOfMemory(oom)) if args.json || args.json_timeline => {
            let report = subprocess::OutOfMemoryReport {
                out_of_memory: (*oom).clone(),
            };
            println!("{}", serde_json::to_string(&report)?);
            return Err(EngineError::OutOfMemory(oom).into());
        }
        other => other?,
    };
    if let Some(dir) = &args.out {
        files::write_all(dir, &timeline)?;
    }
    if args.json_timeline {
        println!("{}", serde_json::to_string(&timeline)?);
    } else if args.json {
        report::print_json(&timeline.summary)?;
    } else {
        report::print_table(&timeline.summary);
        print_routing(&timeline, args.dry_run)?;
        if let Some(dir) = &args.out {
            println!(
                "wrote {0}/timeline.json, {0}/timeline.csv, {0}/memory.svg, {0}/categories.svg, {0}/one-step.svg",
                dir.display()
            );
        }
    }
    Ok(())
}
