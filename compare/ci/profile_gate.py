"""Where an asv benchmark process's time goes: the per-process breakdown, cold and warm caches.

    python -m compare.ci.profile_gate [--point KERNEL:SHAPE:PRECISION ...] [--cache-dir DIR] [-o FILE.json]

Starts one fresh process per point, exactly like the suite's processes before the per-group
setup_cache (one interpreter, one torch import, one CUDA context per point), and has it record
the phases of the one pipeline (compare.harness.runner's steps, timed apart):

  interpreter   process start -> this module's main (python startup, site, argument parsing)
  import_torch  ``import torch``
  import_suite  the registry and kernel modules (triton, cupy, the kernel sources)
  cuda_context  first CUDA call (context creation, ~0.3-1 s)
  inputs        operands and the float64 reference
  compile       ``runner.prepare``: NVRTC or Triton compile (or their disk-cache hit), autotune, first launch
  check         NaN-poisoned launch compared with float64
  sampling      ``timing.measure`` (warm-up, hold calibration, adaptive samples)
  batch         ``batch_time.measure_batch`` (CUDA-graph capture + replays)

Each point runs twice: with EMPTY compile caches (TRITON_CACHE_DIR and CUPY_CACHE_DIR pointed at
a fresh folder: what a CI runner without kept caches pays) and again with the caches the first
run filled (warm: what .ci/gpu pays when the runner keeps them). The parent also times each
process from outside (``wall``): wall - the sum of phases is process teardown and what the
clock inside can't see. Prints a table, writes JSON with ``-o``. Exit 2 without a GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Optional

_CHILD = "--child"
DEFAULT_POINTS = ("cublas:1024:fp32", "cuda.09_double_buffered:1024:fp32", "triton.tiled:1024:fp32",
                  "triton.stream_k:256x256x32768:fp32", "triton.tiled:1024:tf32")
PHASES = ("interpreter", "import_torch", "import_suite", "cuda_context", "inputs", "compile", "check",
          "sampling", "batch")
# The child times its imports (import_torch, import_suite: what loaded before _child counts as
# "interpreter"), so this module imports the harness inside its functions.


def _child(point: str) -> int:
    from .suite_cache import process_age_s   # (imports no torch)
    ph = {"interpreter": process_age_s()}
    t = time.perf_counter()

    def lap(name):
        nonlocal t
        now = time.perf_counter()
        ph[name] = now - t
        t = now
    import torch
    lap("import_torch")
    from ..harness import batch_time, registry, runner, timing
    from ..harness.inputs import make_inputs
    from ..harness.problem import Problem, parse_shape
    lap("import_suite")
    if not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA GPU"}))
        return 2
    torch.empty(1, device="cuda")
    torch.cuda.synchronize()
    lap("cuda_context")
    name, shape, precision = point.split(":")
    k = registry.get(name)
    problem = Problem(*parse_shape(shape), precision=precision)
    inputs = make_inputs(problem)
    torch.cuda.synchronize()
    lap("inputs")
    launch, _ = runner.prepare(k, problem, inputs)
    lap("compile")
    res = runner.checked_run(problem, inputs, launch)
    lap("check")
    m = timing.measure(launch, before=inputs.reset_c)
    lap("sampling")
    b = batch_time.measure_batch(launch, m.median_s)
    lap("batch")
    print(json.dumps({"point": point, "phases": ph, "check_ok": res.ok, "samples": m.samples,
                      "median_ms": m.median_s * 1e3, "batch_ms": None if b.per_launch_s is None else b.per_launch_s * 1e3,
                      "batch_method": b.method, "host_launch_us": m.dispatch_us}))
    return 0


def run_point(point: str, cache_dir: str) -> dict:
    env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(cache_dir, "triton"),
               CUPY_CACHE_DIR=os.path.join(cache_dir, "cupy"))
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "compare.ci.profile_gate", _CHILD, point], env=env,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    try:
        d = json.loads((p.stdout.strip().splitlines() or ["{}"])[-1])
    except ValueError:
        d = {"error": f"exit {p.returncode}: {(p.stderr.strip().splitlines() or [''])[-1][:300]}"}
    d["wall_s"] = wall
    d.setdefault("point", point)
    return d


def table(runs: list) -> str:
    head = ["point", "caches", "wall"] + list(PHASES)
    lines = [head]
    for r in runs:
        ph = r.get("phases") or {}
        lines.append([r["point"], r["caches"], f"{r['wall_s']:.2f}"] +
                     [("-" if ph.get(p) is None else f"{ph[p]:.2f}") for p in PHASES])
    w = [max(len(x[i]) for x in lines) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w[i]) if i > 1 else c.ljust(w[i]) for i, c in enumerate(x)) for x in lines)


def main(argv: Optional[list] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == _CHILD:
        return _child(argv[1])
    ap = argparse.ArgumentParser(prog="python -m compare.ci.profile_gate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--point", action="append", metavar="KERNEL:SHAPE:PRECISION",
                    help=f"repeatable (default: {' '.join(DEFAULT_POINTS)})")
    ap.add_argument("--cache-dir", help="compile-cache folder for the cold/warm runs (default: a fresh temporary one, removed after)")
    ap.add_argument("-o", "--output")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    points = args.point or list(DEFAULT_POINTS)
    bad = [p for p in points if p.count(":") != 2]
    if bad:
        print(f"error: --point {bad[0]!r}: give KERNEL:SHAPE:PRECISION, e.g. triton.tiled:1024:fp32", file=sys.stderr)
        return 2
    from ..harness.files import write_text_atomically
    if args.output:
        write_text_atomically(args.output, "{}")
    cache = args.cache_dir or tempfile.mkdtemp(prefix="gemm-profile-cache-")
    if args.cache_dir and os.listdir(cache):
        print(f"error: --cache-dir {cache} is not empty: the cold run needs empty caches", file=sys.stderr)
        return 2
    runs = []
    try:
        for caches in ("cold", "warm"):
            for p in points:
                r = run_point(p, cache)
                r["caches"] = caches
                runs.append(r)
                if "error" in r:
                    print(f"error: {p}: {r['error']}", file=sys.stderr)
                    if "no CUDA GPU" in r["error"]:
                        return 2
                print(f"{caches} {p}: {r['wall_s']:.2f} s", flush=True)
    finally:
        if not args.cache_dir:
            shutil.rmtree(cache, ignore_errors=True)
    print(table(runs))
    summary = {}
    for caches in ("cold", "warm"):
        rs = [r for r in runs if r["caches"] == caches and "phases" in r]
        if rs:
            summary[caches] = {"mean_wall_s": sum(r["wall_s"] for r in rs) / len(rs),
                               **{p: sum((r["phases"].get(p) or 0) for r in rs) / len(rs) for p in PHASES}}
    print(json.dumps(summary, indent=1))
    if args.output:
        write_text_atomically(args.output, json.dumps({"summary": summary, "runs": runs}, indent=1) + "\n")
    return 1 if any("error" in r for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
