"""Rendering ``python -m compare --profile`` rows: table, markdown, CSV, JSON and the ladder plot."""
from __future__ import annotations

import csv
import io
import json
import math

from ..harness.errors import UsageError
from .profile_counters import COUNTERS, METRIC_BY_KEY, METRICS, Metric, claims, claims_text


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
    for cl in claims():
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
        claimers = {c.stage for c in claims() if c.metric == key}
        bases = {c.than for c in claims() if c.metric == key and c.than}
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
