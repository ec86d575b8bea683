"""Stage 13's stream-K (reproduce/measure-stage13-stream-k): per run and precision, the time of
mode=dp (no stream-K) over the default on the rows whose default took stream-K (the rule's
moves), and, where the run has mode=hybrid forced, its time against mode=dp on every shape (what
stream-K does where the rule does not take it).

    python reproduce/stream_k13_summary.py RUN.json[.gz]... [--out OUT.md]
"""
from __future__ import annotations

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import summary_table  # noqa: E402

DEFAULT, DP, HYBRID = "cuda.13_wgmma_tma", "cuda.13_wgmma_tma[mode=dp]", "cuda.13_wgmma_tma[mode=hybrid]"


def geomean(xs):
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def by_shape(doc: dict, precision: str) -> dict:
    out: dict[str, dict] = {}
    for r in doc["results"]:
        if r["precision"] == precision and r["status"] == "ok" and r["kernel"] in (DEFAULT, DP, HYBRID):
            out.setdefault(r["shape"], {})[r["kernel"]] = r
    return out


def _line(name, pr, label, ratios):
    if not ratios:
        return []
    worst = min(ratios, key=lambda x: x[0])
    best = max(ratios, key=lambda x: x[0])
    return [f"| {name} | {pr} | {label} | {len(ratios)} | {geomean(r[0] for r in ratios):.3f} | "
            f"{sum(r[0] < 0.97 for r in ratios)} | {worst[0]:.3f} ({worst[1]}) | {best[0]:.3f} ({best[1]}) |"]


def summarize(name: str, doc: dict) -> list[str]:
    out = []
    for pr in ("tf32", "tf32x3"):
        rows = by_shape(doc, pr)
        moved = [(v[DP]["median_ms"] / v[DEFAULT]["median_ms"], s) for s, v in rows.items()
                 if DP in v and DEFAULT in v and v[DEFAULT]["config"].get("mode") in ("sk", "hybrid")]
        forced = [(v[DP]["median_ms"] / v[HYBRID]["median_ms"], s) for s, v in rows.items() if DP in v and HYBRID in v]
        out += _line(name, pr, "default's stream-K rows: dp time / default time", moved)
        out += _line(name, pr, "stream-K forced (mode=hybrid), every shape: dp time / hybrid time", forced)
    return out


HEADER = ["| run | precision | rows | n | speedup geomean | slower than 0.97 | worst | best |",
          "|---|---|---|---:|---:|---:|---|---|"]


def main(argv):
    summary_table.main(argv, HEADER, summarize)


if __name__ == "__main__":
    main(sys.argv[1:])
