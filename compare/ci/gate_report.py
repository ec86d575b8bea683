"""The gate's verdicts as text: the terminal table (``table``) and GitHub-flavoured markdown for a
CI job summary (``markdown_summary``, compare.ci.gate --summary)."""
from __future__ import annotations

import math

from .asv_results import ResultFile, higher_is_better, is_na, is_number
from .gate_verdicts import Row, percent, verdict_word


def fmt_value(v, benchmark: str = "", missing: bool = False) -> str:
    if missing:
        return "-"
    if v is None:
        return "failed"
    if is_na(v):
        return "n/a"
    if not is_number(v):
        return f"invalid {v!r}"
    if benchmark.rsplit(".", 1)[-1].startswith("track_gbps"):
        return f"{v:.4g} GB/s"
    if higher_is_better(benchmark):
        return f"{v:.4g}%"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if abs(v) >= scale or unit == "ns":
            return f"{v / scale:.4g} {unit}"
    return str(v)


fmt_time = fmt_value


def table(rows: list[Row], base_points: dict, head_points: dict) -> str:
    header = ("benchmark", "params", "base", "head", "slowdown", "noise", "verdict")
    lines = [header]
    for r in rows:
        key = (r.benchmark, r.params)
        lines.append((r.benchmark, ", ".join(r.params) or "-",
                      fmt_value(r.base, r.benchmark, key not in base_points),
                      fmt_value(r.head, r.benchmark, key not in head_points),
                      f"{r.ratio:.3f}" if r.ratio is not None and math.isfinite(r.ratio) else "-",
                      percent(r.noise) if r.noise is not None else "-",
                      r.verdict))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for n, line in enumerate(lines):
        out.append("  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)

def _md(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_summary(rows: list[Row], base: ResultFile, head: ResultFile, machine: str, factor: float) -> str:
    """The verdict as GitHub-flavoured markdown (for the job summary, $GITHUB_STEP_SUMMARY): the
    outcome and verdict counts first, then the points that fail, then every point folded away.
    Kernel and shape are the benchmark's first parameter and the rest of them."""
    bp, hp = base.points(), head.points()
    bad = [r for r in rows if r.failed]
    n_compared = sum(r.compared for r in rows)
    if bad:
        outcome = f"FAILED: {len(bad)} of {len(rows)} points"
    elif n_compared == 0:
        outcome = f"FAILED: nothing was compared (none of {len(rows)} points has a number on both commits)"
    else:
        outcome = f"passed: {n_compared} of {len(rows)} points compared"
    counts: dict[str, int] = {}
    for r in rows:
        counts[verdict_word(r)] = counts.get(verdict_word(r), 0) + 1
    order = ["SLOW", "AMBIGUOUS", "FAILING", "ALL", "LOST", "INVALID", "MISSING", "FAST", "SAME"]
    words = sorted(counts, key=lambda w: (order.index(w) if w in order else len(order), w))
    out = [f"## GEMM regression gate {'❌' if bad or n_compared == 0 else '✅'} {outcome}", "",
           f"machine `{_md(machine)}`, base `{base.commit[:12]}` → head `{head.commit[:12]}`; a point is SLOW "
           f"when head is more than x{factor:g} slower than base (time: head/base; % of cuBLAS: base/head) "
           f"and the 99% intervals, where recorded, do not overlap", "",
           " · ".join(f"**{counts[w]} {w}**" if w in order[:7] else f"{counts[w]} {w}" for w in words), ""]

    def table(some: list[Row]) -> list[str]:
        lines = ["| benchmark | kernel | shape, precision | base | head | slowdown | verdict |",
                 "|---|---|---|---:|---:|---:|---|"]
        for r in some:
            key = (r.benchmark, r.params)
            kernel, rest = (r.params[0], " ".join(r.params[1:])) if r.params else ("-", "")
            ratio = f"{r.ratio:.3f}" if r.ratio is not None and math.isfinite(r.ratio) else "-"
            verdict = f"**{_md(r.verdict)}**" if r.failed else _md(r.verdict)
            lines.append(f"| {_md(r.benchmark)} | {_md(kernel)} | {_md(rest) or '-'} "
                         f"| {_md(fmt_value(r.base, r.benchmark, key not in bp))} "
                         f"| {_md(fmt_value(r.head, r.benchmark, key not in hp))} | {ratio} | {verdict} |")
        return lines

    if bad:
        out += [f"### Points that fail the gate ({len(bad)})", ""] + table(bad) + [""]
    fast = [r for r in rows if verdict_word(r) == "FAST"]
    if fast:
        out += [f"### Faster on head ({len(fast)})", ""] + table(fast) + [""]
    if rows:
        out += ["<details><summary>All " + str(len(rows)) + " points</summary>", ""] + table(rows) + ["", "</details>", ""]
    return "\n".join(out)
