//! The stacked GRU and LSTM cells (`engine::models::stacked_cells`, as cuDNN and PyTorch run
//! them) against burn's, built from the same weights: the same outputs, and the same gradients
//! of the input and of every gate's weights and biases, under a random upstream gradient.

use burn::nn::{GateController, GruConfig, LstmConfig};
use burn::tensor::{Distribution, Gradients, Tensor};
use vramlab::engine::models::stacked_cells::{StackedGates, StackedGru, StackedLstm};

use super::support::{gpu, relative_gap};

/// f32 sums in another order: the gap seen is about 1e-7.
const TOLERANCE: f32 = 1e-5;

fn same<const D: usize>(what: &str, burns: Tensor<D>, stacked: Tensor<D>) {
    // A gap relative to nothing would pass two cells that both gave zeros.
    let scale = burns.clone().abs().max().into_scalar::<f32>();
    assert!(scale > 1e-3, "{what}: burn's cell gave {scale} at most");
    let gap = relative_gap(burns, stacked);
    println!("{what}: relative gap {gap:.1e}");
    assert!(
        gap < TOLERANCE,
        "{what}: burn's and the stacked cell differ by {gap}"
    );
}

/// Each of burn's gates' gradients, stacked as the stacked cell's parameters are, beside that
/// cell's gradients.
fn same_gate_grads(
    cell: &str,
    burns: &[&GateController],
    burn_grads: &Gradients,
    stacked: &StackedGates,
    stacked_grads: &Gradients,
) {
    let grad = |t: &Tensor<2>| t.grad(burn_grads).expect("a gate weight is tracked");
    let bias_grad = |l: &burn::nn::Linear| {
        l.bias
            .as_ref()
            .unwrap()
            .grad(burn_grads)
            .expect("a gate bias is tracked")
    };
    let weights = |pick: fn(&GateController) -> Tensor<2>| {
        Tensor::cat(burns.iter().map(|g| grad(&pick(g))).collect(), 1)
    };
    let biases = |pick: fn(&GateController) -> &burn::nn::Linear| {
        Tensor::cat(burns.iter().map(|g| bias_grad(pick(g))).collect(), 0)
    };
    same(
        &format!("{cell}: input weights' gradient"),
        weights(|g| g.input_transform.weight.val()),
        stacked.input.grad(stacked_grads).unwrap(),
    );
    same(
        &format!("{cell}: hidden weights' gradient"),
        weights(|g| g.hidden_transform.weight.val()),
        stacked.hidden.grad(stacked_grads).unwrap(),
    );
    same(
        &format!("{cell}: input biases' gradient"),
        biases(|g| &g.input_transform),
        stacked.input_bias.grad(stacked_grads).unwrap(),
    );
    same(
        &format!("{cell}: hidden biases' gradient"),
        biases(|g| &g.hidden_transform),
        stacked.hidden_bias.grad(stacked_grads).unwrap(),
    );
}

#[test]
fn stacked_cells_give_burns_outputs_and_gradients() {
    let (_lock, gpu) = gpu();
    let device = gpu.device.clone().autodiff();
    device.seed(3);
    // Widths unlike each other, so a transposed or misplaced gate cannot pass.
    let (batch, length, d_input, d_hidden) = (3, 7, 12, 16);
    let normal = Distribution::Normal(0.0, 1.0);
    let x = Tensor::<3>::random([batch, length, d_input], normal, &device);
    let upstream = Tensor::<3>::random([batch, length, d_hidden], normal, &device);
    let run = |forward: &dyn Fn(Tensor<3>) -> Tensor<3>| {
        let input = x.clone().detach().require_grad();
        let out = forward(input.clone());
        let grads = (out.clone() * upstream.clone()).sum().backward();
        let input_grad = input.grad(&grads).expect("the input is tracked");
        (out.inner(), input_grad, grads)
    };

    let gru = GruConfig::new(d_input, d_hidden, true).init(&device);
    let stacked = StackedGru::of(&gru);
    let (burn_out, burn_dx, burn_grads) = run(&|x| gru.forward(x, None));
    let (stacked_out, stacked_dx, stacked_grads) = run(&|x| stacked.forward(x));
    same("gru: output", burn_out, stacked_out);
    same("gru: input's gradient", burn_dx, stacked_dx);
    same_gate_grads(
        "gru",
        &[&gru.update_gate, &gru.reset_gate, &gru.new_gate],
        &burn_grads,
        &stacked.gates,
        &stacked_grads,
    );

    let lstm = LstmConfig::new(d_input, d_hidden, true).init(&device);
    let stacked = StackedLstm::of(&lstm);
    let (burn_out, burn_dx, burn_grads) = run(&|x| lstm.forward(x, None).0);
    let (stacked_out, stacked_dx, stacked_grads) = run(&|x| stacked.forward(x));
    same("lstm: output", burn_out, stacked_out);
    same("lstm: input's gradient", burn_dx, stacked_dx);
    same_gate_grads(
        "lstm",
        &[
            &lstm.input_gate,
            lstm.forget_gate.as_ref().unwrap(),
            &lstm.output_gate,
            &lstm.cell_gate,
        ],
        &burn_grads,
        &stacked.gates,
        &stacked_grads,
    );
}
