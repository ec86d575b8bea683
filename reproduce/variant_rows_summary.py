"""A variant of a kernel against the kernel itself, both timed in the same compare runs
(`python -m compare ... --variant KERNEL --variant "KERNEL:NAME=VALUE" --format json`): per shape
and precision the best time of each over the files given, base / variant (> 1: the variant is
faster), the base plan's tiles and K-tiles a program at one program an SM (iters_per_tile x tiles /
sms from its config), and a summary line over the rows kept.

    python reproduce/variant_rows_summary.py FILE... --variant KERNEL[OPTIONS] [--base KERNEL]
        [--precision P] [--shapes-file F]

``--base``: the kernel the variant is read against (default: the variant's name up to its "[").
``--shapes-file``: only the shapes these files list (repeatable). Exit status: 0; 2 on bad input
(a missing file, no row of both kernels).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository's compare package
from compare.harness.files import open_text  # noqa: E402
from compare.harness.shapes import load_shapes_file, shape_text  # noqa: E402
from compare.outputs.sweep import geomean  # noqa: E402


def best_rows(paths, kernel: str) -> dict:
    """{(shape, precision): (best median_ms over the files, that row's config)} of ``kernel``'s
    timed rows."""
    out = {}
    for path in paths:
        with open_text(path) as f:
            for r in json.load(f)["results"]:
                if r["kernel"] != kernel or r["status"] != "ok" or r.get("median_ms") is None:
                    continue
                k = (r["shape"], r["precision"])
                if k not in out or r["median_ms"] < out[k][0]:
                    out[k] = (r["median_ms"], r.get("config") or {})
    return out


def k_tiles_per_sm(config: dict):
    """K-tiles each program runs at one program an SM: all tiles' K iterations over the SMs."""
    try:
        return config["iters_per_tile"] * config["tiles"] / config["sms"]
    except (KeyError, TypeError, ZeroDivisionError):
        return None


def summarize(paths, variant: str, base=None, only=None, precision=None) -> list[str]:
    base = base or variant.split("[")[0]
    b, v = best_rows(paths, base), best_rows(paths, variant)
    keys = sorted(k for k in set(b) & set(v) if (only is None or k[0] in only) and precision in (None, k[1]))
    if not keys:
        raise ValueError(f"no shape has timed rows of both {base} and {variant}"
                         + (" among the listed shapes" if only is not None else ""))
    ratio = {k: b[k][0] / v[k][0] for k in keys}
    scope = (", listed shapes only" if only is not None else "") + (f", {precision} only" if precision else "")
    out = [f"{variant} against {base}: {len(keys)} rows, {len(paths)} files{scope}",
           f"- {base} / variant time (best over the files): geomean {geomean(ratio.values()):.3f}, "
           f"min {min(ratio.values()):.3f}, max {max(ratio.values()):.3f}; {sum(x < 0.97 for x in ratio.values())} rows "
           f"> 3% slower, {sum(x > 1.03 for x in ratio.values())} > 3% faster",
           "", "| shape | precision | tile | tiles | K-tiles a program at one an SM | base / variant |",
           "|---|---|---|---:|---:|---:|"]
    for k in sorted(keys, key=lambda k: (b[k][1].get("tiles") or 0, k_tiles_per_sm(b[k][1]) or 0, k)):
        c = b[k][1]
        kt = k_tiles_per_sm(c)
        out.append(f"| {k[0]} | {k[1]} | {c.get('tile', '-')} | {c.get('tiles', '-')} | "
                   f"{'-' if kt is None else f'{kt:.1f}'} | {ratio[k]:.3f} |")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--variant", required=True, help='the variant kernel as the runs name it, e.g. "triton.stream_k[grid=132]"')
    ap.add_argument("--base", help="the kernel to read it against (default: the variant's name up to its '[')")
    ap.add_argument("--precision", help="only this precision's rows")
    ap.add_argument("--shapes-file", action="append", help="only the shapes these files list (repeatable)")
    a = ap.parse_args(argv)
    try:
        only = {shape_text(s) for f in a.shapes_file for s in load_shapes_file(f)} if a.shapes_file else None
        print("\n".join(summarize(a.files, a.variant, a.base, only, a.precision)))
    except (OSError, ValueError, KeyError) as e:
        print(f"variant_rows_summary: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
