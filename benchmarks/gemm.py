"""asv benchmarks: literal classes whose params are read from compare.harness.registry and the
shape catalogue (compare/harness/shapes.py): no kernel or shape is listed here.

Three kinds of class, every value from the one pipeline (``compare.harness.runner.run_kernel``: inputs,
prepare, NaN-poisoned check against float64, then ``compare.harness.timing.measure``):

* time, one process per kernel x shape x precision point, for every group (naive, tiled,
  split_k): ``Naive`` / ``Tiled`` / ``SplitK`` (the fp32 ladder: every kernel of
  ``compare.harness.registry.select(group)`` with an fp32 path, cuBLAS included, it is the baseline) and
  ``NaiveTensorCore`` / ``TiledTensorCore`` / ``SplitKTensorCore`` (the other precisions, tf32
  and tf32x3, that some kernel of the group has, and the kernels that have any of them).
  ``track_time``: the median kernel time in seconds (``unit = "seconds"``, lower is better).
* % of cuBLAS, one process per kernel x precision (cuBLAS excluded): ``<Class>PctCublas``,
  ``track_pct_cublas``: the geometric mean over the group's shapes of 100 x cuBLAS time / kernel
  time, cuBLAS measured in the same process, so a slower machine or clock cancels out. Higher
  is better.
* the sweep, one process per family (cuda, triton) x precision: ``SweepCuda`` / ``SweepTriton``,
  ``track_geomean_pct_cublas``: the same geometric mean over a small mixed shape set
  (``compare.harness.shapes.shape_set("asv")``) for the family's general-purpose kernel (the top of its
  tiled ladder), so a commit that wins at 4096^3 but loses odd or skinny shapes shows up.
  Higher is better. Its ``version`` carries a digest of the shape set: a different set is a
  different measurement.

Where the work happens: each group (naive, tiled, split_k) and the sweep has ONE ``setup_cache``
(asv runs it once per run, in one process, and hands its result to every benchmark sharing it):
it measures every kernel x shape x precision of the group's classes and the cuBLAS baselines,
each once, and the %-of-cuBLAS twins from those same rows. The asv process of each point only
reads that result (no CUDA, no compile), and with ``launch_method: forkserver`` it is a fork of
a process that imported the suite (torch, triton) already. So a commit costs 4 processes with
a CUDA context instead of one per point (69 in the quick set), and no (kernel, problem) is
measured twice. Points of a group share a process: a kernel that faults (a sticky CUDA error)
fails the group's later points too, each saying so.

``GEMM_BENCH_PHASES=FILE``: each setup_cache appends one JSON line of its phase times (process
age, CUDA context, per row: prepare = compile/autotune/first launch, wall), each point one line
(a timing log of the harness only: nothing measured changes). docs/asv.md, "Where the time goes".

Outcomes: a wrong result or an error raises (asv records the point as failed, no number); a point
the kernel can't run, a shape that doesn't fit the GPU, or no GPU raises NotImplementedError in
setup (asv shows n/a). A kernel that faults (a sticky CUDA error: FAULT) fails its point like an
error; one that gives no result within the worker's kernel timeout (HUNG, 120 s) is killed with
its worker process and its group goes on in a fresh one (compare/ci/suite_cache.py measures a
group through compare.harness.worker on a GPU). Every failed point leaves a note (kernel,
FAULT / HUNG / FAILED / error, reason: compare/ci/failure_notes.py) that compare.ci.gate prints on
the point's FAILING row.

When a runner result carries the per-sample times (``Result.times_ms``), ``track_time`` hands
them to asv as ``{"samples": [...], "number": 1}``; asv then records the median as the value and
the 99% interval of the median and the quartiles as stats_* columns (and, with
--record-samples, the samples), which compare.ci.gate uses to tell a regression from noise.
Otherwise it returns the median alone. The % of cuBLAS tracks hand asv per-sample % of cuBLAS
the same way (compare.ci.suite_cache.pct_samples_of: each kernel sample against the same
process's cuBLAS median; their median is the geometric mean).

Environment variables select WHICH benchmarks exist (never what a kernel does):
``GEMM_BENCH_SET`` = quick | default | full (shapes per group; ``GEMM_BENCH_QUICK=1`` = quick),
``GEMM_BENCH_PRECISIONS`` = a comma list (e.g. ``fp32``) keeps only those precisions.
``python -m benchmarks.gemm`` prints the classes, their grids and the number of processes.
"""
from __future__ import annotations

import os as _os
import sys as _sys

if not _os.environ.get("ASV_ENV_TYPE"):
    # Not inside an environment asv built (there asv sets ASV_ENV_TYPE and has installed the
    # commit it measures): `asv run --python=same`, a history worktree, pytest. Measure the
    # checkout these benchmarks live in, ahead of any installed copy.
    _sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))

import hashlib as _hashlib
import time as _time

from compare.harness import registry as _registry
from compare.harness import shapes as _shapes
from compare.harness.problem import PRECISIONS as _PRECISIONS
from compare.harness.problem import parse_shape as _parse_shape

# Bump a class's version only when what it measures changes (engine, problem definition):
# asv keeps history across commits of one benchmark version only.
VERSION = "1"

SHAPE_SETS = _shapes.ASV_GROUP_SETS      # the shape catalogue: compare/harness/shapes.py
# asv class of a ladder group (compare/harness/registry.py GROUPS): its CamelCase name.
CLASS_NAMES = {g: "".join(w.capitalize() for w in g.split("_")) for g in _registry.GROUPS}
TENSOR_CORE_SUFFIX = "TensorCore"
PCT_SUFFIX = "PctCublas"
SWEEP_CLASS_NAMES = {"cuda": "SweepCuda", "triton": "SweepTriton"}

def bench_set() -> str:
    if _os.environ.get("GEMM_BENCH_QUICK", "").strip() not in ("", "0"):
        return "quick"
    name = _os.environ.get("GEMM_BENCH_SET", "").strip() or "default"
    if name not in SHAPE_SETS:
        raise ValueError(f"GEMM_BENCH_SET={name!r}: valid sets are {', '.join(SHAPE_SETS)}")
    return name


def precisions() -> list[str]:
    text = _os.environ.get("GEMM_BENCH_PRECISIONS", "").strip()
    if not text:
        return list(_PRECISIONS)
    wanted = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in wanted if p not in _PRECISIONS]
    if bad:
        raise ValueError(f"GEMM_BENCH_PRECISIONS: unknown precision {bad[0]!r}; known: {', '.join(_PRECISIONS)}")
    return [p for p in _PRECISIONS if p in wanted]


def canonical_shape(text: str) -> str:
    return "x".join(str(d) for d in _parse_shape(text))


def shapes(group: str) -> list[str]:
    return [canonical_shape(s) for s in SHAPE_SETS[bench_set()][group]]


def suites(group: str) -> list[tuple[str, list[str], list[str]]]:
    """(class name, kernel names, precisions) of the classes of one group, from the registry."""
    ks = _registry.select(group)
    allowed = precisions()
    out = []
    if "fp32" in allowed:
        names = [k.name for k in ks if "fp32" in k.precisions]
        if names:
            out.append((CLASS_NAMES[group], names, ["fp32"]))
    # cuBLAS alone does not bring a precision in: its tf32 row is a baseline for the group's own.
    others = [p for p in allowed if p != "fp32"
              and any(p in k.precisions for k in ks if k.family != "cublas")]
    names = [k.name for k in ks if any(p in k.precisions for p in others)]
    if others and names:
        out.append((CLASS_NAMES[group] + TENSOR_CORE_SUFFIX, names, others))
    return out


def sweep_shapes() -> list[tuple[int, int, int]]:
    return [tuple(int(d) for d in s) for s in _shapes.shape_set("asv")]


def sweep_kernels(family: str) -> list[str]:
    """The family's general-purpose kernel: its stage-11 stream-K kernel (deterministic variant),
    the last rung of the ladder, which chooses its tile and decomposition per shape."""
    ks = [k.name for k in _registry.kernels()
          if k.family == family and k.stage == "stream_k" and k.variant != "atomic"]
    return ks[:1]


def _shape_text(shape) -> str:
    return "x".join(str(d) for d in shape)


def _precision_or_na(kernel_name: str, precision: str, check_gpu: bool = True) -> None:
    """n/a only without a GPU or without the precision: a kernel that refuses some shapes of a
    geometric mean's set fails (geomean_pct_cublas says which), it is not n/a."""
    from compare.harness.inputs import gpu_available

    if check_gpu and not gpu_available():
        raise NotImplementedError("no CUDA GPU")
    k = _registry.get(kernel_name)
    if precision not in k.precisions:
        raise NotImplementedError(f"{kernel_name} has no {precision} path (has {', '.join(k.precisions)})")


def _note_failure(point, kernel: str, status: str, reason: str) -> None:
    """Leave the failure's reason where compare.ci.gate finds it (inside an asv run only)."""
    from compare.ci import failure_notes
    results_dir = failure_notes.results_dir_of_asv_run()
    if point is None or results_dir is None:
        return
    try:
        failure_notes.add(results_dir, _os.environ["ASV_COMMIT"], point[0], point[1], kernel, status, reason)
    except OSError as exc:
        print(f"warning: could not write the failure note: {exc}", file=_sys.stderr)


def _point(bench, method: str, params) -> tuple[str, list]:
    """(asv's benchmark name, parameter values as text) of a point, as asv's result files name it."""
    return f"{__name__.rsplit('.', 1)[-1]}.{type(bench).__name__}.{method}", [str(p) for p in params]


def geomean_pct_cublas(kernel_name: str, precision: str, shapes: list[str]) -> float:
    """Geometric mean over ``shapes`` of the kernel's % of cuBLAS, kernel and cuBLAS measured in
    one process by the suite's own measuring function (``measure_points``). Every shape must run: a geomean over a different set of shapes would
    not be comparable between commits."""
    from compare.harness.problem import Problem

    k = _registry.get(kernel_name)
    problems = [Problem(*_parse_shape(s), precision=precision) for s in shapes]
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
# asv's setup_cache runs once per key (the defining file and LINE of the function) and hands its
# return value to every benchmark that shares the key. One function per group (and one for the
# sweep), each on its own line: the group's time points, their % of cuBLAS twins and the cuBLAS
# baselines are all measured in ONE process, each (kernel, problem) once; the per-point asv
# processes only read the result (no CUDA, no compile). With launch_method forkserver (asv.conf.json)
# those processes are forks of one that has imported the suite (torch, triton) already.

from compare.ci import asv_results as _asv_results  # noqa: E402  (pretty names)
from compare.ci import suite_cache as _suite_cache  # noqa: E402  (the measuring half of the suite)

_T_MODULE = _time.perf_counter()
_phase_log, _process_age_s = _suite_cache.phase_log, _suite_cache.process_age_s
measure_points = _suite_cache.measure_points


def _group_cache(group: str) -> dict:
    points, pct_sets = [], []
    for _name, kernel_names, precs in suites(group):
        points += [(k, s, p) for k in kernel_names for s in shapes(group) for p in precs]
        pct_sets += [(k, p, tuple(shapes(group))) for k in kernel_names
                     if _registry.get(k).family != "cublas" for p in precs]
    return measure_points(points, pct_sets)


def _sweep_cache() -> dict:
    sweep = [_shape_text(s) for s in sweep_shapes()]
    allowed = precisions()
    pct_sets = [(k, p, tuple(sweep)) for family in SWEEP_CLASS_NAMES for k in sweep_kernels(family)
                for p in allowed if p in _registry.get(k).precisions]
    return measure_points([], pct_sets)


# One function per key (asv keys a setup_cache by its line): keep each on a line of its own.
def _cache_naive(self):
    return _group_cache("naive")


def _cache_tiled(self):
    return _group_cache("tiled")


def _cache_split_k(self):
    return _group_cache("split_k")


def _cache_sweep(self):
    return _sweep_cache()


SETUP_CACHES = {"naive": _cache_naive, "tiled": _cache_tiled, "split_k": _cache_split_k, "sweep": _cache_sweep}
for _f in SETUP_CACHES.values():
    _f.timeout = 1800       # a whole group: every kernel x shape x precision, compiles included


def _pct_value(bench, method: str, cache, kernel: str, precision: str):
    """A % of cuBLAS point's value; a failed one leaves its note (the first bad row's status and
    reason) for the gate before asv records the failure."""
    entry = cache["pct"][(kernel, precision)]
    if isinstance(entry, dict) and entry.get("error"):
        _note_failure(_point(bench, method, (kernel, precision)), kernel, entry["label"], entry["reason"])
        raise AssertionError(entry["error"])
    return _suite_cache.pct_track_value(entry)


def _cache_na(cache) -> None:
    if cache.get("na"):
        raise NotImplementedError(cache["na"])


def _point_log(what: str) -> None:
    if _os.environ.get("GEMM_BENCH_PHASES"):
        _phase_log({"kind": "point", "what": what, "pid": _os.getpid(), "process_age_s": _process_age_s(),
                    "since_module_import_s": _time.perf_counter() - _T_MODULE})


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

    def _time(self, cache, kernel, shape, precision):
        row = cache["rows"][(kernel, shape, precision)]
        _point_log(f"{kernel} {shape} {precision}")
        if row["status"] != "ok":
            _note_failure(_point(self, "track_time", (kernel, shape, precision)), kernel, row.get("label", ""),
                          row.get("reason", ""))
            raise AssertionError(row["why"])
        if row["throttled"]:
            print(f"warning: {kernel} {shape} {precision}: GPU throttled while measuring "
                  f"({', '.join(row['throttle_reasons']) or 'SM clock below 95% of max'})", file=_sys.stderr)
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


class _SweepTrack(_Common):
    """Geometric mean of % of cuBLAS of a family's general-purpose kernel over the sweep set."""

    unit = "% of cuBLAS"
    param_names = ["kernel", "precision"]

    def setup(self, cache, kernel, precision):
        _cache_na(cache)                               # (no GPU: said by the cache)
        _precision_or_na(kernel, precision, check_gpu=False)

    def _geomean(self, cache, kernel, precision):
        _point_log(f"{kernel} {precision} sweep")
        return _pct_value(self, "track_geomean_pct_cublas", cache, kernel, precision)


def _digest(shapes) -> str:
    return _hashlib.sha1(",".join(shapes).encode()).hexdigest()[:8]


# ---------------------------------------------------------------------------- the params
# Every class's params are read here from the registry (its groups, kernels and precisions) and the
# shape catalogue (compare/harness/shapes.py), under GEMM_BENCH_SET / GEMM_BENCH_PRECISIONS.

def ladder_params(group: str, tensor_core: bool = False) -> list:
    """[kernels, shapes, precisions] of a group's time class: its fp32 ladder (cuBLAS included) or,
    with ``tensor_core``, its other precisions (``suites``); empty lists where it has none."""
    name = CLASS_NAMES[group] + (TENSOR_CORE_SUFFIX if tensor_core else "")
    for suite, kernel_names, precs in suites(group):
        if suite == name:
            return [kernel_names, shapes(group), precs]
    return [[], shapes(group), []]


def pct_params(group: str, tensor_core: bool = False) -> list:
    """[kernels, precisions] of a % of cuBLAS class: its time twin's kernels but cuBLAS."""
    kernel_names, _, precs = ladder_params(group, tensor_core)
    return [[k for k in kernel_names if _registry.get(k).family != "cublas"], precs]


def sweep_shape_texts() -> list[str]:
    return [_shape_text(s) for s in sweep_shapes()]


def sweep_params(family: str) -> list:
    """[kernels, precisions] of a family's sweep class: its general-purpose kernel, at every
    allowed precision it has."""
    ks = sweep_kernels(family)
    return [ks, [p for p in precisions() if any(p in _registry.get(k).precisions for k in ks)]]


def sweep_version() -> str:
    # A different shape set is a different measurement: asv keeps history per version.
    return f"{VERSION}-{_digest(sweep_shape_texts())}"


def _pretty(name: str) -> str:
    """The ``pretty_name`` asv shows for ``name`` (Class.method) of this module."""
    return _asv_results.pretty_name(f"{__name__.rsplit('.', 1)[-1]}.{name}")


# ---------------------------------------------------------------------------- the classes
# Each class's track_ method is its own (asv reads ``pretty_name`` from the function); it calls
# the shared base's measured value. A class with no point under this set is dropped below.

class Naive(_GemmTrack):
    """naive group, fp32: median kernel time (s) per kernel x shape, cuBLAS included."""
    group, setup_cache, version = "naive", _cache_naive, VERSION
    params = ladder_params("naive")

    def track_time(self, cache, kernel, shape, precision):
        return self._time(cache, kernel, shape, precision)
    track_time.pretty_name = _pretty("Naive.track_time")


class NaivePctCublas(_PctTrack):
    """naive group, fp32: geometric mean over the group's shapes of % of cuBLAS (same process)."""
    group, setup_cache, version = "naive", _cache_naive, VERSION
    shapes = shapes("naive")
    params = pct_params("naive")

    def track_pct_cublas(self, cache, kernel, precision):
        return self._pct(cache, kernel, precision)
    track_pct_cublas.pretty_name = _pretty("NaivePctCublas.track_pct_cublas")


class NaiveTensorCore(_GemmTrack):
    """naive group, tf32 / tf32x3: median kernel time (s) per kernel x shape, cuBLAS included."""
    group, setup_cache, version = "naive", _cache_naive, VERSION
    params = ladder_params("naive", tensor_core=True)

    def track_time(self, cache, kernel, shape, precision):
        return self._time(cache, kernel, shape, precision)
    track_time.pretty_name = _pretty("NaiveTensorCore.track_time")


class NaiveTensorCorePctCublas(_PctTrack):
    """naive group, tf32 / tf32x3: geometric mean over the group's shapes of % of cuBLAS."""
    group, setup_cache, version = "naive", _cache_naive, VERSION
    shapes = shapes("naive")
    params = pct_params("naive", tensor_core=True)

    def track_pct_cublas(self, cache, kernel, precision):
        return self._pct(cache, kernel, precision)
    track_pct_cublas.pretty_name = _pretty("NaiveTensorCorePctCublas.track_pct_cublas")


class Tiled(_GemmTrack):
    """tiled group, fp32: median kernel time (s) per kernel x shape, cuBLAS included."""
    group, setup_cache, version = "tiled", _cache_tiled, VERSION
    params = ladder_params("tiled")

    def track_time(self, cache, kernel, shape, precision):
        return self._time(cache, kernel, shape, precision)
    track_time.pretty_name = _pretty("Tiled.track_time")


class TiledPctCublas(_PctTrack):
    """tiled group, fp32: geometric mean over the group's shapes of % of cuBLAS (same process)."""
    group, setup_cache, version = "tiled", _cache_tiled, VERSION
    shapes = shapes("tiled")
    params = pct_params("tiled")

    def track_pct_cublas(self, cache, kernel, precision):
        return self._pct(cache, kernel, precision)
    track_pct_cublas.pretty_name = _pretty("TiledPctCublas.track_pct_cublas")


class TiledTensorCore(_GemmTrack):
    """tiled group, tf32 / tf32x3: median kernel time (s) per kernel x shape, cuBLAS included."""
    group, setup_cache, version = "tiled", _cache_tiled, VERSION
    params = ladder_params("tiled", tensor_core=True)

    def track_time(self, cache, kernel, shape, precision):
        return self._time(cache, kernel, shape, precision)
    track_time.pretty_name = _pretty("TiledTensorCore.track_time")


class TiledTensorCorePctCublas(_PctTrack):
    """tiled group, tf32 / tf32x3: geometric mean over the group's shapes of % of cuBLAS."""
    group, setup_cache, version = "tiled", _cache_tiled, VERSION
    shapes = shapes("tiled")
    params = pct_params("tiled", tensor_core=True)

    def track_pct_cublas(self, cache, kernel, precision):
        return self._pct(cache, kernel, precision)
    track_pct_cublas.pretty_name = _pretty("TiledTensorCorePctCublas.track_pct_cublas")


class SplitK(_GemmTrack):
    """split_k group, fp32: median kernel time (s) per kernel x shape, cuBLAS included."""
    group, setup_cache, version = "split_k", _cache_split_k, VERSION
    params = ladder_params("split_k")

    def track_time(self, cache, kernel, shape, precision):
        return self._time(cache, kernel, shape, precision)
    track_time.pretty_name = _pretty("SplitK.track_time")


class SplitKPctCublas(_PctTrack):
    """split_k group, fp32: geometric mean over the group's shapes of % of cuBLAS (same process)."""
    group, setup_cache, version = "split_k", _cache_split_k, VERSION
    shapes = shapes("split_k")
    params = pct_params("split_k")

    def track_pct_cublas(self, cache, kernel, precision):
        return self._pct(cache, kernel, precision)
    track_pct_cublas.pretty_name = _pretty("SplitKPctCublas.track_pct_cublas")


class SplitKTensorCore(_GemmTrack):
    """split_k group, tf32 / tf32x3: median kernel time (s) per kernel x shape, cuBLAS included."""
    group, setup_cache, version = "split_k", _cache_split_k, VERSION
    params = ladder_params("split_k", tensor_core=True)

    def track_time(self, cache, kernel, shape, precision):
        return self._time(cache, kernel, shape, precision)
    track_time.pretty_name = _pretty("SplitKTensorCore.track_time")


class SplitKTensorCorePctCublas(_PctTrack):
    """split_k group, tf32 / tf32x3: geometric mean over the group's shapes of % of cuBLAS."""
    group, setup_cache, version = "split_k", _cache_split_k, VERSION
    shapes = shapes("split_k")
    params = pct_params("split_k", tensor_core=True)

    def track_pct_cublas(self, cache, kernel, precision):
        return self._pct(cache, kernel, precision)
    track_pct_cublas.pretty_name = _pretty("SplitKTensorCorePctCublas.track_pct_cublas")


class SweepCuda(_SweepTrack):
    """cuda: geometric mean of % of cuBLAS (same process) of the family's general-purpose kernel
    over the sweep shapes (compare.harness.shapes.shape_set("asv"))."""
    group, setup_cache, version = "sweep", _cache_sweep, sweep_version()
    shapes = sweep_shape_texts()
    params = sweep_params("cuda")

    def track_geomean_pct_cublas(self, cache, kernel, precision):
        return self._geomean(cache, kernel, precision)
    track_geomean_pct_cublas.pretty_name = _pretty("SweepCuda.track_geomean_pct_cublas")


class SweepTriton(_SweepTrack):
    """triton: geometric mean of % of cuBLAS (same process) of the family's general-purpose kernel
    over the sweep shapes (compare.harness.shapes.shape_set("asv"))."""
    group, setup_cache, version = "sweep", _cache_sweep, sweep_version()
    shapes = sweep_shape_texts()
    params = sweep_params("triton")

    def track_geomean_pct_cublas(self, cache, kernel, precision):
        return self._geomean(cache, kernel, precision)
    track_geomean_pct_cublas.pretty_name = _pretty("SweepTriton.track_geomean_pct_cublas")


# A class without points under this set (no tensor-core kernel in the naive group; only fp32 in
# GEMM_BENCH_PRECISIONS) is no benchmark: asv must not see it.
_CLASSES = {c.__name__: c for c in (
    Naive, NaivePctCublas, NaiveTensorCore, NaiveTensorCorePctCublas,
    Tiled, TiledPctCublas, TiledTensorCore, TiledTensorCorePctCublas,
    SplitK, SplitKPctCublas, SplitKTensorCore, SplitKTensorCorePctCublas,
    SweepCuda, SweepTriton) if all(c.params)}
for _name in [n for n, v in list(globals().items()) if isinstance(v, type) and issubclass(v, _Common)
              and not n.startswith("_") and n not in _CLASSES]:
    del globals()[_name]


def plan() -> list[tuple[str, int]]:
    """(class name, number of processes asv will start) for the current set."""
    out = []
    for name, cls in _CLASSES.items():
        n = 1
        for p in cls.params:
            n *= len(p)
        out.append((name, n))
    return out


def _main() -> None:
    total = 0
    print(f"set: {bench_set()}  precisions: {','.join(precisions())}")
    counts = dict(plan())
    for name, cls in _CLASSES.items():
        n = counts[name]
        total += n
        grid = " ".join(f"{pn}s={','.join(map(str, pv))}" for pn, pv in zip(cls.param_names, cls.params))
        extra = f" shapes={','.join(cls.shapes)}" if "shape" not in cls.param_names else ""
        print(f"{name:26s} {n:3d} processes: {grid}{extra}")
    caches = {getattr(c.setup_cache, "__name__", "") for c in _CLASSES.values()}
    print(f"total {total} points: each a light asv process reading its group's setup_cache; "
          f"{len(caches)} setup_cache processes do the GPU work (imports, CUDA context, compile, check, sampling)")


if __name__ == "__main__":
    _main()
