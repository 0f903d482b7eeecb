# Sourced by the scripts beside it: where builds and tools live, outside the clone, so a second
# run on the same machine is warm.
VRAMLAB_CACHE="${VRAMLAB_CACHE:-$HOME/.cache/vramlab}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$VRAMLAB_CACHE/target}"
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export PATH="$CARGO_HOME/bin:$PATH"
# Mesa's loader warns when this is unset; give it a private one.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$VRAMLAB_CACHE/xdg-runtime}"
mkdir -p "$VRAMLAB_CACHE" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR" 2>/dev/null || true
# Web tools (wasm-bindgen-cli, trunk) and npm tools (binaryen's wasm-opt, playwright-core).
export VRAMLAB_TOOLS="$VRAMLAB_CACHE/tools"
export VRAMLAB_NPM="$VRAMLAB_CACHE/npm"
export PATH="$VRAMLAB_TOOLS/bin:$VRAMLAB_NPM/node_modules/.bin:$PATH"
# Every build of vramlab's own crates goes through clippy's driver with warnings denied, here and
# in CI alike: the lint costs no second build, and `.ci/play`'s builds (the page, the binary)
# are the very ones `.ci/test` reuses (cargo rebuilds a crate whose wrapper or lint flags differ).
if command -v clippy-driver >/dev/null; then
  export RUSTC_WORKSPACE_WRAPPER="${RUSTC_WORKSPACE_WRAPPER:-clippy-driver}"
  export CLIPPY_ARGS="${CLIPPY_ARGS:--D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__}"
fi
