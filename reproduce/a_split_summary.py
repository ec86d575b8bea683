"""Stage 13's tf32x3 A split in shared memory against the split copy (reproduce/measure-a-split):
per run, the time of a_split=copy over a_split=smem on each shape both ran, grouped by the
default rule's side (cuda_kernels/heuristics.py A_SPLIT_SMEM_MAX_N), and what the rule's pick
gains over always copying (the tree before it) and loses against the faster of the two.

    python reproduce/a_split_summary.py RUN.json[.gz]... [--out OUT.md]
"""
from __future__ import annotations

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summary_table  # noqa: E402
from cuda_kernels.heuristics import A_SPLIT_SMEM_MAX_N  # noqa: E402

SMEM, COPY = "cuda.13_wgmma_tma[a_split=smem]", "cuda.13_wgmma_tma[a_split=copy]"


def geomean(xs):
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def speedups(doc: dict) -> list[tuple[int, int, int, float]]:
    """(M, N, K, copy time / smem time) per shape where both ran ok."""
    by: dict[str, dict] = {}
    for r in doc["results"]:
        if r["kernel"] in (SMEM, COPY) and r["status"] == "ok":
            by.setdefault(r["shape"], {})[r["kernel"]] = r
    return [(v[SMEM]["M"], v[SMEM]["N"], v[SMEM]["K"], v[COPY]["median_ms"] / v[SMEM]["median_ms"])
            for v in by.values() if len(v) == 2]


def summarize(name: str, rows: list) -> list[str]:
    out = []
    for label, sel in ((f"N <= {A_SPLIT_SMEM_MAX_N} (rule: smem)", [r for r in rows if r[1] <= A_SPLIT_SMEM_MAX_N]),
                       (f"N > {A_SPLIT_SMEM_MAX_N} (rule: copy)", [r for r in rows if r[1] > A_SPLIT_SMEM_MAX_N])):
        if not sel:
            continue
        sp = [r[3] for r in sel]
        worst = min(sel, key=lambda r: r[3])
        best = max(sel, key=lambda r: r[3])
        out.append(f"| {name} | {label} | {len(sel)} | {geomean(sp):.3f} | {sum(s < 1 for s in sp)} | "
                   f"{worst[3]:.3f} ({worst[0]}x{worst[1]}x{worst[2]}) | {best[3]:.3f} ({best[0]}x{best[1]}x{best[2]}) |")
    rule = geomean(r[3] if r[1] <= A_SPLIT_SMEM_MAX_N else 1.0 for r in rows)
    oracle = geomean(max(r[3], 1.0) for r in rows)
    out.append(f"| {name} | all: the rule's pick over always copying (the faster of the two per shape) | {len(rows)} | "
               f"{rule:.3f} ({oracle:.3f}) | | | |")
    return out


HEADER = ["| run | shapes | n | copy time / smem time, geomean | smem slower | worst | best |",
          "|---|---|---:|---:|---:|---|---|"]


def main(argv):
    summary_table.main(argv, HEADER, lambda name, doc: summarize(name, speedups(doc)))


if __name__ == "__main__":
    main(sys.argv[1:])
