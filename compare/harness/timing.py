"""The one measurement engine. The CLI, the asv suite and the tests all time through ``measure``.

Why our own and not ``triton.testing.do_bench`` or cuda-bench (nvbench's Python package):
do_bench times with events and flushes L2, but it runs a fixed time budget rather than stopping
on a noise target, reports no IQR/noise, and knows nothing about clocks; cuda-bench has the
statistics we want but owns the launch loop and process (its own CLI, its own state object) and
is not on the GPU images we run on. The contract below is small, so we keep it here:

* warm-up: the launch runs until at least ``warmup_s`` of GPU work has passed (clocks ramp up,
  lazy module loads and autotune hits happen outside the samples); it also measures how long
  the host takes to enqueue one launch (its "dispatch" time). The GPU work of the previous
  measurement counts toward it when that ended less than ``WARM_GAP_S`` ago (the GPU never went
  idle long enough to drop its clocks), so back-to-back rows run two warm-up launches, not 50 ms
  of them (``Measurement.warmup_s`` says how long each warm-up was);
* every sample: optional ``before`` hook (e.g. reset C), then an L2 flush (reading a buffer of
  2x the device's L2, size read off the device), then a *hold*, then CUDA events around the
  launch alone. It reads, not writes as do_bench's and nvbench's memset do: a written buffer
  leaves dirty lines the timed launch writes back (docs/findings.md, "The L2 flush");
* adaptive count: at least ``min_samples``; then more, in batches, until the relative standard
  error of the median (estimated from the IQR) is under ``target_noise`` or ``budget_s`` of
  sampling has passed, or ``max_samples`` are taken;
* reports median, IQR, min, max, sample count, noise; SM clock, temperature and NVML throttle
  reasons before and after, and a ``throttled`` flag; and how the samples were taken
  (``method``, ``hold_us``, ``hold_failures``, ``dispatch_us``).

The hold: the start event is enqueued before Python has dispatched the launch. If the GPU is
idle it reaches that event at once and then waits for the launch, so a kernel shorter than its
dispatch (Triton's Python launcher: tens of us) would be timed as its dispatch. As nvbench
does with its blocking kernel, we first enqueue a spin kernel (``torch.cuda._sleep``) that keeps
the stream busy for a few times the measured dispatch time, so start event, launch and end
event are all queued before the GPU reaches the start event. Whether it held is checked, not
assumed: if the start event has already completed when the end event has been enqueued, the
GPU caught up with the host; that sample is discarded and the hold doubled. A launch that
waits for the GPU itself (a host sync inside it) can never be held; after the hold passes
``HOLD_MAX_S`` the engine stops holding and says so (method "events (hold gave up)").

What a sample is, then: one launch on a stream that was busy until just before it. It keeps
the GPU's own cost of starting an isolated launch (~3 us on an H100; a CUDA graph replaying
launches back to back hides most of it: tests/test_gpu_timing.py), the same for every family,
and leaves out the host's dispatch, which differs by family (Triton's launcher: ~30 us).

``method="graph"`` captures the launch once in a CUDA graph and times its replay the same way
(the launch must be capturable: it enqueues on torch's current stream, does no host sync).
``method="events"`` is the old, unheld timing, kept to show what the hold removes.

Batch time (n launches replayed from one CUDA graph): compare/harness/batch_time.py, on the same
GPU pieces.

Planted slowdown (``Plant``): a TEST-ONLY instrument for measuring what the regression gate can
see (compare.ci.gate_sensitivity). It adds a calibrated spin (the hold's ``torch.cuda._sleep``)
right after the launch, inside the timed events, sized to a fraction of the kernel's own
median. It exists only as an explicit ``measure(plant=...)`` argument: no environment variable,
no CLI flag of the main command and no benchmark passes it, and a planted Measurement says so
(``planted``).
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

from . import gpuinfo
from .errors import UsageError

METHODS = ("hold", "graph", "events")
# First hold: HOLD_FACTOR x the median dispatch time of the launch plus HOLD_FLOOR_S for the two
# event records and host jitter. A failed hold is multiplied by HOLD_GROWTH; beyond HOLD_MAX_S
# the launch is taken to wait for the GPU itself and holding stops.
HOLD_FACTOR = 3.0
HOLD_FLOOR_S = 20e-6
HOLD_GROWTH = 2.0
HOLD_MAX_S = 0.05
# The previous measurement's GPU work stands in for the next one's warm-up when the next starts
# within this many seconds of it (a row's prepare and check in between: milliseconds when warm;
# a compile takes longer and gets the full warm-up).
WARM_GAP_S = 0.2


@dataclass
class Measurement:
    median_s: float
    iqr_s: float
    min_s: float
    max_s: float
    samples: int
    noise: float                      # relative standard error of the median
    sm_clock_before_mhz: Optional[int] = None
    sm_clock_after_mhz: Optional[int] = None
    temp_before_c: Optional[int] = None
    temp_after_c: Optional[int] = None
    throttle_reasons: list = field(default_factory=list)
    throttled: bool = False
    # How the samples were taken: "events+hold", "graph+hold", "events" (unheld: includes host
    # dispatch whenever the GPU is idle), or "events (hold gave up)".
    method: str = "events"
    hold_us: Optional[float] = None   # the last hold used (after any growth)
    hold_failures: int = 0            # samples discarded because the hold ended too early
    dispatch_us: Optional[float] = None  # median host time to enqueue one launch (warm-up)
    warmup_s: Optional[float] = None     # how long the warm-up ran (short after a recent measurement)
    # Only when a Plant was passed: {"fraction", "spin_us", "achieved"} (achieved = the measured
    # planted median / unplanted median - 1).
    planted: Optional[dict] = None
    times_s: list = field(default_factory=list, repr=False)

    def as_dict(self, with_times: bool = False) -> dict:
        d = asdict(self)
        if not with_times:
            d.pop("times_s")
        return d


_flush_buf = None


class _Recent:
    """When the last measurement in this process ended (``gpu.now()``), on which kind of GPU
    object, and how much GPU work ran in the unbroken stretch of measurements that it ended (no
    gap of ``WARM_GAP_S`` or more): the next measurement's warm-up credit."""
    gpu_key: object = None
    end: float = -math.inf
    busy_s: float = 0.0


def _gpu_key(gpu):
    # Every TorchGPU reads the one process clock; another GPU object (a test's fake) has its own.
    return TorchGPU if isinstance(gpu, TorchGPU) else id(gpu)


def _recent(gpu, start: float) -> bool:
    return _Recent.gpu_key == _gpu_key(gpu) and 0 <= start - _Recent.end < WARM_GAP_S


def _warm_credit(gpu) -> float:
    return _Recent.busy_s if _recent(gpu, gpu.now()) else 0.0


def was_busy(gpu, start: float, seconds: float) -> None:
    """Called as a measurement ends: when it started (``gpu.now()``) and the GPU work it ran."""
    carried = _Recent.busy_s if _recent(gpu, start) else 0.0
    _Recent.gpu_key, _Recent.end, _Recent.busy_s = _gpu_key(gpu), gpu.now(), carried + seconds


def l2_flush_buffer():
    """The buffer a cold sample reads to evict L2 (twice the L2, zeros, made once per process),
    and the one-element tensor its sum goes to."""
    global _flush_buf
    import torch
    if _flush_buf is None:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        l2 = int(getattr(props, "L2_cache_size", 0) or 64 * 2**20)
        # float32: torch's float sum streams at DRAM speed, its int32 sum (into int64) at a sixth
        _flush_buf = (torch.zeros(2 * l2 // 4, dtype=torch.float32, device="cuda"),
                      torch.zeros((), dtype=torch.float32, device="cuda"))
    return _flush_buf


_spin_cycles_per_s: dict = {}


class TorchGPU:
    """The GPU pieces of the sampling loop, all on torch's current stream (where every launch
    enqueues its work). ``measure`` takes any object with these methods; the CPU tests pass a
    simulated GPU with a fake clock."""

    def __init__(self, flush: bool = True):
        import torch
        self._torch = torch
        self.stream = torch.cuda.current_stream()
        self._flush_buf = l2_flush_buffer() if flush else None

    def now(self) -> float:
        return time.perf_counter()

    def synchronize(self) -> None:
        self.stream.synchronize()

    def flush_l2(self) -> None:
        """Evict L2 by reading twice its size, leaving it clean (module doc)."""
        if self._flush_buf is not None:
            buf, sink = self._flush_buf
            self._torch.sum(buf, dim=0, out=sink)

    def new_event(self):
        return self._torch.cuda.Event(enable_timing=True)

    def record(self, event) -> None:
        event.record(self.stream)

    def completed(self, event) -> bool:
        return event.query()

    def elapsed_s(self, start, end) -> float:
        return start.elapsed_time(end) / 1e3

    def calibrate_hold(self) -> None:
        """Spin cycles per second of ``torch.cuda._sleep`` (it counts SM clock cycles). The
        fastest of a few runs, so that a hold lasts at least what was asked at any lower clock;
        a clock boost beyond it shows up as a failed hold and grows the next one."""
        torch = self._torch
        dev = torch.cuda.current_device()
        if dev in _spin_cycles_per_s:
            return
        cycles = 1_000_000            # ~0.5 ms at 2 GHz: the event/dispatch overhead is < 1% of it
        torch.cuda._sleep(cycles)
        best = math.inf
        for _ in range(3):
            s, e = self.new_event(), self.new_event()
            self.record(s)
            torch.cuda._sleep(cycles)
            self.record(e)
            e.synchronize()
            best = min(best, self.elapsed_s(s, e))
        _spin_cycles_per_s[dev] = cycles / best

    def hold(self, seconds: float) -> None:
        rate = _spin_cycles_per_s[self._torch.cuda.current_device()]
        self._torch.cuda._sleep(max(1, int(seconds * rate)))

    def capture(self, launch: Callable[[], None]) -> Callable[[], None]:
        """``launch`` captured once in a CUDA graph; returns a zero-arg replay on the current
        stream. The capture stream runs the launch once first (per-stream lazy state, e.g. a
        cuBLAS workspace, must exist before capture)."""
        torch = self._torch
        side = torch.cuda.Stream()
        side.wait_stream(self.stream)
        try:
            with torch.cuda.stream(side):
                launch()
            side.synchronize()
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=side):
                launch()
        except Exception as exc:
            raise RuntimeError(f"the launch can't be captured in a CUDA graph ({type(exc).__name__}: {exc}); "
                               "time it with method='hold'") from exc
        self.stream.wait_stream(side)
        self.stream.synchronize()

        def replay():
            graph.replay()
        replay.graph = graph          # the graph lives as long as its replay
        return replay

    def capture_many(self, launch: Callable[[], None], n: int) -> Callable[[], None]:
        """``n`` launches back to back captured in one CUDA graph (see ``capture``)."""
        def n_launches():
            for _ in range(n):
                launch()
        return self.capture(n_launches)


def noise_of(times: list[float]) -> tuple[float, float]:
    """(median, relative standard error of the median). sigma ~ IQR/1.349 for a normal core, and
    the median's standard error is sqrt(pi/2)*sigma/sqrt(n); the IQR keeps outliers from
    inflating it."""
    n = len(times)
    med = statistics.median(times)
    if n < 4:
        return med, math.inf
    q1, _, q3 = statistics.quantiles(times, n=4)
    return med, 1.2533 * ((q3 - q1) / 1.349) / math.sqrt(n) / med


@dataclass
class _Sampled:
    times: list
    hold_s: Optional[float]
    hold_failures: int
    hold_gave_up: bool


def _sample(gpu, launch: Callable[[], None], before: Optional[Callable[[], None]], *, min_n: int,
            max_samples: int, target_noise: float, budget_s: float, hold_s: Optional[float]) -> _Sampled:
    """The sampling loop. ``hold_s`` None: no hold (method "events")."""
    times: list[float] = []
    failures, gave_up = 0, False
    t_start = gpu.now()
    attempts, batch = 0, min_n
    while True:
        pending = []
        for _ in range(batch):
            attempts += 1
            if before:
                before()
            gpu.flush_l2()
            if hold_s is not None:
                gpu.hold(hold_s)
            s, e = gpu.new_event(), gpu.new_event()
            gpu.record(s)
            launch()
            gpu.record(e)
            if hold_s is not None and gpu.completed(s):
                # The GPU reached the start event before the launch was all enqueued: this sample
                # would count host dispatch. Drop it and hold longer.
                failures += 1
                hold_s *= HOLD_GROWTH
                if hold_s > HOLD_MAX_S:
                    hold_s, gave_up = None, True
                continue
            pending.append((s, e))
        gpu.synchronize()
        times.extend(gpu.elapsed_s(s, e) for s, e in pending)
        elapsed = gpu.now() - t_start
        if len(times) >= max_samples:
            break
        if len(times) >= min_n:
            _, noise = noise_of(times)
            if noise <= target_noise or elapsed >= budget_s:
                break
            # enough to halve the noise next round, but stay inside the budget and max_samples
            per_attempt = elapsed / attempts
            batch = max(1, min(len(times), max_samples - len(times),
                               int((budget_s - elapsed) / max(per_attempt, 1e-12)) + 1))
        else:
            batch = min_n - len(times)   # discarded samples are made up, budget or not
    return _Sampled(times=times, hold_s=hold_s, hold_failures=failures, hold_gave_up=gave_up)


@dataclass(frozen=True)
class Plant:
    """TEST-ONLY: slow the timed launch down by ``fraction`` of its own median (0.03 = 3%) with a
    device spin enqueued right after it. Only compare.ci.gate_sensitivity constructs one."""
    fraction: float

    def __post_init__(self):
        if not (isinstance(self.fraction, (int, float)) and 0 < self.fraction <= 1):
            raise UsageError(f"planted slowdown {self.fraction!r}: must be a fraction in (0, 1], e.g. 0.03")


def _planted(gpu, timed, spin_s: float):
    def launch_and_spin():
        timed()
        gpu.hold(spin_s)
    return launch_and_spin


def _calibrate_plant(gpu, timed, before, plant: Plant, hold_s: float):
    """(planted launch, planted dict): the spin sized so that the planted median is ``1 +
    plant.fraction`` times the unplanted one. The added time is not the spin alone (its own
    launch adds a few us at any length): two trial lengths fit added = a + b x spin, and the
    length is solved from the fit; ``achieved`` is then measured, never assumed."""
    def median_of(fn):
        t = _sample(gpu, fn, before, min_n=10, max_samples=30, target_noise=0.002, budget_s=0.3,
                    hold_s=hold_s).times
        return statistics.median(t)
    base = median_of(timed)
    want = plant.fraction * base
    s1, s2 = want, 2 * want
    g1 = median_of(_planted(gpu, timed, s1)) - base
    g2 = median_of(_planted(gpu, timed, s2)) - base
    spin_s = s1 + (want - g1) * (s2 - s1) / (g2 - g1) if g2 > g1 else s1
    spin_s = max(1e-7, spin_s)        # the spin's launch alone may exceed a tiny plant
    got = median_of(_planted(gpu, timed, spin_s)) - base
    return _planted(gpu, timed, spin_s), {"fraction": plant.fraction, "spin_us": spin_s * 1e6,
                                          "achieved": got / base}


def measure(launch: Callable[[], None], *, before: Optional[Callable[[], None]] = None,
            flush: bool = True, min_samples: int = 10, max_samples: int = 2000,
            target_noise: float = 0.003, budget_s: float = 2.0, warmup_s: float = 0.05,
            method: str = "hold", gpu=None, plant: Optional[Plant] = None) -> Measurement:
    """Time the GPU work of ``launch`` (see the module doc). ``method``: "hold" (default),
    "graph" or "events". ``gpu``: the GPU pieces (default ``TorchGPU(flush)``; tests pass a fake).
    ``plant``: TEST-ONLY planted slowdown (see ``Plant``); needs a held method."""
    if method not in METHODS:
        raise UsageError(f"unknown timing method {method!r}; choose one of {', '.join(METHODS)}")
    if plant is not None and (not isinstance(plant, Plant) or method == "events"):
        raise UsageError("a planted slowdown takes a timing.Plant and a held method (hold or graph)")
    if min_samples < 1 or max_samples < 1:
        raise UsageError(f"min_samples ({min_samples}) and max_samples ({max_samples}) must be >= 1")
    if gpu is None:
        gpu = TorchGPU(flush)

    gpuinfo.clock_sample()  # NVML init outside everything timed
    timed = gpu.capture(launch) if method == "graph" else launch
    warm = _warm_up(gpu, timed, before, warmup_s)
    # A kernel that takes seconds per launch still gets a median of several samples, but not 10
    # of them inside a 2 s budget.
    min_n = min(max_samples, max(3, min(min_samples, int(budget_s / max(warm.per_launch_s, 1e-9)))))

    hold_s = None
    if method != "events":
        gpu.calibrate_hold()
        hold_s = min(HOLD_MAX_S, HOLD_FLOOR_S + HOLD_FACTOR * warm.dispatch_s)

    planted = None
    if plant is not None:
        timed, planted = _calibrate_plant(gpu, timed, before, plant, hold_s)

    c_before = gpuinfo.clock_sample()
    sampled = _sample(gpu, timed, before, min_n=min_n, max_samples=max_samples,
                      target_noise=target_noise, budget_s=budget_s, hold_s=hold_s)
    c_after = gpuinfo.clock_sample()
    was_busy(gpu, warm.t0, warm.seconds + sum(sampled.times))
    return _measurement(sampled, warm, c_before, c_after, method, planted)


@dataclass
class _Warm:
    t0: float                 # gpu.now() when the warm-up began
    seconds: float            # how long it ran
    per_launch_s: float       # its mean time per launch (sizes the first batch of samples)
    dispatch_s: float         # median host time to enqueue one launch (sizes the hold)


def _warm_up(gpu, timed, before, warmup_s: float) -> _Warm:
    """Launch until ``warmup_s`` of GPU work has passed, less the credit of a measurement that
    ended moments ago (at least two launches): also tells how long one launch takes, and its
    host dispatch time."""
    need = max(0.0, warmup_s - _warm_credit(gpu))
    t0 = gpu.now()
    n_warm = 0
    dispatch = []
    while True:
        if before:
            before()
        t = gpu.now()
        timed()
        dispatch.append(gpu.now() - t)
        n_warm += 1
        gpu.synchronize()
        if n_warm >= 2 and gpu.now() - t0 >= need:
            break
    warmed_s = gpu.now() - t0
    return _Warm(t0=t0, seconds=warmed_s, per_launch_s=warmed_s / n_warm, dispatch_s=statistics.median(dispatch))


def _measurement(sampled: _Sampled, warm: _Warm, c_before, c_after, method: str,
                 planted: Optional[dict]) -> Measurement:
    """The statistics of the samples, the clocks around them and how they were taken."""
    times = sampled.times
    med, noise = noise_of(times)
    q1, _, q3 = statistics.quantiles(times, n=4) if len(times) >= 2 else (times[0], 0, times[0])
    reasons = sorted(set((c_before.throttle or []) + (c_after.throttle or [])))
    maxclk = gpuinfo.max_sm_clock_mhz()
    # sw_power_cap is often raised while the clock sits within 1% of max; it counts only when the
    # clock actually fell. Thermal and hardware slowdowns always count.
    slow_clock = bool(maxclk and c_after.sm_mhz and c_after.sm_mhz < 0.95 * maxclk)
    hard = [r for r in reasons if r != "sw_power_cap"]
    if method == "events":
        how = "events"
    elif sampled.hold_gave_up:
        how = "events (hold gave up)"
    else:
        how = "graph+hold" if method == "graph" else "events+hold"
    return Measurement(
        median_s=med, iqr_s=q3 - q1, min_s=min(times), max_s=max(times), samples=len(times),
        noise=noise, sm_clock_before_mhz=c_before.sm_mhz, sm_clock_after_mhz=c_after.sm_mhz,
        temp_before_c=c_before.temp_c, temp_after_c=c_after.temp_c, throttle_reasons=reasons,
        throttled=bool(hard) or slow_clock, method=how,
        hold_us=None if sampled.hold_s is None else sampled.hold_s * 1e6,
        hold_failures=sampled.hold_failures, dispatch_us=warm.dispatch_s * 1e6, warmup_s=warm.seconds,
        planted=planted, times_s=times)
