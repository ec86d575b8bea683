"""The closing summary of a run: how close is each kernel to cuBLAS, shape by shape.

One line per kernel (and precision), one column per shape, each cell the kernel's % of cuBLAS at
that shape and precision; the best kernel of each family at a shape is marked ``*`` (markdown:
bold). A run that timed nothing (``--check``, ``--interpret``) shows each cell's status instead
(ok / FAILED / error). Kernels that ran nowhere (every cell skipped or unsupported: the CUDA
kernels under ``--interpret``) are named on one line instead of a row of dashes.

The text fits ``width`` columns: when the shapes do not fit beside the kernel names, the columns
are cut into blocks, each repeating the kernel column, so a line never wraps.
"""
from __future__ import annotations

import math
import textwrap
from typing import Any, Iterable, Optional

from ..harness.status import ALL, NO_NUMBER, NOT_RUN as _NOT_RUN, field, usable

WIDTH = 120
_SHORT = {"FAILED": "FAILED", "error": "error", "unsupported": "n/a", "skipped": "skip"}


_get = field


def _pct(row: Any) -> Optional[float]:
    """The row's % of cuBLAS when it is a usable number (a positive finite value), else None."""
    return usable(row, "pct_cublas")


def _sol(row: Any) -> Optional[float]:
    """The row's % of the speed of light when it is ok and a usable number, else None."""
    return usable(row, "pct_sol", ok_only=True)


def shape_label(shape: str) -> str:
    """'1024x1024x1024' -> '1024^3'; anything else as given."""
    parts = str(shape).split("x")
    return f"{parts[0]}^3" if len(parts) == 3 and len(set(parts)) == 1 else str(shape)


def build(results: Iterable[Any]) -> dict:
    """The matrix as data (the JSON ``matrix`` field): ``value`` ("pct_cublas" when any row has a
    % of cuBLAS, else "status"), ``shapes`` in run order, ``rows`` (cuBLAS first, then kernels in
    run order; each {kernel, family, precision, cells}: per shape None (not run there) or
    {status, pct_cublas, tflops, best}) and ``not_run`` ({kernel, reason} for kernels that ran
    nowhere). ``best`` is True for the highest % of cuBLAS of its family at that shape and
    precision."""
    rows = list(results)
    shapes = list(dict.fromkeys(_get(r, "shape") for r in rows))
    timed = any(_pct(r) is not None for r in rows)
    keyed: dict[tuple, dict] = {}
    for r in rows:
        key = (_get(r, "kernel"), _get(r, "precision"))
        entry = keyed.setdefault(key, {"kernel": key[0], "family": _get(r, "family"), "precision": key[1],
                                       "cells": {}})
        tflops = _get(r, "tflops")
        entry["cells"][_get(r, "shape")] = {
            "status": _get(r, "status"), "reason": _get(r, "reason") or "", "pct_cublas": _pct(r),
            "tflops": float(tflops) if tflops not in (None, "") else None, "best": False,
            "pct_sol": _sol(r), "bound": _get(r, "bound") or ""}
    best: dict[tuple, tuple] = {}
    for (kernel, prec), e in keyed.items():
        if e["family"] == "cublas":
            continue
        for shape, c in e["cells"].items():
            if c["status"] == "ok" and c["pct_cublas"] is not None:
                k = (e["family"], shape, prec)
                if k not in best or c["pct_cublas"] > best[k][0]:
                    best[k] = (c["pct_cublas"], kernel)
    for (family, shape, prec), (_, kernel) in best.items():
        keyed[(kernel, prec)]["cells"][shape]["best"] = True

    ordered = sorted(keyed.values(), key=lambda e: e["family"] != "cublas")   # stable: run order kept
    out_rows, not_run = [], []
    for e in ordered:
        cells = e["cells"]
        if cells and all(c["status"] in _NOT_RUN for c in cells.values()):
            reasons = list(dict.fromkeys(c["reason"] or c["status"] for c in cells.values()))
            not_run.append({"kernel": e["kernel"], "precision": e["precision"], "reason": "; ".join(reasons)})
            continue
        out_rows.append({"kernel": e["kernel"], "family": e["family"], "precision": e["precision"],
                         "cells": [_public(cells.get(s)) for s in shapes]})
    return {"value": "pct_cublas" if timed else "status", "shapes": shapes, "rows": out_rows,
            "not_run": not_run}


def _public(cell: Optional[dict]) -> Optional[dict]:
    if cell is None:
        return None
    return {k: cell[k] for k in ("status", "pct_cublas", "tflops", "best", "pct_sol", "bound")}


def _pct_text(p: float) -> str:
    return f"{p:.0f}" if p >= 9.95 else f"{p:.1f}"


def cell_text(cell: Optional[dict], cublas: bool, timed: bool, bold: tuple = ("", "*")) -> str:
    """A cell as text: the % of cuBLAS (cuBLAS's own row: its TFLOP/s) with the best-of-family
    mark, or the status where there is no number."""
    if cell is None:
        return "-"
    if cell["status"] != "ok":
        return _SHORT.get(cell["status"], cell["status"])
    if timed and cublas and cell["tflops"]:
        return f"{cell['tflops']:.1f}"
    if timed and cell["pct_cublas"] is not None:
        text = _pct_text(cell["pct_cublas"])
        return f"{bold[0]}{text}{bold[1]}" if cell["best"] else text
    return "ok"


def _geomean(values: list) -> Optional[float]:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _labels(m: dict) -> list[str]:
    several = len({r["precision"] for r in m["rows"]}) > 1
    out = []
    for r in m["rows"]:
        name = r["kernel"] + (f" {r['precision']}" if several else "")
        if r["family"] == "cublas" and m["value"] == "pct_cublas":
            name += " (TFLOP/s)"
        out.append(name)
    return out


def _columns(m: dict, bold: tuple) -> tuple[list[str], list[list[str]]]:
    """Header and cell texts; a geomean column closes a timed matrix of several shapes."""
    timed = m["value"] == "pct_cublas"
    header = [shape_label(s) for s in m["shapes"]]
    cells = [[cell_text(c, r["family"] == "cublas", timed, bold) for c in r["cells"]] for r in m["rows"]]
    if timed and len(m["shapes"]) > 1:
        header.append("geomean")
        for r, line in zip(m["rows"], cells):
            vals = [c["pct_cublas"] for c in r["cells"] if c and c["status"] == "ok" and c["pct_cublas"]]
            g = None if r["family"] == "cublas" else _geomean(vals)
            bad = any(c and c["status"] in NO_NUMBER for c in r["cells"])
            line.append("-" if g is None else _pct_text(g) + ("!" if bad else ""))
    if any(c and c.get("pct_sol") for r in m["rows"] for c in r["cells"]):
        # the speed of light, cuBLAS's row too: geomean over the shapes, c / m when every one is
        # compute- / memory-bound
        header.append("% SOL")
        for r, line in zip(m["rows"], cells):
            got = [c for c in r["cells"] if c and c.get("pct_sol")]
            bounds = {c["bound"] for c in got}
            g = _geomean([c["pct_sol"] for c in got])
            line.append("-" if g is None else _pct_text(g) + (next(iter(bounds))[:1] if len(bounds) == 1 else ""))
    return header, cells


def _title(m: dict) -> str:
    if m["value"] == "pct_cublas":
        return ("summary: % of cuBLAS at the same shape and precision (cuBLAS row: its TFLOP/s); "
                "* best of its family at that shape")
    return "summary: correctness check per kernel and shape (nothing timed)"


def _footer(m: dict, width: int) -> list[str]:
    lines = []
    counts: dict[str, int] = {}
    for r in m["rows"]:
        for c in r["cells"]:
            if c is not None:
                counts[c["status"]] = counts.get(c["status"], 0) + 1
    order = ALL
    parts = [f"{counts[s]} {s}" for s in order if counts.get(s)]
    legend = []
    if counts.get("unsupported"):
        legend.append("n/a: the kernel does not support that shape")
    if any(c is None for r in m["rows"] for c in r["cells"]):
        legend.append("-: not run at that shape")
    if m["value"] == "pct_cublas" and any(counts.get(s) for s in NO_NUMBER) and len(m["shapes"]) > 1:
        legend.append("!: geomean over the shapes it passed")
    if any(c and c.get("pct_sol") for r in m["rows"] for c in r["cells"]):
        legend.append("% SOL: of the speed of light (geomean over the shapes; c compute-, m memory-bound)")
    if parts:
        lines += textwrap.wrap("cells: " + ", ".join(parts) + (f" ({'; '.join(legend)})" if legend else ""), width,
                               subsequent_indent="  ", break_on_hyphens=False)
    if m["not_run"]:
        by_reason: dict[str, list] = {}
        for e in m["not_run"]:
            by_reason.setdefault(e["reason"], []).append(e["kernel"])
        for reason, kernels in by_reason.items():
            lines += textwrap.wrap(f"not run, {reason}: {', '.join(dict.fromkeys(kernels))}", width,
                                   subsequent_indent="  ", break_on_hyphens=False)
    return lines


def render(results: Iterable[Any], fmt: str = "table", width: int = WIDTH) -> str:
    """The matrix as text: ``table`` (plain, at most ``width`` columns) or ``markdown``."""
    m = build(results)
    if not m["rows"] and not m["not_run"]:
        return ""
    labels = _labels(m)
    if fmt == "markdown":
        header, cells = _columns(m, ("**", "**"))
        out = ["### Summary", "", _title(m).replace("* best", "**bold**: best") + "", ""]
        if m["rows"]:
            out.append("| kernel | " + " | ".join(header) + " |")
            out.append("|---|" + "|".join("---:" for _ in header) + "|")
            out += ["| " + " | ".join([label, *line]) + " |" for label, line in zip(labels, cells)]
            out.append("")
        return "\n".join(out + [f"{line}  " for line in _footer(m, 10**6)]) + "\n"
    header, cells = _columns(m, ("", "*"))
    out = textwrap.wrap(_title(m), width, subsequent_indent="  ")
    if m["rows"]:
        name_w = max(len("kernel"), *(len(x) for x in labels))
        col_w = [max(len(h), *(len(line[i]) for line in cells)) + 1 for i, h in enumerate(header)]
        start = 0
        while start < len(header):
            # as many shape columns as fit beside the kernel column (at least one)
            end, used = start, name_w
            while end < len(header) and (end == start or used + 2 + col_w[end] <= width):
                used += 2 + col_w[end]
                end += 1
            block = range(start, end)
            out.append(("kernel".ljust(name_w) + "".join("  " + header[i].rjust(col_w[i]) for i in block)).rstrip())
            for label, line in zip(labels, cells):
                if all(line[i] == "-" for i in block) and end - start < len(header):
                    continue   # a row with nothing in this block of columns
                text = label.ljust(name_w)
                for i in block:
                    # the best mark hangs right of the numbers, so they stay aligned
                    c = line[i]
                    hangs = c.endswith(("*", "!")) or (header[i] == "% SOL" and c.endswith(("c", "m")))
                    text += "  " + (c.rjust(col_w[i]) if hangs else (c + " ").rjust(col_w[i]))
                out.append(text.rstrip())
            start = end
            if start < len(header):
                out.append("")
    out += _footer(m, width)
    return "\n".join(out) + "\n"
