//! `vramlab bench-cells`: burn's GRU and LSTM cells against the stacked cells
//! (`engine::models::stacked_cells`, as cuDNN and PyTorch run them), one forward and backward
//! pass at the sort presets' shapes on this machine's GPU, side by side in one process, each
//! cell once untimed first so compiling its kernels lands in no timing. A benchmark that
//! prints, not a timed test.

use burn::nn::{GruConfig, LstmConfig};
use burn::tensor::{Distribution, Tensor};
use vramlab::engine;
use vramlab::engine::models::stacked_cells::{StackedGru, StackedLstm};
use web_time::Instant;

/// The sort presets' batch, width, and tokens a sample (8 to sort, then 8 queries).
const BATCH: usize = 256;
const WIDTH: usize = 128;
const LENGTH: usize = 16;
/// Timed passes a cell; the median is printed.
const PASSES: usize = 5;

/// Median milliseconds of a forward and backward pass of `forward`, its gradients read back
/// (one value) so the pass has run, not only been queued.
fn median_ms(x: &Tensor<3>, forward: &dyn Fn(Tensor<3>) -> Tensor<3>) -> f64 {
    let pass = || {
        let started = Instant::now();
        let input = x.clone().detach().require_grad();
        let grads = forward(input.clone()).sum().backward();
        let read = input
            .grad(&grads)
            .expect("the input is tracked")
            .sum()
            .into_scalar::<f32>();
        std::hint::black_box(read);
        started.elapsed().as_secs_f64() * 1e3
    };
    pass();
    let mut times: Vec<f64> = (0..PASSES).map(|_| pass()).collect();
    times.sort_by(f64::total_cmp);
    times[PASSES / 2]
}

pub fn run() -> anyhow::Result<()> {
    let gpu = pollster::block_on(engine::acquire())?;
    let device = gpu.device.clone().autodiff();
    println!(
        "one forward and backward pass on {} (batch {BATCH}, {LENGTH} positions, width \
         {WIDTH}), median of {PASSES}",
        gpu.adapter.name
    );
    println!(
        "{:>5} {:>12} {:>12} {:>16}",
        "cell", "burn's ms", "stacked ms", "stacked/burn's"
    );
    let x = Tensor::<3>::random(
        [BATCH, LENGTH, WIDTH],
        Distribution::Normal(0.0, 1.0),
        &device,
    );
    let gru = GruConfig::new(WIDTH, WIDTH, true).init(&device);
    let stacked_gru = StackedGru::of(&gru);
    let lstm = LstmConfig::new(WIDTH, WIDTH, true).init(&device);
    let stacked_lstm = StackedLstm::of(&lstm);
    let rows: [(&str, f64, f64); 2] = [
        (
            "gru",
            median_ms(&x, &|x| gru.forward(x, None)),
            median_ms(&x, &|x| stacked_gru.forward(x)),
        ),
        (
            "lstm",
            median_ms(&x, &|x| lstm.forward(x, None).0),
            median_ms(&x, &|x| stacked_lstm.forward(x)),
        ),
    ];
    for (cell, burns, stacked) in rows {
        println!(
            "{cell:>5} {burns:>12.1} {stacked:>12.1} {:>15.2}x",
            stacked / burns.max(1e-9)
        );
    }
    Ok(())
}
