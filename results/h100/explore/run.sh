#!/usr/bin/env bash
# Why the stage-11 kernels fall behind cuBLAS on their worst sweep shapes (results/h100/sweep):
# option variants next to cuBLAS (python -m compare.outputs.variants) and Nsight Compute counters of the
# default configurations and cuBLAS (python -m compare.outputs.profile). On a GPU box:
#   bash results/h100/explore/run.sh OUTDIR [SECTION...]   (sections: triton-fp32 tensor cuda ncu; default all)
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/explore}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
V="$py -m compare.outputs.variants --budget ${BUDGET:-0.3}"
sections=${*:2}; sections=${sections:-"triton-fp32 tensor cuda ncu"}
want() { [[ " $sections " == *" $1 "* ]]; }

# Triton fp32: programs per SM in the stream-K grid (1 today), smaller tiles on quantized M.
want triton-fp32 && $V --precision fp32 -o "$out/triton-fp32.json" \
   --shape 64x8192x28672 --shape 64x4096x65536 --shape 48x12288x4096 --shape 4096x64x4096 \
   --shape 127x8191x1021 --shape 257x255x65537 --shape 128x128x262144 --shape 320x320x81920 \
   --shape 1021x1021x1021 --shape 2000x2000x2000 \
   --variant triton.stream_k --variant triton.stream_k:grid=264 --variant triton.stream_k:grid=396 \
   --variant triton.stream_k:operands=copy --variant "triton.stream_k:tile=64x128x32/4/3,grid=396" \
   --variant "triton.stream_k:tile=32x128x32/4/3,grid=528" 2>&1 | tail -n 12
# Triton tf32 / tf32x3 on the long-K and small-output shapes.
want tensor && $V --precision tf32 --precision tf32x3 -o "$out/triton-tensor.json" \
   --shape 256x512x131072 --shape 1000x1000x20000 --shape 1024x1024x1024 --shape 512x12288x4096 \
   --shape 127x8191x1021 --shape 64x4096x65536 \
   --variant triton.stream_k --variant triton.stream_k:grid=264 \
   --variant "triton.stream_k:tile=64x128x32/4/4,grid=264" --variant "triton.stream_k:tile=128x64x32/4/4,grid=264" \
   --variant "triton.stream_k:tile=64x64x32/4/4,grid=396" 2>&1 | tail -n 14
# CUDA fp32: the tile on the worst shapes (no 64x64 tile exists yet), the stream-K grid.
want cuda && $V --precision fp32 -o "$out/cuda-fp32.json" \
   --shape 64x64x1048576 --shape 128x128x262144 --shape 127x8191x1021 --shape 257x255x65537 \
   --shape 1021x1021x1021 --shape 320x320x81920 \
   --variant cuda.11_stream_k --variant cuda.11_stream_k:tile=64x128x16 --variant cuda.11_stream_k:tile=128x64x16 \
   --variant cuda.11_stream_k:tile=32x128x16 --variant cuda.11_stream_k:sk_grid=132 \
   --variant cuda.11_stream_k:sk_grid=528 2>&1 | tail -n 12
# Counters: cuBLAS beside each family's default on three of the worst shapes.
if want ncu && command -v ncu >/dev/null; then
    $py -m compare.outputs.profile --kernel cublas --kernel cuda.11_stream_k --kernel triton.stream_k --precision fp32 \
        --shape 64x8192x28672 --shape 257x255x65537 --shape 64x64x1048576 --no-time \
        --format json -o "$out/profile-fp32.json" --raw-dir "$out/raw-fp32" 2>&1 | tail -n 20
    $py -m compare.outputs.profile --kernel cublas --kernel triton.stream_k --precision tf32 \
        --shape 256x512x131072 --shape 1024x1024x1024 --no-time \
        --format json -o "$out/profile-tf32.json" --raw-dir "$out/raw-tf32" 2>&1 | tail -n 20
fi
