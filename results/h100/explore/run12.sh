#!/usr/bin/env bash
# Round 12: fp32 tiles for outputs of 65..1024 rows, with round 11's operand rule
# (COPY_MIN_FLOPS_PER_BYTE fp32 = 256): the default (128-row tiles) against 64-row 4-warp tiles,
# which waste fewer rows of a 127- or 257-row output and run two programs per SM. Tunable shapes only.
#   bash results/h100/explore/run12.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/explore12}; mkdir -p "$out"
py=${PYTHON:-python3}
$py -m compare.outputs.variants --budget 0.1 --precision fp32 -o "$out/fp32-tiles.json" \
    --shape 127x8191x1021 --shape 128x4096x11008 --shape 512x12288x4096 --shape 512x28672x8192 \
    --shape 257x255x65537 --shape 256x256x131072 --shape 256x512x131072 --shape 384x384x65536 \
    --shape 512x512x65536 --shape 128x128x262144 --shape 1000x1000x20000 --shape 1024x1024x16384 \
    --shape 1021x1021x1021 --shape 1000x1000x1000 \
    --variant triton.stream_k --variant "triton.stream_k:tile=64x128x16/4/4" \
    --variant "triton.stream_k:tile=64x64x32/4/4" 2>&1 | tail -n 8
