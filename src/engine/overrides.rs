//! `--set path.to.field=value` overrides, applied through the config's JSON form so that every
//! field is reachable by the name it has in a config file, and nothing else is.

use serde_json::Value;

use super::config::RunConfig;
use super::error::ConfigError;

/// Apply one `path=value` assignment. The value is read as JSON where it parses as JSON
/// (`8`, `0.5`, `[64,64]`, `true`) and as a plain string otherwise (`adam`, `spiral`).
pub fn apply_override(config: &RunConfig, assignment: &str) -> Result<RunConfig, ConfigError> {
    let fail = |message: String| ConfigError::Override {
        assignment: assignment.to_string(),
        message,
    };
    let (path, raw) = assignment
        .split_once('=')
        .ok_or_else(|| fail("expected path.to.field=value".into()))?;
    let path = path.trim();
    if path.is_empty() {
        return Err(fail("the field path is empty".into()));
    }
    let value: Value =
        serde_json::from_str(raw.trim()).unwrap_or_else(|_| Value::String(raw.trim().into()));

    let mut doc = serde_json::to_value(config).expect("a RunConfig always serializes");
    let mut slot = &mut doc;
    let mut walked = Vec::new();
    let keys: Vec<&str> = path.split('.').collect();
    let mut unwritten = None;
    for (depth, &key) in keys.iter().enumerate() {
        let Value::Object(map) = slot else {
            return Err(fail(format!("{} has no fields", walked.join("."))));
        };
        // A field left out of the JSON form at its default (`model.window` at 0) is still a
        // field: the last key may name one, which parsing the result decides.
        if !map.contains_key(key) && depth + 1 == keys.len() {
            let mut known: Vec<String> = map.keys().cloned().collect();
            known.sort_unstable();
            unwritten = Some((key, walked.join("."), known));
            map.insert(key.to_string(), Value::Null);
        }
        if !map.contains_key(key) {
            let mut known: Vec<&str> = map.keys().map(String::as_str).collect();
            known.sort_unstable();
            let parent = if walked.is_empty() {
                "the config".to_string()
            } else {
                walked.join(".")
            };
            return Err(fail(format!(
                "no field {key:?} in {parent}; its fields are: {}",
                known.join(", ")
            )));
        }
        walked.push(key);
        slot = map.get_mut(key).expect("checked above");
    }
    *slot = value;
    let text = doc.to_string();
    let mut next = RunConfig::from_json(&text).map_err(|err| match &unwritten {
        Some((key, parent, known)) if err.to_string().contains("unknown field") => {
            let parent = if parent.is_empty() {
                "the config"
            } else {
                parent.as_str()
            };
            // serde's list names the fields the JSON form leaves out at their defaults too.
            let message = err.to_string();
            let fields = match message.split_once("expected one of ") {
                Some((_, listed)) => listed.replace('`', ""),
                None => known.join(", "),
            };
            fail(format!(
                "no field {key:?} in {parent}; its fields are: {fields}"
            ))
        }
        _ => fail(err.to_string()),
    })?;
    // The table is not part of the JSON form; it stays with the config (validation refuses it
    // if `data.label` no longer matches it).
    next.data.table = config.data.table.clone();
    Ok(next)
}

/// Apply several assignments in order.
pub fn apply_overrides<'a>(
    mut config: RunConfig,
    assignments: impl IntoIterator<Item = &'a str>,
) -> Result<RunConfig, ConfigError> {
    for assignment in assignments {
        config = apply_override(&config, assignment)?;
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_nested_fields_by_their_json_names() {
        let config = RunConfig::default();
        let config = apply_overrides(
            config,
            ["model.hidden=[32,16]", "optimizer=sgd", "data.noise=0.3"],
        )
        .unwrap();
        assert_eq!(config.model.hidden, vec![32, 16]);
        assert_eq!(config.optimizer, super::super::config::OptimizerKind::Sgd);
        assert_eq!(config.data.noise, 0.3);
    }

    #[test]
    fn unknown_field_lists_the_known_ones() {
        let err = apply_override(&RunConfig::default(), "model.depth=3").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("no field \"depth\" in model"), "{text}");
        assert!(text.contains("hidden"), "{text}");
    }

    #[test]
    fn wrong_type_names_the_field() {
        let err = apply_override(&RunConfig::default(), "batch_size=big").unwrap_err();
        assert!(err.to_string().contains("batch_size"), "{err}");
    }
}
