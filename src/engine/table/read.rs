//! CSV bytes to a [`Table`]: the `csv` crate splits records (quotes, doubled quotes, CRLF, a
//! UTF-8 BOM); this file checks the shape a table must have and says where it has not.

use sha2::{Digest, Sha256};

use super::{CsvError, Source, Table, limits};

/// Read `bytes` as a CSV table with a header row. Quoted fields, a UTF-8 byte-order mark and
/// CRLF line ends are read as a spreadsheet writes them; blank lines are skipped.
///
/// Allocation is bounded by the input: the cells' text (at most the input), one `u32` per cell
/// and one per row, and the csv reader's record buffer.
pub fn parse(bytes: &[u8]) -> Result<Table, CsvError> {
    let source = Source {
        name: String::new(),
        bytes: bytes.len() as u64,
        sha256: hex(&Sha256::digest(bytes)),
    };
    if bytes.len() > limits::BYTES {
        return Err(past_byte_limit(bytes));
    }
    // The csv reader would take a byte-order mark for part of the first column's name.
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let mut record = csv::ByteRecord::new();
    let mut lines_at = Lines::new(bytes);
    let mut columns: Vec<String> = Vec::new();
    let mut text = String::new();
    let mut ends: Vec<u32> = Vec::new();
    let mut lines: Vec<u32> = Vec::new();
    loop {
        let more = reader.read_byte_record(&mut record).map_err(|err| {
            let at = err.position().map_or(0, |p| p.byte() as usize);
            CsvError::on_line(lines_at.line(at), format!("the CSV reader stopped: {err}"))
        })?;
        if !more {
            break;
        }
        if is_blank(&record) {
            continue;
        }
        let line = lines_at.line(record.position().map_or(0, |p| p.byte() as usize));
        if columns.is_empty() {
            columns = header(&record, line)?;
            continue;
        }
        if record.len() != columns.len() {
            return Err(ragged(&record, line, &columns));
        }
        if ends.len() + columns.len() > limits::CELLS {
            let column = limits::CELLS - ends.len() + 1;
            return Err(CsvError::at(
                line,
                column,
                format!(
                    "the table passes {} cells here, the limit (rows x columns, header not \
                     counted); use fewer rows or columns",
                    thousands(limits::CELLS)
                ),
            ));
        }
        for (i, field) in record.iter().enumerate() {
            let cell = utf8(field, line, i + 1)?;
            text.push_str(cell);
            // Fits: the text is at most the input, which is at most `limits::BYTES`.
            ends.push(text.len() as u32);
        }
        lines.push(line as u32);
    }
    if columns.is_empty() {
        return Err(CsvError::at(
            1,
            1,
            "the file is empty: expected a header row naming the columns, then one row per \
             sample",
        ));
    }
    if lines.is_empty() {
        let line = lines_at.line(bytes.len())
            + usize::from(!bytes.ends_with(b"\n") && !bytes.ends_with(b"\r"));
        return Err(CsvError::at(
            line.max(2),
            1,
            "no rows after the header: expected one row per sample",
        ));
    }
    Ok(Table {
        source,
        columns,
        text,
        ends,
        lines,
    })
}

/// Line numbers of byte offsets, counted as an editor shows them (`\n`, `\r\n` or a lone
/// `\r` ends a line). The csv reader's own count lags a line behind on CRLF files: it counts a
/// record's `\n` when it reads the next record. Offsets must come in increasing order.
struct Lines<'a> {
    bytes: &'a [u8],
    offset: usize,
    line: usize,
}

impl<'a> Lines<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Self {
            bytes,
            offset: 0,
            line: 1,
        }
    }

    /// The line of the first byte at or after `offset` that does not end a line (where a
    /// record's text starts).
    fn line(&mut self, offset: usize) -> usize {
        let mut at = offset.min(self.bytes.len());
        while at < self.bytes.len() && matches!(self.bytes[at], b'\n' | b'\r') {
            at += 1;
        }
        let at = at.max(self.offset);
        for i in self.offset..at {
            let ends = match self.bytes[i] {
                b'\n' => true,
                b'\r' => self.bytes.get(i + 1) != Some(&b'\n'),
                _ => false,
            };
            self.line += usize::from(ends);
        }
        self.offset = at;
        self.line
    }
}

/// A record of one empty (or all-space) field: a line with nothing on it.
fn is_blank(record: &csv::ByteRecord) -> bool {
    record.len() == 1 && record[0].is_empty()
}

fn header(record: &csv::ByteRecord, line: usize) -> Result<Vec<String>, CsvError> {
    let mut names: Vec<String> = Vec::with_capacity(record.len());
    for (i, field) in record.iter().enumerate() {
        names.push(utf8(field, line, i + 1)?.to_string());
    }
    // A header names columns; a first row that is mostly numbers is a sample.
    let numbers = names.iter().filter(|n| n.parse::<f64>().is_ok()).count();
    if 2 * numbers > names.len() {
        return Err(CsvError::at(
            line,
            1,
            format!(
                "no header: the first row looks like a sample ({numbers} of its {} cells are \
                 numbers: {}); the first row must name the columns",
                names.len(),
                preview(&names)
            ),
        ));
    }
    for (i, name) in names.iter().enumerate() {
        if name.is_empty() {
            return Err(CsvError::at(
                line,
                i + 1,
                "the header names no column here: every column needs a name (an unnamed first \
                 column is often an index a spreadsheet or pandas wrote; leave it out)",
            ));
        }
        if let Some(first) = names[..i].iter().position(|n| n == name) {
            return Err(CsvError::at(
                line,
                i + 1,
                format!(
                    "the column name {} repeats column {}: names must differ, so a label can be \
                     chosen by name",
                    quoted(name),
                    first + 1
                ),
            ));
        }
    }
    if names.len() < 2 {
        return Err(CsvError::at(
            line,
            1,
            format!(
                "the header has one column ({}): a table needs at least one feature column and \
                 a label column, separated by commas",
                quoted(&names[0])
            ),
        ));
    }
    Ok(names)
}

fn ragged(record: &csv::ByteRecord, line: usize, columns: &[String]) -> CsvError {
    let (found, expected) = (record.len(), columns.len());
    let spans_lines = record.iter().any(|f| f.contains(&b'\n'));
    let hint = if spans_lines {
        " (a field here holds a line break: is a quote left open?)"
    } else {
        ""
    };
    if found < expected {
        CsvError::in_column(
            line,
            found + 1,
            &columns[found],
            format!(
                "the row ends after {found} {}; the header has {expected} columns{hint}",
                if found == 1 { "field" } else { "fields" }
            ),
        )
    } else {
        CsvError::at(
            line,
            expected + 1,
            format!(
                "the row has {found} fields; the header has {expected} columns (a comma inside \
                 a value needs the value in double quotes){hint}"
            ),
        )
    }
}

fn utf8(field: &[u8], line: usize, column: usize) -> Result<&str, CsvError> {
    std::str::from_utf8(field).map_err(|err| {
        let at = err.valid_up_to();
        CsvError::at(
            line,
            column,
            format!(
                "not UTF-8 text (byte 0x{:02X} at character {} of the cell); save the file as \
                 UTF-8",
                field[at],
                field[..at].iter().filter(|&&b| (b & 0xC0) != 0x80).count() + 1
            ),
        )
    })
}

/// Where the byte limit falls: the line and field of the limit's byte, counted as the csv
/// reader counts them (quotes respected), over the bytes before it.
fn past_byte_limit(bytes: &[u8]) -> CsvError {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(&bytes[..limits::BYTES]);
    let mut record = csv::ByteRecord::new();
    let mut lines_at = Lines::new(bytes);
    let (mut line, mut column) = (1, 1);
    while let Ok(true) = reader.read_byte_record(&mut record) {
        line = lines_at.line(record.position().map_or(0, |p| p.byte() as usize));
        column = record.len();
    }
    CsvError::at(
        line,
        column,
        format!(
            "the file goes on past {} bytes (100 MB) here, the limit: use fewer rows or columns",
            thousands(limits::BYTES)
        ),
    )
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// A cell's text for a message: quoted, escaped, and cut at 40 characters.
pub(crate) fn quoted(cell: &str) -> String {
    const MAX: usize = 40;
    if cell.chars().count() <= MAX {
        format!("{cell:?}")
    } else {
        let cut: String = cell.chars().take(MAX).collect();
        format!("{:?}...", cut)
    }
}

fn preview(cells: &[String]) -> String {
    let shown: Vec<&str> = cells.iter().take(4).map(String::as_str).collect();
    let more = if cells.len() > 4 { ", ..." } else { "" };
    format!("{}{more}", shown.join(", "))
}

pub(crate) fn thousands(n: usize) -> String {
    crate::engine::format::grouped(n as u64)
}
