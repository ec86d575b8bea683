"""One kernel at one problem timed by NVIDIA's cuda-bench (nvbench's Python bindings): its cold GPU time.

    python -m compare.ci.cudabench_cold --kernel cublas --shape 4096 [--precision fp32]

The kernel is prepared and checked through compare.harness.runner (the same launch the engine
times), then handed to cuda-bench, which owns the timing loop: cold = L2 flushed and its
blocking kernel before every launch, until its own noise criterion. The launch goes on
cuda-bench's stream (torch.cuda.ExternalStream over ``launch.get_stream().addressof()``; every
family launches on torch's current stream). cuda-bench runs its benchmarks once per process,
so each comparison is a process of its own (tests/test_gpu_cudabench.py). Prints one JSON line
on stdout: {"kernel", "shape", "precision", "cold_gpu_ms", "summaries": {tag: value}}.
Exit 2 when cuda-bench or a GPU is missing, 1 when the kernel fails its check.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from typing import Optional

from ..harness import registry
from ..harness.problem import Problem, parse_shape

# cuda.bench (optional) and torch, with the harness modules that import it (runner, inputs), are
# imported by main once its flags are parsed, so that --help starts without them.


def read_cold_times(doc: dict) -> dict:
    """{summary tag: float} of the first state's nv/cold/time/gpu/* summaries in cuda-bench's JSON."""
    out = {}
    for bench in doc.get("benchmarks", []):
        for state in bench.get("states", []):
            for s in state.get("summaries") or []:
                tag = s.get("tag", "")
                if not tag.startswith("nv/cold/time/gpu/"):
                    continue
                for d in s.get("data", []):
                    if d.get("name") == "value":
                        try:
                            out[tag] = float(d.get("value"))
                        except (TypeError, ValueError):
                            pass
            if out:
                return out
    return out


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compare.ci.cudabench_cold", description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--shape", required=True)
    ap.add_argument("--precision", default="fp32")
    args = ap.parse_args(argv)
    try:
        import cuda.bench as bench
    except ImportError as exc:
        print(json.dumps({"error": f"cuda-bench is not installed ({exc})"}))
        return 2
    import torch

    from ..harness import runner
    from ..harness.inputs import make_inputs

    if not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA GPU"}))
        return 2
    k = registry.get(args.kernel)
    problem = Problem(*parse_shape(args.shape), precision=args.precision)
    inputs = make_inputs(problem)
    launch, _ = runner.prepare(k, problem, inputs)
    res = runner.checked_run(problem, inputs, launch)
    if not res.ok:
        print(json.dumps({"error": f"{args.kernel} FAILED its check: {res.message}"}))
        return 1

    def gemm(state):
        def launcher(nv_launch):
            stream = torch.cuda.ExternalStream(nv_launch.get_stream().addressof())
            with torch.cuda.stream(stream):
                launch()
        state.exec(launcher)

    bench.register(gemm)
    fd, path = tempfile.mkstemp(suffix=".json", prefix="cudabench-")
    os.close(fd)
    try:
        # cuda-bench prints its own table on stdout: keep stdout for our one JSON line
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(2, 1)
        try:
            try:
                bench.run_all_benchmarks([sys.argv[0], "--json", path])
            except SystemExit:      # it may exit like a CLI; the JSON file is what we read
                pass
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        with open(path, encoding="utf-8") as f:
            summaries = read_cold_times(json.load(f))
    finally:
        os.unlink(path)
    cold = summaries.get("nv/cold/time/gpu/median", summaries.get("nv/cold/time/gpu/mean"))
    print(json.dumps({"kernel": args.kernel, "shape": problem.shape, "precision": args.precision,
                      "cold_gpu_ms": None if cold is None else cold * 1e3, "summaries": summaries}))
    return 0 if cold is not None else 1


if __name__ == "__main__":
    sys.exit(main())
