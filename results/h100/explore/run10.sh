#!/usr/bin/env bash
# Round 10: Triton fp32's two worst sweep shapes (rows unaligned in both operands). The
# same-orientation alignment copies now go through a row copy (_operands._copy_rows_kernel,
# no shared-memory transpose, 16-byte stores); which operand to copy (operands=copy_a /
# copy_b / as_given: 4-byte loads for the operand not copied) crossed with tiles that waste
# fewer of the 127 / 257 rows; Nsight Compute on the default and on 4-byte loads.
#   bash results/h100/explore/run10.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/explore10}; mkdir -p "$out"
py=${PYTHON:-python3}
v=()
for tile in "" "tile=64x64x32/4/4" "tile=64x128x16/4/4" "tile=32x128x32/4/3"; do
    for ops in "" "operands=copy_a" "operands=copy_b" "operands=as_given"; do
        opt=$(echo "$tile,$ops" | sed 's/^,//; s/,$//')
        v+=(--variant "triton.stream_k${opt:+:$opt}")
    done
done
$py -m compare.outputs.variants --budget 0.1 --precision fp32 -o "$out/fp32-operands.json" \
    --shape 127x8191x1021 --shape 257x255x65537 "${v[@]}" 2>&1 | tail -n 40
if command -v ncu >/dev/null; then
    mkdir -p "$out/raw-default" "$out/raw-as_given"
    $py -m compare.outputs.profile --kernel cublas --kernel triton.stream_k --precision fp32 \
        --shape 257x255x65537 --shape 127x8191x1021 --no-time --format json -o "$out/profile-default.json" \
        --raw-dir "$out/raw-default" 2>&1 | tail -n 8
    $py -m compare.outputs.profile --kernel triton.stream_k --precision fp32 --opt operands=as_given \
        --opt tile=64x128x16/4/4 --shape 257x255x65537 --shape 127x8191x1021 --no-time --format json \
        -o "$out/profile-as_given.json" --raw-dir "$out/raw-as_given" 2>&1 | tail -n 8
fi
