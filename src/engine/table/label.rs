//! A [`Table`] with its label column chosen: the other columns read as f32 features, the
//! labels as classes.

use std::collections::HashMap;

use super::read::{quoted, thousands};
use super::{CsvError, LabelledTable, Table, limits};

/// The largest magnitude an f32 holds; a feature past it would train as infinity.
const F32_MAX: f64 = f32::MAX as f64;

impl Table {
    /// Choose the label column by `spec` (a column name, a 1-based position, or empty for the
    /// last column) and read every other cell as a number.
    pub fn label(&self, spec: &str) -> Result<LabelledTable, CsvError> {
        let label_index = self.label_index(spec)?;
        let columns = self.columns();
        let feature_columns: Vec<usize> =
            (0..columns.len()).filter(|&c| c != label_index).collect();
        let mut values = Vec::with_capacity(self.rows() * feature_columns.len());
        for row in 0..self.rows() {
            for &column in &feature_columns {
                values.push(self.feature(row, column, label_index)?);
            }
        }
        let (classes, targets) = self.classes(label_index)?;
        Ok(LabelledTable {
            source: self.source.clone(),
            label_spec: spec.to_string(),
            label: columns[label_index].clone(),
            label_column: label_index + 1,
            features: feature_columns
                .iter()
                .map(|&c| columns[c].clone())
                .collect(),
            values,
            classes,
            targets,
        })
    }

    fn label_index(&self, spec: &str) -> Result<usize, CsvError> {
        let columns = self.columns();
        let spec = spec.trim();
        if spec.is_empty() {
            return Ok(columns.len() - 1);
        }
        if let Some(i) = columns.iter().position(|c| c == spec) {
            return Ok(i);
        }
        let folded: Vec<usize> = (0..columns.len())
            .filter(|&i| columns[i].eq_ignore_ascii_case(spec))
            .collect();
        if let [i] = folded[..] {
            return Ok(i);
        }
        if let Ok(position) = spec.parse::<usize>()
            && (1..=columns.len()).contains(&position)
        {
            return Ok(position - 1);
        }
        let names: Vec<String> = columns.iter().map(|c| quoted(c)).collect();
        Err(CsvError::on_line(
            1,
            format!(
                "data.label: the header has no column {}; its columns are {} (or give a \
                 position, 1..={})",
                quoted(spec),
                names.join(", "),
                columns.len()
            ),
        ))
    }

    fn feature(&self, row: usize, column: usize, label_index: usize) -> Result<f32, CsvError> {
        let cell = self.cell(row, column);
        let at = |message: String| {
            CsvError::in_column(self.line(row), column + 1, &self.columns()[column], message)
        };
        let label = format!(
            "every column but the label ({}, column {}) must hold numbers",
            self.columns()[label_index],
            label_index + 1
        );
        if cell.is_empty() {
            return Err(at(format!("the cell is empty; {label}")));
        }
        match cell.parse::<f64>() {
            Ok(v) if v.is_nan() || v.is_infinite() && !looks_huge(cell) => Err(at(format!(
                "{} is not a finite number; {label}",
                quoted(cell)
            ))),
            Ok(v) if v.abs() > F32_MAX => Err(at(format!(
                "{} is beyond what an f32 holds (about 3.4e38); scale the column",
                quoted(cell)
            ))),
            Ok(v) => Ok(v as f32),
            Err(_) => {
                let open_quote = if cell.contains('\n') {
                    " (it spans lines: is a quote left open?)"
                } else {
                    ""
                };
                Err(at(format!(
                    "{} is not a number{open_quote}; {label} (to train on this column as the \
                     label: data.label={})",
                    quoted(cell),
                    self.columns()[column]
                )))
            }
        }
    }

    /// Class names and each row's class id.
    fn classes(&self, label_index: usize) -> Result<(Vec<String>, Vec<i64>), CsvError> {
        let name = &self.columns()[label_index];
        let at = |row: usize, message: String| {
            CsvError::in_column(self.line(row), label_index + 1, name, message)
        };
        let mut first_row: HashMap<&str, usize> = HashMap::new();
        let mut all_numbers = true;
        for row in 0..self.rows() {
            let cell = self.cell(row, label_index);
            if cell.is_empty() {
                return Err(at(
                    row,
                    "the label is empty: every row needs its class in the label column".into(),
                ));
            }
            let number = cell.parse::<f64>().ok();
            all_numbers &= number.is_some();
            if !first_row.contains_key(cell) {
                if first_row.len() == limits::CLASSES {
                    return Err(at(
                        row,
                        format!(
                            "the label column has more than {} distinct values here: is it a \
                             feature? Choose the label column with data.label",
                            thousands(limits::CLASSES)
                        ),
                    ));
                }
                first_row.insert(cell, row);
            }
        }
        if all_numbers {
            // Numbers with a fraction are measurements: the table has no class column here.
            let fraction = (0..self.rows()).find(|&row| {
                let v: f64 = self.cell(row, label_index).parse().unwrap_or(0.0);
                v.fract() != 0.0 || !v.is_finite()
            });
            if let Some(row) = fraction {
                return Err(at(
                    row,
                    format!(
                        "the label column holds {}, a measurement, not a class: classes are \
                         text or whole numbers. Name the table's class column with data.label \
                         (its columns: {})",
                        quoted(self.cell(row, label_index)),
                        self.columns().join(", ")
                    ),
                ));
            }
        }
        if first_row.len() < 2 {
            return Err(at(
                0,
                format!(
                    "every row's label is {}: a classifier needs at least two classes",
                    quoted(self.cell(0, label_index))
                ),
            ));
        }
        let mut classes: Vec<&str> = first_row.keys().copied().collect();
        if all_numbers {
            let value = |c: &str| c.parse::<f64>().unwrap_or(0.0);
            classes.sort_by(|a, b| value(a).total_cmp(&value(b)).then(a.cmp(b)));
        } else {
            classes.sort_unstable();
        }
        let ids: HashMap<&str, i64> = classes
            .iter()
            .enumerate()
            .map(|(i, &c)| (c, i as i64))
            .collect();
        let targets = (0..self.rows())
            .map(|row| ids[self.cell(row, label_index)])
            .collect();
        Ok((classes.into_iter().map(str::to_string).collect(), targets))
    }
}

/// A finite-looking decimal too large for f64 (`1e400`) parses as infinity; it is too large,
/// not "not a number".
fn looks_huge(cell: &str) -> bool {
    let lower = cell.to_ascii_lowercase();
    !lower.contains("inf") && !lower.contains("nan")
}
