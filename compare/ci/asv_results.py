"""The one reader (and writer) of asv 0.6 result files, shared by compare.ci.gate and compare.ci.history.

A result file is ``<results_dir>/<machine>/<sha8>-<env>.json``: JSON with "commit_hash",
"env_name", "result_columns" and "results". Each benchmark's row holds, by column, its values
(one per point of its parameter grid, or one null when every point failed), the grid
("params": a list of lists of repr() strings), the benchmark "version" and, for benchmarks asv
computed statistics for, per-point "stats_ci_99_a"/"stats_ci_99_b" (99% interval of the median)
and "stats_q_25"/"stats_q_75". asv drops trailing empty columns, so a row may be shorter than
"result_columns".

What a stored value means:
  * a float > 0 and finite: a number (a time in seconds, or a % of cuBLAS);
  * null: the point failed (it raised: e.g. a wrong result, a timeout);
  * NaN: n/a (NotImplementedError in setup: no GPU, a shape the kernel can't take);
  * anything else a float can be (+-inf, 0, negative): not a valid measurement.
Only the first is a measurement; ``is_number`` says so, and every caller uses it.

Which way is better: times (``track_time``) are lower-is-better; a benchmark whose method name
starts with ``track_pct`` or ``track_geomean_pct`` (a % of cuBLAS) or ``track_gbps`` (an achieved
bandwidth) is higher-is-better.

    python -m compare.ci.asv_results count --commit SHA [--results-dir .asv/results] [--machine NAME]

prints how many points of that commit's results are numbers, n/a, failed, and exits 1 when none
is a number (.ci/gpu uses it: a benchmark run that measured nothing is a failed run).
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import sys

from dataclasses import dataclass
from typing import Optional

from ..harness.errors import UsageError
from ..harness.files import write_text_atomically

SKIP_FILES = ("machine.json", "benchmarks.json")
HIGHER_IS_BETTER_PREFIXES = ("track_pct", "track_geomean_pct", "track_gbps")
STATS_COLUMNS = ("stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75", "stats_number", "stats_repeat")


def is_number(v) -> bool:
    """A valid measurement: finite and > 0 (null, NaN, +-inf, 0 and negatives are not)."""
    return isinstance(v, float) and math.isfinite(v) and v > 0


def is_na(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


def describe(v) -> str:
    """What a stored value is, in words, for messages."""
    if v is None:
        return "failed"
    if is_na(v):
        return "n/a"
    if is_number(v):
        return f"{v:.6g}"
    return f"invalid ({v!r})"


def higher_is_better(benchmark: str) -> bool:
    return benchmark.rsplit(".", 1)[-1].startswith(HIGHER_IS_BETTER_PREFIXES)


def pretty_name(benchmark: str) -> str:
    """The name asv's pages show for a benchmark of benchmarks/gemm.py (its ``pretty_name``):
    gemm.TiledTensorCorePctCublas.track_pct_cublas -> "Tiled · tf32, tf32x3 · % of cuBLAS, geometric
    mean over the group's shapes". No parentheses: asv's list page splits a name at its last "("."""
    cls = benchmark.split(".")[-2] if benchmark.count(".") >= 1 else benchmark
    if cls.startswith("Sweep"):
        family = {"Cuda": "CUDA"}.get(cls[len("Sweep"):], cls[len("Sweep"):])
        return f"Sweep · {family} · % of cuBLAS, geometric mean over the sweep shapes"
    if cls.startswith("Skinny"):
        what = "% of cuBLAS per shape" if cls.endswith("PctCublas") else "achieved DRAM GB/s per shape"
        return f"Skinny and small · {'tf32, tf32x3' if 'TensorCore' in cls else 'fp32'} · {what}"
    pct = cls.endswith("PctCublas")
    base = cls[: -len("PctCublas")] if pct else cls
    tensor = base.endswith("TensorCore")
    base = base[: -len("TensorCore")] if tensor else base
    group = "Split-K" if base == "SplitK" else base
    what = "% of cuBLAS, geometric mean over the group's shapes" if pct else "kernel time per shape"
    return f"{group} · {'tf32, tf32x3' if tensor else 'fp32'} · {what}"


@dataclass(frozen=True)
class Point:
    """One benchmark x parameter point: its value and, where asv recorded them, its spread."""
    value: Optional[float]                       # float (maybe NaN/inf/<=0) or None (failed)
    ci: Optional[tuple[float, float]] = None     # 99% interval of the median (stats_ci_99_a/b)
    quartiles: Optional[tuple[float, float]] = None  # stats_q_25, stats_q_75
    # The raw samples, where asv recorded them (asv run --record-samples): the gate then compares
    # the two distributions (compare.ci.robust).
    samples: Optional[tuple] = None


def _samples_of(v) -> Optional[tuple]:
    if isinstance(v, list) and v and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        return tuple(float(x) for x in v)
    return None


def _param_text(v) -> str:
    """asv stores parameter values as repr() strings: "'cublas'" -> cublas."""
    if isinstance(v, str) and len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    return str(v)


def _as_float(v, where: str) -> Optional[float]:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise UsageError(f"{where}: {v!r} is not a number, null or NaN")
    return float(v)


def column(row: list, cols: list, name: str):
    """One named column of an asv results row (None where the row ends before it)."""
    i = cols.index(name) if name in cols else None
    return row[i] if i is not None and i < len(row) else None


def per_point(value, n: int, where: str) -> list:
    """A column's value as one entry per point: asv writes null for "all null"."""
    if value is None:
        return [None] * n
    if not isinstance(value, list):
        return [value] * n       # a scalar for a benchmark without parameters
    if len(value) != n:
        raise UsageError(f"{where}: {len(value)} values for a grid of {n} points")
    return value


def points_of(data: dict, where: str = "result file") -> dict:
    """{(benchmark, params tuple): Point}. Raises UsageError on a malformed row."""
    cols = data["result_columns"]
    if not isinstance(cols, list) or "result" not in cols or "params" not in cols:
        raise UsageError(f"{where}: result_columns lacks 'result' or 'params'")
    if not isinstance(data["results"], dict):
        raise UsageError(f"{where}: 'results' is not an object")
    out = {}
    for name, row in data["results"].items():
        w = f"{where}: {name}"
        if not isinstance(row, list):
            raise UsageError(f"{w}: row is not a list")
        params = column(row, cols, "params")
        if cols.index("params") >= len(row):
            raise UsageError(f"{w}: no 'params' (row ends before that column)")
        if params is None:
            params = []
        if not isinstance(params, list) or not all(isinstance(p, list) and p for p in params):
            raise UsageError(f"{w}: 'params' is not a list of value lists")
        combos = list(itertools.product(*params)) if params else [()]
        n = len(combos)
        result = per_point(column(row, cols, "result"), n, w)
        stats = {c: per_point(column(row, cols, c), n, f"{w} {c}") for c in STATS_COLUMNS[:4]}
        raw = column(row, cols, "samples") if "samples" in cols else None
        samples = raw if isinstance(raw, list) and len(raw) == n else [None] * n
        for j, combo in enumerate(combos):
            v = _as_float(result[j], w)
            ci_a, ci_b, q25, q75 = (_as_float(stats[c][j], f"{w} {c}") for c in STATS_COLUMNS[:4])
            ci = (ci_a, ci_b) if ci_a is not None and ci_b is not None else None
            q = (q25, q75) if q25 is not None and q75 is not None else None
            out[(name, tuple(_param_text(p) for p in combo))] = Point(v, ci, q, _samples_of(samples[j]))
    return out


@dataclass
class ResultFile:
    path: str
    commit: str
    env: str
    data: dict

    def points(self) -> dict:
        """{(benchmark, params tuple): Point}."""
        return points_of(self.data, self.path)

    def versions(self) -> dict:
        cols = self.data["result_columns"]
        return {name: column(row, cols, "version") for name, row in self.data["results"].items()}


def load(path: str) -> ResultFile:
    """Read and validate one result file; UsageError naming the file if it is not usable."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise UsageError(f"can't read asv result file {path}: {exc}") from None
    if not isinstance(data, dict) or not all(k in data for k in ("commit_hash", "result_columns", "results")):
        raise UsageError(f"{path} is not an asv 0.6 result file (no commit_hash/result_columns/results)")
    if not isinstance(data["commit_hash"], str):
        raise UsageError(f"{path}: commit_hash is not a string")
    rf = ResultFile(path, data["commit_hash"], str(data.get("env_name", "")), data)
    rf.points()          # validate now: a malformed file is named here, not as a traceback later
    return rf


def machines(results_dir: str) -> list[str]:
    if not os.path.isdir(results_dir):
        raise UsageError(f"results dir {results_dir} does not exist (run asv first)")
    return sorted(d for d in os.listdir(results_dir)
                  if os.path.isfile(os.path.join(results_dir, d, "machine.json")))


def result_paths(machine_dir: str) -> list[str]:
    if not os.path.isdir(machine_dir):
        return []
    return [os.path.join(machine_dir, fn) for fn in sorted(os.listdir(machine_dir))
            if fn.endswith(".json") and fn not in SKIP_FILES]


def commit_of_path(path: str) -> Optional[str]:
    """The sha prefix asv puts in the file name (``<sha8>-<env>.json``), without reading it."""
    base = os.path.basename(path)
    head = base.split("-", 1)[0]
    return head.lower() if head and all(c in "0123456789abcdef" for c in head.lower()) else None


def scan(machine_dir: str, wanted: tuple = ()) -> tuple[list[ResultFile], list[str]]:
    """The readable result files of one machine and a warning per unreadable one. An unreadable
    file whose name or content is one of the ``wanted`` commits (full shas or prefixes) is an
    error instead: that comparison can't be made without it."""
    files, warnings = [], []
    for path in result_paths(machine_dir):
        try:
            files.append(load(path))
        except UsageError as exc:
            short = commit_of_path(path)
            if short and any(w.lower().startswith(short) or short.startswith(w.lower()) for w in wanted if w):
                raise
            warnings.append(f"warning: skipped {exc}")
    return files, warnings


# ---------------------------------------------------------------------------- writing

def write_json_atomic(path: str, data) -> None:
    """Write JSON to ``path`` through a temp file in the same folder + os.replace: a reader (or a
    crash) never sees half a file."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_text_atomically(path, json.dumps(data, separators=(",", ":")))


def _expand(value, n: int) -> list:
    """A column's stored value as a list of n per-point entries (asv writes null for "all null")."""
    return list(value) if isinstance(value, list) and len(value) == n else [value if not isinstance(value, list) else None] * n


def _take_point(dst_row: list, src_row: list, cols: list, j: int, n: int) -> None:
    """Copy point ``j``'s value, statistics and raw samples from ``src_row`` into ``dst_row`` (in
    place): the gate compares samples only when they are the value's own."""
    for col in ("result",) + STATS_COLUMNS + ("samples",):
        if col not in cols:
            continue
        i = cols.index(col)
        while len(dst_row) <= i:
            dst_row.append(None)
        dst = _expand(dst_row[i], n)
        dst[j] = _expand(column(src_row, cols, col), n)[j]
        dst_row[i] = dst


def merge(old: dict, new: dict, overwrite: bool = False) -> tuple[dict, list[str], bool]:
    """Merge a fresh asv result file of one commit (``new``) into the recorded one (``old``).

    Per benchmark x parameter point: a recorded number is never replaced by null (failed), NaN
    (n/a) or an invalid value; where both are numbers the recorded one stays unless
    ``overwrite``; where only the new run has a number it is taken; where neither has one the
    record stays as it is. A benchmark whose ``version`` or grid changed is taken whole from the
    new run only with ``overwrite`` (else kept and reported); one not recorded before is added.
    Returns (merged data, one note per kept or taken point, whether anything changed)."""
    cols = old["result_columns"]
    if new["result_columns"] != cols:
        raise UsageError("result files with different result_columns can't be merged")
    merged = json.loads(json.dumps(old))
    notes, changed = [], False
    old_pts, new_pts = points_of(old, "recorded results"), points_of(new, "new results")
    for name, new_row in new["results"].items():
        if name not in merged["results"]:
            merged["results"][name] = new_row
            notes.append(f"added {name} (not recorded before)")
            changed = True
            continue
        row = merged["results"][name]
        ov, nv = column(row, cols, "version"), column(new_row, cols, "version")
        oparams, nparams = column(row, cols, "params") or [], column(new_row, cols, "params") or []
        if ov != nv or oparams != nparams:
            what = f"version {ov} -> {nv}" if ov != nv else "parameter grid changed"
            if overwrite:
                merged["results"][name] = new_row
                notes.append(f"replaced {name} ({what}; --overwrite)")
                changed = True
            else:
                notes.append(f"kept recorded {name} ({what}): pass --overwrite to replace it")
            continue
        combos = list(itertools.product(*nparams)) if nparams else [()]
        took = False
        for j, combo in enumerate(combos):
            key = (name, tuple(_param_text(p) for p in combo))
            o, nw = old_pts[key].value, new_pts[key].value
            label = f"{name} [{', '.join(key[1]) or '-'}]"
            if is_number(o) and not is_number(nw):
                notes.append(f"kept {label}: recorded {describe(o)}, new run {describe(nw)}")
            elif is_number(o) and is_number(nw):
                if o == nw:
                    continue
                if overwrite:
                    _take_point(row, new_row, cols, j, len(combos))
                    took = True
                    notes.append(f"replaced {label}: recorded {describe(o)} -> {describe(nw)} (--overwrite)")
                else:
                    notes.append(f"kept {label}: recorded {describe(o)}, new run {describe(nw)} "
                                 f"(pass --overwrite to replace)")
            elif is_number(nw):
                _take_point(row, new_row, cols, j, len(combos))
                took = True
                notes.append(f"took {label}: {describe(nw)} (recorded: {describe(o)})")
        if took:
            for col in ("started_at", "duration"):
                if col in cols and cols.index(col) < len(new_row):
                    i = cols.index(col)
                    while len(row) <= i:
                        row.append(None)
                    row[i] = new_row[i]
            changed = True
    return merged, notes, changed


# ---------------------------------------------------------------------------- count (for .ci/gpu)

def count(results_dir: str, commit: str, machine: Optional[str]) -> dict:
    """{"numbers": n, "n/a": n, "failed": n, "invalid": n} over the commit's result files."""
    ms = [machine] if machine else machines(results_dir)
    counts = {"numbers": 0, "n/a": 0, "failed": 0, "invalid": 0}
    found = False
    for m in ms:
        files, warnings = scan(os.path.join(results_dir, m), (commit,))
        for w in warnings:
            print(w, file=sys.stderr)
        for f in files:
            if not f.commit.lower().startswith(commit.lower()):
                continue
            found = True
            for p in f.points().values():
                v = p.value
                k = "numbers" if is_number(v) else "failed" if v is None else "n/a" if is_na(v) else "invalid"
                counts[k] += 1
    if not found:
        raise UsageError(f"no asv results for commit {commit} in {results_dir}"
                         + (f" (machine {machine})" if machine else ""))
    return counts


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compare.ci.asv_results",
                                 description="Count the measured points of one commit's asv results.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("count", help="exit 1 when the commit's results hold no number")
    c.add_argument("--commit", required=True, help="full sha or prefix")
    c.add_argument("--results-dir", default=".asv/results")
    c.add_argument("--machine", default=None, help="default: every machine (host name: %s)" % platform.node())
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    try:
        counts = count(args.results_dir, args.commit, args.machine)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = ", ".join(f"{v} {k}" for k, v in counts.items())
    if counts["numbers"] == 0:
        print(f"error: asv results of {args.commit[:12]} hold no number ({text}): nothing was measured",
              file=sys.stderr)
        return 1
    print(f"asv results of {args.commit[:12]}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
