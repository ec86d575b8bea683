"""python -m compare.outputs.profile: why each stage is faster, from Nsight Compute's counters.

Every stage's header (cuda_kernels/NN_*.cu, the registry's ``idea``) says what it improves:
coalesced reads, fewer global loads, 128-bit loads, no shared-memory bank conflicts, fewer
barrier stalls. This command measures those claims on the GPU and puts them next to the time:

1. The parent process re-invokes itself under ``ncu --clock-control none --profile-from-start
   off`` as a child (``python -m compare.outputs.profile --_child SPEC``). The child prepares every
   selected kernel through compare.harness.runner (compile, autotune, first launch: all outside the
   profiled window), then does exactly the checked launch the suite does (C poisoned, same
   seeded inputs, same configuration) inside a cudaProfilerStart/Stop window, and checks its
   result. A one-thread marker kernel opens each window, so every kernel ncu saw is attributed
   to the right row whatever the kernel is called (cuBLAS's sm90_xmma_*, Triton's _tiled_kernel,
   the split-K reduction, the Triton M-major copy of A: all of them count).
2. The report is read back as CSV (``ncu --import --csv --page raw``) and joined per row:
   counters summed over the window's kernels, percentages weighted by each kernel's duration.
3. The parent times the same kernels with the suite's engine (compare.harness.runner.run) in its own
   process, after the child has exited: profiler replay never touches a timed run.

Exit status: 0 all rows ok; 1 a kernel FAILED its check or errored; 2 the run could not start
(bad arguments, no ncu on PATH, no GPU, GPU performance counters not permitted: ERR_NVGPUCTRPERM).
Nothing is written unless the run completes (atomic writes).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Callable, Optional

from ..harness.errors import UsageError
from ..harness.files import write_atomically as _write_atomically, write_text_atomically

MARKER = "gemm_ladder_profile_marker"
DEFAULT_SHAPE = "2048"


# --- what is measured ------------------------------------------------------------------------

@dataclass(frozen=True)
class Counter:
    """One quantity read from ncu. ``names`` are alternatives, best first: the first one the
    installed ncu offers is collected (names differ between GPU generations and ncu versions).
    ``join`` says how the kernels of one window combine: "sum" (counts, bytes, time), "mean"
    (percentages, weighted by each kernel's duration) or "max" (registers)."""
    key: str
    names: tuple
    join: str = "sum"


COUNTERS: tuple[Counter, ...] = (
    Counter("time_ns", ("gpu__time_duration.sum",)),
    Counter("dram_read", ("dram__bytes_read.sum",)),
    Counter("dram_write", ("dram__bytes_write.sum",)),
    Counter("l2_hit", ("lts__t_sector_hit_rate.pct",), "mean"),
    Counter("ldg_sectors", ("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",)),
    Counter("ldg_requests", ("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",)),
    Counter("ldg_inst", ("smsp__sass_inst_executed_op_global_ld.sum", "smsp__inst_executed_op_global_ld.sum")),
    Counter("ldg_bytes", ("sm__sass_data_bytes_mem_global_op_ld.sum", "smsp__sass_data_bytes_mem_global_op_ld.sum")),
    Counter("ldgsts_inst", ("smsp__sass_inst_executed_op_ldgsts.sum", "smsp__inst_executed_op_ldgsts.sum")),
    Counter("ldgsts_bytes", ("sm__sass_data_bytes_mem_global_op_ldgsts.sum",
                             "smsp__sass_data_bytes_mem_global_op_ldgsts.sum")),
    Counter("conflicts_ld", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",)),
    Counter("conflicts_st", ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",)),
    Counter("fma_pct", ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",), "mean"),
    Counter("wavefronts_ld", ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",)),
    Counter("wavefronts_st", ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",)),
    # Every tensor-pipe instruction (HMMA and Hopper's GMMA); the HMMA-only name where that is all there is.
    Counter("tensor_pct", ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
                           "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"), "mean"),
    Counter("warps_pct", ("sm__warps_active.avg.pct_of_peak_sustained_active",), "mean"),
    Counter("regs", ("launch__registers_per_thread",), "max"),
    # The launch's shape and what the SM could hold of it: a few fat blocks per SM is a latency
    # problem no counter above shows by itself.
    Counter("grid", ("launch__grid_size",), "max"),
    Counter("block", ("launch__block_size",), "max"),
    Counter("occupancy_theory_pct", ("sm__maximum_warps_per_active_cycle_pct",), "max"),
    Counter("local_ld", ("l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum",)),
    Counter("local_st", ("l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum",)),
    Counter("barrier_pct", ("smsp__warp_issue_stalled_barrier_per_warp_active.pct",), "mean"),
)


@dataclass(frozen=True)
class Metric:
    """One column of the output: ``value(counters, row)`` from the joined counters; ``help`` is
    the one sentence the legend prints (what it is and why a learner cares)."""
    key: str
    header: str
    fmt: str
    help: str
    value: Callable


def _get(c: dict, *keys):
    vals = [c.get(k) for k in keys]
    return None if any(v is None for v in vals) else vals


def _ratio(num, den):
    return None if num is None or den is None or den == 0 else num / den


def _dram_bytes(c, row):
    v = _get(c, "dram_read", "dram_write")
    return None if v is None else v[0] + v[1]


def min_dram_bytes(M: int, N: int, K: int, beta: float) -> int:
    """Every operand crosses DRAM once: read A and B, write C (and read C when beta != 0)."""
    return 4 * (M * K + K * N + M * N + (M * N if beta != 0 else 0))


def _load_width(c, row):
    """Bytes each thread asks for per global-load instruction (LDG plus cp.async's LDGSTS):
    4 for a float load, 16 for a float4 one."""
    inst = (c.get("ldg_inst") or 0) + (c.get("ldgsts_inst") or 0)
    if c.get("ldg_bytes") is None or not inst:
        return None
    return ((c.get("ldg_bytes") or 0) + (c.get("ldgsts_bytes") or 0)) / (32 * inst)


def _tensor(c, row):
    return c.get("tensor_pct")


def _conflict_pct(op):
    def value(c, row):
        r = _ratio(c.get(f"conflicts_{op}"), c.get(f"wavefronts_{op}"))
        return None if r is None else 100 * r
    return value


def _local(c, row):
    v = _get(c, "local_ld", "local_st")
    return None if v is None else v[0] + v[1]


METRICS: tuple[Metric, ...] = (
    Metric("engine_ms", "engine ms", ".4g",
           "the suite's timing engine (median, its own process, no profiler attached): the number the ladder reports",
           lambda c, row: row.get("engine_median_ms")),
    Metric("ncu_ms", "ncu ms", ".4g",
           "gpu__time_duration of the profiled launch, summed over its kernels (clocks not locked; replay adds no time to it)",
           lambda c, row: None if c.get("time_ns") is None else c["time_ns"] / 1e6),
    Metric("dram_mb", "DRAM MB", ".1f",
           "bytes read from plus written to device memory (HBM) by the launch",
           lambda c, row: None if _dram_bytes(c, row) is None else _dram_bytes(c, row) / 1e6),
    Metric("dram_x_min", "x min", ".2f",
           "DRAM bytes over the least any GEMM must move, 4*(MK+KN+MN) (+MN when beta != 0): 1.0 means every operand crossed "
           "DRAM once; below 1.0 when C's writes still sit in the 50 MB L2 as the kernel ends (written back later, uncounted)",
           lambda c, row: _ratio(_dram_bytes(c, row), min_dram_bytes(row["M"], row["N"], row["K"], row["beta"]))),
    Metric("dram_gbs", "DRAM GB/s", ".0f",
           "achieved DRAM bandwidth: DRAM bytes over ncu's duration",
           lambda c, row: _ratio(_dram_bytes(c, row), c.get("time_ns"))),
    Metric("l2_hit", "L2 hit %", ".1f",
           "share of L2 sector lookups that hit: reuse between blocks served from L2 instead of DRAM",
           lambda c, row: c.get("l2_hit")),
    Metric("sectors_per_req", "sect/req", ".2f",
           "32-byte sectors per warp-wide global load: 4 when 32 threads read 32 consecutive floats (16 for float4s), "
           "1 when they all read one float, up to 32 when every thread hits its own line (uncoalesced)",
           lambda c, row: _ratio(c.get("ldg_sectors"), c.get("ldg_requests"))),
    Metric("ldg_mb", "LDG MB", ".0f",
           "bytes global loads pulled through L1 (sectors x 32): what shared-memory tiling cuts by reusing each loaded value",
           lambda c, row: None if c.get("ldg_sectors") is None else c["ldg_sectors"] * 32 / 1e6),
    Metric("load_width", "B/ld", ".1f",
           "bytes per thread per global-load instruction (LDG and cp.async): 4 is a float, 16 a 128-bit float4 load "
           "(ncu counts a broadcast, every thread reading one address, once, which pulls the average below 4)",
           _load_width),
    Metric("conflicts_ld", "confl ld", ",.0f",
           "shared-memory load bank conflicts: extra passes a warp's shared load needs because threads hit the same bank",
           lambda c, row: c.get("conflicts_ld")),
    Metric("conflicts_st", "confl st", ",.0f",
           "shared-memory store bank conflicts (storing A transposed is where they appear)",
           lambda c, row: c.get("conflicts_st")),
    Metric("conflicts_ld_pct", "confl ld %", ".2f",
           "share of shared-load wavefronts that were bank-conflict replays (conflicts over wavefronts): 0 means conflict-free",
           _conflict_pct("ld")),
    Metric("conflicts_st_pct", "confl st %", ".2f",
           "share of shared-store wavefronts that were bank-conflict replays",
           _conflict_pct("st")),
    Metric("fma_pct", "FMA %", ".1f",
           "how busy the FP32 FMA pipe was while the SMs were active: the work a SGEMM exists to do",
           lambda c, row: c.get("fma_pct")),
    Metric("tensor_pct", "TC %", ".1f",
           "tensor-core pipe utilization while the SMs were active: about 0 for the FFMA (fp32) kernels, high for TF32 paths",
           _tensor),
    Metric("warps_pct", "warps %", ".0f",
           "achieved occupancy: active warps over the SM's maximum; fewer warps hide less latency, unless each does more (ILP)",
           lambda c, row: c.get("warps_pct")),
    Metric("regs", "regs", ".0f",
           "registers per thread: more results per thread need more, and more registers allow fewer warps",
           lambda c, row: c.get("regs")),
    Metric("local_sectors", "local", ",.0f",
           "local-memory sectors read and written: non-zero means registers spilled to memory",
           _local),
    Metric("barrier_pct", "barrier %", ".1f",
           "share of active warp cycles stalled at __syncthreads: what double buffering removes",
           lambda c, row: c.get("barrier_pct")),
)
METRIC_BY_KEY = {m.key: m for m in METRICS}


@dataclass(frozen=True)
class Claim:
    """What a stage's header says it improves, as a test on the counters: ``metric`` of
    ``stage`` compared (``op``: "<" or ">") with the same metric of stage ``than`` on the same
    problem, or, when ``limit`` is set, at most ``limit`` ("~0": a conflict-free kernel still
    shows a stray replay now and then, so zero is read as under 1% of the wavefronts), or, when
    ``at_least`` is set, at least that (a stage whose precision no earlier stage has: the
    tensor-core stages run tf32, the FFMA ladder fp32, so there is no same-problem row to beat)."""
    stage: str
    metric: str
    op: str
    says: str
    than: str = ""
    limit: Optional[float] = None
    at_least: Optional[float] = None


# Stage 12's tensor pipe floor: an FFMA kernel reads ~0 here.
TF32_MMA_MIN_TENSOR_PCT = 30.0

CLAIMS: tuple[Claim, ...] = (
    Claim("coalesced", "sectors_per_req", "<", "a warp's loads are 128-byte lines", than="naive"),
    Claim("smem_tiled", "ldg_mb", "<", "each global value read once per block, not once per thread", than="coalesced"),
    Claim("blocktile_1d", "fma_pct", ">", "one smem value feeds TM FMAs", than="smem_tiled"),
    Claim("blocktile_2d", "fma_pct", ">", "TMxTN outer product: fewer smem loads per FMA", than="blocktile_1d"),
    Claim("vectorized", "load_width", ">", "float4 global loads: 128-bit loads appear", than="blocktile_2d"),
    Claim("bank_conflict_free", "conflicts_ld_pct", "~0", "no bank conflicts on the fragment loads", limit=1.0),
    # Corrected claim (the header once said "none"): ncu shows 7.4% of store wavefronts still
    # conflicting at 2048^3 on an H100, down from stage 06's 36.6%. The header now says so.
    Claim("bank_conflict_free", "conflicts_st_pct", "<", "padding cuts the transposed-A store conflicts of stage 06 (not to zero)",
          than="vectorized"),
    Claim("warptile", "fma_pct", ">", "warp tiles: fragments reused, the FMA pipe busier", than="bank_conflict_free"),
    Claim("double_buffered", "barrier_pct", "<", "one barrier per step: fewer barrier stalls", than="warptile"),
    # Stage 12 runs tf32 / tf32x3 problems, which the FFMA stages don't: absolute claims.
    Claim("tf32_mma", "tensor_pct", ">=", "the work runs on the tensor cores (mma.sync); FFMA stages show ~0",
          at_least=TF32_MMA_MIN_TENSOR_PCT),
    Claim("tf32_mma", "conflicts_ld_pct", "~0", "padded A and B rows: conflict-free fragment reads (ldmatrix, LDS)",
          limit=1.0),
    # Stage 13 removes stage 12's latency bound: the same tf32 / tf32x3 problem, a busier tensor pipe.
    Claim("wgmma_tma", "tensor_pct", ">", "wgmma from TMA-filled shared memory keeps the tensor pipe busier than "
          "mma.sync", than="tf32_mma"),
)


def evaluate_claim(claim: Claim, value: Optional[float], base: Optional[float]) -> Optional[bool]:
    """True / False, or None when a number is missing."""
    if claim.limit is not None:
        return None if value is None else value <= claim.limit
    if claim.at_least is not None:
        return None if value is None else value >= claim.at_least
    if value is None or base is None:
        return None
    if claim.op == "<":
        return value < base
    if claim.op == ">":
        return value > base
    raise ValueError(f"unknown claim op {claim.op!r}")


def claim_text(claim: Claim, value, base, holds) -> str:
    m = METRIC_BY_KEY[claim.metric]
    word = {True: "holds", False: "FAILS", None: "not measured"}[holds]
    v = "-" if value is None else format(value, m.fmt)
    if claim.limit is not None:
        return f"{word}: {m.header} {v} ~0 (<= {claim.limit:g})"
    if claim.at_least is not None:
        return f"{word}: {m.header} {v} >= {claim.at_least:g}"
    b = "-" if base is None else format(base, m.fmt)
    return f"{word}: {m.header} {v} {claim.op} {claim.than} {b}"


# --- reading ncu's CSV -------------------------------------------------------------------------

_TIME_NS = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}
_PREFIX = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _to_base(value: float, unit: str) -> float:
    """ncu may scale units for display (Kbyte, usecond); back to bytes, nanoseconds, counts."""
    unit = (unit or "").strip()
    if unit in _TIME_NS:
        return value * _TIME_NS[unit]
    if len(unit) > 1 and unit[0] in _PREFIX and unit[1:].isalpha() and unit[1:].islower():
        return value * _PREFIX[unit[0]]
    return value


def _number(text: str) -> Optional[float]:
    t = (text or "").strip().replace(",", "")
    if not t or t.lower() in ("n/a", "nan", "-"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


def parse_raw_csv(text: str) -> list[dict]:
    """``ncu --import R --csv --page raw`` -> one dict per profiled kernel:
    {"id", "kernel_name", "metrics": {metric name: value in base units}}.
    The first row names the columns, the second gives units (its ID cell is empty)."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("==")]
    reader = csv.reader(io.StringIO("\n".join(lines)))
    rows = list(reader)
    if not rows:
        return []
    header = rows[0]
    try:
        id_col, name_col = header.index("ID"), header.index("Kernel Name")
    except ValueError:
        raise ValueError(f"not an ncu raw-page CSV (no ID / Kernel Name columns): {header[:6]}") from None
    units = [""] * len(header)
    body = rows[1:]
    if body and not body[0][id_col].strip():
        units, body = body[0], body[1:]
    metric_cols = [i for i, h in enumerate(header) if "__" in h]
    out = []
    for r in body:
        if len(r) < len(header):
            continue
        metrics = {}
        for i in metric_cols:
            v = _number(r[i])
            metrics[header[i]] = None if v is None else _to_base(v, units[i] if i < len(units) else "")
        out.append({"id": int(_number(r[id_col]) or 0), "kernel_name": r[name_col], "metrics": metrics})
    return out


def split_windows(kernels: list[dict]) -> list[list[dict]]:
    """The kernels of each profiled window: a marker kernel opens one, the kernels after it (up
    to the next marker) are the launch being profiled. Kernels before the first marker belong to
    no window and are dropped."""
    windows: list[list[dict]] = []
    for k in sorted(kernels, key=lambda k: k["id"]):
        if MARKER in k["kernel_name"]:
            windows.append([])
        elif windows:
            windows[-1].append(k)
    return windows


def join_window(kernels: list[dict], chosen: dict) -> dict:
    """Counters of one window's kernels combined per COUNTERS' ``join``; ``chosen`` maps a
    counter key to the ncu metric name collected for it."""
    out = {}
    times = [k["metrics"].get(chosen.get("time_ns", ""), None) or 0.0 for k in kernels]
    for c in COUNTERS:
        name = chosen.get(c.key)
        if name is None:
            continue
        vals = [k["metrics"].get(name) for k in kernels]
        pairs = [(v, t) for v, t in zip(vals, times) if v is not None]
        if not pairs:
            out[c.key] = None
        elif c.join == "sum":
            out[c.key] = sum(v for v, _ in pairs)
        elif c.join == "max":
            out[c.key] = max(v for v, _ in pairs)
        else:
            w = sum(t for _, t in pairs)
            out[c.key] = (sum(v * t for v, t in pairs) / w) if w > 0 else sum(v for v, _ in pairs) / len(pairs)
    return out


def choose_metrics(available: Optional[set]) -> tuple[dict, list[str]]:
    """Counter key -> the first of its names the installed ncu offers (all first names when the
    list is unknown). Returns (chosen, missing counter keys)."""
    chosen, missing = {}, []
    for c in COUNTERS:
        pick = None
        for name in c.names:
            base = name.split(".")[0]
            if available is None or base in available or name.startswith("launch__"):
                pick = name
                break
        if pick is None:
            missing.append(c.key)
        else:
            chosen[c.key] = pick
    return chosen, missing


def parse_query_metrics(text: str) -> set:
    """Base metric names from ``ncu --query-metrics`` (first word of each listing line)."""
    names = set()
    for line in text.splitlines():
        word = line.strip().split(" ")[0] if line.strip() else ""
        if "__" in word and not word.startswith("=="):
            names.add(word)
    return names


# --- rows --------------------------------------------------------------------------------------

def build_rows(manifest: dict, kernels: list[dict]) -> list[dict]:
    """Manifest entries (in launch order) joined with the ncu kernels of their windows."""
    chosen = manifest["chosen"]
    windows = split_windows(kernels)
    profiled = [e for e in manifest["entries"] if e.get("profiled")]
    if len(windows) != len(profiled):
        raise RuntimeError(f"ncu recorded {len(windows)} profiled windows but the child opened {len(profiled)}: "
                           f"the report does not belong to this run (or ncu dropped launches)")
    it = iter(windows)
    rows = []
    for e in manifest["entries"]:
        row = dict(e)
        row["counters"] = {}
        row["ncu_kernels"] = []
        if e.get("profiled"):
            win = next(it)
            row["ncu_kernels"] = [k["kernel_name"] for k in win]
            if not win:
                row["status"], row["reason"] = "error", "no kernel ran inside the profiled window"
            row["counters"] = join_window(win, chosen)
        rows.append(row)
    return rows


def fill_metrics(rows: list[dict]) -> None:
    """Each row's METRICS values and, for stages with a header claim, whether it holds."""
    for row in rows:
        row["metrics"] = {m.key: m.value(row["counters"], row) for m in METRICS}
    for row in rows:
        row["claims"] = []
        if row["family"] != "cuda" or row["status"] != "ok":
            continue
        for claim in (c for c in CLAIMS if c.stage == row["stage"]):
            base = next((r for r in rows if r["family"] == "cuda" and r["stage"] == claim.than and r["status"] == "ok"
                         and (r["shape"], r["precision"], r["beta"]) == (row["shape"], row["precision"], row["beta"])),
                        None)
            value = row["metrics"].get(claim.metric)
            base_value = base["metrics"].get(claim.metric) if base else None
            holds = evaluate_claim(claim, value, base_value)
            row["claims"].append({"metric": claim.metric, "op": claim.op, "than": claim.than, "limit": claim.limit,
                                  "says": claim.says, "value": value, "base": base_value, "holds": holds,
                                  "at_least": claim.at_least,
                                  "text": claim_text(claim, value, base_value, holds)})


def claims_text(row: dict) -> str:
    return "; ".join(c["text"] for c in row.get("claims") or [])


# --- output ------------------------------------------------------------------------------------

def _cell(m: Metric, v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return format(v, m.fmt)


def _display(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    cols = ["kernel", "shape", "status"] + [m.header for m in METRICS] + ["header claim"]
    out = []
    for r in rows:
        status = r["status"] if not r.get("reason") else f"{r['status']}: {r['reason']}"
        out.append([r["kernel"], r["shape"] + ("" if r["precision"] == "fp32" else f" {r['precision']}"), status]
                   + [_cell(m, r["metrics"].get(m.key)) for m in METRICS]
                   + [claims_text(r)])
    return cols, out


def legend_lines() -> list[str]:
    lines = [f"{m.header}: {m.help}" for m in METRICS]
    lines.append("header claim: what the stage's header says it improves, tested on the counters against the "
                 "stage it builds on (~0: at most the limit shown)")
    return lines


def to_table(rows: list[dict], info: dict) -> str:
    cols, body = _display(rows)
    widths = [max(len(c), *(len(b[i]) for b in body)) if body else len(c) for i, c in enumerate(cols)]
    left = {0, 1, 2, len(cols) - 1}

    def fmt(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    out = [*info_lines(info), "", fmt(cols), fmt(["-" * w for w in widths]), *(fmt(b) for b in body), "", "legend:"]
    out += [f"  {ln}" for ln in legend_lines()]
    return "\n".join(out) + "\n"


def to_markdown(rows: list[dict], info: dict) -> str:
    cols, body = _display(rows)
    out = [f"> {ln}  " for ln in info_lines(info)] + [""]
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "|".join("---" if i < 3 or i == len(cols) - 1 else "---:" for i in range(len(cols))) + "|")
    for b in body:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in b) + " |")
    out += ["", "Legend:", ""] + [f"- **{ln.split(': ', 1)[0]}**: {ln.split(': ', 1)[1]}" for ln in legend_lines()]
    return "\n".join(out) + "\n"


def to_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["kernel", "family", "stage", "shape", "precision", "alpha", "beta", "status", "reason",
                *[m.key for m in METRICS], "claim", "claim_holds", "ncu_kernels", "config"])
    for r in rows:
        cl = r.get("claims") or []
        holds = [c["holds"] for c in cl]
        w.writerow([r["kernel"], r["family"], r["stage"], r["shape"], r["precision"], r["alpha"], r["beta"],
                    r["status"], r.get("reason", ""),
                    *["" if r["metrics"].get(m.key) is None else r["metrics"][m.key] for m in METRICS],
                    claims_text(r), "" if not cl or None in holds else all(holds),
                    ";".join(r.get("ncu_kernels", [])), json.dumps(r.get("config") or {}, sort_keys=True)])
    return buf.getvalue()


def to_json(rows: list[dict], info: dict) -> str:
    return json.dumps({"info": info, "legend": {m.key: m.help for m in METRICS},
                       "counters": {c.key: list(c.names) for c in COUNTERS}, "rows": rows}, indent=1) + "\n"


def info_lines(info: dict) -> list[str]:
    out = [f"GPU: {info.get('gpu', '?')}; ncu {info.get('ncu_version', '?')}; clocks not locked (--clock-control none)"]
    if info.get("missing"):
        out.append(f"counters this ncu does not offer (shown as -): {', '.join(info['missing'])}")
    if info.get("command"):
        out.append(f"command: {info['command']}")
    return out


def plot(rows: list[dict], path: str, title: str = "") -> None:
    """The ladder as bars, one panel per quantity: the time, then each metric a stage's header
    claims to improve; the stage making the claim is drawn dark, the one it is compared with
    hatched, so each step's change is visible next to its time."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        raise UsageError("nothing to plot: no row is ok")
    shape = ok[0]["shape"]
    ok = [r for r in ok if r["shape"] == shape]
    panels = [("engine_ms" if any(r["metrics"].get("engine_ms") for r in ok) else "ncu_ms", None)]
    for cl in CLAIMS:
        if not any(p[0] == cl.metric for p in panels):
            panels.append((cl.metric, cl))
    panels = [p for p in panels if any(r["metrics"].get(p[0]) is not None for r in ok)]
    labels = [r["kernel"].replace("cuda.", "") for r in ok]
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(8, 0.6 * len(ok) + 3), 2.0 * len(panels)), sharex=True,
                             squeeze=False)
    axes = axes[:, 0]
    for ax, (key, _) in zip(axes, panels):
        m = METRIC_BY_KEY[key]
        vals = [r["metrics"].get(key) for r in ok]
        claimers = {c.stage for c in CLAIMS if c.metric == key}
        bases = {c.than for c in CLAIMS if c.metric == key and c.than}
        colours = ["black" if r["family"] == "cuda" and r["stage"] in claimers else
                   ("tab:orange" if r["family"] == "triton" else "tab:gray" if r["family"] == "cublas" else "tab:blue")
                   for r in ok]
        bars = ax.bar(range(len(ok)), [v if v is not None else 0 for v in vals], color=colours)
        for b, r in zip(bars, ok):
            if r["family"] == "cuda" and r["stage"] in bases:
                b.set_hatch("//")
                b.set_edgecolor("white")
        for i, v in enumerate(vals):
            ax.text(i, v or 0, "n/a" if v is None else format(v, m.fmt.replace(",", "")), ha="center",
                    va="bottom", fontsize=7)
        ax.set_ylabel(m.header, fontsize=8)
        if key in ("engine_ms", "ncu_ms", "ldg_mb"):
            if all(v is None or v > 0 for v in vals) and any(vals):
                ax.set_yscale("log")
        ax.tick_params(labelsize=7)
    axes[-1].set_xticks(range(len(ok)))
    axes[-1].set_xticklabels(labels, rotation=40, ha="right", fontsize=7)
    fig.suptitle(title or f"Why each stage is faster: Nsight Compute counters at {shape} "
                          f"(dark: the stage whose header claims it; hatched: the stage it is compared with)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# --- running ncu -------------------------------------------------------------------------------

class NcuUnavailable(UsageError):
    """ncu can't profile here (missing, or the driver forbids counters); one line, exit 2."""


def find_ncu(explicit: Optional[str]) -> str:
    path = shutil.which(explicit or "ncu")
    if not path:
        where = f"--ncu {explicit}" if explicit else "ncu (Nsight Compute) on PATH"
        raise NcuUnavailable(f"{where} not found: the profile needs Nsight Compute on a GPU machine "
                             f"(it ships with the CUDA toolkit: add its bin directory to PATH or pass --ncu)")
    return path


def _counters_forbidden(text: str) -> bool:
    return "ERR_NVGPUCTRPERM" in text


PERM_MESSAGE = ("ncu may not read the GPU performance counters here (ERR_NVGPUCTRPERM): the driver restricts "
                "them to admin users; see NVIDIA's ERR_NVGPUCTRPERM page (NVreg_RestrictProfilingToAdminUsers=0) "
                "or run as root")


def _unknown_metric(log: str) -> Optional[str]:
    import re
    m = re.search(r"[Ff]ailed to find metric\s+(?:regex:)?([A-Za-z0-9_.]+)", log)
    return m.group(1) if m else None


def ncu_version(ncu: str) -> str:
    try:
        out = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return "?"
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    return lines[-1] if lines else "?"


def query_available(ncu: str) -> Optional[set]:
    """Base metric names the installed ncu offers for this GPU; None when it can't say (every
    first-choice name is then requested as is)."""
    try:
        p = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    if _counters_forbidden(p.stdout + p.stderr):
        raise NcuUnavailable(PERM_MESSAGE)
    names = parse_query_metrics(p.stdout)
    return names or None


def ncu_profile_command(ncu: str, metrics: list[str], report_base: str, child: list[str]) -> list[str]:
    return [ncu, "--clock-control", "none", "--target-processes", "all", "--profile-from-start", "off",
            "--metrics", ",".join(metrics), "--export", report_base, "--force-overwrite", *child]


def import_csv(ncu: str, report: str) -> str:
    for extra in (["--print-units", "base"], []):
        p = subprocess.run([ncu, "--import", report, "--csv", "--page", "raw", *extra],
                           capture_output=True, text=True, timeout=300)
        if p.returncode == 0 and p.stdout.strip():
            return p.stdout
    raise RuntimeError(f"ncu --import {report} failed: {(p.stderr or p.stdout).strip()[-500:]}")


# --- the child: runs under ncu -----------------------------------------------------------------

def _marker():
    """A one-thread Triton kernel whose only job is its name: it opens each profiled window."""
    import triton
    import triton.language as tl

    @triton.jit
    def gemm_ladder_profile_marker(x_ptr):
        tl.store(x_ptr, tl.load(x_ptr) + 1)

    import torch
    buf = torch.zeros(1, device="cuda", dtype=torch.int32)

    def fire():
        gemm_ladder_profile_marker[(1,)](buf)
    fire()  # compile now: the first call's JIT must not happen inside a window
    torch.cuda.synchronize()
    return fire


def child_main(spec_path: str) -> int:
    """Under ncu: for each entry, prepare (outside any window), then the checked launch inside
    a cudaProfilerStart/Stop window opened by the marker, then the check. Writes the manifest."""
    import torch
    from ..harness import registry, runner
    from ..harness import check as _check
    from ..harness.inputs import make_inputs
    from ..harness.problem import Problem
    with open(spec_path) as f:
        spec = json.load(f)
    fire = _marker()
    entries = []
    for item in spec["entries"]:
        k = registry.get(item["kernel"])
        p = Problem(**item["problem"])
        e = _entry(k, p)
        why = k.why_not(p)
        if why:
            e.update(status="unsupported", reason=why)
            entries.append(e)
            continue
        try:
            inputs = make_inputs(p)
            launch, _ = runner.prepare(k, p, inputs, k.parse_options(item.get("options") or {}))
            inputs.reset_c(poison=True)
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            try:
                fire()
                launch()
                torch.cuda.synchronize()
            finally:
                torch.cuda.profiler.stop()
            e["profiled"] = True
            res = _check.check(p, inputs.C, inputs.ref, inputs.bound)
            e["config"] = runner.config_of(launch)
            e["rel_err"] = res.rel_err
            e.update(status="ok" if res.ok else "FAILED", reason="" if res.ok else res.message)
        except Exception as exc:  # one kernel's trouble is its row, as in the runner
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            e.update(status="error", reason=f"{type(exc).__name__}: {first}"[:300])
        entries.append(e)
        print(f"profiled {k.name} {p.shape} {p.precision}: {e['status']}", file=sys.stderr, flush=True)
    out = dict(spec, entries=entries)
    write_text_atomically(spec["manifest"], json.dumps(out, indent=1))
    return 0


def _entry(k, p) -> dict:
    return {"kernel": k.name, "family": k.family, "stage": k.stage, "shape": p.shape, "M": p.M, "N": p.N,
            "K": p.K, "precision": p.precision, "alpha": p.alpha, "beta": p.beta, "seed": p.seed,
            "status": "", "reason": "", "config": {}, "profiled": False}


# --- the parent --------------------------------------------------------------------------------

SUFFIX_FORMATS = {".json": "json", ".csv": "csv", ".md": "markdown", ".markdown": "markdown"}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m compare.outputs.profile",
        description="Nsight Compute counters beside every stage's time: why each stage of the ladder is faster.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="metrics:\n" + "\n".join(f"  {ln}" for ln in legend_lines()) +
               "\n\nexit codes: 0 all ok; 1 a kernel FAILED or errored; 2 could not start (no ncu, no GPU, "
               "counters not permitted, bad arguments)")
    p.add_argument("--stage", default="all", help="a group, a stage name or all (as python -m compare)")
    p.add_argument("--family", action="append", metavar="F", help="cuda | triton | cublas; repeatable or comma-separated")
    p.add_argument("--kernel", action="append", metavar="NAME", help="only these kernels (registry names)")
    p.add_argument("--shape", action="append", metavar="MxNxK", help=f"repeatable (default {DEFAULT_SHAPE})")
    p.add_argument("--precision", action="append", metavar="P", help="fp32 | tf32 | tf32x3 (default fp32)")
    p.add_argument("--opt", action="append", metavar="[KERNEL:]NAME=VALUE",
                   help="a kernel option, as python -m compare --opt (repeatable): profile a variant")
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--beta", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--format", choices=("table", "csv", "json", "markdown"), default=None,
                   help="default: from the -o suffix (.json, .csv, .md), else table")
    p.add_argument("--output", "-o", metavar="FILE")
    p.add_argument("--plot", metavar="FILE.png|.svg", help="bars of the ladder: time and each claimed metric")
    p.add_argument("--raw-dir", metavar="DIR", help="also keep ncu's report (.ncu-rep) and raw CSV here")
    p.add_argument("--no-time", action="store_true", help="counters only: skip the engine's timing")
    p.add_argument("--budget", type=float, default=1.0, help="engine seconds per kernel (default 1.0)")
    p.add_argument("--ncu", metavar="PATH", help="the ncu executable (default: ncu on PATH)")
    p.add_argument("--from-json", metavar="FILE", help="do not profile: render a JSON this command wrote")
    p.add_argument("--_child", metavar="SPEC", help=argparse.SUPPRESS)
    return p


def _split(values) -> list:
    from ..harness.problem import split_flags
    return split_flags(values)


def _validate_output(args) -> None:
    for path, what in ((args.output, "-o"), (args.plot, "--plot")):
        if path:
            parent = os.path.dirname(os.path.abspath(path))
            if os.path.isdir(path) or not os.path.isdir(parent) or not os.access(parent, os.W_OK):
                raise UsageError(f"{what} {path}: not a writable file path")
    if args.raw_dir and not os.path.isdir(args.raw_dir):
        raise UsageError(f"--raw-dir {args.raw_dir}: not a directory")
    implied = SUFFIX_FORMATS.get(os.path.splitext(args.output or "")[1].lower())
    if args.format and implied and implied != args.format:
        raise UsageError(f"--format {args.format} contradicts -o {args.output}")
    args.format = args.format or implied or "table"
    if args.plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError as exc:
            raise UsageError(f"--plot needs matplotlib ({exc})") from None


def select_pairs(args) -> list:
    """(kernel, problem) pairs for the selection flags, checked before any GPU work."""
    from ..harness import registry
    from ..harness.problem import Problem, ProblemError, parse_precisions, parse_shape
    families = _split(args.family) or None
    try:
        kernels = registry.select(args.stage, families)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.kernel:
        names = _split(args.kernel)
        known = {k.name for k in kernels}
        bad = [n for n in names if n not in known]
        if bad:
            raise UsageError(f"--kernel {bad[0]} is not in the selection (--stage {args.stage}); "
                             f"selected: {', '.join(sorted(known))}")
        kernels = [k for k in kernels if k.name in names]
    pairs = []
    try:
        precisions = parse_precisions(args.precision)
        for text in args.shape or [DEFAULT_SHAPE]:
            M, N, K = parse_shape(text)
            for pr in precisions:
                p = Problem(M, N, K, precision=pr, alpha=args.alpha, beta=args.beta, seed=args.seed)
                pairs += [(k, p) for k in kernels if not k.why_not(p)]
    except ProblemError as e:
        raise UsageError(str(e)) from None
    if not pairs:
        raise UsageError("nothing to profile: every selected kernel is unsupported on every shape")
    return pairs


def select_options(args, pairs) -> None:
    """--opt flags over the selected kernels -> args.raw_options (text, for the child under ncu)
    and args.parsed_options (for the engine's timing run); a bad flag is a UsageError here,
    before any GPU work."""
    from ..harness import registry
    selected = list({k.name: k for k, _ in pairs}.values())
    args.raw_options = registry.opt_flags(args.opt, selected)
    by_name = {k.name: k for k in selected}
    args.parsed_options = {n: by_name[n].parse_options(raw) for n, raw in args.raw_options.items()}


def _write_text(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def render(rows: list[dict], info: dict, fmt: str) -> str:
    if fmt == "json":
        return to_json(rows, info)
    if fmt == "csv":
        return to_csv(rows)
    if fmt == "markdown":
        return to_markdown(rows, info)
    return to_table(rows, info)


def profile(pairs, args) -> tuple[list[dict], dict]:
    """Run the child under ncu, read the report back, join; then time in this process."""
    ncu = find_ncu(args.ncu)
    from ..harness.inputs import gpu_available
    if not gpu_available():
        raise UsageError("no CUDA GPU found (torch.cuda.is_available() is False): ncu profiles GPU kernels")
    available = query_available(ncu)
    chosen, missing = choose_metrics(available)
    metrics = list(dict.fromkeys(chosen.values()))
    with tempfile.TemporaryDirectory(prefix="gemm-profile-") as tmp:
        spec = {"manifest": os.path.join(tmp, "manifest.json"), "chosen": chosen, "missing": missing,
                "entries": [{"kernel": k.name, "problem": {"M": p.M, "N": p.N, "K": p.K, "precision": p.precision,
                                                          "alpha": p.alpha, "beta": p.beta, "seed": p.seed},
                             "options": args.raw_options.get(k.name, {})}  # text: the child parses them
                            for k, p in pairs]}
        spec_path = os.path.join(tmp, "spec.json")
        _write_text(spec_path, json.dumps(spec))
        report_base = os.path.join(tmp, "profile")
        cmd = ncu_profile_command(ncu, metrics, report_base,
                                  [sys.executable, "-m", "compare.outputs.profile", "--_child", spec_path])
        print(f"profiling {len(pairs)} launch(es) under ncu ...", file=sys.stderr, flush=True)
        for _ in range(len(COUNTERS)):
            proc = subprocess.run(cmd, capture_output=True, text=True)
            log = proc.stdout + proc.stderr
            if _counters_forbidden(log):
                raise NcuUnavailable(PERM_MESSAGE)
            # A name --query-metrics listed but this ncu still refuses: drop it and say so.
            bad = _unknown_metric(log) if proc.returncode != 0 else None
            if not bad or bad not in metrics:
                break
            metrics.remove(bad)
            for key in [k for k, v in chosen.items() if v == bad]:
                del chosen[key]
                missing.append(key)
            cmd = ncu_profile_command(ncu, metrics, report_base,
                                      [sys.executable, "-m", "compare.outputs.profile", "--_child", spec_path])
        if proc.returncode != 0 or not os.path.exists(spec["manifest"]):
            tail = "\n".join(log.strip().splitlines()[-15:])
            raise RuntimeError(f"ncu run failed (exit {proc.returncode}); its last lines:\n{tail}")
        with open(spec["manifest"]) as f:
            manifest = json.load(f)
        report = report_base + ".ncu-rep"
        raw = import_csv(ncu, report)
        if args.raw_dir:
            _write_atomically(os.path.join(args.raw_dir, "profile.ncu-rep"), lambda t: shutil.copyfile(report, t))
            write_text_atomically(os.path.join(args.raw_dir, "raw.csv"), raw)
            write_text_atomically(os.path.join(args.raw_dir, "manifest.json"), json.dumps(manifest, indent=1))
    rows = build_rows(manifest, parse_raw_csv(raw))
    if not args.no_time:
        _time_rows(rows, pairs, args)
    fill_metrics(rows)
    from ..harness import gpuinfo
    env = gpuinfo.environment().as_dict()
    info = {"gpu": env.get("gpu"), "ncu_version": ncu_version(ncu), "missing": missing, "chosen": chosen,
            "env": env, "command": shlex.join(["python", "-m", "compare.outputs.profile", *args.argv]),
            "ncu_command": shlex.join(cmd[:-5] + ["python", "-m", "compare.outputs.profile", "--_child", "SPEC"])}
    return rows, info


def _time_rows(rows: list[dict], pairs, args) -> None:
    """The suite's own numbers for the same kernels: compare.harness.runner.run in this process."""
    from ..harness import runner
    print(f"timing {len(pairs)} kernel(s) with the engine ...", file=sys.stderr, flush=True)
    results = runner.run(runner.baseline_pairs(pairs), measure_kw={"budget_s": args.budget},
                         options=args.parsed_options)
    by = {(r.kernel, r.shape, r.precision): r for r in results}
    for row in rows:
        r = by.get((row["kernel"], row["shape"], row["precision"]))
        if r is None:
            continue
        row["engine_median_ms"], row["engine_status"] = r.median_ms, r.status
        row["pct_cublas"] = r.pct_cublas
        if r.status != "ok" and row["status"] == "ok":
            row["status"], row["reason"] = r.status, f"timing run: {r.reason}"


def main(argv: Optional[list] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    if args._child:
        return child_main(args._child)
    try:
        _validate_output(args)
        if args.from_json:
            try:
                with open(args.from_json) as f:
                    data = json.load(f)
                rows, info = data["rows"], data["info"]
            except (OSError, ValueError, KeyError) as e:
                raise UsageError(f"--from-json {args.from_json}: {e}") from None
        else:
            pairs = select_pairs(args)
            select_options(args, pairs)
            rows, info = profile(pairs, args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:   # the profile started and went wrong (ncu failed, report does not match)
        print(f"error: {e}", file=sys.stderr)
        return 1
    if args.plot and not any(r["status"] == "ok" for r in rows):
        print(f"error: --plot {args.plot}: no row is ok, nothing to draw", file=sys.stderr)
        return 1
    text = render(rows, info, args.format)
    if args.output:
        write_text_atomically(args.output, text)
    else:
        sys.stdout.write(text)
    if args.plot:
        _write_atomically(args.plot, lambda t: plot(rows, t))
    return 1 if any(r["status"] in ("FAILED", "error") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
