#!/usr/bin/env bash
# Measures the CUTLASS mma.sync TF32 references (built by cutlass-reference.sh) beside stage 12 and
# Triton's mma.sync code, truncated (x.trunc) and rounded like stage 12 (x.rna), on one GPU:
#   bash reproduce/cutlass-measure.sh OUT_DIR [RUNS]
# OUT_DIR/check.json: odd shapes (aligned, and one CUTLASS must refuse); OUT_DIR/runR.json: 4096³
# and 8192³, R = 1..RUNS (default 2). DISABLE_MMA_V3=1 gives the Triton kernels the sm_80 mma.sync
# lowering (every run records it in environment.triton_env); cuBLAS and CUDA kernels ignore it.
set -euo pipefail
out=${1:?usage: cutlass-measure.sh OUT_DIR [RUNS]}
runs=${2:-2}
mkdir -p "$out"
kernels=(--kernel cuda.12_tf32_mma --kernel x.rna --kernel x.trunc)
for f in .cache/cutlass-reference/cutlass_*.so; do
    b=$(basename "$f" .so); b=${b#cutlass_}
    kernels+=(--kernel "x.cutlass.${b%%_*}.${b#*_}")
done
plugins=(--plugin reproduce/cutlass_reference.py --plugin docs/examples/tf32_mma_rounded.py)
export DISABLE_MMA_V3=1
# exit 1 expected here: x.rna refuses K % 32 != 0, CUTLASS refuses N % 4 != 0; the rows say why
python -m compare "${plugins[@]}" "${kernels[@]}" --precision tf32 --shape 1000x1004x1020 \
    --shape 1001x1001x1001 --shape 4099x4100x4104 --format json -o "$out/check.json" || true
for r in $(seq 1 "$runs"); do
    python -m compare "${plugins[@]}" "${kernels[@]}" --precision tf32 --shape 4096 --shape 8192 \
        --format json -o "$out/run$r.json"
done
