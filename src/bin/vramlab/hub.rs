//! `--hf-config org/name`: a model's `config.json` from the Hugging Face Hub, as
//! `huggingface_hub` finds it: `$HF_ENDPOINT` (default <https://huggingface.co>) at
//! `/{org}/{name}/resolve/main/config.json`, with `Authorization: Bearer $HF_TOKEN` when the
//! token is set (gated and private models). A copy is kept in the user's cache
//! (`$XDG_CACHE_HOME`, else `~/.cache`, under `vramlab/hf/{org}/{name}/config.json`) and read
//! from there without the network afterwards, the run saying so (`--refresh` fetches it
//! again); `HF_HUB_OFFLINE=1` never asks the Hub.

use std::path::{Path, PathBuf};
use std::time::Duration;

use vramlab::engine::ConfigError;

const DEFAULT_ENDPOINT: &str = "https://huggingface.co";

/// A model on the Hub: `org/name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubId {
    pub org: String,
    pub name: String,
}

impl std::fmt::Display for HubId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.org, self.name)
    }
}

impl HubId {
    /// `arg` read as a Hub id when it is not a file there is and looks like one: two parts of
    /// letters, digits, `-`, `_` and `.` (neither starting with a dot), the second not a
    /// `.json` file's name (a path to a missing file is reported as one).
    pub fn parse(arg: &Path) -> Option<Self> {
        if arg.exists() {
            return None;
        }
        let text = arg.to_str()?;
        let (org, name) = text.split_once('/')?;
        let part = |s: &str| {
            !s.is_empty()
                && !s.starts_with('.')
                && s.len() <= 96
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        };
        (part(org) && part(name) && !name.ends_with(".json")).then(|| Self {
            org: org.to_string(),
            name: name.to_string(),
        })
    }

    /// The cached copy's path, when there is a cache directory.
    fn cached(&self) -> Option<PathBuf> {
        let base = match std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from) {
            Some(dir) if dir.is_absolute() => dir,
            _ => PathBuf::from(std::env::var_os("HOME")?).join(".cache"),
        };
        Some(
            base.join("vramlab/hf")
                .join(&self.org)
                .join(&self.name)
                .join("config.json"),
        )
    }

    /// The model's `config.json`: the cached copy (unless `refresh`), else the Hub's (then
    /// cached); with a note saying where a cached copy was read from.
    pub fn config_json(&self, refresh: bool) -> Result<(String, Option<String>), ConfigError> {
        let cached = self.cached();
        if !refresh
            && let Some(path) = &cached
            && let Ok(text) = std::fs::read_to_string(path)
        {
            return Ok((text, Some(cached_note(path))));
        }
        let text = self.fetch()?;
        if let Some(path) = &cached {
            // A cache that cannot be written costs the next run a download, nothing more.
            let _ = store(path, &text);
        }
        Ok((text, None))
    }

    fn fetch(&self) -> Result<String, ConfigError> {
        let endpoint = std::env::var("HF_ENDPOINT")
            .ok()
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        let url = format!(
            "{}/{}/{}/resolve/main/config.json",
            endpoint.trim_end_matches('/'),
            self.org,
            self.name
        );
        let failed = |why: String| {
            ConfigError::invalid(
                "--hf-config",
                format!(
                    "{self}: {why}; download the model's config.json and pass its path \
                     (--hf-config config.json)"
                ),
            )
        };
        if std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| !matches!(v.as_str(), "" | "0")) {
            return Err(failed(format!(
                "HF_HUB_OFFLINE is set and no copy is cached{}",
                self.cached()
                    .map(|p| format!(" at {}", p.display()))
                    .unwrap_or_default()
            )));
        }
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_global(Some(Duration::from_secs(60)))
            .user_agent(concat!("vramlab/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        let mut request = agent.get(&url);
        if let Ok(token) = std::env::var("HF_TOKEN")
            && !token.is_empty()
        {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let mut response = request.call().map_err(|err| {
            failed(match err {
                ureq::Error::StatusCode(code @ (401 | 403)) => format!(
                    "{url} answered HTTP {code}: a gated or private model needs HF_TOKEN set to \
                     a token that may read it"
                ),
                ureq::Error::StatusCode(404) => {
                    format!("{url} answered HTTP 404: no such model, or no config.json in it")
                }
                ureq::Error::StatusCode(code) => format!("{url} answered HTTP {code}"),
                other => format!("could not reach {url} ({other}): offline?"),
            })
        })?;
        let text = response
            .body_mut()
            .read_to_string()
            .map_err(|err| failed(format!("reading {url}: {err}")))?;
        // Only a JSON object is worth keeping: an error page must not be cached as the model.
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(serde_json::Value::Object(_)) => Ok(text),
            _ => Err(failed(format!("{url} did not answer with a JSON object"))),
        }
    }
}

/// Where a cached copy was read from and how old it is: the Hub's may have changed since.
fn cached_note(path: &Path) -> String {
    let age = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|saved| saved.elapsed().ok())
        .map(|age| match age.as_secs() / 86_400 {
            0 => "today".to_string(),
            1 => "1 day ago".to_string(),
            days => format!("{days} days ago"),
        })
        .unwrap_or_else(|| "at a time its file does not say".to_string());
    format!(
        "config.json read from the cache ({}, saved {age}), not the Hub; --refresh fetches it \
         again",
        path.display()
    )
}

/// `text` written to `path` through a temporary file beside it, so a reader never sees half.
fn store(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let partial = dir.join(format!("config.json.{}.partial", std::process::id()));
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, path)
}
