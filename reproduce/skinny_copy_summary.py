"""Issue 43's bandwidth line on a fp32 run of the skinny classes: each row's bytes (A + B + C,
the row's ``min_bytes``) over its time, as a share of the device copy's bandwidth, and each
kernel's % of cuBLAS per class (N <= 8; M = 1).

    python reproduce/skinny_copy_summary.py RUN.json COPY_GBPS

COPY_GBPS: the copy peak measured on the same GPU (``python -m cuda_kernels.probes.peaks``,
read + write). The issue's line covers the rows with M*K >= 16M (N <= 8) or K*N >= 16M (M = 1).
Exit status: 1 when no row of the line was found (nothing measured is not a pass), else 0.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))   # the repository's compare package

from compare.outputs.sweep import geomean  # noqa: E402

BIG = 16 * 2**20


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    rows = json.load(open(argv[0]))["results"]
    copy = float(argv[1])
    by: dict = {}
    for r in rows:
        if r["precision"] == "fp32" and r["status"] == "ok":
            by.setdefault(r["shape"], {})[r["kernel"]] = r
    kernels = sorted({k for ks in by.values() for k in ks}, key=lambda k: (k != "cublas", k))
    pct: dict = {}
    copy_share: dict = {}
    print("| shape | line | " + " | ".join(f"{k} us (% copy)" for k in kernels) + " |")
    print("|---|---|" + "---|" * len(kernels))
    for shape, ks in by.items():
        any_row = next(iter(ks.values()))
        M, N, K = any_row["M"], any_row["N"], any_row["K"]
        cls = "N <= 8" if N <= 8 else "M = 1" if M == 1 else None
        if cls is None:
            continue
        big = (N <= 8 and M * K >= BIG) or (M == 1 and K * N >= BIG)
        cells = []
        for k in kernels:
            r = ks.get(k)
            if r is None:
                cells.append("-")
                continue
            share = 100 * r["min_bytes"] / (r["median_ms"] * 1e-3) / 1e9 / copy
            cells.append(f"{r['median_ms'] * 1e3:.1f} ({share:.1f}%)")
            if r.get("pct_cublas") is not None:
                pct.setdefault((k, cls), []).append(r["pct_cublas"])
            if big:
                copy_share.setdefault(k, []).append((share, shape))
        print(f"| {shape} | {'yes' if big else ''} | " + " | ".join(cells) + " |")
    print(f"\ndevice copy {copy:.0f} GB/s (read + write)\n")
    print("| kernel | class | % cuBLAS geomean | worst | rows |")
    print("|---|---|---|---|---|")
    for (k, cls), v in sorted(pct.items()):
        print(f"| {k} | {cls} | {geomean(v):.1f} | {min(v):.1f} | {len(v)} |")
    print("\n| kernel | % of copy, geomean (rows on the line) | worst (shape) | rows under 85% |")
    print("|---|---|---|---|")
    for k, v in copy_share.items():
        worst = min(v)
        print(f"| {k} | {geomean(s for s, _ in v):.1f} ({len(v)}) | {worst[0]:.1f} ({worst[1]}) | "
              f"{sum(s < 85 for s, _ in v)} |")
    return 0 if copy_share else 1


if __name__ == "__main__":
    sys.exit(main())
