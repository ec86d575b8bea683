#!/usr/bin/env bash
# Round 7: tf32 outputs of ~1000-2048 rows that 128x256 tiles can't fill a wave with: the
# 128x128 stream-K default against smaller data-parallel tiles. Tunable shapes only.
#   bash results/h100/explore/run7.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/explore7}; mkdir -p "$out"
py=${PYTHON:-python3}
$py -m compare.outputs.variants --budget 0.1 --precision tf32 -o "$out/cubes.json" \
    --shape 1024x1024x1024 --shape 1000x1000x1000 --shape 1536x1536x1536 --shape 2048x2048x2048 \
    --variant triton.stream_k --variant "triton.stream_k:sk=dp,tile=64x128x32/4/4" \
    --variant "triton.stream_k:sk=dp,tile=64x128x32/4/3" --variant "triton.stream_k:tile=64x128x32/4/4" \
    --variant "triton.stream_k:sk=dp,tile=128x64x32/4/4" --variant "triton.stream_k:sk=dp,tile=64x256x32/8/3"
