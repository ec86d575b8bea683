"""The sweep view: how each kernel does against cuBLAS over many shapes, as one line per kernel.

A sweep runs every kernel on a set of shapes (``compare.harness.shapes``); the per-shape rows are the
measurement, and this module condenses them: ``summarize`` gives each (kernel, precision) its
geometric-mean, worst and best % of cuBLAS and its failure count, ``render_summary`` prints that
and ``plot_sweep`` draws it. The geometric mean is the mean that treats 50% -> 100% and
100% -> 200% as the same step, so one shape with a huge ratio cannot dominate.

Rows are ``compare.harness.runner.Result`` objects or the dicts ``--format json`` wrote (same keys).
"""
from __future__ import annotations

import csv
import io
import json
import math
import os

from dataclasses import dataclass
from typing import Any, Iterable, Optional

from ..harness.errors import UsageError
from ..harness.files import write_atomically
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


def _pct(row: Any) -> Optional[float]:
    """The row's % of cuBLAS when it is a usable number (a positive finite value), else None."""
    return usable(row, "pct_cublas")


def _sol(row: Any) -> Optional[float]:
    """The row's % of the speed of light when it is ok and a usable number, else None."""
    return usable(row, "pct_sol", ok_only=True)


def _sol_stats(rows: list) -> dict:
    """% SOL over a kernel's rows: all of them (geomean) and split by the roof that bounds each
    row (count, geomean and the p5/p50/p95 of its cumulative distribution)."""
    out = {"sol_n": 0, "sol_flagged": sum(bool(_get(r, "sol_flag")) for r in rows), "sol_geomean_pct": None}
    every = [p for r in rows if (p := _sol(r)) is not None]
    out["sol_n"], out["sol_geomean_pct"] = len(every), geomean(every)
    for b in BOUNDS:
        vals = [p for r in rows if _get(r, "bound") == b and (p := _sol(r)) is not None]
        out[f"sol_{b}_n"] = len(vals)
        out[f"sol_{b}_geomean_pct"] = geomean(vals)
        for q in (5, 50, 95):
            out[f"sol_{b}_p{q}_pct"] = percentile(vals, q)
    return out


def _is_cublas(row: Any) -> bool:
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
        (baseline if _is_cublas(r) else groups).setdefault((_get(r, "kernel"), _get(r, "precision")), []).append(r)
    # cuBLAS after the kernels: the row that tells how far the vendor is from the machine
    groups.update({k: rows for k, rows in baseline.items() if any(_sol(r) is not None for r in rows)})

    summary = []
    for (kernel, precision), rows in groups.items():
        failed = [r for r in rows if _get(r, "status") in _BAD]
        timed = [(p, _get(r, "shape")) for r in rows if (p := _pct(r)) is not None and not _is_cublas(r)]
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
    import textwrap
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


def _shape_order(rows: list, shapes: set) -> list[str]:
    """Shapes from hardest to easiest for cuBLAS (its TFLOP/s, geometric mean over the
    precisions it ran): a kernel's weak spots show up where the library also finds it hard, or
    stand out where it does not. Ties (and shapes without a cuBLAS rate) by problem size."""
    rates: dict[str, list] = {}
    work: dict[str, int] = {}
    for r in rows:
        s = _get(r, "shape")
        try:
            work.setdefault(s, int(_get(r, "M")) * int(_get(r, "N")) * int(_get(r, "K")))
        except (TypeError, ValueError):
            work.setdefault(s, 0)
        t = _get(r, "tflops")
        if _is_cublas(r) and _get(r, "status") == "ok" and t and float(t) > 0:
            rates.setdefault(s, []).append(float(t))
    return sorted(shapes, key=lambda s: (geomean(rates.get(s, [])) or math.inf, work.get(s, 0), s))


# Beyond this many shapes the per-shape panel drops the shape names (they would overlap).
MAX_SHAPE_LABELS = 80


def plot_sweep(results: Iterable[Any], path: str, title: str = "", env: Optional[dict] = None) -> str:
    """Draw the sweep into ``path`` (.png, .svg, .pdf), written atomically; returns ``path``.

    Top: % of cuBLAS per shape, one line per kernel and precision, shapes ordered by cuBLAS's
    own TFLOP/s (hardest first), the 100% line for reference, the geometric mean in each
    legend label and FAILED/error points as red crosses on the axis floor (shape names only up to
    ``MAX_SHAPE_LABELS`` shapes). Bottom left: each kernel's distribution over the shapes (box:
    quartiles, whiskers: 1.5 IQR, diamond: geomean). Bottom right: its empirical cumulative
    distribution (the share of shapes at or below each % of cuBLAS), the view that compares two
    kernels over thousands of shapes: a curve further right is better everywhere it is. Last row:
    the roofline, every timed row at its intensity against ``env``'s measured peaks."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .plot import draw_roofline, line_styles, roofline_points

    _check_picture_format(path, plt)
    rows = list(results)
    summary = summarize(rows)
    plotted = [e for e in summary if e["n_timed"]]
    if not plotted:
        raise UsageError("nothing to plot: no kernel row has a % of cuBLAS (a --check run, all failed, "
                         "or no cuBLAS row at the same shape and precision)")
    labels = {(e["kernel"], e["precision"]): f"{e['kernel']} [{e['precision']}]" for e in summary}
    styles = line_styles(labels[(e["kernel"], e["precision"])] for e in plotted)

    kernel_rows = [r for r in rows if not _is_cublas(r)]
    shapes = {_get(r, "shape") for r in kernel_rows if _pct(r) is not None or _get(r, "status") in _BAD}
    order = _shape_order(rows, shapes)
    all_pcts = [p for r in kernel_rows if (p := _pct(r)) is not None]
    # Naive stages sit at 1% and tuned ones near 100%: only a log axis shows both.
    log_y = max(all_pcts) / min(all_pcts) > 20

    fig = plt.figure(figsize=(18, 20))
    grid = fig.add_gridspec(3, 2, height_ratios=[1.15, 1, 1.1], width_ratios=[1.2, 1])
    ax, axd, axc = fig.add_subplot(grid[0, :]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[1, 1])
    axr, axs = fig.add_subplot(grid[2, 0]), fig.add_subplot(grid[2, 1])
    curves = _draw_per_shape(ax, plotted, kernel_rows, order, labels, styles, log_y)
    _draw_distribution(axd, curves, log_y)
    _draw_cdf(axc, curves, log_y)
    draw_roofline(axr, roofline_points(rows), env or {}, styles=styles, kernel_legend=False)
    _sol_cdf(axs, rows, summary, styles, labels)

    n_shapes, n_lines = len(order), len(plotted)
    fig.suptitle(title or f"% of cuBLAS over {n_shapes} shape{'s' if n_shapes != 1 else ''}, "
                          f"{n_lines} kernel line{'s' if n_lines != 1 else ''}")
    handles, texts = ax.get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    # Below the figure; the tight bounding box at save time takes it in, however many lines.
    fig.legend(handles, texts, loc="upper center", bbox_to_anchor=(0.5, 0.0), ncol=3, fontsize=8,
               frameon=False)
    _save_atomically(fig, path)
    plt.close(fig)
    return path


def _check_picture_format(path: str, plt) -> None:
    """A suffix matplotlib can write, said before anything is drawn."""
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    supported = plt.figure().canvas.get_supported_filetypes()
    plt.close("all")
    if ext not in supported:
        raise UsageError(f"plot file {path}: unknown picture format {ext or '(no suffix)'!r}; "
                         f"use one of .{', '.join(sorted(supported))}")


@dataclass
class _Curve:
    """One kernel and precision of the sweep plot: its summary entry, label, colour and its
    % of cuBLAS per shape in the top panel's order."""
    entry: dict
    label: str
    colour: Any
    pcts: list


def _draw_per_shape(ax, plotted: list, kernel_rows: list, order: list, labels: dict, styles: dict,
                    log_y: bool) -> list:
    """The top panel: % of cuBLAS per shape, a line per kernel and precision, FAILED/error points
    as red crosses on the axis floor, the 100% line; returns the curves the other panels draw."""
    from matplotlib.transforms import blended_transform_factory

    from .plot import FAMILY_LINESTYLE
    xpos = {s: i for i, s in enumerate(order)}
    floor = blended_transform_factory(ax.transData, ax.transAxes)
    many = len(order) > MAX_SHAPE_LABELS
    any_failed = False
    curves = []
    for e in plotted:
        key = (e["kernel"], e["precision"])
        mine = [r for r in kernel_rows if (_get(r, "kernel"), _get(r, "precision")) == key]
        pts = sorted((xpos[_get(r, "shape")], p) for r in mine if (p := _pct(r)) is not None)
        colour, marker = styles[labels[key]]
        label = f"{labels[key]}  geomean {e['geomean_pct']:.0f}%"
        if e["n_failed"]:
            label += f", {e['n_failed']} FAILED/error"
        ax.plot([x for x, _ in pts], [p for _, p in pts], color=colour, marker=marker, ms=2 if many else 5,
                lw=0.6 if many else 1.1, alpha=0.9,
                linestyle=FAMILY_LINESTYLE.get(e["family"], "-."), label=label)
        bad = [xpos[_get(r, "shape")] for r in mine if _get(r, "status") in _BAD]
        if bad:
            any_failed = True
            ax.plot(bad, [0.015] * len(bad), linestyle="none", marker="x", color="red", ms=8, mew=2,
                    transform=floor, clip_on=False, zorder=6)
        curves.append(_Curve(e, labels[key], colour, [p for _, p in pts]))
    ax.axhline(100, color="k", ls="--", lw=2, label="cuBLAS = 100%", zorder=1)
    if any_failed:
        ax.plot([], [], linestyle="none", marker="x", color="red", ms=8, mew=2,
                label="FAILED or error (at that shape)")
    if log_y:
        ax.set_yscale("log")
    _percent_axis(ax.yaxis)
    if len(order) <= MAX_SHAPE_LABELS:
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels(order, rotation=90, fontsize=7)
    ax.set_xlim(-0.5, len(order) - 0.5)
    ax.set_xlabel("shape (MxNxK), ordered by cuBLAS TFLOP/s, slowest first")
    ax.set_ylabel("% of cuBLAS (same shape and precision)")
    ax.grid(True, which="major", alpha=0.3)
    return curves


def _draw_distribution(axd, curves: list, log_y: bool) -> None:
    """Each kernel's distribution over the shapes (box: quartiles, whiskers: 1.5 IQR, diamond:
    geomean); the first kernel at the top, like the legend."""
    ypos = list(range(len(curves), 0, -1))
    box_kw = dict(positions=ypos, widths=0.6, patch_artist=True, showfliers=True, flierprops={"markersize": 3})
    dist = [c.pcts for c in curves]
    try:
        box = axd.boxplot(dist, orientation="horizontal", **box_kw)
    except TypeError:   # matplotlib < 3.10 (pyproject allows 3.7) spells it vert=False
        box = axd.boxplot(dist, vert=False, **box_kw)
    for patch, c in zip(box["boxes"], curves):
        patch.set_facecolor(c.colour)
        patch.set_alpha(0.45)
    axd.scatter([c.entry["geomean_pct"] for c in curves], ypos, marker="D", color="k", s=22, zorder=5)
    axd.axvline(100, color="k", ls="--", lw=1.5)
    if log_y:
        axd.set_xscale("log")
    _percent_axis(axd.xaxis)
    axd.set_yticks(ypos)
    axd.set_yticklabels([c.label for c in curves], fontsize=7)
    axd.set_xlabel("% of cuBLAS over the shapes (box: quartiles, diamond: geomean)")
    axd.grid(True, axis="x", alpha=0.3)


def _draw_cdf(axc, curves: list, log_y: bool) -> None:
    """Each kernel's empirical cumulative distribution of % of cuBLAS over the shapes."""
    from .plot import FAMILY_LINESTYLE
    for c in curves:
        cdf_x = sorted(c.pcts)
        axc.step(cdf_x, [(i + 1) / len(cdf_x) for i in range(len(cdf_x))], where="post", color=c.colour, lw=1.4,
                 linestyle=FAMILY_LINESTYLE.get(c.entry["family"], "-."),
                 label=f"{c.label}  p50 {c.entry['p50_pct']:.0f}%")
    axc.axvline(100, color="k", ls="--", lw=1.5)
    for q in (0.05, 0.5, 0.95):
        axc.axhline(q, color="grey", lw=0.6, ls=":")
    if log_y:
        axc.set_xscale("log")
    _percent_axis(axc.xaxis)
    axc.set_ylim(0, 1.02)
    axc.set_xlabel("% of cuBLAS")
    axc.set_ylabel("share of shapes at or below (dotted: p5, p50, p95)")
    axc.legend(fontsize=7, loc="upper left")
    axc.grid(True, alpha=0.3)


def _sol_cdf(ax, rows: list, summary: list[dict], styles: dict, labels: dict) -> None:
    """The cumulative distribution of % SOL per kernel (cuBLAS black), compute-bound rows solid,
    memory-bound ones dashed: how far each is from the machine over the shapes."""
    drawn = False
    for e in summary:
        if not e.get("sol_n"):
            continue
        key = (e["kernel"], e["precision"])
        colour = "black" if e["family"] == "cublas" else styles.get(labels[key], ("tab:gray", "o"))[0]
        mine = [r for r in rows if (_get(r, "kernel"), _get(r, "precision")) == key]
        for b, ls in zip(BOUNDS, ("-", "--")):
            vals = sorted(p for r in mine if _get(r, "bound") == b and (p := _sol(r)) is not None)
            if not vals:
                continue
            g = e[f"sol_{b}_geomean_pct"]
            ax.step(vals, [(i + 1) / len(vals) for i in range(len(vals))], where="post", color=colour, ls=ls,
                    lw=2.2 if e["family"] == "cublas" else 1.2, label=f"{labels[key]} {b[0]} geomean {g:.0f}%")
            drawn = True
    if not drawn:
        ax.text(0.5, 0.5, "no % SOL (no measured peaks: python -m cuda_kernels.probes.peaks)", ha="center",
                transform=ax.transAxes, fontsize=8)
    else:
        ax.legend(fontsize=6, loc="upper left", ncol=2)
    ax.axvline(100, color="k", ls=":", lw=1.2)
    _percent_axis(ax.xaxis)
    ax.set_xlim(left=0)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("% of the speed of light (solid: compute-bound rows, dashed: memory-bound)")
    ax.set_ylabel("share of rows at or below")
    ax.grid(True, alpha=0.3)


def _percent_axis(axis) -> None:
    from matplotlib.ticker import FuncFormatter
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}%"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _save_atomically(fig, path: str) -> None:
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    write_atomically(path, lambda tmp: fig.savefig(tmp, format=ext, dpi=120, bbox_inches="tight"))