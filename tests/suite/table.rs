//! A user's CSV table: each broken file refused at its line and column with its reason, the
//! forms spreadsheets write accepted, the split standardised by the training rows, and one
//! short run on iris on the GPU.

use vramlab::engine::config::{DataKind, InputKind, ModelKind};
use vramlab::engine::data::table_inputs::{Inputs, Outcome, check};
use vramlab::engine::data::{Dataset, HostInputs, split_sizes};
use vramlab::engine::memory::predict;
use vramlab::engine::presets::{table_base, use_table};
use vramlab::engine::table::{self, CsvError, LabelledTable, SharedTable, limits, parse};
use vramlab::engine::{ConfigError, RunConfig};

use super::support;

const IRIS: &[u8] = include_bytes!("../data/iris.csv");
const WINE: &[u8] = include_bytes!("../data/wine.csv");

fn refused(bytes: &[u8], label: &str) -> CsvError {
    match table::read("t.csv", bytes, label) {
        Ok(table) => panic!(
            "{:?} should be refused, read {} rows",
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)]),
            table.rows()
        ),
        Err(err) => err,
    }
}

/// The error is at `line` and `column` and its text (as a front prints it) holds `words`.
fn assert_at(err: &CsvError, line: usize, column: Option<usize>, words: &str) {
    let text = err.to_string();
    assert_eq!((err.line, err.column), (line, column), "{text}");
    assert!(text.contains(words), "{text:?} should say {words:?}");
}

fn read(bytes: &[u8], label: &str) -> LabelledTable {
    table::read("t.csv", bytes, label).unwrap_or_else(|err| panic!("{err}"))
}

#[test]
fn an_empty_file_is_refused() {
    for bytes in [&b""[..], b"\n\n", b"\xEF\xBB\xBF", b"  \r\n"] {
        let err = refused(bytes, "");
        assert_at(
            &err,
            1,
            Some(1),
            "line 1, column 1: the file is empty: expected a header row",
        );
    }
}

#[test]
fn a_file_without_a_header_is_refused() {
    let err = refused(b"5.1,3.5,setosa\n4.9,3.0,versicolor\n", "");
    assert_at(
        &err,
        1,
        Some(1),
        "no header: the first row looks like a sample (2 of its 3 cells are numbers: 5.1, 3.5, \
         setosa); the first row must name the columns",
    );
}

#[test]
fn a_header_without_rows_is_refused() {
    let err = refused(b"a,b,label\n", "");
    assert_at(&err, 2, Some(1), "no rows after the header");
}

#[test]
fn a_short_row_is_refused_where_it_ends() {
    let err = refused(b"a,b,label\n1,2,x\n3,4\n5,6,y\n", "");
    assert_at(
        &err,
        3,
        Some(3),
        "line 3, column 3 (label): the row ends after 2 fields; the header has 3 columns",
    );
}

#[test]
fn a_long_row_is_refused_past_the_last_column() {
    let err = refused(b"a,b,label\n1,2,x\n3,4,5,y\n", "");
    assert_at(
        &err,
        3,
        Some(4),
        "the row has 4 fields; the header has 3 columns (a comma inside a value needs the value \
         in double quotes)",
    );
}

#[test]
fn a_quote_left_open_is_named_in_the_ragged_row() {
    let err = refused(b"a,b,label\n1,\"2,x\n3,4,y\n", "");
    assert_at(&err, 2, Some(3), "is a quote left open?");
}

#[test]
fn lines_are_counted_as_an_editor_shows_them() {
    // CRLF, a blank line, and a quoted field over two lines before the bad cell.
    let err = refused(b"a,b,label\r\n1,2,\"x\r\ny\"\r\n\r\n3,oops,y\r\n", "");
    assert_at(&err, 5, Some(2), "\"oops\" is not a number");
}

#[test]
fn a_non_numeric_feature_cell_is_refused() {
    let err = refused(b"a,b,label\n1,2,x\n3,abc,y\n", "");
    assert_at(
        &err,
        3,
        Some(2),
        "line 3, column 2 (b): \"abc\" is not a number; every column but the label (label, \
         column 3) must hold numbers (to train on this column as the label: data.label=b)",
    );
}

#[test]
fn an_empty_feature_cell_is_refused() {
    let err = refused(b"a,b,label\n1,2,x\n,4,y\n", "");
    assert_at(&err, 3, Some(1), "(a): the cell is empty");
}

#[test]
fn numbers_an_f32_cannot_hold_are_refused() {
    let err = refused(b"a,b,label\n1,2,x\n1e400,4,y\n", "");
    assert_at(&err, 3, Some(1), "\"1e400\" is beyond what an f32 holds");
    let err = refused(b"a,b,label\n1,2,x\n3,NaN,y\n", "");
    assert_at(&err, 3, Some(2), "\"NaN\" is not a finite number");
}

#[test]
fn a_table_whose_last_column_is_a_measurement_has_no_label_column() {
    let err = refused(b"a,b,c\n1,2,0.5\n3,4,0.25\n", "");
    assert_at(
        &err,
        2,
        Some(3),
        "line 2, column 3 (c): the label column holds \"0.5\", a measurement, not a class",
    );
}

#[test]
fn an_empty_label_is_refused() {
    let err = refused(b"a,b,label\n1,2,x\n3,4,\n", "");
    assert_at(&err, 3, Some(3), "the label is empty");
}

#[test]
fn an_unknown_label_column_is_refused_with_the_columns() {
    let err = refused(IRIS, "colour");
    assert_at(
        &err,
        1,
        None,
        "line 1: data.label: the header has no column \"colour\"; its columns are \
         \"sepal_length_cm\", \"sepal_width_cm\", \"petal_length_cm\", \"petal_width_cm\", \
         \"species\" (or give a position, 1..=5)",
    );
    let err = refused(IRIS, "6");
    assert_at(&err, 1, None, "no column \"6\"");
}

#[test]
fn one_class_only_is_refused() {
    let err = refused(b"a,b,label\n1,2,x\n3,4,x\n", "");
    assert_at(
        &err,
        2,
        Some(3),
        "line 2, column 3 (label): every row's label is \"x\": a classifier needs at least two \
         classes",
    );
}

#[test]
fn header_problems_are_refused() {
    let err = refused(b",a,label\n0,1,x\n1,2,y\n", "");
    assert_at(&err, 1, Some(1), "the header names no column here");
    let err = refused(b"a,a,label\n0,1,x\n1,2,y\n", "");
    assert_at(&err, 1, Some(2), "the column name \"a\" repeats column 1");
    let err = refused(b"label\nx\ny\n", "");
    assert_at(&err, 1, Some(1), "the header has one column");
}

#[test]
fn text_that_is_not_utf8_is_refused() {
    let err = refused(b"a,b,label\n1,2,caf\xE9\n", "");
    assert_at(
        &err,
        2,
        Some(3),
        "not UTF-8 text (byte 0xE9 at character 4 of the cell)",
    );
}

#[test]
fn a_file_past_the_byte_limit_is_refused_where_it_passes() {
    let mut bytes = b"a,b\n1,\"".to_vec();
    bytes.resize(limits::BYTES + 1, b'x');
    let err = refused(&bytes, "");
    assert_at(
        &err,
        2,
        Some(2),
        "the file goes on past 100,000,000 bytes (100 MB) here, the limit",
    );
}

#[test]
fn a_table_past_the_cell_limit_is_refused_where_it_passes() {
    // Three columns: the limit falls inside row 3,333,334 (line 3,333,335), at its second cell.
    let rows = limits::CELLS / 3 + 1;
    let mut bytes = b"a,b,label\n".to_vec();
    for i in 0..rows {
        bytes.extend_from_slice(if i % 2 == 0 { b"1,2,x\n" } else { b"3,4,y\n" });
    }
    let err = refused(&bytes, "");
    assert_at(
        &err,
        rows + 1,
        Some(limits::CELLS - 3 * (rows - 1) + 1),
        "the table passes 10,000,000 cells here, the limit",
    );
}

#[test]
fn more_distinct_labels_than_the_limit_are_refused() {
    let mut bytes = b"a,label\n".to_vec();
    for i in 0..=limits::CLASSES {
        bytes.extend_from_slice(format!("{i},c{i}\n").as_bytes());
    }
    let err = refused(&bytes, "");
    assert_at(
        &err,
        limits::CLASSES + 2,
        Some(2),
        "the label column has more than 1,000 distinct values here: is it a feature?",
    );
}

#[test]
fn quoted_fields_a_bom_crlf_and_blank_lines_are_read_as_written() {
    let plain = read(b"a,b,label\n1,2,x\n3,4,y\n", "");
    let written = read(
        b"\xEF\xBB\xBF\"a\",\"b\",label\r\n\"1\", 2 ,x\r\n\r\n3,\"4\",\"y\"\r\n",
        "",
    );
    assert_eq!(written.features, plain.features);
    assert_eq!(written.values, plain.values);
    assert_eq!(written.classes, plain.classes);
    assert_eq!(written.targets, plain.targets);
    // A comma and doubled quotes inside quotes stay in the cell.
    let quoted = read(
        b"\"length, cm\",label\n1,\"a \"\"big\"\" one\"\n2,\"b, c\"\n",
        "",
    );
    assert_eq!(quoted.features, ["length, cm"]);
    assert_eq!(quoted.classes, ["a \"big\" one", "b, c"]);
}

#[test]
fn the_label_is_chosen_by_name_position_or_last() {
    let by_default = read(IRIS, "");
    assert_eq!(by_default.label, "species");
    assert_eq!(by_default.classes, ["setosa", "versicolor", "virginica"]);
    assert_eq!(by_default.class_counts(), [50, 50, 50]);
    assert_eq!((by_default.rows(), by_default.width()), (150, 4));
    assert_eq!(read(IRIS, "5").label, "species");
    assert_eq!(read(IRIS, "SPECIES").label, "species");
    // Whole numbers are classes, in numeric order; the label can be any column.
    let numbered = read(b"x,y,label\n1,2,10\n3,4,2\n5,6,1\n", "");
    assert_eq!(numbered.classes, ["1", "2", "10"]);
    assert_eq!(numbered.targets, [2, 1, 0]);
    let first = read(b"kind,x,y\na,1,2\nb,3,4\n", "kind");
    assert_eq!((first.label_column, first.features.len()), (1, 2));
}

#[test]
fn the_parser_keeps_the_bytes_identity() {
    let table = parse(IRIS).unwrap().named("iris.csv");
    assert_eq!(table.source.bytes, IRIS.len() as u64);
    assert_eq!(table.source.sha256.len(), 64);
    assert_eq!(table.source.name, "iris.csv");
    assert_eq!(table.cell(0, 4), "setosa");
    assert_eq!(table.line(0), 2);
}

fn on(bytes: &[u8], name: &str) -> RunConfig {
    let mut config = table_base();
    let table = SharedTable::new(table::read(name, bytes, "").unwrap());
    use_table(&mut config, table, name, false);
    config.validate().unwrap();
    config
}

#[test]
fn a_table_splits_by_the_seed_and_standardises_by_its_training_rows() {
    let config = on(WINE, "wine.csv");
    assert_eq!(config.data.input_kind(), InputKind::Features);
    assert_eq!(split_sizes(&config.data), (133, 45));
    let set = Dataset::build(&config.data, config.seed).unwrap();
    assert_eq!((set.train.len, set.test.len, set.classes), (133, 45, 3));
    let HostInputs::Floats { values, width } = &set.train.inputs else {
        panic!("a table's rows are floats")
    };
    assert_eq!(*width, 13);
    for feature in 0..13 {
        let column: Vec<f64> = values.chunks(13).map(|row| row[feature] as f64).collect();
        let mean = column.iter().sum::<f64>() / 133.0;
        let spread = (column.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 133.0).sqrt();
        assert!(
            mean.abs() < 1e-5 && (spread - 1.0).abs() < 1e-4,
            "{feature}: {mean} {spread}"
        );
    }
    // Proline, in the hundreds, is scaled by the training rows' own figures.
    let proline = &set.standardisation[12];
    assert_eq!(proline.name, "proline");
    assert!((500.0..1000.0).contains(&proline.mean), "{proline:?}");
    let summary = set.table_summary(&config.data).unwrap();
    let counted: usize = summary.classes.iter().map(|c| c.train + c.test).sum();
    assert_eq!(counted, 178);
    assert_eq!(summary.classes[0].name, "class_0");
    // Same seed, same split; another seed, another.
    let again = Dataset::build(&config.data, config.seed).unwrap();
    assert_eq!(again.train.targets, set.train.targets);
    let other = Dataset::build(&config.data, config.seed + 1).unwrap();
    assert_ne!(other.train.targets, set.train.targets);
}

#[test]
fn a_table_config_needs_its_table_and_its_label() {
    let mut config = on(IRIS, "iris.csv");
    config.data.table = None;
    let err = config.validate().unwrap_err();
    assert_eq!(err.field(), Some("data.path"));
    assert!(
        err.to_string().contains("data.kind = csv needs its table"),
        "{err}"
    );
    let config = on(IRIS, "iris.csv");
    let relabelled = vramlab::engine::overrides::apply_override(&config, "data.label=1").unwrap();
    let err = relabelled.validate().unwrap_err();
    assert_eq!(err.field(), Some("data.label"), "{err}");
    // The JSON form names the file and the label, never the rows.
    let json = config.to_json_pretty();
    assert!(
        json.contains("\"path\": \"iris.csv\"") && !json.contains("setosa"),
        "{json}"
    );
}

#[test]
fn models_take_a_table_by_its_width() {
    let iris = on(IRIS, "iris.csv");
    let predicted = predict(&iris);
    // 4 -> 64 -> 64 -> 3.
    assert_eq!(
        predicted.param_count,
        (4 * 64 + 64) + (64 * 64 + 64) + (64 * 3 + 3)
    );
    let mut cnn = iris.clone();
    cnn.model.kind = ModelKind::Cnn;
    let err: ConfigError = cnn.validate().unwrap_err();
    assert!(
        err.to_string().contains(
            "(a table of 4 features; the CNN takes 64, as 8x8 images); models for it: mlp"
        ),
        "{err}"
    );
    // Two features are points: the page draws them with the decision boundary.
    let points = on(b"x,y,label\n0,1,a\n1,0,b\n2,2,a\n3,1,b\n", "p.csv");
    assert_eq!(points.data.input_kind(), InputKind::Points);
    assert_eq!(points.data.kind, DataKind::Csv);
    // A sequence model's config takes a table by switching to the table's MLP (and its
    // strategies: fused attention or LoRA mean nothing to it).
    for name in ["sort-transformer", "sort-llama"] {
        let mut config = support::config(name, &[]);
        let notes = use_table(
            &mut config,
            SharedTable::new(table::read("iris.csv", IRIS, "").unwrap()),
            "iris.csv",
            false,
        );
        assert_eq!(config.model.kind, ModelKind::Mlp, "{name}");
        assert!(
            notes[0].starts_with(&format!("model.kind: {} cannot train", config_kind(name))),
            "{notes:?}"
        );
        config.validate().unwrap();
    }
}

fn config_kind(preset: &str) -> &'static str {
    support::config(preset, &[]).model.kind.name()
}

#[test]
fn a_broken_table_on_the_command_line_exits_2_naming_the_file_line_and_column() {
    let dir = std::env::temp_dir().join(format!("vramlab-table-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bad.csv"), "a,b,label\n1,2,x\n3,oops,y\n").unwrap();
    // A config file's relative path is relative to the file.
    std::fs::write(
        dir.join("run.json"),
        r#"{"data": {"kind": "csv", "path": "bad.csv"}}"#,
    )
    .unwrap();
    let run = dir.join("run.json");
    let out = support::vramlab(&["train", "--config", run.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("bad.csv: line 3, column 2 (b): \"oops\" is not a number"),
        "{stderr}"
    );
    let bad = dir.join("bad.csv");
    let out = support::vramlab(&["plan", "--data", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let out = support::vramlab(&["train", "--data", "no-such-file.csv"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("data.path: no-such-file.csv: "), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn iris_trains_on_the_gpu_and_the_summary_names_its_classes_and_scales() {
    let mut config = on(IRIS, "iris.csv");
    config.steps = 200;
    config.eval_every = 0;
    config.memory_sampling = vramlab::engine::config::MemorySampling::Step;
    let (_guard, gpu) = support::gpu();
    let timeline = support::run(&gpu, config);
    let summary = &timeline.summary;
    let accuracy = summary.eval_accuracy.expect("evaluated at the end");
    assert!(accuracy >= 0.9, "iris test accuracy {accuracy}");
    let table = summary.table.as_ref().expect("a table's run records it");
    let names: Vec<&str> = table.classes.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["setosa", "versicolor", "virginica"]);
    assert_eq!(table.standardisation.len(), 4);
    assert_eq!(table.source.name, "iris.csv");
    assert_eq!((table.rows, table.columns), (150, 5));
}

#[test]
fn generated_tables_and_bytes_never_panic_the_reader() {
    // A short run of the generator behind `vramlab fuzz --target csv` (which runs a million).
    let mut inputs = Inputs::new(&[IRIS, WINE], 7);
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..2_000 {
        let (_, bytes) = inputs.next_input();
        match check(&bytes) {
            Outcome::Accepted { .. } => accepted += 1,
            Outcome::Refused(err) => {
                assert!(err.line >= 1 && err.column != Some(0), "{err}");
                refused += 1;
            }
        }
    }
    // Both roads are taken: the mutations leave some tables whole and break others.
    assert!(
        accepted > 100 && refused > 100,
        "{accepted} accepted, {refused} refused"
    );
}
