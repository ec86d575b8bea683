"""Stage 11's bandwidth-bound paths on the held-out set heldout_skinny: achieved bandwidth against
cuBLAS and against a device copy, judged by the done criteria of the "skinny and small products"
issue (fp32; N <= 8 and M = 1 each: geomean >= 95% of cuBLAS, worst >= 80%; >= 85% of the copy's
bandwidth where M*K >= 16M (N <= 8) or K*N >= 16M (M = 1)).

On the GPU, from the repository root:

    python -m compare --sweep heldout_skinny --variant "cuda.11_stream_k:path=auto|tile" \\
        --precision fp32 --quiet --format json -o results/h100/skinny/cuda.json
    python results/h100/skinny/report.py results/h100/skinny/cuda.json

The first line times the new paths (path=auto) and, for reference, the stream-K tile plan on the
same shapes (path=tile: what stage 11 ran before), with cuBLAS in the same run. The second
measures a device copy (torch, 1 GiB, CUDA events; bandwidth = bytes read + written over the
time), prints one line per shape and each criterion with PASS or FAIL, and writes report.md beside
the JSON. Exit status: 0 all criteria pass, 1 one fails, 2 bad input.

Bytes of a row: 4 * (M*K + K*N + M*N), plus M*N again where beta != 0 (C read).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, ROOT)

JUDGED = ("cuda.11_stream_k", "cuda.11_stream_k[path=auto]")
BIG = 16 * 2**20   # M*K (N <= 8) or K*N (M = 1) from which the copy-bandwidth criterion applies


def copy_bandwidth(nbytes: int = 2**30, reps: int = 20) -> float:
    """Device-to-device copy of ``nbytes``: (read + written bytes) / median time, bytes per second."""
    import torch
    x = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda")
    y = torch.empty_like(x)
    x.fill_(1.0)
    for _ in range(3):
        y.copy_(x)
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        y.copy_(x)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return 2 * nbytes / statistics.median(times)


def row_bytes(r: dict) -> int:
    M, N, K = r["M"], r["N"], r["K"]
    return 4 * (M * K + K * N + M * N * (2 if r.get("beta") else 1))


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", help="rows written by python -m compare --format json")
    ap.add_argument("--copy-gbs", type=float, help="device copy GB/s (skip measuring it here)")
    args = ap.parse_args(argv)
    try:
        doc = json.load(open(args.json))
        rows = doc["results"]
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {args.json}: not a compare JSON file ({e})", file=sys.stderr)
        return 2
    from compare.harness.files import write_text_atomically
    from compare.harness.shapes import SHAPE_SETS, shape_text
    members = {shape_text(s) for s in SHAPE_SETS["heldout_skinny"]}
    rows = [r for r in rows if r["shape"] in members and r["precision"] == "fp32"]
    cublas = {r["shape"]: r for r in rows if r["kernel"] == "cublas" and r["status"] == "ok"}
    if not cublas:
        print(f"error: {args.json}: no fp32 cuBLAS rows of heldout_skinny", file=sys.stderr)
        return 2
    copy = args.copy_gbs * 1e9 if args.copy_gbs else copy_bandwidth()
    out = [f"# heldout_skinny, fp32: {args.json}", "", f"GPU: {doc.get('environment', {}).get('gpu')}; "
           f"device copy {copy / 1e9:.0f} GB/s (read + write)", "",
           "| shape | kernel | path | k_splits | operands | us | GB/s | cuBLAS GB/s | % of cuBLAS | % of copy |",
           "|---|---|---|---:|---|---:|---:|---:|---:|---:|"]
    kernels = list(dict.fromkeys(r["kernel"] for r in rows if r["kernel"] != "cublas"))
    judged = [k for k in kernels if k in JUDGED]
    fails, per = [], {}
    for s in [shape_text(s) for s in SHAPE_SETS["heldout_skinny"]]:
        base = cublas.get(s)
        for k in ["cublas", *kernels]:
            r = next((x for x in rows if x["kernel"] == k and x["shape"] == s), None)
            if r is None:
                continue
            if r["status"] != "ok" or not r.get("median_ms"):
                out.append(f"| {s} | {k} | {r['status']}: {r.get('reason', '')} | | | | | | | |")
                if k in judged:
                    fails.append(f"{k} {s}: {r['status']} {r.get('reason', '')}")
                continue
            gbs = row_bytes(r) / (r["median_ms"] / 1e3)
            bgbs = row_bytes(base) / (base["median_ms"] / 1e3) if base else float("nan")
            pct = 100 * base["median_ms"] / r["median_ms"] if base else float("nan")
            cfg = r.get("config") or {}
            out.append(f"| {s} | {k} | {cfg.get('path', '')} | {cfg.get('k_splits', '')} | {cfg.get('operands', '')} "
                       f"| {1e3 * r['median_ms']:.1f} | {gbs / 1e9:.0f} | {bgbs / 1e9:.0f} | {pct:.1f} "
                       f"| {100 * gbs / copy:.1f} |")
            if k in judged and base:
                cls = "N <= 8" if r["N"] <= 8 else "M = 1"
                want = "skinny_n" if r["N"] <= 8 else "gemv"
                if cfg.get("path") != want:
                    fails.append(f"{k} {s}: path {cfg.get('path')!r}, the rule says {want}")
                big = (r["M"] * r["K"] if r["N"] <= 8 else r["K"] * r["N"]) >= BIG
                per.setdefault((k, cls), []).append((s, pct, 100 * gbs / copy, big))
    out += ["", "## Criteria", ""]
    for (k, cls), got in per.items():
        g, (ws, w, _, _) = geomean([p for _, p, _, _ in got]), min(got, key=lambda x: x[1])
        for what, ok in ((f"{k} {cls}: geomean {g:.1f}% of cuBLAS (>= 95%) over {len(got)} shapes", g >= 95),
                         (f"{k} {cls}: worst {w:.1f}% of cuBLAS at {ws} (>= 80%)", w >= 80)):
            out.append(f"- {'PASS' if ok else 'FAIL'} {what}")
            if not ok:
                fails.append(what)
        big = [x for x in got if x[3]]
        if big:
            lo = min(big, key=lambda x: x[2])
            what = f"{k} {cls}, {len(big)} shapes >= 16M streamed: worst {lo[2]:.1f}% of the copy at {lo[0]} (>= 85%)"
            out.append(f"- {'PASS' if lo[2] >= 85 else 'FAIL'} {what}")
            if lo[2] < 85:
                fails.append(what)
    if not per:
        fails.append(f"no timed rows of {' or '.join(JUDGED)}")
    out += [f"- FAIL {f}" for f in fails if not any(f in line for line in out)]
    out.append("")
    out.append("PASS" if not fails else f"FAIL ({len(fails)})")
    text = "\n".join(out) + "\n"
    print(text, end="")
    write_text_atomically(os.path.join(os.path.dirname(os.path.abspath(args.json)), "report.md"), text)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
