#!/usr/bin/env bash
# Round 13: the stage kernels triton.tiled and triton.split_k_atomic on unaligned fp32 shapes,
# before and after _gemm.wrapped_range declared their wrapped offsets contiguous (before, B's
# loads walked K, one row per lane, wherever N is not a multiple of 16). "before" is this tree
# with that one line taken out, in a scratch copy.
#   bash results/h100/explore/run13.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/explore13}; mkdir -p "$out"
py=${PYTHON:-python3}
args=(--budget 0.1 --precision fp32 --shape 1000x1000x1000 --shape 1021x1021x1021 --shape 127x8191x1021
      --shape 2039x2039x2039 --variant triton.tiled --variant triton.split_k_atomic)
timeout 120 $py -m compare.outputs.variants "${args[@]}" -o "$out/after.json" 2>&1 | tail -n 6
before=$(mktemp -d)
cp -r . "$before/repo"
sed -i 's/^    return tl.max_contiguous(offs, BLOCK)$/    return offs/' "$before/repo/triton_kernels/_gemm.py"
grep -c "return tl.max_contiguous(offs, BLOCK)" "$before/repo/triton_kernels/_gemm.py"
(cd "$before/repo" && timeout 120 $py -m compare.outputs.variants "${args[@]}" -o "$out/before.json" 2>&1 | tail -n 6)
