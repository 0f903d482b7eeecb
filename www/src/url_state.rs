//! The configuration in the URL hash, as a preset name and the fields that differ from it:
//! `#preset=spiral-mlp&batch_size=2048&strategies.mixed_precision=f16`. The same `path=value`
//! form as the CLI's `--set`, so a bad field is named the same way.

use serde_json::Value;
use vramlab::engine::RunConfig;
use vramlab::engine::overrides::apply_override;
use vramlab::engine::presets::{DEFAULT_PRESET, preset};

/// A config read from the URL, and a note when part of the URL was refused.
pub struct FromUrl {
    pub preset: String,
    pub config: RunConfig,
    pub note: Option<String>,
    /// A shared table of lesson verdicts (`lessons=`), not part of the configuration.
    pub lessons: Option<String>,
}

fn decode(text: &str) -> String {
    js_sys::decode_uri_component(text)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_else(|| text.to_string())
}

fn encode(text: &str) -> String {
    js_sys::encode_uri_component(text).into()
}

/// Read `hash` (with or without its `#`). Unknown presets and refused fields fall back to the
/// preset's defaults, and the note says which field and why.
pub fn parse(hash: &str) -> FromUrl {
    let hash = hash.trim_start_matches('#');
    let mut name = DEFAULT_PRESET.to_string();
    let mut sets = Vec::new();
    let mut lessons = None;
    for part in hash.split('&').filter(|p| !p.is_empty()) {
        let part = decode(part);
        match part.split_once('=') {
            Some(("preset", value)) => name = value.to_string(),
            Some(("lessons", value)) => lessons = Some(value.to_string()),
            _ => sets.push(part),
        }
    }
    let (name, base, mut note) = match preset(&name) {
        Ok(config) => (name, config, None),
        Err(err) => (
            DEFAULT_PRESET.to_string(),
            preset(DEFAULT_PRESET).expect("the default preset exists"),
            Some(format!("URL: {err}; using {DEFAULT_PRESET}")),
        ),
    };
    let mut config = base.clone();
    for set in &sets {
        match apply_override(&config, set).and_then(|c| c.validate().map(|()| c)) {
            Ok(next) => config = next,
            Err(err) => {
                note = Some(format!("URL: {err}; that field keeps its default"));
            }
        }
    }
    FromUrl {
        preset: name,
        config,
        note,
        lessons,
    }
}

/// Leaf fields of `value` as `path=json` pairs.
fn leaves(prefix: &str, value: &Value, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                leaves(&path, inner, out);
            }
        }
        _ => out.push((prefix.to_string(), value.clone())),
    }
}

/// Every field of `config` that differs from the preset `preset_name`, as `path` and value text.
fn differences(preset_name: &str, config: &RunConfig) -> Vec<(String, String)> {
    let base = preset(preset_name).unwrap_or_else(|_| RunConfig::default());
    let (mut now, mut was) = (Vec::new(), Vec::new());
    leaves(
        "",
        &serde_json::to_value(config).unwrap_or_default(),
        &mut now,
    );
    leaves(
        "",
        &serde_json::to_value(&base).unwrap_or_default(),
        &mut was,
    );
    now.into_iter()
        .filter(|(path, value)| !was.iter().any(|(p, v)| p == path && v == value))
        .map(|(path, value)| {
            let text = match value {
                Value::String(s) => s,
                other => other.to_string(),
            };
            (path, text)
        })
        .collect()
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

pub fn current_hash() -> String {
    web_sys::window()
        .and_then(|w| w.location().hash().ok())
        .unwrap_or_default()
}

/// Replace the hash without adding a history entry per keystroke.
pub fn store(hash: &str) {
    if let Some(window) = web_sys::window()
        && let Ok(history) = window.history()
    {
        let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(hash));
    }
}
