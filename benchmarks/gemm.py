"""asv benchmarks: literal classes whose params are read from compare.harness.registry and the
shape catalogue (compare/harness/shapes.py): no kernel or shape is listed here.

Four kinds of class, every value from the one pipeline (``compare.harness.runner.run_kernel``: inputs,
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
* the skinny and small classes, per kernel x shape x precision, in the default and full sets only
  (not quick): ``SkinnyPctCublas`` / ``SkinnyTensorCorePctCublas`` (``track_pct_cublas``: the
  shape's % of cuBLAS, same process) and ``SkinnyGbps`` / ``SkinnyTensorCoreGbps``
  (``track_gbps``: achieved DRAM GB/s, cuBLAS included) of the general-purpose kernels (each
  family's stream-K kernel, the CUDA family's top tensor-core rung) on one shape per class where a
  GEMM stops being a tile problem (``compare.harness.shapes.shape_set("asv_skinny")``: N <= 8,
  M = 1, a small problem, a tiny output with a long K). Higher is better, both. Version as the sweep's.

Where the work happens: each group (naive, tiled, split_k), the sweep and the skinny set has
ONE ``setup_cache`` (asv runs it once per run, in one process, and hands its result to every
benchmark sharing it): it measures every kernel x shape x precision of the group's classes and
the cuBLAS baselines, each once, and the %-of-cuBLAS twins from those same rows. The asv process
of each point only reads that result (no CUDA, no compile), and with ``launch_method:
forkserver`` it is a fork of a process that imported the suite (torch, triton) already. So a
commit costs 4 processes with a CUDA context in the quick set (5 in default and full) instead of
one per point (69 in the quick set), and no (kernel, problem) is
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

This module holds the classes only: their params come from benchmarks/params.py, their setup_cache
functions and shared bases from benchmarks/tracks.py (asv names a benchmark by the module that
defines its class: ``gemm.Class.method``).
"""
from __future__ import annotations

from benchmarks.params import (PCT_SUFFIX, SHAPE_SETS, VERSION, bench_set, digest, ladder_params,  # noqa: F401 (names tests and tools read here)
                               pct_params, precisions, shape_text, shapes, skinny_params, skinny_shapes,
                               skinny_version, sweep_params, sweep_shape_texts, sweep_shapes, sweep_version)
from benchmarks.tracks import (_Common, _GbpsTrack, _GemmTrack, _PctTrack, _SkinnyPctTrack, _SweepTrack,  # noqa: F401
                               cache_naive, cache_skinny, cache_split_k, cache_sweep, cache_tiled, geomean_pct_cublas,
                               measure_points)
from compare.ci import asv_results as _asv_results  # (pretty names)
from compare.harness import registry as _registry  # noqa: F401  (the kernels' one list)


def _pretty(name: str) -> str:
    """The ``pretty_name`` asv shows for ``name`` (Class.method) of this module."""
    return _asv_results.pretty_name(f"{__name__.rsplit('.', 1)[-1]}.{name}")


# ---------------------------------------------------------------------------- the classes
# Each class's track_ method is its own (asv reads ``pretty_name`` from the function); it calls
# the shared base's measured value. A class with no point under this set is dropped below.

class Naive(_GemmTrack):
    """naive group, fp32: median kernel time (s) per kernel x shape, cuBLAS included."""
    group, setup_cache, version = "naive", cache_naive, VERSION
    params = ladder_params("naive")

    def track_time(self, cache, kernel, shape, precision):
        return self._time(cache, kernel, shape, precision)
    track_time.pretty_name = _pretty("Naive.track_time")


class NaivePctCublas(_PctTrack):
    """naive group, fp32: geometric mean over the group's shapes of % of cuBLAS (same process)."""
    group, setup_cache, version = "naive", cache_naive, VERSION
    shapes = shapes("naive")
    params = pct_params("naive")

    def track_pct_cublas(self, cache, kernel, precision):
        return self._pct(cache, kernel, precision)
    track_pct_cublas.pretty_name = _pretty("NaivePctCublas.track_pct_cublas")


class NaiveTensorCore(_GemmTrack):
    """naive group, tf32 / tf32x3: median kernel time (s) per kernel x shape, cuBLAS included."""
    group, setup_cache, version = "naive", cache_naive, VERSION
    params = ladder_params("naive", tensor_core=True)

    def track_time(self, cache, kernel, shape, precision):
        return self._time(cache, kernel, shape, precision)
    track_time.pretty_name = _pretty("NaiveTensorCore.track_time")


class NaiveTensorCorePctCublas(_PctTrack):
    """naive group, tf32 / tf32x3: geometric mean over the group's shapes of % of cuBLAS."""
    group, setup_cache, version = "naive", cache_naive, VERSION
    shapes = shapes("naive")
    params = pct_params("naive", tensor_core=True)

    def track_pct_cublas(self, cache, kernel, precision):
        return self._pct(cache, kernel, precision)
    track_pct_cublas.pretty_name = _pretty("NaiveTensorCorePctCublas.track_pct_cublas")


class Tiled(_GemmTrack):
    """tiled group, fp32: median kernel time (s) per kernel x shape, cuBLAS included."""
    group, setup_cache, version = "tiled", cache_tiled, VERSION
    params = ladder_params("tiled")

    def track_time(self, cache, kernel, shape, precision):
        return self._time(cache, kernel, shape, precision)
    track_time.pretty_name = _pretty("Tiled.track_time")


class TiledPctCublas(_PctTrack):
    """tiled group, fp32: geometric mean over the group's shapes of % of cuBLAS (same process)."""
    group, setup_cache, version = "tiled", cache_tiled, VERSION
    shapes = shapes("tiled")
    params = pct_params("tiled")

    def track_pct_cublas(self, cache, kernel, precision):
        return self._pct(cache, kernel, precision)
    track_pct_cublas.pretty_name = _pretty("TiledPctCublas.track_pct_cublas")


class TiledTensorCore(_GemmTrack):
    """tiled group, tf32 / tf32x3: median kernel time (s) per kernel x shape, cuBLAS included."""
    group, setup_cache, version = "tiled", cache_tiled, VERSION
    params = ladder_params("tiled", tensor_core=True)

    def track_time(self, cache, kernel, shape, precision):
        return self._time(cache, kernel, shape, precision)
    track_time.pretty_name = _pretty("TiledTensorCore.track_time")


class TiledTensorCorePctCublas(_PctTrack):
    """tiled group, tf32 / tf32x3: geometric mean over the group's shapes of % of cuBLAS."""
    group, setup_cache, version = "tiled", cache_tiled, VERSION
    shapes = shapes("tiled")
    params = pct_params("tiled", tensor_core=True)

    def track_pct_cublas(self, cache, kernel, precision):
        return self._pct(cache, kernel, precision)
    track_pct_cublas.pretty_name = _pretty("TiledTensorCorePctCublas.track_pct_cublas")


class SplitK(_GemmTrack):
    """split_k group, fp32: median kernel time (s) per kernel x shape, cuBLAS included."""
    group, setup_cache, version = "split_k", cache_split_k, VERSION
    params = ladder_params("split_k")

    def track_time(self, cache, kernel, shape, precision):
        return self._time(cache, kernel, shape, precision)
    track_time.pretty_name = _pretty("SplitK.track_time")


class SplitKPctCublas(_PctTrack):
    """split_k group, fp32: geometric mean over the group's shapes of % of cuBLAS (same process)."""
    group, setup_cache, version = "split_k", cache_split_k, VERSION
    shapes = shapes("split_k")
    params = pct_params("split_k")

    def track_pct_cublas(self, cache, kernel, precision):
        return self._pct(cache, kernel, precision)
    track_pct_cublas.pretty_name = _pretty("SplitKPctCublas.track_pct_cublas")


class SplitKTensorCore(_GemmTrack):
    """split_k group, tf32 / tf32x3: median kernel time (s) per kernel x shape, cuBLAS included."""
    group, setup_cache, version = "split_k", cache_split_k, VERSION
    params = ladder_params("split_k", tensor_core=True)

    def track_time(self, cache, kernel, shape, precision):
        return self._time(cache, kernel, shape, precision)
    track_time.pretty_name = _pretty("SplitKTensorCore.track_time")


class SplitKTensorCorePctCublas(_PctTrack):
    """split_k group, tf32 / tf32x3: geometric mean over the group's shapes of % of cuBLAS."""
    group, setup_cache, version = "split_k", cache_split_k, VERSION
    shapes = shapes("split_k")
    params = pct_params("split_k", tensor_core=True)

    def track_pct_cublas(self, cache, kernel, precision):
        return self._pct(cache, kernel, precision)
    track_pct_cublas.pretty_name = _pretty("SplitKTensorCorePctCublas.track_pct_cublas")


class SweepCuda(_SweepTrack):
    """cuda: geometric mean of % of cuBLAS (same process) of the family's general-purpose kernel
    over the sweep shapes (compare.harness.shapes.shape_set("asv"))."""
    group, setup_cache, version = "sweep", cache_sweep, sweep_version()
    shapes = sweep_shape_texts()
    params = sweep_params("cuda")

    def track_geomean_pct_cublas(self, cache, kernel, precision):
        return self._geomean(cache, kernel, precision)
    track_geomean_pct_cublas.pretty_name = _pretty("SweepCuda.track_geomean_pct_cublas")


class SweepTriton(_SweepTrack):
    """triton: geometric mean of % of cuBLAS (same process) of the family's general-purpose kernel
    over the sweep shapes (compare.harness.shapes.shape_set("asv"))."""
    group, setup_cache, version = "sweep", cache_sweep, sweep_version()
    shapes = sweep_shape_texts()
    params = sweep_params("triton")

    def track_geomean_pct_cublas(self, cache, kernel, precision):
        return self._geomean(cache, kernel, precision)
    track_geomean_pct_cublas.pretty_name = _pretty("SweepTriton.track_geomean_pct_cublas")


class SkinnyPctCublas(_SkinnyPctTrack):
    """fp32: % of cuBLAS (same process) per shape of the general-purpose kernels on one shape per
    bandwidth-bound or small class (compare.harness.shapes.shape_set("asv_skinny"))."""
    group, setup_cache, version = "skinny", cache_skinny, skinny_version()
    params = skinny_params()

    def track_pct_cublas(self, cache, kernel, shape, precision):
        return self._pct_of_row(cache, kernel, shape, precision)
    track_pct_cublas.pretty_name = _pretty("SkinnyPctCublas.track_pct_cublas")


class SkinnyGbps(_GbpsTrack):
    """fp32: achieved DRAM GB/s per shape of the same points, cuBLAS included (higher is better)."""
    group, setup_cache, version = "skinny", cache_skinny, skinny_version()
    params = skinny_params(cublas=True)

    def track_gbps(self, cache, kernel, shape, precision):
        return self._gbps_of_row(cache, kernel, shape, precision)
    track_gbps.pretty_name = _pretty("SkinnyGbps.track_gbps")


class SkinnyTensorCorePctCublas(_SkinnyPctTrack):
    """tf32 / tf32x3: % of cuBLAS per shape (tf32x3 against cuBLAS fp32) of the general-purpose
    kernels with a tensor-core path on the skinny shapes."""
    group, setup_cache, version = "skinny", cache_skinny, skinny_version()
    params = skinny_params(tensor_core=True)

    def track_pct_cublas(self, cache, kernel, shape, precision):
        return self._pct_of_row(cache, kernel, shape, precision)
    track_pct_cublas.pretty_name = _pretty("SkinnyTensorCorePctCublas.track_pct_cublas")


class SkinnyTensorCoreGbps(_GbpsTrack):
    """tf32 / tf32x3: achieved DRAM GB/s per shape, cuBLAS included (higher is better)."""
    group, setup_cache, version = "skinny", cache_skinny, skinny_version()
    params = skinny_params(tensor_core=True, cublas=True)

    def track_gbps(self, cache, kernel, shape, precision):
        return self._gbps_of_row(cache, kernel, shape, precision)
    track_gbps.pretty_name = _pretty("SkinnyTensorCoreGbps.track_gbps")


# A class without points under this set (no tensor-core kernel in the naive group; only fp32 in
# GEMM_BENCH_PRECISIONS) is no benchmark: asv must not see it.
_CLASSES = {c.__name__: c for c in (
    Naive, NaivePctCublas, NaiveTensorCore, NaiveTensorCorePctCublas,
    Tiled, TiledPctCublas, TiledTensorCore, TiledTensorCorePctCublas,
    SplitK, SplitKPctCublas, SplitKTensorCore, SplitKTensorCorePctCublas,
    SweepCuda, SweepTriton,
    SkinnyPctCublas, SkinnyGbps, SkinnyTensorCorePctCublas, SkinnyTensorCoreGbps) if all(c.params)}
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
