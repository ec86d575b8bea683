"""The measurements behind triton_kernels/stream_k.py's heuristic (run on the GPU box):

    python results/sweeps_triton_streamk/bench.py OUT.jsonl [--budget-s 380] [--plan NAME]

Every point goes through compare.harness.runner.run_kernel (NaN-poisoned C, float64 check, the one
timing engine); cuBLAS is measured in the same process for every (shape, precision). One JSON
object per line, appended as it is measured (not an atomic write, on purpose: a run cut off by
its time limit keeps what it had).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

# Run as a script from anywhere: the repository root (two levels up) first on the path.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import triton_kernels  # noqa: F401  (registers the family)
import triton_kernels.stream_k as sk  # noqa: F401  (registers stream_k until __init__ imports it)
from compare.harness import registry
from compare.harness.problem import Problem
from compare.harness.runner import fill_pct_cublas, run_kernel
from compare.harness.shapes import shape_set

PLANS = {
    # First look: ~12 shapes from the tunable sets, all three precisions, stream_k's heuristic
    # (and forced data-parallel where the heuristic chose stream-K), atomic on fp32.
    "first": dict(
        shapes=[(4096, 4096, 4096), (1000, 1000, 1000), (3000, 5000, 2000), (16, 8192, 8192), (1021, 1021, 1021),
                (3001, 2999, 3003), (32, 4096, 4096), (512, 12288, 4096), (256, 256, 131072), (1024, 1024, 16384),
                (4096, 14336, 4096), (2048, 2048, 2048)],
        precisions=["fp32", "tf32", "tf32x3"],
        variants=[("triton.stream_k", {}), ("triton.stream_k", {"sk": "dp"})],
        atomic_fp32=True,
        extra={"fp32": [("triton.stream_k", {"tile": "128x128x16/8/4"}), ("triton.stream_k", {"tile": "64x128x32/4/4"})],
               "tf32": [("triton.stream_k", {"tile": "128x256x32/8/3"})]},
    ),
    # The heuristic on 33 shapes of the tunable sets plus the 8 held-out ones (never tuned on),
    # with the alternatives the heuristic's open questions need: tf32/tf32x3 B through a K-major
    # copy where the heuristic reads it as given, and the atomic fixup for fp32.
    "final": dict(
        shapes=[(1000, 1000, 1000), (1024, 1024, 1024), (1536, 1536, 1536), (2048, 2048, 2048), (3000, 3000, 3000),
                (4096, 4096, 4096), (5000, 5000, 5000), (8192, 8192, 8192),
                (1021, 1021, 1021), (2039, 2039, 2039), (3001, 2999, 3003), (4093, 4093, 4093), (1999, 4091, 1031),
                (5003, 1021, 2039), (127, 8191, 1021), (2050, 1030, 3002),
                (16, 11008, 4096), (32, 4096, 4096), (64, 8192, 28672), (128, 4096, 11008), (512, 12288, 4096),
                (1024, 5120, 13824), (2048, 11008, 4096), (4096, 14336, 4096),
                (1, 65536, 8192), (16, 8192, 8192), (64, 4096, 65536), (4096, 64, 4096), (8192, 16, 8192),
                (256, 256, 131072), (257, 255, 65537), (1024, 1024, 16384), (64, 64, 1048576),
                # heldout (compare.harness.shapes): measured, never tuned on
                (1800, 1800, 1800), (3072, 1536, 2560), (1537, 2049, 1023), (24, 14336, 4096),
                (96, 5120, 13824), (320, 320, 81920), (6000, 1000, 3000), (4097, 4095, 255)],
        precisions=["fp32", "tf32", "tf32x3"],
        variants=[("triton.stream_k", {})],
        atomic_fp32=True,
        extra={"tf32": [("triton.stream_k", {"operands": "k_major_b"})],
               "tf32x3": [("triton.stream_k", {"operands": "k_major_b"})]},
        shapes_outer=True,
    ),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--budget-s", type=float, default=380)
    ap.add_argument("--plan", default="first")
    ap.add_argument("--set", default=None, help="a compare.harness.shapes set instead of the plan's shapes")
    args = ap.parse_args(argv)
    plan = PLANS[args.plan]
    shapes = shape_set(args.set) if args.set else plan["shapes"]
    t0 = time.time()
    cublas = registry.get("cublas")
    kw = {"budget_s": 0.25, "min_samples": 5}
    if plan.get("shapes_outer"):
        points = [(s, prec) for s in shapes for prec in plan["precisions"]]
    else:
        points = [(s, prec) for prec in plan["precisions"] for s in shapes]
    cublas_rows = {}
    with open(args.out, "w") as f:
        for (M, N, K), prec in points:
            if True:
                if time.time() - t0 > args.budget_s:
                    print("budget spent; stopping", file=sys.stderr)
                    return 0
                p = Problem(M, N, K, precision=prec)
                base = p if prec != "tf32x3" else p.with_(precision="fp32")
                if base not in cublas_rows:
                    cublas_rows[base] = run_kernel(cublas, base, measure_kw=kw)
                rows = [cublas_rows[base]]
                seen = set()
                variants = list(plan["variants"])
                if prec == "fp32" and plan.get("atomic_fp32"):
                    variants.append(("triton.stream_k_atomic", {}))
                variants += [(n, o) for n, o in plan.get("extra", {}).get(prec, [])]
                for name, opts in variants:
                    k = registry.get(name)
                    r = run_kernel(k, p, measure_kw=kw, options=k.parse_options(opts))
                    key = (name, json.dumps({kk: v for kk, v in r.config.items() if kk != "chosen_by"}, sort_keys=True))
                    if key in seen:
                        continue
                    seen.add(key)
                    r.config["options"] = opts
                    rows.append(r)
                fill_pct_cublas(rows)
                for r in rows:
                    d = r.as_dict()
                    f.write(json.dumps(d) + "\n")
                    f.flush()
                    pct = f"{r.pct_cublas:.0f}%" if r.pct_cublas else "-"
                    print(f"{prec:6s} {r.shape:18s} {r.kernel:24s} {r.status:6s} {r.median_ms or 0:9.4f} ms "
                          f"{pct:>5s} {r.config.get('tile', '')} {r.config.get('decomposition', '')} "
                          f"{r.config.get('sk_programs', '')} {r.config.get('operands', '')} {r.reason[:80]}",
                          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
