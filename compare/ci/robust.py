"""Comparing two sample distributions of one benchmark point: SLOW / FAST / SAME / AMBIGUOUS.

The idea is nvbench's robust comparison (``nvbench-compare-robust`` in the cuda-bench package),
re-derived here for our samples (GPU times, lower is better): each side is summarised by its
median and an interval from its fastest sample to its third quartile. GPU timings are skewed
to the slow side (a preempted or clock-dipped sample is slow, never fast), so the minimum and
Q3 bound where a side's "typical" sample lies without the slow tail.

  * SLOW: the medians differ by more than the gate's factor AND head's interval lies entirely
    above base's with a clear gap (``CLEAR_GAP`` of base's Q3: nvbench's default 0.5%);
  * FAST: the mirror image;
  * AMBIGUOUS: the medians differ by more than the factor but the intervals overlap (the shift
    could be noise: re-run), or the median's own uncertainty (99% interval, from the IQR) is
    wider than the factor allows (too noisy to see a change of that size at all);
  * SAME: the medians are within the factor and the medians are known well enough.

The factor is the part the samples of one process can't give: two processes minutes apart
differ by more than either one's spread (clock, thermal state, L2/TLB placement). The default
(``DEFAULT_FACTOR``) is sized from A/A re-runs of one commit (docs/asv.md, "Gate sensitivity";
``python -m compare.ci.gate_sensitivity`` measures it): a gap the A/A runs never reach, and a
planted 3% slowdown exceeds.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Optional, Sequence

# nvbench's default clear gap: head's fastest sample must be this far above base's Q3.
CLEAR_GAP = 0.005
# Slowdown that counts (head/base): 2%. A/A re-runs of one commit on an H100 must stay inside
# it (see the module doc); a planted 3% slowdown is above it.
DEFAULT_FACTOR = 1.02
# Fewer samples than this: no distribution to compare (the gate falls back to asv's intervals).
MIN_SAMPLES = 4
Z99 = 2.576


@dataclass(frozen=True)
class Spread:
    median: float
    lower: float          # fastest sample
    upper: float          # third quartile
    rel_iqr: float        # IQR / median
    rel_se: float         # relative standard error of the median (IQR based, as the engine's noise)
    n: int


def spread(samples: Sequence[float]) -> Optional[Spread]:
    xs = sorted(float(x) for x in samples if isinstance(x, (int, float)) and math.isfinite(x) and x > 0)
    if len(xs) < MIN_SAMPLES:
        return None
    med = statistics.median(xs)
    q1, _, q3 = statistics.quantiles(xs, n=4)
    rel_iqr = (q3 - q1) / med
    # sigma ~ IQR/1.349; SE of the median ~ 1.2533 sigma / sqrt(n) (compare.harness.timing.noise_of)
    rel_se = 1.2533 * (rel_iqr / 1.349) / math.sqrt(len(xs))
    return Spread(med, xs[0], q3, rel_iqr, rel_se, len(xs))


@dataclass(frozen=True)
class Verdict:
    slowdown: float       # head / base median: > 1 is slower
    word: str             # SLOW, FAST, SAME, AMBIGUOUS
    why: str              # one line
    noise: float          # the wider side's 99% half-width of the median, relative (judge_runs: the run-to-run spread)

    @property
    def text(self) -> str:
        return f"{self.word} ({self.why})" if self.why else self.word


def compare_samples(base: Sequence[float], head: Sequence[float], factor: float = DEFAULT_FACTOR) -> Optional[Verdict]:
    """The verdict for lower-is-better samples (times); None when a side has too few samples."""
    if not (factor > 1 and math.isfinite(factor)):
        raise ValueError(f"factor must be a number > 1, not {factor!r}")
    b, h = spread(base), spread(head)
    if b is None or h is None:
        return None
    slowdown = h.median / b.median
    noise = Z99 * max(b.rel_se, h.rel_se)
    gap_slow = (h.lower - b.upper) / b.upper
    gap_fast = (b.lower - h.upper) / h.upper
    if slowdown > factor:
        if gap_slow >= CLEAR_GAP:
            return Verdict(slowdown, "SLOW", f"> x{factor:g}, head's fastest sample {100 * gap_slow:.1f}% above base's Q3", noise)
        return Verdict(slowdown, "AMBIGUOUS", f"x{slowdown:.3f} but the sample ranges overlap", noise)
    if slowdown < 1 / factor:
        if gap_fast >= CLEAR_GAP:
            return Verdict(slowdown, "FAST", f"base's fastest sample {100 * gap_fast:.1f}% above head's Q3", noise)
        return Verdict(slowdown, "SAME", "faster, but the sample ranges overlap", noise)
    if noise > factor - 1:
        return Verdict(slowdown, "AMBIGUOUS", f"noise {100 * noise:.1f}% > {100 * (factor - 1):.1f}%", noise)
    return Verdict(slowdown, "SAME", "", noise)


def judge_runs(base: Sequence[float], head: Sequence[float], factor: float = DEFAULT_FACTOR) -> Verdict:
    """The verdict after a confirm round (.ci/gpu): one value per run (process) of each commit,
    lower is better. Two runs of ONE commit on an H100 differ by 2-10% at points of 15-100 us
    (results/h100/gate-aa/), more than the factor, and that spread is invisible inside one
    run's samples. So a shift counts only when every pairing of a base run with a head run shows
    it: SLOW when each head run is slower than each base run by more than the factor (FAST the
    mirror); otherwise SAME, naming the run-to-run spread of one commit: the smallest change
    this point can show."""
    if not base or not head:
        raise ValueError("judge_runs needs at least one run of each commit")
    pairs = [h / b for b in base for h in head]
    slowdown = statistics.median(head) / statistics.median(base)
    spreads = [max(xs) / min(xs) - 1 for xs in (base, head) if len(xs) > 1]
    spread = max(spreads) if spreads else None
    runs = f"{len(base)} base x {len(head)} head runs"
    if min(pairs) > factor:
        return Verdict(slowdown, "SLOW", f"every pairing of {runs} slower than x{factor:g}", spread)
    if max(pairs) < 1 / factor:
        return Verdict(slowdown, "FAST", f"every pairing of {runs} faster than x{1 / factor:.3f}", spread)
    said = f"runs of one commit differ by up to {100 * spread:.1f}%" if spread is not None else "one run each"
    return Verdict(slowdown, "SAME", f"x{slowdown:.3f} over {runs}, not in every pairing; {said}", spread)

