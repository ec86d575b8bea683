"""% of cuBLAS by tile fill: how much of a kernel's padded output tiles a shape really uses.

A kernel that computes C in BM x BN tiles does ceil(M/BM)*BM x ceil(N/BN)*BN of work for M x N
of output; the fill is the ratio, 1.0 when both sides are multiples of the tile. Over the 1,000
generated shapes of results/h100/dist-1000/ every kernel's % of cuBLAS falls with it (cuBLAS
picks among many tiles per shape; each of ours picks among few): this table is how that reads.

    python -m compare.ci.tile_fill results/h100/dist-1000/rows.csv [--kernel K] [--precision P]

Input: a sweep's rows, as the CSV of results/h100/dist-1000/ (columns M, N, kernel, precision,
tile, pct_cublas) or a ``--format json`` output. The tile comes from the row's resolved
configuration (``BMxBNx...``).
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from collections import defaultdict
from typing import Iterable, Optional

from ..families.decompose import tile_fill
from ..outputs.sweep import geomean


def tile_of(text) -> Optional[tuple[int, int]]:
    """(BM, BN) of a tile label such as '128x256x32s4' or '64x128x16'; None when there is none."""
    parts = str(text or "").split("x")
    try:
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        return None


def read_rows(path: str) -> list[dict]:
    if path.endswith(".json"):
        with open(path, encoding="utf-8") as f:
            rows = json.load(f)["results"]
        return [dict(r, tile=(r.get("config") or {}).get("tile")) for r in rows]
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def table(rows: Iterable[dict], kernels=None, precisions=None, step: float = 0.1) -> list[tuple]:
    """[(kernel, precision, fill bucket, shapes, geomean %, worst %)], buckets of ``step``."""
    groups: dict = defaultdict(list)
    for r in rows:
        pct, tile = r.get("pct_cublas"), tile_of(r.get("tile"))
        if r.get("kernel") == "cublas" or tile is None or pct in (None, ""):
            continue
        if (kernels and r["kernel"] not in kernels) or (precisions and r["precision"] not in precisions):
            continue
        f = tile_fill(int(r["M"]), int(r["N"]), *tile)
        bucket = min(1.0, math.floor(f / step + 1e-9) * step)
        groups[(r["kernel"], r["precision"], round(bucket, 6))].append(float(pct))
    return [(k, p, b, len(v), geomean(v), min(v)) for (k, p, b), v in sorted(groups.items())]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compare.ci.tile_fill", description=__doc__.split("\n\n")[0])
    ap.add_argument("rows", help="a sweep's rows: CSV (results/h100/dist-1000/rows.csv) or --format json output")
    ap.add_argument("--kernel", action="append", help="only these kernels (repeatable)")
    ap.add_argument("--precision", action="append", help="only these precisions (repeatable)")
    args = ap.parse_args(argv)
    try:
        rows = read_rows(args.rows)
    except (OSError, ValueError, KeyError) as exc:
        print(f"error: {args.rows}: {exc}", file=sys.stderr)
        return 2
    got = table(rows, args.kernel, args.precision)
    if not got:
        print(f"error: {args.rows}: no kernel row with a tile and a % of cuBLAS", file=sys.stderr)
        return 2
    print("| kernel | precision | tile fill | shapes | geomean % of cuBLAS | worst % |\n|---|---|---|---:|---:|---:|")
    for k, p, b, n, g, w in got:
        print(f"| {k} | {p} | {b:.1f}-{min(1.0, b + 0.1):.1f} | {n} | {g:.1f} | {w:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
