#!/usr/bin/env python3
"""skinny_n's two builds side by side, from one `python -m compare --variant
"cuda.11_stream_k:skinny_b=chunked|resident" --format json` run (reproduce/measure-skinny-short):
per shape, each build's median us, % of cuBLAS (same run) and, with --copy-gbs, % of a device
copy's bandwidth (the issue's bar: >= 85% where M*K >= 16M), and resident / chunked speed.

    python reproduce/skinny_short_summary.py AB.json [--copy-gbs GBS] [--measure-copy]

Exit status: 0 both builds ran right on every shape; 1 a row of either build is missing or not
"ok" (FAILED: wrong against float64; error; unsupported); 2 bad input.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from importlib.machinery import SourceFileLoader

KERNEL = "cuda.11_stream_k"
BUILDS = ("chunked", "resident")
BIG = 16 * 2**20  # M*K from which the copy-bandwidth criterion applies (N <= 8)


def label(build: str) -> str:
    return f"{KERNEL}[skinny_b={build}]"


def copy_gbs() -> float:
    """The device copy measure-skinny times (1 GiB, read + written bytes over the median), GB/s."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "measure-skinny")
    spec = importlib.util.spec_from_loader("measure_skinny", SourceFileLoader("measure_skinny", path))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.copy_bandwidth() / 1e9


def gbps(r: dict) -> float:
    """Bytes moved at least once (A, B, C written, C read where beta != 0) over the median time."""
    M, N, K = r["M"], r["N"], r["K"]
    nbytes = 4 * (M * K + K * N + M * N * (2 if r.get("beta") else 1))
    return nbytes / (r["median_ms"] / 1e3) / 1e9


def summarize(rows: list, copy: float | None) -> tuple[list[str], list[str]]:
    """(table lines, failures) for the fp32 rows of one A/B run."""
    rows = [r for r in rows if r.get("precision", "fp32") == "fp32"]
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    head = "| shape | cuBLAS us |" + "".join(f" {b} us | {b} % cuBLAS |" for b in BUILDS) + " resident / chunked |"
    if copy:
        head += "".join(f" {b} % copy |" for b in BUILDS)
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    fails = []
    for s in shapes:
        by = {r["kernel"]: r for r in rows if r["shape"] == s}
        base = by.get("cublas")
        ok_base = base is not None and base.get("status") == "ok" and base.get("median_ms")
        cells = [s, f"{base['median_ms'] * 1e3:.1f}" if ok_base else "-"]
        got = {}
        for b in BUILDS:
            r = by.get(label(b))
            if r is None or r.get("status") != "ok" or not r.get("median_ms"):
                what = "missing" if r is None else f"{r.get('status')}: {r.get('reason', '')}".rstrip(": ")
                fails.append(f"{s} skinny_b={b}: {what}")
                cells += [what, "-"]
                continue
            got[b] = r
            pct = 100 * base["median_ms"] / r["median_ms"] if ok_base else None
            cells += [f"{r['median_ms'] * 1e3:.1f}", f"{pct:.1f}" if pct is not None else "-"]
        cells.append(f"{got['chunked']['median_ms'] / got['resident']['median_ms']:.2f}x"
                     if len(got) == 2 else "-")
        if copy:
            for b in BUILDS:
                if b in got:
                    M, K = got[b]["M"], got[b]["K"]
                    cells.append(f"{100 * gbps(got[b]) / copy:.1f}{'' if M * K >= BIG else ' (small)'}")
                else:
                    cells.append("-")
        lines.append("| " + " | ".join(cells) + " |")
    if not shapes:
        fails.append("no fp32 rows")
    return lines, fails


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", help="rows written by python -m compare --format json")
    ap.add_argument("--copy-gbs", type=float, help="a device copy's GB/s (read + write), for the %% of copy columns")
    ap.add_argument("--measure-copy", action="store_true", help="time the device copy here (needs the GPU)")
    args = ap.parse_args(argv)
    try:
        with open(args.json, encoding="utf-8") as fh:
            rows = json.load(fh)["results"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"error: {args.json}: not a compare JSON file ({e})", file=sys.stderr)
        return 2
    copy = args.copy_gbs or (copy_gbs() if args.measure_copy else None)
    lines, fails = summarize(rows, copy)
    if copy:
        print(f"device copy: {copy:.0f} GB/s (read + write); '(small)': M*K < 16M, off the issue's copy criterion")
    print("\n".join(lines))
    for f in fails:
        print(f"FAIL {f}")
    print("PASS: both builds right on every shape" if not fails else f"FAIL: {len(fails)} row(s) not ok")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
