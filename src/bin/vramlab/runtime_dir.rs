//! Where vramlab keeps its files, and the one environment variable it sets for itself.
//!
//! Mesa's Vulkan driver connects to Wayland to list its surfaces, and libwayland prints "error:
//! XDG_RUNTIME_DIR is invalid or not set in the environment." (twice, once a probe) when the
//! variable is missing or not an absolute path, as on a server, over ssh or in a container. The
//! scripts set it (`.ci/env.sh`); a plain run of the binary gets the same private folder.

use std::path::{Path, PathBuf};

/// vramlab's cache: `$VRAMLAB_CACHE`, else `~/.cache/vramlab` (where `.ci/play` builds the page).
pub fn cache() -> PathBuf {
    std::env::var_os("VRAMLAB_CACHE").map_or_else(
        || PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/vramlab"),
        PathBuf::from,
    )
}

/// Give this process an `XDG_RUNTIME_DIR` where it has none usable: the cache's `xdg-runtime`
/// folder, made private (0700) as the variable's specification asks. A folder that cannot be
/// made leaves the environment as it was (the warning is all that is lost).
pub fn ensure() {
    let usable = std::env::var_os("XDG_RUNTIME_DIR")
        .is_some_and(|dir| Path::new(&dir).is_absolute() && Path::new(&dir).is_dir());
    if usable {
        return;
    }
    let dir = cache().join("xdg-runtime");
    if !dir.is_absolute() || std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700));
    }
    // SAFETY: called first thing in `main`, before any thread is started (no other thread can
    // read the environment while it changes).
    unsafe { std::env::set_var("XDG_RUNTIME_DIR", dir) };
}
