//! `vramlab fuzz`: every parser fed generated input, counted per parser. An input fails when
//! its parse panics or holds more than [`BOUND_FACTOR`] times its size plus [`BOUND_BYTES`]
//! at once (read from the counting global allocator, per thread). Each input comes from the
//! run's seed, the target and its index, so a failure is replayed with `--index`.

pub mod alloc;
mod generate;
mod targets;

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use vramlab::engine::ConfigError;
use vramlab::engine::error::excerpt;
use vramlab::engine::format::ByteFormat;

use crate::args::FuzzArgs;
use alloc::Watch;
use generate::Generator;
use targets::{TARGETS, Target};

/// A parse may hold this many bytes per byte of input at once (serde_json's values take
/// tens of bytes per byte of `[{},{}]`), plus [`BOUND_BYTES`]. A 1 MB input may so hold at
/// most 257 MB: a parse that sized something by a number it read would go far past it.
pub const BOUND_FACTOR: usize = 256;
pub const BOUND_BYTES: usize = 1 << 20;

thread_local! {
    /// Set while a parse runs under the harness: its panics are recorded, not printed.
    static QUIET: Cell<bool> = const { Cell::new(false) };
    static PANIC_MESSAGE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// What one target's inputs did.
#[derive(Default)]
struct Tally {
    inputs: u64,
    accepted: u64,
    panics: u64,
    over_bound: u64,
    /// The most a parse held, and its input's size.
    most_held: (usize, usize),
    /// The slowest parse, its input's size and index.
    slowest: (Duration, usize, u64),
    /// The first failure: the input's index, what went wrong, the input.
    first_failure: Option<(u64, String, Vec<u8>)>,
}

impl Tally {
    fn merge(&mut self, other: Tally) {
        self.inputs += other.inputs;
        self.accepted += other.accepted;
        self.panics += other.panics;
        self.over_bound += other.over_bound;
        self.most_held = self.most_held.max(other.most_held);
        self.slowest = self.slowest.max(other.slowest);
        let earlier = match (&self.first_failure, &other.first_failure) {
            (None, Some(_)) => true,
            (Some(a), Some(b)) => b.0 < a.0,
            _ => false,
        };
        if earlier {
            self.first_failure = other.first_failure;
        }
    }

    fn failures(&self) -> u64 {
        self.panics + self.over_bound
    }
}

fn bound(len: usize) -> usize {
    len.saturating_mul(BOUND_FACTOR).saturating_add(BOUND_BYTES)
}

pub fn run(args: &FuzzArgs) -> anyhow::Result<()> {
    let targets = select(&args.target)?;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    if let Some(index) = args.index {
        return replay(&targets, seed, index);
    }
    let threads = args
        .threads
        .or_else(|| std::thread::available_parallelism().ok().map(usize::from))
        .unwrap_or(1)
        .max(1);
    println!(
        "vramlab fuzz: seed {seed}, {} inputs per parser on {threads} threads; a parse may hold \
         {BOUND_FACTOR} x its input + {} KiB",
        args.inputs,
        BOUND_BYTES >> 10
    );
    quiet_panics();
    let bar = ProgressBar::with_draw_target(
        Some(args.inputs * targets.len() as u64),
        ProgressDrawTarget::stderr(),
    );
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .expect("the template is valid"),
    );
    let started = Instant::now();
    let mut rows = Vec::new();
    for (number, target) in &targets {
        bar.set_message(target.name);
        let tally = run_target(*number, target, seed, args.inputs, threads, &bar);
        rows.push((target, tally));
    }
    bar.finish_and_clear();
    print_table(&rows);
    let (inputs, failures): (u64, u64) = rows
        .iter()
        .fold((0, 0), |(i, f), (_, t)| (i + t.inputs, f + t.failures()));
    let panics: u64 = rows.iter().map(|(_, t)| t.panics).sum();
    let over: u64 = rows.iter().map(|(_, t)| t.over_bound).sum();
    println!(
        "{panics} panics, {over} over the bound in {inputs} inputs ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    for (target, tally) in &rows {
        if let Some((index, what, input)) = &tally.first_failure {
            println!(
                "\n{}: input #{index} ({} bytes) {what}\n  input: {:?}\n  replay: vramlab fuzz \
                 --seed {seed} --target {} --index {index}",
                target.name,
                input.len(),
                excerpt(&String::from_utf8_lossy(input)),
                target.name,
            );
        }
    }
    if failures > 0 {
        anyhow::bail!("{failures} of {inputs} inputs failed (seed {seed})");
    }
    Ok(())
}

/// The targets named (all when none is), each with its number in the table (part of every
/// input's seed).
fn select(names: &[String]) -> Result<Vec<(usize, &'static Target)>, ConfigError> {
    let all = TARGETS.iter().enumerate();
    if names.is_empty() {
        return Ok(all.collect());
    }
    for name in names {
        if !TARGETS.iter().any(|t| t.name == name) {
            let known: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
            return Err(ConfigError::invalid(
                "--target",
                format!("no parser {name:?}; the parsers are: {}", known.join(", ")),
            ));
        }
    }
    Ok(all
        .filter(|(_, t)| names.iter().any(|n| n == t.name))
        .collect())
}

/// Record panics of watched parses instead of printing them; others go to the usual hook.
fn quiet_panics() {
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        if QUIET.with(Cell::get) {
            PANIC_MESSAGE.with(|m| *m.borrow_mut() = Some(info.to_string()));
        } else {
            previous(info);
        }
    }));
}

fn run_target(
    number: usize,
    target: &'static Target,
    seed: u64,
    inputs: u64,
    threads: usize,
    bar: &ProgressBar,
) -> Tally {
    let seeds = (target.seeds)();
    let generator = Generator {
        shape: target.shape,
        seeds: &seeds,
    };
    let threads = threads as u64;
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|first| {
                let generator = &generator;
                scope.spawn(move || {
                    let mut tally = Tally::default();
                    let mut index = first;
                    while index < inputs {
                        let input = generator.input(seed, number, index);
                        one(target, index, input, &mut tally);
                        index += threads;
                        bar.inc(1);
                    }
                    tally
                })
            })
            .collect();
        let mut total = Tally::default();
        for worker in workers {
            total.merge(worker.join().expect("a worker catches its parses' panics"));
        }
        total
    })
}

/// Parse one input, watched: its panics caught, its allocations held to the bound.
fn one(target: &'static Target, index: u64, input: Vec<u8>, tally: &mut Tally) {
    QUIET.with(|q| q.set(true));
    let started = Instant::now();
    let watch = Watch::start(bound(input.len()), target.name, index);
    let parsed = panic::catch_unwind(AssertUnwindSafe(|| (target.parse)(&input)));
    let held = watch.stop();
    let took = started.elapsed();
    QUIET.with(|q| q.set(false));
    tally.inputs += 1;
    tally.most_held = tally.most_held.max((held, input.len()));
    tally.slowest = tally.slowest.max((took, input.len(), index));
    let failure = match parsed {
        Ok(accepted) => {
            tally.accepted += u64::from(accepted);
            if held > bound(input.len()) {
                tally.over_bound += 1;
                Some(format!(
                    "held {held} bytes, over its bound of {}",
                    bound(input.len())
                ))
            } else {
                None
            }
        }
        Err(_) => {
            tally.panics += 1;
            let message = PANIC_MESSAGE.with(|m| m.borrow_mut().take());
            Some(format!("panicked: {}", message.unwrap_or_default()))
        }
    };
    if let Some(what) = failure
        && tally.first_failure.as_ref().is_none_or(|f| index < f.0)
    {
        tally.first_failure = Some((index, what, input));
    }
}

/// Run input `index` of each target uncaught (a panic prints as usual), after printing it.
fn replay(targets: &[(usize, &'static Target)], seed: u64, index: u64) -> anyhow::Result<()> {
    for (number, target) in targets {
        let seeds = (target.seeds)();
        let generator = Generator {
            shape: target.shape,
            seeds: &seeds,
        };
        let input = generator.input(seed, *number, index);
        println!(
            "{} input #{index} ({} bytes): {:?}",
            target.name,
            input.len(),
            String::from_utf8_lossy(&input)
        );
        let watch = Watch::start(usize::MAX, target.name, index);
        let accepted = (target.parse)(&input);
        let held = watch.stop();
        println!(
            "  {}; held {held} bytes at most (bound {})",
            if accepted { "accepted" } else { "refused" },
            bound(input.len())
        );
    }
    Ok(())
}

fn print_table(rows: &[(&&'static Target, Tally)]) {
    println!(
        "{:<13} {:>9} {:>9} {:>7} {:>6}  {:>22}  {:>30}  reads",
        "parser", "inputs", "accepted", "panics", "over", "most held (input)", "slowest (input)"
    );
    for (target, t) in rows {
        println!(
            "{:<13} {:>9} {:>9} {:>7} {:>6}  {:>22}  {:>30}  {}",
            target.name,
            t.inputs,
            t.accepted,
            t.panics,
            t.over_bound,
            format!("{} ({})", size(t.most_held.0), size(t.most_held.1)),
            format!(
                "{:.1} ms ({}, #{})",
                t.slowest.0.as_secs_f64() * 1e3,
                size(t.slowest.1),
                t.slowest.2
            ),
            target.reads
        );
    }
}

/// Host bytes, from a few to a few MiB.
fn size(bytes: usize) -> String {
    ByteFormat::B_TO_MIB.of(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use generate::Shape;

    /// Holds just over its bound, in pieces small enough that none is refused on its own.
    fn hoarder(bytes: &[u8]) -> bool {
        let pieces: Vec<Vec<u8>> = (0..=bound(bytes.len()) >> 16)
            .map(|_| vec![1; 1 << 16])
            .collect();
        !std::hint::black_box(pieces).is_empty()
    }

    fn panicker(_: &[u8]) -> bool {
        panic!("on purpose")
    }

    static HOARDER: Target = Target {
        name: "hoarder",
        reads: "",
        shape: Shape::Letters("a"),
        seeds: Vec::new,
        parse: hoarder,
    };

    static PANICKER: Target = Target {
        name: "panicker",
        reads: "",
        shape: Shape::Letters("a"),
        seeds: Vec::new,
        parse: panicker,
    };

    #[test]
    fn a_parse_that_holds_more_than_its_bound_is_counted() {
        let mut tally = Tally::default();
        one(&HOARDER, 3, vec![b'a'; 100], &mut tally);
        assert_eq!((tally.inputs, tally.over_bound, tally.panics), (1, 1, 0));
        assert!(tally.most_held.0 > bound(100), "{:?}", tally.most_held);
        assert_eq!(tally.first_failure.map(|f| f.0), Some(3));
    }

    #[test]
    fn a_panic_is_caught_and_counted_with_its_message() {
        quiet_panics();
        let mut tally = Tally::default();
        one(&PANICKER, 5, b"x".to_vec(), &mut tally);
        assert_eq!((tally.inputs, tally.panics, tally.over_bound), (1, 1, 0));
        let (index, what, input) = tally.first_failure.unwrap();
        assert_eq!((index, input), (5, b"x".to_vec()));
        assert!(what.contains("on purpose"), "{what}");
    }

    #[test]
    fn an_input_is_the_same_for_the_same_seed_target_and_index() {
        let seeds = vec![b"preset=spiral-mlp&batch_size=8".to_vec()];
        let generator = Generator {
            shape: Shape::Hash,
            seeds: &seeds,
        };
        for index in 0..50 {
            assert_eq!(generator.input(9, 3, index), generator.input(9, 3, index));
        }
        assert_ne!(
            (0..50)
                .map(|i| generator.input(9, 3, i))
                .collect::<Vec<_>>(),
            (0..50)
                .map(|i| generator.input(10, 3, i))
                .collect::<Vec<_>>()
        );
    }
}
