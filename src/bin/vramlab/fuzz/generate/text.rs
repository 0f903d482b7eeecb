//! Mutations of the text forms: `path=value` assignments, sizes, URL hashes, verdict letters
//! and comma-separated lines.

use rand::RngExt;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;

use super::json::{self, RAW_NUMBERS};

/// Characters that paths and hashes should not hold, or hold with care.
const ODD: &[&str] = &[
    " ", ".", "..", "=", "==", "\t", "é", "\0", "%", "[0]", "😀", "-", "A", "&", "#", "+",
    "\u{FEFF}", "\n", "'", "\"",
];

fn pick<'a>(rng: &mut StdRng, items: &[&'a str]) -> &'a str {
    items.choose(rng).copied().unwrap_or("")
}

/// A byte offset of `text` on a character boundary.
fn boundary(rng: &mut StdRng, text: &str) -> usize {
    let at = rng.random_range(0..=text.len());
    (at..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len())
}

fn insert_odd(rng: &mut StdRng, text: &str) -> String {
    let mut out = text.to_string();
    let at = boundary(rng, &out);
    out.insert_str(at, pick(rng, ODD));
    out
}

/// One edit of `path=value`: its path, its value (as JSON where it is), or the `=` between.
pub fn assignment(rng: &mut StdRng, base: &str) -> String {
    let (path, value) = base.split_once('=').unwrap_or((base, ""));
    match rng.random_range(0..10) {
        0..3 => {
            let path = match rng.random_range(0..6) {
                0 => insert_odd(rng, path),
                1 => format!("{path}.{}", pick(rng, &["x", "hidden", "0", "", "kind"])),
                2 => format!(
                    "{}{path}",
                    pick(rng, &["strategies.", "model.", ".", "data.."])
                ),
                3 => path.to_uppercase(),
                4 => "a.".repeat(rng.random_range(1..500)),
                _ => String::new(),
            };
            format!("{path}={value}")
        }
        3..8 => format!("{path}={}", json::mutate(rng, value)),
        8 => format!("{path}={}", pick(rng, RAW_NUMBERS)),
        _ => match rng.random_range(0..4) {
            0 => format!("{path}=={value}"),
            1 => format!(" {path} = {value} "),
            2 => format!("{path}{value}"),
            _ => format!("={value}"),
        },
    }
}

/// A size: an odd or ordinary number, an odd or ordinary unit, odd spacing.
pub fn size(rng: &mut StdRng) -> String {
    let number = match rng.random_range(0..4) {
        0 => pick(
            rng,
            &[
                "0",
                "1",
                "0.8",
                "1.5",
                "512",
                "1048576",
                "-1",
                "-0",
                "+1",
                ".5",
                "5.",
                "1e3",
                "1e19",
                "1e308",
                "1e309",
                "18446744073709551615",
                "18446744073709551616",
                "9007199254740993",
                "99999999999999999999999",
                "0.0000001",
                "NaN",
                "inf",
                "-inf",
                "infinity",
                "1_000",
                "0x10",
                "١٢",
                "",
                " ",
                "1e-400",
                "4.9e-324",
            ],
        )
        .to_string(),
        1 => (0..rng.random_range(1..40))
            .map(|_| char::from(b'0' + rng.random_range(0..10u8)))
            .collect(),
        2 => rng.random::<f64>().to_string(),
        _ => format!(
            "{}",
            rng.random_range(0..u64::MAX) >> rng.random_range(0..64)
        ),
    };
    let unit = pick(
        rng,
        &[
            "", "", "b", "B", "k", "K", "kib", "KiB", "KIB", "m", "MiB", "g", "GiB", "gb", "GB",
            "mb", "kb", "tib", "TiB", "iB", "bytes", "%", " ", "µ", "ǅ", "MiBMiB", "e", "E5",
        ],
    );
    let space = |rng: &mut StdRng| pick(rng, &["", "", "", " ", "\t", "\u{A0}", "  "]);
    format!("{}{number}{}{unit}{}", space(rng), space(rng), space(rng))
}

/// A hash built from a valid one: a part edited as an assignment, percent-encoded oddly,
/// repeated or emptied, an odd preset or verdict table added.
pub fn hash(rng: &mut StdRng, seeds: &[Vec<u8>]) -> String {
    let seed = seeds
        .choose(rng)
        .map(|s| String::from_utf8_lossy(s).into_owned());
    let seed = seed.unwrap_or_default();
    let mut parts: Vec<String> = seed
        .trim_start_matches('#')
        .split('&')
        .map(str::to_string)
        .collect();
    let i = rng
        .random_range(0..parts.len().max(1))
        .min(parts.len().saturating_sub(1));
    match rng.random_range(0..8) {
        0 | 1 => parts[i] = assignment(rng, &parts[i]),
        2 => parts[i] = percent(rng, &parts[i]),
        3 => parts.push(format!(
            "preset={}",
            pick(
                rng,
                &[
                    "digits-cnn",
                    "DIGITS-CNN",
                    "nope",
                    "",
                    "gpt2-small",
                    "spiral-mlp "
                ]
            )
        )),
        4 => parts.push(format!("lessons={}", letters(rng, "hpdnm-", ""))),
        5 => {
            let part = parts[i].clone();
            parts.extend(std::iter::repeat_n(part, rng.random_range(1..200)));
        }
        6 => parts.insert(
            i,
            pick(rng, &["", "=", "preset", "lessons", "&", "#", "%"]).into(),
        ),
        _ => parts[i] = insert_odd(rng, &parts[i]),
    }
    let hashes = pick(rng, &["#", "", "##", "#&"]);
    format!("{hashes}{}", parts.join("&"))
}

/// `text` with some of its bytes percent-encoded: properly, in lower case, twice, or broken.
fn percent(rng: &mut StdRng, text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if rng.random_ratio(1, 3) {
            let mut buf = [0; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&match rng.random_range(0..6) {
                    0 => format!("%{byte:02x}"),
                    1 => format!("%25{byte:02X}"),
                    2 => pick(rng, &["%", "%G1", "%FF", "%C3", "%00", "%2", "%%"]).to_string(),
                    _ => format!("%{byte:02X}"),
                });
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Letters over `alphabet` (and now and then outside it), edited from `base` or made anew.
pub fn letters(rng: &mut StdRng, alphabet: &str, base: &str) -> String {
    let alphabet: Vec<char> = alphabet.chars().collect();
    let mut chars: Vec<char> = base.chars().collect();
    let any = |rng: &mut StdRng| alphabet.choose(rng).copied().unwrap_or('-');
    match rng.random_range(0..5) {
        0 if !chars.is_empty() => {
            let i = rng.random_range(0..chars.len());
            chars[i] = any(rng);
        }
        1 if !chars.is_empty() => {
            let i = rng.random_range(0..chars.len());
            chars[i] = ['H', 'x', ' ', '%', 'é', '😀', '\0', '-']
                .choose(rng)
                .copied()
                .unwrap_or('x');
        }
        2 => {
            let i = rng.random_range(0..=chars.len());
            chars.insert(i, any(rng));
        }
        3 if !chars.is_empty() => {
            let i = rng.random_range(0..chars.len());
            chars.remove(i);
        }
        _ => chars = (0..rng.random_range(0..60)).map(|_| any(rng)).collect(),
    }
    chars.into_iter().collect()
}

pub fn big_assignment(rng: &mut StdRng, size: usize) -> String {
    match rng.random_range(0..4) {
        0 => format!("model.hidden=[{}1]", "1,".repeat(size / 2)),
        1 => format!("{}=1", "a.".repeat(size / 2)),
        2 => format!("name={}", "x".repeat(size)),
        _ => format!("data={}", "[".repeat(size)),
    }
}

pub fn big_size(rng: &mut StdRng, size: usize) -> String {
    match rng.random_range(0..4) {
        0 => format!("1{}MiB", "0".repeat(size)),
        1 => format!("{}1", " ".repeat(size)),
        2 => format!("0.{}1", "0".repeat(size)),
        _ => format!("1{}", "B".repeat(size)),
    }
}

pub fn big_hash(rng: &mut StdRng, seeds: &[Vec<u8>], size: usize) -> String {
    let seed = seeds
        .choose(rng)
        .map(|s| String::from_utf8_lossy(s).into_owned());
    let seed = seed.unwrap_or_default();
    match rng.random_range(0..5) {
        0 => format!("{seed}{}", "&batch_size=1".repeat(size / 13)),
        1 => format!("#preset={}", "x".repeat(size)),
        2 => format!("#name={}", "%41".repeat(size / 3)),
        3 => format!("#lessons={}", "h".repeat(size)),
        _ => format!("{seed}{}", "&".repeat(size)),
    }
}

pub fn big_letters(rng: &mut StdRng, alphabet: &str, size: usize) -> String {
    let alphabet: Vec<char> = alphabet.chars().collect();
    (0..size)
        .map(|_| alphabet.choose(rng).copied().unwrap_or('-'))
        .collect()
}

pub fn big_lines(rng: &mut StdRng, size: usize) -> String {
    match rng.random_range(0..3) {
        0 => format!("x,y,label\n{}", "0.5,-0.25,1\n".repeat(size / 12)),
        1 => format!("x,y,label\n{}", "1,".repeat(size / 2)),
        _ => format!("\"{}", "a".repeat(size)),
    }
}
