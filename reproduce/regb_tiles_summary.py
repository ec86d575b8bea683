"""Stage 13's register-operand tiles each forced (reproduce/measure-regb-tiles): per precision, each
tile's and the default's geomean / worst % of cuBLAS, the fastest tile per shape (the oracle), the
default's time over the oracle's, and, for each candidate set of tile speeds (the split-K model's
REGB_RELATIVE_SPEED, cuda_kernels/heuristics.py), the tile the model then picks per shape timed by
the forced run: its time against the tile picked at the guessed speeds (0.9 / 0.75), how many
shapes are > 3% slower, and the % of cuBLAS it would read. The forced tile's split is the one the
model picked for it at the run's speeds. Shapes of the held-out corpus are left out.
``--cp-async-speeds`` adds, per candidate speed of the cp_async build's main loop
(REGB_CP_ASYNC_SPEED), the rule's pick timed by the forced run against the fastest tile.

    python reproduce/regb_tiles_summary.py tf32.json.gz tf32x3.json.gz [--speeds 128:64,...]
        [--cp-async-speeds 1.0,0.7,...]
"""
from __future__ import annotations

import argparse
import collections
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from compare.harness.files import open_text  # noqa: E402
from compare.harness.shapes import HELDOUT_SETS, sweep_shapes  # noqa: E402
from cuda_kernels import heuristics as H  # noqa: E402

KERNEL = "cuda.13_wgmma_tma"
TILES = {"tf32": {256: "256x128x32s4.regb", 128: "128x128x32s6.regb", 64: "64x128x32s8.regb"},
         "tf32x3": {128: "128x128x32s4.regb.x3", 64: "64x128x32s6.regb.x3"}}
GUESSED = {"tf32": {256: 1.0, 128: 0.9, 64: 0.75}, "tf32x3": {128: 0.9, 64: 0.75}}
HELDOUT_DISTRIBUTIONS = ["loguniform:120:907", "llm:40:907", "loguniform:150:31337", "llm:50:31337"]


def geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def model_pick(M: int, N: int, K: int, precision: str, speeds: dict, sms: int = 132) -> int:
    """The tile (rows) regb_tile's rule picks at these relative speeds."""
    return min(TILES[precision], key=lambda tm: H.regb_tile_seconds(M, N, K, sms, precision, tm, speeds=speeds))


def load(path: str, precision: str, exclude: set) -> list:
    """[(shape, {tm: ms}, {tm: % of cuBLAS}, default row)] for shapes with every tile and the default ok."""
    with open_text(path) as f:
        rows = json.load(f)["results"]
    by: dict = collections.defaultdict(dict)
    for r in rows:
        if r["status"] == "ok" and r["precision"] == precision and r["shape"] not in exclude:
            by[r["shape"]][r["kernel"]] = r
    out = []
    for shape, v in sorted(by.items()):
        forced = {tm: v.get(f"{KERNEL}[tile={label}]") for tm, label in TILES[precision].items()}
        if all(forced.values()) and KERNEL in v:
            out.append((shape, {tm: r["median_ms"] for tm, r in forced.items()},
                        {tm: r["pct_cublas"] for tm, r in forced.items()}, v[KERNEL]))
    return out


def summarize(rows: list, precision: str, candidates: list) -> list[str]:
    if not rows:
        return [f"{precision}: no shape with every tile timed"]
    best = [min(r[1].values()) for r in rows]
    default_ms = [r[1][int(r[3]["config"]["tile"].split("x")[0])] for r in rows]
    out = [f"{precision}: {len(rows)} shapes"]
    for tm in TILES[precision]:
        out.append(f"  tile {tm} rows forced: % of cuBLAS geomean {geomean(r[2][tm] for r in rows):.1f}, "
                   f"worst {min(r[2][tm] for r in rows):.1f}")
    out.append(f"  default: geomean {geomean(r[3]['pct_cublas'] for r in rows):.1f}, worst "
               f"{min(r[3]['pct_cublas'] for r in rows):.1f}; the fastest tile per shape: geomean "
               f"{geomean(max(r[2].values()) for r in rows):.1f}, worst {min(max(r[2].values()) for r in rows):.1f}; "
               f"default time / fastest {geomean(d / b for d, b in zip(default_ms, best)):.4f}")
    guessed = [model_pick(*map(int, r[0].split("x")), precision, GUESSED[precision]) for r in rows]
    for speeds in candidates:
        picks = [model_pick(*map(int, r[0].split("x")), precision, speeds) for r in rows]
        gain = [r[1][g] / r[1][p] for r, g, p in zip(rows, guessed, picks)]
        pct = [r[2][p] for r, p in zip(rows, picks)]
        out.append(f"  speeds {' / '.join(f'{tm}: {s}' for tm, s in speeds.items())}: {sum(g != p for g, p in zip(guessed, picks))} "
                   f"picks moved, time of the guessed speeds' pick / this pick {geomean(gain):.4f}, {sum(x < 0.97 for x in gain)} "
                   f"shapes > 3% slower (worst {min(gain):.3f}), % of cuBLAS geomean {geomean(pct):.1f}, worst {min(pct):.1f}")
    return out


def cp_async_lines(rows: list, precision: str, speeds: list) -> list[str]:
    """For each candidate REGB_CP_ASYNC_SPEED: the time of the tile the rule then picks (at the
    current tile speeds) over the fastest tile's, geomean, and the shapes that pick moves off the
    first candidate's pick, with how many ran > 3% slower for it."""
    saved, out = H.REGB_CP_ASYNC_SPEED, []
    first = None
    try:
        for f in speeds:
            H.REGB_CP_ASYNC_SPEED = f
            picks = [H.regb_tile(*map(int, r[0].split("x")), 132, precision)[0] for r in rows]
            first = first or picks
            ratio = geomean(r[1][p] / min(r[1].values()) for r, p in zip(rows, picks))
            moved = [(r[1][a] / r[1][p]) for r, a, p in zip(rows, first, picks) if a != p]
            out.append(f"  cp_async speed {f}: time of the rule's pick / the fastest tile {ratio:.4f}; "
                       f"{len(moved)} picks moved from speed {speeds[0]}, {sum(m < 0.97 for m in moved)} of them > 3% slower")
    finally:
        H.REGB_CP_ASYNC_SPEED = saved
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="measure-regb-tiles' tf32.json(.gz) and/or tf32x3.json(.gz)")
    ap.add_argument("--speeds", default="0.9:0.75,0.9:0.6,0.9:0.5,0.8:0.5,0.6:0.4",
                    help="candidate 128-row:64-row speeds relative to 256 rows (tf32x3: 128 stays 0.9)")
    ap.add_argument("--cp-async-speeds", default="",
                    help="candidate speeds of the cp_async build's loop relative to TMA's (tf32), e.g. 1.0,0.7")
    a = ap.parse_args(argv)
    held = {"x".join(map(str, tuple(s)[:3])) for s in sweep_shapes(list(HELDOUT_SETS), distributions=HELDOUT_DISTRIBUTIONS)}
    pairs = [tuple(float(x) for x in c.split(":")) for c in a.speeds.split(",")]
    for path in a.runs:
        precision = "tf32x3" if "tf32x3" in os.path.basename(path) else "tf32"
        cands = ([{256: 1.0, 128: s128, 64: s64} for s128, s64 in pairs] if precision == "tf32"
                 else [{128: 0.9, 64: s64} for _, s64 in pairs])
        print(f"## {path}\n")
        rows = load(path, precision, held)
        print("\n".join(summarize(rows, precision, cands)) + "\n")
        if a.cp_async_speeds and rows:
            print("\n".join(cp_async_lines(rows, precision, [float(x) for x in a.cp_async_speeds.split(",")])) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
