#!/usr/bin/env bash
# Round 5: b_transpose=swap as the default up to M = 1024 for tf32 with 128x128 tiles (long-K
# and ~1000^3 outputs), against the K-major copy; and the 512-row LLM shapes (128x256 tiles,
# swapped by default since round 4) with a 128x128 tile.
#   bash results/h100/explore/run5.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/explore5}; mkdir -p "$out"
py=${PYTHON:-python3}
$py -m compare.outputs.variants --budget 0.15 --precision tf32 -o "$out/tf32.json" \
    --shape 1024x1024x16384 --shape 1000x1000x20000 --shape 1000x1000x1000 --shape 1024x1024x1024 \
    --shape 512x12288x4096 --shape 512x28672x8192 \
    --variant triton.stream_k --variant triton.stream_k:b_transpose=copy \
    --variant "triton.stream_k:b_transpose=swap,tile=128x128x32/8/4"
