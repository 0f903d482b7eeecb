//! Typed reads of a `config.json`'s fields. Each error names the JSON field as the file spells
//! it and says what vramlab accepts there.

use serde_json::{Map, Value};

use crate::engine::error::ConfigError;

/// The top-level object of a `config.json`.
pub(crate) struct Fields<'a> {
    map: &'a Map<String, Value>,
}

type Read<T> = Result<T, ConfigError>;

impl<'a> Fields<'a> {
    pub fn new(map: &'a Map<String, Value>) -> Self {
        Self { map }
    }

    pub fn names(&self) -> impl Iterator<Item = &'a str> {
        self.map.keys().map(String::as_str)
    }

    /// The field's value; `null` counts as absent, as transformers writes an unset option so.
    pub fn get(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|value| !value.is_null())
    }

    /// A size the file must state: vramlab does not take a class default for a model's shape.
    pub fn count(&self, name: &str, range: (usize, usize)) -> Read<usize> {
        match self.get(name) {
            Some(value) => whole(name, value, range),
            None => Err(ConfigError::invalid(
                name,
                "missing; it sizes the model, so vramlab needs it stated (nothing is guessed)",
            )),
        }
    }

    /// A size transformers derives when the file leaves it out (`default`, documented by the
    /// caller).
    pub fn count_or(&self, name: &str, default: usize, range: (usize, usize)) -> Read<usize> {
        self.get(name)
            .map_or(Ok(default), |value| whole(name, value, range))
    }

    pub fn number_or(&self, name: &str, default: f64, (lo, hi): (f64, f64)) -> Read<f64> {
        let Some(value) = self.get(name) else {
            return Ok(default);
        };
        let number = value
            .as_f64()
            .ok_or_else(|| ConfigError::invalid(name, format!("{value} is not a number")))?;
        if (lo..=hi).contains(&number) {
            Ok(number)
        } else {
            Err(ConfigError::out_of_range(
                name,
                value,
                format!("{lo}..={hi}"),
            ))
        }
    }

    pub fn flag_or(&self, name: &str, default: bool) -> Read<bool> {
        let Some(value) = self.get(name) else {
            return Ok(default);
        };
        value
            .as_bool()
            .ok_or_else(|| ConfigError::invalid(name, format!("{value} is not true or false")))
    }

    pub fn text(&self, name: &str) -> Read<Option<&'a str>> {
        self.get(name)
            .map(|value| {
                value
                    .as_str()
                    .ok_or_else(|| ConfigError::invalid(name, format!("{value} is not a string")))
            })
            .transpose()
    }

    /// A flag whose other value changes memory in a way vramlab does not model: accepted only
    /// at `built` (or absent, when that is also transformers' default); `why` says what vramlab
    /// builds instead.
    pub fn flag_must_be(&self, name: &str, built: bool, why: &str) -> Read<()> {
        if self.flag_or(name, built)? == built {
            Ok(())
        } else {
            Err(ConfigError::invalid(
                name,
                format!("{} is not modelled; vramlab accepts {built}: {why}", !built),
            ))
        }
    }

    /// A string field accepted only at one of `allowed` (absent: `default`).
    pub fn one_of(
        &self,
        name: &str,
        default: &'a str,
        allowed: &[&str],
        why: &str,
    ) -> Read<&'a str> {
        let value = self.text(name)?.unwrap_or(default);
        if allowed.contains(&value) {
            Ok(value)
        } else {
            Err(ConfigError::invalid(
                name,
                format!(
                    "{value:?} is not modelled; vramlab accepts {}: {why}",
                    quoted(allowed)
                ),
            ))
        }
    }
}

/// `["a", "b"]` as `"a", "b"`.
pub(super) fn quoted(values: &[&str]) -> String {
    values
        .iter()
        .map(|v| format!("{v:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn whole(name: &str, value: &Value, (lo, hi): (usize, usize)) -> Read<usize> {
    let number = value
        .as_u64()
        .ok_or_else(|| ConfigError::invalid(name, format!("{value} is not a whole number")))?;
    match usize::try_from(number) {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(ConfigError::out_of_range(
            name,
            number,
            format!("{lo}..={hi}"),
        )),
    }
}
