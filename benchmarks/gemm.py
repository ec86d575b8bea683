"""asv benchmarks, generated from compare.harness.registry: no kernel is listed here.

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

asv runs every point in a process of its own (torch import, CUDA context, compile, autotune:
several seconds each), also the points that turn out n/a. Splitting the precisions keeps the
fp32-only CUDA kernels off the tf32 points, which would otherwise be about half of all
processes, each one a torch import for nothing.

Outcomes: a wrong result or an error raises (asv records the point as failed, no number); a point
the kernel can't run, a shape that doesn't fit the GPU, or no GPU raises NotImplementedError in
setup (asv shows n/a).

When a runner result carries the per-sample times (``Result.times_ms``), ``track_time`` hands
them to asv as ``{"samples": [...], "number": 1}``; asv then records the median as the value and
the 99% interval of the median and the quartiles as stats_* columns, which compare.ci.gate uses to
tell a regression from noise. Otherwise it returns the median alone.

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
import math as _math

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


def _problem_or_na(kernel_name: str, shape: str, precision: str):
    """(kernel, problem) for a point, or NotImplementedError saying why it is n/a. No GPU work."""
    from compare.harness.inputs import gpu_available
    from compare.harness.problem import Problem

    if not gpu_available():
        raise NotImplementedError("no CUDA GPU")
    k = _registry.get(kernel_name)
    problem = Problem(*_parse_shape(shape), precision=precision)
    why = k.why_not(problem)
    if why:
        raise NotImplementedError(f"{kernel_name} can't run {shape} {precision}: {why}")
    return k, problem


def _precision_or_na(kernel_name: str, precision: str) -> None:
    """n/a only without a GPU or without the precision: a kernel that refuses some shapes of a
    geometric mean's set fails (geomean_pct_cublas says which), it is not n/a."""
    from compare.harness.inputs import gpu_available

    if not gpu_available():
        raise NotImplementedError("no CUDA GPU")
    k = _registry.get(kernel_name)
    if precision not in k.precisions:
        raise NotImplementedError(f"{kernel_name} has no {precision} path (has {', '.join(k.precisions)})")


def _fits_or_na(problem) -> None:
    import torch

    from compare.harness.inputs import check_fits
    from compare.harness.problem import ProblemError
    try:
        check_fits(problem, torch.device("cuda"))
    except ProblemError as exc:     # does not fit this GPU's memory
        raise NotImplementedError(str(exc)) from None


def _ok_or_raise(r) -> None:
    """A row that is not a measurement fails the benchmark (asv: failed, no number)."""
    if r.status != "ok" or not r.median_ms:
        raise AssertionError(f"{r.kernel} {r.shape} {r.precision}: {r.status_text or r.status}, not timed")
    if r.throttled:
        print(f"warning: {r.kernel} {r.shape} {r.precision}: GPU throttled while measuring "
              f"({', '.join(r.throttle_reasons) or 'SM clock below 95% of max'})", file=_sys.stderr)


def geomean_pct_cublas(kernel_name: str, precision: str, shapes: list[str]) -> float:
    """Geometric mean over ``shapes`` of the kernel's % of cuBLAS, both measured in this process
    through the one runner. Every shape must run: a geomean over a different set of shapes would
    not be comparable between commits."""
    from compare.harness import runner
    from compare.harness.problem import Problem

    k = _registry.get(kernel_name)
    problems = [Problem(*_parse_shape(s), precision=precision) for s in shapes]
    refused = [f"{p.shape}: {k.why_not(p)}" for p in problems if k.why_not(p)]
    if refused:
        raise AssertionError(f"{kernel_name} can't run every shape of the set: {'; '.join(refused)}")
    cublas = _registry.get("cublas")
    pairs = runner.baseline_pairs([pair for p in problems for pair in ((cublas, p), (k, p))])
    results = runner.run(pairs)
    pcts = []
    for r in results:
        _ok_or_raise(r)
        if r.kernel == kernel_name:
            if not r.pct_cublas or not _math.isfinite(r.pct_cublas):
                raise AssertionError(f"{kernel_name} {r.shape} {precision}: no cuBLAS baseline")
            pcts.append(r.pct_cublas)
            print(f"{kernel_name} {r.shape} {precision}: {r.pct_cublas:.1f}% of cuBLAS", file=_sys.stderr)
    return _math.exp(sum(_math.log(x) for x in pcts) / len(pcts))


class _Common:
    """asv settings shared by the generated classes (leading underscore: asv does not collect it)."""

    # One call per process: the engine samples adaptively by itself.
    repeat = 1
    number = 1
    rounds = 1
    min_run_count = 1
    warmup_time = 0
    # Whole process: imports, CUDA context, compile + autotune, check, up to ~2 s of samples per
    # measurement.
    timeout = 300


class _GemmTrack(_Common):
    """Time of one kernel x shape x precision point."""

    unit = "seconds"
    param_names = ["kernel", "shape", "precision"]

    def setup(self, kernel, shape, precision):
        self._kernel, self._problem = _problem_or_na(kernel, shape, precision)
        _fits_or_na(self._problem)

    def track_time(self, kernel, shape, precision):
        from compare.harness.runner import run_kernel

        r = run_kernel(self._kernel, self._problem)
        _ok_or_raise(r)
        times_ms = getattr(r, "times_ms", None)
        if times_ms:
            return {"samples": [t / 1e3 for t in times_ms], "number": 1}
        return r.median_ms / 1e3


class _PctTrack(_Common):
    """Geometric mean of % of cuBLAS of one kernel x precision over its group's shapes."""

    unit = "% of cuBLAS"
    param_names = ["kernel", "precision"]
    timeout = 600

    def setup(self, kernel, precision):
        _precision_or_na(kernel, precision)

    def track_pct_cublas(self, kernel, precision):
        return geomean_pct_cublas(kernel, precision, self.shapes)


class _SweepTrack(_Common):
    """Geometric mean of % of cuBLAS of a family's general-purpose kernel over the sweep set."""

    unit = "% of cuBLAS"
    param_names = ["kernel", "precision"]
    timeout = 900

    def setup(self, kernel, precision):
        _precision_or_na(kernel, precision)

    def track_geomean_pct_cublas(self, kernel, precision):
        return geomean_pct_cublas(kernel, precision, self.shapes)


def _digest(shapes) -> str:
    return _hashlib.sha1(",".join(shapes).encode()).hexdigest()[:8]


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
            pct_kernels = [k for k in kernel_names if _registry.get(k).family != "cublas"]
            if pct_kernels:
                made[name + PCT_SUFFIX] = type(name + PCT_SUFFIX, (_PctTrack,), {
                    "__module__": __name__,
                    "__doc__": f"{group}: geometric mean over {', '.join(shapes(group))} of % of cuBLAS "
                               f"(same process) of {', '.join(pct_kernels)}",
                    "group": group,
                    "shapes": shapes(group),
                    "params": [pct_kernels, precs],
                    "version": VERSION,
                })
    sweep = [_shape_text(s) for s in sweep_shapes()]
    allowed = precisions()
    for family, name in SWEEP_CLASS_NAMES.items():
        ks = sweep_kernels(family)
        precs = [p for p in allowed if any(p in _registry.get(k).precisions for k in ks)]
        if ks and precs:
            made[name] = type(name, (_SweepTrack,), {
                "__module__": __name__,
                "__doc__": f"{family}: geometric mean of % of cuBLAS (same process) of {', '.join(ks)} "
                           f"over {', '.join(sweep)}",
                "group": "sweep",
                "shapes": sweep,
                "params": [ks, precs],
                # A different shape set is a different measurement: asv keeps history per version.
                "version": f"{VERSION}-{_digest(sweep)}",
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
    counts = dict(plan())
    for name, cls in _CLASSES.items():
        n = counts[name]
        total += n
        grid = " ".join(f"{pn}s={','.join(map(str, pv))}" for pn, pv in zip(cls.param_names, cls.params))
        extra = f" shapes={','.join(cls.shapes)}" if "shape" not in cls.param_names else ""
        print(f"{name:26s} {n:3d} processes: {grid}{extra}")
    print(f"total {total} processes (one per point; each imports torch and makes a CUDA context)")


if __name__ == "__main__":
    _main()
