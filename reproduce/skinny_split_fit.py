"""The fit behind stage 11's skinny_n K-split constants (heuristics.SKINNY_COST): for each
(tail_weight, range_fill_chunks, max_waves) on a grid, the K range count decompose.skinny_split
picks on each shape of a forced-split run, restricted to the counts that run timed, and the
measured % of cuBLAS fp32 at that pick. Prints the grid's best settings, the one-wave model's
(no tail) and the best measured split per shape (the oracle).

    python reproduce/skinny_split_fit.py results/h200/skinny-split/waves-n.json.gz

The run: python -m compare --shapes-file FILE --variant "cuda.11_stream_k:k_splits=1|2|...".
Exit status: 0, 2 on bad input.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from compare.harness.files import open_text  # noqa: E402

SMS = 132


def read(path: str) -> list[dict]:
    """The rows of a compare JSON run (.json or .json.gz)."""
    with open_text(path) as f:
        return json.load(f)["results"]


def measured(path: str) -> dict:
    """{shape: {K ranges: % of cuBLAS}} of the stage-11 rows, against the cuBLAS row of the same shape."""
    return percentages(read(path))


def percentages(rows: list[dict]) -> dict:
    cublas = {r["shape"]: r["median_ms"] for r in rows if r["kernel"] == "cublas" and r["status"] == "ok"}
    out: dict = {}
    for r in rows:
        if r["kernel"].startswith("cuda.11_stream_k") and r["status"] == "ok" and r["shape"] in cublas:
            out.setdefault(r["shape"], {})[r["config"]["k_splits"]] = 100.0 * cublas[r["shape"]] / r["median_ms"]
    return out


def block_rows(rows: list[dict]) -> dict:
    """{shape: rows of A a block computed} from the stage-11 rows' config ("tile": "ROWSxNB"): the
    build the run measured, which a later tree may have changed."""
    return {r["shape"]: int(r["config"]["tile"].split("x")[0]) for r in rows
            if r["kernel"].startswith("cuda.11_stream_k") and r["status"] == "ok" and "tile" in (r.get("config") or {})}


def pick(shape: str, cost, timed: set, rows: int = 0) -> int:
    """skinny_split's choice for the shape, over the K range counts in ``timed`` only, with blocks of
    ``rows`` rows (0: this tree's build for the shape)."""
    from compare.families import decompose
    from cuda_kernels import heuristics as h
    M, N, K = map(int, shape.split("x"))
    blocks = -(-M // (rows or h.skinny_rows(h.skinny_build(M, N, K, K % 4 == 0, SMS))))
    cands = decompose.skinny_split_candidates(blocks, K, k_align=h.SKINNY_SPLIT_ALIGN, sms=SMS,
                                              stream_bytes=4 * (M * K + K * N), partial_bytes=4 * M * N, cost=cost)
    return decompose.least_modeled([c for c in cands if c[1] in timed], cost.min_gain)[0]


def main(argv=None) -> int:
    from cuda_kernels import heuristics as h
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        rows = read(argv[0])
        meas, tiles = percentages(rows), block_rows(rows)
    except (OSError, ValueError, KeyError) as e:
        print(f"skinny_split_fit: {argv[0]}: {e}", file=sys.stderr)
        return 2
    if not meas:
        print(f"skinny_split_fit: {argv[0]}: no stage 11 rows with a cuBLAS row beside them", file=sys.stderr)
        return 2

    def score(cost):
        logs = [math.log(mm[pick(s, cost, set(mm), tiles.get(s, 0))]) for s, mm in meas.items()]
        return math.exp(sum(logs) / len(logs)), math.exp(min(logs)), len(logs)

    base = dataclasses.replace(h.SKINNY_COST, tail_weight=0.0, range_fill_chunks=0.0, max_waves=1.0)
    grid = []
    for tw, fill, waves in itertools.product((0.0, 0.2, 0.4, 0.5, 0.7, 1.0), (0.0, 0.5, 1.0, 2.0), (1.0, 2.0, 4.0, 8.0)):
        g, w, n = score(dataclasses.replace(base, tail_weight=tw, range_fill_chunks=fill, max_waves=waves))
        grid.append((g, w, n, tw, fill, waves))
    grid.sort(reverse=True)
    print(f"{len(meas)} shapes; % of cuBLAS fp32 at the pick (geomean, worst, shapes scored)")
    print("| tail_weight | range_fill_chunks | max_waves | geomean | worst |\n|---:|---:|---:|---:|---:|")
    for g, w, n, tw, fill, waves in grid[:10]:
        print(f"| {tw} | {fill} | {waves} | {g:.1f} | {w:.1f} |")
    g, w, _ = score(base)
    print(f"\none-wave model (no tail): geomean {g:.1f}, worst {w:.1f}")
    g, w, _ = score(h.SKINNY_COST)
    print(f"heuristics.SKINNY_COST: geomean {g:.1f}, worst {w:.1f}")
    best = [max(mm.values()) for mm in meas.values()]
    print(f"best timed split per shape: geomean {math.exp(sum(map(math.log, best)) / len(best)):.1f}, worst {min(best):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
