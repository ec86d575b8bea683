"""What a running comparison says on stderr while it runs, so a long run is never silent.

* a terminal, without -q: a rich progress bar (kernel, shape, count, elapsed), gone at the end;
* no terminal (piped, CI logs), without -q: one plain line per kernel and shape, ``[3/20] name
  shape precision``, since a bar's redraws would fill a log with control characters;
* -q: one short line per shape, ``running 40x36x2000 fp32 (8 kernels)``: an interpreted sweep
  takes minutes, and a quiet run still says what it is doing.
"""
from __future__ import annotations

import sys
from typing import Optional


class Progress:
    def __init__(self, total: int, quiet: bool, file=None, per_shape: Optional[dict] = None):
        """``per_shape``: {(shape, precision): number of kernels} for the -q lines."""
        self.file = file or sys.stderr
        self.total, self.quiet, self.done = total, quiet, 0
        self.per_shape = per_shape or {}
        self.last_shape = None
        self.bar = None
        if not quiet and hasattr(self.file, "isatty") and self.file.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn
            self.bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                           console=Console(file=self.file), transient=True)
            self.bar.start()
            self.bar.add_task("starting", total=total)

    def update(self, kernel, problem) -> None:
        """Called as each (kernel, problem) starts."""
        what = f"{kernel.name} {problem.shape} {problem.precision}"
        if self.bar is not None:
            task = self.bar.task_ids[0]
            if self.done:
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

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


def per_shape_counts(pairs) -> dict:
    counts: dict = {}
    for _, p in pairs:
        counts[(p.shape, p.precision)] = counts.get((p.shape, p.precision), 0) + 1
    return counts
