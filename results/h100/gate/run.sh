#!/usr/bin/env bash
# The GPU gate shown end to end on a GPU box (results in this folder; see README "asv and the gate").
#   bash results/h100/gate/run.sh OUTDIR
# 1. .ci/gpu on two commits of main (HEAD~1 -> HEAD): must pass.
# 2. the same again: history re-runs both commits and must keep every recorded number
#    (numeric point counts before and after).
# 3. .ci/gpu with head = a commit this script makes on top of HEAD (branch demo/slowed-cuda) in
#    which every CUDA launch runs twice: the gate must fail.
# asv is not on the GPU image: .ci/gpu --wheels .whl installs it from carried wheels (docs/asv.md).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out=${1:-/tmp/gate}; mkdir -p "$out"
export PYTHONUNBUFFERED=1 GEMM_BENCH_PRECISIONS=fp32
bench='gemm\.(SplitK|SplitKPctCublas)\.'
base=$(git rev-parse HEAD~1); head=$(git rev-parse HEAD)
if ! slow=$(git rev-parse -q --verify demo/slowed-cuda); then
    wt=$(mktemp -d); git worktree add -q "$wt" HEAD -b demo/slowed-cuda
    python3 - "$wt/cuda_kernels/registry.py" <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
old = "        for fn, grid, block, args in steps:\n            fn(grid, block, args, stream=stream)\n"
assert old in s, "launch loop not found: update this demo"
s = s.replace(old, "        for _ in range(2):  # DEMO: deliberately slowed\n    " + old.replace("\n        ", "\n            "), 1)
open(p, "w").write(s)
PY
    git -C "$wt" commit -qam "DEMO: every CUDA launch runs twice (shows the gate failing); never merge"
    slow=$(git rev-parse demo/slowed-cuda); git worktree remove --force "$wt"
fi
gpu() { bash .ci/gpu --wheels .whl --install none --quick --no-tests --bench "$bench" "$@"; }
count() { PYTHONPATH=/tmp/site:$PWD python3 -m compare.ci.asv_results count --commit "$1"; }

gpu --base "$base" --head "$head" > "$out/1-two-commits.log" 2>&1; rc1=$?
{ count "$base"; count "$head"; } > "$out/2-counts-before.txt" 2>&1
gpu --base "$base" --head "$head" > "$out/2-rerun.log" 2>&1; rc2=$?
{ count "$base"; count "$head"; } > "$out/2-counts-after.txt" 2>&1
gpu --base "$head" --head "$slow" > "$out/3-slowed.log" 2>&1; rc3=$?
printf 'two commits: exit %s (want 0)\nre-run: exit %s (want 0)\nslowed head: exit %s (want non-zero)\n' \
    "$rc1" "$rc2" "$rc3" | tee "$out/summary.txt"
echo "--- counts before"; cat "$out/2-counts-before.txt"; echo "--- counts after"; cat "$out/2-counts-after.txt"
tail -n 15 "$out/3-slowed.log"
