//! Mutations of a JSON document that keep it JSON (mostly): a value of another type, an odd or
//! huge number, a long or odd string, deep nesting, unknown, missing, renamed and duplicated
//! fields, long arrays. Texts that are not JSON any more get token-level edits instead.

use rand::RngExt;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use serde_json::{Map, Value, json};

/// Numbers serde_json writes as numbers; the odd ones it cannot hold are in [`RAW_NUMBERS`].
const NUMBERS: &[f64] = &[
    0.0,
    -1.0,
    1.0,
    0.5,
    2.0,
    1e-7,
    10.0,
    16.0,
    65_536.0,
    65_537.0,
    1e6,
    1e9,
    4_294_967_296.0,
    9_007_199_254_740_993.0,
    1.8e19,
    1e308,
    -1e308,
    5e-324,
    -0.5,
];

/// Number-like text that a JSON value cannot hold or that JSON refuses.
pub(super) const RAW_NUMBERS: &[&str] = &[
    "1e999",
    "-1e999",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "123456789012345678901234567890",
    "1.0e-400",
    "-0",
    "0.0",
    "1E2",
    "1e+2",
    "00",
    "01",
    "+1",
    ".5",
    "5.",
    "0x10",
    "NaN",
    "Infinity",
    "-",
    "1e",
    "2.5e-3",
    "1_000",
];

/// Keys that are not fields, or are fields spelled wrong.
const ODD_KEYS: &[&str] = &[
    "",
    "zzz",
    "Name",
    "batch_size ",
    " batch_size",
    "BATCH_SIZE",
    "__proto__",
    "model.hidden",
    "\u{0}",
    "é",
    "\u{FEFF}name",
    "steps\n",
    "😀",
    "constructor",
];

/// One mutation of `text`: structural where it is JSON, by tokens where it is not.
pub fn mutate(rng: &mut StdRng, text: &str) -> String {
    let Ok(mut doc) = serde_json::from_str::<Value>(text) else {
        return mutate_tokens(rng, text);
    };
    let mut raw = Vec::new();
    let paths = paths(&doc);
    let path = paths.choose(rng).cloned().unwrap_or_default();
    let donor = paths
        .choose(rng)
        .and_then(|p| at(&mut doc, p).map(|v| v.clone()))
        .unwrap_or(Value::Null);
    if let Some(node) = at(&mut doc, &path) {
        mutate_node(rng, node, donor, &mut raw);
    }
    let mut out = if rng.random_ratio(1, 4) {
        serde_json::to_string_pretty(&doc)
    } else {
        serde_json::to_string(&doc)
    }
    .unwrap_or_default();
    for (i, text) in raw.iter().enumerate() {
        out = out.replace(&format!("\"\\u0001{i}\\u0001\""), text);
    }
    out
}

/// A placeholder string that the serialized text swaps for `text`, kept as it is.
fn raw(raw: &mut Vec<String>, text: String) -> Value {
    raw.push(text);
    Value::String(format!("\u{1}{}\u{1}", raw.len() - 1))
}

fn mutate_node(rng: &mut StdRng, node: &mut Value, donor: Value, raws: &mut Vec<String>) {
    match rng.random_range(0..10) {
        0 => {
            *node = [
                Value::Null,
                json!(true),
                json!(false),
                json!(0),
                json!(-1),
                json!(1.5),
                json!(""),
                json!("x"),
                json!([]),
                json!({}),
            ]
            .choose(rng)
            .cloned()
            .unwrap_or_default()
        }
        1 => *node = json!(NUMBERS.choose(rng).copied().unwrap_or(0.0)),
        2 => {
            let text = RAW_NUMBERS.choose(rng).copied().unwrap_or("0");
            *node = raw(raws, text.to_string());
        }
        3 => *node = Value::String(odd_string(rng)),
        4 => {
            let depth = rng.random_range(1..3000);
            let text = if rng.random_bool(0.5) {
                format!("{}{}", "[".repeat(depth), "]".repeat(depth))
            } else {
                format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth))
            };
            *node = raw(raws, text);
        }
        5 => *node = donor,
        6 => {
            *node = if rng.random_bool(0.5) {
                json!([node.take()])
            } else {
                json!({"a": node.take()})
            }
        }
        _ => match node {
            Value::Object(map) if !map.is_empty() && rng.random_ratio(1, 4) => {
                // A field twice: serde_json's map cannot hold it, so write the object out.
                let key = map.keys().nth(rng.random_range(0..map.len())).cloned();
                let key = serde_json::to_string(&key.unwrap_or_default()).unwrap_or_default();
                let text = serde_json::to_string(map).unwrap_or_default();
                *node = raw(raws, format!("{{{key}:null,{}", &text[1..]));
            }
            Value::Object(map) => mutate_object(rng, map),
            Value::Array(items) => mutate_array(rng, items),
            _ => *node = Value::String(odd_string(rng)),
        },
    }
}

fn mutate_object(rng: &mut StdRng, map: &mut Map<String, Value>) {
    let keys: Vec<String> = map.keys().cloned().collect();
    match rng.random_range(0..3) {
        0 => {
            let key = ODD_KEYS.choose(rng).copied().unwrap_or("").to_string();
            map.insert(key, json!(1));
        }
        1 => {
            if let Some(key) = keys.choose(rng) {
                map.remove(key);
            }
        }
        _ => {
            if let Some(key) = keys.choose(rng) {
                let value = map.remove(key).unwrap_or_default();
                let renamed = match rng.random_range(0..3) {
                    0 => key.to_uppercase(),
                    1 => format!("{key} "),
                    _ => key.replace('_', "-"),
                };
                map.insert(renamed, value);
            }
        }
    }
}

fn mutate_array(rng: &mut StdRng, items: &mut Vec<Value>) {
    match rng.random_range(0..4) {
        0 => items.clear(),
        1 if !items.is_empty() => {
            let i = rng.random_range(0..items.len());
            items.remove(i);
        }
        2 => {
            let item = items.first().cloned().unwrap_or(json!(1));
            let n = [2, 17, 100, 10_000].choose(rng).copied().unwrap_or(2);
            items.extend(std::iter::repeat_n(item, n));
        }
        _ => items.push(json!(NUMBERS.choose(rng).copied().unwrap_or(0.0))),
    }
}

fn odd_string(rng: &mut StdRng) -> String {
    match rng.random_range(0..5) {
        0 => String::new(),
        1 => "a".repeat(rng.random_range(1..5000)),
        2 => (0..rng.random_range(1..40))
            .map(|_| char::from_u32(rng.random_range(0..0x11_0000)).unwrap_or('\u{FFFD}'))
            .collect(),
        3 => [
            "adam", "ADAM", "f16", "none", "spiral", " relu", "mlp\0", "0", "true", "null",
        ]
        .choose(rng)
        .copied()
        .unwrap_or("")
        .to_string(),
        _ => "\u{1F600}\u{0}\u{FEFF}\\\"".to_string(),
    }
}

/// Every node's path, the root's (empty) included.
fn paths(doc: &Value) -> Vec<Vec<Step>> {
    let mut out = Vec::new();
    let mut stack = vec![(Vec::new(), doc)];
    while let Some((path, node)) = stack.pop() {
        match node {
            Value::Object(map) => {
                for (key, inner) in map {
                    let mut next = path.clone();
                    next.push(Step::Key(key.clone()));
                    stack.push((next, inner));
                }
            }
            Value::Array(items) => {
                // Arrays of many like items (a timeline's steps): a few are enough.
                for (i, inner) in items.iter().enumerate().take(4) {
                    let mut next = path.clone();
                    next.push(Step::Index(i));
                    stack.push((next, inner));
                }
            }
            _ => {}
        }
        out.push(path);
    }
    out
}

#[derive(Clone)]
enum Step {
    Key(String),
    Index(usize),
}

fn at<'a>(doc: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    let mut node = doc;
    for step in path {
        node = match step {
            Step::Key(key) => node.get_mut(key.as_str())?,
            Step::Index(i) => node.get_mut(*i)?,
        };
    }
    Some(node)
}

/// Edits for text that is no longer JSON: a number token swapped for an odd one, a token
/// inserted or removed.
fn mutate_tokens(rng: &mut StdRng, text: &str) -> String {
    let mut out = text.to_string();
    let boundaries: Vec<usize> = (0..=out.len())
        .filter(|&i| out.is_char_boundary(i))
        .collect();
    let at = boundaries.choose(rng).copied().unwrap_or(0);
    match rng.random_range(0..3) {
        0 => {
            let token = RAW_NUMBERS.choose(rng).copied().unwrap_or("0");
            out.insert_str(at, token);
        }
        1 => {
            let token = ["{", "}", "[", "]", ",", ":", "\"", "null"]
                .choose(rng)
                .copied()
                .unwrap_or(",");
            out.insert_str(at, token);
        }
        _ => {
            let end = boundaries
                .iter()
                .copied()
                .find(|&e| e > at && e >= at + rng.random_range(1..8))
                .unwrap_or(out.len());
            out.replace_range(at..end, "");
        }
    }
    out
}

/// A JSON document of about `size` bytes: a long string, a long array, many small objects,
/// many fields, or nesting far past any limit.
pub fn big(rng: &mut StdRng, size: usize) -> String {
    match rng.random_range(0..6) {
        0 => format!("{{\"name\":\"{}\"}}", "x".repeat(size)),
        1 => format!("{{\"model\":{{\"hidden\":[{}1]}}}}", "1,".repeat(size / 2)),
        2 => format!("[{}{{}}]", "{\"\":0},".repeat(size / 7)),
        3 => {
            let fields: Vec<String> = (0..size / 8).map(|i| format!("\"f{i}\":0")).collect();
            format!("{{{}}}", fields.join(","))
        }
        4 => format!("{}{}", "[".repeat(size / 2), "]".repeat(size / 2)),
        _ => format!("{{\"steps\":[{}{{}}]}}", "{\"step\":1},".repeat(size / 11)),
    }
}
