#!/usr/bin/env bash
# Round 6: (a) stream-K grids that are a multiple of the tile count on few-tile long-K shapes,
# so every tile's k-th range starts at the same K offset and tiles that share A rows or B
# columns read them from L2 at the same time (DRAM bytes by ncu next to it); (b) the swapped
# product below 32 rows and at N = 64 (tf32, tf32x3). Tunable shapes only.
#   bash results/h100/explore/run6.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/explore6}; mkdir -p "$out"
py=${PYTHON:-python3}
V="$py -m compare.outputs.variants --budget 0.15"
P="--precision tf32 --precision tf32x3 --precision fp32"
$V $P -o "$out/grid128.json" --shape 1000x1000x20000 --shape 1024x1024x16384 --shape 256x512x131072 \
    --shape 512x512x65536 --variant triton.stream_k --variant triton.stream_k:grid=128 2>&1 | tail -n 40
$V $P -o "$out/grid126.json" --shape 384x384x65536 \
    --variant triton.stream_k --variant triton.stream_k:grid=126 2>&1 | tail -n 12
$V $P -o "$out/grid256.json" --shape 64x4096x65536 \
    --variant triton.stream_k --variant triton.stream_k:grid=256 2>&1 | tail -n 12
$V --precision tf32 --precision tf32x3 -o "$out/swap_small.json" --shape 16x8192x8192 --shape 32x4096x4096 \
    --shape 8x32768x8192 --shape 32x16384x4096 --shape 1x65536x8192 --shape 4096x64x4096 \
    --variant triton.stream_k --variant triton.stream_k:b_transpose=swap 2>&1 | tail -n 40
if command -v ncu >/dev/null; then
    for g in default 128; do
        opt=(); [ $g = default ] || opt=(--opt "grid=$g")
        $py -m compare.outputs.profile --kernel triton.stream_k --precision tf32 "${opt[@]}" \
            --shape 1024x1024x16384 --shape 256x512x131072 --no-time \
            --format json -o "$out/ncu-tf32-grid$g.json" 2>&1 | tail -n 8
    done
fi
