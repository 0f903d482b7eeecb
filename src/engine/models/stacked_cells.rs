//! GRU and LSTM cells as cuDNN and PyTorch run them: every gate's weights stacked side by side,
//! the input projections of all time steps in one matmul before the loop, one matmul of the
//! hidden state a time step, and the outputs stacked once at the end. burn's cells (its `Gru`
//! and `Lstm`) run two matmuls per gate per time step and write each step's output into the
//! sequence with a slice-assign; on a software GPU those launches, not the arithmetic, are most
//! of a step. Built from burn's cells' own weights, so the two give the same outputs and
//! gradients (tests/suite/stacked_cells.rs).

use burn::module::{Module, Param};
use burn::nn::{GateController, Gru, Linear, Lstm};
use burn::tensor::Tensor;
use burn::tensor::activation::sigmoid;

/// Gates' weights side by side: a gate's input weights are columns `g * hidden..(g + 1) *
/// hidden` of `input`, its hidden-state weights the same columns of `hidden`.
#[derive(Module, Debug)]
pub struct StackedGates {
    /// `[d_input, gates x d_hidden]`.
    pub input: Param<Tensor<2>>,
    /// `[gates x d_hidden]`.
    pub input_bias: Param<Tensor<1>>,
    /// `[d_hidden, gates x d_hidden]`.
    pub hidden: Param<Tensor<2>>,
    pub hidden_bias: Param<Tensor<1>>,
}

impl StackedGates {
    /// Copies of `gates`' weights, stacked in their order, as parameters of their own. Both
    /// transforms must have biases (vramlab's cells do).
    pub fn of(gates: &[&GateController]) -> Self {
        let stack_weights = |pick: fn(&GateController) -> Tensor<2>| {
            Tensor::cat(gates.iter().map(|g| pick(g)).collect(), 1)
        };
        let stack_biases = |pick: fn(&GateController) -> Tensor<1>| {
            Tensor::cat(gates.iter().map(|g| pick(g)).collect(), 0)
        };
        Self {
            input: Param::from_tensor(stack_weights(|g| g.input_transform.weight.val()).detach()),
            input_bias: Param::from_tensor(stack_biases(|g| bias_of(&g.input_transform)).detach()),
            hidden: Param::from_tensor(stack_weights(|g| g.hidden_transform.weight.val()).detach()),
            hidden_bias: Param::from_tensor(
                stack_biases(|g| bias_of(&g.hidden_transform)).detach(),
            ),
        }
    }

    /// Every time step's input projection, in one matmul: `[batch, length, gates x hidden]`.
    fn project_inputs(&self, x: Tensor<3>) -> Tensor<3> {
        let [batch, length, d_input] = x.dims();
        let width = self.input_bias.dims()[0];
        (x.reshape([batch * length, d_input])
            .matmul(self.input.val())
            + self.input_bias.val().unsqueeze())
        .reshape([batch, length, width])
    }

    /// The hidden state's projection for every gate at once: `[batch, gates x hidden]`.
    fn project_hidden(&self, hidden: Tensor<2>) -> Tensor<2> {
        hidden.matmul(self.hidden.val()) + self.hidden_bias.val().unsqueeze()
    }
}

/// A cell's linear transform's bias.
fn bias_of(linear: &Linear) -> Tensor<1> {
    linear
        .bias
        .as_ref()
        .expect("vramlab's recurrent cells have biases")
        .val()
}

/// Time step `t` of the projected inputs, `[batch, gates x hidden]`.
fn at_step(projected: &Tensor<3>, t: usize) -> Tensor<2> {
    let [batch, _, width] = projected.dims();
    projected
        .clone()
        .slice([0..batch, t..t + 1, 0..width])
        .reshape([batch, width])
}

/// burn's GRU (reset applied after the hidden state's projection, as its default and cuDNN's),
/// with its gates stacked: update, reset, new.
#[derive(Module, Debug)]
pub struct StackedGru {
    pub gates: StackedGates,
    d_hidden: usize,
}

impl StackedGru {
    pub fn of(gru: &Gru) -> Self {
        assert!(
            gru.reset_after && gru.clip.is_none(),
            "vramlab's GRU resets after the projection and does not clip"
        );
        Self {
            gates: StackedGates::of(&[&gru.update_gate, &gru.reset_gate, &gru.new_gate]),
            d_hidden: gru.d_hidden,
        }
    }

    /// # Shapes
    /// - x: `[batch, length, d_input]`
    /// - output: `[batch, length, d_hidden]`, the hidden state after each step
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let [batch, length, _] = x.dims();
        let device = x.device();
        let projected = self.gates.project_inputs(x);
        let mut hidden = Tensor::<2>::zeros([batch, self.d_hidden], &device);
        let mut outputs = Vec::with_capacity(length);
        for t in 0..length {
            let [update_x, reset_x, new_x] = split3(at_step(&projected, t));
            let [update_h, reset_h, new_h] = split3(self.gates.project_hidden(hidden.clone()));
            let update = sigmoid(update_x + update_h);
            let reset = sigmoid(reset_x + reset_h);
            let candidate = (new_x + reset * new_h).tanh();
            hidden = candidate * update.clone().neg().add_scalar(1.0) + update * hidden;
            outputs.push(hidden.clone());
        }
        // Every step's projected inputs are read: free them before the outputs are copied
        // into one sequence, rather than holding both.
        drop(projected);
        Tensor::stack(outputs, 1)
    }
}

/// burn's LSTM with its gates stacked: input, forget, output, cell.
#[derive(Module, Debug)]
pub struct StackedLstm {
    pub gates: StackedGates,
    d_hidden: usize,
}

impl StackedLstm {
    pub fn of(lstm: &Lstm) -> Self {
        let forget = lstm
            .forget_gate
            .as_ref()
            .filter(|_| {
                !lstm.input_forget && lstm.clip.is_none() && lstm.batch_first && !lstm.reverse
            })
            .expect("vramlab's LSTM has a forget gate, runs forward, batch first, unclipped");
        Self {
            gates: StackedGates::of(&[
                &lstm.input_gate,
                forget,
                &lstm.output_gate,
                &lstm.cell_gate,
            ]),
            d_hidden: lstm.d_hidden,
        }
    }

    /// # Shapes
    /// - x: `[batch, length, d_input]`
    /// - output: `[batch, length, d_hidden]`, the hidden state after each step
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        let [batch, length, _] = x.dims();
        let device = x.device();
        let projected = self.gates.project_inputs(x);
        let mut hidden = Tensor::<2>::zeros([batch, self.d_hidden], &device);
        let mut cell = Tensor::<2>::zeros([batch, self.d_hidden], &device);
        let mut outputs = Vec::with_capacity(length);
        for t in 0..length {
            let summed = at_step(&projected, t) + self.gates.project_hidden(hidden);
            let [input, forget, output, candidate] = split4(summed);
            cell = sigmoid(forget) * cell + sigmoid(input) * candidate.tanh();
            hidden = sigmoid(output) * cell.clone().tanh();
            outputs.push(hidden.clone());
        }
        // Every step's projected inputs are read: free them before the outputs are copied
        // into one sequence, rather than holding both.
        drop(projected);
        Tensor::stack(outputs, 1)
    }
}

fn split3(gates: Tensor<2>) -> [Tensor<2>; 3] {
    gates
        .chunk(3, 1)
        .try_into()
        .expect("three gates of equal width")
}

fn split4(gates: Tensor<2>) -> [Tensor<2>; 4] {
    gates
        .chunk(4, 1)
        .try_into()
        .expect("four gates of equal width")
}
