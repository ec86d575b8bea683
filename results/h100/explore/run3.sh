#!/usr/bin/env bash
# Round 3: the two heuristic refinements after the sweep (CUDA stage 11 keeps 128x128 for long K
# unless 64-row tiles pad less; Triton counts a data-parallel wave as full on SMs or on slots).
#   bash results/h100/explore/run3.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/explore3}; mkdir -p "$out"
py=${PYTHON:-python3}
$py -m compare.outputs.variants --budget 0.2 --precision fp32 -o "$out/cuda.json" \
    --shape 128x128x262144 --shape 1024x1024x16384 --shape 1000x1000x20000 \
    --variant cuda.11_stream_k --variant cuda.11_stream_k:tile=64x128x16
$py -m compare.outputs.variants --budget 0.2 --precision tf32 -o "$out/tf32.json" \
    --shape 32x16384x4096 --shape 16384x32x2048 --variant triton.stream_k
