"""% of cuBLAS of the configuration triton_kernels/stream_k.py's heuristic now picks, per
(shape, precision), looked up among the measured rows of first.jsonl / final.jsonl (H100) whose
resolved config (tile, decomposition, operand layouts) is exactly that pick. A shape whose pick
was not measured is listed as missing, not guessed. Run on a CPU box:
    TRITON_INTERPRET=1 python results/sweeps_triton_streamk/summarize.py
"""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
os.environ.setdefault("TRITON_INTERPRET", "1")
import torch  # noqa: E402

from compare.harness.shapes import SETS  # noqa: E402
from triton_kernels import stream_k as sk  # noqa: E402

HELDOUT = set(SETS["heldout"].shapes)
rows = []
for name in ("first.jsonl", "final.jsonl"):
    with open(os.path.join(HERE, name)) as f:
        rows += [json.loads(line) for line in f if line.strip()]


def key(c):
    return (c.get("tile"), c.get("num_warps"), c.get("num_stages"), c.get("decomposition"), c.get("operands"))


def pick(M, N, K, prec):
    A, B, C = torch.empty(M, K), torch.empty(K, N), torch.empty(M, N)
    plan = sk._Plan(A, B, C, 1.0, 0.0, prec, True, {"sms": 132})
    return key(plan.config)


out = []
for prec in ("fp32", "tf32", "tf32x3"):
    shapes = list(dict.fromkeys((r["M"], r["N"], r["K"]) for r in rows if r["precision"] == prec))
    vals, held, missing = [], [], []
    for M, N, K in shapes:
        want = pick(M, N, K, prec)
        hit = [r for r in rows if r["kernel"] == "triton.stream_k" and r["precision"] == prec and
               (r["M"], r["N"], r["K"]) == (M, N, K) and r["status"] == "ok" and key(r["config"]) == want
               and r.get("pct_cublas")]
        if not hit:
            missing.append(f"{M}x{N}x{K} ({want[0]}/{want[1]}/{want[2]} {want[3]} {want[4]})")
            continue
        pct = hit[-1]["pct_cublas"]
        (held if (M, N, K) in HELDOUT else vals).append((f"{M}x{N}x{K}", pct))
    def g(v):
        return math.exp(sum(math.log(p) for _, p in v) / len(v)) if v else float("nan")
    out.append(f"{prec}: tunable shapes measured {len(vals)}: geomean {g(vals):.0f}% of cuBLAS"
               f"{' (tf32x3 vs cuBLAS fp32)' if prec == 'tf32x3' else ''}, worst "
               f"{min(vals, key=lambda x: x[1]) if vals else '-'}; heldout measured {len(held)}: geomean "
               f"{g(held):.0f}%, worst {min(held, key=lambda x: x[1]) if held else '-'}")
    out.append("  " + ", ".join(f"{s} {p:.0f}" for s, p in vals + held))
    if missing:
        out.append(f"  pick not measured ({len(missing)}): " + "; ".join(missing))
print("\n".join(out))
