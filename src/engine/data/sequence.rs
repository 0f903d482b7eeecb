//! Synthetic sequence tasks. A sample is `seq_len` random tokens followed by `seq_len` query
//! tokens (the id `vocab`); the model must answer at each query position with the copied,
//! reversed or sorted sequence. Asking after the whole input has been read lets a one-way RNG
//! solve reverse and sort too.

use rand::RngExt;
use rand::rngs::StdRng;

use crate::engine::config::DataKind;

/// One sample: input tokens (length `2 * seq_len`) and targets (length `seq_len`).
pub(crate) fn generate(
    kind: DataKind,
    n: usize,
    seq_len: usize,
    vocab: usize,
    rng: &mut StdRng,
) -> Vec<(Vec<i64>, Vec<i64>)> {
    let query = vocab as i64;
    (0..n)
        .map(|_| {
            let tokens: Vec<i64> = (0..seq_len)
                .map(|_| rng.random_range(0..vocab as i64))
                .collect();
            let mut target = tokens.clone();
            match kind {
                DataKind::Copy => {}
                DataKind::Reverse => target.reverse(),
                DataKind::Sort => target.sort_unstable(),
                other => unreachable!("{} is not a sequence task", other.name()),
            }
            let mut input = tokens;
            input.extend(std::iter::repeat_n(query, seq_len));
            (input, target)
        })
        .collect()
}
