#!/usr/bin/env bash
# Round 9 (a lead, not a change): Triton fp32's two worst sweep shapes with smaller tiles, which
# waste fewer rows of a 127- or 257-row output than 128-row tiles do. Tunable shapes only.
#   bash results/h100/explore/run9.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/explore9}; mkdir -p "$out"
py=${PYTHON:-python3}
$py -m compare.outputs.variants --budget 0.1 --precision fp32 -o "$out/fp32-tiles.json" \
    --shape 127x8191x1021 --shape 257x255x65537 \
    --variant triton.stream_k --variant "triton.stream_k:tile=64x128x32/4/4" \
    --variant "triton.stream_k:tile=128x64x32/4/4" --variant "triton.stream_k:tile=64x64x32/4/4" \
    --variant "triton.stream_k:tile=64x128x16/4/4"
