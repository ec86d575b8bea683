"""One path for every measurement: problem -> inputs -> prepare -> check -> measure -> Result.

The CLI, the asv suite and the tests call ``run_kernel`` / ``check_kernel``; nothing else
launches a kernel for a number. A kernel whose output is wrong is reported FAILED and never
timed; one that can't take a problem says why (status "unsupported"); one that raises says
what it raised (status "error"). Run through a worker process (compare.harness.worker), a kernel
that poisons the CUDA context is "FAULT" and one that never returns is "HUNG".
"""
from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Optional

import torch

from . import check as _check
from . import gpuinfo, sol
from . import timing as _timing
from .batch_time import measure_batch
from .cuda_faults import quiet_dead_context_teardown, sticky_cuda_error
from .inputs import Inputs, clear_cache, make_inputs
from .problem import Problem
from .registry import Kernel

from .status import ERROR, FAILED, FAULT, HUNG, NO_NUMBER, OK, SKIPPED, UNSUPPORTED  # noqa: F401  (re-exported)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run`: ``results`` are the rows finished before it (a caller that does
    not catch it sees the KeyboardInterrupt it is)."""

    def __init__(self, results: list):
        super().__init__(f"interrupted after {len(results)} rows")
        self.results = results


@dataclass
class Result:
    kernel: str
    family: str
    stage: str
    group: str
    variant: str
    shape: str
    M: int
    N: int
    K: int
    precision: str
    alpha: float
    beta: float
    status: str
    reason: str = ""
    # The resolved configuration that produced this row (tile, split, autotuned config, ...).
    config: dict = field(default_factory=dict)
    median_ms: Optional[float] = None
    iqr_ms: Optional[float] = None
    min_ms: Optional[float] = None
    samples: Optional[int] = None
    noise: Optional[float] = None
    tflops: Optional[float] = None
    pct_cublas: Optional[float] = None
    pct_peak: Optional[float] = None
    # Speed of light (compare.harness.sol): the problem's FLOPs (2MNK, + 2MN when beta != 0), its
    # minimum DRAM bytes (A, B read, C written, C read when beta != 0) and their ratio; the
    # achieved GB/s over those bytes; the SOL time against this GPU's measured peaks at the row's
    # clock, % SOL (SOL time / median time), which roof bounds it (compute / memory), and a note
    # when the row reads above 100% by more than the noise (a wrong peak or byte count).
    flops: Optional[int] = None
    min_bytes: Optional[int] = None
    intensity: Optional[float] = None
    gbps: Optional[float] = None
    sol_ms: Optional[float] = None
    pct_sol: Optional[float] = None
    bound: str = ""
    sol_flag: str = ""
    rel_err: Optional[float] = None
    worst_err: Optional[float] = None
    prepare_s: Optional[float] = None
    sm_clock_mhz: Optional[int] = None
    temp_c: Optional[int] = None
    throttled: Optional[bool] = None
    throttle_reasons: list = field(default_factory=list)
    # How the number was taken (compare.harness.timing.Measurement.method: "events+hold", "graph+hold",
    # "events", "events (hold gave up)"), the stream hold used and how many samples it discarded.
    timing_method: str = ""
    hold_us: Optional[float] = None
    hold_failures: Optional[int] = None
    # Where a distributed sweep (compare.outputs.distributed) measured the row: the GPU's name and
    # UUID, the Dask worker's address, and how many times its shape was started (2: its first
    # worker died). None in a one-process run and in files written before these existed.
    gpu_name: Optional[str] = None
    gpu_uuid: Optional[str] = None
    worker: Optional[str] = None
    attempts: Optional[int] = None
    # Per-sample times, for asv's statistics (the gate's noise-aware verdict); not written to JSON.
    times_ms: list = field(default_factory=list, repr=False)
    # Batch time (compare.harness.batch_time.measure_batch): per launch of n back-to-back launches
    # replayed from one CUDA graph, L2 warm, no host in it; batch_method "graph xN" or "n/a: why".
    # host_launch_us: the host's time to enqueue one launch (the launch path, reported apart).
    # median_ms (and pct_cublas) is the cold time; pct_cublas_batch compares batch times.
    batch_ms: Optional[float] = None
    batch_method: Optional[str] = None
    host_launch_us: Optional[float] = None
    pct_cublas_batch: Optional[float] = None
    # TEST-ONLY (compare.ci.gate_sensitivity): the planted slowdown this row was timed with.
    planted: Optional[dict] = None

    def as_dict(self) -> dict:
        d = asdict(self)
        d.pop("times_ms", None)
        return d

    @property
    def status_text(self) -> str:
        return self.status if not self.reason else f"{self.status}: {self.reason}"


def blank_row(kernel: Kernel, problem: Problem, status: str, reason: str = "") -> "Result":
    """A row with no measurement: the kernel's and problem's columns, a status and its reason."""
    return _base(kernel, problem, status, reason)


def _base(kernel: Kernel, problem: Problem, status: str, reason: str = "") -> Result:
    return Result(kernel=kernel.name, family=kernel.family, stage=kernel.stage, group=kernel.group,
                  variant=kernel.variant, shape=problem.shape, M=problem.M, N=problem.N, K=problem.K,
                  precision=problem.precision, alpha=problem.alpha, beta=problem.beta,
                  status=status, reason=reason)


def _sync(inputs: Inputs) -> None:
    if inputs.device.type == "cuda":
        torch.cuda.synchronize()


def prepare(kernel: Kernel, problem: Problem, inputs: Inputs,
            options: Optional[dict] = None) -> tuple[Callable[[], None], float]:
    """Compile / autotune and do the first launch; returns (launch, seconds it took).
    ``launch.config`` is the resolved configuration (read after the first launch: autotuners
    choose then)."""
    t0 = time.perf_counter()
    launch = kernel.prepare(problem, inputs, dict(options or {}))
    launch()
    _sync(inputs)
    return launch, time.perf_counter() - t0


def config_of(launch) -> dict:
    return dict(getattr(launch, "config", None) or {})


def checked_run(problem: Problem, inputs: Inputs, launch: Callable[[], None]) -> _check.CheckResult:
    """Poison C (NaN when beta == 0, else back to C0), launch once, compare with float64."""
    inputs.reset_c(poison=True)
    _sync(inputs)
    launch()
    _sync(inputs)
    return _check.check(problem, inputs.C, inputs.ref, inputs.bound)


def check_kernel(kernel: Kernel, problem: Problem, device: Optional[str] = None,
                 repeats: int = 1, options: Optional[dict] = None) -> _check.CheckResult:
    """For tests: prepare and check ``kernel`` on ``problem``; raises if unsupported."""
    why = kernel.why_not(problem)
    if why:
        raise ValueError(f"{kernel.name} can't run {problem.shape} {problem.precision}: {why}")
    inputs = make_inputs(problem, device)
    launch, _ = prepare(kernel, problem, inputs, options)
    res = None
    for _ in range(repeats):
        res = checked_run(problem, inputs, launch)
        if not res.ok:
            break
    return res


def run_kernel(kernel: Kernel, problem: Problem, *, timing: bool = True, device: Optional[str] = None,
               measure_kw: Optional[dict] = None, options: Optional[dict] = None,
               batch: bool = True) -> Result:
    """THE path from a (kernel, problem) to a result row: prepare -> poison C -> check -> measure.

    ``options`` are the kernel's parsed options (``Kernel.parse_options``). Never raises for a
    kernel's own trouble: a problem the kernel can't take is "unsupported", a wrong result is
    "FAILED" (and never timed), and an exception anywhere (compile, launch, an out-of-memory,
    the timing loop) is an "error" row carrying the exception's first line. The row's
    ``config`` is the resolved configuration the kernel reported (``launch.config``).
    ``batch``: also take the batch time (``batch_time.measure_batch``)."""
    why = kernel.why_not(problem)
    if why:
        return _base(kernel, problem, UNSUPPORTED, why)
    launch = None
    try:
        inputs = make_inputs(problem, device)
        launch, prep_s = prepare(kernel, problem, inputs, options)
        res = checked_run(problem, inputs, launch)
        r = _base(kernel, problem, OK if res.ok else FAILED, "" if res.ok else res.message)
        r.config = config_of(launch)
        r.rel_err, r.worst_err, r.prepare_s = res.rel_err, res.worst_err, prep_s
        if not res.ok or not timing:
            return r
        _measure_into(r, problem, inputs, launch, measure_kw)
        if batch:
            _batch_into(r, launch, measure_kw)
        return r
    except Exception as exc:  # a kernel that raises is a row, not a crash of the whole comparison
        return _error_row(kernel, problem, exc, launch)


def _measure_into(r: Result, problem: Problem, inputs: Inputs, launch, measure_kw: Optional[dict]) -> None:
    m = _timing.measure(launch, before=inputs.reset_c, **(measure_kw or {}))
    r.median_ms, r.iqr_ms, r.min_ms = m.median_s * 1e3, m.iqr_s * 1e3, m.min_s * 1e3
    r.samples, r.noise = m.samples, m.noise
    r.tflops = problem.flops / m.median_s / 1e12
    r.sm_clock_mhz, r.temp_c = m.sm_clock_after_mhz, m.temp_after_c
    r.throttled, r.throttle_reasons = m.throttled, m.throttle_reasons
    r.timing_method, r.hold_us, r.hold_failures = m.method, m.hold_us, m.hold_failures
    r.times_ms = [t * 1e3 for t in m.times_s]
    r.host_launch_us, r.planted = m.dispatch_us, m.planted
    peak = gpuinfo.environment().fp32_peak_tflops
    if peak and problem.precision in ("fp32",):
        r.pct_peak = 100 * r.tflops / peak


def _batch_into(r: Result, launch, measure_kw: Optional[dict]) -> None:
    try:
        b = measure_batch(launch, r.median_ms / 1e3, gpu=(measure_kw or {}).get("gpu"))
    except Exception as exc:     # the cold time stands; the row says why it has no batch time
        first = (str(exc).strip().splitlines() or [""])[0]
        r.batch_method = f"n/a: {type(exc).__name__}: {first[:160]}"
        return
    r.batch_method = b.method
    r.batch_ms = None if b.per_launch_s is None else b.per_launch_s * 1e3


def _error_row(kernel: Kernel, problem: Problem, exc: BaseException, launch) -> Result:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    msg = f"{type(exc).__name__}: {first}"
    if _debug():
        traceback.print_exc()
    if _is_oom(exc):
        # Free what this problem holds so the next kernel (or shape) starts from a clean slate.
        clear_cache()
        try:
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except Exception:
            pass
        msg = "out of GPU memory: " + msg
    if sticky_cuda_error(msg):     # this process's context is dead: its teardown must print nothing
        quiet_dead_context_teardown()
    r = _base(kernel, problem, ERROR, msg[:300])
    try:
        r.config = config_of(launch) if launch is not None else {}
    except Exception:
        r.config = {}
    return r


def _is_oom(exc: BaseException) -> bool:
    name = type(exc).__name__
    return name == "OutOfMemoryError" or "out of memory" in str(exc).lower()


def _debug() -> bool:
    return bool(os.environ.get("COMPARE_DEBUG"))


def baseline_key(r: Result) -> tuple:
    """cuBLAS row that a row is compared with: same shape, same alpha/beta, and the same
    precision (tf32x3 -> fp32: cuBLAS has no 3xTF32 and fp32 is the same accuracy class)."""
    prec = "fp32" if r.precision == "tf32x3" else r.precision
    return (r.shape, prec, r.alpha, r.beta)


def fill_pct_cublas(results: Iterable[Result]) -> None:
    results = list(results)
    base = {baseline_key(r): r for r in results if r.family == "cublas" and r.status == OK and r.tflops}
    for r in results:
        b = base.get(baseline_key(r))
        if r.tflops and b is not None:
            r.pct_cublas = 100 * r.tflops / b.tflops
        if b is not None and r.batch_ms and b.batch_ms:
            r.pct_cublas_batch = 100 * b.batch_ms / r.batch_ms


def baseline_problem(p: Problem) -> Problem:
    """The problem cuBLAS runs as ``p``'s baseline: cuBLAS has no 3xTF32 mode, so a tf32x3
    problem gets the fp32 one (the same accuracy class)."""
    return p.with_(precision="fp32") if p.precision == "tf32x3" else p


def baseline_pairs(pairs: Iterable[tuple[Kernel, Problem]]) -> list[tuple[Kernel, Problem]]:
    """cuBLAS rows at their ``baseline_problem`` (a tf32x3 problem's fp32 row is added once per
    shape). Duplicates are dropped, order kept."""
    out, seen = [], set()
    for k, p in pairs:
        if k.family == "cublas":
            p = baseline_problem(p)
        key = (k.name, p)
        if key not in seen:
            seen.add(key)
            out.append((k, p))
    return out


def run(pairs: Iterable[tuple[Kernel, Problem]], *, timing: bool = True, device: Optional[str] = None,
        measure_kw: Optional[dict] = None, skip: Optional[Callable[[Kernel], Optional[str]]] = None,
        progress: Optional[Callable[[Kernel, Problem], None]] = None,
        options: Optional[dict] = None, execute: Optional[Callable[..., Result]] = None,
        on_row: Optional[Callable[[Result], None]] = None, batch: bool = True) -> list[Result]:
    """Every (kernel, problem) pair, in order (pass them through ``baseline_pairs`` first). Keep
    pairs of one problem together: inputs and the float64 reference are made once per problem
    and shared by every kernel. ``options`` maps a kernel name to its parsed options.

    ``execute`` runs one pair in place of :func:`run_kernel`, with its signature (a worker
    process: compare.harness.worker.Worker.run_kernel). ``on_row`` gets each row as it is finished
    (the JSONL checkpoint). Ctrl-C raises :class:`Interrupted` carrying the rows finished so far."""
    options = options or {}
    execute = execute or run_kernel
    results = []
    try:
        for k, p in pairs:
            if progress:
                progress(k, p)
            why = skip(k) if skip else None
            if why:
                row = _base(k, p, SKIPPED, why)
            else:
                row = execute(k, p, timing=timing, device=device, measure_kw=measure_kw,
                              options=options.get(k.name), batch=batch)
            results.append(row)
            if on_row:
                on_row(row)
    except KeyboardInterrupt:
        fill_pct_cublas(results)
        fill_sol(results, timing)
        raise Interrupted(results) from None
    fill_pct_cublas(results)
    fill_sol(results, timing)
    return results


def fill_sol(results: Iterable[Result], timing: bool = True) -> None:
    """Every row's speed-of-light fields against this GPU's cached peaks (none without a GPU, an
    untimed run, or peaks never measured: then only FLOPs, bytes and intensity)."""
    sol.fill(results, gpuinfo.current_peaks() if timing else None)


CHECKED = (OK, *NO_NUMBER)


def any_failed(results: Iterable[Result]) -> bool:
    """Some kernel produced a wrong result (FAILED)."""
    return any(r.status == FAILED for r in results)


def any_bad(results: Iterable[Result]) -> bool:
    """Some kernel FAILED its check, errored (raised, ran out of memory), faulted (FAULT) or hung
    (HUNG): the run's exit status 1."""
    return any(r.status in NO_NUMBER for r in results)


def nothing_checked(results: Iterable[Result]) -> bool:
    """No row was run at all (every one unsupported or skipped): a run that proves nothing."""
    return not any(r.status in CHECKED for r in results)


def exit_status(results: Iterable[Result]) -> int:
    """The README's exit codes for a finished run: 2 nothing was checked (every row unsupported or
    skipped; said on stderr), 1 a row FAILED, errored, faulted or hung, else 0."""
    results = list(results)
    if nothing_checked(results):
        print("error: nothing was checked: every row is unsupported or skipped", file=sys.stderr)
        return 2
    return 1 if any_bad(results) else 0
