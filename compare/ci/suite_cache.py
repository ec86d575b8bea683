"""The measuring half of the asv suite (benchmarks/gemm.py declares the classes; this measures).

``measure_points`` runs a group's kernel x shape x precision points and their cuBLAS baselines in
the calling process (asv's setup_cache: one process per group), each (kernel, problem) once, all
through compare.harness.runner, and returns the picklable cache the benchmarks read: a row per
point (ok with its samples, n/a with why, failed with why) and the % of cuBLAS geometric means
(with per-sample values, ``pct_samples_of``).

``GEMM_BENCH_PHASES=FILE`` appends one JSON line of phase times per measuring process (a timing
log of the harness: nothing measured changes); compare.ci.profile_gate and docs/asv.md use it.
"""
from __future__ import annotations

import json
import math
import os
import sys
import time



def fits_or_na(problem) -> None:
    import torch

    from ..harness.inputs import check_fits
    from ..harness.problem import ProblemError
    try:
        check_fits(problem, torch.device("cuda"))
    except ProblemError as exc:     # does not fit this GPU's memory
        raise NotImplementedError(str(exc)) from None


def ok_or_raise(r) -> None:
    """A row that is not a measurement fails the benchmark (asv: failed, no number)."""
    if r.status != "ok" or not r.median_ms:
        raise AssertionError(f"{r.kernel} {r.shape} {r.precision}: {r.status_text or r.status}, not timed")
    if r.throttled:
        print(f"warning: {r.kernel} {r.shape} {r.precision}: GPU throttled while measuring "
              f"({', '.join(r.throttle_reasons) or 'SM clock below 95% of max'})", file=sys.stderr)


def pct_of(kernel_name: str, precision: str, shapes: list[str], results) -> float:
    """Geometric mean over ``shapes`` of ``kernel_name``'s % of cuBLAS in ``results`` (rows of one
    process: runner.run filled pct_cublas). Raises AssertionError when a shape has no number."""
    pcts = []
    for r in results:
        if r.kernel != kernel_name or r.precision != precision or r.shape not in shapes:
            continue
        ok_or_raise(r)
        if not r.pct_cublas or not math.isfinite(r.pct_cublas):
            raise AssertionError(f"{kernel_name} {r.shape} {precision}: no cuBLAS baseline")
        pcts.append(r.pct_cublas)
        print(f"{kernel_name} {r.shape} {precision}: {r.pct_cublas:.1f}% of cuBLAS", file=sys.stderr)
    if len(pcts) != len(shapes):
        raise AssertionError(f"{kernel_name} {precision}: {len(pcts)} of {len(shapes)} shapes measured")
    return math.exp(sum(math.log(x) for x in pcts) / len(pcts))


def pct_samples_of(kernel_name: str, precision: str, shapes: list[str], results) -> list:
    """Per-sample % of cuBLAS, for the gate's distribution comparison: sample i of a shape is
    pct_cublas x median / t_i (the kernel's sample i against the same process's cuBLAS median,
    so the machine's drift cancels as in the value); across shapes, the geometric mean of the
    i-th samples. Its median is the value (exactly for one shape and an odd count). [] when a
    row has no per-sample times."""
    per_shape = []
    for r in results:
        if r.kernel == kernel_name and r.precision == precision and r.shape in shapes:
            if not r.times_ms or not r.pct_cublas:
                return []
            per_shape.append([r.pct_cublas * r.median_ms / t for t in r.times_ms if t > 0])
    if len(per_shape) != len(shapes):
        return []
    n = min(len(x) for x in per_shape)
    return [math.exp(sum(math.log(x[i]) for x in per_shape) / len(per_shape)) for i in range(n)]


def pct_track_value(entry):
    """What a % of cuBLAS track hands asv from a cache entry: its samples (asv records their median
    and, with --record-samples, the samples) or the geometric mean; raises for an error text."""
    if isinstance(entry, str):
        raise AssertionError(entry)
    if entry.get("error"):
        raise AssertionError(entry["error"])
    if entry["samples"]:
        return {"samples": entry["samples"], "number": 1}
    return entry["value"]



def phase_log(record: dict) -> None:
    """GEMM_BENCH_PHASES=FILE: append one JSON line of phase times per process (a timing log of
    the harness only; it changes nothing that is measured). compare.ci.profile_gate reads it."""
    path = os.environ.get("GEMM_BENCH_PHASES", "").strip()
    if not path:
        return
    line = json.dumps(record, sort_keys=True) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())       # one write of one line: lines of processes don't mix
    finally:
        os.close(fd)


def process_age_s():
    """Seconds since this process started (Linux), else None: the interpreter + import share."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            up = float(f.read().split()[0])
        return up - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def row_summary(r) -> dict:
    if r.status == "unsupported":
        return {"status": "na", "why": f"{r.kernel} can't run {r.shape} {r.precision}: {r.reason}"}
    if r.status != "ok" or not r.median_ms:
        from ..harness.cuda_faults import sticky_cuda_error
        label = "FAULT" if r.status == "error" and sticky_cuda_error(r.reason) else r.status
        return {"status": "failed", "why": f"{r.kernel} {r.shape} {r.precision}: {r.status_text or r.status}, not timed",
                "label": label, "reason": r.reason or ("no time" if r.status == "ok" else "")}
    return {"status": "ok", "median_s": r.median_ms / 1e3, "times_s": [t / 1e3 for t in (r.times_ms or [])],
            "throttled": bool(r.throttled), "throttle_reasons": list(r.throttle_reasons or []),
            # the per-shape tracks (benchmarks/gemm.py Skinny*): runner.run filled them
            "pct_cublas": r.pct_cublas, "gbps": r.gbps, "min_bytes": r.min_bytes}


def _run_isolated(pairs, progress):
    """The group's pairs through a worker process (compare.harness.worker) on a real GPU, so a
    kernel that faults or hangs costs its own points, not the rest of its group; in this process
    where there is no GPU to poison (the CPU tests' fake one)."""
    import torch

    from ..harness import runner
    if not torch.cuda.is_available():
        return runner.run(pairs, batch=False, progress=progress)
    from ..harness.worker import Worker
    with Worker() as pool:
        return runner.run(pairs, batch=False, progress=progress, execute=pool.run_kernel)


def measure_points(points, pct_sets) -> dict:
    """Measure every (kernel, shape, precision) of ``points`` in this process (cuBLAS baselines
    added), and the % of cuBLAS geometric mean of every (kernel, precision, shapes) of
    ``pct_sets``. Returns the picklable cache the benchmarks read:
    {"na": reason or None, "rows": {(kernel, shape, precision): summary}, "pct": {(kernel,
    precision): float or error text}}. An ok row carries its % of cuBLAS and achieved GB/s too."""
    from ..harness import registry, runner
    from ..harness.inputs import gpu_available
    from ..harness.problem import Problem, parse_shape

    t0 = time.perf_counter()
    age = process_age_s()
    if not gpu_available():
        return {"na": "no CUDA GPU", "rows": {}, "pct": {}}
    import torch
    t_ctx = time.perf_counter()
    if torch.cuda.is_available():      # (the CPU tests fake a GPU without one)
        torch.cuda.init()
        torch.empty(1, device="cuda")
        torch.cuda.synchronize()
    ctx_s = time.perf_counter() - t_ctx
    rows, pairs = {}, []
    wanted = list(dict.fromkeys(list(points) + [(k, s, p) for k, p, shapes in pct_sets for s in shapes]))
    for kname, shape, prec in wanted:
        k = registry.get(kname)
        if prec not in k.precisions:
            rows[(kname, shape, prec)] = {"status": "na", "why": f"{kname} has no {prec} path (has {', '.join(k.precisions)})"}
            continue
        problem = Problem(*parse_shape(shape), precision=prec)
        try:
            fits_or_na(problem)
        except NotImplementedError as exc:
            rows[(kname, shape, prec)] = {"status": "na", "why": str(exc)}
            continue
        pairs.append((k, problem))
    cublas = registry.get("cublas")
    pairs = pairs + [(cublas, p) for _, p in pairs]
    pairs.sort(key=lambda kp: (kp[1].shape, kp[1].precision, kp[0].family != "cublas"))   # inputs shared per problem
    pairs = runner.baseline_pairs(pairs)
    phases = []

    def progress(k, p):
        phases.append({"kernel": k.name, "shape": p.shape, "precision": p.precision, "t": time.perf_counter()})
    results = _run_isolated(pairs, progress)
    t_end = time.perf_counter()
    for i, r in enumerate(results):
        phases[i].update(status=r.status, prepare_s=r.prepare_s,
                         wall_s=(phases[i + 1]["t"] if i + 1 < len(phases) else t_end) - phases[i]["t"])
        rows.setdefault((r.kernel, r.shape, r.precision), row_summary(r))
    pct = {}
    for kname, prec, shapes in pct_sets:
        try:
            pct[(kname, prec)] = {"value": pct_of(kname, prec, list(shapes), results),
                                  "samples": pct_samples_of(kname, prec, list(shapes), results)}
        except AssertionError as exc:
            bad = next((r for r in results if r.kernel == kname and r.precision == prec and r.shape in shapes
                        and (r.status != "ok" or not r.median_ms)), None)
            pct[(kname, prec)] = {"error": str(exc), "label": bad.status if bad else "FAILED",
                                  "reason": bad.reason if bad else str(exc)}
    phase_log({"kind": "setup_cache", "pid": os.getpid(), "process_age_at_start_s": age,
                "cuda_context_s": ctx_s,
                "rows": [{k: v for k, v in ph.items() if k != "t"} for ph in phases],
                "measure_s": t_end - t_ctx - ctx_s, "total_s": t_end - t0})
    return {"na": None, "rows": rows, "pct": pct}
