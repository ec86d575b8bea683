"""The one measurement engine. The CLI, the asv suite and the tests all time through ``measure``.

Why our own and not ``triton.testing.do_bench`` or cuda-bench (nvbench's Python package):
do_bench times with events and flushes L2, but it runs a fixed time budget rather than stopping
on a noise target, reports no IQR/noise, and knows nothing about clocks; cuda-bench has the
statistics we want but owns the launch loop and process (its own CLI, its own state object) and
is not on the GPU images we run on. The contract below is ~100 lines, so we keep it here:

* warm-up: the launch runs until at least ``warmup_s`` of GPU work has passed (clocks ramp up,
  lazy module loads and autotune hits happen outside the samples);
* every sample: optional ``before`` hook (e.g. reset C), then an L2 flush (writing a buffer of
  2x the device's L2, size read off the device), then CUDA events around the launch alone;
* adaptive count: at least ``min_samples``; then more, in batches, until the relative standard
  error of the median (estimated from the IQR) is under ``target_noise`` or ``budget_s`` of
  sampling has passed, or ``max_samples`` are taken;
* reports median, IQR, min, max, sample count, noise; SM clock, temperature and NVML throttle
  reasons before and after, and a ``throttled`` flag.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

from . import gpuinfo


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
    times_s: list = field(default_factory=list, repr=False)

    def as_dict(self, with_times: bool = False) -> dict:
        d = asdict(self)
        if not with_times:
            d.pop("times_s")
        return d


_flush_buf = None


def _l2_flush_buffer():
    global _flush_buf
    import torch
    if _flush_buf is None:
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        l2 = int(getattr(props, "L2_cache_size", 0) or 64 * 2**20)
        _flush_buf = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")
    return _flush_buf


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


def measure(launch: Callable[[], None], *, before: Optional[Callable[[], None]] = None,
            flush: bool = True, min_samples: int = 10, max_samples: int = 2000,
            target_noise: float = 0.003, budget_s: float = 2.0, warmup_s: float = 0.05) -> Measurement:
    import torch

    gpuinfo.clock_sample()  # NVML init outside everything timed
    flush_buf = _l2_flush_buffer() if flush else None
    stream = torch.cuda.current_stream()

    # Warm-up: also tells us roughly how long one launch takes.
    t0 = time.perf_counter()
    n_warm = 0
    while True:
        if before:
            before()
        launch()
        n_warm += 1
        stream.synchronize()
        if n_warm >= 2 and time.perf_counter() - t0 >= warmup_s:
            break
    per_launch = (time.perf_counter() - t0) / n_warm
    # A kernel that takes seconds per launch still gets a median of several samples, but not 10
    # of them inside a 2 s budget.
    min_n = max(3, min(min_samples, int(budget_s / max(per_launch, 1e-9))))

    c_before = gpuinfo.clock_sample()
    times: list[float] = []
    t_start = time.perf_counter()
    batch = min_n
    while True:
        events = []
        for _ in range(batch):
            if before:
                before()
            if flush_buf is not None:
                flush_buf.zero_()
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(stream)
            launch()
            e.record(stream)
            events.append((s, e))
        stream.synchronize()
        times.extend(s.elapsed_time(e) / 1e3 for s, e in events)
        med, noise = noise_of(times)
        elapsed = time.perf_counter() - t_start
        if len(times) >= max_samples or noise <= target_noise or elapsed >= budget_s:
            break
        # enough to halve the noise next round, but stay inside the budget and max_samples
        per_sample = elapsed / len(times)
        batch = max(1, min(len(times), max_samples - len(times), int((budget_s - elapsed) / per_sample) + 1))
    c_after = gpuinfo.clock_sample()

    q1, _, q3 = statistics.quantiles(times, n=4) if len(times) >= 2 else (times[0], 0, times[0])
    reasons = sorted(set((c_before.throttle or []) + (c_after.throttle or [])))
    maxclk = gpuinfo.max_sm_clock_mhz()
    # sw_power_cap is often raised while the clock sits within 1% of max; it counts only when the
    # clock actually fell. Thermal and hardware slowdowns always count.
    slow_clock = bool(maxclk and c_after.sm_mhz and c_after.sm_mhz < 0.95 * maxclk)
    hard = [r for r in reasons if r != "sw_power_cap"]
    return Measurement(
        median_s=med, iqr_s=q3 - q1, min_s=min(times), max_s=max(times), samples=len(times),
        noise=noise, sm_clock_before_mhz=c_before.sm_mhz, sm_clock_after_mhz=c_after.sm_mhz,
        temp_before_c=c_before.temp_c, temp_after_c=c_after.temp_c, throttle_reasons=reasons,
        throttled=bool(hard) or slow_clock, times_s=times)
