"""Regression gate over asv result files: did HEAD make anything slower than BASE? Works offline.

    python -m compare.ci.gate --base <sha> --head <sha> [--factor 1.02] [--results-dir .asv/results]
                           [--machine NAME] [--env NAME] [--failures-only] [--bench REGEX ...]
                           [--summary FILE]

Reads the result files of the two commits through compare.ci.asv_results (the one reader; it says
what a stored value means: a number, null = failed, NaN = n/a, anything else invalid) and
compares every benchmark x parameter point. Times are lower-is-better; a % of cuBLAS
(``track_pct_cublas``, ``track_geomean_pct_cublas``: cuBLAS measured in the same process, so a
slower machine or clock cancels out) and an achieved bandwidth (``track_gbps``) are
higher-is-better. ``slowdown`` is head/base for a time and base/head for a % or GB/s, so > 1 is
always worse.

Verdicts (nvbench's compare labels, plus the ways a head can lose a number). Where asv recorded
both sides' raw samples (``asv run --record-samples``, as compare.ci.history runs it), the two
distributions are compared as nvbench's robust comparison does (compare.ci.robust: SLOW/FAST
only past the factor AND with a clear gap between the sample ranges, AMBIGUOUS when they
overlap or the medians are too noisy for the factor). Otherwise, from asv's summary statistics:
  * SLOW:      slowdown > factor and, where asv recorded the 99% interval of the median on both
               sides (stats_ci_99_a/b), the intervals do not overlap;
  * AMBIGUOUS: slowdown > factor but the intervals overlap, or either side's interval is wider
               than the factor allows (half-width / value > factor - 1): noise too large to tell;
  * FAST:      slowdown < 1/factor (and the intervals do not overlap, where recorded);
  * SAME:      everything else with a number on both sides;
  * FAILING:   null on head while base had a number (the benchmark raised: a wrong result, an
               error, a kernel that faulted or hung); where benchmarks/gemm.py left a note
               (compare/ci/failure_notes.py) the row names the kernel, FAULT / HUNG / FAILED /
               error, and the reason;
  * LOST:      NaN (n/a) on head while base had a number;
  * INVALID:   +-inf, 0 or a negative value on head while base had a number;
  * MISSING:   absent on head while base had a number (benchmark or point deleted).
A benchmark whose ``version`` differs between the two is not compared (its measurement was
deliberately redefined), unless head has no number at all for it: that fails (ALL FAILING).

Exit status: 1 if any point is SLOW, AMBIGUOUS, FAILING, LOST, INVALID or MISSING, and also when
nothing was compared (no point has a number on both sides: a run on a box without a GPU records
only n/a, which proves nothing); 0 otherwise; 2 for usage errors (unknown commit, no results,
ambiguous machine or environment, an unreadable result file of one of the two commits; result
files of other commits that can't be read are skipped with a warning). Commits may be given as
sha prefixes or, inside a git checkout, as any revision git understands (HEAD~1, main).

This module is the command: its flags, which two result files (``pick``) and the printed verdict;
compare/ci/gate_verdicts.py judges a point, compare/ci/gate_report.py writes the table and the
markdown summary.
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import re
import subprocess
import sys
from typing import Optional

from . import asv_results, failure_notes, robust
from .gate_report import markdown_summary, table
from .gate_verdicts import compare, explain, reconfirm, suspects, verdict_word
from ..harness.errors import UsageError
from ..harness.files import prove_writable, write_text_atomically

OK_EXIT, FAIL_EXIT, USAGE_EXIT = 0, 1, 2
SKIP_FILES = asv_results.SKIP_FILES
points_of = asv_results.points_of


def _git_resolve(rev: str) -> Optional[str]:
    try:
        p = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                           capture_output=True, text=True)
    except OSError:
        return None
    return p.stdout.strip() if p.returncode == 0 and p.stdout.strip() else None


def resolve_commit(rev: str, known: set[str]) -> Optional[str]:
    """Full hash among ``known`` for a prefix (or a git revision); None if no results for it."""
    r = rev.strip().lower()
    hits = {h for h in known if h.lower().startswith(r)} if r else set()
    if len(hits) > 1:
        raise UsageError(f"commit prefix {rev!r} is ambiguous: {', '.join(sorted(h[:12] for h in hits))}")
    if hits:
        return hits.pop()
    full = _git_resolve(rev)
    if full and full in known:
        return full
    return None


def pick(results_dir: str, base: str, head: str, machine: Optional[str], env: Optional[str],
         warn=lambda msg: print(msg, file=sys.stderr)):
    """(machine, base ResultFile, head ResultFile)."""
    all_machines = asv_results.machines(results_dir)
    if not all_machines:
        raise UsageError(f"no asv results in {results_dir} (no <machine>/machine.json)")
    if machine is not None and machine not in all_machines:
        raise UsageError(f"no results for machine {machine!r} in {results_dir}; there are: {', '.join(all_machines)}")
    # The two commits' own files must be readable (their names carry the sha prefix); any
    # other file that can't be read is skipped with a warning instead of blocking the gate.
    wanted = tuple(x for x in (base, head, _git_resolve(base), _git_resolve(head)) if x)
    found = {}
    for m in ([machine] if machine else all_machines):
        files, warnings = asv_results.scan(os.path.join(results_dir, m), wanted)
        for w in warnings:
            warn(w)
        known = {f.commit for f in files}
        b, h = resolve_commit(base, known), resolve_commit(head, known)
        found[m] = (files, b, h)
    usable = [m for m, (_, b, h) in found.items() if b and h]
    base_on = [m for m, (_, b, _h) in found.items() if b]
    head_on = [m for m, (_, _b, h) in found.items() if h]
    if not usable and base_on and head_on:
        # Times from two GPUs (or two hosts) differ by more than any regression: never a verdict.
        raise UsageError(f"base {base} was measured on {', '.join(base_on)} and head {head} on {', '.join(head_on)}: "
                         f"the gate compares two commits on one machine only; measure both there "
                         f"(python -m compare.ci.history --commits {base} {head})")
    if not usable:
        lines = []
        for m, (_, b, h) in found.items():
            miss = [name for name, v in (("base " + base, b), ("head " + head, h)) if not v]
            lines.append(f"machine {m}: no results for {' and '.join(miss)}")
        raise UsageError("no results to compare: " + "; ".join(lines))
    if len(usable) > 1:
        host = platform.node()
        if host not in usable:
            raise UsageError(f"results for both commits on several machines ({', '.join(usable)}): pass --machine")
        usable = [host]
    m = usable[0]
    files, b, h = found[m]
    bf = [f for f in files if f.commit == b]
    hf = [f for f in files if f.commit == h]
    if env is not None:
        bf = [f for f in bf if env in f.env]
        hf = [f for f in hf if env in f.env]
        if not bf or not hf:
            raise UsageError(f"no results with environment matching {env!r} for both commits on {m}")
    if len(bf) == 1 and len(hf) == 1:
        return m, bf[0], hf[0]
    common = sorted({f.env for f in bf} & {f.env for f in hf})
    if len(common) == 1:
        return m, next(f for f in bf if f.env == common[0]), next(f for f in hf if f.env == common[0])
    envs = sorted({f.env for f in bf} | {f.env for f in hf})
    raise UsageError(f"several asv environments for these commits on {m} ({', '.join(envs)}): pass --env")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m compare.ci.gate",
                                 description="Fail (exit 1) when HEAD's asv results are slower than BASE's, "
                                             "newly failing, missing, or when nothing could be compared.")
    ap.add_argument("--base", required=True, help="base commit (sha or prefix; or a git revision)")
    ap.add_argument("--head", required=True, help="head commit (sha or prefix; or a git revision)")
    ap.add_argument("--factor", type=float, default=robust.DEFAULT_FACTOR,
                    help="slowdown that fails: head/base time, base/head %% of cuBLAS (default "
                         f"{robust.DEFAULT_FACTOR:g}: above what A/A re-runs of one commit differ by, docs/asv.md)")
    ap.add_argument("--results-dir", default=".asv/results", help="asv results dir (default .asv/results)")
    ap.add_argument("--machine", default=None, help="asv machine name (default: the one with results for both)")
    ap.add_argument("--env", default=None, help="substring of the asv environment name, when there are several")
    ap.add_argument("--failures-only", action="store_true", help="print only the rows that fail")
    ap.add_argument("--bench", action="append", default=[], metavar="REGEX",
                    help="compare only benchmarks whose name matches (re.search; repeatable), e.g. "
                         "'pct_cublas' to gate on %% of cuBLAS alone, which a slower machine or clock cancels out")
    # the verdict table as markdown for the job summary, so a reader needs no log
    ap.add_argument("--summary", metavar="FILE", default=None,
                    help="also write the verdicts as GitHub-flavoured markdown to FILE (e.g. for $GITHUB_STEP_SUMMARY)")
    ap.add_argument("--confirm-dir", action="append", default=[], metavar="DIR",
                    help="an asv results dir holding a re-measurement of base and head (repeatable: one per "
                         "confirm round, .ci/gpu): SLOW/AMBIGUOUS points are judged again over every run")
    ap.add_argument("--suspects", metavar="FILE", default=None,
                    help="also write, one per line, an asv --bench regex for every benchmark with a SLOW or "
                         "AMBIGUOUS point, which .ci/gpu's confirm round re-measures (asv matches a parameterized "
                         "benchmark as NAME(PARAM, ...)); empty when none")
    return ap


def main(argv: Optional[list[str]] = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return USAGE_EXIT if exc.code else OK_EXIT
    try:
        patterns = _checked_flags(args)
        machine, bf, hf = pick(args.results_dir, args.base, args.head, args.machine, args.env)
        if bf.commit == hf.commit:
            # One result file against itself proves nothing (every slowdown 1.0, no spread to judge),
            # and a CI that hands the gate one commit twice is misconfigured: refused, not passed.
            raise UsageError(f"--base {args.base} and --head {args.head} are the same commit {bf.commit[:12]}: "
                             f"the gate compares two commits")
        rows = _judged(args, machine, bf, hf)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USAGE_EXIT
    if patterns:
        rows = [r for r in rows if any(p.search(r.benchmark) for p in patterns)]
    if args.summary:
        write_text_atomically(args.summary, markdown_summary(rows, bf, hf, machine, args.factor))
    if args.suspects:
        write_text_atomically(args.suspects, "".join(f"^{re.escape(b)}(\\(|$)\n" for b in suspects(rows)))
    return _print_verdict(rows, args, machine, bf, hf)


def _checked_flags(args) -> list:
    """--bench's patterns, once --factor and the files to write are known good (a UsageError
    before any results file is read)."""
    try:
        patterns = [re.compile(b) for b in args.bench]
    except re.error as exc:
        raise UsageError(f"--bench: bad regular expression: {exc}") from None
    if not (args.factor > 1.0 and math.isfinite(args.factor)):
        raise UsageError("--factor must be a number > 1 (e.g. 1.02)")
    for flag, path in (("--summary", args.summary), ("--suspects", args.suspects)):
        if not path:
            continue
        if os.path.isdir(path):
            raise UsageError(f"{flag} {path} is a directory")
        try:   # before reading anything: a file that can't be written is a usage error, not a late traceback
            prove_writable(path)
        except OSError as exc:
            raise UsageError(f"{flag} {path} can't be written: {exc.strerror or exc}") from None
    return patterns


def _judged(args, machine: str, bf, hf) -> list:
    """Every point of base against head, judged again over the --confirm-dir re-measurements,
    with the failure notes of head's run."""
    rows = compare(bf, hf, args.factor)
    if args.confirm_dir:
        try:
            runs = [tuple(f.points() for f in pick(d, bf.commit, hf.commit, machine, args.env)[1:])
                    for d in args.confirm_dir]
        except UsageError as exc:
            raise UsageError(f"--confirm-dir: {exc}") from None
        reconfirm(rows, runs, args.factor)
    explain(rows, failure_notes.read(args.results_dir, hf.commit))
    return rows


def _print_verdict(rows: list, args, machine: str, bf, hf) -> int:
    """The table (or its failures) and the one-line verdict; the exit status."""
    shown = [r for r in rows if r.failed] if args.failures_only else rows
    print(f"machine {machine}, env {hf.env}\nbase {bf.commit[:12]}  head {hf.commit[:12]}  "
          f"fail if slowdown > {args.factor:g}\n")
    if shown:
        print(table(shown, bf.points(), hf.points()))
    bad = [r for r in rows if r.failed]
    n_compared = sum(r.compared for r in rows)
    counts = {}
    for r in bad:
        k = verdict_word(r)
        counts[k] = counts.get(k, 0) + 1
    print()
    if bad:
        print(f"GATE FAILED: {len(bad)} of {len(rows)} points: "
              + ", ".join(f"{n} {k.lower()}" for k, n in counts.items()))
        return FAIL_EXIT
    if n_compared == 0:
        print(f"GATE FAILED: nothing was compared: none of {len(rows)} points has a number on both "
              f"commits (n/a everywhere means no GPU was used, or every benchmark was redefined)")
        return FAIL_EXIT
    print(f"gate passed: {n_compared} of {len(rows)} points compared, none slower than x{args.factor:g}, "
          f"newly failing or missing")
    return OK_EXIT


if __name__ == "__main__":
    sys.exit(main())
