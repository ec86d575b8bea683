"""Results out (table, csv, json, markdown) and back in (json, csv) for plots and round trips."""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import time
from typing import Iterable, Optional

from ..harness.errors import UsageError
from ..harness.runner import Result

# Every stored column; per-sample times stay in memory (asv reads them), not in files.
FIELDS = [f.name for f in dataclasses.fields(Result) if f.name != "times_ms"]
# Fields every stored row must have; the rest (config, timings, ...) may be missing in older files.
REQUIRED = [f.name for f in dataclasses.fields(Result)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
# Text columns (reason, variant, timing_method, ...): empty, never None, whatever the file held.
_TEXT = {f.name for f in dataclasses.fields(Result) if f.type in ("str", str)}
_INT = {"M", "N", "K", "samples", "sm_clock_mhz", "temp_c", "hold_failures", "attempts"}
_FLOAT = {"alpha", "beta", "median_ms", "iqr_ms", "min_ms", "noise", "tflops", "pct_cublas", "pct_peak",
          "rel_err", "worst_err", "prepare_s", "hold_us"}


def _num(x, fmt: str, dash: str = "-") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return dash
    return format(x, fmt)


def config_text(config: dict) -> str:
    """{"tile": "128x128x16", "split_k": 4} -> 'tile=128x128x16 split_k=4' (the table's column)."""
    def val(v):
        if isinstance(v, bool):
            return "on" if v else "off"
        if isinstance(v, (list, tuple)):
            return "x".join(str(x) for x in v)
        return str(v)
    return " ".join(f"{k}={val(v)}" for k, v in (config or {}).items())


def display_rows(results: Iterable[Result]) -> list[dict]:
    """The human columns, as strings, shared by the table and markdown views."""
    rows = []
    for r in results:
        ms = "-" if r.median_ms is None else f"{r.median_ms:.4g} ±{r.iqr_ms / 2:.1g}"
        rows.append({
            "kernel": r.kernel, "family": r.family, "stage": r.stage, "shape": r.shape,
            "prec": r.precision, "ms ±IQR/2": ms, "TFLOP/s": _num(r.tflops, ".1f"),
            "% cuBLAS": _num(r.pct_cublas, ".0f"), "% peak": _num(r.pct_peak, ".0f"),
            "rel err": _num(r.rel_err, ".1e"), "config": config_text(r.config),
            "status": r.status_text + (" (throttled)" if r.throttled else ""),
        })
    return rows


def header_lines(env: dict) -> list[str]:
    versions = (f"torch {env.get('torch')}, triton {env.get('triton')}, cupy {env.get('cupy')}, "
                f"python {env.get('python')}")
    if not env.get("sm_count"):   # no GPU (interpreter run)
        return [f"GPU: {env.get('gpu')}", versions]
    peak = env.get("fp32_peak_tflops")
    lines = [
        f"GPU: {env.get('gpu')} ({env.get('sm_count')} SMs, cc {env.get('compute_capability')}, "
        f"L2 {env.get('l2_bytes', 0) / 2**20:.0f} MiB, {env.get('memory_gib')} GiB)",
        f"SM clock: {env.get('sm_clock_mhz')} MHz now, {env.get('max_sm_clock_mhz')} MHz max; "
        f"FP32 peak {peak:.1f} TFLOP/s (SMs x FP32 lanes x 2 x max clock)" if peak else
        f"SM clock: {env.get('sm_clock_mhz')} MHz; FP32 peak unknown",
        f"driver {env.get('driver')}, CUDA {env.get('cuda_runtime')}, torch {env.get('torch')}, "
        f"triton {env.get('triton')}, cupy {env.get('cupy')}, python {env.get('python')}",
    ]
    return lines


def to_table(results: list[Result], env: dict, file) -> None:
    from rich.console import Console
    from rich.table import Table
    tty = hasattr(file, "isatty") and file.isatty()
    console = Console(file=file, width=None if tty else 220, soft_wrap=False)
    for line in header_lines(env):
        console.print(line, highlight=False)
    rows = display_rows(results)
    if not rows:
        console.print("(no results)")
        return
    # A narrow terminal keeps the columns that carry the comparison; family and stage are in
    # the kernel's name, % of peak is in the json/csv.
    drop = {"family", "stage", "% peak", "config"} if console.width < 150 else set()
    if not any(row["config"] for row in rows):
        drop.add("config")
    precs = {r.precision for r in results}
    if drop and len(precs) == 1:
        drop.add("prec")
        console.print(f"precision: {precs.pop()}", highlight=False)
    from rich import box
    t = Table(show_lines=False, header_style="bold", pad_edge=False, box=box.SIMPLE_HEAD)
    cols = [c for c in rows[0] if c not in drop]
    for col in cols:
        # status and config wrap (a long config folds onto more lines); the numbers never do
        t.add_column(col, justify="left" if col in ("kernel", "family", "stage", "status", "prec", "config") else "right",
                     no_wrap=col not in ("status", "config"), overflow="fold",
                     ratio=1 if col == "config" else None, min_width=20 if col == "config" else None)
    for row, r in zip(rows, results):
        style = {"FAILED": "bold red", "error": "red", "unsupported": "dim", "skipped": "dim"}.get(r.status)
        t.add_row(*(row[c] for c in cols), style=style)
    console.print(t)


def to_markdown(results: list[Result], env: dict) -> str:
    rows = display_rows(results)
    out = [f"> {line}  " for line in header_lines(env)]
    out.append("")
    if rows:
        cols = [c for c in rows[0] if c != "config" or any(row["config"] for row in rows)]
        out.append("| " + " | ".join(cols) + " |")
        out.append("|" + "|".join("---" for _ in cols) + "|")
        for row in rows:
            out.append("| " + " | ".join(str(row[c]).replace("|", "\\|") for c in cols) + " |")
    return "\n".join(out) + "\n"


def to_json(results: list[Result], env: dict, command: Optional[str] = None,
            summary: Optional[list] = None) -> str:
    """``command`` is the command line that reproduces the run (``python -m compare ...``);
    ``summary`` the per-kernel sweep summary, when the run was a sweep."""
    doc = {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "command": command or "",
           "environment": env, "results": [r.as_dict() for r in results]}
    if summary is not None:
        doc["summary"] = summary
    return json.dumps(doc, indent=1, default=str)


def to_csv(results: list[Result]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    w.writeheader()
    for r in results:
        d = r.as_dict()
        d["throttle_reasons"] = ";".join(d["throttle_reasons"] or [])
        # JSON text keeps the values' types, so a csv file reads back the same config dict.
        d["config"] = json.dumps(d["config"]) if d["config"] else ""
        w.writerow({k: ("" if v is None else v) for k, v in d.items()})
    return buf.getvalue()


def _from_dict(d: dict) -> Result:
    kw = {}
    for k in FIELDS:
        v = d.get(k)
        if v == "" and k not in _TEXT:
            v = None
        if v is not None:
            if k in _INT:
                v = int(v)
            elif k in _FLOAT:
                v = float(v)
            elif k == "throttled":
                v = v if isinstance(v, bool) else str(v) == "True"
            elif k == "throttle_reasons" and isinstance(v, str):
                v = [x for x in v.split(";") if x]
            elif k == "config" and isinstance(v, str):
                v = json.loads(v)
        if k == "throttle_reasons" and v is None:
            v = []
        if k == "config" and v is None:   # files written before rows carried their config
            v = {}
        if k == "config" and not isinstance(v, dict):
            raise ValueError(f"config is {type(v).__name__}, not an object")
        if k in _TEXT and v is None:
            v = ""
        kw[k] = v
    return Result(**kw)


def load(path: str) -> tuple[list[Result], dict]:
    """Read results written with --format json or csv. Returns (results, environment).

    Raises UsageError, naming the file and what is wrong with it, for a file that is missing,
    empty, not JSON/CSV, or not a results file."""
    import os
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file")
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory, not a results file")
    try:
        with open(path, newline="") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"can't read {path}: {exc}") from None
    if not text.strip():
        raise UsageError(f"{path} is empty (an interrupted run?); expected results written by --format json")
    if path.endswith(".csv"):
        rows, env = list(csv.DictReader(io.StringIO(text))), {}
    else:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path} is not valid JSON ({exc}); expected results written by --format json") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
            raise UsageError(f"{path} is JSON but not a results file: no 'results' list "
                             f"(expected the output of python -m compare --format json)")
        rows, env = doc["results"], doc.get("environment") or {}
        if not isinstance(env, dict):
            raise UsageError(f"{path}: 'environment' is {type(env).__name__}, not an object")
    results = []
    for i, d in enumerate(rows):
        if not isinstance(d, dict):
            raise UsageError(f"{path}: result {i} is {type(d).__name__}, not an object")
        missing = [k for k in REQUIRED if d.get(k) is None and k != "variant"]
        if missing:
            raise UsageError(f"{path}: result {i} lacks {', '.join(missing)}; not a results file of python -m compare")
        try:
            results.append(_from_dict(d))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{path}: result {i} has a bad value: {exc}") from None
    return results, env
