"""Judge reproduce/measure-tf32-skinny's runs: tf32 on a bandwidth-bound set (heldout_skinny to
judge a rule, tune_skinny to choose one), triton.stream_k as its
heuristic plans it (the tile GEMM on the tensor cores unless a class's switch below is on) against mode=skinny (N <= 8) / mode=gemv
(M = 1), which multiply TF32-truncated inputs on the FFMA pipe, both as % of cuBLAS tf32.

    python reproduce/tf32_skinny_summary.py --write-shapes OUTDIR [--set NAME]   # OUTDIR/n8.shapes, m1.shapes
    python reproduce/tf32_skinny_summary.py RUN.json... [-o SUMMARY.md]

Prints one line per shape (each kernel's % of cuBLAS tf32 and GB/s: A, B and C once, C twice
with beta, over the median time) and per class (N <= 8, M = 1) each kernel's geomean and worst
%, and the new path's geomean over the tile GEMM's. FAIL, exit 1: a row of either kernel that is
not ok (FAILED, error, FAULT, HUNG), a shape with no row of one of them, a new-path row whose
config says another decomposition or no TF32-truncated inputs. Exit 2: a file that is not a
compare JSON run. The numbers themselves are reported, not judged: the lead decides the default
per class (stream_k_heuristic.TF32_ON_GEMV_PATH, TF32_ON_SKINNY_PATH) from them. With a class's
switch on (M = 1 as shipped), its "auto" rows run that class's FFMA path too and the per-class line's
"tile GEMM" is that path (the auto path column says which).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from compare.harness.files import write_text_atomically  # noqa: E402
from compare.harness.shapes import SHAPE_SETS, shape_text  # noqa: E402
from compare.outputs.sweep import geomean  # noqa: E402

AUTO = "triton.stream_k"
NEW = {"N <= 8": "triton.stream_k[mode=skinny]", "M = 1": "triton.stream_k[mode=gemv]"}
DECOMPOSITION = {"N <= 8": "skinny", "M = 1": "gemv"}


def shape_class(M: int, N: int) -> str:
    return "M = 1" if M == 1 else "N <= 8" if N <= 8 else ""


def write_shapes(outdir: str, set_name: str = "heldout_skinny") -> None:
    """The set split by class: n8.shapes (N <= 8, M > 1) and m1.shapes (M = 1)."""
    shapes = SHAPE_SETS[set_name]
    for name, cls in (("n8.shapes", "N <= 8"), ("m1.shapes", "M = 1")):
        mine = [shape_text(s) for s in shapes if shape_class(s[0], s[1]) == cls]
        write_text_atomically(os.path.join(outdir, name), "".join(s + "\n" for s in mine))


def row_bytes(r: dict) -> int:
    M, N, K = r["M"], r["N"], r["K"]
    return 4 * (M * K + K * N + M * N * (2 if r.get("beta") else 1))


def summarize(paths: list[str]) -> tuple[list[str], bool]:
    rows = []
    for path in paths:
        with open(path) as f:
            rows += [r for r in json.load(f)["results"] if r.get("precision") == "tf32"]
    by = {(r["kernel"], r["shape"]): r for r in rows}
    shapes = list(dict.fromkeys(r["shape"] for r in rows if shape_class(r["M"], r["N"])))
    lines = [f"# tf32 on bandwidth-bound shapes: {AUTO} (its heuristic) against mode=skinny / mode=gemv "
             "(TF32-truncated inputs, FFMA), % of cuBLAS tf32", "",
             "| shape | class | auto path | auto % | new % | auto GB/s | new GB/s | cuBLAS GB/s |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    fails, per = [], {}
    for s in shapes:
        M, N = (int(x) for x in s.split("x")[:2])
        cls = shape_class(M, N)
        got = {}
        for k in (AUTO, NEW[cls]):
            r = by.get((k, s))
            if r is None:
                fails.append(f"{k} {s}: no row")
            elif r["status"] != "ok" or not r.get("pct_cublas") or not r.get("median_ms"):
                why = r.get("reason") or r.get("status_text") or ""
                fails.append(f"{k} {s}: {r['status']} {why}".rstrip() if r["status"] != "ok"
                             else f"{k} {s}: not timed (--check?)")
            else:
                got[k] = r
        new = got.get(NEW[cls])
        if new is not None:
            cfg = new.get("config") or {}
            if cfg.get("decomposition") != DECOMPOSITION[cls] or not str(cfg.get("precision_path", "")).startswith("TF32 inputs"):
                fails.append(f"{NEW[cls]} {s}: ran {cfg.get('decomposition')!r} ({cfg.get('precision_path')!r}), "
                             f"not {DECOMPOSITION[cls]} on TF32-truncated inputs")
        base = by.get(("cublas", s))

        def gbs(r):
            return f"{row_bytes(r) / r['median_ms'] / 1e6:.0f}" if r and r.get("status") == "ok" and r.get("median_ms") else "-"

        def pct(r):
            return f"{r['pct_cublas']:.1f}" if r else "-"
        auto = got.get(AUTO)
        path = (auto.get("config") or {}).get("decomposition", "?") if auto else "-"
        lines.append(f"| {s} | {cls} | {path} | {pct(auto)} | {pct(new)} | {gbs(auto)} | {gbs(new)} | {gbs(base)} |")
        if len(got) == 2:
            per.setdefault(cls, []).append((s, got[AUTO]["pct_cublas"], new["pct_cublas"]))
    lines += ["", "## Per class (% of cuBLAS tf32)", ""]
    for cls in ("N <= 8", "M = 1"):
        got = per.get(cls)
        if not got:
            fails.append(f"{cls}: no shape with both kernels timed")
            continue
        ga, gn = geomean([a for _, a, _ in got]), geomean([n for _, _, n in got])
        wa, wn = min(got, key=lambda x: x[1]), min(got, key=lambda x: x[2])
        lines.append(f"- {cls:6s} {len(got):2d} shapes: tile GEMM ({AUTO}) geomean {ga:6.1f}%, worst {wa[1]:6.1f}% "
                     f"({wa[0]}); {NEW[cls]} geomean {gn:6.1f}%, worst {wn[2]:6.1f}% ({wn[0]}); "
                     f"new / tile GEMM geomean {gn / ga:.3f}x")
    lines += ["", *(f"- FAIL {f}" for f in fails), "", "PASS" if not fails else f"FAIL ({len(fails)})"]
    return lines, not fails


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="*", help="compare --format json files")
    ap.add_argument("--write-shapes", metavar="OUTDIR", help="write OUTDIR/n8.shapes and OUTDIR/m1.shapes and exit")
    ap.add_argument("--set", default="heldout_skinny", choices=("heldout_skinny", "tune_skinny"),
                    help="the shapes --write-shapes writes (default heldout_skinny)")
    ap.add_argument("-o", dest="out", help="also write the summary here (markdown)")
    args = ap.parse_args(argv)
    if args.write_shapes:
        if not os.path.isdir(args.write_shapes):
            print(f"error: --write-shapes {args.write_shapes}: not a directory", file=sys.stderr)
            return 2
        write_shapes(args.write_shapes, args.set)
        return 0
    if not args.runs:
        print("error: no run files (RUN.json...)", file=sys.stderr)
        return 2
    try:
        lines, ok = summarize(args.runs)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"error: {' '.join(args.runs)}: not compare JSON runs ({type(e).__name__}: {e})", file=sys.stderr)
        return 2
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        write_text_atomically(args.out, text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
