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
import time as _time

from compare.harness import registry as _registry
from compare.harness.problem import PRECISIONS as _PRECISIONS
from compare.harness.problem import parse_shape as _parse_shape

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
PCT_SUFFIX = "PctCublas"
SWEEP_CLASS_NAMES = {"cuda": "SweepCuda", "triton": "SweepTriton"}
# Used only while compare/harness/shapes.py (the named shape sets) is absent: one or two shapes of each
# kind (square, odd, transformer layers, skinny, long K).
FALLBACK_SWEEP_SHAPES = ((4096, 4096, 4096), (2039, 1021, 3001), (128, 4096, 11008),
                         (2048, 11008, 4096), (64, 4096, 8192), (512, 512, 65536))


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
    try:
        from compare.harness.shapes import shape_set
    except ImportError:
        return [tuple(s) for s in FALLBACK_SWEEP_SHAPES]
    return [tuple(int(d) for d in s) for s in shape_set("asv")]


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


def _precision_or_na(kernel_name: str, precision: str, check_gpu: bool = True) -> None:
    """n/a only without a GPU or without the precision: a kernel that refuses some shapes of a
    geometric mean's set fails (geomean_pct_cublas says which), it is not n/a."""
    from compare.harness.inputs import gpu_available

    if check_gpu and not gpu_available():
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


def _pct_of(kernel_name: str, precision: str, shapes: list[str], results) -> float:
    """Geometric mean over ``shapes`` of ``kernel_name``'s % of cuBLAS in ``results`` (rows of one
    process: runner.run filled pct_cublas). Raises AssertionError when a shape has no number."""
    pcts = []
    for r in results:
        if r.kernel != kernel_name or r.precision != precision or r.shape not in shapes:
            continue
        _ok_or_raise(r)
        if not r.pct_cublas or not _math.isfinite(r.pct_cublas):
            raise AssertionError(f"{kernel_name} {r.shape} {precision}: no cuBLAS baseline")
        pcts.append(r.pct_cublas)
        print(f"{kernel_name} {r.shape} {precision}: {r.pct_cublas:.1f}% of cuBLAS", file=_sys.stderr)
    if len(pcts) != len(shapes):
        raise AssertionError(f"{kernel_name} {precision}: {len(pcts)} of {len(shapes)} shapes measured")
    return _math.exp(sum(_math.log(x) for x in pcts) / len(pcts))


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
    return _pct_of(kernel_name, precision, [p.shape for p in problems], runner.run(pairs, batch=False))


# ---------------------------------------------------------------------------- one process per group
# asv's setup_cache runs once per key (the defining file and LINE of the function) and hands its
# return value to every benchmark that shares the key. One function per group (and one for the
# sweep), each on its own line: the group's time points, their % of cuBLAS twins and the cuBLAS
# baselines are all measured in ONE process, each (kernel, problem) once; the per-point asv
# processes only read the result (no CUDA, no compile). With launch_method forkserver (asv.conf.json)
# those processes are forks of one that has imported the suite (torch, triton) already.

_T_MODULE = _time.perf_counter()


def _phase_log(record: dict) -> None:
    """GEMM_BENCH_PHASES=FILE: append one JSON line of phase times per process (a timing log of
    the harness only; it changes nothing that is measured). compare.ci.profile_gate reads it."""
    path = _os.environ.get("GEMM_BENCH_PHASES", "").strip()
    if not path:
        return
    import json
    line = json.dumps(record, sort_keys=True) + "\n"
    fd = _os.open(path, _os.O_WRONLY | _os.O_APPEND | _os.O_CREAT, 0o644)
    try:
        _os.write(fd, line.encode())       # one write of one line: lines of processes don't mix
    finally:
        _os.close(fd)


def _process_age_s():
    """Seconds since this process started (Linux), else None: the interpreter + import share."""
    try:
        with open("/proc/self/stat") as f:
            start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            up = float(f.read().split()[0])
        return up - start_ticks / _os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _row_summary(r) -> dict:
    if r.status == "unsupported":
        return {"status": "na", "why": f"{r.kernel} can't run {r.shape} {r.precision}: {r.reason}"}
    if r.status != "ok" or not r.median_ms:
        return {"status": "failed", "why": f"{r.kernel} {r.shape} {r.precision}: {r.status_text or r.status}, not timed"}
    return {"status": "ok", "median_s": r.median_ms / 1e3, "times_s": [t / 1e3 for t in (r.times_ms or [])],
            "throttled": bool(r.throttled), "throttle_reasons": list(r.throttle_reasons or [])}


def measure_points(points, pct_sets) -> dict:
    """Measure every (kernel, shape, precision) of ``points`` in this process (cuBLAS baselines
    added), and the % of cuBLAS geometric mean of every (kernel, precision, shapes) of
    ``pct_sets``. Returns the picklable cache the benchmarks read:
    {"na": reason or None, "rows": {(kernel, shape, precision): summary}, "pct": {(kernel,
    precision): float or error text}}."""
    from compare.harness import runner
    from compare.harness.inputs import gpu_available
    from compare.harness.problem import Problem

    t0 = _time.perf_counter()
    age = _process_age_s()
    if not gpu_available():
        return {"na": "no CUDA GPU", "rows": {}, "pct": {}}
    import torch
    t_ctx = _time.perf_counter()
    if torch.cuda.is_available():      # (the CPU tests fake a GPU without one)
        torch.cuda.init()
        torch.empty(1, device="cuda")
        torch.cuda.synchronize()
    ctx_s = _time.perf_counter() - t_ctx
    rows, pairs = {}, []
    wanted = list(dict.fromkeys(list(points) + [(k, s, p) for k, p, shapes in pct_sets for s in shapes]))
    for kname, shape, prec in wanted:
        k = _registry.get(kname)
        if prec not in k.precisions:
            rows[(kname, shape, prec)] = {"status": "na", "why": f"{kname} has no {prec} path (has {', '.join(k.precisions)})"}
            continue
        problem = Problem(*_parse_shape(shape), precision=prec)
        try:
            _fits_or_na(problem)
        except NotImplementedError as exc:
            rows[(kname, shape, prec)] = {"status": "na", "why": str(exc)}
            continue
        pairs.append((k, problem))
    cublas = _registry.get("cublas")
    pairs = pairs + [(cublas, p) for _, p in pairs]
    pairs.sort(key=lambda kp: (kp[1].shape, kp[1].precision, kp[0].family != "cublas"))   # inputs shared per problem
    pairs = runner.baseline_pairs(pairs)
    phases = []

    def progress(k, p):
        phases.append({"kernel": k.name, "shape": p.shape, "precision": p.precision, "t": _time.perf_counter()})
    results = runner.run(pairs, batch=False, progress=progress)
    t_end = _time.perf_counter()
    for i, r in enumerate(results):
        phases[i].update(status=r.status, prepare_s=r.prepare_s,
                         wall_s=(phases[i + 1]["t"] if i + 1 < len(phases) else t_end) - phases[i]["t"])
        rows.setdefault((r.kernel, r.shape, r.precision), _row_summary(r))
    pct = {}
    for kname, prec, shapes in pct_sets:
        try:
            pct[(kname, prec)] = _pct_of(kname, prec, list(shapes), results)
        except AssertionError as exc:
            pct[(kname, prec)] = str(exc)
    _phase_log({"kind": "setup_cache", "pid": _os.getpid(), "process_age_at_start_s": age,
                "module_import_to_start_s": t0 - _T_MODULE, "cuda_context_s": ctx_s,
                "rows": [{k: v for k, v in ph.items() if k != "t"} for ph in phases],
                "measure_s": t_end - t_ctx - ctx_s, "total_s": t_end - t0})
    return {"na": None, "rows": rows, "pct": pct}


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


def _cache_na(cache) -> None:
    if cache.get("na"):
        raise NotImplementedError(cache["na"])


def _point_log(what: str) -> None:
    if _os.environ.get("GEMM_BENCH_PHASES"):
        _phase_log({"kind": "point", "what": what, "pid": _os.getpid(), "process_age_s": _process_age_s(),
                    "since_module_import_s": _time.perf_counter() - _T_MODULE})


class _Common:
    """asv settings shared by the generated classes (leading underscore: asv does not collect it)."""

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

    def track_time(self, cache, kernel, shape, precision):
        row = cache["rows"][(kernel, shape, precision)]
        _point_log(f"{kernel} {shape} {precision}")
        if row["status"] != "ok":
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

    def track_pct_cublas(self, cache, kernel, precision):
        _point_log(f"{kernel} {precision} pct")
        v = cache["pct"][(kernel, precision)]
        if isinstance(v, str):
            raise AssertionError(v)
        return v


class _SweepTrack(_Common):
    """Geometric mean of % of cuBLAS of a family's general-purpose kernel over the sweep set."""

    unit = "% of cuBLAS"
    param_names = ["kernel", "precision"]

    def setup(self, cache, kernel, precision):
        _cache_na(cache)                               # (no GPU: said by the cache)
        _precision_or_na(kernel, precision, check_gpu=False)

    def track_geomean_pct_cublas(self, cache, kernel, precision):
        _point_log(f"{kernel} {precision} sweep")
        v = cache["pct"][(kernel, precision)]
        if isinstance(v, str):
            raise AssertionError(v)
        return v


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
                "setup_cache": SETUP_CACHES[group],
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
                    "setup_cache": SETUP_CACHES[group],
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
                "setup_cache": SETUP_CACHES["sweep"],
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
    caches = {getattr(c.setup_cache, "__name__", "") for c in _CLASSES.values()}
    print(f"total {total} points: each a light asv process reading its group's setup_cache; "
          f"{len(caches)} setup_cache processes do the GPU work (imports, CUDA context, compile, check, sampling)")


if __name__ == "__main__":
    _main()
