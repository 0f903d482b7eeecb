//! Which planned change a recipe is written back with (`--write-recipe`, the page's Export
//! recipe): the first of a plan's suggestions that fits and that the recipe's format can say,
//! in the order the plan tried them, written with the planned figure beside it.

use crate::engine::RunConfig;
use crate::engine::format::ByteFormat;
use crate::engine::overrides::apply_overrides;

use super::write::{self, Edit};
use super::{Reading, Recipe};

/// A suggestion the plan found to fit: its assignments and the high-water it planned in use.
pub struct Fitting {
    pub assignments: Vec<String>,
    pub high_water_in_use_bytes: u64,
}

/// The recipe written back: its new text, the note on each change and the fields edited.
#[derive(Debug)]
pub struct Written {
    pub text: String,
    pub note: String,
    pub edits: Vec<Edit>,
}

/// `recipe` (read as `reading`, planned as `planned` against `budget` bytes) with the first of
/// `fitting` its format can say; an error says why none could be written.
pub fn write_back(
    recipe: &Recipe,
    reading: &Reading,
    planned: &RunConfig,
    budget: u64,
    fitting: impl IntoIterator<Item = Fitting>,
) -> Result<Written, String> {
    let format = ByteFormat::MIB_OR_GIB;
    let mut why_not = Vec::new();
    let mut tried = 0;
    for candidate in fitting {
        tried += 1;
        let changed = apply_overrides(
            planned.clone(),
            candidate.assignments.iter().map(String::as_str),
        )
        .map_err(|err| err.to_string())?;
        let written =
            write::edits(recipe, reading, &candidate.assignments, &changed).and_then(|edits| {
                let note = format!(
                    "with {} vramlab plans {} in use at the high-water mark, fitting {}",
                    candidate.assignments.join(", "),
                    format.of(candidate.high_water_in_use_bytes),
                    format.of(budget)
                );
                let text = write::apply(recipe, &edits, &note)?;
                Ok(Written { text, note, edits })
            });
        match written {
            Ok(written) => return Ok(written),
            Err(why) => why_not.push(why),
        }
    }
    if tried == 0 {
        return Err(format!("no planned change fits {}", format.of(budget)));
    }
    Err(format!(
        "no change that fits can be written as this recipe's fields ({})",
        why_not.join("; ")
    ))
}
