#!/usr/bin/env bash
# Builds NVIDIA CUTLASS's Ampere mma.sync TF32 GEMM (cutlass_tf32.cu) in several configurations,
# one shared library each, for the probe plugin cutlass_reference.py. Needs nvcc and a CUTLASS
# checkout (headers only): bash reproduce/cutlass-reference.sh CUTLASS_DIR [OUT_DIR]
# OUT_DIR defaults to .cache/cutlass-reference, where the plugin looks.
set -euo pipefail
cutlass=${1:?usage: cutlass-reference.sh CUTLASS_DIR [OUT_DIR]}
out=${2:-.cache/cutlass-reference}
here=$(cd "$(dirname "$0")" && pwd)
[ -f "$cutlass/include/cutlass/gemm/device/gemm.h" ] || { echo "no CUTLASS headers under $cutlass/include" >&2; exit 2; }
mkdir -p "$out"
# name  TB_M TB_N TB_K  W_M W_N W_K  stages (rounding: below)
configs="
128x128x16s4 128 128 16 64 64 16 4
128x128x32s3 128 128 32 64 64 32 3
128x128x32s4 128 128 32 64 64 32 4
256x128x16s3 256 128 16 64 64 16 3
128x256x16s3 128 256 16 64 64 16 3
256x128x32s3 256 128 32 64 64 32 3
"
# rounding: half_ulp = float operands compiled for compute_80 (CUTLASS adds 0x1000 to finite
# values, as stage 12 does); rn = compute_90 (cvt.rn.tf32.f32); trunc = tfloat32_t operands (no
# conversion: the tensor core drops the low 13 bits)
build() {
    local name=$1 rounding=$2; shift 2
    local arch=compute_80 operand=float
    case $rounding in rn) arch=compute_90 ;; trunc) operand=cutlass::tfloat32_t ;; esac
    nvcc -O3 -std=c++17 --expt-relaxed-constexpr -shared -Xcompiler -fPIC -I"$cutlass/include" \
        -gencode arch=$arch,code=sm_90 \
        -DTB_M=$1 -DTB_N=$2 -DTB_K=$3 -DW_M=$4 -DW_N=$5 -DW_K=$6 -DSTAGES=$7 -DOPERAND="$operand" \
        -o "$out/cutlass_${name}_${rounding}.so.tmp" "$here/cutlass_tf32.cu" 2>"$out/cutlass_${name}_${rounding}.log"
    mv "$out/cutlass_${name}_${rounding}.so.tmp" "$out/cutlass_${name}_${rounding}.so"
    # the same kernel as a cubin, for sass_loop.py cubin:PATH (its main loop, read without a GPU)
    nvcc -O3 -std=c++17 --expt-relaxed-constexpr -cubin -I"$cutlass/include" -gencode arch=$arch,code=sm_90 \
        -DTB_M=$1 -DTB_N=$2 -DTB_K=$3 -DW_M=$4 -DW_N=$5 -DW_K=$6 -DSTAGES=$7 -DOPERAND="$operand" \
        -o "$out/cutlass_${name}_${rounding}.cubin" "$here/cutlass_tf32.cu" 2>>"$out/cutlass_${name}_${rounding}.log"
    echo "built $out/cutlass_${name}_${rounding}.so"
}
while read -r name rest; do
    [ -n "$name" ] || continue
    build "$name" half_ulp $rest
    case $name in 128x128x16s4|128x128x32s3) build "$name" rn $rest; build "$name" trunc $rest ;; esac
done <<< "$configs"
# which CUTLASS: its git commit, or a CUTLASS_COMMIT file beside an exported tree
{ git -C "$cutlass" rev-parse HEAD 2>/dev/null || cat "$cutlass/CUTLASS_COMMIT" 2>/dev/null || echo unknown; } > "$out/CUTLASS_COMMIT"
