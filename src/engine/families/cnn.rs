//! The CNN: two 3x3 convolutions, a 2x2 max-pool, a dense layer and a classifier, over 8x8
//! images.

use burn::tensor::{Device, FloatDType};

use super::mlp::layer_by_layer;
use super::{Family, PanelField, panel};
use crate::engine::config::{InputKind, RunConfig, limits};
use crate::engine::data::Dataset;
use crate::engine::error::ConfigError;
use crate::engine::memory::LayerEstimate;
use crate::engine::memory::analytic::{F32, INT, kept_per_activated_layer, linear_tensors};
use crate::engine::memory::largest::{Oversized, TensorSizes};
use crate::engine::models::{self, Model, cnn_geometry};
use crate::engine::validate::widths;

pub struct Cnn;

impl Family for Cnn {
    fn accepts(&self, input: InputKind) -> bool {
        input == InputKind::Images
    }

    fn takes_int8_weights(&self) -> bool {
        true
    }

    fn check(&self, config: &RunConfig) -> Result<(), ConfigError> {
        let model = &config.model;
        if model.channels.len() != 2 {
            return Err(ConfigError::invalid(
                "model.channels",
                format!(
                    "needs exactly 2 entries (one per convolution), got {}",
                    model.channels.len()
                ),
            ));
        }
        widths("model.channels", &model.channels, limits::CHANNELS)?;
        if model.hidden.is_empty() {
            return Err(ConfigError::invalid(
                "model.hidden",
                "the CNN needs one entry: the width of its dense layer",
            ));
        }
        widths("model.hidden", &model.hidden[..1], limits::WIDTH)
    }

    fn build(&self, config: &RunConfig, data: &Dataset, device: &Device, _: FloatDType) -> Model {
        let model = &config.model;
        Model::Cnn(models::Cnn::new(
            [model.channels[0], model.channels[1]],
            model.hidden[0],
            data.classes,
            models::activation_config(model.activation),
            device,
        ))
    }

    fn layers(
        &self,
        config: &RunConfig,
        _width: usize,
        classes: usize,
        b: u64,
    ) -> Vec<LayerEstimate> {
        let [c1, c2] = [config.model.channels[0], config.model.channels[1]];
        let hidden = config.model.hidden[0];
        let (side, pooled) = cnn_geometry();
        let map = (side * side) as u64;
        let pooled_map = (pooled * pooled) as u64;
        let kept = kept_per_activated_layer(config);
        let conv =
            |from: usize, to: usize| vec![vec![to as u64, from as u64, 3, 3], vec![to as u64]];
        vec![
            LayerEstimate::new(
                format!("conv1 1->{c1} 3x3"),
                conv(1, c1),
                kept * b * c1 as u64 * map * F32,
            )
            .output(b * c1 as u64 * map * F32),
            LayerEstimate::new(
                format!("conv2 {c1}->{c2} 3x3"),
                conv(c1, c2),
                kept * b * c2 as u64 * map * F32,
            )
            .output(b * c2 as u64 * map * F32),
            // The pooled map, and the argmax indices max-pool backward needs.
            LayerEstimate::new(
                "maxpool 2x2".into(),
                Vec::new(),
                b * c2 as u64 * pooled_map * (F32 + INT),
            ),
            LayerEstimate::new(
                format!("dense {}x{hidden}", c2 as u64 * pooled_map),
                linear_tensors(c2 * pooled * pooled, hidden, true),
                kept * b * hidden as u64 * F32,
            )
            .output(b * hidden as u64 * F32)
            .adapting_all(),
            LayerEstimate::new(
                format!("classifier {hidden}x{classes}"),
                linear_tensors(hidden, classes, true),
                2 * b * classes as u64 * F32,
            )
            .adapting_all()
            .in_head_keeping((2 * classes + hidden) as u64 * b * F32),
        ]
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
        let model = &config.model;
        let (side, pooled) = cnn_geometry();
        let (c1, c2) = (model.channels[0] as u64, model.channels[1] as u64);
        let hidden = model.hidden[0] as u64;
        let pooled = (pooled * pooled) as u64;
        let area = (side * side) as u64;
        vec![
            sizes.weight("dense weight", c2 * pooled * hidden),
            sizes.activation("second convolution's output", sizes.batch * c2 * area),
            sizes.activation("first convolution's output", sizes.batch * c1 * area),
        ]
    }

    fn short(&self, config: &RunConfig) -> String {
        format!(
            "cnn {}-{}",
            config.model.channels[0], config.model.channels[1]
        )
    }

    fn panel(&self) -> &'static [PanelField] {
        const FIELDS: &[PanelField] = &[
            panel("channels", "model.channels", "two convolutions"),
            panel("dense width", "model.hidden", "one entry"),
        ];
        FIELDS
    }
}
