//! `--write-recipe`: a recipe with a planned change applied, in its own format and text. The
//! change comes as vramlab's `path=value` assignments (a plan's suggestion); each becomes the
//! recipe's own fields as its project names them, edited in place on their lines so that every
//! other line, comments included, stays as the user wrote it, with a comment line above each
//! change saying what it was and what the plan found.

use crate::engine::config::{OptimizerKind, RunConfig};

use super::document::{Field, Value};
use super::{Format, Reading, Recipe};

/// One field to write: its dotted path and its new value as YAML text, or (`comment_out`) a
/// line the change makes wrong, turned into a comment.
#[derive(Clone, Debug, PartialEq)]
pub struct Edit {
    pub path: String,
    pub value: String,
    pub comment_out: bool,
}

fn edit(path: &str, value: impl Into<String>) -> Edit {
    Edit {
        path: path.to_string(),
        value: value.into(),
        comment_out: false,
    }
}

/// The recipe's fields for vramlab's `assignments` (applied together, giving `changed`), or
/// why one of them has no field in this format.
pub fn edits(
    recipe: &Recipe,
    reading: &Reading,
    assignments: &[String],
    changed: &RunConfig,
) -> Result<Vec<Edit>, String> {
    let format = recipe.format;
    let micro = micro_batch_field(format);
    let accumulation = "gradient_accumulation_steps";
    let mut out = Vec::new();
    for assignment in assignments {
        let (field, value) = assignment
            .split_once('=')
            .ok_or_else(|| format!("{assignment}: not a path=value assignment"))?;
        let unwritable = || {
            format!(
                "{field} = {value} has no field in {} recipes vramlab writes",
                format.name()
            )
        };
        match field {
            // vramlab's batch is what one step sees, split into micro-batches; the recipe's
            // batch is the micro-batch.
            "batch_size" | "strategies.grad_accumulation" => {
                let steps = changed.strategies.grad_accumulation;
                let per_step = changed.batch_size / steps;
                out.push(edit(micro, per_step.to_string()));
                if steps != reading.intent.accumulation.unwrap_or(1) || field != "batch_size" {
                    out.push(edit(accumulation, steps.to_string()));
                }
                // Axolotl evaluates at the micro-batch unless told: the evaluation the plan
                // kept is written where the recipe did not state one.
                if format == Format::Axolotl
                    && reading.intent.eval_batch.is_none()
                    && changed.eval_batch_size != per_step
                {
                    out.push(edit("eval_batch_size", changed.eval_batch_size.to_string()));
                }
            }
            "eval_batch_size" => match format {
                Format::Axolotl => out.push(edit("eval_batch_size", value)),
                Format::Trl | Format::LlamaFactory => {
                    out.push(edit("per_device_eval_batch_size", value))
                }
                _ => return Err(unwritable()),
            },
            "strategies.checkpointing" if value == "layers" => out.push(match format {
                Format::Axolotl | Format::Trl => edit("gradient_checkpointing", "true"),
                Format::Torchtune => edit("enable_activation_checkpointing", "True"),
                Format::LlamaFactory => edit("disable_gradient_checkpointing", "false"),
                _ => return Err(unwritable()),
            }),
            "optimizer" => {
                let kind = OptimizerKind::ALL
                    .into_iter()
                    .find(|k| k.name() == value)
                    .ok_or_else(unwritable)?;
                let named = optimizer(recipe, kind).ok_or_else(unwritable)?;
                // torch's `fused` and `foreach` switches are not bitsandbytes' arguments.
                if named.value.starts_with("bitsandbytes.") {
                    for key in ["optimizer.fused", "optimizer.foreach"] {
                        if recipe.document.get(key).is_some() {
                            out.push(Edit {
                                comment_out: true,
                                ..edit(key, "")
                            });
                        }
                    }
                }
                out.push(named);
            }
            "strategies.weight_dtype" if value == "q4" || value == "q8" => {
                let four = value == "q4";
                match format {
                    Format::Axolotl => {
                        out.push(edit("load_in_4bit", four.to_string()));
                        out.push(edit("load_in_8bit", (!four).to_string()));
                        if four {
                            out.push(edit("adapter", "qlora"));
                        }
                    }
                    Format::Trl => {
                        out.push(edit("load_in_4bit", four.to_string()));
                        out.push(edit("load_in_8bit", (!four).to_string()));
                    }
                    Format::LlamaFactory => {
                        out.push(edit("quantization_bit", if four { "4" } else { "8" }))
                    }
                    Format::Torchtune if four => {
                        let component = recipe
                            .document
                            .get("model._component_")
                            .and_then(|f| f.value.as_text())
                            .filter(|c| c.contains(".lora_"))
                            .ok_or_else(unwritable)?;
                        out.push(edit(
                            "model._component_",
                            component.replace(".lora_", ".qlora_"),
                        ));
                    }
                    _ => return Err(unwritable()),
                }
            }
            // Made beside a 4- or 8-bit base (the suggestion's companion): every format reads
            // its quantized base with f32 factors, so the base's own fields say it.
            "strategies.adapter_dtype"
                if value == "f32" && changed.strategies.weight_dtype.is_quantized_base() => {}
            // Axolotl and LLaMA-Factory have no switch vramlab reads as this (Axolotl's
            // offloading of checkpoints is to disk or via Unsloth's patch).
            "strategies.offload" if value == "activations" => out.push(match format {
                Format::Torchtune => edit("enable_activation_offloading", "True"),
                Format::Trl => edit("activation_offloading", "true"),
                _ => return Err(unwritable()),
            }),
            // transformers' own `fsdp` argument (TRL's and LLaMA-Factory's), with its
            // automatic wrapping of each block. Not where the sharding is the DeepSpeed file's
            // or the launcher's (the change belongs there), nor in Axolotl, whose FSDP needs
            // its fsdp_config block, nor torchtune's, a recipe of its own.
            "strategies.sharding" if matches!(value, "full" | "gradients") => {
                let named_elsewhere = recipe.document.get("deepspeed").is_some()
                    || (reading.intent.sharding.is_some() && recipe.document.get("fsdp").is_none());
                match format {
                    Format::Trl | Format::LlamaFactory if !named_elsewhere => {
                        let strategy = if value == "full" {
                            "full_shard"
                        } else {
                            "shard_grad_op"
                        };
                        out.push(edit("fsdp", format!("{strategy} auto_wrap")));
                    }
                    _ => return Err(unwritable()),
                }
            }
            "strategies.weight_dtype" if value == "f16" => out.push(match format {
                Format::Axolotl => edit("bf16", "true"),
                Format::Trl => edit("dtype", "bfloat16"),
                Format::Torchtune => edit("dtype", "bf16"),
                Format::LlamaFactory if changed.strategies.trainable.name() == "lora" => {
                    edit("bf16", "true")
                }
                Format::LlamaFactory => edit("pure_bf16", "true"),
                _ => return Err(unwritable()),
            }),
            "strategies.mixed_precision" if value == "f16" => out.push(match format {
                Format::Trl | Format::LlamaFactory => edit("bf16", "true"),
                _ => return Err(unwritable()),
            }),
            "strategies.attention" if value == "fused" => match format {
                // Axolotl refuses attn_implementation beside its older switches: where the
                // recipe uses those, the change is made there.
                Format::Axolotl
                    if recipe.document.get("attn_implementation").is_none()
                        && recipe.document.get("eager_attention").is_some() =>
                {
                    out.push(edit("eager_attention", "false"));
                    out.push(edit("sdp_attention", "true"));
                }
                Format::Axolotl | Format::Trl => out.push(edit("attn_implementation", "sdpa")),
                Format::LlamaFactory => out.push(edit("flash_attn", "sdpa")),
                _ => return Err(unwritable()),
            },
            "strategies.cross_entropy" if value == "fused" => out.push(match format {
                Format::Trl => edit("loss_type", "chunked_nll"),
                Format::Torchtune => edit(
                    "loss._component_",
                    "torchtune.modules.loss.LinearCrossEntropyLoss",
                ),
                _ => return Err(unwritable()),
            }),
            "strategies.trainable" if value == "lora" => {
                let rank = changed.strategies.lora_rank.to_string();
                let alpha = format!("{}", changed.strategies.lora_alpha);
                match format {
                    Format::Axolotl => out.extend([
                        edit("adapter", "lora"),
                        edit("lora_r", rank),
                        edit("lora_alpha", alpha),
                        edit("lora_dropout", "0.0"),
                        edit("lora_target_linear", "true"),
                    ]),
                    Format::Trl => out.extend([
                        edit("use_peft", "true"),
                        edit("lora_r", rank),
                        edit("lora_alpha", alpha),
                        edit("lora_dropout", "0.0"),
                        edit("lora_target_modules", "all-linear"),
                    ]),
                    Format::LlamaFactory => out.extend([
                        edit("finetuning_type", "lora"),
                        edit("lora_rank", rank),
                        edit("lora_alpha", alpha),
                        edit("lora_target", "all"),
                    ]),
                    _ => return Err(unwritable()),
                }
            }
            _ => return Err(unwritable()),
        }
    }
    // The last edit of a field wins (a batch and its accumulation may both be set).
    let mut unique: Vec<Edit> = Vec::new();
    for e in out {
        unique.retain(|u| u.path != e.path);
        unique.push(e);
    }
    Ok(unique)
}

fn micro_batch_field(format: Format) -> &'static str {
    match format {
        Format::Axolotl => "micro_batch_size",
        Format::Torchtune => "batch_size",
        _ => "per_device_train_batch_size",
    }
}

/// The optimizer's name in the recipe's format; a paged one stays paged.
fn optimizer(recipe: &Recipe, kind: OptimizerKind) -> Option<Edit> {
    match recipe.format {
        Format::Torchtune => {
            let component = match kind {
                OptimizerKind::Adamw8bit => "bitsandbytes.optim.PagedAdamW8bit",
                OptimizerKind::Adamw => "torch.optim.AdamW",
                OptimizerKind::Sgd => "torch.optim.SGD",
                _ => return None,
            };
            Some(edit("optimizer._component_", component))
        }
        Format::Axolotl | Format::Trl | Format::LlamaFactory => {
            let key = if recipe.format == Format::Axolotl {
                "optimizer"
            } else {
                "optim"
            };
            let paged = recipe
                .document
                .get(key)
                .and_then(|f| f.value.as_text())
                .is_some_and(|name| name.starts_with("paged_"));
            let name = match (kind, paged) {
                (OptimizerKind::Adamw8bit, true) => "paged_adamw_8bit",
                (OptimizerKind::Adamw8bit, false) => "adamw_bnb_8bit",
                (OptimizerKind::Adafactor, _) => "adafactor",
                (OptimizerKind::Adamw, _) => "adamw_torch_fused",
                (OptimizerKind::Lion, _) => "lion_32bit",
                (OptimizerKind::Sgd, _) => "sgd",
                _ => return None,
            };
            Some(edit(key, name))
        }
        _ => None,
    }
}

/// `text` with `edits` applied: each field's value replaced on its line (a comment after it
/// kept), with `note` and the old value in a comment line above it; a field the recipe does
/// not have is added at the end (a top-level one) or under its parent's line (one level
/// down). Every other line is kept as it was.
pub fn apply(recipe: &Recipe, edits: &[Edit], note: &str) -> Result<String, String> {
    if recipe.text.trim_start().starts_with('{') {
        return Err("a JSON recipe is not rewritten (its lines hold several fields)".into());
    }
    let newline = if recipe.text.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let mut lines: Vec<String> = recipe
        .text
        .lines()
        .map(|l| l.trim_end_matches('\r').to_string())
        .collect();
    // Edits of existing fields from the bottom up, so earlier line numbers stay right.
    let mut existing: Vec<(&Edit, &Field)> = Vec::new();
    let mut added: Vec<&Edit> = Vec::new();
    for e in edits {
        match recipe.document.get(&e.path) {
            Some(field) => existing.push((e, field)),
            None => added.push(e),
        }
    }
    existing.sort_by_key(|(_, f)| std::cmp::Reverse(f.line));
    for (e, field) in existing {
        let index = field.line - 1;
        let line = lines
            .get(index)
            .ok_or_else(|| format!("{}: line {} is past the end", e.path, field.line))?
            .clone();
        let indent: String = line.chars().take_while(|c| c.is_whitespace()).collect();
        if e.comment_out {
            lines[index] = format!(
                "{indent}# {} (vramlab: not an argument of the new optimizer)",
                line.trim_start()
            );
            continue;
        }
        let (replaced, value_line) = replace_value(&lines, index, field, &e.value)?;
        lines[value_line] = replaced;
        lines.insert(
            index,
            format!("{indent}# vramlab: was {}; {note}", field.value.shown()),
        );
    }
    // Fields added at the top level follow one another at the end, under one comment.
    let mut top_level_noted = false;
    for e in added {
        match e.path.split_once('.') {
            None => {
                if !top_level_noted {
                    lines.push(format!("# vramlab: added; {note}"));
                    top_level_noted = true;
                }
                lines.push(format!("{}: {}", e.path, e.value));
            }
            Some((parent, key)) if !key.contains('.') => {
                let at = lines
                    .iter()
                    .position(|l| l.trim_end() == format!("{parent}:"))
                    .ok_or_else(|| format!("{}: no {parent}: block to add it under", e.path))?;
                // The block's own indentation, from its first line.
                let indent: String = lines
                    .get(at + 1)
                    .map(|l| l.chars().take_while(|c| *c == ' ').collect())
                    .filter(|i: &String| !i.is_empty())
                    .unwrap_or_else(|| "  ".into());
                lines.insert(at + 1, format!("{indent}{key}: {}", e.value));
                lines.insert(at + 1, format!("{indent}# vramlab: added; {note}"));
            }
            Some(_) => return Err(format!("{}: too deep to add", e.path)),
        }
    }
    let mut text = lines.join(newline);
    if recipe.text.ends_with('\n') {
        text.push_str(newline);
    }
    Ok(text)
}

/// The line holding `field`'s value (the key's line, or the next one for a value written
/// under its key) with the value replaced, and that line's index.
fn replace_value(
    lines: &[String],
    index: usize,
    field: &Field,
    value: &str,
) -> Result<(String, usize), String> {
    if matches!(field.value, Value::List(_) | Value::Nested) {
        return Err(format!("{}: a list is not rewritten", field.path));
    }
    let line = &lines[index];
    let key_start = line
        .char_indices()
        .nth(field.column.saturating_sub(1))
        .map_or(line.len(), |(i, _)| i);
    let colon = line[key_start..]
        .find(':')
        .map(|i| key_start + i)
        .ok_or_else(|| {
            format!(
                "{}: no ':' after the key on line {}",
                field.path, field.line
            )
        })?;
    let rest = &line[colon + 1..];
    let value_start = colon + 1 + (rest.len() - rest.trim_start().len());
    let tail = &line[value_start..];
    if field.value == Value::Null {
        // `key:` with nothing (or a comment) after it: the value goes after the colon.
        return Ok((
            format!(
                "{} {value}{}",
                &line[..colon + 1],
                if tail.is_empty() {
                    String::new()
                } else {
                    format!(" {tail}")
                }
            ),
            index,
        ));
    }
    if tail.is_empty() || tail.starts_with('#') {
        // The value is on the next line that is not blank or a comment.
        let next = (index + 1..lines.len())
            .find(|&i| {
                let t = lines[i].trim_start();
                !t.is_empty() && !t.starts_with('#')
            })
            .ok_or_else(|| format!("{}: its value is missing", field.path))?;
        let next_line = &lines[next];
        let start = next_line.len() - next_line.trim_start().len();
        let end = start + value_end(&next_line[start..]);
        return Ok((
            format!("{}{value}{}", &next_line[..start], &next_line[end..]),
            next,
        ));
    }
    let end = value_start + value_end(tail);
    let quoted = tail.starts_with(['"', '\'']);
    if !quoted && line[value_start..end].contains([',', '}', ']']) {
        return Err(format!(
            "{}: line {} holds more than one value (flow style); not rewritten",
            field.path, field.line
        ));
    }
    let after = line[end..].trim_start();
    if !(after.is_empty() || after.starts_with('#')) || line[..key_start].contains(['{', '[']) {
        return Err(format!(
            "{}: line {} holds more than one value (flow style); not rewritten",
            field.path, field.line
        ));
    }
    Ok((
        format!("{}{value}{}", &line[..value_start], &line[end..]),
        index,
    ))
}

/// Where a scalar written at the start of `text` ends: its closing quote, or before a ` #`
/// comment or trailing spaces.
fn value_end(text: &str) -> usize {
    if let Some(quote) = text.chars().next().filter(|c| *c == '"' || *c == '\'') {
        return text[1..].find(quote).map_or(text.len(), |i| i + 2);
    }
    let cut = [" #", "\t#"]
        .iter()
        .filter_map(|c| text.find(c))
        .min()
        .unwrap_or(text.len());
    text[..cut].trim_end().len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::overrides::apply_overrides;
    use crate::engine::presets::preset;

    /// A recipe, the assignments of a suggestion, and the text written: each of its edits
    /// lands on the recipe's own field, comments stay, and reading the result again gives
    /// the changed config's `--set`s.
    fn round_trip(text: &str, assignments: &[&str]) -> (String, super::super::Reading) {
        let recipe = Recipe::parse(text).unwrap();
        let reading = super::super::read(&recipe, &[]).unwrap();
        let base = apply_overrides(
            preset("llama2-7b").unwrap(),
            reading.sets.iter().map(String::as_str),
        )
        .unwrap();
        let changed = apply_overrides(base.clone(), assignments.iter().copied()).unwrap();
        let assignments: Vec<String> = assignments.iter().map(|s| s.to_string()).collect();
        let edits = edits(&recipe, &reading, &assignments, &changed).unwrap();
        let written = apply(&recipe, &edits, "planned 1.00 GiB").unwrap();
        let again = super::super::read(&Recipe::parse(&written).unwrap(), &[]).unwrap();
        let replanned = apply_overrides(
            preset("llama2-7b").unwrap(),
            again.sets.iter().map(String::as_str),
        )
        .unwrap();
        assert_eq!(
            replanned.to_json_pretty(),
            changed.to_json_pretty(),
            "{written}"
        );
        (written, again)
    }

    #[test]
    fn axolotl_gets_a_smaller_micro_batch_and_a_4_bit_base_with_its_comments_kept() {
        let text = "base_model: a/b # the model\nload_in_8bit: true\n\nadapter: lora\nlora_r: 16\nlora_alpha: 32\n\
                    lora_dropout: 0.0\nlora_target_linear: true\nsequence_len: 4096\nsample_packing: true\n\
                    # two sequences a GPU\nmicro_batch_size: 2  # per GPU\ngradient_accumulation_steps: 4\n\
                    optimizer: paged_adamw_32bit\nbf16: auto\n";
        let (written, _) = round_trip(
            text,
            &[
                "strategies.weight_dtype=q4",
                "strategies.grad_accumulation=8",
            ],
        );
        assert!(
            written.contains("base_model: a/b # the model\n"),
            "{written}"
        );
        assert!(written.contains("# two sequences a GPU\n# vramlab: was 2; planned 1.00 GiB\nmicro_batch_size: 1  # per GPU\n"), "{written}");
        assert!(
            written.contains("gradient_accumulation_steps: 8\n"),
            "{written}"
        );
        assert!(written.contains("load_in_4bit: true\n"), "{written}");
        assert!(written.contains("adapter: qlora\n"), "{written}");
        assert!(written.contains("load_in_8bit: false\n"), "{written}");
    }

    #[test]
    fn torchtune_trl_and_llama_factory_take_their_own_names() {
        let torchtune = "# tune run lora_finetune_single_device --config x\nmodel:\n  _component_: torchtune.models.llama3_1.lora_llama3_1_8b\n  \
                         lora_attn_modules: ['q_proj', 'k_proj', 'v_proj', 'output_proj']\n  apply_lora_to_mlp: True\n  \
                         lora_rank: 8\n  lora_alpha: 16\n  lora_dropout: 0.0\nbatch_size: 4\ngradient_accumulation_steps: 1\n\
                         optimizer:\n  _component_: torch.optim.AdamW\n  fused: True\ndtype: bf16\n\
                         enable_activation_checkpointing: False  # True reduces memory\n";
        let (written, _) = round_trip(
            torchtune,
            &["strategies.checkpointing=layers", "optimizer=adamw8bit"],
        );
        assert!(
            written.contains("enable_activation_checkpointing: True  # True reduces memory\n"),
            "{written}"
        );
        assert!(
            written.contains("  _component_: bitsandbytes.optim.PagedAdamW8bit\n"),
            "{written}"
        );
        assert!(written.contains("  # fused: True (vramlab: "), "{written}");
        // A 4-bit base is the QLoRA builder of the same model, whose factors torchtune keeps
        // in bf16 and vramlab in f32 (as the suggestion says with it): the builder says both.
        let (written, _) = round_trip(
            torchtune,
            &["strategies.adapter_dtype=f32", "strategies.weight_dtype=q4"],
        );
        assert!(
            written.contains("  _component_: torchtune.models.llama3_1.qlora_llama3_1_8b\n"),
            "{written}"
        );
        assert_eq!(written.matches("# vramlab: was ").count(), 1, "{written}");

        // Activation offloading, under the checkpointing it needs.
        let (written, _) = round_trip(
            torchtune,
            &[
                "strategies.checkpointing=layers",
                "strategies.offload=activations",
            ],
        );
        assert!(
            written.ends_with("enable_activation_offloading: True\n"),
            "{written}"
        );

        let trl = "model_name_or_path:\n  Qwen/Qwen2.5-0.5B\nper_device_train_batch_size: 8\nlora_dropout: 0.0\n";
        // Sharding as transformers' `fsdp` argument.
        let (written, again) = round_trip(trl, &["strategies.sharding=full"]);
        assert!(
            written.ends_with("\nfsdp: full_shard auto_wrap\n"),
            "{written}"
        );
        assert!(again.shards);
        let (written, _) = round_trip(trl, &["strategies.offload=activations"]);
        assert!(
            written.ends_with("\nactivation_offloading: true\n"),
            "{written}"
        );
        let (written, _) = round_trip(trl, &["strategies.grad_accumulation=4"]);
        assert!(
            written.contains("per_device_train_batch_size: 2\n"),
            "{written}"
        );
        assert!(
            written
                .ends_with("# vramlab: added; planned 1.00 GiB\ngradient_accumulation_steps: 4\n"),
            "{written}"
        );

        let factory = "### model\nmodel_name_or_path: Qwen/Qwen3-4B\nfinetuning_type: lora\nlora_target: all\n\
                       per_device_train_batch_size: 2\nbf16: true\n";
        let (written, _) = round_trip(
            factory,
            &["strategies.weight_dtype=q4", "optimizer=adamw8bit"],
        );
        assert!(written.starts_with("### model\n"), "{written}");
        assert!(
            written.contains("quantization_bit: 4\n")
                && written.contains("optim: adamw_bnb_8bit\n"),
            "{written}"
        );
    }

    #[test]
    fn odd_lines_are_edited_in_place_or_refused_never_corrupted() {
        let recipe = |text: &str| Recipe::parse(text).unwrap();
        let field = |r: &Recipe, path: &str| r.document.get(path).unwrap().clone();
        // A null value gets its value after the colon; the next key is untouched.
        let r = recipe("base_model: a/b\neval_batch_size:\nmicro_batch_size: 2\n");
        let e = vec![edit("eval_batch_size", "1")];
        let written = apply(&r, &e, "n").unwrap();
        assert!(
            written.contains("eval_batch_size: 1\nmicro_batch_size: 2\n"),
            "{written}"
        );
        // A comment after a tab stays; CRLF stays CRLF.
        let r = recipe("base_model: a/b\r\nmicro_batch_size: 2\t# per GPU\r\n");
        let written = apply(&r, &[edit("micro_batch_size", "1")], "n").unwrap();
        assert!(
            written.ends_with("micro_batch_size: 1\t# per GPU\r\n"),
            "{written:?}"
        );
        // Flow style and JSON are refused, not rewritten.
        let r = recipe("base_model: a/b\nlimits: {micro_batch_size: 2, x: 1}\n");
        let f = field(&r, "limits.micro_batch_size");
        assert!(
            replace_value(&["limits: {micro_batch_size: 2, x: 1}".into()], 0, &f, "1").is_err()
        );
        let r = recipe("{\"model_name_or_path\": \"a/b\", \"per_device_train_batch_size\": 8}");
        assert!(apply(&r, &[edit("per_device_train_batch_size", "4")], "n").is_err());
        // A quoted value with a '#' in it is replaced whole.
        let r = recipe("base_model: a/b\noptimizer: \"adamw_torch # x\"  # note\n");
        let written = apply(&r, &[edit("optimizer", "adamw_bnb_8bit")], "n").unwrap();
        assert!(
            written.contains("optimizer: adamw_bnb_8bit  # note\n"),
            "{written}"
        );
    }
}
