#!/usr/bin/env bash
# Round 8, second part: tiles for the split tf32x3 paths (tf32x3_split=auto: ab at N >= 4096,
# else b, on these shapes). Tunable shapes only.
#   bash results/h100/explore/run8b.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/explore8}; mkdir -p "$out"
py=${PYTHON:-python3}
$py -m compare.outputs.variants --budget 0.1 --precision tf32x3 -o "$out/x3-tiles.json" \
    --shape 4096x4096x4096 --shape 2048x2048x2048 --shape 1024x13824x5120 --shape 3001x2999x3003 \
    --variant triton.stream_k --variant "triton.stream_k:tile=128x128x32/8/4" \
    --variant "triton.stream_k:tile=128x128x16/8/5" --variant "triton.stream_k:tile=64x128x32/4/4" \
    --variant "triton.stream_k:tile=128x64x32/4/4" --variant "triton.stream_k:tile=64x256x32/8/3"
