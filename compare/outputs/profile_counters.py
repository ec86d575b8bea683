"""Nsight Compute's counters for ``python -m compare --profile``: what is read (``COUNTERS``), the
metrics derived from it (``METRICS``), the ladder's claims checked on them (``claims()``, read from
compare/harness/registry.py's stages()), and how ncu's raw CSV becomes one row per profiled launch.
Pure functions of text and dicts: no GPU, no ncu."""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Callable, Optional

from ..harness.registry import Claim, stages

MARKER = "gemm_ladder_profile_marker"


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


# ncu's warp stall reasons (smsp__average_warps_issue_stalled_<reason>_per_issue_active): warps
# waiting for that reason per issued instruction, the main ones for a GEMM's main loop.
STALL_REASONS = ("wait", "long_scoreboard", "short_scoreboard", "math_pipe_throttle", "mio_throttle",
                 "not_selected", "dispatch_stall", "barrier", "lg_throttle", "no_instruction",
                 "branch_resolving")


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
    # Shared-memory wavefronts against the pipe's peak: what a warp-level mma.sync kernel reads
    # its fragments through.
    Counter("smem_pct", ("l1tex__data_pipe_lsu_wavefronts_mem_shared.avg.pct_of_peak_sustained_active",), "mean"),
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
    # Where issue slots go (a kernel short of its pipe's peak is either issuing something else or
    # stalled): instructions issued, the FFMAs among them, and the stall reasons per issued one.
    Counter("issue_pct", ("smsp__issue_active.avg.pct_of_peak_sustained_active",), "mean"),
    Counter("inst", ("smsp__inst_executed.sum",)),
    Counter("ffma_thread_inst", ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",)),
    *(Counter(f"stall_{r}", (f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio",), "mean")
      for r in STALL_REASONS),
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
    """Every operand crosses DRAM once: read A and B, write C (and read C when beta != 0); the
    speed of light's count (compare.harness.sol.min_bytes), so "x min" and % SOL agree."""
    from ..harness.sol import min_bytes
    return min_bytes(M, N, K, beta)


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


def _ffma_share(c, row):
    """Per cent of the warp instructions issued that were FFMAs (ncu counts FFMAs per thread)."""
    r = _ratio(c.get("ffma_thread_inst"), c.get("inst"))
    return None if r is None else 100 * r / 32


def _top_stalls(c, row, n: int = 3):
    """The n largest stall reasons, "reason ratio" per issued instruction."""
    vals = sorted(((c.get(f"stall_{r}"), r) for r in STALL_REASONS if c.get(f"stall_{r}") is not None),
                  reverse=True)
    return None if not vals else ", ".join(f"{r} {v:.2f}" for v, r in vals[:n])


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
    Metric("smem_pct", "smem %", ".1f",
           "shared-memory data pipe utilization (ncu's LSU shared-memory wavefronts) while the SMs were active: the "
           "bandwidth a warp-level mma.sync kernel reads every fragment through",
           lambda c, row: c.get("smem_pct")),
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
    Metric("issue_pct", "issue %", ".1f",
           "cycles a scheduler issued an instruction, of its active cycles: below 100 the kernel waits on something "
           "(the stalls column says on what); an FFMA kernel at its peak issues an FFMA nearly every cycle",
           lambda c, row: c.get("issue_pct")),
    Metric("ffma_share", "FFMA/inst %", ".0f",
           "FFMAs among the warp instructions issued: the rest (loads, address arithmetic, branches) take issue slots "
           "an FFMA kernel would spend on math",
           _ffma_share),
    Metric("stalls", "stalls/issue", "s",
           "the three largest reasons warps were stalled, in warps per issued instruction (ncu's "
           "smsp__average_warps_issue_stalled_*_per_issue_active): wait = fixed-latency dependencies, "
           "long/short_scoreboard = global/shared-memory results, math_pipe_throttle = the pipe is busy",
           _top_stalls),
)
METRIC_BY_KEY = {m.key: m for m in METRICS}


def claims() -> tuple[Claim, ...]:
    """The stage ladder's claims, in ladder order (declared with the stages, as the families load)."""
    return tuple(c for st in stages() for c in st.claims)


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
        for claim in (c for c in claims() if c.stage == row["stage"]):
            base = next((r for r in rows if r["family"] == "cuda" and r["stage"] == claim.than and r["status"] == "ok"
                         and (r["shape"], r["precision"], r["beta"]) == (row["shape"], row["precision"], row["beta"])),
                        None)
            value = row["metrics"].get(claim.metric)
            base_value = base["metrics"].get(claim.metric) if base else None
            holds = evaluate_claim(claim, value, base_value)
            row["claims"].append({"metric": claim.metric, "op": claim.op, "than": claim.than, "limit": claim.limit,
                                  "says": claim.says, "value": value, "base": base_value, "holds": holds,
                                  "text": claim_text(claim, value, base_value, holds)})


def claims_text(row: dict) -> str:
    return "; ".join(c["text"] for c in row.get("claims") or [])
