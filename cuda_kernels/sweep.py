"""Time the tile options of the pipelined stages (09, 10, 11) and stage 11's decompositions against
cuBLAS measured in the same process, in one short GPU run.

    python -m cuda_kernels.sweep -o out.json [--budget 0.5] [--only 128x256x8,128x128x16]

Each row is a kernel with options (``tile=...``, ``mode=...``: the kernel's declared options,
the same as ``python -m compare --opt``) run through ``compare.harness.runner.run_kernel``, so it is
checked against the float64 reference before it is timed (a wrong variant is FAILED, not timed)
and its ``config`` is what the kernel resolved. Every shape's rows start with cuBLAS, measured
here, in this run: the %-of-cuBLAS column never quotes an old number. No cache needs clearing
between variants: each is its own template instantiation (NVRTC name expression); all of a
file's instantiations compile together on the first use (one NVRTC run per file, ~10-30 s,
reported as prepare_s of the first row). Prints a table and writes JSON (atomically); stops
adding rows once ``--max-seconds`` have passed (default 140) and says which it skipped.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

SQUARE = [(4096, 4096, 4096), (8192, 8192, 8192)]
SPLIT_K = [(256, 256, 131072), (512, 512, 65536)]
# Wave-quantization shapes for stage 11: 64 tiles on 132 SMs, 7.27 waves of 132, skinny M and N.
STREAM_K = [(1000, 1000, 1000), (3000, 5000, 2000), (64, 4096, 4096), (8192, 64, 4096)]


def plan(only=None):
    """(kernel name, options, shape) rows, grouped by shape; cuBLAS first in each group."""
    from . import registry
    rows = []
    for shape in SQUARE:
        rows.append(("cublas", {}, shape))
        # The default first, the new variants next, the known BK=8 losers last (cut first by --max-seconds).
        order = [registry.DEFAULT_TILE[9], *[t for t in registry.TILES_09 if t != registry.DEFAULT_TILE[9]]]
        rows += [("cuda.09_double_buffered", {"tile": t}, shape) for t in order]
        rows.append(("cuda.11_stream_k", {}, shape))
    for shape in SPLIT_K:
        rows.append(("cublas", {}, shape))
        rows += [("cuda.10_split_k", {"tile": t}, shape) for t in registry.TILES_10[:2]]
        rows.append(("cuda.11_stream_k", {}, shape))
    for shape in STREAM_K:
        rows.append(("cublas", {}, shape))
        rows.append(("cuda.11_stream_k", {}, shape))
        rows += [("cuda.11_stream_k", {"mode": m}, shape) for m in ("dp", "sk", "hybrid")]
        rows += [("cuda.11_stream_k", {"tile": t}, shape) for t in registry.STREAM_K_TILES]
        rows.append(("cuda.11_stream_k_atomic", {}, shape))
    if only:
        keep = set(only)
        rows = [r for r in rows if r[0] == "cublas" or keep & set(r[1].values())]
    return rows


def _variant(options: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in options.items()) or "default"


def _write_json(path: str, payload: dict) -> None:
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".sweep-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(payload, fh, indent=1, default=str)
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--out", default="sweep.json", help="JSON output path")
    ap.add_argument("--budget", type=float, default=0.5, help="measure budget_s per row")
    ap.add_argument("--only", default="", help="comma-separated option values to keep (cuBLAS rows always run)")
    ap.add_argument("--max-seconds", type=float, default=140.0, help="stop adding rows after this")
    args = ap.parse_args(argv)

    import cuda_kernels  # noqa: F401  (registers the cuda.* kernels)
    from compare.harness import gpuinfo, registry as creg
    from compare.harness.problem import Problem
    from compare.harness.runner import run_kernel

    t_start = time.perf_counter()
    rows = plan([s for s in args.only.split(",") if s.strip()])
    out, base, skipped = [], {}, []
    hdr = f"{'kernel':<24} {'options':<22} {'shape':<18} {'TFLOP/s':>8} {'%cuBLAS':>8} {'ms':>9} {'noise':>6} {'prep s':>7}  status"
    print(hdr)
    print("-" * len(hdr))
    for name, options, shape in rows:
        variant = _variant(options)
        if time.perf_counter() - t_start > args.max_seconds:
            skipped.append(f"{name} {variant} {shape}")
            continue
        kernel = creg.get(name)
        p = Problem(*shape)
        r = run_kernel(kernel, p, measure_kw={"budget_s": args.budget},
                       options=kernel.parse_options({k: str(v) for k, v in options.items()}))
        if name == "cublas" and r.tflops:
            base[shape] = r.tflops
        pct = 100 * r.tflops / base[shape] if r.tflops and shape in base else None
        row = dict(kernel=name, options=options, variant=variant, shape="x".join(map(str, shape)), M=shape[0],
                   N=shape[1], K=shape[2], tflops=r.tflops, pct_cublas=pct, median_ms=r.median_ms, iqr_ms=r.iqr_ms,
                   noise=r.noise, samples=r.samples, prepare_s=r.prepare_s, status=r.status, reason=r.reason,
                   rel_err=r.rel_err, sm_clock_mhz=r.sm_clock_mhz, throttled=r.throttled, config=r.config)
        out.append(row)
        f = lambda x, fmt: format(x, fmt) if x is not None else "-"  # noqa: E731
        print(f"{name:<24} {variant:<22} {row['shape']:<18} {f(r.tflops, '8.2f')} {f(pct, '8.1f')} "
              f"{f(r.median_ms, '9.3f')} {f(r.noise, '6.3f')} {f(r.prepare_s, '7.1f')}  "
              f"{r.status}{(': ' + r.reason) if r.reason else ''}", flush=True)

    # Best variant per shape.
    print()
    best = {}
    for row in out:
        if row["kernel"] != "cublas" and row["tflops"]:
            b = best.get(row["shape"])
            if b is None or row["tflops"] > b["tflops"]:
                best[row["shape"]] = row
    for shape, row in best.items():
        pct = f" ({row['pct_cublas']:.1f}% of cuBLAS)" if row["pct_cublas"] else ""
        print(f"best at {shape}: {row['kernel']} {row['variant']} {row['tflops']:.2f} TFLOP/s{pct}")
    if skipped:
        print(f"skipped (over --max-seconds): {', '.join(skipped)}")
    total = time.perf_counter() - t_start
    print(f"total {total:.1f} s")
    try:
        env = gpuinfo.environment()
        env = env.__dict__ if hasattr(env, "__dict__") else str(env)
    except Exception as exc:  # the table matters more than the environment block
        env = f"unavailable: {exc}"
    _write_json(args.out, dict(rows=out, best=best, skipped=skipped, total_s=total, budget_s=args.budget,
                               environment=env))
    print(f"wrote {args.out}")
    return 0 if all(r["status"] == "ok" for r in out) else 1


if __name__ == "__main__":
    sys.exit(main())
