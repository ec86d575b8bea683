"""asv benchmarks, generated from compare.registry: no kernel is listed here.

For every group (naive, tiled, split_k) this module makes up to two classes:

* ``Naive`` / ``Tiled`` / ``SplitK``: the fp32 ladder, every kernel of
  ``compare.registry.select(group)`` (cuBLAS included: it is the baseline) that has an fp32 path;
* ``NaiveTensorCore`` / ``TiledTensorCore`` / ``SplitKTensorCore``: the other precisions
  (tf32, tf32x3) that some kernel of the group has, and the kernels that have any of them.

asv runs every point of a class's kernel x shape x precision grid in a process of its own (torch
import, CUDA context, compile, autotune: several seconds each), also the points that turn out
n/a. Splitting the precisions keeps the fp32-only CUDA kernels off the tf32 points, which would
otherwise be about half of all processes, each one a torch import for nothing.

The value is ``track_time``: the median kernel time in seconds from the one measurement engine
(compare.runner.prepare + checked_run, then compare.timing.measure). ``unit = "seconds"``, so
lower is better. Setup does everything per process (inputs, float64 reference, compile /
autotune, first launch, correctness check); a wrong result raises there (the benchmark fails, no
number is recorded); a point a kernel can't run, or no GPU, raises NotImplementedError (n/a).

Sets of shapes (env GEMM_BENCH_SET, or GEMM_BENCH_QUICK=1 for ``quick``):
``quick`` one small shape per group, ``default`` the CI set, ``full`` adds 8192 to ``tiled``.
GEMM_BENCH_PRECISIONS=fp32,tf32 keeps only those precisions.
``python -m benchmarks.gemm`` prints the grid and a rough time estimate.
"""
from __future__ import annotations

import os as _os
import sys as _sys

if not _os.environ.get("ASV_ENV_TYPE"):
    # Not inside an environment asv built (there asv sets ASV_ENV_TYPE and has installed the
    # commit it measures): `asv run --python=same`, a history worktree, pytest. Measure the
    # checkout these benchmarks live in, ahead of any installed copy.
    _sys.path.insert(0, _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))

from compare import registry as _registry
from compare.problem import PRECISIONS as _PRECISIONS
from compare.problem import parse_shape as _parse_shape

# Bump a class's version only when what it measures changes (engine, problem definition):
# asv keeps history across commits of one benchmark version only.
VERSION = "1"

SHAPE_SETS = {
    "quick": {"naive": ("512",), "tiled": ("1024",), "split_k": ("256x256x32768",)},
    "default": {"naive": ("512", "1024"), "tiled": ("1024", "4096"),
                "split_k": ("256x256x131072", "512x512x65536")},
    "full": {"naive": ("512", "1024"), "tiled": ("1024", "4096", "8192"),
             "split_k": ("256x256x131072", "512x512x65536")},
}
CLASS_NAMES = {"naive": "Naive", "tiled": "Tiled", "split_k": "SplitK"}
TENSOR_CORE_SUFFIX = "TensorCore"
# Per process: python + torch/triton/cupy import, CUDA context, inputs, compile/autotune, check.
# Rough H100 figures for the estimate printed by `python -m benchmarks.gemm` only.
EST_STARTUP_S = 5.0
EST_MEASURE_S = 3.5


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


class _GemmTrack:
    """Shared body of the generated classes (leading underscore: asv does not collect it)."""

    unit = "seconds"
    param_names = ["kernel", "shape", "precision"]
    # One call of track_time per process: the engine samples adaptively by itself.
    repeat = 1
    number = 1
    rounds = 1
    min_run_count = 1
    warmup_time = 0
    # Whole process: imports, CUDA context, compile + autotune, check, up to ~2 s of samples.
    timeout = 300

    def setup(self, kernel, shape, precision):
        from compare.inputs import gpu_available, make_inputs
        from compare.problem import Problem, ProblemError
        from compare.runner import checked_run, prepare

        if not gpu_available():
            raise NotImplementedError("no CUDA GPU")
        k = _registry.get(kernel)
        M, N, K = _parse_shape(shape)
        problem = Problem(M, N, K, precision=precision)
        why = k.why_not(problem)
        if why:
            raise NotImplementedError(f"{kernel} can't run {shape} {precision}: {why}")
        try:
            inputs = make_inputs(problem)
        except ProblemError as exc:   # does not fit this GPU's memory
            raise NotImplementedError(str(exc)) from None
        launch, _ = prepare(k, problem, inputs)
        res = checked_run(problem, inputs, launch)
        if not res.ok:
            raise AssertionError(f"{kernel} {shape} {precision}: wrong result, not timed: {res.message}")
        self._launch, self._inputs = launch, inputs

    def track_time(self, kernel, shape, precision):
        from compare.timing import measure

        m = measure(self._launch, before=self._inputs.reset_c)
        if m.throttled:
            print(f"warning: {kernel} {shape} {precision}: GPU throttled while measuring "
                  f"({', '.join(m.throttle_reasons) or 'SM clock below 95% of max'})", file=_sys.stderr)
        return m.median_s


def _make_classes() -> dict:
    made = {}
    for group in _registry.GROUPS:
        for name, kernel_names, precs in suites(group):
            made[name] = type(name, (_GemmTrack,), {
                "__module__": __name__,
                "__doc__": f"{group}: median kernel time (s) of {', '.join(kernel_names)} at {', '.join(precs)}",
                "group": group,
                "params": [kernel_names, shapes(group), precs],
                "version": VERSION,
            })
    return made


_CLASSES = _make_classes()
globals().update(_CLASSES)


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
    for name, cls in _CLASSES.items():
        n = dict(plan())[name]
        total += n
        print(f"{name:22s} {n:3d} points: kernels={','.join(cls.params[0])} shapes={','.join(cls.params[1])} "
              f"precisions={','.join(cls.params[2])}")
    est = total * (EST_STARTUP_S + EST_MEASURE_S)
    print(f"total {total} processes; rough estimate {est / 60:.1f} min on one GPU "
          f"({EST_STARTUP_S + EST_MEASURE_S:.1f} s each; first runs add compile time)")


if __name__ == "__main__":
    _main()
