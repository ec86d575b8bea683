"""A row's status, declared once (no torch import: the summaries of a results file read it too).

``ok`` passed the check (and was timed unless the run was check-only); ``unsupported`` /
``skipped`` never ran. Every other status is a row that ran and has no number, and each counts as
failed everywhere a run is summed up: the exit status (compare/harness/runner.py), the sweep
summary and its plots (compare/outputs/sweep.py), the matrix summary (compare/outputs/matrix.py),
the asv suite whose points the gate judges (compare/ci/suite_cache.py: anything but ok fails).
"""
from __future__ import annotations

import math
from typing import Any, Optional

OK, FAILED, UNSUPPORTED, ERROR, SKIPPED = "ok", "FAILED", "unsupported", "error", "skipped"
# Set by compare.harness.worker: a sticky CUDA error or a dead worker (FAULT), no row within
# --kernel-timeout (HUNG). Either way the worker was replaced and the run went on.
FAULT, HUNG = "FAULT", "HUNG"

# Ran, and has no number: a wrong result, an exception, a fault, a hang (in display order).
NO_NUMBER = (FAILED, ERROR, FAULT, HUNG)
NOT_RUN = (UNSUPPORTED, SKIPPED)
ALL = (OK, *NO_NUMBER, *NOT_RUN)


def field(row: Any, key: str):
    """``key`` of a row given as a dict (a results file) or a Result."""
    return row.get(key) if isinstance(row, dict) else getattr(row, key, None)


def usable(row: Any, key: str, *, ok_only: bool = False) -> Optional[float]:
    """The row's ``key`` (a percentage) when it is a positive finite number, else None; with
    ``ok_only``, None also for a row whose status is not ok."""
    if ok_only and field(row, "status") != OK:
        return None
    try:
        p = float(field(row, key))
    except (TypeError, ValueError):
        return None
    return p if math.isfinite(p) and p > 0 else None
