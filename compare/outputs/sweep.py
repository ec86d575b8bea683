"""The sweep view: how each kernel does against cuBLAS over many shapes, as one line per kernel.

A sweep runs every kernel on a set of shapes (``compare.harness.shapes``); the per-shape rows are the
measurement, and this module condenses them: ``summarize`` gives each (kernel, precision) its
geometric-mean, worst and best % of cuBLAS and its failure count, ``render_summary`` prints that
and ``plot_sweep`` draws it (compare/outputs/sweep_plot.py). The geometric mean is the mean that treats 50% -> 100% and
100% -> 200% as the same step, so one shape with a huge ratio cannot dominate.

Rows are ``compare.harness.runner.Result`` objects or the dicts ``--format json`` wrote (same keys).
"""
from __future__ import annotations

import csv
import io
import json
import math
import textwrap
from typing import Any, Iterable, Optional

from ..harness.errors import UsageError
from ..harness.status import NO_NUMBER, NOT_RUN, field, usable

FORMATS = ("table", "markdown", "csv", "json")

# The keys of one summary entry, in display order.
FIELDS = ("kernel", "family", "precision", "n_shapes", "n_ok", "n_failed", "n_not_run", "n_timed",
          "flagged", "failed_shapes", "geomean_pct", "p5_pct", "p50_pct", "p95_pct", "worst_pct", "worst_shape", "best_pct",
          "best_shape", "sol_n", "sol_flagged", "sol_geomean_pct",
          *(f"sol_{b}_{k}" for b in ("compute", "memory") for k in ("n", "geomean_pct", "p5_pct", "p50_pct", "p95_pct")))
BOUNDS = ("compute", "memory")

_BAD, _NOT_RUN = NO_NUMBER, NOT_RUN


_get = field


def pct_of_cublas(row: Any) -> Optional[float]:
    """The row's % of cuBLAS when it is a usable number (a positive finite value), else None."""
    return usable(row, "pct_cublas")


def sol_pct(row: Any) -> Optional[float]:
    """The row's % of the speed of light when it is ok and a usable number, else None."""
    return usable(row, "pct_sol", ok_only=True)


def _sol_stats(rows: list) -> dict:
    """% SOL over a kernel's rows: all of them (geomean) and split by the roof that bounds each
    row (count, geomean and the p5/p50/p95 of its cumulative distribution)."""
    out = {"sol_n": 0, "sol_flagged": sum(bool(_get(r, "sol_flag")) for r in rows), "sol_geomean_pct": None}
    every = [p for r in rows if (p := sol_pct(r)) is not None]
    out["sol_n"], out["sol_geomean_pct"] = len(every), geomean(every)
    for b in BOUNDS:
        vals = [p for r in rows if _get(r, "bound") == b and (p := sol_pct(r)) is not None]
        out[f"sol_{b}_n"] = len(vals)
        out[f"sol_{b}_geomean_pct"] = geomean(vals)
        for q in (5, 50, 95):
            out[f"sol_{b}_p{q}_pct"] = percentile(vals, q)
    return out


def is_cublas(row: Any) -> bool:
    return _get(row, "family") == "cublas"


def geomean(values: Iterable[float]) -> Optional[float]:
    values = list(values)
    if not values:
        return None
    return math.exp(math.fsum(math.log(v) for v in values) / len(values))


def percentile(values: Iterable[float], q: float) -> Optional[float]:
    """The q-th percentile (0..100) with linear interpolation between order statistics (numpy's
    default), so p50 of an even count is the mean of the middle two; None for no values."""
    v = sorted(values)
    if not v:
        return None
    pos = (len(v) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def summarize(results: Iterable[Any]) -> list[dict]:
    """One entry per (kernel, precision), in the order the kernels first appear (the ladder order
    the runner used). cuBLAS is left out of the % of cuBLAS, but where its rows carry a % of the
    speed of light it gets an entry of its own (last, ``n_timed`` 0) for its ``sol_*`` figures.
    Entry keys: ``FIELDS``.

    ``n_shapes`` distinct shapes with a row; ``n_ok`` rows that passed the check; ``n_failed``
    rows FAILED or error (``failed_shapes`` names them, ``flagged`` is True when there is any);
    ``n_not_run`` unsupported or skipped rows; ``n_timed`` rows with a % of cuBLAS, over which
    ``geomean_pct``, the percentiles ``p5_pct``/``p50_pct``/``p95_pct`` (over thousands of shapes a
    kernel's typical and tail behaviour: 5% of its shapes are below p5), ``worst_pct``/``worst_shape``
    and ``best_pct``/``best_shape`` are taken. ``sol_*``: the % of the speed of light over the rows
    that have one (compare.harness.sol), all of them and per bound (compute / memory).
    A kernel with no timed row has None for those, never 0 or NaN: nothing was measured."""
    groups: dict[tuple, list] = {}
    baseline: dict[tuple, list] = {}
    for r in results:
        (baseline if is_cublas(r) else groups).setdefault((_get(r, "kernel"), _get(r, "precision")), []).append(r)
    # cuBLAS after the kernels: the row that tells how far the vendor is from the machine
    groups.update({k: rows for k, rows in baseline.items() if any(sol_pct(r) is not None for r in rows)})

    summary = []
    for (kernel, precision), rows in groups.items():
        failed = [r for r in rows if _get(r, "status") in _BAD]
        timed = [(p, _get(r, "shape")) for r in rows if (p := pct_of_cublas(r)) is not None and not is_cublas(r)]
        entry = {
            "kernel": kernel,
            "family": _get(rows[0], "family"),
            "precision": precision,
            "n_shapes": len({_get(r, "shape") for r in rows}),
            "n_ok": sum(_get(r, "status") == "ok" for r in rows),
            "n_failed": len(failed),
            "n_not_run": sum(_get(r, "status") in _NOT_RUN for r in rows),
            "n_timed": len(timed),
            "flagged": bool(failed),
            "failed_shapes": [_get(r, "shape") for r in failed],
            "geomean_pct": None, "p5_pct": None, "p50_pct": None, "p95_pct": None, "worst_pct": None, "worst_shape": None,
            "best_pct": None, "best_shape": None,
        }
        if timed:
            # min/max keep the first of equal values: the earlier shape in the sweep's order.
            worst = min(timed, key=lambda t: t[0])
            best = max(timed, key=lambda t: t[0])
            entry.update(geomean_pct=geomean(p for p, _ in timed), worst_pct=worst[0], worst_shape=worst[1],
                         best_pct=best[0], best_shape=best[1],
                         **{f"p{q}_pct": percentile((p for p, _ in timed), q) for q in (5, 50, 95)})
        entry.update(_sol_stats(rows))
        summary.append(entry)
    return summary


def _fmt_pct(p: Optional[float]) -> str:
    return "-" if p is None else f"{p:.1f}"


def _display_rows(summary: list[dict], pad: bool) -> tuple[list[str], list[list[str]]]:
    header = ["kernel", "precision", "shapes", "ok", "failed", "timed", "geomean %", "p5 %", "p50 %", "p95 %",
              "worst %", "worst shape", "best %", "best shape"]
    rows = []
    for e in summary:
        if e["family"] == "cublas":
            continue
        # pad: the plain table right-aligns the column, so unflagged counts keep the digits lined up.
        failed = str(e["n_failed"]) + (" !" if e["flagged"] else "  " if pad else "")
        rows.append([e["kernel"], e["precision"], str(e["n_shapes"]), str(e["n_ok"]), failed,
                     str(e["n_timed"]), _fmt_pct(e["geomean_pct"]), _fmt_pct(e["p5_pct"]), _fmt_pct(e["p50_pct"]),
                     _fmt_pct(e["p95_pct"]), _fmt_pct(e["worst_pct"]),
                     e["worst_shape"] or "-", _fmt_pct(e["best_pct"]), e["best_shape"] or "-"])
    return header, rows


def _sol_rows(summary: list[dict]) -> tuple[list[str], list[list[str]]]:
    """% of the speed of light per kernel (cuBLAS too), split by the roof that bounds each row
    (the overall geomean, sol_geomean_pct, is in the JSON/CSV: it mixes the two)."""
    header = ["kernel", "prec"]
    for b in BOUNDS:
        c = b[0]
        header += [f"{c} n", f"{c} geo", f"{c} p5", f"{c} p50", f"{c} p95"]
    header.append(">100%")
    rows = []
    for e in summary:
        if not e.get("sol_n"):
            continue
        line = [e["kernel"], e["precision"]]
        for b in BOUNDS:
            line += [str(e[f"sol_{b}_n"])] + [_fmt_pct(e[f"sol_{b}_{k}"]) for k in ("geomean_pct", "p5_pct",
                                                                                    "p50_pct", "p95_pct")]
        line.append(str(e["sol_flagged"]) + (" !" if e["sol_flagged"] else ""))
        rows.append(line)
    return header, rows


def _notes(summary: list[dict]) -> list[str]:
    kernels = [e for e in summary if e["family"] != "cublas"]
    notes = ["% of cuBLAS at the same shape and precision, over the shapes each kernel was timed on; "
             "p5/p50/p95: percentiles over those shapes (5% of them are below p5)"]
    if any(e["flagged"] for e in kernels):
        notes.append("! FAILED or error on some shapes: its % are over the shapes it passed only")
    if any(e["n_timed"] == 0 for e in kernels):
        notes.append("- no timed rows: not timed (a --check or --interpret run), all failed, unsupported or skipped, "
                     "or no cuBLAS row at those shapes")
    return notes


def _sol_notes(summary: list[dict]) -> list[str]:
    notes = ["% SOL: the speed of light (max of FLOPs / measured pipe peak and minimum DRAM bytes / measured "
             "copy bandwidth, at each row's clock) over the measured time; c: compute-bound rows, m: memory-bound "
             "rows (n of them, geo: geometric mean); p5/p50/p95: percentiles of their cumulative distribution"]
    if any(e["sol_flagged"] for e in summary):
        notes.append(">100% !: rows above 100% of SOL by more than the noise (a wrong peak or byte count; "
                     "sol_flag in the rows)")
    return notes


# A summary line is at most this wide (the table's width, compare.outputs.report.TABLE_WIDTH).
WIDTH = 120


def _plain(title: str, header: list[str], rows: list[list[str]], left: set) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]

    def line(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    return [title, line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]


def _wrap(notes: list[str]) -> list[str]:
    return [part for n in notes for part in textwrap.wrap(n, WIDTH, subsequent_indent="  ", break_on_hyphens=False)]


def render_summary(summary: list[dict], fmt: str = "table") -> str:
    """``summary`` (from :func:`summarize`) as text: ``table`` (aligned plain text, lines of at
    most ``WIDTH``: the % of cuBLAS, the worst and best shapes, and the % of the speed of light,
    as three blocks), ``markdown``, ``csv`` (columns ``FIELDS``, failed shapes joined by ';') or
    ``json``."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown summary format {fmt!r}; known: {', '.join(FORMATS)}")
    if fmt == "json":
        return json.dumps(summary, indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        for e in summary:
            row = {k: e.get(k) for k in FIELDS}
            row["failed_shapes"] = ";".join(e.get("failed_shapes") or [])
            w.writerow({k: ("" if v is None else v) for k, v in row.items()})
        return buf.getvalue()
    header, rows = _display_rows(summary, pad=fmt == "table")
    sol_header, sol_rows = _sol_rows(summary)
    if not rows and not sol_rows:
        return "sweep summary: no kernel rows (only cuBLAS, or nothing ran)\n"
    notes = _notes(summary) if rows else []
    if fmt == "markdown":
        out = []
        if rows:
            right = {i for i, h in enumerate(header) if h not in ("kernel", "precision", "worst shape", "best shape")}
            out = ["### Sweep summary", "",
                   "| " + " | ".join(header) + " |",
                   "|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|"]
            out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
            out += [""] + [f"{n}  " for n in notes]
        if sol_rows:
            out += ["", "### Speed of light", "", "| " + " | ".join(sol_header) + " |",
                    "|" + "|".join("---" if i < 2 else "---:" for i in range(len(sol_header))) + "|"]
            out += ["| " + " | ".join(r) + " |" for r in sol_rows]
            out += [""] + [f"{n}  " for n in _sol_notes(summary)]
        return "\n".join(out) + "\n"
    out = []
    if rows:
        # the worst and best shapes in a block of their own: with them, one line would be ~150 wide
        counts = [r[:11] + [r[12]] for r in rows]
        out += _plain("sweep summary", header[:11] + [header[12]], counts, {0, 1})
        out += [""] + _plain("worst and best shapes", [header[i] for i in (0, 1, 10, 11, 12, 13)],
                             [[r[i] for i in (0, 1, 10, 11, 12, 13)] for r in rows], {0, 1, 3, 5})
        out += [""] + _wrap(notes)
    if sol_rows:
        out += ([""] if out else []) + _plain("speed of light: % SOL per kernel (cuBLAS too), split by bound",
                                              sol_header, sol_rows, {0, 1})
        out += [""] + _wrap(_sol_notes(summary))
    return "\n".join(out) + "\n"


def plot_sweep(results: Iterable[Any], path: str, title: str = "", env: Optional[dict] = None) -> str:
    """Draw the sweep into ``path`` (.png, .svg, .pdf), written atomically; returns ``path``
    (compare/outputs/sweep_plot.py draws it: imported here when drawing, as it reads this module's
    summary and brings in matplotlib)."""
    from . import sweep_plot
    return sweep_plot.plot_sweep(results, path, title, env)
