"""Which shapes a change of a plan rule moves, an older tree against this one, at 132 SMs (an H100
or H200): stage 13's register-operand tile (``--rule regb_tile``, cuda_kernels/heuristics.py
regb_tile, per precision) or the K ranges of stage 11's bandwidth-bound paths (``--rule
skinny_split``: heuristics.skinny_plan where stream_k_path takes gemv or skinny_n's chunked build).
Those are the rows an A/B has to time; the rest launch the same kernels.

    python reproduce/rule_moves.py PREV_TREE --precision tf32 --sweep heldout \
        --distribution loguniform:200:5150 [-o moved.txt]
    python reproduce/rule_moves.py PREV_TREE --rule skinny_split --sweep heldout_skinny \
        --shapes-file reproduce/shapes/skinny_waves.txt [-o moved.txt]

Prints one line per moved (shape, precision): the old and new pick. ``-o`` writes the moved shapes
as a shapes file (MxNxK per line) for ``python -m compare --shapes-file``. Exit status: 0, 2 on
bad input.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

# Run inside each tree: what the rule picks for the shapes on stdin (JSON): regb_tile's tile rows,
# or skinny_plan's (K ranges, K per range) where stage 11 takes a bandwidth-bound path with a K
# split (gemv, skinny_n's chunked build; None elsewhere).
_PICK = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
from cuda_kernels import heuristics as h
rule, shapes, precision = json.load(sys.stdin)
def skinny(M, N, K):
    path = h.stream_k_path(M, N, K)
    if path == "gemv" or (path == "skinny_n" and K > h.SKINNY_SHORT_MAX_K):
        return list(h.skinny_plan(path, M, N, K, 132)[1:])
    return None
pick = (lambda M, N, K: h.regb_tile(M, N, K, 132, precision)[0]) if rule == "regb_tile" else skinny
print(json.dumps([pick(M, N, K) for M, N, K in shapes]))
'''
RULES = ("regb_tile", "skinny_split")


def picks(tree: str, rule: str, shapes: list, precision: str) -> list:
    out = subprocess.run([sys.executable, "-c", _PICK, tree], input=json.dumps([rule, shapes, precision]),
                         capture_output=True, text=True, check=True, cwd=tree)
    return json.loads(out.stdout)


def main(argv=None) -> int:
    from compare.harness.errors import UsageError
    from compare.harness.shapes import load_shapes_file, sweep_shapes
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("prev_tree")
    ap.add_argument("--rule", choices=RULES, default="regb_tile")
    ap.add_argument("--precision", action="append", choices=("tf32", "tf32x3"),
                    help="regb_tile's precisions (default tf32); skinny_split is fp32's")
    ap.add_argument("--shapes-file", action="append", default=[])
    ap.add_argument("--sweep", action="append", default=[])
    ap.add_argument("--distribution", action="append", default=[])
    ap.add_argument("-o", "--output")
    a = ap.parse_args(argv)
    if not os.path.isdir(os.path.join(a.prev_tree, "cuda_kernels")):
        print(f"rule_moves: {a.prev_tree} is not a source tree (no cuda_kernels/)", file=sys.stderr)
        return 2
    try:
        shapes = ([list(s) for s in sweep_shapes(a.sweep, distributions=a.distribution)]
                  if a.sweep or a.distribution else [])
        for f in a.shapes_file:
            shapes += [list(s) for s in load_shapes_file(f)]
    except (KeyError, ValueError, OSError, UsageError) as e:
        print(f"rule_moves: {e}", file=sys.stderr)
        return 2
    if not shapes:
        print("rule_moves: no shapes (give --sweep, --distribution or --shapes-file)", file=sys.stderr)
        return 2
    moved = []
    precisions = (a.precision or ["tf32"]) if a.rule == "regb_tile" else ["fp32"]
    unit = " rows" if a.rule == "regb_tile" else " (K ranges, K per range)"
    for precision in precisions:
        old = picks(os.path.abspath(a.prev_tree), a.rule, shapes, precision)
        new = picks(ROOT, a.rule, shapes, precision)
        for s, o, n in zip(shapes, old, new):
            if o != n:
                print(f"{s[0]}x{s[1]}x{s[2]} {precision}: {o} -> {n}{unit}")
                moved.append(s)
    print(f"{len(moved)} of {len(shapes) * len(precisions)} rows moved")
    if a.output:
        from compare.harness.files import write_text_atomically
        write_text_atomically(a.output, "".join(f"{M}x{N}x{K}\n" for M, N, K in moved))
    return 0


if __name__ == "__main__":
    sys.exit(main())
