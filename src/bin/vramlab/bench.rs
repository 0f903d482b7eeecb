//! `vramlab bench-sampling`: what reading the allocator costs. Trains the same config twice in
//! one process, once reading after every phase and at every kernel launch (the exact
//! high-water mark) and once per step, and prints ms/step side by side with their ratio. A
//! benchmark that prints, not a timed test.

use vramlab::engine::config::MemorySampling;
use vramlab::engine::format::mib;
use vramlab::engine::{self, Gpu, RunConfig};

pub fn sampling_cost(gpu: &Gpu, base: &RunConfig) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    // Each mode once untimed first: the two modes fuse differently, so each compiles its own
    // kernels on first use, and that must not land in either timed run.
    for timed in [false, true] {
        for sampling in [MemorySampling::Phase, MemorySampling::Step] {
            let mut config = base.clone();
            config.memory_sampling = sampling;
            config.eval_every = 0;
            if !timed {
                config.steps = config.steps.min(5);
            }
            let summary = pollster::block_on(engine::train(config, gpu, |_| {}))?.summary;
            if timed {
                rows.push((sampling, summary));
            }
        }
    }
    println!(
        "{}: {} steps, batch {}",
        base.name, base.steps, base.batch_size
    );
    println!(
        "{:<8} {:>10} {:>22} {:>22}  readings",
        "sampling", "ms/step", "largest reading MiB", "high-water in use MiB"
    );
    for (sampling, summary) in &rows {
        let readings = match sampling {
            MemorySampling::Phase => "4 a step, and at every kernel launch",
            MemorySampling::Step => "1 a step (high-water: the largest reading)",
        };
        println!(
            "{:<8} {:>10.2} {:>22.2} {:>22.2}  {readings}",
            format!("{sampling:?}").to_lowercase(),
            summary.median_step_ms,
            mib(summary.peak_in_use_bytes),
            mib(summary.high_water_in_use_bytes),
        );
    }
    let (phase, step) = (&rows[0].1, &rows[1].1);
    println!(
        "ratio phase/step: {:.2}x ms/step",
        phase.median_step_ms / step.median_step_ms.max(1e-9)
    );
    Ok(())
}
