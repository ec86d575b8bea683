"""Stage 13 as the CUDA family's general tensor-core kernel (docs/results.md, "Stage 13 on any
shape"): % of cuBLAS per precision over a sweep's rows, overall, per shape class and per held-out
group, against the bars it is held to (tf32: geomean >= 95% of cuBLAS tf32, worst >= 70%;
tf32x3: geomean >= 1.6x cuBLAS fp32, worst >= 1.0x).

    python reproduce/stage13_summary.py RUN.json[.gz] [OUT.md]

Classes (by shape alone): skinny (M or N <= 8), tiny output (M*N <= 64K), narrow (M or N <= 128),
small-mid (K <= 2048, M*N <= 8M), large (the rest). Groups: the named held-out sets
(compare/harness/shapes.py HELDOUT_SETS), and the generated draws, seed 907 (looked at while
choosing the tile rule) and seed 31337 (never looked at before this measurement).
"""
from __future__ import annotations

import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from compare.harness.files import open_text  # noqa: E402
from compare.harness.shapes import HELDOUT_SETS, SHAPE_SETS, distribution, shape_text  # noqa: E402

KERNEL = "cuda.13_wgmma_tma"
BARS = {"tf32": (95.0, 70.0), "tf32x3": (160.0, 100.0)}


def shape_class(M: int, N: int, K: int) -> str:
    if M <= 8 or N <= 8:
        return "skinny"
    if M * N <= 65536:
        return "tiny output"
    if M <= 128 or N <= 128:
        return "narrow"
    if K <= 2048 and M * N <= 8_000_000:
        return "small-mid"
    return "large"


def geomean(xs):
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def groups():
    named = {shape_text(s) for n in HELDOUT_SETS for s in SHAPE_SETS[n]}
    seen = {shape_text(s) for s in distribution("loguniform", 120, 907) + distribution("llm", 40, 907)}
    fresh = {shape_text(s) for s in distribution("loguniform", 150, 31337) + distribution("llm", 50, 31337)}
    return {"named held-out sets": named, "generated, seed 907": seen, "generated, seed 31337": fresh}


def main(argv):
    with open_text(argv[0]) as f:
        doc = json.load(f)
    rows = [r for r in doc["results"] if r["kernel"] == KERNEL]
    bad = [r for r in rows if r["status"] != "ok"]
    env = doc["environment"]
    out = [f"# Stage 13 on any shape: {env.get('gpu')}, driver {env.get('driver')}, torch {env.get('torch')}, "
           f"triton {env.get('triton')}", "", f"`{doc.get('command', '')}`", "",
           f"{len(rows)} rows of {KERNEL}, {len(bad)} not ok. % of cuBLAS in the same run (tf32 against cuBLAS "
           "tf32, tf32x3 against cuBLAS fp32).", ""]
    out += ["| rows | precision | shapes | geomean % | worst % (shape) | < 70% | < 100% | bar (geomean / worst) |",
            "|---|---|---:|---:|---|---:|---:|---|"]

    def line(label, sel, pr):
        v = [r for r in sel if r["precision"] == pr and r.get("pct_cublas")]
        if not v:
            return
        w = min(v, key=lambda r: r["pct_cublas"])
        g = geomean(r["pct_cublas"] for r in v)
        bg, bw = BARS[pr]
        verdict = f"{'met' if g >= bg else 'NOT met'} / {'met' if w['pct_cublas'] >= bw else 'NOT met'}"
        out.append(f"| {label} | {pr} | {len(v)} | {g:.1f} | {w['pct_cublas']:.1f} ({w['shape']}) | "
                   f"{sum(r['pct_cublas'] < 70 for r in v)} | {sum(r['pct_cublas'] < 100 for r in v)} | {verdict} |")
    for pr in ("tf32", "tf32x3"):
        line("all", rows, pr)
        for name, members in groups().items():
            line(name, [r for r in rows if r["shape"] in members], pr)
        for c in ("large", "small-mid", "narrow", "tiny output", "skinny"):
            line(f"class: {c}", [r for r in rows if shape_class(r["M"], r["N"], r["K"]) == c], pr)
    text = "\n".join(out) + "\n"
    if len(argv) > 1:
        open(argv[1], "w").write(text)
    print(text, end="")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
