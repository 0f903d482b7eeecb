//! Data sets, generated or embedded, split into train and test, and turned into device batches.
//!
//! Everything is seeded by the run's seed: the same config gives the same samples, split and
//! batch order.

mod digits;
mod playground;
mod sequence;
mod stream;
mod table;
pub mod table_inputs;

use burn::tensor::{Device, Int, Tensor, TensorData};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use super::config::{DataConfig, DataKind, InputKind};

pub use stream::entropy as stream_entropy;
pub use table::{ClassCount, FeatureScale, TableSummary};

/// Host-side samples of one split, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Split {
    /// Float features (`width` per sample) or token ids (`width` per sample).
    pub inputs: HostInputs,
    /// Class ids: one per sample, or `seq_len` per sample for the token tasks.
    pub targets: Vec<i64>,
    pub len: usize,
}

#[derive(Clone, Debug, PartialEq)]
pub enum HostInputs {
    Floats {
        values: Vec<f32>,
        width: usize,
    },
    Tokens {
        values: Vec<i64>,
        width: usize,
    },
    /// No samples, only their shape: a plan's batches are zeros of the right size, so a model
    /// far bigger than this machine's memory needs no data set (see [`Dataset::shapes`]).
    Shape {
        width: usize,
        tokens: bool,
    },
}

impl HostInputs {
    pub fn width(&self) -> usize {
        match self {
            Self::Floats { width, .. } | Self::Tokens { width, .. } | Self::Shape { width, .. } => {
                *width
            }
        }
    }
}

/// A whole data set: both splits and what a model needs to know about them.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    pub kind: DataKind,
    pub train: Split,
    pub test: Split,
    /// Number of output classes (the vocabulary for sequence tasks).
    pub classes: usize,
    /// Targets per sample (1, or `seq_len` for sequence tasks).
    pub targets_per_sample: usize,
    /// Targets of a sample before this index are trained on but not scored: a decoder's
    /// next-token targets over the task's own input (see [`Dataset::next_token`]).
    pub scored_from: usize,
    /// A table's features as they were standardised (empty for the built-in sets).
    pub standardisation: Vec<FeatureScale>,
}

/// The samples [`Dataset::preview`] builds of a token stream.
pub const PREVIEW_SAMPLES: usize = 8;

/// `(train, test)` sample counts for a data config; validation uses it before generating.
pub fn split_sizes(data: &DataConfig) -> (usize, usize) {
    let total = match data.kind {
        DataKind::Digits => digits::COUNT,
        DataKind::Csv => data.table.as_ref().map_or(0, |t| t.rows()),
        _ => data.samples,
    };
    if total < 2 {
        // Validation refuses it (a table needs two classes, so two rows).
        return (total, 0);
    }
    let test = ((total as f64 * data.test_fraction).round() as usize).clamp(1, total - 1);
    (total - test, test)
}

/// Classes and targets per sample of a data config, as [`Dataset::build`] makes them.
pub fn classes_and_targets(data: &DataConfig) -> (usize, usize) {
    if let (DataKind::Csv, Some(table)) = (data.kind, &data.table) {
        return (table.classes.len(), 1);
    }
    match data.input_kind() {
        InputKind::Points | InputKind::Features => (2, 1),
        InputKind::Images => (10, 1),
        InputKind::Tokens => (data.vocab, data.seq_len),
    }
}

/// Values per sample a model takes in: floats for points, images and tables, token ids for
/// the token tasks ([`DataConfig::sample_tokens`]).
pub fn input_width(data: &DataConfig) -> usize {
    if let (DataKind::Csv, Some(table)) = (data.kind, &data.table) {
        return table.width();
    }
    match data.input_kind() {
        InputKind::Points | InputKind::Features => 2,
        InputKind::Images => digits::PIXELS,
        InputKind::Tokens => data.sample_tokens(),
    }
}

impl Dataset {
    /// The data set's shapes without its samples: `train` and `test` samples of zeros (valid
    /// class and token ids). What a plan trains on.
    pub fn shapes(data: &DataConfig, train: usize, test: usize) -> Self {
        let width = input_width(data);
        let tokens = data.input_kind() == InputKind::Tokens;
        let (classes, targets_per_sample) = classes_and_targets(data);
        let split = |len| Split {
            inputs: HostInputs::Shape { width, tokens },
            targets: Vec::new(),
            len,
        };
        Self {
            kind: data.kind,
            train: split(train),
            test: split(test),
            classes,
            targets_per_sample,
            scored_from: 0,
            standardisation: Vec::new(),
        }
    }

    /// What the page's data preview shows: the data as [`Dataset::build`] makes it, except
    /// that a token stream stops after its first [`PREVIEW_SAMPLES`] samples. The stream is
    /// drawn sample by sample and its training split is its first samples, so the first
    /// training sample is the full build's; building the whole of a 7B preset's stream (8,192
    /// samples of 2,048 tokens, inputs and targets, each copied into its split) held hundreds
    /// of MiB of the page's memory to show one sample.
    pub fn preview(data: &DataConfig, seed: u64) -> Result<Self, String> {
        if data.kind != DataKind::Stream || data.samples <= PREVIEW_SAMPLES {
            return Self::build(data, seed);
        }
        let first = DataConfig {
            samples: PREVIEW_SAMPLES,
            ..data.clone()
        };
        Self::build(&first, seed)
    }

    /// Generate (or decode) the data set and split it. `seed` drives both.
    pub fn build(data: &DataConfig, seed: u64) -> Result<Self, String> {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x5eed_da7a);
        let (train_len, _) = split_sizes(data);
        if data.kind == DataKind::Csv {
            let table = data
                .table
                .as_ref()
                .ok_or("data.kind = csv, but no table was read from data.path")?;
            let (train, test, standardisation) = table::split(table, train_len, &mut rng);
            return Ok(Self {
                kind: data.kind,
                train,
                test,
                classes: table.classes.len(),
                targets_per_sample: 1,
                scored_from: 0,
                standardisation,
            });
        }
        match data.kind.input_kind() {
            InputKind::Points => {
                let mut points =
                    playground::generate(data.kind, data.samples, data.noise, &mut rng);
                points.shuffle(&mut rng);
                let to_split = |rows: &[(f32, f32, i64)]| Split {
                    inputs: HostInputs::Floats {
                        values: rows.iter().flat_map(|&(x, y, _)| [x, y]).collect(),
                        width: 2,
                    },
                    targets: rows.iter().map(|&(_, _, c)| c).collect(),
                    len: rows.len(),
                };
                Ok(Self {
                    kind: data.kind,
                    train: to_split(&points[..train_len]),
                    test: to_split(&points[train_len..]),
                    classes: 2,
                    targets_per_sample: 1,
                    scored_from: 0,
                    standardisation: Vec::new(),
                })
            }
            InputKind::Images => {
                let mut rows = digits::load()?;
                rows.shuffle(&mut rng);
                let to_split = |rows: &[([f32; digits::PIXELS], i64)]| Split {
                    inputs: HostInputs::Floats {
                        values: rows.iter().flat_map(|(p, _)| p.iter().copied()).collect(),
                        width: digits::PIXELS,
                    },
                    targets: rows.iter().map(|&(_, c)| c).collect(),
                    len: rows.len(),
                };
                Ok(Self {
                    kind: data.kind,
                    train: to_split(&rows[..train_len]),
                    test: to_split(&rows[train_len..]),
                    classes: 10,
                    targets_per_sample: 1,
                    scored_from: 0,
                    standardisation: Vec::new(),
                })
            }
            // Only a table has rows of features; it returned above.
            InputKind::Features => Err(format!("{} is not a table", data.kind.name())),
            InputKind::Tokens if data.kind == DataKind::Stream => {
                let (inputs, targets) =
                    stream::generate(data.samples, data.seq_len, data.vocab, &mut rng);
                let width = data.seq_len;
                let to_split = |samples: std::ops::Range<usize>| Split {
                    inputs: HostInputs::Tokens {
                        values: inputs[samples.start * width..samples.end * width].to_vec(),
                        width,
                    },
                    targets: targets[samples.start * width..samples.end * width].to_vec(),
                    len: samples.len(),
                };
                Ok(Self {
                    kind: data.kind,
                    train: to_split(0..train_len),
                    test: to_split(train_len..data.samples),
                    classes: data.vocab,
                    targets_per_sample: width,
                    scored_from: 0,
                    standardisation: Vec::new(),
                })
            }
            InputKind::Tokens => {
                let rows =
                    sequence::generate(data.kind, data.samples, data.seq_len, data.vocab, &mut rng);
                let to_split = |rows: &[(Vec<i64>, Vec<i64>)]| Split {
                    inputs: HostInputs::Tokens {
                        values: rows.iter().flat_map(|(i, _)| i.iter().copied()).collect(),
                        width: 2 * data.seq_len,
                    },
                    targets: rows.iter().flat_map(|(_, t)| t.iter().copied()).collect(),
                    len: rows.len(),
                };
                Ok(Self {
                    kind: data.kind,
                    train: to_split(&rows[..train_len]),
                    test: to_split(&rows[train_len..]),
                    classes: data.vocab,
                    targets_per_sample: data.seq_len,
                    scored_from: 0,
                    standardisation: Vec::new(),
                })
            }
        }
    }
}

impl Dataset {
    /// What a run on a table records about it; `None` for the built-in sets (and for a plan,
    /// which holds no samples).
    pub fn table_summary(&self, data: &DataConfig) -> Option<TableSummary> {
        let table = data.table.as_ref().filter(|_| data.kind == DataKind::Csv)?;
        if matches!(self.train.inputs, HostInputs::Shape { .. }) {
            return None;
        }
        Some(table::summary(
            table,
            &self.train,
            &self.test,
            &self.standardisation,
        ))
    }

    /// A decoder's view of a query task: each sample becomes one token stream
    /// `x_1..x_L, q, y_1..y_L` (`q` the query id), read as the input `stream[..2L]` with the
    /// next token `stream[1..]` as the target at every position: a language model's loss. Only
    /// the answers `y` are scored. A `stream` is that already, and is returned as it is.
    pub fn next_token(mut self) -> Self {
        if self.kind == DataKind::Stream {
            return self;
        }
        let length = self.targets_per_sample;
        for split in [&mut self.train, &mut self.test] {
            if let HostInputs::Tokens { values, width } = &mut split.inputs {
                let mut inputs = Vec::with_capacity(values.len());
                let mut targets = Vec::with_capacity(values.len());
                for (sample, answer) in values.chunks(*width).zip(split.targets.chunks(length)) {
                    let stream: Vec<i64> =
                        sample[..=length].iter().chain(answer).copied().collect();
                    inputs.extend_from_slice(&stream[..2 * length]);
                    targets.extend_from_slice(&stream[1..]);
                }
                *values = inputs;
                split.targets = targets;
            }
        }
        // The query id is a class too: it follows the input.
        self.classes += 1;
        self.targets_per_sample = 2 * length;
        self.scored_from = length;
        self
    }
}

/// A batch on the device.
#[derive(Clone, Debug)]
pub struct Batch {
    pub inputs: BatchInputs,
    /// Flattened class ids, `[batch * targets_per_sample]`.
    pub targets: Tensor<1, Int>,
    pub len: usize,
}

#[derive(Clone, Debug)]
pub enum BatchInputs {
    /// `[batch, width]` floats (points, or images flattened).
    Floats(Tensor<2>),
    /// `[batch, width]` token ids.
    Tokens(Tensor<2, Int>),
}

impl Split {
    /// Copy the samples at `indices` to the device as one batch.
    pub fn batch(&self, indices: &[usize], targets_per_sample: usize, device: &Device) -> Batch {
        let n = indices.len();
        let inputs = match &self.inputs {
            HostInputs::Floats { values, width } => {
                let rows: Vec<f32> = gather(values, *width, indices);
                BatchInputs::Floats(Tensor::from_data(
                    TensorData::new(rows, [n, *width]),
                    device,
                ))
            }
            HostInputs::Tokens { values, width } => {
                let rows: Vec<i64> = gather(values, *width, indices);
                BatchInputs::Tokens(Tensor::from_data(
                    TensorData::new(rows, [n, *width]),
                    device,
                ))
            }
            HostInputs::Shape { width, tokens } => {
                return Batch {
                    inputs: if *tokens {
                        BatchInputs::Tokens(Tensor::zeros([n, *width], device))
                    } else {
                        BatchInputs::Floats(Tensor::zeros([n, *width], device))
                    },
                    targets: Tensor::zeros([n * targets_per_sample], device),
                    len: n,
                };
            }
        };
        let targets = gather(&self.targets, targets_per_sample, indices);
        Batch {
            inputs,
            targets: Tensor::from_data(TensorData::new(targets, [n * targets_per_sample]), device),
            len: n,
        }
    }

    /// The contiguous samples `start..start + len` as one batch (evaluation walks the split so).
    pub fn range_batch(
        &self,
        start: usize,
        len: usize,
        targets_per_sample: usize,
        device: &Device,
    ) -> Batch {
        let indices: Vec<usize> = (start..start + len).collect();
        self.batch(&indices, targets_per_sample, device)
    }
}

pub(crate) fn gather<T: Copy>(values: &[T], width: usize, indices: &[usize]) -> Vec<T> {
    let mut out = Vec::with_capacity(indices.len() * width);
    for &i in indices {
        out.extend_from_slice(&values[i * width..(i + 1) * width]);
    }
    out
}

/// Seeded epoch-wise sampling without replacement: each epoch is a fresh permutation, cut into
/// batches; the remainder that does not fill a batch is skipped.
#[derive(Debug)]
pub struct BatchOrder {
    order: Vec<usize>,
    next: usize,
    rng: StdRng,
}

impl BatchOrder {
    pub fn new(len: usize, seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed ^ 0xba7c_0de5);
        let mut order: Vec<usize> = (0..len).collect();
        order.shuffle(&mut rng);
        Self {
            order,
            next: 0,
            rng,
        }
    }

    /// Whether the samples drawn last were the last of their epoch: the next draw of `batch`
    /// reshuffles.
    pub fn epoch_ends(&self, batch: usize) -> bool {
        self.next + batch > self.order.len()
    }

    pub fn next_indices(&mut self, batch: usize) -> Vec<usize> {
        if self.next + batch > self.order.len() {
            self.order.shuffle(&mut self.rng);
            self.next = 0;
        }
        let picked = self.order[self.next..self.next + batch].to_vec();
        self.next += batch;
        picked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::config::DataConfig;

    fn config(kind: DataKind) -> DataConfig {
        DataConfig {
            kind,
            samples: 400,
            ..DataConfig::default()
        }
    }

    #[test]
    fn a_streams_preview_shows_the_full_builds_first_training_sample() {
        let data = DataConfig {
            kind: DataKind::Stream,
            samples: 256,
            seq_len: 32,
            vocab: 50,
            ..DataConfig::default()
        };
        let (full, preview) = (
            Dataset::build(&data, 3).unwrap(),
            Dataset::preview(&data, 3).unwrap(),
        );
        assert_eq!(preview.train.len + preview.test.len, PREVIEW_SAMPLES);
        let first = |set: &Dataset| match &set.train.inputs {
            HostInputs::Tokens { values, width } => (
                values[..*width].to_vec(),
                set.train.targets[..*width].to_vec(),
            ),
            _ => panic!("a stream has tokens"),
        };
        assert_eq!(first(&preview), first(&full));
    }

    #[test]
    fn every_kind_builds_with_balanced_splits() {
        for kind in DataKind::ALL {
            let data = config(kind);
            let set = Dataset::build(&data, 7).unwrap();
            let (train, test) = split_sizes(&data);
            assert_eq!(
                (set.train.len, set.test.len),
                (train, test),
                "{}",
                kind.name()
            );
            assert_eq!(set.train.targets.len(), train * set.targets_per_sample);
            assert!(
                set.train
                    .targets
                    .iter()
                    .all(|&c| (0..set.classes as i64).contains(&c))
            );
        }
    }

    #[test]
    fn same_seed_same_data_other_seed_other_data() {
        let data = config(DataKind::Spiral);
        let a = Dataset::build(&data, 1).unwrap();
        let b = Dataset::build(&data, 1).unwrap();
        let c = Dataset::build(&data, 2).unwrap();
        assert_eq!(a.train.targets, b.train.targets);
        let floats = |s: &Dataset| match &s.train.inputs {
            HostInputs::Floats { values, .. } => values.clone(),
            _ => unreachable!("spiral points are floats"),
        };
        assert_eq!(floats(&a), floats(&b));
        assert_ne!(floats(&a), floats(&c));
    }

    #[test]
    fn sort_targets_are_sorted_inputs() {
        let set = Dataset::build(&config(DataKind::Sort), 3).unwrap();
        let HostInputs::Tokens { values, width } = &set.train.inputs else {
            unreachable!()
        };
        let l = width / 2;
        let mut first: Vec<i64> = values[..l].to_vec();
        first.sort_unstable();
        assert_eq!(first, set.train.targets[..l].to_vec());
        assert!(
            values[l..*width].iter().all(|&t| t == 8),
            "query tokens are the id vocab"
        );
    }

    fn tokens(split: &Split) -> (&[i64], usize) {
        match &split.inputs {
            HostInputs::Tokens { values, width } => (values, *width),
            _ => unreachable!("a stream's samples are tokens"),
        }
    }

    #[test]
    fn a_stream_sample_is_seq_len_tokens_and_its_targets_the_next_ones() {
        let data = DataConfig {
            kind: DataKind::Stream,
            samples: 64,
            seq_len: 16,
            vocab: 50,
            ..DataConfig::default()
        };
        let set = Dataset::build(&data, 5).unwrap();
        assert_eq!((set.train.len, set.test.len), (48, 16));
        assert_eq!(
            (set.classes, set.targets_per_sample, set.scored_from),
            (50, 16, 0)
        );
        for split in [&set.train, &set.test] {
            let (values, width) = tokens(split);
            assert_eq!(width, 16);
            assert_eq!(values.len(), split.len * 16);
            assert_eq!(split.targets.len(), split.len * 16);
            assert!(
                values
                    .iter()
                    .chain(&split.targets)
                    .all(|&t| (0..50).contains(&t))
            );
            for (sample, next) in values.chunks(16).zip(split.targets.chunks(16)) {
                // Shifted by one: the target at position i is the input at i + 1, and the
                // last target is the one token drawn beyond the sample.
                assert_eq!(sample[1..], next[..15]);
            }
        }
        // A decoder's view of a stream is the stream itself.
        assert_eq!(set.clone().next_token(), set);
        // Plans see the same shapes.
        let shapes = Dataset::shapes(&data, set.train.len, set.test.len);
        assert_eq!(shapes.train.inputs.width(), 16);
        assert_eq!(
            (
                shapes.classes,
                shapes.targets_per_sample,
                shapes.scored_from
            ),
            (set.classes, set.targets_per_sample, set.scored_from)
        );
        assert_eq!(shapes.next_token().targets_per_sample, 16);
    }

    #[test]
    fn a_stream_is_the_same_for_a_seed_and_another_for_another_seed() {
        let data = DataConfig {
            kind: DataKind::Stream,
            samples: 32,
            seq_len: 8,
            vocab: 32_000,
            ..DataConfig::default()
        };
        let a = Dataset::build(&data, 1).unwrap();
        assert_eq!(a, Dataset::build(&data, 1).unwrap());
        let c = Dataset::build(&data, 2).unwrap();
        assert_ne!(tokens(&a.train).0, tokens(&c.train).0);
    }

    #[test]
    fn batch_order_covers_an_epoch_without_repeats() {
        let mut order = BatchOrder::new(10, 0);
        let mut seen: Vec<usize> = (0..5).flat_map(|_| order.next_indices(2)).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..10).collect::<Vec<_>>());
    }
}
