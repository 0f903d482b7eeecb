//! A table a person brings: CSV bytes read into named columns ([`parse`]), then a label column
//! chosen and the rest read as numeric features ([`Table::label`]). Plain data: the engine reads
//! no files (the page has none), so the fronts hand it the file's bytes.
//!
//! Every refusal is a [`CsvError`] naming the line and, where there is one, the column (1-based,
//! as a spreadsheet numbers them) and what was expected there. The reader is a pure function of
//! its bytes and allocates at most a few times their size: the generated-input harness
//! (`vramlab fuzz --target csv`, `engine::data::table_inputs`) feeds it arbitrary bytes.

mod label;
mod read;

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use read::parse;

/// What a table may hold. A file past either limit is refused where it passes it.
pub mod limits {
    /// 100 MB of CSV: a browser tab holds the bytes, the parsed cells and the features at once.
    pub const BYTES: usize = 100_000_000;
    /// 10 million cells (header excluded): 40 MB of f32 features, well inside a tab.
    pub const CELLS: usize = 10_000_000;
    /// Distinct labels: more look like a feature column picked as the label.
    pub const CLASSES: usize = 1_000;
}

/// A refusal, at a place in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvError {
    /// 1-based line of the file (a quoted field may span lines: its record's first line).
    pub line: usize,
    /// 1-based column (field) number; `None` when the error is about the header as a whole.
    pub column: Option<usize>,
    /// The column's name, once the header has given it one.
    pub column_name: Option<String>,
    /// What is wrong there and what was expected.
    pub message: String,
}

impl CsvError {
    pub(crate) fn at(line: usize, column: usize, message: impl Into<String>) -> Self {
        Self {
            line,
            column: Some(column),
            column_name: None,
            message: message.into(),
        }
    }

    pub(crate) fn in_column(
        line: usize,
        column: usize,
        name: &str,
        message: impl Into<String>,
    ) -> Self {
        Self {
            column_name: Some(name.to_string()),
            ..Self::at(line, column, message)
        }
    }

    pub(crate) fn on_line(line: usize, message: impl Into<String>) -> Self {
        Self {
            line,
            column: None,
            column_name: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for CsvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}", self.line)?;
        if let Some(column) = self.column {
            write!(f, ", column {column}")?;
        }
        if let Some(name) = &self.column_name {
            write!(f, " ({name})")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for CsvError {}

/// Which bytes a table came from: enough for a shared run to say which data it needs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// The file's name as the front knows it (the page has no path).
    pub name: String,
    pub bytes: u64,
    /// SHA-256 of the bytes, lower-case hex.
    pub sha256: String,
}

/// The cells of a CSV file with a header row: every row has as many cells as the header, each
/// cell is UTF-8 text, trimmed of surrounding spaces. Nothing is read as a number yet.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub source: Source,
    columns: Vec<String>,
    /// Every data cell, row after row, concatenated; `ends[i]` is where cell `i` ends.
    text: String,
    ends: Vec<u32>,
    /// The file line each row starts on.
    lines: Vec<u32>,
}

impl Table {
    /// The column names, from the header row.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    pub fn rows(&self) -> usize {
        self.lines.len()
    }

    /// The cell of `row` (0-based) in `column` (0-based).
    pub fn cell(&self, row: usize, column: usize) -> &str {
        let i = row * self.columns.len() + column;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.text[start..self.ends[i] as usize]
    }

    /// Bytes of cell text held: never more than the input's.
    pub fn text_len(&self) -> usize {
        self.text.len()
    }

    /// The file line `row` (0-based) starts on.
    pub fn line(&self, row: usize) -> usize {
        self.lines[row] as usize
    }

    /// The same table under the name the front knows the file by.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.source.name = name.into();
        self
    }
}

/// A table with its label column chosen: every other column read as an f32 feature, the
/// labels turned into class ids. What a run trains on (after `engine::data` splits and
/// standardises it).
#[derive(Clone, Debug, PartialEq)]
pub struct LabelledTable {
    pub source: Source,
    /// `data.label` as it was when the label column was chosen.
    pub label_spec: String,
    /// The label column's name and 1-based position in the file.
    pub label: String,
    pub label_column: usize,
    /// Feature column names, in file order.
    pub features: Vec<String>,
    /// `rows x features.len()` values, row-major, as written in the file.
    pub values: Vec<f32>,
    /// Class names: whole numbers in numeric order, otherwise text in byte order.
    pub classes: Vec<String>,
    /// Each row's class id (an index into `classes`).
    pub targets: Vec<i64>,
}

impl LabelledTable {
    pub fn rows(&self) -> usize {
        self.targets.len()
    }

    pub fn width(&self) -> usize {
        self.features.len()
    }

    /// Columns in the file: the features and the label.
    pub fn columns(&self) -> usize {
        self.features.len() + 1
    }

    /// Rows of each class, in class order.
    pub fn class_counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.classes.len()];
        for &target in &self.targets {
            counts[target as usize] += 1;
        }
        counts
    }
}

/// Read `bytes` as a CSV table called `name` and label it by `label` (a column name, a 1-based
/// position, or empty for the last column).
pub fn read(name: &str, bytes: &[u8], label: &str) -> Result<LabelledTable, CsvError> {
    parse(bytes)?.named(name).label(label)
}

/// A labelled table held by a [`crate::engine::config::DataConfig`]: shared, never serialised
/// (the config records the file's path and label; the fronts read the bytes).
#[derive(Clone)]
pub struct SharedTable(pub Arc<LabelledTable>);

impl SharedTable {
    pub fn new(table: LabelledTable) -> Self {
        Self(Arc::new(table))
    }
}

impl std::ops::Deref for SharedTable {
    type Target = LabelledTable;
    fn deref(&self) -> &LabelledTable {
        &self.0
    }
}

/// The same bytes labelled the same way are the same table; comparing hashes keeps a config
/// comparison cheap however big the table is.
impl PartialEq for SharedTable {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.source == other.source && self.label_spec == other.label_spec)
    }
}

impl fmt::Debug for SharedTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "table {} ({} rows, {} columns, label {}, sha256 {})",
            self.source.name,
            self.rows(),
            self.columns(),
            self.label,
            self.source.sha256
        )
    }
}
