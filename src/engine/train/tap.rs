//! The training loop's side of a forward pass: at each activation, keep the input alive when a
//! strategy asks, and read the allocator when probing layer by layer. (Budget checks need no
//! reading here: the meter's high-water mark sees every launch between its check points, and
//! a sync per layer would change what burn's fusion does.)

use burn::nn::activation::Activation;
use burn::tensor::Tensor;

use crate::engine::error::EngineError;
use crate::engine::memory::meter::Meter;
use crate::engine::models::LayerHook;
use crate::engine::phase::Phase;

pub(crate) struct LayerTap<'m> {
    keep_inputs: bool,
    meter: &'m mut Meter,
    /// In use after each activation (a reading without a budget check).
    probe: Option<Vec<u64>>,
    /// The first failed reading; the pass runs on and the caller returns it.
    breach: Option<EngineError>,
}

impl<'m> LayerTap<'m> {
    pub fn new(keep_inputs: bool, meter: &'m mut Meter) -> Self {
        Self {
            keep_inputs,
            meter,
            probe: None,
            breach: None,
        }
    }

    pub fn probing(mut self) -> Self {
        self.probe = Some(Vec::new());
        self
    }

    /// After the pass: the probe's readings, or the first failure.
    pub fn finish(self) -> Result<Vec<u64>, EngineError> {
        match self.breach {
            Some(err) => Err(err),
            None => Ok(self.probe.unwrap_or_default()),
        }
    }
}

impl LayerTap<'_> {
    fn read_after_activation(&mut self) -> Result<(), EngineError> {
        if let Some(readings) = &mut self.probe {
            readings.push(self.meter.peek(Phase::Eval)?.in_use_bytes);
        }
        Ok(())
    }
}

impl LayerHook for LayerTap<'_> {
    fn activate<const D: usize>(&mut self, activation: &Activation, x: Tensor<D>) -> Tensor<D> {
        let (output, kept_input) = if self.keep_inputs {
            (activation.forward(x.clone()), Some(x))
        } else {
            (activation.forward(x), None)
        };
        if self.breach.is_none() {
            self.breach = self.read_after_activation().err();
        }
        drop(kept_input);
        output
    }
}
