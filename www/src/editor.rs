//! The page's editable configuration: every edit goes through the engine's `path=value`
//! overrides and validation, so the page refuses exactly what the CLI refuses.

use leptos::prelude::*;
use vramlab::engine::RunConfig;
use vramlab::engine::overrides::apply_override;
use vramlab::engine::presets::preset;

/// The page's editable state.
#[derive(Clone, Copy)]
pub struct Editor {
    pub preset: RwSignal<String>,
    pub config: RwSignal<RunConfig>,
    /// The last refused edit, naming the field and its range.
    pub refused: RwSignal<Option<String>>,
}

impl Editor {
    pub fn set(&self, path: &str, value: &str) {
        let current = self.config.get_untracked();
        let next = apply_override(&current, &format!("{path}={value}"))
            .and_then(|c| c.validate().map(|()| c));
        match next {
            Ok(config) => {
                self.config.set(config);
                self.refused.set(None);
            }
            Err(err) => self.refused.set(Some(err.to_string())),
        }
    }

    pub fn load_preset(&self, name: &str) {
        if let Ok(config) = preset(name) {
            self.preset.set(name.to_string());
            self.config.set(config);
            self.refused.set(None);
        }
    }
}
