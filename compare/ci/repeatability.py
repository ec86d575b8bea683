"""Does the engine give the same number twice? Measure one kernel N times in one process.

    python -m compare.ci.repeatability [--kernel cublas] [--shape 4096] [--repeats 5] [-o results/x.json]

Prints each median and the spread (max - min) / median; exit 1 when the spread is over --limit
or a run is not ok (FAILED, error), 2 when it can't start.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys

from ..harness import gpuinfo, registry
from ..harness.files import write_text_atomically
from ..harness.problem import Problem, ProblemError, parse_shape

# compare.harness.runner and .inputs import torch (~1 s): main imports them once its flags are
# parsed, so that --help starts without it.



def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compare.ci.repeatability")
    ap.add_argument("--kernel", default="cublas")
    ap.add_argument("--shape", default="4096")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budget", type=float, default=2.0)
    ap.add_argument("--limit", type=float, default=0.01)
    ap.add_argument("-o", "--output")
    argv = sys.argv[1:] if argv is None else list(argv)
    a = ap.parse_args(argv)
    from ..harness.inputs import gpu_available
    from ..harness.runner import OK, run_kernel
    try:
        p = Problem(*parse_shape(a.shape), precision=a.precision)
        k = registry.get(a.kernel)
    except (ProblemError, KeyError) as exc:
        print(f"error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    if a.output:
        parent = os.path.dirname(os.path.abspath(a.output))
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
            print(f"error: -o {a.output}: directory {parent} does not exist or is not writable", file=sys.stderr)
            return 2
    if not gpu_available():
        print("error: no CUDA GPU found", file=sys.stderr)
        return 2
    rows = []
    for _ in range(a.repeats):
        r = run_kernel(k, p, measure_kw={"budget_s": a.budget})
        if r.status != OK:
            print(f"{a.kernel} {p.shape} {a.precision}: {r.status_text}", file=sys.stderr)
            return 1
        rows.append(r.as_dict())
    meds = [r["median_ms"] for r in rows]
    spread = (max(meds) - min(meds)) / statistics.median(meds)
    for r in rows:
        print(f"{a.kernel} {p.shape} {a.precision}: median {r['median_ms']:.4f} ms  {r['tflops']:.2f} TFLOP/s  "
              f"IQR {r['iqr_ms']:.4f} ms  n={r['samples']}  noise={r['noise']:.2e}  clock={r['sm_clock_mhz']} MHz")
    print(f"spread (max-min)/median over {a.repeats} runs: {100 * spread:.2f}% (limit {100 * a.limit:.1f}%)")
    if a.output:
        doc = {"command": shlex.join(["python", "-m", "compare.ci.repeatability", *argv]),
               "environment": gpuinfo.environment().as_dict(), "spread": spread, "runs": rows}
        write_text_atomically(a.output, json.dumps(doc, indent=1))
    return 0 if spread <= a.limit else 1


if __name__ == "__main__":
    sys.exit(main())
