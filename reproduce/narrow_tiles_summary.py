"""Stage 13's narrow tiles (reproduce/measure-narrow-tiles at commit 1db4451, where the 64-column
tiles exist; results/h100/tensor-core/narrow-tiles/): per precision and shape, each forced
tile's % of cuBLAS, the tile the default rule picks (cuda_kernels.heuristics.regb_tile at 132 SMs,
an H100), and the best 64-column tile against the default's row; then the geomeans over the shapes
with N % 128 in 1..64 (a 128-column tile pads most) and over the rest.

    python reproduce/narrow_tiles_summary.py results/h100/tensor-core/narrow-tiles
"""
from __future__ import annotations

import glob
import json
import os
import sys

from compare.harness.files import open_text
from compare.outputs.sweep import geomean
from cuda_kernels.heuristics import regb_tile
from cuda_kernels.registry import regb_label


def main(out: str) -> None:
    for path in sorted(glob.glob(os.path.join(out, "tf32*-*.json*"))):
        with open_text(path) as f:
            rows = [r for r in json.load(f)["results"] if r["status"] == "ok" and r["kernel"] != "cublas"]
        pr = rows[0]["precision"]
        by = {}
        for r in rows:
            by.setdefault(r["shape"], {})[r["kernel"].split("tile=")[1].rstrip("]")] = r["pct_cublas"]
        gains = {True: [], False: []}
        print(f"{path} ({pr}): % of cuBLAS{' tf32' if pr == 'tf32' else ' fp32'}")
        for shape, tiles in by.items():
            M, N, K = map(int, shape.split("x"))
            tm, st = regb_tile(M, N, K, 132, pr)
            default = regb_label(tm, st, pr == "tf32x3")
            narrow = max((t for t in tiles if "x64x" in t), key=lambda t: tiles[t])
            gain = tiles[narrow] / tiles[default]
            gains[0 < N % 128 <= 64].append(gain)
            print(f"  {shape:>14}  default {default:<22} {tiles[default]:6.1f}  best narrow {narrow:<20} "
                  f"{tiles[narrow]:6.1f}  x{gain:.2f}")
        for past, g in gains.items():
            if g:
                print(f"  N % 128 {'in 1..64' if past else 'other'}: {len(g)} shapes, best narrow / default "
                      f"geomean x{geomean(g):.3f}, min x{min(g):.2f}, max x{max(g):.2f}")


if __name__ == "__main__":
    main(sys.argv[1])
