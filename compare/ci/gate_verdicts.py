"""The gate's judgement of one asv point, base against head (compare/ci/gate.py says what each
verdict means): ``compare`` gives every point of the two result files a ``Row``; ``reconfirm``
judges the SLOW and AMBIGUOUS ones again over re-measurements; ``explain`` appends a failing
point's failure note.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from . import failure_notes, robust
from .asv_results import ResultFile, describe, higher_is_better, is_na, is_number

_MISSING = object()

FAILING_VERDICTS = ("SLOW", "AMBIGUOUS", "FAILING", "LOST", "INVALID", "MISSING", "ALL")


@dataclass
class Row:
    benchmark: str
    params: tuple
    base: object                 # value: float, NaN, None (failed); None also when absent
    head: object
    ratio: Optional[float]       # slowdown: > 1 is worse, whichever way the benchmark points
    verdict: str
    failed: bool
    compared: bool = False       # a number on both sides, same version
    noise: Optional[float] = None  # the wider side's interval half-width / value, where recorded


def _rel_halfwidth(p) -> Optional[float]:
    if p is None or p.ci is None or not is_number(p.value):
        return None
    a, b = p.ci
    if not (math.isfinite(a) and math.isfinite(b)):
        return math.inf
    return abs(b - a) / 2 / p.value


def _overlap(bp, hp) -> Optional[bool]:
    if bp.ci is None or hp.ci is None:
        return None
    return max(bp.ci[0], hp.ci[0]) <= min(bp.ci[1], hp.ci[1])


def _samples_match(p) -> bool:
    """Samples that are the recorded value's own (asv records their median as the value); a file
    edited by hand or by another tool may carry stale ones: then the summary statistics rule."""
    if not p.samples:
        return False
    s = robust.spread(p.samples)
    return s is not None and abs(s.median / p.value - 1) <= 5e-3


def _numbers_verdict(name: str, bp, hp, factor: float) -> tuple[float, str, bool, Optional[float]]:
    """(slowdown, verdict, failed, noise) for a point with a number on both sides."""
    b, h = bp.value, hp.value
    if _samples_match(bp) and _samples_match(hp):
        # a % of cuBLAS is higher-is-better: its inverse is time-like (cuBLAS time / kernel time)
        inv = (lambda xs: [1 / x for x in xs if x > 0]) if higher_is_better(name) else list
        v = robust.compare_samples(inv(bp.samples), inv(hp.samples), factor)
        if v is not None:
            return v.slowdown, v.text, v.word in ("SLOW", "AMBIGUOUS"), v.noise
    slowdown = b / h if higher_is_better(name) else h / b
    widths = [w for w in (_rel_halfwidth(bp), _rel_halfwidth(hp)) if w is not None]
    noise = max(widths) if len(widths) == 2 else None
    overlap = _overlap(bp, hp)
    if noise is not None and noise > factor - 1:
        return slowdown, f"AMBIGUOUS (noise {percent(noise)} > {percent(factor - 1)})", True, noise
    if slowdown > factor:
        if overlap:
            return slowdown, f"AMBIGUOUS (x{slowdown:.3f} but the 99% intervals overlap)", True, noise
        return slowdown, f"SLOW (> x{factor:g})", True, noise
    if slowdown < 1 / factor and not overlap:
        return slowdown, "FAST", False, noise
    return slowdown, "SAME", False, noise


def percent(x: float) -> str:
    return "inf" if not math.isfinite(x) else f"{100 * x:.1f}%"


def compare(base: ResultFile, head: ResultFile, factor: float) -> list[Row]:
    bp, hp = base.points(), head.points()
    bv, hv = base.versions(), head.versions()
    # A redefined benchmark (version changed) is not compared, but a head where it has no
    # number at all is a failure whatever the version says.
    head_has_number = {}
    for (name, _), p in hp.items():
        head_has_number[name] = head_has_number.get(name, False) or is_number(p.value)
    keys = list(bp) + [k for k in hp if k not in bp]
    rows = []
    for key in keys:
        name, params = key
        b = bp.get(key, _MISSING)
        h = hp.get(key, _MISSING)
        bval = None if b is _MISSING else b.value
        hval = None if h is _MISSING else h.value
        ratio, failed, compared, noise = None, False, False, None
        if b is _MISSING:
            verdict = "new"
        elif h is _MISSING:
            failed = is_number(bval)
            verdict = "MISSING on head" if failed else f"gone (was {describe(bval)})"
        elif name in bv and name in hv and bv[name] != hv[name]:
            if not head_has_number.get(name) and any(is_number(p.value) for (n, _), p in bp.items() if n == name):
                verdict, failed = f"ALL FAILING on head (version {bv[name]} -> {hv[name]})", True
            else:
                verdict = f"not comparable (version {bv[name]} -> {hv[name]})"
        elif is_number(bval) and is_number(hval):
            ratio, verdict, failed, noise = _numbers_verdict(name, b, h, factor)
            compared = True
        elif is_number(bval) and hval is None:
            verdict, failed = "FAILING on head", True
        elif is_number(bval) and is_na(hval):
            verdict, failed = "LOST: n/a on head", True
        elif is_number(bval):
            verdict, failed = f"INVALID on head: {hval!r}", True
        elif is_number(hval):
            verdict = f"fixed (base {describe(bval)})"
        else:
            verdict = f"no number (base {describe(bval)}, head {describe(hval)})"
        rows.append(Row(name, params, None if b is _MISSING else bval, None if h is _MISSING else hval,
                        ratio, verdict, failed, compared, noise))
    return rows


def explain(rows: list[Row], notes: dict) -> None:
    """Append the kernel and the reason to each FAILING row that has a failure note (in place)."""
    for r in rows:
        if r.failed and "FAILING" in r.verdict:
            note = notes.get((r.benchmark, tuple(r.params)))
            if note is not None:
                r.verdict += f": {failure_notes.describe(note)}"


def verdict_word(r: Row) -> str:
    """The verdict's label: SLOW, FAST, SAME, AMBIGUOUS, FAILING, LOST, INVALID, MISSING, ALL, ..."""
    return r.verdict.split(" ")[0].rstrip(":")


def _recheckable(r: Row) -> bool:
    """A failed timing verdict (SLOW or AMBIGUOUS): a re-measurement can settle it; a FAILING,
    LOST or MISSING point it can't."""
    return r.failed and verdict_word(r) in ("SLOW", "AMBIGUOUS")


def reconfirm(rows: list[Row], runs: list[tuple], factor: float) -> None:
    """Judge again, in place, every point the first judgement failed as SLOW or AMBIGUOUS, from
    one value per run: the recorded base and head and each confirm run's (``runs``: (base
    points, head points) per run, from --confirm-dir). robust.judge_runs says why."""
    for r in rows:
        if not _recheckable(r):
            continue
        key = (r.benchmark, r.params)
        b = [r.base] + [bp[key].value for bp, _ in runs if key in bp and is_number(bp[key].value)]
        h = [r.head] + [hp[key].value for _, hp in runs if key in hp and is_number(hp[key].value)]
        if len(b) < 2 or len(h) < 2:
            r.verdict += " (not re-measured)"
            continue
        if higher_is_better(r.benchmark):     # a % of cuBLAS: its inverse is time-like
            b, h = [1 / x for x in b], [1 / x for x in h]
        v = robust.judge_runs(b, h, factor)
        r.ratio, r.failed = v.slowdown, v.word == "SLOW"
        r.verdict = f"{v.word} re-measured: {v.why}"


def suspects(rows: list[Row]) -> list[str]:
    """The benchmarks of the points a re-measurement can settle (:func:`_recheckable`)."""
    return list(dict.fromkeys(r.benchmark for r in rows if _recheckable(r)))
