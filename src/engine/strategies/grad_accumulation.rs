//! `strategies.grad_accumulation`: a batch of `b` samples as `k` micro-batches, each one's loss
//! scaled by its share of the batch so the summed gradients equal the whole batch's.

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

/// The size of the largest of [`micro_batches`]' parts: what one forward pass holds.
pub fn largest_micro_batch(batch: usize, k: usize) -> usize {
    batch.div_ceil(k)
}

/// The factor a micro-batch's mean loss is multiplied by: its share of the batch.
pub fn loss_scale(micro_len: usize, batch_len: usize) -> f32 {
    micro_len as f32 / batch_len as f32
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
        assert_eq!(largest_micro_batch(10, 3), 4);
        let scales: f32 = parts.iter().map(|p| loss_scale(p.len(), 10)).sum();
        assert!((scales - 1.0).abs() < 1e-6);
    }
}
