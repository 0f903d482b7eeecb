//! A recipe file read into its fields: each leaf of the YAML (or JSON, which YAML reads too)
//! named by its dotted path (`fsdp_config.fsdp_offload_params`, `model._component_`), with its
//! value and the line it is on, in the file's order. Recipes are flat maps of switches, a few
//! nested one level; the line is what a reading and an error point to, and what
//! `--write-recipe` edits.

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use super::RecipeError;

/// A value as the projects' own YAML readers (PyYAML, OmegaConf: YAML 1.1) type it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    /// A sequence of scalars (`lora_target_modules`, `fsdp: [full_shard, auto_wrap]`).
    List(Vec<Value>),
    /// A sequence holding mappings or sequences (`datasets:`): kept as a field, its content
    /// not read.
    Nested,
}

impl Value {
    /// A scalar as YAML 1.1 reads it: quoted text stays text; plain `null`, `~` and nothing are
    /// null; `true`/`false`/`yes`/`no`/`on`/`off` in any case are booleans; then integers,
    /// then floats (`2e-5` included, as Python's float() reads it).
    fn scalar(text: &str, style: TScalarStyle) -> Self {
        if style != TScalarStyle::Plain {
            return Self::Text(text.to_string());
        }
        match text.to_ascii_lowercase().as_str() {
            "" | "~" | "null" => return Self::Null,
            "true" | "yes" | "on" => return Self::Bool(true),
            "false" | "no" | "off" => return Self::Bool(false),
            _ => {}
        }
        if let Ok(int) = text.replace('_', "").parse::<i64>() {
            return Self::Int(int);
        }
        match text.parse::<f64>() {
            Ok(float) if float.is_finite() => Self::Float(float),
            _ => Self::Text(text.to_string()),
        }
    }

    /// The value as the recipe wrote it, for a reading's lines.
    pub fn shown(&self) -> String {
        match self {
            Self::Null => "null".into(),
            Self::Bool(b) => b.to_string(),
            Self::Int(i) => i.to_string(),
            Self::Float(f) => f.to_string(),
            Self::Text(t) => t.clone(),
            Self::List(items) => {
                let items: Vec<String> = items.iter().map(Self::shown).collect();
                format!("[{}]", items.join(", "))
            }
            Self::Nested => "(a list of entries)".into(),
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text(t) => Some(t),
            _ => None,
        }
    }
}

/// One leaf of the recipe.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// Keys from the top, joined by dots.
    pub path: String,
    pub value: Value,
    /// 1-based line and column of the key.
    pub line: usize,
    pub column: usize,
}

/// The recipe's leaves in file order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Document {
    pub fields: Vec<Field>,
}

impl Document {
    /// Read YAML or JSON text. A syntax error, a top level that is not a mapping, a key that is
    /// not plain text or a key given twice is an error naming its line and column.
    pub fn parse(text: &str) -> Result<Self, RecipeError> {
        let mut reader = Reader::default();
        Parser::new_from_str(text)
            .load(&mut reader, false)
            .map_err(|err| RecipeError::Syntax {
                line: err.marker().line(),
                column: err.marker().col() + 1,
                message: err.info().to_string(),
            })?;
        if let Some(err) = reader.error {
            return Err(err);
        }
        if !reader.saw_mapping && !reader.fields.is_empty() {
            return Err(RecipeError::syntax(
                1,
                1,
                "a recipe is a mapping of field: value",
            ));
        }
        Ok(Self {
            fields: reader.fields,
        })
    }

    pub fn get(&self, path: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.path == path)
    }
}

/// Where the event reader is: in a mapping (expecting a key, or the value of `key`), or in a
/// sequence under a field.
enum Frame {
    Mapping {
        prefix: String,
        key: Option<(String, Marker)>,
    },
    Sequence {
        path: String,
        at: Marker,
        items: Vec<Value>,
        nested: bool,
    },
    /// Inside a sequence's mapping or a sequence's sequence: skipped, depth counted.
    Skipped,
}

#[derive(Default)]
struct Reader {
    stack: Vec<Frame>,
    fields: Vec<Field>,
    saw_mapping: bool,
    error: Option<RecipeError>,
}

impl Reader {
    fn fail(&mut self, at: Marker, message: String) {
        if self.error.is_none() {
            self.error = Some(RecipeError::syntax(at.line(), at.col() + 1, message));
        }
    }

    fn push_field(&mut self, path: String, value: Value, at: Marker) {
        if let Some(earlier) = self.fields.iter().find(|f| f.path == path) {
            let message = format!("{path} is given twice (first on line {})", earlier.line);
            self.fail(at, message);
            return;
        }
        self.fields.push(Field {
            path,
            value,
            line: at.line(),
            column: at.col() + 1,
        });
    }

    /// A value (scalar, or a finished sequence) for the innermost frame.
    fn value(&mut self, value: Value, at: Marker) {
        match self.stack.last_mut() {
            Some(Frame::Mapping { key, prefix }) => match key.take() {
                Some((name, key_at)) => {
                    let path = format!("{prefix}{name}");
                    self.push_field(path, value, key_at);
                }
                None => match value {
                    Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_) => {
                        *key = Some((value.shown(), at));
                    }
                    Value::Text(name) => *key = Some((name, at)),
                    _ => self.fail(at, "a key must be plain text".into()),
                },
            },
            Some(Frame::Sequence { items, nested, .. }) => match value {
                Value::List(_) | Value::Nested => *nested = true,
                scalar => items.push(scalar),
            },
            Some(Frame::Skipped) => {}
            None => {}
        }
    }
}

impl MarkedEventReceiver for Reader {
    fn on_event(&mut self, event: Event, at: Marker) {
        if self.error.is_some() {
            return;
        }
        match event {
            Event::Scalar(text, style, _, _) => {
                let value = Value::scalar(&text, style);
                self.value(value, at);
            }
            Event::Alias(_) => self.value(Value::Nested, at),
            Event::MappingStart(..) => match self.stack.last_mut() {
                None => {
                    self.saw_mapping = true;
                    self.stack.push(Frame::Mapping {
                        prefix: String::new(),
                        key: None,
                    });
                }
                Some(Frame::Mapping { prefix, key }) => match key.take() {
                    Some((name, _)) => {
                        let prefix = format!("{prefix}{name}.");
                        self.stack.push(Frame::Mapping { prefix, key: None });
                    }
                    None => self.fail(at, "a key must be plain text".into()),
                },
                Some(Frame::Sequence { nested, .. }) => {
                    *nested = true;
                    self.stack.push(Frame::Skipped);
                }
                Some(Frame::Skipped) => self.stack.push(Frame::Skipped),
            },
            Event::SequenceStart(..) => match self.stack.last_mut() {
                None => self.fail(at, "a recipe is a mapping of field: value".into()),
                Some(Frame::Mapping { prefix, key }) => match key.take() {
                    Some((name, key_at)) => {
                        let path = format!("{prefix}{name}");
                        self.stack.push(Frame::Sequence {
                            path,
                            at: key_at,
                            items: Vec::new(),
                            nested: false,
                        });
                    }
                    None => self.fail(at, "a key must be plain text".into()),
                },
                Some(Frame::Sequence { nested, .. }) => {
                    *nested = true;
                    self.stack.push(Frame::Skipped);
                }
                Some(Frame::Skipped) => self.stack.push(Frame::Skipped),
            },
            Event::SequenceEnd => match self.stack.pop() {
                Some(Frame::Sequence {
                    path,
                    at: key_at,
                    items,
                    nested,
                }) => {
                    let value = if nested {
                        Value::Nested
                    } else {
                        Value::List(items)
                    };
                    self.push_field(path, value, key_at);
                }
                Some(Frame::Skipped) => {}
                _ => self.fail(at, "a sequence ends where none began".into()),
            },
            Event::MappingEnd => match self.stack.pop() {
                Some(Frame::Mapping {
                    key: Some((name, key_at)),
                    prefix,
                }) => {
                    // A key with no value at a mapping's end cannot happen in YAML; kept safe.
                    self.push_field(format!("{prefix}{name}"), Value::Null, key_at);
                }
                Some(Frame::Mapping { .. }) | Some(Frame::Skipped) => {}
                _ => self.fail(at, "a mapping ends where none began".into()),
            },
            Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart
            | Event::DocumentEnd
            | Event::Nothing => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_come_with_their_paths_values_and_lines() {
        let doc = Document::parse(
            "base_model: org/name\n# a comment\nlora_r: 32\nlearning_rate: 2e-5\nbf16: auto\n\
             fsdp:\n  - full_shard\n  - auto_wrap\nfsdp_config:\n  fsdp_offload_params: true\n\
             datasets:\n  - path: x\n    type: alpaca\nmax_seq_len: null\nname: '8'\n",
        )
        .unwrap();
        let shown: Vec<(String, Value, usize)> = doc
            .fields
            .iter()
            .map(|f| (f.path.clone(), f.value.clone(), f.line))
            .collect();
        assert_eq!(
            shown,
            vec![
                ("base_model".into(), Value::Text("org/name".into()), 1),
                ("lora_r".into(), Value::Int(32), 3),
                ("learning_rate".into(), Value::Float(2e-5), 4),
                ("bf16".into(), Value::Text("auto".into()), 5),
                (
                    "fsdp".into(),
                    Value::List(vec![
                        Value::Text("full_shard".into()),
                        Value::Text("auto_wrap".into())
                    ]),
                    6
                ),
                (
                    "fsdp_config.fsdp_offload_params".into(),
                    Value::Bool(true),
                    10
                ),
                ("datasets".into(), Value::Nested, 11),
                ("max_seq_len".into(), Value::Null, 14),
                ("name".into(), Value::Text("8".into()), 15),
            ]
        );
    }

    #[test]
    fn json_reads_as_yaml() {
        let doc = Document::parse(
            "{\n  \"zero_optimization\": {\n    \"stage\": 3,\n    \"offload_optimizer\": {\"device\": \"cpu\"}\n  }\n}\n",
        )
        .unwrap();
        assert_eq!(
            doc.get("zero_optimization.stage")
                .map(|f| (&f.value, f.line)),
            Some((&Value::Int(3), 3))
        );
        assert_eq!(
            doc.get("zero_optimization.offload_optimizer.device")
                .map(|f| &f.value),
            Some(&Value::Text("cpu".into()))
        );
    }

    #[test]
    fn bad_text_is_an_error_at_its_line() {
        let err = Document::parse("a: 1\nb: [1, 2\nc: 3\n").unwrap_err();
        assert!(matches!(err, RecipeError::Syntax { line: 3, .. }), "{err}");
        let err = Document::parse("a: 1\nb: 2\na: 3\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "line 3, column 1: a is given twice (first on line 1)"
        );
        let err = Document::parse("- a\n- b\n").unwrap_err();
        assert!(
            err.to_string().contains("a mapping of field: value"),
            "{err}"
        );
    }
}
