//! Inputs for the parsers: random bytes, byte-level mutations of valid inputs, and mutations
//! that know the input's shape (a JSON document, a `path=value`, a size, a URL hash, a string of
//! letters, lines of fields). Every input comes from its own seed, so `--index` regenerates it.

mod json;
mod text;

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use vramlab::engine::data::table_inputs;

/// The longest input: four times the large ones (1 MiB), so an edit can still grow them.
const MAX_INPUT: usize = 4 << 20;

/// What a target's input looks like, which picks the structure-aware mutations.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// A JSON document: values of another type, odd numbers, deep nesting, unknown and
    /// duplicated fields, long strings.
    Json,
    /// `path.to.field=value`: odd characters in the path, JSON mutations of the value.
    Assignment,
    /// A size such as `512MiB`: odd numbers, odd units, overflow.
    Size,
    /// A URL hash of `&`-separated `key=value` parts: odd percent-encodings, many parts.
    Hash,
    /// A short string over a small alphabet (the lessons' verdict letters).
    Letters(&'static str),
    /// A CSV table, broken by `engine::data::table_inputs::mutated` (cells dropped, duplicated
    /// and swapped, quotes, strange numbers, ragged rows, a BOM, NUL, lone CRs, files cut short).
    Lines,
}

/// The generator for one input of a target.
pub struct Generator<'a> {
    pub shape: Shape,
    pub seeds: &'a [Vec<u8>],
}

impl Generator<'_> {
    /// The input numbered `index` of the run seeded `seed` for the target numbered `target`.
    pub fn input(&self, seed: u64, target: usize, index: u64) -> Vec<u8> {
        let mut rng = StdRng::seed_from_u64(mix(seed, target as u64, index));
        let base = self.seeds.choose(&mut rng).cloned().unwrap_or_default();
        let mut input = match rng.random_range(0..100) {
            0..8 => random_bytes(&mut rng, 64),
            8..20 => mutate_bytes(&mut rng, base),
            20..99 => self.structured(&mut rng, &base),
            // Large inputs, to hold the allocation bound at size: a structured big one or a
            // valid seed with a long stretch of itself repeated inside.
            _ => match rng.random_bool(0.5) {
                true => self.big(&mut rng),
                false => inflate(&mut rng, base),
            },
        };
        if rng.random_ratio(1, 8) {
            input = mutate_bytes(&mut rng, input);
        }
        // Mutations compound (an array of long strings repeated 10,000 times): a parse of
        // hundreds of MiB says nothing the 1 MiB inputs do not, and takes seconds.
        input.truncate(MAX_INPUT);
        input
    }

    fn structured(&self, rng: &mut StdRng, base: &[u8]) -> Vec<u8> {
        let text = String::from_utf8_lossy(base);
        // Mostly one edit: every edit is a chance to be refused before the deeper checks.
        let rounds = if rng.random_bool(0.6) {
            1
        } else {
            rng.random_range(2..=3)
        };
        let mut out = text.into_owned();
        for _ in 0..rounds {
            out = match self.shape {
                Shape::Json => json::mutate(rng, &out),
                Shape::Assignment => text::assignment(rng, &out),
                Shape::Size => text::size(rng),
                Shape::Hash => text::hash(rng, self.seeds),
                Shape::Letters(alphabet) => text::letters(rng, alphabet, &out),
                // The table generator makes its own rounds of edits, and keeps the bytes
                // (invalid UTF-8 included) that a round through `String` would replace.
                Shape::Lines => return table_inputs::mutated(base, rng.random()),
            };
        }
        out.into_bytes()
    }

    fn big(&self, rng: &mut StdRng) -> Vec<u8> {
        let size = 1 << rng.random_range(10..=20);
        match self.shape {
            Shape::Json => json::big(rng, size),
            Shape::Assignment => text::big_assignment(rng, size),
            Shape::Size => text::big_size(rng, size),
            Shape::Hash => text::big_hash(rng, self.seeds, size),
            Shape::Letters(alphabet) => text::big_letters(rng, alphabet, size),
            Shape::Lines => text::big_lines(rng, size),
        }
        .into_bytes()
    }
}

/// One seed per (run, target, input): SplitMix64's finaliser over the three.
fn mix(seed: u64, target: u64, index: u64) -> u64 {
    let mut z = seed ^ target.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ index.rotate_left(32);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn random_bytes(rng: &mut StdRng, max: usize) -> Vec<u8> {
    let mut bytes = vec![0; rng.random_range(0..=max)];
    rng.fill(&mut bytes[..]);
    bytes
}

/// Bytes that mean something to one of the parsers, for insertion anywhere.
const TOKENS: &[&str] = &[
    "{", "}", "[", "]", "\"", ":", ",", "=", "&", "%", ".", "#", "\\", "\\u", "\\uD800", "null",
    "true", "-", "+", "e", "E", "0", "9", " ", "\t", "\n", "\r\n", "\0", "\u{FEFF}", "\u{2028}",
    "é", "%FF", "%2", "%25", "1e999", "NaN", "MiB", "preset=", "lessons=",
];

/// One to four byte-level edits: flip, insert, delete, duplicate, truncate, insert a token.
pub fn mutate_bytes(rng: &mut StdRng, mut bytes: Vec<u8>) -> Vec<u8> {
    for _ in 0..rng.random_range(1..=4) {
        let len = bytes.len();
        let at = rng.random_range(0..=len);
        match rng.random_range(0..7) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                bytes[i] ^= 1 << rng.random_range(0..8);
            }
            1 => bytes.insert(at, rng.random()),
            2 if len > 0 => {
                let end = rng.random_range(at..=len.min(at + 16));
                bytes.drain(at..end);
            }
            3 if len > 0 => {
                let start = rng.random_range(0..len);
                let end = rng.random_range(start..=len.min(start + 32));
                let piece = bytes[start..end].to_vec();
                bytes.splice(at..at, piece);
            }
            4 => bytes.truncate(at),
            _ => {
                let token = TOKENS.choose(rng).copied().unwrap_or("");
                bytes.splice(at..at, token.bytes());
            }
        }
    }
    bytes
}

/// `bytes` with a stretch of itself repeated until it is about 1 KiB to 1 MiB long.
fn inflate(rng: &mut StdRng, mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.is_empty() {
        return random_bytes(rng, 1 << 20);
    }
    let size = 1usize << rng.random_range(10..=20);
    let start = rng.random_range(0..bytes.len());
    let end = rng.random_range(start + 1..=bytes.len().min(start + 64));
    let piece = bytes[start..end].to_vec();
    let times = size / piece.len();
    let repeated: Vec<u8> = piece
        .iter()
        .copied()
        .cycle()
        .take(piece.len() * times)
        .collect();
    bytes.splice(end..end, repeated);
    bytes
}
