"""What a running comparison says on stderr while it runs, so a long run is never silent: one
reporter for every run path. It counts the run's units of work: a kernel x shape as it starts in
one process (:meth:`Progress.starting`), a shape as it comes back from a Dask worker
(:meth:`Progress.finished`).

* a terminal, without -q: a rich progress bar (kernel, shape, count, elapsed), gone at the end;
* no terminal (piped, CI logs), without -q: one plain line per unit, ``[3/20] name shape
  precision`` as a pair starts, ``[3/20] shape on gpu1; shapes per worker gpu0:2 gpu1:1; ETA 1m05s``
  as a sweep's shape finishes (a bar's redraws would fill a log with control characters);
* -q: one short line per shape of a run in one process, ``running 40x36x2000 fp32 (8 kernels)``
  (an interpreted sweep takes minutes, and a quiet run still says what it is doing); nothing per
  shape of a sweep.
"""
from __future__ import annotations

import sys
import time
from typing import Optional


def eta(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


class Progress:
    def __init__(self, total: int, quiet: bool, file=None, per_shape: Optional[dict] = None, done: int = 0,
                 bar: bool = True):
        """``per_shape``: {(shape, precision): number of kernels} for the -q lines; ``done``: units
        finished before this run (a resumed checkpoint's); ``bar`` False: lines even on a terminal
        (a sweep's worker processes write to the terminal directly and would tear a live bar)."""
        self.file = file or sys.stderr
        self.total, self.quiet, self.done = total, quiet, done
        self.per_shape = per_shape or {}
        self.last_shape = None
        self.measured = 0
        self.per_worker: dict = {}
        self.t0 = time.perf_counter()
        self.bar = None
        if bar and not quiet and hasattr(self.file, "isatty") and self.file.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn
            self.bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                           console=Console(file=self.file), transient=True)
            self.bar.start()
            self.bar.add_task("starting", total=total, completed=done)

    def starting(self, kernel, problem) -> None:
        """A run in one process: a (kernel, problem) pair starts."""
        what = f"{kernel.name} {problem.shape} {problem.precision}"
        if self.bar is not None:
            task = self.bar.task_ids[0]
            if self.measured:
                self.bar.advance(task)
            self.bar.update(task, description=what)
        elif self.quiet:
            key = (problem.shape, problem.precision)
            if key != self.last_shape:
                n = self.per_shape.get(key)
                count = f" ({n} kernel{'s' if n != 1 else ''})" if n else ""
                print(f"running {problem.shape} {problem.precision}{count}", file=self.file, flush=True)
                self.last_shape = key
        else:
            print(f"[{self.done + 1}/{self.total}] {what}", file=self.file, flush=True)
        self.done += 1
        self.measured += 1

    def finished(self, shape: str, worker: Optional[str], note: str = "") -> None:
        """A sweep: a shape came back from ``worker`` (its name: gpu0, gpu1, ... on a local GPU
        cluster); the line counts every worker's shapes and the time left at this rate."""
        self.done += 1
        self.measured += 1
        w = worker or "?"
        self.per_worker[w] = self.per_worker.get(w, 0) + 1
        rate = (time.perf_counter() - self.t0) / self.measured
        counts = " ".join(f"{name}:{n}" for name, n in sorted(self.per_worker.items()))
        line = (f"[{self.done}/{self.total}] {shape} on {w}{note}; shapes per worker {counts}; "
                f"ETA {eta(rate * (self.total - self.done))}")
        if self.bar is not None:
            self.bar.update(self.bar.task_ids[0], completed=self.done, description=f"{shape} on {w}")
        elif not self.quiet:
            print(line, file=self.file, flush=True)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def per_shape_counts(pairs) -> dict:
    counts: dict = {}
    for _, p in pairs:
        counts[(p.shape, p.precision)] = counts.get((p.shape, p.precision), 0) + 1
    return counts
