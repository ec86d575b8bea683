"""What an asv point of benchmarks/gemm.py does: the group's one measuring process (its
``setup_cache``) and the shared bases whose ``setup`` says n/a and whose value reader fails a
bad point with a note for the gate.

asv's setup_cache runs once per key (the defining file and LINE of the function) and hands its
return value to every benchmark that shares the key. One function per group (and one each for
the sweep and the skinny set), each on its own line: the group's time points, their % of cuBLAS
twins and the cuBLAS baselines are all measured in ONE process, each (kernel, problem) once; the per-point asv
processes only read the result (no CUDA, no compile). With launch_method forkserver
(asv.conf.json) those processes are forks of one that has imported the suite (torch, triton)
already.

The bases' names start with an underscore: asv imports every module of benchmarks/ and collects
no class so named.
"""
from __future__ import annotations

import math
import os
import sys
import time

from benchmarks.params import (SWEEP_CLASS_NAMES, precisions, shapes, skinny_params, suites, sweep_kernels,
                               sweep_shape_texts)
from compare.ci import failure_notes
from compare.ci import suite_cache  # the measuring half of the suite
from compare.harness import inputs, registry
from compare.harness.problem import Problem, parse_shape

_T_MODULE = time.perf_counter()
measure_points = suite_cache.measure_points


def _precision_or_na(kernel_name: str, precision: str, check_gpu: bool = True) -> None:
    """n/a only without a GPU or without the precision: a kernel that refuses some shapes of a
    geometric mean's set fails (geomean_pct_cublas says which), it is not n/a."""
    if check_gpu and not inputs.gpu_available():
        raise NotImplementedError("no CUDA GPU")
    k = registry.get(kernel_name)
    if precision not in k.precisions:
        raise NotImplementedError(f"{kernel_name} has no {precision} path (has {', '.join(k.precisions)})")


def _note_failure(point, kernel: str, status: str, reason: str) -> None:
    """Leave the failure's reason where compare.ci.gate finds it (inside an asv run only)."""
    results_dir = failure_notes.results_dir_of_asv_run()
    if point is None or results_dir is None:
        return
    try:
        failure_notes.add(results_dir, os.environ["ASV_COMMIT"], point[0], point[1], kernel, status, reason)
    except OSError as exc:
        print(f"warning: could not write the failure note: {exc}", file=sys.stderr)


def _point(bench, method: str, params) -> tuple[str, list]:
    """(asv's benchmark name, parameter values as text) of a point, as asv's result files name it:
    ``gemm.Class.method``, the module being the one that defines the class."""
    module = type(bench).__module__.rsplit(".", 1)[-1]
    return f"{module}.{type(bench).__name__}.{method}", [str(p) for p in params]


def geomean_pct_cublas(kernel_name: str, precision: str, shapes: list[str]) -> float:
    """Geometric mean over ``shapes`` of the kernel's % of cuBLAS, kernel and cuBLAS measured in
    one process by the suite's own measuring function (``measure_points``). Every shape must run: a geomean over a different set of shapes would
    not be comparable between commits."""
    k = registry.get(kernel_name)
    problems = [Problem(*parse_shape(s), precision=precision) for s in shapes]
    refused = [f"{p.shape}: {k.why_not(p)}" for p in problems if k.why_not(p)]
    if refused:
        raise AssertionError(f"{kernel_name} can't run every shape of the set: {'; '.join(refused)}")
    cache = measure_points([], [(kernel_name, precision, tuple(p.shape for p in problems))])
    _cache_na(cache)                               # (no GPU: said by the cache)
    entry = cache["pct"][(kernel_name, precision)]
    if "error" in entry:
        raise AssertionError(entry["error"])
    return entry["value"]


# ---------------------------------------------------------------------------- one process per group

def _group_cache(group: str) -> dict:
    points, pct_sets = [], []
    for _name, kernel_names, precs in suites(group):
        points += [(k, s, p) for k in kernel_names for s in shapes(group) for p in precs]
        pct_sets += [(k, p, tuple(shapes(group))) for k in kernel_names
                     if registry.get(k).family != "cublas" for p in precs]
    return measure_points(points, pct_sets)


def _sweep_cache() -> dict:
    sweep = sweep_shape_texts()
    allowed = precisions()
    pct_sets = [(k, p, tuple(sweep)) for family in SWEEP_CLASS_NAMES for k in sweep_kernels(family)
                for p in allowed if p in registry.get(k).precisions]
    return measure_points([], pct_sets)


def _skinny_cache() -> dict:
    """Every point of the skinny classes (fp32 and tensor-core, cuBLAS included): their % of
    cuBLAS and GB/s twins read the same rows."""
    points = []
    for tensor_core in (False, True):
        kernel_names, shape_texts, precs = skinny_params(tensor_core, cublas=True)
        points += [(k, s, p) for k in kernel_names for s in shape_texts for p in precs]
    return measure_points(points, [])


# One function per key (asv keys a setup_cache by its line): keep each on a line of its own.
def cache_naive(self):
    return _group_cache("naive")


def cache_tiled(self):
    return _group_cache("tiled")


def cache_split_k(self):
    return _group_cache("split_k")


def cache_sweep(self):
    return _sweep_cache()


def cache_skinny(self):
    return _skinny_cache()


SETUP_CACHES = {"naive": cache_naive, "tiled": cache_tiled, "split_k": cache_split_k, "sweep": cache_sweep,
                "skinny": cache_skinny}
for _f in SETUP_CACHES.values():
    _f.timeout = 1800       # a whole group: every kernel x shape x precision, compiles included


def _pct_value(bench, method: str, cache, kernel: str, precision: str):
    """A % of cuBLAS point's value; a failed one leaves its note (the first bad row's status and
    reason) for the gate before asv records the failure."""
    entry = cache["pct"][(kernel, precision)]
    if isinstance(entry, dict) and entry.get("error"):
        _note_failure(_point(bench, method, (kernel, precision)), kernel, entry["label"], entry["reason"])
        raise AssertionError(entry["error"])
    return suite_cache.pct_track_value(entry)


def _cache_na(cache) -> None:
    if cache.get("na"):
        raise NotImplementedError(cache["na"])


def _point_log(what: str) -> None:
    if os.environ.get("GEMM_BENCH_PHASES"):
        suite_cache.phase_log({"kind": "point", "what": what, "pid": os.getpid(),
                               "process_age_s": suite_cache.process_age_s(),
                               "since_module_import_s": time.perf_counter() - _T_MODULE})


class _Common:
    """asv settings shared by the benchmark classes (leading underscore: asv does not collect it)."""

    # One call per process: the engine samples adaptively by itself (in setup_cache).
    repeat = 1
    number = 1
    rounds = 1
    min_run_count = 1
    warmup_time = 0
    # A point only reads its group's setup_cache result.
    timeout = 120


class _GemmTrack(_Common):
    """Time of one kernel x shape x precision point (measured in the group's setup_cache)."""

    unit = "seconds"
    param_names = ["kernel", "shape", "precision"]

    def setup(self, cache, kernel, shape, precision):
        _cache_na(cache)
        row = cache["rows"].get((kernel, shape, precision))
        if row is None:
            raise NotImplementedError(f"{kernel} {shape} {precision}: not measured")
        if row["status"] == "na":
            raise NotImplementedError(row["why"])

    def _ok_row(self, method: str, cache, kernel, shape, precision, what: str = "") -> dict:
        """The point's measured row; a failed one leaves its note for the gate and raises."""
        row = cache["rows"][(kernel, shape, precision)]
        _point_log(f"{kernel} {shape} {precision}{what}")
        if row["status"] != "ok":
            _note_failure(_point(self, method, (kernel, shape, precision)), kernel, row.get("label", ""),
                          row.get("reason", ""))
            raise AssertionError(row["why"])
        if row["throttled"]:
            print(f"warning: {kernel} {shape} {precision}: GPU throttled while measuring "
                  f"({', '.join(row['throttle_reasons']) or 'SM clock below 95% of max'})", file=sys.stderr)
        return row

    def _time(self, cache, kernel, shape, precision):
        row = self._ok_row("track_time", cache, kernel, shape, precision)
        if row["times_s"]:
            return {"samples": row["times_s"], "number": 1}
        return row["median_s"]


class _PctTrack(_Common):
    """Geometric mean of % of cuBLAS of one kernel x precision over its group's shapes."""

    unit = "% of cuBLAS"
    param_names = ["kernel", "precision"]

    def setup(self, cache, kernel, precision):
        _cache_na(cache)                               # (no GPU: said by the cache)
        _precision_or_na(kernel, precision, check_gpu=False)

    def _pct(self, cache, kernel, precision):
        _point_log(f"{kernel} {precision} pct")
        return _pct_value(self, "track_pct_cublas", cache, kernel, precision)


class _SweepTrack(_PctTrack):
    """Geometric mean of % of cuBLAS of a family's general-purpose kernel over the sweep set
    (unit, params and setup as a group's % of cuBLAS)."""

    def _geomean(self, cache, kernel, precision):
        _point_log(f"{kernel} {precision} sweep")
        return _pct_value(self, "track_geomean_pct_cublas", cache, kernel, precision)


class _SkinnyPctTrack(_GemmTrack):
    """% of cuBLAS (same process) of one kernel x shape x precision point of the skinny set."""

    unit = "% of cuBLAS"

    def _pct_of_row(self, cache, kernel, shape, precision):
        row = self._ok_row("track_pct_cublas", cache, kernel, shape, precision, " pct")
        pct = row.get("pct_cublas")
        if not pct or not math.isfinite(pct):
            raise AssertionError(f"{kernel} {shape} {precision}: no cuBLAS baseline")
        # sample i against the same process's cuBLAS median, as pct_samples_of: the median is pct
        samples = [pct * row["median_s"] / t for t in row["times_s"] if t > 0]
        return {"samples": samples, "number": 1} if samples else pct


class _GbpsTrack(_GemmTrack):
    """Achieved DRAM bandwidth of one kernel x shape x precision point of the skinny set: the
    least bytes the product must move (compare.harness.sol: A, B read and C written once) over
    its time, in GB/s. Higher is better (compare.ci.asv_results reads it from ``track_gbps``)."""

    unit = "GB/s"

    def _gbps_of_row(self, cache, kernel, shape, precision):
        row = self._ok_row("track_gbps", cache, kernel, shape, precision, " gbps")
        if not row.get("gbps") or not row.get("min_bytes"):
            raise AssertionError(f"{kernel} {shape} {precision}: no achieved bandwidth")
        samples = [row["min_bytes"] / t / 1e9 for t in row["times_s"] if t > 0]
        return {"samples": samples, "number": 1} if samples else row["gbps"]
