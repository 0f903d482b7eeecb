//! `strategies.data_residency`: the data-loading lesson for a GPU reached through wgpu, which
//! has no pinned host memory to tune. `host` copies every batch from host memory to the device
//! (one upload per step); `device` uploads the training split once and gathers each batch on
//! the device by index, trading the split's bytes for the per-step copy. Evaluation reads the
//! test split from the host in both modes.

use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::engine::config::{DataResidency, RunConfig};
use crate::engine::data::{Batch, BatchInputs, Split};
use crate::engine::error::EngineError;
use crate::engine::outcome::Site;
use crate::engine::phase::Phase;

use super::{Setup, Strategy};

/// A split living on the device.
struct ResidentSplit {
    inputs: BatchInputs,
    /// `[len, targets_per_sample]`, so a row gather keeps each sample's targets together.
    targets: Tensor<2, Int>,
}

impl ResidentSplit {
    fn upload(split: &Split, targets_per_sample: usize, device: &Device) -> Self {
        let all = split.range_batch(0, split.len, targets_per_sample, device);
        Self {
            inputs: all.inputs,
            targets: all.targets.reshape([split.len, targets_per_sample]),
        }
    }

    /// The samples at `indices`, gathered on the device (only the indices travel).
    fn batch(&self, indices: &[usize], device: &Device) -> Batch {
        let n = indices.len();
        let ids: Vec<i64> = indices.iter().map(|&i| i as i64).collect();
        let ids = Tensor::<1, Int>::from_data(TensorData::new(ids, [n]), device);
        let inputs = match &self.inputs {
            BatchInputs::Floats(x) => BatchInputs::Floats(x.clone().select(0, ids.clone())),
            BatchInputs::Tokens(t) => BatchInputs::Tokens(t.clone().select(0, ids.clone())),
        };
        let per_sample = self.targets.dims()[1];
        Batch {
            inputs,
            targets: self
                .targets
                .clone()
                .select(0, ids)
                .reshape([n * per_sample]),
            len: n,
        }
    }
}

pub struct Residency {
    on: bool,
    split: Option<ResidentSplit>,
}

impl Residency {
    pub fn new(config: &RunConfig) -> Self {
        Self {
            on: config.strategies.data_residency == DataResidency::Device,
            split: None,
        }
    }
}

impl Strategy for Residency {
    fn setup(&mut self, run: &mut Setup<'_>) -> Result<(), EngineError> {
        if self.on {
            let data = run.data;
            self.split = Some(ResidentSplit::upload(
                &data.train,
                data.targets_per_sample,
                run.device,
            ));
            run.meter.check_budget(Phase::Setup, Site::ResidentData)?;
        }
        Ok(())
    }

    fn batch(&self, indices: &[usize], device: &Device) -> Option<Batch> {
        self.split
            .as_ref()
            .map(|split| split.batch(indices, device))
    }
}
