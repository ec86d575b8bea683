"""Stage 13's bulk build for B's unaligned rows (reproduce/measure-b-bulk): per run file and
precision, every shape's % of cuBLAS for the default and each b_unaligned build, and the default
against the build the rule before it picked (cp_async where one row of TM-row tiles covers M and
N >= 32, else pad; TM from the default row's tile): time ratio old / default (> 1: the default is
faster), geomean, min, max, and each side's geomean and worst % of cuBLAS.

    python reproduce/b_bulk_summary.py RUN.json[.gz] ... [> summary.md]
"""
from __future__ import annotations

import collections
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository's compare package
from compare.harness.files import open_text  # noqa: E402

KERNEL = "cuda.13_wgmma_tma"
BUILDS = ("bulk", "cp_async", "pad")


def previous_rule(M: int, N: int, tm: int) -> str:
    """b_unaligned as chosen before the bulk build (cuda_kernels/heuristics.py at 43f0492)."""
    return "cp_async" if M <= tm and N >= 32 else "pad"


def _geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def summarize(path: str) -> list[str]:
    with open_text(path) as f:
        rows = json.load(f)["results"]
    by: dict = collections.defaultdict(dict)
    for r in rows:
        if r["status"] == "ok":
            by[(r["shape"], r["precision"])][r["kernel"]] = r
    out = [f"## {path}", ""]
    for pr in ("tf32", "tf32x3"):
        keys = sorted((k for k in by if k[1] == pr and KERNEL in by[k]),
                      key=lambda k: tuple(int(x) for x in k[0].split("x")))
        if not keys:
            continue
        out += [f"{pr}: % of cuBLAS {'tf32' if pr == 'tf32' else 'fp32'}", "",
                "| shape | tile (default) | default | " + " | ".join(BUILDS) + " | previous rule | previous / default time |",
                "|---|---|---:|" + "---:|" * len(BUILDS) + "---|---:|"]
        ratios, new, old = [], [], []
        for k in keys:
            v = by[k]
            M, N, _ = (int(x) for x in k[0].split("x"))
            d = v[KERNEL]
            tile = d["config"]["tile"]
            prev = previous_rule(M, N, int(tile.split("x")[0]))
            p = v.get(f"{KERNEL}[b_unaligned={prev}]")
            cells = [f"{v[f'{KERNEL}[b_unaligned={b}]']['pct_cublas']:.1f}" if f"{KERNEL}[b_unaligned={b}]" in v
                     else "-" for b in BUILDS]
            ratio = p["median_ms"] / d["median_ms"] if p else None
            if p:
                ratios.append(ratio)
                new.append(d["pct_cublas"])
                old.append(p["pct_cublas"])
            out.append(f"| {k[0]} | {tile} | {d['pct_cublas']:.1f} | " + " | ".join(cells)
                       + f" | {prev} | {f'{ratio:.2f}' if ratio else '-'} |")
        if ratios:
            out += ["", f"{pr}, {len(ratios)} shapes: previous / default time geomean {_geomean(ratios):.3f}, min "
                        f"{min(ratios):.2f}, max {max(ratios):.2f}; % of cuBLAS geomean {_geomean(new):.1f} (default) "
                        f"against {_geomean(old):.1f} (previous rule), worst {min(new):.1f} against {min(old):.1f}", ""]
    return out


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print("\n".join(summarize(p)))
