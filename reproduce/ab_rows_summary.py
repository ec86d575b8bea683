"""One kernel's rows in a reproduce/measure-ab folder (prev-N.json, new-N.json, or gzipped): per shape and
precision the best time over the rounds of each tree, prev / new (> 1: the new tree is faster),
each tree's A/A spread (round 1 / round 2), and the best % of cuBLAS of each. Prints the summary
line and the shapes that moved most.

    python reproduce/ab_rows_summary.py OUTDIR KERNEL [--shapes-file FILE] [--precision P] [> summary.md]

``--shapes-file``: only the rows of the shapes that file lists (e.g. the held-out part of a run that
also timed tuning shapes or controls; repeatable); ``--precision``: only that precision's rows.
"""
from __future__ import annotations

import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository's compare package
from compare.harness.files import open_text, run_files  # noqa: E402
from compare.harness.shapes import load_shapes_file, shape_text  # noqa: E402


def geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def _runs(outdir: str, tree: str, kernel: str) -> list[dict]:
    out = []
    for path in run_files(outdir, tree):
        with open_text(path) as f:
            out.append({(r["shape"], r["precision"]): r for r in json.load(f)["results"]
                        if r["kernel"] == kernel and r["status"] == "ok"})
    return out


def _split(config: dict):
    """A row's K split: stage 13's and the tile plans' split_k, the bandwidth paths' k_splits."""
    return config.get("split_k", config.get("k_splits"))


def summarize(outdir: str, kernel: str, only=None, precision=None) -> list[str]:
    """``only``: a set of shape texts (MxNxK) to keep; None keeps every row. ``precision``: keep
    that precision's rows only."""
    prev, new = _runs(outdir, "prev", kernel), _runs(outdir, "new", kernel)
    if not prev or not new:
        return [f"{outdir}: no prev-N.json / new-N.json of {kernel}"]
    scope = (", listed shapes only" if only is not None else "") + (f", {precision} only" if precision else "")
    keep = lambda k: (only is None or k[0] in only) and precision in (None, k[1])   # noqa: E731
    keys = sorted(filter(keep, set.intersection(*(set(r) for r in prev + new))))
    if not keys:
        return [f"{outdir}: no {kernel} row in every round{scope}"]
    best = lambda runs, k: min(r[k]["median_ms"] for r in runs)   # noqa: E731
    pct = lambda runs, k: max(r[k]["pct_cublas"] for r in runs)   # noqa: E731
    ratio = {k: best(prev, k) / best(new, k) for k in keys}
    aa = {t: [runs[0][k]["median_ms"] / runs[1][k]["median_ms"] for k in keys] for t, runs in (("prev", prev), ("new", new))
          if len(runs) > 1}
    out = [f"{outdir}: {kernel}, {len(keys)} rows, {len(prev)} + {len(new)} rounds{scope}",
           f"- prev / new time (best of each tree's rounds): geomean {geomean(ratio.values()):.4f}, "
           f"min {min(ratio.values()):.3f}, max {max(ratio.values()):.3f}; {sum(v < 0.97 for v in ratio.values())} rows "
           f"> 3% slower, {sum(v > 1.03 for v in ratio.values())} > 3% faster"]
    for t, xs in aa.items():
        out.append(f"- A/A {t} (round 1 / round 2): geomean {geomean(xs):.4f}, range {min(xs):.3f} .. {max(xs):.3f}")
    out.append(f"- % of cuBLAS (best round): prev geomean {geomean(pct(prev, k) for k in keys):.1f}, worst "
               f"{min(pct(prev, k) for k in keys):.1f}; new {geomean(pct(new, k) for k in keys):.1f}, worst "
               f"{min(pct(new, k) for k in keys):.1f}")
    out += ["", "| shape | precision | prev config | new config | prev % | new % | prev / new |", "|---|---|---|---|---:|---:|---:|"]
    for k in sorted(keys, key=lambda k: ratio[k]):
        cfg = lambda runs: f"{runs[0][k]['config'].get('tile')} split {_split(runs[0][k]['config'])}"   # noqa: E731
        out.append(f"| {k[0]} | {k[1]} | {cfg(prev)} | {cfg(new)} | {pct(prev, k):.1f} | {pct(new, k):.1f} | {ratio[k]:.3f} |")
    return out


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description="one kernel's rows of a reproduce/measure-ab folder")
    ap.add_argument("outdir")
    ap.add_argument("kernel")
    ap.add_argument("--shapes-file", action="append", help="only the shapes these files list (repeatable)")
    ap.add_argument("--precision", help="only this precision's rows")
    a = ap.parse_args()
    only = {shape_text(s) for f in a.shapes_file for s in load_shapes_file(f)} if a.shapes_file else None
    print("\n".join(summarize(a.outdir, a.kernel, only, a.precision)))
