#!/usr/bin/env bash
# Round 8, third part: tf32x3's swapped product (C^T = B^T A^T, M <= 512) with A^T, the
# shared-memory operand, split once by a copy of A (tf32x3_split=a) against the built-in
# (in_loop), which splits it and writes both parts back to shared memory every k-step; and the
# same forced on two long-K outputs of ~1000^2. Tunable shapes only.
#   bash results/h100/explore/run8c.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/explore8}; mkdir -p "$out"
py=${PYTHON:-python3}
$py -m compare.outputs.variants --budget 0.1 --precision tf32x3 -o "$out/x3-swap.json" \
    --shape 512x12288x4096 --shape 512x28672x8192 --shape 128x4096x11008 --shape 64x8192x28672 \
    --shape 48x12288x4096 --shape 64x4096x65536 --shape 4096x64x4096 --shape 384x384x65536 \
    --shape 256x512x131072 --shape 128x128x262144 --shape 1000x1000x20000 --shape 1024x1024x16384 \
    --variant "triton.stream_k:tf32x3_split=in_loop" --variant "triton.stream_k:tf32x3_split=a"
