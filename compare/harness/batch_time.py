"""Batch time: ``n`` launches captured back to back in one CUDA graph, the graph replayed a few
times between events, time per launch = graph time / n. Like nvbench's batch time it leaves the
GPU's per-launch start cost and the L2 warm between launches, but unlike back-to-back launches
from Python (nvbench's batch from its Python bindings reads ~90 us for a 17 us Triton kernel: the
launcher's host path) the host is out of it: it enqueues one graph. A launch that can't be
captured (a host sync inside it) gets no batch time and the reason.

It runs on the measurement engine's GPU pieces (compare/harness/timing.py: ``TorchGPU``, the
hold) and counts its GPU work toward the next measurement's warm-up the same way.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Callable, Optional

from . import timing


@dataclass
class Batch:
    """Time per launch of ``n`` back-to-back launches replayed from one CUDA graph."""
    per_launch_s: Optional[float]     # None: no batch time (``method`` says why)
    method: str                       # "graph xN" or "n/a: <reason>"
    n: int = 0
    reps: int = 0
    times_s: list = field(default_factory=list, repr=False)


# A graph of about BATCH_TARGET_S of work: its own GPU-side start (a few us) is then <= 0.5% of
# it, and a row pays ~10 ms for its batch time (capture + BATCH_REPS + 1 replays).
BATCH_TARGET_S = 1e-3
BATCH_MAX_N = 200
BATCH_REPS = 5


def measure_batch(launch: Callable[[], None], per_launch_s: float, *, gpu=None,
                  target_s: float = BATCH_TARGET_S, max_n: int = BATCH_MAX_N,
                  reps: int = BATCH_REPS) -> Batch:
    """Batch time of ``launch`` (see the module doc). ``per_launch_s``: its cold median, which
    sizes the batch: n = target_s / per_launch_s launches, at least 1, at most ``max_n``."""
    if gpu is None:
        gpu = timing.TorchGPU(flush=False)
    if not (per_launch_s and per_launch_s > 0 and math.isfinite(per_launch_s)):
        return Batch(None, "n/a: no cold time to size the batch")
    n = max(1, min(max_n, math.ceil(target_s / per_launch_s)))
    start = gpu.now()
    try:
        replay = gpu.capture_many(launch, n)
    except Exception as exc:      # e.g. a host sync inside the launch: not capturable
        first = (str(exc).strip().splitlines() or [""])[0]
        return Batch(None, f"n/a: not capturable ({first[:160]})")
    t = gpu.now()
    replay()                      # first replay uploads the graph
    dispatch_s = gpu.now() - t
    gpu.synchronize()
    gpu.calibrate_hold()
    hold_s = min(timing.HOLD_MAX_S, timing.HOLD_FLOOR_S + timing.HOLD_FACTOR * dispatch_s)
    pending = []
    for _ in range(reps):
        gpu.hold(hold_s)
        s, e = gpu.new_event(), gpu.new_event()
        gpu.record(s)
        replay()
        gpu.record(e)
        pending.append((s, e))
    gpu.synchronize()
    times = [gpu.elapsed_s(s, e) / n for s, e in pending]
    timing.was_busy(gpu, start, sum(times) * n)
    return Batch(statistics.median(times), f"graph x{n}", n=n, reps=reps, times_s=times)
