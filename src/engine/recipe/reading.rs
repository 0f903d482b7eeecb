//! How a recipe was read, field by field: what each became in vramlab's config, what does not
//! change memory, what changes it and is not modelled (refused), what the recipe leaves to a
//! default, and what vramlab does not know. Printed as one block before the plan.

use std::collections::HashSet;

use serde::Serialize;

use super::document::{Document, Field, Value};
use super::intent::Intent;

/// What became of one field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Read into the config (the line's text says as what).
    Mapped,
    /// Does not change what a GPU holds (data sets, logging, learning rates).
    Ignored,
    /// Changes memory in a way vramlab does not model: the plan would not be the recipe's.
    Refused,
    /// Not in the recipe: the value its project uses, planned.
    Default,
    /// A field vramlab does not know for this format: not read.
    Unread,
}

/// One line of the reading.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Line {
    pub field: String,
    /// The file it is in (a DeepSpeed or accelerate file beside the recipe), when not the
    /// recipe itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based; none for a default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    pub value: String,
    pub kind: Kind,
    /// What it became, or why not.
    pub text: String,
}

/// Fields a format's mapper walks: each taken once, each given a line.
pub struct Mapper<'a> {
    doc: &'a Document,
    file: Option<String>,
    taken: HashSet<String>,
    pub intent: Intent,
    pub lines: Vec<Line>,
}

impl<'a> Mapper<'a> {
    pub fn new(doc: &'a Document) -> Self {
        Self {
            doc,
            file: None,
            taken: HashSet::new(),
            intent: Intent::default(),
            lines: Vec::new(),
        }
    }

    /// Go on with another file's fields (a DeepSpeed JSON the recipe names), into the same
    /// intent and lines.
    pub fn beside(self, doc: &'a Document, file: &str) -> Self {
        let Self { intent, lines, .. } = self;
        Self {
            doc,
            file: Some(file.to_string()),
            taken: HashSet::new(),
            intent,
            lines,
        }
    }

    /// The field at `path`, if the recipe has it and no rule has taken it yet; a null is as
    /// good as absent (YAML's `key:` with nothing after it), and is listed as ignored.
    pub fn take(&mut self, path: &str) -> Option<Field> {
        if self.taken.contains(path) {
            return None;
        }
        let field = self.doc.get(path)?.clone();
        self.taken.insert(path.to_string());
        if field.value == Value::Null {
            self.push(&field, Kind::Ignored, "left empty: its default".into());
            return None;
        }
        Some(field)
    }

    /// Whether the recipe has a field at `path` (taken or not).
    pub fn has(&self, path: &str) -> bool {
        self.doc.get(path).is_some_and(|f| f.value != Value::Null)
    }

    fn push(&mut self, field: &Field, kind: Kind, text: String) {
        self.lines.push(Line {
            field: field.path.clone(),
            file: self.file.clone(),
            line: Some(field.line),
            value: field.value.shown(),
            kind,
            text,
        });
    }

    pub fn mapped(&mut self, field: &Field, text: impl Into<String>) {
        self.push(field, Kind::Mapped, text.into());
    }

    pub fn ignored(&mut self, field: &Field, why: impl Into<String>) {
        self.push(field, Kind::Ignored, why.into());
    }

    pub fn refused(&mut self, field: &Field, why: impl Into<String>) {
        self.push(field, Kind::Refused, why.into());
    }

    /// A value the recipe leaves out, as its project fills it in.
    pub fn default(&mut self, path: &str, value: impl Into<String>, text: impl Into<String>) {
        self.lines.push(Line {
            field: path.to_string(),
            file: self.file.clone(),
            line: None,
            value: value.into(),
            kind: Kind::Default,
            text: text.into(),
        });
    }

    /// A value the recipe leaves out whose project default changes memory in a way vramlab
    /// does not model.
    pub fn refused_default(
        &mut self,
        path: &str,
        value: impl Into<String>,
        text: impl Into<String>,
    ) {
        self.default(path, value, text);
        if let Some(line) = self.lines.last_mut() {
            line.kind = Kind::Refused;
        }
    }

    /// Whether the recipe states `path` as `true`.
    pub fn doc_value_is_true(&self, path: &str) -> bool {
        self.doc
            .get(path)
            .is_some_and(|f| f.value == Value::Bool(true))
    }

    /// Whether the recipe has any field under `prefix` (`fsdp_config.`).
    pub fn has_prefix(&self, prefix: &str) -> bool {
        self.doc.fields.iter().any(|f| f.path.starts_with(prefix))
    }

    /// Whether the recipe states `path` as null (`key:` with nothing, or `null`).
    pub fn is_null(&self, path: &str) -> bool {
        self.doc.get(path).is_some_and(|f| f.value == Value::Null)
    }

    /// Every field not taken yet whose path starts with one of `prefixes` (a whole key, or a
    /// key and its children), listed as not changing memory.
    pub fn ignore_all(&mut self, prefixes: &[&str], why: &str) {
        let fields: Vec<Field> = self
            .doc
            .fields
            .iter()
            .filter(|f| !self.taken.contains(&f.path))
            .filter(|f| {
                prefixes.iter().any(|p| {
                    f.path == *p
                        || f.path.starts_with(&format!("{p}."))
                        || (p.ends_with('*') && f.path.starts_with(&p[..p.len() - 1]))
                })
            })
            .cloned()
            .collect();
        for field in fields {
            self.taken.insert(field.path.clone());
            self.push(&field, Kind::Ignored, why.to_string());
        }
    }

    /// The fields no rule took: not read.
    pub fn rest_unread(&mut self, format: &str) {
        let fields: Vec<Field> = self
            .doc
            .fields
            .iter()
            .filter(|f| !self.taken.contains(&f.path))
            .cloned()
            .collect();
        for field in fields {
            self.taken.insert(field.path.clone());
            self.push(
                &field,
                Kind::Unread,
                format!(
                    "not a field vramlab reads in {format}: not planned (if it changes memory, \
                     the plan does not show it)"
                ),
            );
        }
    }
}

/// Typed reads: a value of the wrong kind is refused, naming the field, its line and what it
/// takes.
impl Mapper<'_> {
    /// A whole number in `lo..=hi`.
    pub fn count(&mut self, path: &str, (lo, hi): (usize, usize)) -> Option<(Field, usize)> {
        let field = self.take(path)?;
        match &field.value {
            Value::Int(n) if *n >= lo as i64 && *n <= hi as i64 => {
                Some((field.clone(), *n as usize))
            }
            _ => {
                let why = format!("expected a whole number from {lo} to {hi}");
                self.refused(&field, why);
                None
            }
        }
    }

    /// A number in `lo..=hi`.
    pub fn number(&mut self, path: &str, (lo, hi): (f64, f64)) -> Option<(Field, f64)> {
        let field = self.take(path)?;
        let value = match &field.value {
            Value::Int(n) => *n as f64,
            Value::Float(f) => *f,
            _ => f64::NAN,
        };
        if (lo..=hi).contains(&value) {
            Some((field, value))
        } else {
            self.refused(&field, format!("expected a number from {lo} to {hi}"));
            None
        }
    }

    /// A boolean (`true`/`false`, as YAML 1.1 spells them).
    pub fn flag(&mut self, path: &str) -> Option<(Field, bool)> {
        let field = self.take(path)?;
        match field.value {
            Value::Bool(on) => Some((field, on)),
            _ => {
                self.refused(&field, "expected true or false");
                None
            }
        }
    }

    /// Text (a number is refused).
    pub fn text(&mut self, path: &str) -> Option<(Field, String)> {
        let field = self.take(path)?;
        match &field.value {
            Value::Text(text) => {
                let text = text.clone();
                Some((field, text))
            }
            _ => {
                self.refused(&field, "expected text");
                None
            }
        }
    }

    /// A list of names: a YAML list, or one text of names split at commas or spaces.
    pub fn names(&mut self, path: &str) -> Option<(Field, Vec<String>)> {
        let field = self.take(path)?;
        let names: Option<Vec<String>> = match &field.value {
            Value::Text(text) => Some(
                text.split([',', ' '])
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
            ),
            Value::List(items) => items
                .iter()
                .map(|v| v.as_text().map(str::to_string))
                .collect(),
            _ => None,
        };
        match names {
            Some(names) => Some((field, names)),
            None => {
                self.refused(&field, "expected a list of names");
                None
            }
        }
    }
}
