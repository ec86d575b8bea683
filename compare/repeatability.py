"""Does the engine give the same number twice? Measure one kernel N times in one process.

    python -m compare.repeatability [--kernel cublas] [--shape 4096] [--repeats 5] [-o results/x.json]

Prints each median and the spread (max - min) / median; exit 1 when the spread is over --limit.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compare.repeatability")
    ap.add_argument("--kernel", default="cublas")
    ap.add_argument("--shape", default="4096")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budget", type=float, default=2.0)
    ap.add_argument("--limit", type=float, default=0.01)
    ap.add_argument("-o", "--output")
    a = ap.parse_args(argv)
    from . import gpuinfo, registry
    from .inputs import gpu_available
    from .problem import Problem, parse_shape
    from .runner import run_kernel
    if not gpu_available():
        print("error: no CUDA GPU found", file=sys.stderr)
        return 2
    p = Problem(*parse_shape(a.shape), precision=a.precision)
    k = registry.get(a.kernel)
    rows = [run_kernel(k, p, measure_kw={"budget_s": a.budget}).as_dict() for _ in range(a.repeats)]
    meds = [r["median_ms"] for r in rows]
    spread = (max(meds) - min(meds)) / statistics.median(meds)
    for r in rows:
        print(f"{a.kernel} {p.shape} {a.precision}: median {r['median_ms']:.4f} ms  {r['tflops']:.2f} TFLOP/s  "
              f"IQR {r['iqr_ms']:.4f} ms  n={r['samples']}  noise={r['noise']:.2e}  clock={r['sm_clock_mhz']} MHz")
    print(f"spread (max-min)/median over {a.repeats} runs: {100 * spread:.2f}% (limit {100 * a.limit:.1f}%)")
    if a.output:
        with open(a.output, "w") as f:
            json.dump({"command": " ".join(sys.argv), "environment": gpuinfo.environment().as_dict(),
                       "spread": spread, "runs": rows}, f, indent=1)
    return 0 if spread <= a.limit else 1


if __name__ == "__main__":
    sys.exit(main())
