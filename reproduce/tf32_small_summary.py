"""Triton tf32 and tf32x3 on issue #43's small classes, summarised from compare JSON: small and mid
problems (K <= 2048, 4096 < M*N <= 8M) and tiny outputs (M*N <= 4096, K >= 16 max(M, N)). Each row
is against cuBLAS in the same file: tf32 against cuBLAS tf32, tf32x3 against cuBLAS fp32.

    # an A/B of two trees (reproduce/measure-ab's OUTDIR: prev-N.json and new-N.json)
    python reproduce/tf32_small_summary.py ab OUTDIR
    # variants of one run (python -m compare --variant ... --format json -o RUN.json)
    python reproduce/tf32_small_summary.py variants RUN.json PRECISION

ab: per shape the mean % of cuBLAS of each tree, new / prev, the A/A spread (prev's two runs),
and new's plan; per precision and class the geomean and worst of each tree. variants: per shape
each variant's % of cuBLAS (the best marked *), then each variant's geomean per class.
Exit status: 1 when a row is not ok, 2 on bad input, else 0.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # the repository's compare package

from compare.harness.files import open_text, run_files  # noqa: E402
from compare.harness.shapes import SMALL_CLASSES, small_class  # noqa: E402
from compare.outputs.sweep import geomean  # noqa: E402

BASE = {"tf32": "tf32", "tf32x3": "fp32", "fp32": "fp32"}


def percents(path: str) -> tuple[dict, int]:
    """{(kernel, shape, precision): (% of cuBLAS, config)} and the count of rows not ok."""
    with open_text(path) as f:
        rows = json.load(f)["results"]
    cublas = {(r["shape"], r["precision"]): r["median_ms"] for r in rows
              if r["kernel"] == "cublas" and r["status"] == "ok"}
    out, bad = {}, 0
    for r in rows:
        if r["kernel"] == "cublas":
            continue
        base = cublas.get((r["shape"], BASE[r["precision"]]))
        if r["status"] != "ok" or not base:
            bad += 1
            continue
        out[(r["kernel"], r["shape"], r["precision"])] = (100 * base / r["median_ms"], r.get("config") or {})
    return out, bad


def _dims(shape: str) -> tuple[int, int, int]:
    M, N, K = map(int, shape.split("x"))
    return M, N, K


def ab(outdir: str) -> int:
    prev, new = run_files(outdir, "prev"), run_files(outdir, "new")
    if not prev or not new:
        print(f"error: {outdir}: no prev-N.json[.gz] / new-N.json[.gz]", file=sys.stderr)
        return 2
    P, N = [percents(f) for f in prev], [percents(f) for f in new]
    bad = sum(b for _, b in P + N)
    keys = [k for k in P[0][0] if all(k in d for d, _ in P + N)]
    for prec in dict.fromkeys(k[2] for k in keys):
        print(f"\n## {prec} (% of cuBLAS {BASE[prec]})\n")
        print("| shape | class | prev | new | new / prev | A/A spread | new's plan |")
        print("|---|---|---:|---:|---:|---:|---|")
        per: dict = {}
        for k in [k for k in keys if k[2] == prec]:
            p = statistics.mean(d[k][0] for d, _ in P)
            n = statistics.mean(d[k][0] for d, _ in N)
            spread = (max(d[k][0] for d, _ in P) - min(d[k][0] for d, _ in P)) / p * 100
            c = N[0][0][k][1]
            ranges = f" ranges {c['k_splits']}" if "k_splits" in c else ""
            plan = f"{c.get('decomposition')} {c.get('tile')}{ranges} grid {c.get('grid')}"
            cls = small_class(*_dims(k[1])) or "other"
            per.setdefault(cls, []).append((p, n))
            print(f"| {k[1]} | {cls} | {p:.1f} | {n:.1f} | {n / p:.2f} | {spread:.1f}% | {plan} |")
        print()
        for cls, v in per.items():
            p, n = [a for a, _ in v], [b for _, b in v]
            print(f"- {cls} ({len(v)} shapes): prev geomean {geomean(p):.1f}%, worst {min(p):.1f}%; "
                  f"new geomean {geomean(n):.1f}%, worst {min(n):.1f}%")
    if bad:
        print(f"\n{bad} rows not ok")
    return 1 if bad else 0


def variants(path: str, precision: str) -> int:
    got, bad = percents(path)
    got = {k: v for k, v in got.items() if k[2] == precision}
    if not got:
        print(f"error: {path}: no {precision} rows", file=sys.stderr)
        return 2
    kernels = list(dict.fromkeys(k[0] for k in got))
    shapes = list(dict.fromkeys(k[1] for k in got))
    print(f"## {precision} (% of cuBLAS {BASE[precision]}), {path}\n")
    print("| shape | " + " | ".join(str(i) for i in range(len(kernels))) + " |\n|---|" + "---:|" * len(kernels))
    for s in shapes:
        vals = [got.get((k, s, precision), (None,))[0] for k in kernels]
        best = max(v for v in vals if v is not None)
        cells = ["-" if v is None else f"{v:.0f}" + ("*" if v == best else "") for v in vals]
        print(f"| {s} | " + " | ".join(cells) + " |")
    print()
    for i, k in enumerate(kernels):
        parts = []
        for cls in SMALL_CLASSES:
            v = [got[(k, s, precision)][0] for s in shapes
                 if (k, s, precision) in got and small_class(*_dims(s)) == cls]
            if v:
                parts.append(f"{cls} geomean {geomean(v):.1f}% worst {min(v):.1f}% ({len(v)})")
        print(f"- {i}: {k}: " + "; ".join(parts))
    if bad:
        print(f"\n{bad} rows not ok")
    return 1 if bad else 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "ab":
        return ab(argv[1])
    if len(argv) == 3 and argv[0] == "variants" and argv[2] in BASE:
        return variants(argv[1], argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
