//! The parsers under generated input: a short run of `vramlab fuzz` (the full command feeds a
//! million inputs to each parser, outside CI's time), so a parser that starts to panic or to
//! hold memory out of proportion to its input fails here.

use super::support::vramlab;

#[test]
fn every_parser_takes_generated_input_without_a_panic_or_an_unbounded_allocation() {
    let out = vramlab(&["fuzz", "--inputs", "3000", "--seed", "32"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The table's rows: parser, inputs, accepted, panics, over the bound, ...
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .skip_while(|line| !line.starts_with("parser"))
        .skip(1)
        .take_while(|line| !line.is_empty() && !line.contains("panics,"))
        .map(|line| line.split_whitespace().collect())
        .collect();
    let names: Vec<&str> = rows.iter().map(|row| row[0]).collect();
    for name in [
        "config-json",
        "set",
        "budget",
        "url-hash",
        "lessons-link",
        "import-json",
        "csv",
        "hf-config",
        "recipe",
    ] {
        assert!(names.contains(&name), "{name} missing from:\n{stdout}");
    }
    for row in &rows {
        assert_eq!(row[1], "3000", "{row:?}");
        let accepted: u64 = row[2].parse().unwrap();
        assert!(accepted > 0, "{}: no generated input was valid", row[0]);
        assert_eq!((row[3], row[4]), ("0", "0"), "{row:?}");
    }
}

#[test]
fn a_fuzz_input_replays_by_its_index() {
    let out = vramlab(&["fuzz", "--seed", "32", "--target", "budget", "--index", "7"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.starts_with("budget input #7 ("), "{stdout}");
    let unknown = vramlab(&["fuzz", "--target", "yaml"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("config-json"));
}
