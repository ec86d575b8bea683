#!/usr/bin/env bash
# Second round (after programs-per-SM, the chunked/laned fixups, the 64x64 and few-tile CUDA
# tiles and the copy cost model): the new defaults on the worst shapes, next to the operand
# modes the copy rule chooses between. On a GPU box:
#   bash results/h100/explore/run2.sh OUTDIR [SECTION...]   (sections: tests fp32 tensor cuda; default all)
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/explore2}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
V="$py -m compare.outputs.variants --budget ${BUDGET:-0.3}"
sections=${*:2}; sections=${sections:-"tests fp32 tensor cuda"}
want() { [[ " $sections " == *" $1 "* ]]; }

want tests && $py -m pytest -q -m gpu -p no:cacheprovider tests/test_triton_stream_k.py tests/test_gpu_cuda.py \
    -k "stream_k" 2>&1 | tail -n 5
want fp32 && $V --precision fp32 -o "$out/fp32.json" \
   --shape 257x255x65537 --shape 127x8191x1021 --shape 1021x1021x1021 --shape 2039x2039x2039 \
   --shape 2000x2000x2000 --shape 5003x1021x2039 --shape 2050x1030x3002 --shape 64x64x1048576 \
   --shape 128x128x262144 --shape 64x8192x28672 --shape 4096x64x4096 --shape 320x320x81920 \
   --variant triton.stream_k --variant triton.stream_k:operands=as_given --variant triton.stream_k:operands=direct \
   2>&1 | tail -n 8
want tensor && $V --precision tf32 --precision tf32x3 -o "$out/tensor.json" \
   --shape 256x512x131072 --shape 512x512x65536 --shape 1000x1000x20000 --shape 1024x1024x1024 \
   --shape 512x12288x4096 --shape 1021x1021x1021 --shape 127x8191x1021 --shape 64x4096x65536 \
   --shape 257x255x65537 --shape 128x128x262144 \
   --variant triton.stream_k --variant triton.stream_k:operands=as_given --variant triton.stream_k:operands=k_major_b \
   2>&1 | tail -n 10
want cuda && $V --precision fp32 -o "$out/cuda.json" \
   --shape 64x64x1048576 --shape 128x128x262144 --shape 127x8191x1021 --shape 257x255x65537 \
   --shape 1021x1021x1021 --shape 320x320x81920 --shape 1000x1000x1000 --shape 1024x1024x1024 \
   --shape 2000x2000x2000 --shape 256x256x131072 \
   --variant cuda.11_stream_k 2>&1 | tail -n 6
