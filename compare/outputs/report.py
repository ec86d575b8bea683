"""Results out (table, csv, json, markdown) and back in (json, csv) for plots and round trips."""
from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import shutil
import textwrap
import time
from typing import Iterable, Optional

from ..harness import checkpoint
from ..harness import sol as _sol
from ..harness.errors import UsageError
from ..harness.files import open_text
from ..harness.options import renamed_config
from ..harness import runner as _runner
from ..harness.runner import Result, baseline_key

# rich (~35 ms to import) is imported by the table alone: --list and the file formats go without.

# Every status a row of python -m compare can carry (a loaded file with another is refused).
STATUSES = (_runner.OK, _runner.FAILED, _runner.ERROR, _runner.FAULT, _runner.HUNG, _runner.UNSUPPORTED,
            _runner.SKIPPED)

# Every stored column; per-sample times stay in memory (asv reads them), not in files.
FIELDS = [f.name for f in dataclasses.fields(Result) if f.name != "times_ms"]
# Fields every stored row must have; the rest (config, timings, ...) may be missing in older files.
REQUIRED = [f.name for f in dataclasses.fields(Result)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
# Text columns (reason, variant, timing_method, ...): empty, never None, whatever the file held.
_TEXT = {f.name for f in dataclasses.fields(Result) if f.type in ("str", str)}
# Numeric columns, from the declared types (a CSV cell is text: every one of these is read back
# as a number, batch_ms and host_launch_us included).
_INT = {f.name for f in dataclasses.fields(Result) if f.type in ("int", "Optional[int]", int)}
_FLOAT = {f.name for f in dataclasses.fields(Result) if f.type in ("float", "Optional[float]", float)}


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
        ms = "-" if r.median_ms is None else f"{r.median_ms:.4g}"
        if r.median_ms is not None and r.iqr_ms is not None:    # a loaded row may have no spread
            ms += f" ±{r.iqr_ms / 2:.1g}"
        rows.append({
            "kernel": r.kernel, "family": r.family, "stage": r.stage, "shape": r.shape,
            "prec": r.precision, "ms ±IQR/2": ms, "TFLOP/s": _num(r.tflops, ".1f"),
            "% cuBLAS": _num(r.pct_cublas, ".0f"), "% SOL": _sol.cell(r.pct_sol, r.bound, r.sol_flag),
            "% peak": _num(r.pct_peak, ".0f"),
            "rel err": _num(r.rel_err, ".1e"), "config": config_text(r.config),
            "status": r.status_text + (" (throttled)" if r.throttled else ""),
        })
    return rows


def triton_env_line(env: dict) -> list[str]:
    """The run's Triton code-generation switches, when any is set (the environment's triton_env)."""
    switches = env.get("triton_env") or {}
    if not switches:
        return []
    return ["Triton code generation changed by the environment (every Triton row): "
            + ", ".join(f"{k}={v}" for k, v in sorted(switches.items()))]


def header_lines(env: dict) -> list[str]:
    versions = (f"torch {env.get('torch')}, triton {env.get('triton')}, cupy {env.get('cupy')}, "
                f"python {env.get('python')}")
    if not env.get("sm_count"):   # no GPU (interpreter run)
        return [f"GPU: {env.get('gpu')}", versions] + triton_env_line(env)
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
    return lines + peaks_lines(env) + triton_env_line(env)


def peaks_lines(env: dict) -> list[str]:
    """The measured peaks every % SOL is against (compare.harness.sol), with their clock and the
    datasheet figures; or how to get them."""
    p = env.get("peaks")
    if not isinstance(p, dict) or not all(isinstance(p.get(k), dict) for k in ("fp32", "tf32", "dram")):
        return ["% SOL: no measured peaks for this GPU (python -m cuda_kernels.probes.peaks measures and caches them)"]
    f, t, d = p["fp32"], p["tf32"], p["dram"]
    sheet = p.get("datasheet") or {}
    tf_instr = (str(t.get("instr") or "").split() or ["tensor"])[0].split(".")[0]   # wgmma / mma
    line = (f"measured peaks: FFMA {f['tflops']:.1f} TFLOP/s at {f.get('sm_mhz')} MHz, TF32 {tf_instr} "
            f"{t['tflops']:.0f} TFLOP/s at {t.get('sm_mhz')} MHz, DRAM copy {d['gbps']:.0f} GB/s (read + write)")
    if sheet:
        line += (f"; datasheet {sheet.get('name')}: {sheet.get('fp32_tflops')} / {sheet.get('tf32_tflops')} TFLOP/s, "
                 f"{sheet.get('dram_gbps'):.0f} GB/s")
    return [line]


# The table's width wherever it goes (terminal, pipe, file): one line per row. A terminal or
# COLUMNS narrower than this narrows it further; nothing widens it.
TABLE_WIDTH = 120
# A status longer than this ("unsupported: fp32 only") has its reason moved to a numbered note
# under the table, so the status column stays narrow ("unsupported [2]").
_REASON_INLINE = 12


def table_width(file) -> int:
    """TABLE_WIDTH, or less for a narrower terminal (or COLUMNS, when not writing to a terminal)."""
    width = TABLE_WIDTH
    if hasattr(file, "isatty") and file.isatty():
        width = min(width, shutil.get_terminal_size((TABLE_WIDTH, 24)).columns)
    else:
        try:
            columns = int(os.environ.get("COLUMNS", ""))
        except ValueError:
            columns = 0
        if columns > 0:
            width = min(width, columns)
    return max(width, 40)


def _status_cells(results: list[Result]) -> tuple[list[str], list[str]]:
    """Status per row, short enough for one line; long reasons become notes ([1] reason), one
    note per distinct reason (every CUDA row under --interpret shares one)."""
    notes: dict[str, int] = {}
    cells = []
    for r in results:
        text = r.status_text
        if len(text) > _REASON_INLINE:
            n = notes.setdefault(r.reason, len(notes) + 1)
            text = f"{r.status} [{n}]"
        cells.append(text + (" T" if r.throttled else ""))
    lines = [f"[{n}] {reason}" for reason, n in notes.items()]
    if any(r.throttled for r in results):
        lines.append("T: the GPU throttled while this row was sampled (throttle_reasons in the JSON/CSV)")
    if any(r.pct_sol is not None for r in results):
        lines.append("% SOL: the speed of light (measured peaks at the row's clock) / the time; c compute-bound, "
                     "m memory-bound" + ("; ! above 100% by more than the noise (sol_flag in the JSON/CSV)"
                                         if any(r.sol_flag for r in results) else ""))
    return cells, lines


def to_table(results: list[Result], env: dict, file) -> None:
    """The human table, one line per row within :func:`table_width` columns. Family and stage
    are in the kernel's name; the config is in the JSON/CSV and in :func:`config_view`."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    tty = hasattr(file, "isatty") and file.isatty()
    width = table_width(file)
    buf = None if tty else io.StringIO()
    console = Console(file=file if tty else buf, width=width, soft_wrap=False,
                      force_terminal=tty, color_system="auto" if tty else None, highlight=False)
    for line in header_lines(env):
        for part in textwrap.wrap(line, width, subsequent_indent="  "):
            console.print(part, highlight=False, markup=False)
    # Rows skipped by the run's own choice (a CUDA kernel under --interpret) are counted, not
    # listed: the summary names those kernels once, the JSON/CSV keep every row.
    skipped = [r for r in results if r.status == "skipped"]
    results = [r for r in results if r.status != "skipped"]
    rows = display_rows(results)
    if not rows:
        console.print("(no results)")
    else:
        statuses, notes = _status_cells(results)
        for row, status in zip(rows, statuses):
            row["status"] = status
        drop = {"family", "stage", "config"}
        precs = {r.precision for r in results}
        if len(precs) == 1:
            drop.add("prec")
            console.print(f"precision: {next(iter(precs))}", highlight=False)
        # a column no row has a number in says nothing (an untimed --check or --interpret run: the
        # times; no measured peaks: % SOL); dropped first, so rel err keeps its place
        for col in ("ms ±IQR/2", "TFLOP/s", "% cuBLAS", "% SOL", "% peak"):
            if all(row[col] == "-" for row in rows):
                drop.add(col)
        # the widest columns first out when the rest would not fit on one line (% peak is in the JSON)
        for extra in ("% peak", "rel err", "% SOL"):
            kept = [c for c in rows[0] if c not in drop]
            need = sum(max(len(c), *(len(row[c]) for row in rows)) for c in kept) + 3 * (len(kept) - 1)
            if need > width:
                drop.add(extra)
        # files and pipes get an ASCII rule under the header: one byte per column, whatever reads it
        rule = box.SIMPLE_HEAD if tty else box.Box("    \n    \n -- \n    \n    \n    \n    \n    \n")
        t = Table(show_lines=False, header_style="bold", pad_edge=False, box=rule, show_edge=False)
        cols = [c for c in rows[0] if c not in drop]
        for col in cols:
            t.add_column(col, justify="left" if col in ("kernel", "status", "prec", "shape") else "right",
                         no_wrap=col != "status", overflow="fold")
        for row, r in zip(rows, results):
            style = {"FAILED": "bold red", "FAULT": "bold red", "HUNG": "bold red", "error": "red", "unsupported": "dim", "skipped": "dim"}.get(r.status)
            t.add_row(*(row[c] for c in cols), style=style)
        console.print(t)
        for note in notes:
            for part in textwrap.wrap(note, width, subsequent_indent="    ", break_on_hyphens=False):
                console.print(part, highlight=False, markup=False)
    if skipped:
        why = "; ".join(dict.fromkeys(r.reason for r in skipped))
        for part in textwrap.wrap(f"{len(skipped)} skipped rows not shown ({why})", width, subsequent_indent="  "):
            console.print(part, highlight=False, markup=False)
    if buf is not None:
        file.write("".join(line.rstrip() + "\n" for line in buf.getvalue().splitlines()))


def config_view(results: list[Result], width: int = TABLE_WIDTH) -> str:
    """--show config: each row's resolved configuration, wrapped under its kernel and shape."""
    out = ["configurations (the config field of the JSON/CSV):"]
    for r in results:
        if not r.config:
            continue
        head = f"{r.kernel} {r.shape} {r.precision}:"
        out += textwrap.wrap(f"{head} {config_text(r.config)}", width, subsequent_indent="    ",
                             break_on_hyphens=False)
    if len(out) == 1:
        out.append("(no row recorded a configuration)")
    return "\n".join(out) + "\n"


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
            summary: Optional[list] = None, matrix: Optional[dict] = None) -> str:
    """``command`` is the command line that reproduces the run (``python -m compare ...``);
    ``summary`` the per-kernel sweep summary, when the run was a sweep; ``matrix`` the closing
    kernel x shape summary (compare.outputs.matrix.build)."""
    doc = {"created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "command": command or "",
           "environment": env, "results": [r.as_dict() for r in results]}
    if summary is not None:
        doc["summary"] = summary
    if matrix is not None:
        doc["matrix"] = matrix
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


def row_from_dict(d: dict) -> Result:
    """One row of a JSON or CSV document (or a checkpoint line) back to a Result."""
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
                try:
                    v = json.loads(v)
                except json.JSONDecodeError:
                    raise ValueError(f"config {v[:40]!r} is not a JSON object") from None
        if k == "throttle_reasons" and v is None:
            v = []
        if k == "config" and v is None:   # files written before rows carried their config
            v = {}
        if k == "config" and not isinstance(v, dict):
            raise ValueError(f"config is {type(v).__name__}, not an object")
        if k == "config":   # a row saved before an option was renamed shows it under its new name
            v = renamed_config(v)
        if k in _TEXT and v is None:
            v = ""
        kw[k] = v
    return Result(**kw)


def load(path: str) -> tuple[list[Result], dict]:
    """Read results written with --format json or csv, or a run's checkpoint (compare/harness/checkpoint.py).
    Returns (results, environment).

    Raises UsageError, naming the file and what is wrong with it, for a file that is missing,
    empty, not JSON/CSV, or not a results file."""
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file")
    if os.path.isdir(path):
        raise UsageError(f"{path} is a directory, not a results file")
    try:
        # utf-8-sig: a CSV saved by a spreadsheet starts with a byte-order mark, else its first
        # column would be named "\ufeffkernel"
        with open_text(path, newline="", encoding="utf-8-sig") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise UsageError(f"can't read {path}: {exc}") from None
    if not text.strip():
        raise UsageError(f"{path} is empty (an interrupted run?); expected results written by --format json")
    from_checkpoint = path.endswith((".jsonl", ".jsonl.gz")) or checkpoint.is_checkpoint(text)
    if path.endswith(".csv"):
        rows, env = list(csv.DictReader(io.StringIO(text))), {}
    elif from_checkpoint:   # a run's checkpoint, finished or not
        rows, env = [row for _, row in checkpoint.parse(text, f"--from-json {path}").rows], {}
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
        if d.get("status") not in STATUSES:
            raise UsageError(f"{path}: result {i} has status {d.get('status')!r}, which python -m compare does not "
                             f"write (it writes {', '.join(STATUSES)})")
        try:
            results.append(row_from_dict(d))
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{path}: result {i} has a bad value: {exc}") from None
    # Recomputed against the peaks the file's environment recorded; without them (a CSV, a file
    # from before peaks were measured) every field is kept as written.
    if isinstance(env.get("peaks"), dict):
        _sol.fill(results, env["peaks"])
    if from_checkpoint:   # a run on one host checkpoints each row before its % of cuBLAS is known
        _runner.fill_pct_cublas(results)
    return results, env


def filter_rows(results: list[Result], shapes=None, precisions=None, kernels=None) -> list[Result]:
    """The rows a --from-json run asked for: ``shapes`` a set of (M, N, K), ``precisions`` and
    ``kernels`` sets of names; None keeps everything. cuBLAS rows stay wherever a kept row is
    compared with them (same shape, alpha, beta; tf32x3's baseline is fp32), so the table keeps
    its baseline."""

    def wanted(r: Result) -> bool:
        return ((shapes is None or (r.M, r.N, r.K) in shapes)
                and (precisions is None or r.precision in precisions)
                and (kernels is None or r.kernel in kernels))
    kept = [r for r in results if r.family != "cublas" and wanted(r)]
    bases = {baseline_key(r) for r in kept}
    return [r for r in results if (r.family != "cublas" and wanted(r))
            or (r.family == "cublas" and (baseline_key(r) in bases
                                          or (kernels is None or "cublas" in kernels) and wanted(r)))]
