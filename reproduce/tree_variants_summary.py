"""Variants of one kernel, each run by its own copy of the tree (the same shapes, the same
compare command), against the first: per shape the time ratio (best of each variant's rounds)
and % of the speed of light, then each variant's geomean, min and max against the first and its
own A/A (slowest over fastest round).

    python reproduce/tree_variants_summary.py DIR "base other ..." [--kernel K] [--rounds N] [--precision P]
        [--shapes-file F]

reads DIR/NAME-ROUND.json or .json.gz (python -m compare ... --format json). Exit status: 0;
2 on bad input (a missing file, a shape without a timed cell).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository's compare package
from compare.harness.files import open_text  # noqa: E402
from compare.harness.shapes import load_shapes_file, shape_text  # noqa: E402


def cells(path: str, kernel: str, precision: str | None = None):
    """(shapes, TFLOP/s per shape, % of the speed of light per shape) of ``kernel``'s matrix row
    (of ``precision``; None: the file must hold one precision of ``kernel``)."""
    if not os.path.exists(path):
        path += ".gz"
    with open_text(path) as f:
        m = json.load(f)["matrix"]
    rows = [r for r in m["rows"] if r["kernel"] == kernel and precision in (None, r.get("precision"))]
    if len(rows) != 1:
        raise ValueError(f"{path}: {kernel} in {len(rows)} precisions; name one with --precision" if rows
                         else f"{path}: no {kernel} row{f' of {precision}' if precision else ''}")
    row = rows[0]
    return m["shapes"], [c.get("tflops") for c in row["cells"]], [c.get("pct_sol") for c in row["cells"]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("names", help="space-separated variant names, the first the base")
    ap.add_argument("--kernel", default="cuda.11_stream_k")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--precision", help="the kernel's precision where a file holds several")
    ap.add_argument("--shapes-file", action="append", help="only the shapes these files list (repeatable)")
    args = ap.parse_args(argv)
    names = args.names.split()
    data: dict = {}
    shapes = None
    try:
        for n in names:
            for r in range(1, args.rounds + 1):
                path = os.path.join(args.dir, f"{n}-{r}.json")
                if not (os.path.exists(path) or os.path.exists(path + ".gz")):
                    continue
                got, t, s = cells(path, args.kernel, args.precision)
                if shapes is not None and got != shapes:
                    raise ValueError(f"{path}: other shapes than the first file's")
                if None in t or None in s:
                    raise ValueError(f"{path}: a shape without a timed cell")
                shapes = got
                data.setdefault(n, []).append((t, s))
    except (OSError, ValueError, KeyError) as e:
        print(f"tree_variants_summary: {e}", file=sys.stderr)
        return 2
    missing = [n for n in names if n not in data]
    if missing or not shapes:
        print(f"tree_variants_summary: no runs of {missing or names} in {args.dir}", file=sys.stderr)
        return 2
    keep = range(len(shapes))
    if args.shapes_file:
        try:
            only = {shape_text(s) for f in args.shapes_file for s in load_shapes_file(f)}
        except (OSError, ValueError) as e:
            print(f"tree_variants_summary: {e}", file=sys.stderr)
            return 2
        keep = [i for i, s in enumerate(shapes) if s in only]
        if not keep:
            print("tree_variants_summary: none of the listed shapes is in the runs", file=sys.stderr)
            return 2
    base = {i: max(x[0][i] for x in data[names[0]]) for i in keep}
    print("shape".ljust(18) + "".join(n.rjust(16) for n in names))
    for i in keep:
        shape = shapes[i]
        line = shape.ljust(18)
        for n in names:
            best = max(x[0][i] for x in data[n]) / base[i]
            line += f"{best:7.3f} {max(x[1][i] for x in data[n]):5.1f}%sol".rjust(16)
        print(line)
    for n in names:
        rs = [max(x[0][i] for x in data[n]) / base[i] for i in keep]
        aa = [min(x[0][i] for x in data[n]) / max(x[0][i] for x in data[n]) for i in keep]
        g = math.exp(statistics.mean(map(math.log, rs)))
        print(f"{n} geomean vs {names[0]} {g:.3f} min {min(rs):.3f} max {max(rs):.3f}; A/A min {min(aa):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
