//! The training loop's side of a forward pass: at each activation, keep the input alive when a
//! strategy asks, and read the allocator when probing layer by layer. (Budget checks need no
//! reading here: the meter's high-water mark sees every launch between its check points, and
//! a sync per layer would change what burn's fusion does.)

use burn::nn::activation::Activation;
use burn::tensor::Tensor;

use crate::engine::error::EngineError;
use crate::engine::memory::meter::Meter;
use crate::engine::models::{LayerHook, Op};
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

/// Bytes a forward pass leaves alive, by the op that made them: the allocator's bytes in use
/// after each op the model names, less those after the op before. Through autodiff that is
/// what backward will find; each reading syncs, so this is a probe, not a training pass.
pub(crate) struct KeptByOp<'m> {
    meter: &'m mut Meter,
    last: u64,
    /// Signed: a later op may free what an earlier one made (the mask, a temporary).
    kept: std::collections::BTreeMap<Op, i64>,
    breach: Option<EngineError>,
}

impl<'m> KeptByOp<'m> {
    pub fn new(meter: &'m mut Meter) -> Result<Self, EngineError> {
        let last = meter.peek(Phase::Forward)?.pooled_in_use_bytes;
        Ok(Self {
            meter,
            last,
            kept: Default::default(),
            breach: None,
        })
    }

    /// Each op's bytes, largest first (ops that left nothing are left out).
    pub fn finish(self) -> Result<Vec<(Op, u64)>, EngineError> {
        if let Some(err) = self.breach {
            return Err(err);
        }
        let mut kept: Vec<(Op, u64)> = self
            .kept
            .into_iter()
            .filter(|&(_, bytes)| bytes > 0)
            .map(|(op, bytes)| (op, bytes as u64))
            .collect();
        kept.sort_by_key(|&(_, bytes)| std::cmp::Reverse(bytes));
        Ok(kept)
    }
}

impl LayerHook for KeptByOp<'_> {
    fn activate<const D: usize>(&mut self, activation: &Activation, x: Tensor<D>) -> Tensor<D> {
        activation.forward(x)
    }

    fn after(&mut self, op: Op) {
        if self.breach.is_some() {
            return;
        }
        match self.meter.peek(Phase::Forward) {
            Ok(reading) => {
                let now = reading.pooled_in_use_bytes;
                *self.kept.entry(op).or_default() += now as i64 - self.last as i64;
                self.last = now;
            }
            Err(err) => self.breach = Some(err),
        }
    }
}
