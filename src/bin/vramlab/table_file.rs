//! A table's file, read for the engine (which reads no files): at most the byte limit and one
//! byte more, so a file far past the limit is refused without being read whole.

use std::io::Read;
use std::path::Path;

use vramlab::engine::config::DataKind;
use vramlab::engine::table::{self, SharedTable, limits};
use vramlab::engine::{ConfigError, RunConfig};

/// Read `config.data.path` when `config.data.kind` is `csv` and hand the table to the config.
/// A broken file is a config error (exit 2) naming the file, the line and the column.
pub fn load(config: &mut RunConfig) -> Result<(), ConfigError> {
    if config.data.kind != DataKind::Csv {
        return Ok(());
    }
    let path = config.data.path.clone();
    if path.is_empty() {
        return Err(ConfigError::invalid(
            "data.path",
            "data.kind = csv needs the table's file: --data FILE.csv, or --set data.path=FILE.csv",
        ));
    }
    let bytes = read_capped(Path::new(&path))
        .map_err(|err| ConfigError::invalid("data.path", format!("{path}: {err}")))?;
    let name = Path::new(&path)
        .file_name()
        .map_or(path.clone(), |n| n.to_string_lossy().into_owned());
    let table = table::read(&name, &bytes, &config.data.label)
        .map_err(|err| ConfigError::invalid(path.clone(), err.to_string()))?;
    config.data.table = Some(SharedTable::new(table));
    // Runs in their own processes (find-batch, claims) read the file again from a config
    // written elsewhere.
    if let Ok(absolute) = std::fs::canonicalize(&path) {
        config.data.path = absolute.display().to_string();
    }
    Ok(())
}

fn read_capped(path: &Path) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(limits::BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}
