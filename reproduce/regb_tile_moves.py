"""Which shapes a change of stage 13's tile rule moves: regb_tile (cuda_kernels/heuristics.py) for
every shape of the named sets and distributions given, in an older tree and in this one, at 132
SMs (an H100 or H200). Those are the rows an A/B has to time; the rest launch the same kernels.

    python reproduce/regb_tile_moves.py PREV_TREE --precision tf32 --sweep heldout \
        --distribution loguniform:200:5150 [-o moved.txt]

Prints one line per moved (shape, precision): the old and new rows of the tile. ``-o`` writes the
moved shapes as a shapes file (MxNxK per line) for ``python -m compare --shapes-file``. Exit
status: 0, 2 on bad input.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# Run inside each tree: the tile rows regb_tile picks for the shapes on stdin (JSON).
_PICK = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
from cuda_kernels.heuristics import regb_tile
shapes, precision = json.load(sys.stdin)
print(json.dumps([regb_tile(M, N, K, 132, precision)[0] for M, N, K in shapes]))
'''


def picks(tree: str, shapes: list, precision: str) -> list:
    out = subprocess.run([sys.executable, "-c", _PICK, tree], input=json.dumps([shapes, precision]),
                         capture_output=True, text=True, check=True, cwd=tree)
    return json.loads(out.stdout)


def main(argv=None) -> int:
    from compare.harness.errors import UsageError
    from compare.harness.shapes import sweep_shapes
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("prev_tree")
    ap.add_argument("--precision", action="append", choices=("tf32", "tf32x3"))
    ap.add_argument("--sweep", action="append", default=[])
    ap.add_argument("--distribution", action="append", default=[])
    ap.add_argument("-o", "--output")
    a = ap.parse_args(argv)
    if not os.path.isdir(os.path.join(a.prev_tree, "cuda_kernels")):
        print(f"regb_tile_moves: {a.prev_tree} is not a source tree (no cuda_kernels/)", file=sys.stderr)
        return 2
    try:
        shapes = [list(s) for s in sweep_shapes(a.sweep, distributions=a.distribution)]
    except (KeyError, ValueError, UsageError) as e:
        print(f"regb_tile_moves: {e}", file=sys.stderr)
        return 2
    moved = []
    for precision in a.precision or ["tf32"]:
        old, new = picks(os.path.abspath(a.prev_tree), shapes, precision), picks(ROOT, shapes, precision)
        for s, o, n in zip(shapes, old, new):
            if o != n:
                print(f"{s[0]}x{s[1]}x{s[2]} {precision}: {o} -> {n} rows")
                moved.append(s)
    print(f"{len(moved)} of {len(shapes) * len(a.precision or ['tf32'])} rows moved")
    if a.output:
        from compare.harness.files import write_text_atomically
        write_text_atomically(a.output, "".join(f"{M}x{N}x{K}\n" for M, N, K in moved))
    return 0


if __name__ == "__main__":
    sys.exit(main())
