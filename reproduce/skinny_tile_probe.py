"""Tile variants of triton.stream_k's N <= 8 kernel (mode=skinny) in runs of
``python -m compare --variant "triton.stream_k:skinny_tile=A|B|..." --format json``: per shape each
variant's % of the speed of light and its time ratio against a base variant (best of each
label's rounds), then each variant's geomean, min and max over the rows whose A is read with
16-byte loads and over those read 4 bytes at a time (K % 4 != 0: ``k_group`` 1 in the config).

    python reproduce/skinny_tile_probe.py BASE_LABEL FILE... [--tag-by-file] [--max-k K] [--precision P]

A label is the kernel name after ``triton.stream_k`` (e.g. ``[skinny_tile=32x64/4]``); with
--tag-by-file it is followed by ``:`` and the file name's part before the first ``-`` (runs of
different trees side by side). --max-k: only the shapes with K <= K (a rule's scope). --precision: the rows of one precision
(needed where the runs hold more than one). Exit status 0; 2 on bad input (a missing file, no
base label, several precisions and none named).
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository's compare package
from compare.harness.files import open_text  # noqa: E402
from compare.outputs.sweep import geomean  # noqa: E402

PREFIX = "triton.stream_k"


def load(paths: list[str], tag_by_file: bool, precision: str | None = None):
    """({shape: {label: (best ms, % of the speed of light at that time, k_group)}}, the
    precisions of the triton.stream_k rows seen)."""
    rows: dict = collections.defaultdict(dict)
    seen = set()
    for path in paths:
        tag = ":" + os.path.basename(path).split("-")[0] if tag_by_file else ""
        with open_text(path) as f:
            results = json.load(f)["results"]
        for r in results:
            if not r["kernel"].startswith(PREFIX) or r["status"] != "ok" or r.get("median_ms") is None:
                continue
            seen.add(r["precision"])
            if precision is not None and r["precision"] != precision:
                continue
            label = r["kernel"][len(PREFIX):] + tag
            old = rows[r["shape"]].get(label)
            if old is None or r["median_ms"] < old[0]:
                rows[r["shape"]][label] = (r["median_ms"], r["pct_sol"], (r.get("config") or {}).get("k_group"))
    return rows, seen


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--tag-by-file", action="store_true")
    ap.add_argument("--max-k", type=int, default=None)
    ap.add_argument("--precision", default=None)
    a = ap.parse_args(argv)
    missing = [p for p in a.files if not os.path.exists(p)]
    if missing:
        print(f"skinny_tile_probe: no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    rows, seen = load(a.files, a.tag_by_file, a.precision)
    if a.precision is None and len(seen) > 1:
        print(f"skinny_tile_probe: the runs hold {', '.join(sorted(seen))}; name one with --precision",
              file=sys.stderr)
        return 2
    labels = sorted({lab for v in rows.values() for lab in v})
    if a.base not in labels:
        print(f"skinny_tile_probe: no rows labelled {a.base!r}; labels: {', '.join(labels)}", file=sys.stderr)
        return 2
    print("| shape | A loads | " + " | ".join(labels) + " |")
    print("|---|---|" + "---:|" * len(labels))
    ratios = collections.defaultdict(list)
    for shape in sorted(rows, key=lambda s: (int(s.split("x")[1]), int(s.split("x")[0]))):
        v = rows[shape]
        if a.base not in v or (a.max_k is not None and int(shape.split("x")[2]) > a.max_k):
            continue
        base_ms, _, k_group = v[a.base]
        loads = "16-byte" if k_group == 4 else "4-byte"
        cells = []
        for lab in labels:
            if lab not in v:
                cells.append("-")
                continue
            ms, sol, _ = v[lab]
            cells.append(f"{sol:.1f}% SOL, {base_ms / ms:.2f}x")
            ratios[(loads, lab)].append(base_ms / ms)
        print(f"| {shape} | {loads} | " + " | ".join(cells) + " |")
    print()
    print("x: base time / variant time (above 1: the variant is faster)")
    for (loads, lab), xs in sorted(ratios.items()):
        print(f"- A {loads} loads, {lab}: geomean {geomean(xs):.3f}x, min {min(xs):.3f}, max {max(xs):.3f} ({len(xs)} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
