"""Time every stage-09 tile variant (and stage 10's tiles on its split-K shapes) against cuBLAS
measured in the same process, in one short GPU run.

    python -m cuda_kernels.sweep -o out.json [--budget 0.5] [--only 128x256x8,128x128x16]

Variants are the ``CUDA_TILE_09`` / ``CUDA_TILE_10`` values (``registry.TILES_09`` /
``TILES_10``); the knob is set per row and read by ``prepare``. No cache needs clearing between
variants: each variant is its own template instantiation (its own NVRTC name expression), and
the loader keys compiled functions by that expression; all of a file's instantiations are
compiled together on the first use (one NVRTC run per file, ~10-30 s, reported as prepare_s of
the first row). Rows of one shape run together, so inputs and the float64 reference are made
once per shape. Each row is checked against the reference before it is timed (a wrong variant
is reported FAILED, not timed). Prints a table and writes JSON; stops adding rows once
``--max-seconds`` have passed (default 140) and says which it skipped.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

SQUARE = [(4096, 4096, 4096), (8192, 8192, 8192)]
SPLIT_K = [(256, 256, 131072), (512, 512, 65536)]


def plan(only=None):
    """(kernel name, env var, variant, shape) rows, grouped by shape; cuBLAS first in each group."""
    from . import registry
    rows = []
    for shape in SQUARE:
        rows.append(("cublas", None, "cublas", shape))
        # The default first, the new variants next, the known BK=8 losers last (cut first by --max-seconds).
        order = [registry.TILES_09[0], *registry.VARIANTS_09, *registry.TILES_09[1:len(registry.TILES_10)]]
        rows += [("cuda.09_double_buffered", "CUDA_TILE_09", t, shape) for t in order]
    for shape in SPLIT_K:
        rows.append(("cublas", None, "cublas", shape))
        rows += [("cuda.10_split_k", "CUDA_TILE_10", t, shape) for t in registry.TILES_10[:2]]
    if only:
        keep = set(only)
        rows = [r for r in rows if r[0] == "cublas" or r[2] in keep]
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", default="sweep.json", help="JSON output path")
    ap.add_argument("--budget", type=float, default=0.5, help="measure budget_s per row")
    ap.add_argument("--only", default="", help="comma-separated variants to keep (cuBLAS rows always run)")
    ap.add_argument("--max-seconds", type=float, default=140.0, help="stop adding rows after this")
    args = ap.parse_args(argv)

    import cuda_kernels  # noqa: F401  (registers the cuda.* kernels)
    from compare import gpuinfo, registry as creg
    from compare.problem import Problem
    from compare.runner import run_kernel

    t_start = time.perf_counter()
    saved = {v: os.environ.get(v) for v in ("CUDA_TILE_09", "CUDA_TILE_10", "CUDA_SPLIT_K")}
    os.environ.pop("CUDA_SPLIT_K", None)  # split plan chosen automatically
    rows = plan([s for s in args.only.split(",") if s.strip()])
    out, base, skipped = [], {}, []
    hdr = f"{'kernel':<24} {'variant':<14} {'shape':<18} {'TFLOP/s':>8} {'%cuBLAS':>8} {'ms':>9} {'noise':>6} {'prep s':>7}  status"
    print(hdr)
    print("-" * len(hdr))
    try:
        for name, var, variant, shape in rows:
            if time.perf_counter() - t_start > args.max_seconds:
                skipped.append(f"{name} {variant} {shape}")
                continue
            if var:
                os.environ[var] = variant
            kernel = creg.get(name)
            p = Problem(*shape)
            r = run_kernel(kernel, p, measure_kw={"budget_s": args.budget})
            if var:
                os.environ.pop(var, None)
            if name == "cublas" and r.tflops:
                base[shape] = r.tflops
            pct = 100 * r.tflops / base[shape] if r.tflops and shape in base else None
            row = dict(kernel=name, variant=variant, shape="x".join(map(str, shape)), M=shape[0], N=shape[1],
                       K=shape[2], tflops=r.tflops, pct_cublas=pct, median_ms=r.median_ms, iqr_ms=r.iqr_ms,
                       noise=r.noise, samples=r.samples, prepare_s=r.prepare_s, status=r.status, reason=r.reason,
                       rel_err=r.rel_err, sm_clock_mhz=r.sm_clock_mhz, throttled=r.throttled)
            out.append(row)
            f = lambda x, fmt: format(x, fmt) if x is not None else "-"  # noqa: E731
            print(f"{name:<24} {variant:<14} {row['shape']:<18} {f(r.tflops, '8.2f')} {f(pct, '8.1f')} "
                  f"{f(r.median_ms, '9.3f')} {f(r.noise, '6.3f')} {f(r.prepare_s, '7.1f')}  "
                  f"{r.status}{(': ' + r.reason) if r.reason else ''}", flush=True)
    finally:
        for v, val in saved.items():
            if val is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = val

    # Best variant per shape.
    print()
    best = {}
    for row in out:
        if row["kernel"] != "cublas" and row["tflops"]:
            b = best.get(row["shape"])
            if b is None or row["tflops"] > b["tflops"]:
                best[row["shape"]] = row
    for shape, row in best.items():
        print(f"best at {shape}: {row['kernel']} {row['variant']} {row['tflops']:.2f} TFLOP/s "
              f"({row['pct_cublas']:.1f}% of cuBLAS)" if row["pct_cublas"] else f"best at {shape}: {row}")
    if skipped:
        print(f"skipped (over --max-seconds): {', '.join(skipped)}")
    total = time.perf_counter() - t_start
    print(f"total {total:.1f} s")
    try:
        env = gpuinfo.environment()
        env = env.__dict__ if hasattr(env, "__dict__") else str(env)
    except Exception as exc:  # the table matters more than the environment block
        env = f"unavailable: {exc}"
    with open(args.out, "w") as fh:
        json.dump(dict(rows=out, best=best, skipped=skipped, total_s=total, budget_s=args.budget,
                       environment=env), fh, indent=1, default=str)
    print(f"wrote {args.out}")
    return 0 if all(r["status"] == "ok" for r in out) else 1


if __name__ == "__main__":
    sys.exit(main())
