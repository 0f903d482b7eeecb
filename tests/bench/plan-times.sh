#!/usr/bin/env bash
# Seconds and peak process memory of a plan of each published config in tests/data/hf, as issue
# 59 sizes them: 1 x 4,096 tokens, LoRA rank 16, per-layer checkpointing, one at a time, nothing
# else running; a model that cannot take 4,096 tokens at its longest (GPT-2's 1,024 positions,
# TinyLlama's 2,048, Phi-3-mini-4k's 2,047-token window). A config past the time limit is named,
# not waited for.
#   bash tests/bench/plan-times.sh [VRAMLAB_BINARY] [SECONDS_EACH] [CONFIG.json]...
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
vramlab="${1:-${CARGO_TARGET_DIR:-$here/target}/release/vramlab}"
limit="${2:-900}"
printf '%-32s %6s %10s %12s  %s\n' config tokens seconds "peak RSS" "plan's high-water in use"
files=("${@:3}")
[ ${#files[@]} -eq 0 ] && files=("$here"/tests/data/hf/*.json)
for file in "${files[@]}"; do
  name=$(basename "$file" .json)
  case "$name" in
    gpt2) seq=1024 ;;
    tinyllama-*) seq=2048 ;;
    phi-3-mini-4k) seq=2047 ;;
    *) seq=4096 ;;
  esac
  out=$(mktemp)
  /usr/bin/time -f '%e %M' -o "$out.time" timeout "$limit" "$vramlab" plan --hf-config "$file" \
    --set data.seq_len=$seq --set batch_size=1 --set eval_batch_size=1 \
    --set strategies.trainable=lora --set strategies.lora_rank=16 \
    --set strategies.checkpointing=layers --json >"$out" 2>/dev/null
  rc=$?
  read -r seconds kib < <(tail -1 "$out.time")
  if [ $rc -eq 0 ]; then
    mark=$(python3 -c "import json,sys; print(json.load(open('$out'))['high_water_in_use_bytes'])")
  elif [ $rc -eq 124 ]; then
    mark="not finished within $limit s"
  else
    mark="exit $rc"
  fi
  printf '%-32s %6s %10s %9.0f MiB  %s\n' "$name" "$seq" "$seconds" "$((kib / 1024))" "$mark"
  rm -f "$out" "$out.time"
done
