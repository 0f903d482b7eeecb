//! `vramlab fuzz-csv`: the CSV reader on generated input (random bytes and mutated iris and
//! wine tables, `engine::data::table_inputs`), each taken the whole way a file goes: parsed,
//! labelled, split and standardised. Counts what was accepted and refused (by reason) and any
//! panic, which fails the command and is written out to reproduce.

use std::collections::BTreeMap;
use std::panic::{self, AssertUnwindSafe};
use std::time::Instant;

use vramlab::engine::data::table_inputs::{Inputs, Origin, Outcome, check};

const IRIS: &[u8] = include_bytes!("../../../tests/data/iris.csv");
const WINE: &[u8] = include_bytes!("../../../tests/data/wine.csv");

#[derive(Default)]
struct Tally {
    inputs: usize,
    accepted: usize,
    refused: usize,
    panicked: usize,
    bytes: usize,
    largest: usize,
}

/// A refusal's reason without its particulars: the first words of the message, quoted text
/// and numbers left out.
fn reason(message: &str) -> String {
    let mut plain = String::new();
    let mut quoted = false;
    let mut previous = ' ';
    for c in message.chars() {
        if c == '"' && previous != '\\' {
            quoted = !quoted;
        } else if !quoted {
            plain.push(c);
        }
        previous = c;
    }
    plain
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty() && w.parse::<f64>().is_err() && !w.starts_with("0x"))
        .take(6)
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn run(inputs: usize, seed: u64) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut generator = Inputs::new(&[IRIS, WINE], seed);
    let mut tallies: BTreeMap<Origin, Tally> = BTreeMap::new();
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut first_panic: Option<Vec<u8>> = None;
    let hook = panic::take_hook();
    panic::set_hook(Box::new(|_| {}));
    for _ in 0..inputs {
        let (origin, bytes) = generator.next_input();
        let tally = tallies.entry(origin).or_default();
        tally.inputs += 1;
        tally.bytes += bytes.len();
        tally.largest = tally.largest.max(bytes.len());
        match panic::catch_unwind(AssertUnwindSafe(|| check(&bytes))) {
            Ok(Outcome::Accepted { .. }) => tally.accepted += 1,
            Ok(Outcome::Refused(err)) => {
                tally.refused += 1;
                *reasons.entry(reason(&err.message)).or_default() += 1;
            }
            Err(_) => {
                tally.panicked += 1;
                first_panic.get_or_insert(bytes);
            }
        }
    }
    panic::set_hook(hook);
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "fuzz-csv: {inputs} inputs (seed {seed}) through parse, label, split and standardise in \
         {seconds:.1} s"
    );
    println!(
        "{:<16} {:>8} {:>9} {:>8} {:>8} {:>11} {:>9}",
        "origin", "inputs", "accepted", "refused", "panics", "mean bytes", "largest"
    );
    for (origin, t) in &tallies {
        println!(
            "{:<16} {:>8} {:>9} {:>8} {:>8} {:>11.0} {:>9}",
            match origin {
                Origin::RandomBytes => "random bytes",
                Origin::MutatedTable => "mutated tables",
            },
            t.inputs,
            t.accepted,
            t.refused,
            t.panicked,
            t.bytes as f64 / t.inputs.max(1) as f64,
            t.largest
        );
    }
    let mut by_count: Vec<(&String, &usize)> = reasons.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    println!(
        "refusals by reason ({} kinds), most frequent first:",
        by_count.len()
    );
    for (reason, count) in by_count.iter().take(20) {
        println!("{count:>8}  {reason}");
    }
    if let Some(bytes) = first_panic {
        let path = std::env::temp_dir().join(format!("vramlab-fuzz-csv-panic-{seed}.csv"));
        std::fs::write(&path, &bytes)?;
        let panics: usize = tallies.values().map(|t| t.panicked).sum();
        anyhow::bail!(
            "{panics} inputs panicked; the first is in {} (vramlab train --data it)",
            path.display()
        );
    }
    Ok(())
}
