//! The MLP: dense layers over points, flattened images or a table's features.

use burn::tensor::{Device, FloatDType};

use super::{Family, PanelField, panel};
use crate::engine::config::{InputKind, RunConfig, limits};
use crate::engine::data::{Dataset, classes_and_targets, input_width};
use crate::engine::error::ConfigError;
use crate::engine::memory::LayerEstimate;
use crate::engine::memory::analytic::{F32, kept_per_activated_layer, linear_tensors};
use crate::engine::memory::largest::{Oversized, TensorSizes};
use crate::engine::models::{self, Model};
use crate::engine::validate::{int_in, widths};

pub struct Mlp;

impl Family for Mlp {
    fn accepts(&self, input: InputKind) -> bool {
        matches!(
            input,
            InputKind::Points | InputKind::Images | InputKind::Features
        )
    }

    fn takes_int8_weights(&self) -> bool {
        true
    }

    fn has_fused_kernels(&self) -> bool {
        true
    }

    fn check(&self, config: &RunConfig) -> Result<(), ConfigError> {
        let model = &config.model;
        int_in("model.hidden", model.hidden.len(), limits::HIDDEN_LAYERS).map_err(|_| {
            ConfigError::out_of_range(
                "model.hidden",
                format!("{} layers", model.hidden.len()),
                "0..=16 layers",
            )
        })?;
        widths("model.hidden", &model.hidden, limits::WIDTH)
    }

    fn build(&self, config: &RunConfig, data: &Dataset, device: &Device, _: FloatDType) -> Model {
        let widths: Vec<usize> = std::iter::once(data.train.inputs.width())
            .chain(config.model.hidden.iter().copied())
            .chain(std::iter::once(data.classes))
            .collect();
        let activation = models::activation_config(config.model.activation);
        Model::Mlp(models::Mlp::new(&widths, activation, device))
    }

    fn layers(
        &self,
        config: &RunConfig,
        width: usize,
        classes: usize,
        b: u64,
    ) -> Vec<LayerEstimate> {
        let widths: Vec<usize> = std::iter::once(width)
            .chain(config.model.hidden.iter().copied())
            .chain(std::iter::once(classes))
            .collect();
        let last = widths.len() - 2;
        let kept = kept_per_activated_layer(config);
        widths
            .windows(2)
            .enumerate()
            .map(|(i, pair)| {
                let output = b * pair[1] as u64 * F32;
                let layer = LayerEstimate::new(
                    format!("dense{} {}x{}", i + 1, pair[0], pair[1]),
                    linear_tensors(pair[0], pair[1], true),
                    0,
                )
                .adapting_all();
                if i < last {
                    LayerEstimate {
                        activation_bytes: kept * output,
                        ..layer.output(output)
                    }
                } else {
                    // The output layer keeps its logits and the log-softmax of the loss; with a
                    // frozen body, also its input for its weight's gradient (otherwise counted
                    // as the layer before's output).
                    let input = b * pair[0] as u64 * F32;
                    LayerEstimate {
                        activation_bytes: 2 * output,
                        ..layer.in_head_keeping(2 * output + input)
                    }
                }
            })
            .collect()
    }

    /// One layer at a time: its input, its output before and after the activation.
    fn inference_bytes(&self, config: &RunConfig, n: u64) -> u64 {
        layer_by_layer(config, n, |l| l.activation_bytes)
    }

    /// The gradient of the largest layer output.
    fn backward_working_set(&self, config: &RunConfig, b: u64) -> u64 {
        layer_by_layer(config, b, |l| l.output_bytes)
    }

    fn lora_branch_gradient(&self, _config: &RunConfig, layers: &[LayerEstimate], _b: u64) -> u64 {
        layers.iter().map(|l| l.output_bytes).max().unwrap_or(0)
    }

    fn largest_tensors(&self, config: &RunConfig, sizes: &TensorSizes) -> Vec<Oversized> {
        let data = &config.data;
        let input = input_width(data) as u64;
        let classes = classes_and_targets(data).0 as u64;
        let widths: Vec<u64> = std::iter::once(input)
            .chain(config.model.hidden.iter().map(|&w| w as u64))
            .chain(std::iter::once(classes))
            .collect();
        let mut tensors = Vec::new();
        for (i, pair) in widths.windows(2).enumerate() {
            tensors.push(sizes.weight(&format!("layer {i} weight"), pair[0] * pair[1]));
        }
        let widest = widths.iter().copied().max().unwrap_or(1);
        tensors.push(sizes.activation("widest activation", sizes.batch * widest));
        tensors
    }

    fn short(&self, config: &RunConfig) -> String {
        format!(
            "mlp {}",
            config
                .model
                .hidden
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join("-")
        )
    }

    fn panel(&self) -> &'static [PanelField] {
        const FIELDS: &[PanelField] = &[panel("hidden widths", "model.hidden", "comma-separated")];
        FIELDS
    }
}

/// The largest of one figure over the layers of the MLP or CNN (as the analytic model sizes
/// them, mixed precision included).
pub(super) fn layer_by_layer(config: &RunConfig, b: u64, figure: fn(&LayerEstimate) -> u64) -> u64 {
    crate::engine::memory::analytic::layers_for(config, b)
        .iter()
        .map(figure)
        .max()
        .unwrap_or(0)
}
