//! The training loop's side of a forward pass: at each activation, keep the input alive when a
//! strategy asks, read the allocator (budget checks, per-layer probes), and collect the layer's
//! output for strategies that keep it.

use burn::nn::activation::Activation;
use burn::tensor::Tensor;

use crate::engine::error::EngineError;
use crate::engine::memory::meter::Meter;
use crate::engine::models::LayerHook;
use crate::engine::outcome::Site;
use crate::engine::phase::Phase;

pub(crate) struct LayerTap<'m> {
    keep_inputs: bool,
    meter: &'m mut Meter,
    /// Check the budget after each activation, blaming this phase.
    budget: Option<Phase>,
    /// In use after each activation (a reading without a budget check).
    probe: Option<Vec<u64>>,
    /// Activated outputs, flattened to `[batch, -1]`, for the strategies that keep them.
    outputs: Option<Vec<Tensor<2>>>,
    /// The first failed check or reading; the pass runs on and the caller returns it.
    breach: Option<EngineError>,
    layers: usize,
}

impl<'m> LayerTap<'m> {
    pub fn new(keep_inputs: bool, meter: &'m mut Meter) -> Self {
        Self {
            keep_inputs,
            meter,
            budget: None,
            probe: None,
            outputs: None,
            breach: None,
            layers: 0,
        }
    }

    pub fn checking_budget(mut self, phase: Phase) -> Self {
        self.budget = Some(phase);
        self
    }

    pub fn probing(mut self) -> Self {
        self.probe = Some(Vec::new());
        self
    }

    pub fn collecting(mut self, outputs: bool) -> Self {
        self.outputs = outputs.then(Vec::new);
        self
    }

    /// After the pass: the collected outputs and probe readings, or the first failure.
    pub fn finish(self) -> Result<(Vec<Tensor<2>>, Vec<u64>), EngineError> {
        match self.breach {
            Some(err) => Err(err),
            None => Ok((
                self.outputs.unwrap_or_default(),
                self.probe.unwrap_or_default(),
            )),
        }
    }
}

impl LayerTap<'_> {
    fn read_after_activation(&mut self) -> Result<(), EngineError> {
        if let Some(readings) = &mut self.probe {
            readings.push(self.meter.peek(Phase::Eval)?.in_use_bytes);
        }
        if let Some(phase) = self.budget {
            self.meter
                .check_budget(phase, Site::LayerOutput(self.layers))?;
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
        self.layers += 1;
        if self.breach.is_none() {
            self.breach = self.read_after_activation().err();
        }
        drop(kept_input);
        if let Some(outputs) = &mut self.outputs {
            let batch = output.dims()[0] as i32;
            outputs.push(output.clone().reshape([batch, -1]));
        }
        output
    }
}
