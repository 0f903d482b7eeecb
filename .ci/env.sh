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
# The vendored cubecl-runtime (vendor/) is a path package, and its build script names no
# rerun-if-changed, so cargo fingerprints it by the newest mtime of its files: a fresh clone's
# checkout times differ from the last build's, cargo reruns the script, rebuilds the crate and
# with it every cubecl and burn crate, natively and for wasm32 (about 20 minutes on two cores,
# each time a build alternates between two clones; `CARGO_LOG=cargo::core::compiler::fingerprint=info`
# named the mtime as the only change). Its files get a time computed from their contents: the
# same in every clone (shallow or not), and another one whenever a file of it changes, so an
# edit is still rebuilt. (A fixed time would hide an edit; a commit's time differs in a shallow
# clone.) Six hex digits of the hash after 2023-11-14: a time always in the past.
vramlab_repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -d "$vramlab_repo/vendor" ]; then
  vendor_hash=$(cd "$vramlab_repo" && find vendor -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-6)
  find "$vramlab_repo/vendor" -exec touch -h -d "@$((1700000000 + 16#$vendor_hash))" {} +
fi
# The same for vramlab's own two packages (the root and www/), whose build scripts print no
# rerun-if-changed either: each fresh clone's checkout times are newer than the cache's last
# build, so cargo rebuilt both crates, natively and for the page (522 s of a warm CI run,
# measured 2026-12-02), for the same sources. Every tracked file outside vendor/ gets one time
# from the contents of all but the files no crate compiles in (the Markdown pages, which the docs
# check reads at run time; the scripts under .ci/ and the node, shell and Python scripts of the
# tests and benchmarks; the page's HTML and CSS, which `.ci/build-page` copies): a clone of a
# commit this cache has built finds its packages' newest time unchanged, a change to a script
# rebuilds nothing, and any change to a compiled or data file moves it (an edit changes the
# hash; an untracked file keeps its own time, and cargo rebuilds for it as it always did).
if git -C "$vramlab_repo" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  tracked_hash=$(cd "$vramlab_repo" && git ls-files -z -- . ':!vendor' ':!.ci' ':!*.md' ':!*.mjs' ':!*.sh' \
    ':!*.py' ':!*.html' ':!*.css' \
    | xargs -0 sha256sum 2>/dev/null | sha256sum | cut -c1-6)
  (cd "$vramlab_repo" && git ls-files -z -- . ':!vendor' \
    | xargs -0 touch -h -c -d "@$((1700000000 + 16#$tracked_hash))")
fi
unset vramlab_repo vendor_hash tracked_hash
