//! A user's table as a data set: rows shuffled by the seed, split by `data.test_fraction`, and
//! each feature standardised by the training split's mean and spread (the test split is
//! scaled the same way, so it tells nothing to the training).

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::engine::table::{LabelledTable, Source};

use super::{HostInputs, Split};

/// How one feature was standardised: `(value - mean) / spread`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FeatureScale {
    pub name: String,
    /// Mean over the training split.
    pub mean: f64,
    /// Standard deviation over the training split (population form); a constant column is
    /// divided by 1 instead, so it trains as zeros.
    pub spread: f64,
}

/// One class and how many rows of each split hold it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassCount {
    pub name: String,
    pub train: usize,
    pub test: usize,
}

/// What a run on a table records about it: which bytes, how it was labelled and scaled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableSummary {
    pub source: Source,
    pub rows: usize,
    pub columns: usize,
    pub label: String,
    pub classes: Vec<ClassCount>,
    pub standardisation: Vec<FeatureScale>,
}

/// The table's rows in the seed's order, split at `train_len`, standardised by the training
/// split; and the scales used.
pub(super) fn split(
    table: &LabelledTable,
    train_len: usize,
    rng: &mut StdRng,
) -> (Split, Split, Vec<FeatureScale>) {
    let width = table.width();
    let mut order: Vec<usize> = (0..table.rows()).collect();
    order.shuffle(rng);
    let (train_rows, test_rows) = order.split_at(train_len);
    let scales = scales(table, train_rows);
    let to_split = |rows: &[usize]| {
        let mut values = Vec::with_capacity(rows.len() * width);
        for &row in rows {
            let raw = &table.values[row * width..(row + 1) * width];
            values.extend(
                raw.iter()
                    .zip(&scales)
                    .map(|(&v, s)| ((v as f64 - s.mean) / s.spread) as f32),
            );
        }
        Split {
            inputs: HostInputs::Floats { values, width },
            targets: rows.iter().map(|&row| table.targets[row]).collect(),
            len: rows.len(),
        }
    };
    (to_split(train_rows), to_split(test_rows), scales)
}

/// Mean and spread of each feature over `rows`, in f64 (an f32 sum of a large column drifts).
fn scales(table: &LabelledTable, rows: &[usize]) -> Vec<FeatureScale> {
    let width = table.width();
    let n = rows.len().max(1) as f64;
    let mut sum = vec![0.0f64; width];
    for &row in rows {
        for (s, &v) in sum
            .iter_mut()
            .zip(&table.values[row * width..(row + 1) * width])
        {
            *s += v as f64;
        }
    }
    let mean: Vec<f64> = sum.iter().map(|s| s / n).collect();
    let mut squares = vec![0.0f64; width];
    for &row in rows {
        for ((s, &v), m) in squares
            .iter_mut()
            .zip(&table.values[row * width..(row + 1) * width])
            .zip(&mean)
        {
            *s += (v as f64 - m).powi(2);
        }
    }
    table
        .features
        .iter()
        .zip(mean.iter().zip(&squares))
        .map(|(name, (&mean, &squares))| {
            let spread = (squares / n).sqrt();
            FeatureScale {
                name: name.clone(),
                mean,
                spread: if spread > 0.0 && spread.is_finite() {
                    spread
                } else {
                    1.0
                },
            }
        })
        .collect()
}

/// The summary's record of a run on `table`, whose splits are `train` and `test`.
pub fn summary(
    table: &LabelledTable,
    train: &Split,
    test: &Split,
    standardisation: &[FeatureScale],
) -> TableSummary {
    let count = |split: &Split, class: usize| {
        split
            .targets
            .iter()
            .filter(|&&t| t as usize == class)
            .count()
    };
    TableSummary {
        source: table.source.clone(),
        rows: table.rows(),
        columns: table.columns(),
        label: table.label.clone(),
        classes: table
            .classes
            .iter()
            .enumerate()
            .map(|(class, name)| ClassCount {
                name: name.clone(),
                train: count(train, class),
                test: count(test, class),
            })
            .collect(),
        standardisation: standardisation.to_vec(),
    }
}
