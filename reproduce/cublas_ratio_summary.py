"""Kernels (and their variants, as compare labels them) against cuBLAS in the same run: per shape
each one's % of cuBLAS -- tf32 rows against cuBLAS tf32, fp32 and tf32x3 rows against cuBLAS fp32
-- then per kernel and precision the geomean, the worst and the rows under 100%. Each FILE is one
run (python -m compare ... --format json, or .json.gz) and is compared with its own cuBLAS rows.
--rule KERNEL adds stage 13's path rule as a row of its own: per shape the time of
KERNEL[path=ffma] where cuda_kernels.heuristics.wgmma_path picks ffma, else of KERNEL[path=tile].

    python reproduce/cublas_ratio_summary.py FILE [FILE ...] [--rule cuda.13_wgmma_tma]

Exit status 0; 2 on bad input (a missing file, no cuBLAS row of a precision a kernel ran).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository's packages
from compare.harness.files import open_text  # noqa: E402
from cuda_kernels.heuristics import wgmma_path  # noqa: E402


def _baseline(precision: str) -> str:
    return "tf32" if precision == "tf32" else "fp32"


def ratios(paths: list[str], rule: str | None = None) -> dict:
    """{(kernel, precision): {shape: cuBLAS time / kernel time}} over every timed row of ``paths``."""
    out: dict = {}
    for path in paths:
        with open_text(path) as f:
            rows = [r for r in json.load(f)["results"] if r.get("status") == "ok" and r.get("median_ms")]
        cublas = {(r["shape"], r["precision"]): r["median_ms"] for r in rows if r["kernel"] == "cublas"}
        timed = {(r["kernel"], r["precision"], r["shape"]): r for r in rows if r["kernel"] != "cublas"}
        for (kernel, precision, shape), r in timed.items():
            base = cublas.get((shape, _baseline(precision)))
            if base is None:
                raise ValueError(f"{path}: no cuBLAS {_baseline(precision)} row for {shape}")
            out.setdefault((kernel, precision), {})[shape] = base / r["median_ms"]
            if rule and kernel == f"{rule}[path=tile]":
                pick = wgmma_path(r["M"], r["N"], r["K"], precision)
                other = timed.get((f"{rule}[path=ffma]", precision, shape))
                if pick == "ffma" and other is None:
                    raise ValueError(f"{path}: the rule picks ffma at {shape} {precision}; no {rule}[path=ffma] row")
                chosen = other if pick == "ffma" else r
                out.setdefault((f"{rule} by its path rule", precision), {})[shape] = base / chosen["median_ms"]
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--rule", help="a kernel run as [path=tile] and [path=ffma] variants")
    args = ap.parse_args(argv)
    try:
        table = ratios(args.files, args.rule)
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    keys = sorted(table)
    shapes = sorted({s for v in table.values() for s in v}, key=lambda s: [int(x) for x in s.split("x")])
    print("| shape | " + " | ".join(f"{k} {p}" for k, p in keys) + " |")
    print("|---|" + "---:|" * len(keys))
    for s in shapes:
        print(f"| {s} | " + " | ".join(f"{100 * table[k][s]:.1f}" if s in table[k] else "-" for k in keys) + " |")
    print()
    for k in keys:
        xs = list(table[k].values())
        worst = min(table[k], key=table[k].get)
        print(f"- {k[0]} {k[1]}: {len(xs)} shapes, geomean {100 * math.exp(sum(map(math.log, xs)) / len(xs)):.1f}% "
              f"of cuBLAS, worst {100 * table[k][worst]:.1f}% ({worst}), {sum(x < 1 for x in xs)} under 100%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
