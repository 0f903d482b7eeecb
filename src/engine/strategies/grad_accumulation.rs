//! `strategies.grad_accumulation`: a batch of `b` samples as `k` micro-batches, each one's loss
//! scaled by its share of the batch so the summed gradients equal the whole batch's.

use crate::engine::config::RunConfig;

use super::Strategy;

pub struct Accumulation(usize);

impl Accumulation {
    pub fn new(config: &RunConfig) -> Self {
        Self(config.strategies.grad_accumulation)
    }
}

impl Strategy for Accumulation {
    fn split_batch<'a>(&self, picked: &'a [usize]) -> Option<Vec<&'a [usize]>> {
        (self.0 > 1).then(|| micro_batches(picked, self.0))
    }
}

/// Cut `indices` into `k` micro-batches whose sizes differ by at most one.
pub fn micro_batches(indices: &[usize], k: usize) -> Vec<&[usize]> {
    let base = indices.len() / k;
    let extra = indices.len() % k;
    let mut out = Vec::with_capacity(k);
    let mut start = 0;
    for i in 0..k {
        let len = base + usize::from(i < extra);
        out.push(&indices[start..start + len]);
        start += len;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_batches_cover_the_batch_in_order() {
        let indices: Vec<usize> = (0..10).collect();
        let parts = micro_batches(&indices, 3);
        assert_eq!(
            parts.iter().map(|p| p.len()).collect::<Vec<_>>(),
            vec![4, 3, 3]
        );
        assert_eq!(parts.concat(), indices);
        let mut config = RunConfig {
            batch_size: 10,
            ..RunConfig::default()
        };
        config.strategies.grad_accumulation = 3;
        assert_eq!(config.largest_micro_batch(), 4);
    }
}
