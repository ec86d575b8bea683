#!/usr/bin/env bash
# Round 11: after the lane-order fix (stream_k._tile_partial: max_contiguous on the wrapped
# offsets of an unhinted M- or N-contiguous operand, whose loads were ordered along K, one row
# per lane), which operand still needs its alignment copy (operands=auto / copy_a / copy_b /
# as_given) on every unaligned fp32 sweep shape, and tiles for the two worst. Tunable shapes only.
#   bash results/h100/explore/run11.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/explore11}; mkdir -p "$out"
py=${PYTHON:-python3}
V="$py -m compare.outputs.variants --budget 0.1"
$V --precision fp32 -o "$out/fp32-operands.json" \
    --shape 1021x1021x1021 --shape 2039x2039x2039 --shape 3001x2999x3003 --shape 4093x4093x4093 \
    --shape 1999x4091x1031 --shape 5003x1021x2039 --shape 2050x1030x3002 --shape 127x8191x1021 \
    --shape 257x255x65537 \
    --variant triton.stream_k --variant triton.stream_k:operands=copy_a \
    --variant triton.stream_k:operands=copy_b --variant triton.stream_k:operands=as_given 2>&1 | tail -n 8
v=()
for tile in "tile=64x64x32/4/4" "tile=64x128x16/4/4" "tile=32x128x32/4/3" "tile=64x128x32/4/3"; do
    for ops in "" "operands=copy_a" "operands=copy_b" "operands=as_given"; do
        v+=(--variant "triton.stream_k:$tile${ops:+,$ops}")
    done
done
$V --precision fp32 -o "$out/fp32-tiles.json" --shape 127x8191x1021 --shape 257x255x65537 "${v[@]}" 2>&1 | tail -n 20
$V --precision tf32 --precision tf32x3 -o "$out/tensor-operands.json" \
    --shape 127x8191x1021 --shape 257x255x65537 --shape 1021x1021x1021 --shape 2039x2039x2039 \
    --variant triton.stream_k --variant triton.stream_k:operands=as_given \
    --variant triton.stream_k:b_transpose=load 2>&1 | tail -n 8
