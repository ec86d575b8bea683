#!/usr/bin/env bash
# Round 8: tf32x3 with the TF32 big/small split taken out of the K loop (option tf32x3_split):
# Triton's built-in (in_loop) against B split by its K-major copy (b) and A and B both split
# by copies (ab), each with and without the built-in's NaN mask between the small and the big
# products (stream_k.X3_MASK_NAN). Tunable shapes only. (The round's first run also tried 2
# k-steps summed in the tensor core before the rounded add, a knob since removed: unrolled, the
# loop's loads needed 256 KB of shared memory and did not compile; round8/x3-maskFalse-flush2.json.)
#   bash results/h100/explore/run8.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/explore8}; mkdir -p "$out"
py=${PYTHON:-python3}
shapes="--shape 4096x4096x4096 --shape 2048x2048x2048 --shape 1024x1024x1024 --shape 2039x2039x2039
        --shape 3001x2999x3003 --shape 1024x13824x5120 --shape 127x8191x1021 --shape 257x255x65537
        --shape 1000x1000x20000"
for mask in True False; do
    $py -c "
import sys
import triton_kernels.stream_k as sk
sk.X3_MASK_NAN = $mask
from compare.outputs.variants import main
sys.exit(main(sys.argv[1:]))
" --budget 0.1 --precision tf32x3 -o "$out/x3-mask$mask-flush1.json" $shapes \
        --variant "triton.stream_k:tf32x3_split=in_loop" --variant "triton.stream_k:tf32x3_split=b" \
        --variant "triton.stream_k:tf32x3_split=ab"
done
