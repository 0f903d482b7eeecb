#!/usr/bin/env bash
# Kernels each playground preset compiles in its first six steps natively (the run's evaluation
# at the sixth included), counted from cubecl's own compilation logger (CUBECL_DEBUG_LOG writes
# one [START_KERNEL_COMPILATION] block a kernel). Also how many are distinct (a kernel compiled
# again on a second device counts once: a mixture of experts' run plans its even routing on a
# planning device of its own), and how many differ from another only in a number (a size or a
# constant baked into the source: what a shape-generic kernel would compile once).
#   bash tests/bench/kernels.sh [VRAMLAB_BINARY] [PRESET]...
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
vramlab="${1:-${CARGO_TARGET_DIR:-$here/target}/release/vramlab}"
shift || true
presets=("$@")
if [ ${#presets[@]} -eq 0 ]; then
  presets=(spiral-mlp circle-tiny digits-cnn digits-mlp sort-gru sort-lstm sort-transformer
    sort-gpt sort-llama sort-qwen3 sort-gemma2 sort-gemma3 sort-phi3 sort-mixtral sort-qwen3-moe)
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf '%-18s %8s %9s %12s %9s\n' preset compiled distinct "size twins" seconds
for preset in "${presets[@]}"; do
  log="$work/$preset.log"
  started=$(date +%s.%N)
  CUBECL_DEBUG_LOG="$log" "$vramlab" train --preset "$preset" --steps 6 --out "$work/$preset" >/dev/null 2>&1
  ended=$(date +%s.%N)
  kernels=$(grep -c '^\[START_KERNEL_COMPILATION\]' "$log" || true)
  # Each kernel's source and id between its markers; with its numbers blanked, equal texts are
  # kernels that differ only in a size or a constant.
  read -r distinct shapes < <(awk '
    /^\[START_KERNEL_COMPILATION\]/ {body = ""; on = 1; next}
    /^\[END_KERNEL_COMPILATION\]/ {
      on = 0
      if (!(body in seen)) { seen[body] = 1; distinct++; blank = body; gsub(/[0-9]+/, "N", blank); shapes[blank] = 1 }
      next
    }
    on {body = body $0 "\n"}
    END {n = 0; for (s in shapes) n++; print distinct + 0, n}' "$log")
  printf '%-18s %8d %9d %12d %9.1f\n' "$preset" "$kernels" "$distinct" "$((distinct - shapes))" \
    "$(echo "$ended - $started" | bc)"
done
