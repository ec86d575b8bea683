#!/usr/bin/env bash
# Round 4: how a row-major (N-major) B reaches wgmma at tf32/tf32x3 (option b_transpose): the
# K-major copy before the GEMM (the default for M > 128), the compiler's 4-byte async copies
# ("load", the default for M <= 128), a register pass ("regs") or the swapped product ("swap").
# The shapes are the tf32 sweep's worst (results/h100/sweep/tensor-*.json) plus the headlines.
#   bash results/h100/explore/run4.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/explore4}; mkdir -p "$out"
py=${PYTHON:-python3}
v() { for b in "$@"; do echo --variant "triton.stream_k${b:+:b_transpose=$b}"; done; }
$py -m compare.outputs.variants --budget 0.15 --precision tf32 -o "$out/tf32.json" \
    --shape 1000x1000x1000 --shape 1024x1024x1024 --shape 1536x1536x1536 --shape 2048x2048x2048 \
    --shape 512x12288x4096 --shape 1024x5120x13824 --shape 128x4096x11008 --shape 48x12288x4096 \
    --shape 64x4096x65536 --shape 256x512x131072 --shape 1024x1024x16384 --shape 1021x1021x1021 \
    --shape 4096x4096x4096 --shape 8192x8192x8192 \
    $(v "" copy load swap)   # the round also ran b_transpose=regs (B * 1.0 unswapped), since removed: its rows are in tf32.json
$py -m compare.outputs.variants --budget 0.15 --precision tf32x3 -o "$out/tf32x3.json" \
    --shape 1024x1024x1024 --shape 64x8192x28672 --shape 48x12288x4096 --shape 128x4096x11008 \
    --shape 512x12288x4096 --shape 256x512x131072 --shape 4096x4096x4096 \
    $(v "" copy load swap)
