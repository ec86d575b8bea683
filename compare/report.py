"""Results out (table, csv, json, markdown) and back in (json, csv) for plots and round trips."""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import time
from typing import Iterable, Optional

from .runner import Result

FIELDS = [f.name for f in dataclasses.fields(Result)]
_INT = {"M", "N", "K", "samples", "sm_clock_mhz", "temp_c"}
_FLOAT = {"alpha", "beta", "median_ms", "iqr_ms", "min_ms", "noise", "tflops", "pct_cublas", "pct_peak",
          "rel_err", "worst_err", "prepare_s"}


def _num(x, fmt: str, dash: str = "-") -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return dash
    return format(x, fmt)


def display_rows(results: Iterable[Result]) -> list[dict]:
    """The human columns, as strings, shared by the table and markdown views."""
    rows = []
    for r in results:
        ms = "-" if r.median_ms is None else f"{r.median_ms:.4g} ±{r.iqr_ms / 2:.1g}"
        rows.append({
            "kernel": r.kernel, "family": r.family, "stage": r.stage, "shape": r.shape,
            "prec": r.precision, "ms ±IQR/2": ms, "TFLOP/s": _num(r.tflops, ".1f"),
            "% cuBLAS": _num(r.pct_cublas, ".0f"), "% peak": _num(r.pct_peak, ".0f"),
            "rel err": _num(r.rel_err, ".1e"),
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
    drop = {"family", "stage", "% peak"} if console.width < 150 else set()
    precs = {r.precision for r in results}
    if drop and len(precs) == 1:
        drop.add("prec")
        console.print(f"precision: {precs.pop()}", highlight=False)
    from rich import box
    t = Table(show_lines=False, header_style="bold", pad_edge=False, box=box.SIMPLE_HEAD)
    cols = [c for c in rows[0] if c not in drop]
    for col in cols:
        t.add_column(col, justify="left" if col in ("kernel", "family", "stage", "status", "prec") else "right",
                     no_wrap=col != "status", overflow="fold")
    for row, r in zip(rows, results):
        style = {"FAILED": "bold red", "error": "red", "unsupported": "dim", "skipped": "dim"}.get(r.status)
        t.add_row(*(row[c] for c in cols), style=style)
    console.print(t)


def to_markdown(results: list[Result], env: dict) -> str:
    rows = display_rows(results)
    out = [f"> {line}  " for line in header_lines(env)]
    out.append("")
    if rows:
        cols = list(rows[0])
        out.append("| " + " | ".join(cols) + " |")
        out.append("|" + "|".join("---" for _ in cols) + "|")
        for row in rows:
            out.append("| " + " | ".join(str(v).replace("|", "\\|") for v in row.values()) + " |")
    return "\n".join(out) + "\n"


def to_json(results: list[Result], env: dict, command: Optional[list] = None) -> str:
    doc = {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "command": command or [],
           "environment": env, "results": [r.as_dict() for r in results]}
    return json.dumps(doc, indent=1, default=str)


def to_csv(results: list[Result]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    w.writeheader()
    for r in results:
        d = r.as_dict()
        d["throttle_reasons"] = ";".join(d["throttle_reasons"] or [])
        w.writerow({k: ("" if v is None else v) for k, v in d.items()})
    return buf.getvalue()


def _from_dict(d: dict) -> Result:
    kw = {}
    for k in FIELDS:
        v = d.get(k)
        if v == "" and k not in ("reason", "variant"):
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
        if k == "throttle_reasons" and v is None:
            v = []
        if k in ("reason", "variant") and v is None:
            v = ""
        kw[k] = v
    return Result(**kw)


def load(path: str) -> tuple[list[Result], dict]:
    """Read results written with --format json or csv. Returns (results, environment)."""
    with open(path, newline="") as f:
        text = f.read()
    if path.endswith(".csv"):
        return [_from_dict(d) for d in csv.DictReader(io.StringIO(text))], {}
    doc = json.loads(text)
    return [_from_dict(d) for d in doc["results"]], doc.get("environment", {})
