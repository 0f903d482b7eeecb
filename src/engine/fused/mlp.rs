//! A ReLU MLP trained by vramlab's own kernels: forward, softmax cross-entropy, backward and the
//! optimizer step for all layers in 3L + 1 dispatches, with no autodiff graph.
//!
//! What it keeps: the parameters, their gradients and the optimizer's moments in three or four
//! flat buffers; during a step, each layer's output (what ReLU's derivative needs) and each
//! layer's output gradient. Nothing else: no graph, no saved inputs of element-wise ops, no
//! temporaries of an unfused optimizer. That difference is measured by the allocator, like
//! every other strategy's.

use std::cell::RefCell;
use std::collections::HashMap;

use burn::cubecl::client::Client;
use burn::cubecl::server::Handle;
use burn::tensor::Tensor;

use super::kernels::{Kernel, launch, read_f32, scratch_f32, upload_f32, upload_u32};
use crate::engine::config::OptimizerKind;
use crate::engine::models::Mlp;

/// Where one layer's weights and bias sit in the flat buffers.
#[derive(Clone, Copy, Debug)]
struct Layer {
    inputs: usize,
    outputs: usize,
    weight_at: usize,
    bias_at: usize,
}

pub struct FusedMlp {
    client: Client,
    layers: Vec<Layer>,
    param_count: usize,
    params: Handle,
    grads: Handle,
    /// Momentum's velocity or Adam's first moment (one element for plain SGD).
    first: Handle,
    /// Adam's second moment (one element otherwise).
    second: Handle,
    optimizer: OptimizerKind,
    /// Optimizer steps taken (Adam's bias correction).
    steps: u32,
    /// Per batch size, the `dims` buffer of each layer and of the loss: written once, reused.
    dims: RefCell<HashMap<usize, (Vec<Handle>, Handle)>>,
}

/// The buffers one forward pass leaves behind.
pub struct ForwardPass {
    input: Handle,
    /// Each layer's output, the logits last.
    outputs: Vec<Handle>,
}

async fn host_values<const D: usize>(tensor: Tensor<D>) -> Result<Vec<f32>, String> {
    tensor
        .into_data_async()
        .await
        .map_err(|err| err.to_string())?
        .try_to_vec::<f32>()
        .map_err(|err| format!("{err:?}"))
}

impl FusedMlp {
    /// Take over `mlp`'s initial weights (so both kernel paths start from the same point).
    pub async fn from_mlp(
        mlp: &Mlp,
        client: Client,
        optimizer: OptimizerKind,
    ) -> Result<Self, String> {
        let mut flat = Vec::new();
        let mut layers = Vec::new();
        for linear in mlp.dense_layers() {
            let [inputs, outputs] = linear.weight.dims();
            let weight_at = flat.len();
            flat.extend(host_values(linear.weight.val()).await?);
            let bias_at = flat.len();
            match &linear.bias {
                Some(bias) => flat.extend(host_values(bias.val()).await?),
                None => flat.extend(std::iter::repeat_n(0.0, outputs)),
            }
            layers.push(Layer {
                inputs,
                outputs,
                weight_at,
                bias_at,
            });
        }
        let param_count = flat.len();
        let moment_len = |needed: bool| if needed { param_count } else { 1 };
        let zeros = |len: usize| upload_f32(&client, &vec![0.0; len]);
        let first = zeros(moment_len(optimizer != OptimizerKind::Sgd));
        let second = zeros(moment_len(optimizer == OptimizerKind::Adam));
        Ok(Self {
            params: upload_f32(&client, &flat),
            grads: scratch_f32(&client, param_count),
            first,
            second,
            client,
            layers,
            param_count,
            optimizer,
            steps: 0,
            dims: RefCell::new(HashMap::new()),
        })
    }

    /// The `dims` buffers of each layer and of the loss for `batch`.
    fn dims(&self, batch: usize) -> (Vec<Handle>, Handle) {
        let mut cache = self.dims.borrow_mut();
        let entry = cache.entry(batch).or_insert_with(|| {
            let last = self.layers.len() - 1;
            let per_layer = self
                .layers
                .iter()
                .enumerate()
                .map(|(i, layer)| {
                    let row = [
                        batch,
                        layer.inputs,
                        layer.outputs,
                        layer.weight_at,
                        layer.bias_at,
                        usize::from(i < last),
                    ]
                    .map(|v| v as u32);
                    upload_u32(&self.client, &row)
                })
                .collect();
            let classes = self.layers[last].outputs as u32;
            let loss = upload_u32(&self.client, &[batch as u32, classes]);
            (per_layer, loss)
        });
        entry.clone()
    }

    /// Upload a batch of `rows` (row-major, `inputs` wide).
    pub fn upload(&self, rows: &[f32]) -> Handle {
        upload_f32(&self.client, rows)
    }

    pub fn upload_labels(&self, labels: &[u32]) -> Handle {
        upload_u32(&self.client, labels)
    }

    /// Layer `i`'s output for `source`, in a new buffer.
    fn forward_layer(&self, dims: &[Handle], i: usize, source: &Handle, batch: usize) -> Handle {
        let outputs = self.layers[i].outputs;
        let output = scratch_f32(&self.client, batch * outputs);
        launch(
            &self.client,
            Kernel::Forward,
            batch.div_ceil(4) * outputs.div_ceil(4),
            &[&dims[i], &self.params, source, &output],
        );
        output
    }

    /// Forward through every layer, calling `after_layer` once each output exists (memory
    /// readings, budget checks).
    pub fn forward<E>(
        &self,
        input: Handle,
        batch: usize,
        mut after_layer: impl FnMut(usize) -> Result<(), E>,
    ) -> Result<ForwardPass, E> {
        let (dims, _) = self.dims(batch);
        let mut outputs: Vec<Handle> = Vec::with_capacity(self.layers.len());
        for i in 0..self.layers.len() {
            let output = self.forward_layer(&dims, i, outputs.last().unwrap_or(&input), batch);
            outputs.push(output);
            after_layer(i)?;
        }
        Ok(ForwardPass { input, outputs })
    }

    /// Forward without keeping anything for backward: each layer's input is dropped once its
    /// output exists, as a no-grad pass does. Returns the logits.
    pub fn infer<E>(
        &self,
        input: Handle,
        batch: usize,
        mut after_layer: impl FnMut(usize) -> Result<(), E>,
    ) -> Result<Handle, E> {
        let (dims, _) = self.dims(batch);
        let mut current = input;
        for i in 0..self.layers.len() {
            current = self.forward_layer(&dims, i, &current, batch);
            after_layer(i)?;
        }
        Ok(current)
    }

    /// Mean cross-entropy of the logits against `labels` (one class index per sample) in a
    /// one-element buffer, and its gradient with respect to the logits.
    pub fn loss(&self, pass: &ForwardPass, labels: &Handle, batch: usize) -> (Handle, Handle) {
        let (_, loss_dims) = self.dims(batch);
        let logits = pass.outputs.last().expect("at least one layer");
        let classes = self.layers.last().expect("at least one layer").outputs;
        let d_logits = scratch_f32(&self.client, batch * classes);
        let loss = scratch_f32(&self.client, 1);
        launch(
            &self.client,
            Kernel::Loss,
            1,
            &[&loss_dims, logits, labels, &d_logits, &loss],
        );
        (loss, d_logits)
    }

    /// Gradients of every parameter into the gradient buffer, last layer first. The output
    /// gradients of a layer are dropped as soon as the layer below has its own.
    pub fn backward(&self, pass: ForwardPass, d_logits: Handle, batch: usize) {
        let (dims, _) = self.dims(batch);
        let ForwardPass { input, outputs } = pass;
        let mut d_out = d_logits;
        for i in (0..self.layers.len()).rev() {
            let layer = self.layers[i];
            let below = if i == 0 { &input } else { &outputs[i - 1] };
            launch(
                &self.client,
                Kernel::BackwardWeights,
                (layer.inputs + 1).div_ceil(4) * layer.outputs.div_ceil(4),
                &[&dims[i], below, &d_out, &self.grads],
            );
            if i > 0 {
                let d_in = scratch_f32(&self.client, batch * layer.inputs);
                launch(
                    &self.client,
                    Kernel::BackwardInput,
                    batch.div_ceil(4) * layer.inputs.div_ceil(4),
                    &[&dims[i], &self.params, &d_out, below, &d_in],
                );
                d_out = d_in;
            }
        }
    }

    /// One optimizer step with the config's optimizer, with the coefficients burn's path is
    /// built with (`OptimizerKind`'s coefficients).
    pub fn optimizer_step(&mut self, learning_rate: f64) {
        self.steps += 1;
        let t = self.steps as i32;
        let (kind, beta1, beta2) = match self.optimizer {
            OptimizerKind::Sgd => (0.0, 0.0, 0.0),
            OptimizerKind::Momentum => (1.0, OptimizerKind::MOMENTUM as f32, 0.0),
            OptimizerKind::Adam => (
                2.0,
                OptimizerKind::ADAM_BETAS.0,
                OptimizerKind::ADAM_BETAS.1,
            ),
            other => unreachable!(
                "strategies::kernels::check refuses optimizer = {} with the fused kernels",
                other.name()
            ),
        };
        let hyper = [
            learning_rate as f32,
            kind,
            beta1,
            beta2,
            OptimizerKind::ADAM_EPSILON,
            1.0 - beta1.powi(t),
            1.0 - beta2.powi(t),
            f32::from_bits(self.param_count as u32),
        ];
        let hyper = upload_f32(&self.client, &hyper);
        launch(
            &self.client,
            Kernel::Optimizer,
            self.param_count,
            &[&hyper, &self.params, &self.grads, &self.first, &self.second],
        );
    }

    /// Read back buffers of f32s.
    pub async fn read(&self, handles: Vec<Handle>) -> Result<Vec<Vec<f32>>, String> {
        read_f32(&self.client, handles).await
    }
}
