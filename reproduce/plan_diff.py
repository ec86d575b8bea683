"""Which rows of the named shape sets a heuristic change moves: triton.stream_k's plan (its
``config``) for every shape of every named set and precision, resolved on the CPU as on an H100
(132 SMs, Hopper with Gluon assumed, so the mode=ws rule is the plan's), in an older tree and in
this one, and the rows that differ. Those are the rows an A/B has to time; the rest launch the
same kernels.

    python reproduce/plan_diff.py PREV_TREE          # PREV_TREE: git archive REV | tar -x -C DIR

Prints one line per differing (set, shape, precision) with the config keys that changed. Exit
status: 0 (differences or none), 2 on bad input.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Run inside each tree: every named set's shapes x precisions, the plan's config as JSON. CPU
# tensors of the shape (never launched); ws_unsupported is made to answer "supported" wherever the
# strides allow TMA, as it would on an H100 with Gluon.
_DUMP = r'''
import json, sys, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, sys.argv[1])
import torch
from compare.harness import shapes as S
import triton_kernels.stream_k_plan as plan
import triton_kernels.stream_k_gluon as ws
import triton_kernels.stream_k as sk
def hopper(A, B, C):
    for t in (A, B):
        if (t.stride(0) * 4) % 16:
            return "TMA needs 16-byte rows"
    return ""
plan.ws_unsupported = ws.ws_unsupported = hopper
out = {}
for name, shapes in S.SHAPE_SETS.items():
    if name == "all":
        continue
    for M, N, K in shapes:
        for p in ("fp32", "tf32", "tf32x3"):
            A, B, C = (torch.empty_strided(s, (s[1], 1)) for s in ((M, K), (K, N), (M, N)))
            try:
                c = sk._Plan(A, B, C, 1.0, 0.0, p, True, {"sms": 132}).config
            except Exception as e:
                c = {"error": str(e)[:120]}
            out[f"{name}|{M}x{N}x{K}|{p}"] = {k: str(v) for k, v in c.items()}
print(json.dumps(out))
'''


def plans(tree: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _DUMP, tree], capture_output=True, text=True, cwd=tree,
                         env={k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"})
    if out.returncode != 0:
        raise RuntimeError(f"{tree}: {out.stderr[-1500:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or not os.path.isdir(os.path.join(argv[0], "triton_kernels")):
        print(__doc__, file=sys.stderr)
        return 2
    old, new = plans(os.path.abspath(argv[0])), plans(ROOT)
    moved = 0
    for key, c in new.items():
        if key in old and old[key] != c:
            moved += 1
            diff = {k: (old[key].get(k), v) for k, v in c.items() if old[key].get(k) != v}
            print(key, "; ".join(f"{k}: {a} -> {b}" for k, (a, b) in diff.items()))
    print(f"{moved} of {len(new)} (set, shape, precision) rows plan differently "
          f"({sum(k not in old for k in new)} new to this tree)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
