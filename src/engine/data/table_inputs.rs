//! Generated input for the CSV reader: random bytes, and real tables broken the ways files
//! break (cells dropped, duplicated, swapped; quotes opened and doubled; a BOM, CRLF, NUL,
//! invalid UTF-8; numbers past f32 and f64; ragged rows; headers lost or repeated; one class;
//! files cut short). The `csv` target of `vramlab fuzz` draws its table-shaped inputs from
//! [`mutated`] and takes each through [`check`], every stage a file goes through;
//! `tests/suite/table.rs` runs a short batch of [`Inputs`].

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::{Dataset, HostInputs, Split, split_sizes};
use crate::engine::config::{DataConfig, DataKind};
use crate::engine::table::{CsvError, SharedTable, parse};

/// Where an input came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Origin {
    RandomBytes,
    MutatedTable,
}

/// An endless, seeded stream of inputs: a fifth random bytes, the rest mutated seed tables.
pub struct Inputs {
    rng: StdRng,
    /// The seed tables as rows of cells.
    tables: Vec<Vec<Vec<String>>>,
}

impl Inputs {
    /// `tables`: CSV files to mutate (iris and wine in the harness), each a header and rows.
    pub fn new(tables: &[&[u8]], seed: u64) -> Self {
        let tables = tables
            .iter()
            .map(|bytes| {
                String::from_utf8_lossy(bytes)
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| {
                        l.trim_end_matches('\r')
                            .split(',')
                            .map(str::to_string)
                            .collect()
                    })
                    .collect()
            })
            .collect();
        Self {
            rng: StdRng::seed_from_u64(seed),
            tables,
        }
    }

    /// One input: random bytes or a mutated table, and which.
    pub fn next_input(&mut self) -> (Origin, Vec<u8>) {
        if self.rng.random_bool(0.2) || self.tables.is_empty() {
            (Origin::RandomBytes, self.random_bytes())
        } else {
            (Origin::MutatedTable, self.mutated_table())
        }
    }

    /// Up to 512 bytes, drawn mostly from the bytes CSV gives meaning to.
    fn random_bytes(&mut self) -> Vec<u8> {
        const MEANINGFUL: &[u8] = b",,,\"\"\n\n\r0123456789.-+eE abc\t;";
        let len = self.rng.random_range(0..512);
        (0..len)
            .map(|_| {
                if self.rng.random_bool(0.95) {
                    MEANINGFUL[self.rng.random_range(0..MEANINGFUL.len())]
                } else {
                    self.rng.random()
                }
            })
            .collect()
    }

    fn mutated_table(&mut self) -> Vec<u8> {
        let table = &self.tables[self.rng.random_range(0..self.tables.len())];
        // The header and a few rows from anywhere (the files are sorted by class): a small
        // input, so a run covers many mutations.
        let rows = self
            .rng
            .random_range(1..=table.len().saturating_sub(1).clamp(1, 40));
        let mut cells: Vec<Vec<String>> = vec![table[0].clone()];
        for _ in 0..rows {
            cells.push(
                table[self
                    .rng
                    .random_range(1..table.len().max(2))
                    .min(table.len() - 1)]
                .clone(),
            );
        }
        // None, one or a few: a whole table now and then keeps the later stages busy.
        for _ in 0..self.rng.random_range(0..=3) {
            self.mutate(&mut cells);
        }
        let crlf = self.rng.random_bool(0.3);
        let mut text = cells
            .iter()
            .map(|row| row.join(","))
            .collect::<Vec<_>>()
            .join(if crlf { "\r\n" } else { "\n" });
        if self.rng.random_bool(0.8) {
            text.push_str(if crlf { "\r\n" } else { "\n" });
        }
        let mut bytes = text.into_bytes();
        self.mutate_bytes(&mut bytes);
        bytes
    }

    fn cell<'a>(&mut self, cells: &'a mut [Vec<String>]) -> Option<&'a mut String> {
        if cells.is_empty() {
            return None;
        }
        let row = self.rng.random_range(0..cells.len());
        let row = &mut cells[row];
        if row.is_empty() {
            return None;
        }
        let column = self.rng.random_range(0..row.len());
        Some(&mut row[column])
    }

    fn mutate(&mut self, cells: &mut Vec<Vec<String>>) {
        const STRANGE: &[&str] = &[
            "",
            " ",
            "NaN",
            "inf",
            "-inf",
            "1e39",
            "-3.5e38",
            "1e400",
            "1e-400",
            "0x10",
            "1,5",
            "\"",
            "\"\"",
            "\"a,b\"",
            "\"multi\nline\"",
            "\u{feff}",
            "\0",
            "é",
            "9999999999999999999999999",
            "-0",
            "+1",
            ".5",
            "5.",
            "1e",
            "--1",
            "  7  ",
            "\t3",
        ];
        match self.rng.random_range(0..16) {
            // Drop a cell.
            0 => {
                let row = self.rng.random_range(0..cells.len());
                if !cells[row].is_empty() {
                    let at = self.rng.random_range(0..cells[row].len());
                    cells[row].remove(at);
                }
            }
            // Duplicate a cell within its row.
            1 => {
                let row = self.rng.random_range(0..cells.len());
                if !cells[row].is_empty() {
                    let at = self.rng.random_range(0..cells[row].len());
                    let copy = cells[row][at].clone();
                    cells[row].insert(at, copy);
                }
            }
            // Swap two cells anywhere (a label into a feature column, a name into the data).
            2 => {
                let (a, b) = (
                    self.rng.random_range(0..cells.len()),
                    self.rng.random_range(0..cells.len()),
                );
                if !cells[a].is_empty() && !cells[b].is_empty() {
                    let (i, j) = (
                        self.rng.random_range(0..cells[a].len()),
                        self.rng.random_range(0..cells[b].len()),
                    );
                    let taken = std::mem::take(&mut cells[a][i]);
                    let other = std::mem::replace(&mut cells[b][j], taken);
                    cells[a][i] = other;
                }
            }
            // A quote somewhere in a cell, or the cell quoted.
            3 => {
                let quote_all = self.rng.random_bool(0.5);
                let at_fraction: f64 = self.rng.random();
                if let Some(cell) = self.cell(cells) {
                    if quote_all {
                        *cell = format!("\"{}\"", cell.replace('"', "\"\""));
                    } else {
                        let at = (cell.len() as f64 * at_fraction) as usize;
                        let at = (0..=at)
                            .rev()
                            .find(|&i| cell.is_char_boundary(i))
                            .unwrap_or(0);
                        cell.insert(at, '"');
                    }
                }
            }
            // A strange value in a cell.
            4 | 5 => {
                let value = STRANGE[self.rng.random_range(0..STRANGE.len())];
                if let Some(cell) = self.cell(cells) {
                    *cell = value.to_string();
                }
            }
            // A ragged row: a field more or fewer.
            6 => {
                let row = self.rng.random_range(0..cells.len());
                if self.rng.random_bool(0.5) {
                    cells[row].push("1".into());
                } else {
                    cells[row].pop();
                }
            }
            // The header lost, or a name repeated.
            7 => {
                if self.rng.random_bool(0.5) {
                    cells.remove(0);
                } else if cells[0].len() > 1 {
                    cells[0][1] = cells[0][0].clone();
                }
                if cells.is_empty() {
                    cells.push(Vec::new());
                }
            }
            // One class only.
            8 => {
                let label = cells
                    .get(1)
                    .and_then(|r| r.last())
                    .cloned()
                    .unwrap_or_default();
                for row in cells.iter_mut().skip(1) {
                    if let Some(last) = row.last_mut() {
                        *last = label.clone();
                    }
                }
            }
            // The label column as measurements.
            9 => {
                for (i, row) in cells.iter_mut().enumerate().skip(1) {
                    if let Some(last) = row.last_mut() {
                        *last = format!("{}.25", i);
                    }
                }
            }
            // Blank or space-only lines.
            10 => {
                let at = self.rng.random_range(0..=cells.len());
                cells.insert(
                    at,
                    if self.rng.random_bool(0.5) {
                        Vec::new()
                    } else {
                        vec!["  ".into()]
                    },
                );
            }
            // A very long cell.
            11 => {
                let len = self.rng.random_range(100..5000);
                if let Some(cell) = self.cell(cells) {
                    *cell = "7".repeat(len);
                }
            }
            // Many columns.
            12 => {
                let more = self.rng.random_range(1..200);
                for (i, row) in cells.iter_mut().enumerate() {
                    for j in 0..more {
                        row.push(if i == 0 {
                            format!("extra{j}")
                        } else {
                            j.to_string()
                        });
                    }
                }
            }
            // Spaces around a value, which the reader trims.
            14 => {
                if let Some(cell) = self.cell(cells) {
                    *cell = format!("  {cell} ");
                }
            }
            // Two rows trade places (the file's order is not the split's).
            15 => {
                let (a, b) = (
                    self.rng.random_range(1..cells.len().max(2)),
                    self.rng.random_range(1..cells.len().max(2)),
                );
                if a < cells.len() && b < cells.len() {
                    cells.swap(a, b);
                }
            }
            // Rows duplicated.
            _ => {
                let row = self.rng.random_range(0..cells.len());
                let copy = cells[row].clone();
                cells.insert(row, copy);
            }
        }
    }

    fn mutate_bytes(&mut self, bytes: &mut Vec<u8>) {
        match self.rng.random_range(0..12) {
            0 => bytes.splice(0..0, *b"\xEF\xBB\xBF").for_each(drop),
            1 if !bytes.is_empty() => {
                let at = self.rng.random_range(0..bytes.len());
                bytes.insert(at, 0);
            }
            2 if !bytes.is_empty() => {
                let at = self.rng.random_range(0..bytes.len());
                bytes[at] = 0xFF;
            }
            3 => {
                let keep = self.rng.random_range(0..=bytes.len());
                bytes.truncate(keep);
            }
            4 if !bytes.is_empty() => {
                // A lone CR as the line end (old Mac files).
                for b in bytes.iter_mut() {
                    if *b == b'\n' {
                        *b = b'\r';
                    }
                }
            }
            _ => {}
        }
    }
}

/// `table` (a CSV file with a header) broken as files break: a few of its rows, none to three
/// cell-level mutations, then perhaps one at the byte level. The same `seed` gives the same
/// bytes, so a fuzz run can replay one input by its index.
pub fn mutated(table: &[u8], seed: u64) -> Vec<u8> {
    Inputs::new(&[table], seed).mutated_table()
}

/// What became of one input.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Read, labelled, split and standardised: `rows` rows.
    Accepted { rows: usize },
    /// Refused, at a line (and column).
    Refused(CsvError),
}

/// Take `bytes` the whole way a file goes: parse, label by the last column (and by a column
/// chosen from the bytes, as `--set data.label` would), split and standardise. Panics are the
/// caller's to catch: there must be none.
pub fn check(bytes: &[u8]) -> Outcome {
    let table = match parse(bytes) {
        Ok(table) => table,
        Err(err) => return Outcome::Refused(err),
    };
    // The bound the reader promises: the cells' text is never more than the input.
    assert!(table.text_len() <= bytes.len(), "cells outgrew the input");
    let other = (bytes.len() % table.columns().len() + 1).to_string();
    let _ = table.label(&other);
    let labelled = match table.label("") {
        Ok(labelled) => labelled,
        Err(err) => return Outcome::Refused(err),
    };
    let rows = labelled.rows();
    let data = DataConfig {
        kind: DataKind::Csv,
        table: Some(SharedTable::new(labelled)),
        ..DataConfig::default()
    };
    let (train, test) = split_sizes(&data);
    assert_eq!(train + test, rows, "the split loses no row");
    let set = Dataset::build(&data, bytes.len() as u64).expect("a labelled table builds");
    let finite = |split: &Split| match &split.inputs {
        HostInputs::Floats { values, .. } => values.iter().all(|v| v.is_finite()),
        _ => false,
    };
    assert!(
        finite(&set.train) && finite(&set.test),
        "standardised features are finite"
    );
    Outcome::Accepted { rows }
}
