"""The sweep drawn (``python -m compare --sweep --plot FILE``): % of cuBLAS per shape, each kernel's
distribution and cumulative distribution over the shapes, the roofline and the % SOL
distribution, from compare/outputs/sweep.py's summary. matplotlib's backend is chosen (Agg) and
pyplot imported when drawing, as the other plots do.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Iterable, Optional

import matplotlib
from matplotlib.ticker import FuncFormatter
from matplotlib.transforms import blended_transform_factory

from ..harness.errors import UsageError
from ..harness.files import write_atomically
from .plot import FAMILY_LINESTYLE, draw_roofline, line_styles, roofline_points
from ..harness.status import NO_NUMBER, field
from .sweep import BOUNDS, geomean, is_cublas, pct_of_cublas, sol_pct, summarize


def _shape_order(rows: list, shapes: set) -> list[str]:
    """Shapes from hardest to easiest for cuBLAS (its TFLOP/s, geometric mean over the
    precisions it ran): a kernel's weak spots show up where the library also finds it hard, or
    stand out where it does not. Ties (and shapes without a cuBLAS rate) by problem size."""
    rates: dict[str, list] = {}
    work: dict[str, int] = {}
    for r in rows:
        s = field(r, "shape")
        try:
            work.setdefault(s, int(field(r, "M")) * int(field(r, "N")) * int(field(r, "K")))
        except (TypeError, ValueError):
            work.setdefault(s, 0)
        t = field(r, "tflops")
        if is_cublas(r) and field(r, "status") == "ok" and t and float(t) > 0:
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
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    _check_picture_format(path, plt)
    rows = list(results)
    summary = summarize(rows)
    plotted = [e for e in summary if e["n_timed"]]
    if not plotted:
        raise UsageError("nothing to plot: no kernel row has a % of cuBLAS (a --check run, all failed, "
                         "or no cuBLAS row at the same shape and precision)")
    labels = {(e["kernel"], e["precision"]): f"{e['kernel']} [{e['precision']}]" for e in summary}
    styles = line_styles(labels[(e["kernel"], e["precision"])] for e in plotted)

    kernel_rows = [r for r in rows if not is_cublas(r)]
    shapes = {field(r, "shape") for r in kernel_rows if pct_of_cublas(r) is not None or field(r, "status") in NO_NUMBER}
    order = _shape_order(rows, shapes)
    all_pcts = [p for r in kernel_rows if (p := pct_of_cublas(r)) is not None]
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
    xpos = {s: i for i, s in enumerate(order)}
    floor = blended_transform_factory(ax.transData, ax.transAxes)
    many = len(order) > MAX_SHAPE_LABELS
    any_failed = False
    curves = []
    for e in plotted:
        key = (e["kernel"], e["precision"])
        mine = [r for r in kernel_rows if (field(r, "kernel"), field(r, "precision")) == key]
        pts = sorted((xpos[field(r, "shape")], p) for r in mine if (p := pct_of_cublas(r)) is not None)
        colour, marker = styles[labels[key]]
        label = f"{labels[key]}  geomean {e['geomean_pct']:.0f}%"
        if e["n_failed"]:
            label += f", {e['n_failed']} FAILED/error"
        ax.plot([x for x, _ in pts], [p for _, p in pts], color=colour, marker=marker, ms=2 if many else 5,
                lw=0.6 if many else 1.1, alpha=0.9,
                linestyle=FAMILY_LINESTYLE.get(e["family"], "-."), label=label)
        bad = [xpos[field(r, "shape")] for r in mine if field(r, "status") in NO_NUMBER]
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
        mine = [r for r in rows if (field(r, "kernel"), field(r, "precision")) == key]
        for b, ls in zip(BOUNDS, ("-", "--")):
            vals = sorted(p for r in mine if field(r, "bound") == b and (p := sol_pct(r)) is not None)
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
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}%"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: ""))


def _save_atomically(fig, path: str) -> None:
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    write_atomically(path, lambda tmp: fig.savefig(tmp, format=ext, dpi=120, bbox_inches="tight"))