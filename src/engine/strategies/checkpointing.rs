//! `strategies.checkpointing`: gradient checkpointing is a property of burn's autodiff device,
//! so the strategy is the choice of device the model trains on.

use burn::tensor::Device;

use crate::engine::config::Checkpointing;

/// The autodiff device for training on `base`.
pub fn training_device(base: &Device, checkpointing: Checkpointing) -> Device {
    let device = base.clone().autodiff();
    match checkpointing {
        Checkpointing::None => device,
        Checkpointing::Balanced => device.gradient_checkpointing(),
    }
}
