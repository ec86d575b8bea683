"""Stage 13's b_unaligned A/B (reproduce/measure-b-unaligned): per run file and precision, the
padded copy's time over the cp.async build's (> 1: cp.async faster) for rows with N % 4 != 0 (the
two builds differ) and N % 4 == 0 (the same path twice: an A/A check), and each variant's % of
cuBLAS (geomean, worst).

    python reproduce/b_unaligned_summary.py RUN.json[.gz] ...
"""
from __future__ import annotations

import collections
import json
import sys

from compare.outputs.sweep import geomean
from compare.harness.files import open_text

CP, PAD = "cuda.13_wgmma_tma[b_unaligned=cp_async]", "cuda.13_wgmma_tma[b_unaligned=pad]"


def summarize(path: str) -> list[str]:
    with open_text(path) as f:
        rows = json.load(f)["results"]
    by = collections.defaultdict(dict)
    for r in rows:
        if r["status"] == "ok":
            by[(r["shape"], r["precision"])][r["kernel"]] = r
    out = [f"{path}"]
    for pr in ("tf32", "tf32x3"):
        for aligned in (False, True):
            pairs = [(v[PAD]["median_ms"] / v[CP]["median_ms"], sh, v[CP]["pct_cublas"], v[PAD]["pct_cublas"])
                     for (sh, p), v in by.items() if p == pr and CP in v and PAD in v
                     and (int(sh.split("x")[1]) % 4 == 0) == aligned]
            if not pairs:
                continue
            pairs.sort()
            out.append(f"  {pr} N % 4 {'== 0 (A/A)' if aligned else '!= 0'}: {len(pairs)} shapes, pad / cp_async time "
                       f"geomean {geomean([p[0] for p in pairs]):.3f}, min {pairs[0][0]:.3f} ({pairs[0][1]}), "
                       f"max {pairs[-1][0]:.3f} ({pairs[-1][1]}); % of cuBLAS geomean cp_async "
                       f"{geomean([p[2] for p in pairs]):.1f} / pad {geomean([p[3] for p in pairs]):.1f}, worst "
                       f"{min(p[2] for p in pairs):.1f} / {min(p[3] for p in pairs):.1f}")
    return out


if __name__ == "__main__":
    for p in sys.argv[1:]:
        print("\n".join(summarize(p)))
