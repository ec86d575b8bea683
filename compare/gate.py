"""Regression gate over asv result files: did HEAD make anything slower than BASE? Works offline.

    python -m compare.gate --base <sha> --head <sha> [--factor 1.10] [--results-dir .asv/results]
                           [--machine NAME] [--env NAME]

Reads the result files asv 0.6 writes (``<results_dir>/<machine>/<sha8>-<env>.json``: JSON with
"commit_hash", "env_name", "result_columns" and "results"; each benchmark's row holds its
values, one per point of its parameter grid, and the grid itself), and compares every
benchmark x parameter point of BASE with HEAD. asv stores a point that failed (raised, timed
out) as null and one that was skipped (n/a: NotImplementedError in setup) as NaN. The values
are times (lower is better).

A point fails the gate when, on HEAD, it is
  * SLOWER:  head / base > factor;
  * FAILING: null while base had a number (the benchmark raised: e.g. a wrong result);
  * LOST:    NaN (n/a) while base had a number;
  * MISSING: absent while base had a number (benchmark or point deleted).
Everything else passes: faster, within the factor, n/a or failing on both sides, new points.
A benchmark whose ``version`` differs between the two is shown as not comparable (its
measurement was deliberately redefined) and does not fail.

Exit status: 1 if any point fails, 0 if none, 2 for usage errors (unknown commit, no results,
ambiguous machine or environment). Commits may be given as sha prefixes or, inside a git
checkout, as any revision git understands (HEAD~1, main).
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from typing import Optional

OK_EXIT, FAIL_EXIT, USAGE_EXIT = 0, 1, 2
SKIP_FILES = ("machine.json", "benchmarks.json")
_MISSING = object()


class UsageError(Exception):
    pass


# ---------------------------------------------------------------------------- reading asv files

@dataclass
class ResultFile:
    path: str
    commit: str
    env: str
    data: dict

    def points(self) -> dict:
        """{(benchmark, params tuple): value} with value a float, NaN (n/a) or None (failed)."""
        return points_of(self.data)

    def versions(self) -> dict:
        cols = self.data["result_columns"]
        i = cols.index("version") if "version" in cols else None
        return {name: (row[i] if i is not None and i < len(row) else None)
                for name, row in self.data["results"].items()}


def _param_text(v) -> str:
    """asv stores parameter values as repr() strings: "'cublas'" -> cublas."""
    if isinstance(v, str) and len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    return str(v)


def points_of(data: dict) -> dict:
    cols = data["result_columns"]
    i_res, i_par = cols.index("result"), cols.index("params")
    out = {}
    for name, row in data["results"].items():
        result = row[i_res] if i_res < len(row) else None
        params = row[i_par] if i_par < len(row) else None
        combos = list(itertools.product(*params)) if params else [()]
        if not isinstance(result, list):
            result = [result] * len(combos)      # a whole-benchmark failure is one null
        for j, combo in enumerate(combos):
            v = result[j] if j < len(result) else None
            out[(name, tuple(_param_text(p) for p in combo))] = None if v is None else float(v)
    return out


def load_result_file(path: str) -> ResultFile:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise UsageError(f"can't read {path}: {exc}") from None
    if not isinstance(data, dict) or not all(k in data for k in ("commit_hash", "result_columns", "results")):
        raise UsageError(f"{path} is not an asv 0.6 result file (no commit_hash/result_columns/results)")
    return ResultFile(path, data["commit_hash"], data.get("env_name", ""), data)


def machines(results_dir: str) -> list[str]:
    if not os.path.isdir(results_dir):
        raise UsageError(f"results dir {results_dir} does not exist (run asv first)")
    return sorted(d for d in os.listdir(results_dir)
                  if os.path.isfile(os.path.join(results_dir, d, "machine.json")))


def result_files(results_dir: str, machine: str) -> list[ResultFile]:
    d = os.path.join(results_dir, machine)
    return [load_result_file(os.path.join(d, fn)) for fn in sorted(os.listdir(d))
            if fn.endswith(".json") and fn not in SKIP_FILES]


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


def pick(results_dir: str, base: str, head: str, machine: Optional[str], env: Optional[str]):
    """(machine, base ResultFile, head ResultFile)."""
    all_machines = machines(results_dir)
    if not all_machines:
        raise UsageError(f"no asv results in {results_dir} (no <machine>/machine.json)")
    if machine is not None and machine not in all_machines:
        raise UsageError(f"no results for machine {machine!r} in {results_dir}; there are: {', '.join(all_machines)}")
    found = {}
    for m in ([machine] if machine else all_machines):
        files = result_files(results_dir, m)
        known = {f.commit for f in files}
        b, h = resolve_commit(base, known), resolve_commit(head, known)
        found[m] = (files, b, h)
    usable = [m for m, (_, b, h) in found.items() if b and h]
    if not usable:
        lines = []
        for m, (_, b, h) in found.items():
            miss = [name for name, v in (("base " + base, b), ("head " + head, h)) if not v]
            lines.append(f"  machine {m}: no results for {' and '.join(miss)}")
        raise UsageError("no results to compare:\n" + "\n".join(lines))
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


# ---------------------------------------------------------------------------- comparing

@dataclass
class Row:
    benchmark: str
    params: tuple
    base: object
    head: object
    ratio: Optional[float]
    verdict: str
    failed: bool


def _is_num(v) -> bool:
    return isinstance(v, float) and math.isfinite(v)


def _is_nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def compare(base: ResultFile, head: ResultFile, factor: float) -> list[Row]:
    bp, hp = base.points(), head.points()
    bv, hv = base.versions(), head.versions()
    keys = list(bp) + [k for k in hp if k not in bp]
    rows = []
    for key in keys:
        name, params = key
        b, h = bp.get(key, _MISSING), hp.get(key, _MISSING)
        ratio, failed = None, False
        if b is _MISSING:
            verdict = "new"
        elif h is _MISSING:
            failed = _is_num(b)
            verdict = "MISSING on head" if failed else "gone (was n/a)" if _is_nan(b) else "gone (was failing)"
        elif name in bv and name in hv and bv[name] != hv[name]:
            verdict = f"not comparable (version {bv[name]} -> {hv[name]})"
        elif _is_num(b) and _is_num(h):
            ratio = h / b if b > 0 else math.inf
            if ratio > factor:
                verdict, failed = f"SLOWER (> x{factor:g})", True
            elif ratio < 1 / factor:
                verdict = "faster"
            else:
                verdict = "ok"
        elif _is_num(b) and h is None:
            verdict, failed = "FAILING on head", True
        elif _is_num(b) and _is_nan(h):
            verdict, failed = "LOST: n/a on head", True
        elif b is None and h is None:
            verdict = "failing (also on base)"
        elif _is_nan(b) and _is_nan(h):
            verdict = "n/a"
        elif _is_num(h):
            verdict = "fixed" if b is None else "new value"
        elif h is None:
            verdict = "failing (base n/a)"
        else:
            verdict = "n/a (base failing)"
        rows.append(Row(name, params, None if b is _MISSING else b, None if h is _MISSING else h,
                        ratio, verdict, failed))
    return rows


def fmt_time(v, missing: bool = False) -> str:
    if missing:
        return "-"
    if v is None:
        return "failed"
    if _is_nan(v):
        return "n/a"
    if not _is_num(v):
        return str(v)
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(v) >= scale or unit == "ns":
            return f"{v / scale:.4g} {unit}"
    return str(v)


def table(rows: list[Row], base_points: dict, head_points: dict) -> str:
    header = ("benchmark", "params", "base", "head", "ratio", "verdict")
    lines = [header]
    for r in rows:
        key = (r.benchmark, r.params)
        lines.append((r.benchmark, ", ".join(r.params) or "-",
                      fmt_time(r.base, key not in base_points), fmt_time(r.head, key not in head_points),
                      f"{r.ratio:.3f}" if r.ratio is not None and math.isfinite(r.ratio) else "-",
                      r.verdict))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for n, line in enumerate(lines):
        out.append("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compare.gate",
                                 description="Fail (exit 1) when HEAD's asv results are slower than BASE's, "
                                             "newly failing, or missing.")
    ap.add_argument("--base", required=True, help="base commit (sha or prefix; or a git revision)")
    ap.add_argument("--head", required=True, help="head commit (sha or prefix; or a git revision)")
    ap.add_argument("--factor", type=float, default=1.10, help="head/base time ratio that fails (default 1.10)")
    ap.add_argument("--results-dir", default=".asv/results", help="asv results dir (default .asv/results)")
    ap.add_argument("--machine", default=None, help="asv machine name (default: the one with results for both)")
    ap.add_argument("--env", default=None, help="substring of the asv environment name, when there are several")
    ap.add_argument("--failures-only", action="store_true", help="print only the rows that fail")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return USAGE_EXIT if exc.code else OK_EXIT
    if not (args.factor > 1.0 and math.isfinite(args.factor)):
        print("error: --factor must be a number > 1 (e.g. 1.10)", file=sys.stderr)
        return USAGE_EXIT
    try:
        machine, bf, hf = pick(args.results_dir, args.base, args.head, args.machine, args.env)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USAGE_EXIT
    rows = compare(bf, hf, args.factor)
    shown = [r for r in rows if r.failed] if args.failures_only else rows
    print(f"machine {machine}, env {hf.env}\nbase {bf.commit[:12]}  head {hf.commit[:12]}  "
          f"fail if head/base > {args.factor:g}\n")
    if shown:
        print(table(shown, bf.points(), hf.points()))
    bad = [r for r in rows if r.failed]
    counts = {}
    for r in bad:
        k = r.verdict.split(" ")[0].rstrip(":")
        counts[k] = counts.get(k, 0) + 1
    print()
    if bad:
        print(f"GATE FAILED: {len(bad)} of {len(rows)} points: "
              + ", ".join(f"{n} {k.lower()}" for k, n in counts.items()))
        return FAIL_EXIT
    print(f"gate passed: {len(rows)} points, none slower than x{args.factor:g}, newly failing or missing")
    return OK_EXIT


if __name__ == "__main__":
    sys.exit(main())
