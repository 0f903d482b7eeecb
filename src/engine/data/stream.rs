//! A synthetic language for next-token prediction: token streams drawn from a fixed random
//! Markov chain. The chain is drawn once from the run's seed: each token is followed by one of
//! [`SUCCESSORS`] tokens with the fixed probabilities [`WEIGHTS`]. A model that learns the chain
//! predicts the next token with a loss near the chain's entropy ([`entropy`], about 1.21 nats),
//! well below a uniform guess's `ln(vocab)`; the chain is `vocab x SUCCESSORS` ids, so a
//! 128k-token vocabulary costs 2 MiB, not a `vocab x vocab` table.

use rand::RngExt;
use rand::rngs::StdRng;

/// How many tokens may follow each token.
pub(crate) const SUCCESSORS: usize = 4;
/// Each successor's weight, out of [`WEIGHT_TOTAL`]: 1/2, 1/4, 1/8, 1/8.
const WEIGHTS: [u32; SUCCESSORS] = [4, 2, 1, 1];
const WEIGHT_TOTAL: u32 = 8;

/// The chain's entropy per token in nats, the lowest loss a model can reach on it (when a
/// token's successors are distinct, which a large vocabulary makes almost certain).
pub fn entropy() -> f64 {
    WEIGHTS
        .iter()
        .map(|&w| {
            let p = f64::from(w) / f64::from(WEIGHT_TOTAL);
            -p * p.ln()
        })
        .sum()
}

/// The successors of each token, drawn uniformly (a token may follow itself).
struct Chain {
    successors: Vec<[u32; SUCCESSORS]>,
}

impl Chain {
    fn new(vocab: usize, rng: &mut StdRng) -> Self {
        let successors = (0..vocab)
            .map(|_| std::array::from_fn(|_| rng.random_range(0..vocab as u32)))
            .collect();
        Self { successors }
    }

    fn next(&self, token: u32, rng: &mut StdRng) -> u32 {
        let mut draw = rng.random_range(0..WEIGHT_TOTAL);
        for (&successor, &weight) in self.successors[token as usize].iter().zip(&WEIGHTS) {
            if draw < weight {
                return successor;
            }
            draw -= weight;
        }
        unreachable!("the weights sum to WEIGHT_TOTAL")
    }
}

/// `n` samples of `seq_len` tokens, row-major: the inputs, and the targets (each input's next
/// token: one more token is drawn per sample than it shows).
pub(crate) fn generate(
    n: usize,
    seq_len: usize,
    vocab: usize,
    rng: &mut StdRng,
) -> (Vec<i64>, Vec<i64>) {
    let chain = Chain::new(vocab, rng);
    let mut inputs = Vec::with_capacity(n * seq_len);
    let mut targets = Vec::with_capacity(n * seq_len);
    for _ in 0..n {
        let mut token = rng.random_range(0..vocab as u32);
        for _ in 0..seq_len {
            inputs.push(i64::from(token));
            token = chain.next(token, rng);
            targets.push(i64::from(token));
        }
    }
    (inputs, targets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn each_token_has_at_most_its_successors_after_it() {
        let (inputs, targets) = generate(64, 32, 100, &mut StdRng::seed_from_u64(1));
        let mut seen: Vec<std::collections::BTreeSet<i64>> = vec![Default::default(); 100];
        for (&a, &b) in inputs.iter().zip(&targets) {
            seen[a as usize].insert(b);
        }
        assert!(seen.iter().all(|next| next.len() <= SUCCESSORS));
        assert!(seen.iter().any(|next| next.len() > 1), "the chain branches");
    }

    #[test]
    fn the_entropy_is_that_of_a_half_a_quarter_and_two_eighths() {
        let want = 1.75 * std::f64::consts::LN_2;
        assert!((entropy() - want).abs() < 1e-12, "{}", entropy());
    }
}
