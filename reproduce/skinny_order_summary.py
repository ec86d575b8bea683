"""Triton skinny's K order A/B (option skinny_order): in_order / rotated time per shape, split by
whether the plan split K, and the K-split rows by N, from one or more runs of

    python -m compare --shapes-file SHAPES --variant "triton.stream_k:skinny_order=in_order|rotated" \\
        --precision fp32 --format json -o RUN.json

    python reproduce/skinny_order_summary.py RUN.json [RUN2.json.gz ...]

With several runs (rounds of the same shapes) each order's time is its best round.
Exit status: 1 when a row is not ok or a shape lacks either order, else 0.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # the repository's compare package
from compare.harness.files import open_text  # noqa: E402
from compare.outputs.sweep import geomean  # noqa: E402


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    t: dict = {}
    bad = 0
    for path in argv:
        with open_text(path) as f:
            rows = json.load(f)["results"]
        for r in rows:
            if not r["kernel"].startswith("triton.stream_k[skinny_order="):
                continue
            if r["status"] != "ok":
                print(f"NOT OK {r['shape']} {r['kernel']}: {r['status']}")
                bad += 1
                continue
            order = r["kernel"].split("=", 1)[1].rstrip("]")
            us = r["median_ms"] * 1e3
            old = t.setdefault(r["shape"], {}).get(order)
            t[r["shape"]][order] = (min(us, old[0]) if old else us, r["config"]["k_splits"])
    groups: dict = {"one K range": [], "K split": []}
    by_n: dict = {}
    print("| shape | K ranges | in_order us | rotated us | in_order / rotated |")
    print("|---|---|---|---|---|")
    for shape, v in t.items():
        if set(v) != {"in_order", "rotated"}:
            print(f"MISSING {shape}: {sorted(v)}")
            bad += 1
            continue
        x = v["in_order"][0] / v["rotated"][0]
        split = v["in_order"][1] > 1
        groups["K split" if split else "one K range"].append((x, shape))
        if split:
            by_n.setdefault(int(shape.split("x")[1]), []).append((x, shape))
        print(f"| {shape} | {v['in_order'][1]} | {v['in_order'][0]:.1f} | {v['rotated'][0]:.1f} | {x:.2f} |")
    print("\n| plan | shapes | geomean | min (shape) | max (shape) |")
    print("|---|---|---|---|---|")
    named = list(groups.items()) + [(f"K split, N = {n}", by_n[n]) for n in sorted(by_n)]
    for name, g in named:
        if g:
            print(f"| {name} | {len(g)} | {geomean(x for x, _ in g):.3f} | {min(g)[0]:.2f} ({min(g)[1]}) | "
                  f"{max(g)[0]:.2f} ({max(g)[1]}) |")
    return 1 if bad or not t else 0


if __name__ == "__main__":
    sys.exit(main())
