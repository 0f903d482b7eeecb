//! The configuration in the URL hash, as a preset name and the fields that differ from it:
//! `#preset=spiral-mlp&batch_size=2048&strategies.mixed_precision=f16`. The same `path=value`
//! form as the CLI's `--set`, so a bad field is named the same way.

use serde_json::Value;

use crate::engine::RunConfig;
use crate::engine::claims::Verdict;
use crate::engine::config::Offload;
use crate::engine::link::verdicts::shared_verdicts;
use crate::engine::overrides::apply_override;
use crate::engine::presets::{DEFAULT_PRESET, preset};

/// A config read from the URL, and every part of the URL that was refused.
#[derive(Debug)]
pub struct FromUrl {
    pub preset: String,
    pub config: RunConfig,
    /// Each refused part, in the URL's order, saying why: an unknown preset, each refused field,
    /// a lessons table that is not one, parts past [`MAX_PARTS`]. Empty when all was read.
    pub refused: Vec<String>,
    /// A shared table of lesson verdicts (`lessons=`), not part of the configuration; `None`
    /// when the URL carries none or carries one that was refused.
    pub lessons: Option<Vec<Option<Verdict>>>,
    /// The GPU "Will it fit?" plans for (`gpu=`, a card's name or a size), not part of the
    /// configuration; the page reads it, and says so on the panel when it is neither.
    pub gpu: Option<String>,
    /// How many such GPUs "Will it fit?" plans one's share of (`gpus=`, the config's `gpus`
    /// for a plan: a run trains on one), as the page's panel holds it.
    pub gpus: Option<String>,
    /// What "Will it fit?" keeps on the host (`strategies.offload=`, the config's field for a
    /// plan: a run refuses it), as the page's panel holds it; a name that is none is refused.
    pub offload: Option<Offload>,
}

impl FromUrl {
    /// One line naming every refused part, for the page to show; `None` when all was read.
    pub fn note(&self) -> Option<String> {
        (!self.refused.is_empty()).then(|| format!("URL: {}", self.refused.join("; ")))
    }
}

/// Parts of a hash read at most: a config has under 50 fields, and each part costs a pass over
/// the whole config (found by `vramlab fuzz`: a 1 MiB hash of `&batch_size=1` took seconds).
pub const MAX_PARTS: usize = 256;

/// Read `hash` (with or without its `#`). An unknown preset falls back to the default preset and
/// a refused field to the preset's value; `refused` names each of them and why, together.
pub fn parse(hash: &str) -> FromUrl {
    let hash = hash.trim_start_matches('#');
    let mut name = DEFAULT_PRESET.to_string();
    let mut sets = Vec::new();
    let mut letters = None;
    let mut gpu = None;
    let mut gpus = None;
    let mut offload = None;
    let mut refused = Vec::new();
    let mut parts = hash.split('&').filter(|p| !p.is_empty());
    for part in parts.by_ref().take(MAX_PARTS) {
        // As the browser's decodeURIComponent would, keeping the text as it is where that
        // would throw (a lone `%`, or escapes that are not UTF-8).
        let part = decode(part).unwrap_or_else(|| part.to_string());
        match part.split_once('=') {
            Some(("preset", value)) => name = value.to_string(),
            Some(("lessons", value)) => letters = Some(value.to_string()),
            Some(("gpu", value)) => gpu = Some(value.to_string()),
            Some(("gpus", value)) => gpus = Some(value.to_string()),
            Some(("strategies.offload", value)) => match Offload::from_name(value) {
                Some(named) => offload = Some(named),
                None => refused.push(format!(
                    "strategies.offload: {value:?} is not one of {}; that field keeps its default",
                    Offload::ALL.map(Offload::name).join(", ")
                )),
            },
            _ => sets.push(part),
        }
    }
    let (name, mut config) = match preset(&name) {
        Ok(config) => (name, config),
        Err(err) => {
            refused.push(format!("{err}; using {DEFAULT_PRESET}"));
            let default = preset(DEFAULT_PRESET).expect("the default preset exists");
            (DEFAULT_PRESET.to_string(), default)
        }
    };
    let (read, why) = with_fields(config, &sets);
    config = read;
    refused.extend(why);
    let lessons = letters.and_then(|letters| {
        shared_verdicts(&letters)
            .map_err(|why| refused.push(why))
            .ok()
    });
    let unread = parts.count();
    if unread > 0 {
        refused.push(format!(
            "{} parts; only the first {MAX_PARTS} were read",
            MAX_PARTS + unread
        ));
    }
    FromUrl {
        preset: name,
        config,
        refused,
        lessons,
        gpu,
        gpus,
        offload,
    }
}

/// Passes over the fields still refused, at most (each pass validates the config once a field).
const FIELD_PASSES: usize = 8;

/// `config` with each `path=value` of `sets`, and why each refused one was.
///
/// Fields that only hold together (a dropped config.json's `model.kind` and its
/// `model.experts`) are taken whole when the result is valid. Otherwise each is taken where the
/// config stays valid, in the URL's order, and those refused are tried again while a pass takes
/// one (a field valid only once a later one is read); what is left keeps the preset's value and
/// is named.
fn with_fields(config: RunConfig, sets: &[String]) -> (RunConfig, Vec<String>) {
    let whole = sets
        .iter()
        .try_fold(config.clone(), |c, set| apply_override(&c, set))
        .and_then(|c| c.validate().map(|()| c));
    if let Ok(whole) = whole {
        return (whole, Vec::new());
    }
    let mut config = config;
    let mut pending: Vec<&String> = sets.iter().collect();
    let mut why = Vec::new();
    for _ in 0..FIELD_PASSES {
        let before = pending.len();
        why.clear();
        pending.retain(|set| {
            match apply_override(&config, set).and_then(|c| c.validate().map(|()| c)) {
                Ok(next) => {
                    config = next;
                    false
                }
                Err(err) => {
                    why.push(format!("{err}; that field keeps its default"));
                    true
                }
            }
        });
        if pending.is_empty() || pending.len() == before {
            break;
        }
    }
    (config, why)
}

/// Leaf fields of `value` as `path` and JSON value pairs, paths dotted as `--set` names them.
pub fn leaves(value: &Value) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    leaves_under("", value, &mut out);
    out
}

fn leaves_under(prefix: &str, value: &Value, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                leaves_under(&path, inner, out);
            }
        }
        _ => out.push((prefix.to_string(), value.clone())),
    }
}

/// Every field of `config` that differs from the preset `preset_name`, as `path` and value text.
fn differences(preset_name: &str, config: &RunConfig) -> Vec<(String, String)> {
    let base = preset(preset_name).unwrap_or_else(|_| RunConfig::default());
    let now = leaves(&serde_json::to_value(config).unwrap_or_default());
    let was = leaves(&serde_json::to_value(&base).unwrap_or_default());
    now.into_iter()
        .filter(|(path, value)| !was.iter().any(|(p, v)| p == path && v == value))
        .map(|(path, value)| (path, value_text(&value)))
        .collect()
}

/// A leaf's value as `--set` and the hash take it: strings unquoted, the rest as JSON.
pub fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The hash for `config`: its preset and every field that differs from the preset.
pub fn render(preset_name: &str, config: &RunConfig) -> String {
    let mut parts = vec![format!("preset={preset_name}")];
    for (path, text) in differences(preset_name, config) {
        parts.push(format!("{path}={}", encode(&text)));
    }
    format!("#{}", parts.join("&"))
}

/// The `vramlab` command line that runs `command` on `config`: its preset and a `--set` per
/// field that differs, quoted for a POSIX shell where a value needs it.
pub fn command_line(command: &str, preset_name: &str, config: &RunConfig) -> String {
    let mut line = format!("vramlab {command} --preset {preset_name}");
    for (path, text) in differences(preset_name, config) {
        let set = format!("{path}={text}");
        let plain = set
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-=%+,/".contains(c));
        if plain {
            line.push_str(&format!(" --set {set}"));
        } else {
            line.push_str(&format!(" --set '{}'", set.replace('\'', r"'\''")));
        }
    }
    line
}

/// What `encodeURIComponent` leaves as it is.
fn unreserved(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&byte)
}

/// `encodeURIComponent`: every byte of the UTF-8 text outside the unreserved set as `%XX`.
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &byte in text.as_bytes() {
        if unreserved(byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `decodeURIComponent`: `%XX` escapes to bytes, or `None` where the browser's would throw (an
/// escape without two hex digits, or bytes that are not UTF-8).
pub fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::strategies::catalog;

    #[test]
    fn decodes_as_the_browser_does() {
        assert_eq!(decode("a%3Db%26c").as_deref(), Some("a=b&c"));
        assert_eq!(decode("%E2%9C%93").as_deref(), Some("\u{2713}"));
        assert_eq!(decode("a+b").as_deref(), Some("a+b"));
        for bad in ["%", "%4", "%G1", "%FF", "%C3", "100%"] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn encoding_round_trips_through_decoding() {
        for text in ["[64,64]", "a=b&c d", "\u{2713}%", "-_.!~*'()"] {
            assert_eq!(decode(&encode(text)).as_deref(), Some(text), "{text}");
        }
        assert_eq!(encode("[1, 2]"), "%5B1%2C%202%5D");
    }

    #[test]
    fn a_rendered_hash_reads_back_as_the_same_config() {
        let mut config = preset("digits-cnn").unwrap();
        config.batch_size = 100;
        config.model.channels = vec![8, 8];
        config.name = "a & b = c".into();
        let from = parse(&render("digits-cnn", &config));
        assert_eq!(from.preset, "digits-cnn");
        assert_eq!(from.note(), None);
        assert_eq!(from.config, config);
    }

    #[test]
    fn the_offload_a_plan_asks_for_is_the_panels_and_a_bad_one_is_refused() {
        let from = parse("#preset=sort-llama&strategies.offload=parameters&gpus=8");
        assert_eq!(from.note(), None);
        assert_eq!(
            (from.offload, from.gpus.as_deref()),
            (Some(Offload::Parameters), Some("8"))
        );
        // A run refuses offload: the config the editor gets keeps its own.
        assert_eq!(from.config.strategies.offload, Offload::None);
        let bad = parse("#preset=sort-llama&strategies.offload=disk");
        assert_eq!(bad.offload, None);
        let note = bad.note().expect("refused");
        assert!(
            note.contains("strategies.offload") && note.contains("parameters"),
            "{note}"
        );
    }

    #[test]
    fn reads_no_more_than_its_share_of_parts_and_says_so() {
        let hash = format!("#preset=digits-cnn{}", "&batch_size=7".repeat(100_000));
        let from = parse(&hash);
        assert_eq!(from.preset, "digits-cnn");
        assert_eq!(from.config.batch_size, 7);
        let note = from.note().unwrap();
        assert!(note.contains("100001 parts; only the first 256"), "{note}");
    }

    #[test]
    fn an_unknown_preset_and_every_refused_field_are_named_together() {
        let from = parse("#preset=nope&batch_size=0&steps=7&optimizer=sgdx&lessons=hh");
        assert_eq!(from.preset, DEFAULT_PRESET);
        let mut expected = preset(DEFAULT_PRESET).unwrap();
        expected.steps = 7;
        assert_eq!(from.config, expected, "the accepted field is kept");
        assert_eq!(from.lessons, None);
        assert_eq!(from.refused.len(), 4, "{:?}", from.refused);
        let [preset_why, batch_why, optimizer_why, lessons_why] = &from.refused[..] else {
            unreachable!()
        };
        assert!(
            preset_why.contains("unknown preset \"nope\""),
            "{preset_why}"
        );
        assert!(
            preset_why.ends_with(&format!("using {DEFAULT_PRESET}")),
            "{preset_why}"
        );
        assert!(batch_why.contains("batch_size"), "{batch_why}");
        assert!(
            optimizer_why.contains("optimizer") && optimizer_why.contains("sgdx"),
            "{optimizer_why}"
        );
        assert!(lessons_why.contains("lessons must be"), "{lessons_why}");
        let note = from.note().unwrap();
        for why in &from.refused {
            assert!(note.contains(why.as_str()), "{note} names {why}");
        }
    }

    #[test]
    fn a_good_lessons_table_is_read_beside_a_refused_field() {
        let letters = "h".repeat(catalog::claims().count());
        let from = parse(&format!("#batch_size=0&lessons={letters}"));
        assert_eq!(from.lessons.map(|v| v.len()), Some(letters.len()));
        assert_eq!(from.refused.len(), 1, "{:?}", from.refused);
        assert!(from.refused[0].contains("batch_size"), "{:?}", from.refused);
    }

    #[test]
    fn a_dropped_config_json_travels_in_the_link() {
        // The page puts a dropped config.json's fields in the editor over the preset it holds
        // (a token task's) or over the family's base preset; the link carries them as fields.
        // Found when the test runs (cargo test sets the variable; `.ci/native-tests` runs from
        // the repository's root), not compiled in: a path compiled in rebuilt the library's unit
        // tests in every new clone, as tests/suite/support.rs's `repo_root` says.
        let root = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(
            || std::env::current_dir().unwrap(),
            std::path::PathBuf::from,
        );
        let dir = root.join("tests/data/hf");
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let hf = crate::engine::hf_config::read(&text).unwrap();
            for base_name in ["llama2-7b", hf.family.base_preset()] {
                let (config, _) = hf.apply(
                    preset(base_name).unwrap(),
                    "dropped",
                    crate::engine::hf_config::Stated::default(),
                );
                let link = render(base_name, &config);
                let from = parse(&link);
                assert!(
                    from.refused.is_empty(),
                    "{path:?} over {base_name}: {:?}\n{link}",
                    from.refused
                );
                assert_eq!(from.config, config, "{path:?} over {base_name}: {link}");
            }
        }
    }

    #[test]
    fn a_url_read_whole_refuses_nothing() {
        let from = parse("#preset=digits-cnn&batch_size=64&gpu=RTX%204080%20(16%20GiB)");
        assert!(from.refused.is_empty(), "{:?}", from.refused);
        assert_eq!(from.gpu.as_deref(), Some("RTX 4080 (16 GiB)"));
        assert_eq!(from.note(), None);
    }
}
