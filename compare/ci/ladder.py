"""The page a kernel engineer opens first: the ladder over time (``ladder.html`` of the asv site).

One chart per family (cuda, triton) and precision: each stage's % of cuBLAS over commits (asv's
``*PctCublas`` and ``Sweep*`` benchmarks: a geometric mean over the group's shapes), the best
stage of each commit as a wide grey band, a 100% line, the y axis from 0, and the baseline named
(tf32x3 is measured against cuBLAS fp32: cuBLAS has no 3xTF32 mode). Every machine is drawn on the
same chart (its own dash and marker), so two GPUs that measured one commit sit side by side. A
checkbox per stage shows or hides it; the stages that were ever a commit's best are shown by
default. Static SVG and a few lines of JS, nothing from the network. compare.ci.site writes it.
"""
from __future__ import annotations

import datetime
import html
import json
import os

from . import asv_results
from ..harness.problem import Problem

W, H = 820, 330
LEFT, RIGHT, TOP, BOTTOM = 92, 16, 16, 74
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39"]
DASHES = ["", "7 4", "2 3", "10 3 2 3"]
MARKERS = ["circle", "square", "diamond", "triangle"]
SUFFIXES = ("PctCublas", "TensorCore")


def group_of(benchmark: str) -> str:
    """gemm.TiledTensorCorePctCublas.track_pct_cublas -> Tiled; gemm.SweepCuda... -> sweep."""
    cls = benchmark.split(".")[1] if benchmark.count(".") >= 2 else benchmark
    if cls.startswith("Sweep"):
        return "sweep"
    for s in SUFFIXES:
        if cls.endswith(s):
            cls = cls[: -len(s)]
    for s in SUFFIXES:
        if cls.endswith(s):
            cls = cls[: -len(s)]
    return cls


def baseline_of(precision: str) -> str:
    from ..harness.runner import baseline_problem    # torch (~1 s), which the rest of the page needs not
    return baseline_problem(Problem(64, 64, 64, precision=precision)).precision


def collect(results_dir: str, hash_to_rev: dict) -> dict:
    """{(family, precision): {(group, kernel): {machine: {revision: %}}}} of every higher-is-better
    number recorded for a commit the site shows."""
    charts: dict = {}
    for m in asv_results.machines(results_dir):
        for path in asv_results.result_paths(os.path.join(results_dir, m)):
            rf = asv_results.load(path)
            rev = hash_to_rev.get(rf.commit)
            if rev is None:
                continue
            for (name, params), point in rf.points().items():
                if not asv_results.higher_is_better(name) or not asv_results.is_number(point.value) or len(params) != 2:
                    continue
                kernel, precision = params
                family = kernel.split(".", 1)[0]
                stage = (group_of(name), kernel)
                charts.setdefault((family, precision), {}).setdefault(stage, {}).setdefault(m, {})[rev] = point.value
    return charts


def _marker(kind: str, x: float, y: float, color: str, filled: bool) -> str:
    fill = color if filled else "white"
    common = f'fill="{fill}" stroke="{color}" stroke-width="1.5"'
    if kind == "square":
        return f'<rect x="{x - 3.5:.1f}" y="{y - 3.5:.1f}" width="7" height="7" {common}/>'
    if kind == "diamond":
        return f'<path d="M{x:.1f},{y - 5:.1f} L{x + 5:.1f},{y:.1f} L{x:.1f},{y + 5:.1f} L{x - 5:.1f},{y:.1f} Z" {common}/>'
    if kind == "triangle":
        return f'<path d="M{x:.1f},{y - 5:.1f} L{x + 5:.1f},{y + 4:.1f} L{x - 5:.1f},{y + 4:.1f} Z" {common}/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" {common}/>'


def _series(sid: str, label: str, machine: str, pts: list, color: str, width: float, dash: str,
            marker: str, filled: bool, x_of, y_of, commit_url: str, rev_to_hash: dict, hidden: bool) -> str:
    """One <g> per series: its polyline and a linked marker per point (tooltip: value, commit)."""
    hide = ' style="display:none"' if hidden else ""
    out = [f'<g class="series" data-series="{html.escape(sid)}" data-machine="{html.escape(machine)}"{hide}>']
    if len(pts) > 1:
        d = " ".join(f"{x_of(r):.1f},{y_of(v):.1f}" for r, v in pts)
        out.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="{width}"'
                   + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
    for r, v in pts:
        sha = rev_to_hash[r]
        out.append(f'<a href="{html.escape(commit_url + sha)}"><g class="pt">'
                   f'<title>{html.escape(label)} on {html.escape(machine)}: {v:.1f}% at {sha[:8]}</title>'
                   f'{_marker(marker, x_of(r), y_of(v), color, filled)}</g></a>')
    out.append("</g>")
    return "".join(out)


def chart(family: str, precision: str, stages: dict, revs: list, machines: list, rev_to_hash: dict,
          rev_to_date: dict, commit_url: str) -> str:
    """One chart (SVG and its stage checkboxes) as HTML."""
    cid = f"{family}-{precision}"
    values = [v for by_m in stages.values() for by_r in by_m.values() for v in by_r.values()]
    top = max(110.0, max(values) * 1.08)
    step = 20 if top <= 200 else 50
    top = step * (int(top // step) + 1)
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM
    xi = {r: i for i, r in enumerate(revs)}
    x_of = (lambda r: LEFT + pw / 2) if len(revs) == 1 else (lambda r: LEFT + pw * xi[r] / (len(revs) - 1))

    def y_of(v):
        return TOP + ph * (1 - v / top)

    svg = [f'<svg class="ladder-chart" id="chart-{cid}" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
           f'xmlns="http://www.w3.org/2000/svg" font-family="sans-serif" font-size="11">']
    for t in range(0, int(top) + 1, step):
        y = y_of(t)
        svg.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>'
                   f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{t}%</text>')
    y100 = y_of(100)
    svg.append(f'<line class="hundred" x1="{LEFT}" x2="{W - RIGHT}" y1="{y100:.1f}" y2="{y100:.1f}" stroke="#333" '
               f'stroke-dasharray="5 3"/><text x="{W - RIGHT - 4}" y="{y100 - 4:.1f}" text-anchor="end">'
               f'100% = cuBLAS {baseline_of(precision)}</text>')
    svg.append(f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + ph}" stroke="#333"/>'
               f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{TOP + ph}" y2="{TOP + ph}" stroke="#333"/>')
    for r in revs:
        x, sha = x_of(r), rev_to_hash[r]
        date = rev_to_date.get(r)
        day = ""
        if date:
            day = datetime.datetime.fromtimestamp(date / 1000, datetime.timezone.utc).strftime("%m-%d")
        svg.append(f'<a href="{html.escape(commit_url + sha)}"><text x="{x:.1f}" y="{TOP + ph + 14}" '
                   f'text-anchor="end" transform="rotate(-40 {x:.1f} {TOP + ph + 14})">{sha[:8]} {day}</text></a>')
    best_ever = set()
    best = {}
    for m in machines:
        per_rev: dict = {}
        for st, by_m in stages.items():
            for r, v in by_m.get(m, {}).items():
                if r not in per_rev or v > per_rev[r][0]:
                    per_rev[r] = (v, st)
        best[m] = sorted((r, v) for r, (v, _st) in per_rev.items())
        best_ever |= {st for _v, st in per_rev.values()}
    order = sorted(stages, key=lambda st: (st[0] != "sweep", st[0], st[1]))
    color = {st: PALETTE[i % len(PALETTE)] for i, st in enumerate(order)}
    for k, m in enumerate(machines):      # under the stages: a grey band they are drawn over
        if best[m]:
            svg.append(_series(f"{cid}:best", "best stage", m, best[m], "#bbb", 7, DASHES[k % len(DASHES)],
                               MARKERS[k % len(MARKERS)], True, x_of, y_of, commit_url, rev_to_hash, False))
    boxes = []
    for st in order:
        sid = f"{cid}:{st[0]}:{st[1]}"
        label = f"{st[1]} ({st[0]})"
        for k, m in enumerate(machines):
            pts = sorted(stages[st].get(m, {}).items())
            if pts:
                svg.append(_series(sid, label, m, pts, color[st], 1.5, DASHES[k % len(DASHES)],
                                   MARKERS[k % len(MARKERS)], False, x_of, y_of, commit_url, rev_to_hash,
                                   st not in best_ever))
        checked = " checked" if st in best_ever else ""
        boxes.append(f'<label style="color:{color[st]}"><input type="checkbox" data-series="{html.escape(sid)}"'
                     f'{checked}> {html.escape(label)}</label>')
    svg.append("</svg>")
    base = baseline_of(precision)
    note = (f" ({precision} is compared with cuBLAS {base}: cuBLAS has no 3xTF32 mode, and fp32 is the same "
            "accuracy class, so above 100% means faster than cuBLAS at fp32 accuracy)") if base != precision else ""
    return (f'<section class="chart" id="{cid}"><h2>{html.escape(family)} &middot; {html.escape(precision)}</h2>'
            f'<p class="baseline">% of cuBLAS {html.escape(base)}{html.escape(note)}; each stage a geometric mean '
            f'over its group\'s shapes; the wide grey band is the best stage of each commit.</p>'
            + "".join(svg) + '<div class="stages">' + " ".join(boxes) + "</div></section>")


SCRIPT = """
document.querySelectorAll('input[type=checkbox][data-series]').forEach(function (box) {
  box.addEventListener('change', function () {
    document.querySelectorAll('g.series[data-series="' + box.dataset.series + '"]').forEach(function (g) {
      g.style.display = box.checked ? '' : 'none';
    });
  });
});
"""


def page(charts: dict, machines: list, rev_to_hash: dict, rev_to_date: dict, commit_url: str, project: str) -> str:
    revs = sorted({r for stages in charts.values() for by_m in stages.values() for by_r in by_m.values() for r in by_r})
    legend = " &nbsp; ".join(
        f'<svg width="46" height="12"><line x1="2" x2="44" y1="6" y2="6" stroke="#000" stroke-width="2"'
        + (f' stroke-dasharray="{DASHES[k % len(DASHES)]}"' if DASHES[k % len(DASHES)] else "")
        + f'/>{_marker(MARKERS[k % len(MARKERS)], 23, 6, "#000", True)}</svg> {html.escape(m)}'
        for k, m in enumerate(machines))
    fams = sorted(charts, key=lambda fp: (fp[0], ("fp32", "tf32", "tf32x3").index(fp[1])
                                          if fp[1] in ("fp32", "tf32", "tf32x3") else 9, fp[1]))
    body = "".join(chart(f, p, charts[(f, p)], revs, machines, rev_to_hash, rev_to_date, commit_url) for f, p in fams)
    if not fams:
        body = "<p>No % of cuBLAS is recorded for a commit this site shows.</p>"
    return f"""<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{html.escape(project)}: the ladder over time</title>
<style>
body {{ font-family: sans-serif; margin: 16px 24px; color: #222; }}
section.chart {{ margin-bottom: 28px; }} h2 {{ margin: 8px 0 2px; font-size: 18px; }}
p.baseline {{ margin: 0 0 4px; color: #555; font-size: 13px; max-width: 820px; }}
.stages label {{ margin-right: 12px; font-size: 12px; white-space: nowrap; }}
</style></head>
<body>
<p><a href="index.html">asv site (every benchmark)</a> &middot; <a href="index.html#regressions">regressions</a></p>
<h1>{html.escape(project)}: the ladder over time</h1>
<p>Machines: {legend}. {len(revs)} commit(s) with a % of cuBLAS; a point links to its commit.</p>
{body}
<script>{SCRIPT}</script>
</body></html>
"""


def write(root: str, results_dir: str, html_dir: str, index: dict, branches: list) -> str:
    """ladder.html in ``html_dir`` from the merged results and asv's index.json; returns its path."""
    rev_to_hash = {int(r): h for r, h in index["revision_to_hash"].items()}
    rev_to_date = {int(r): d for r, d in index.get("revision_to_date", {}).items()}
    charts = collect(results_dir, {h: r for r, h in rev_to_hash.items()})
    machines = sorted({m for stages in charts.values() for by_m in stages.values() for m in by_m})
    text = page(charts, machines, rev_to_hash, rev_to_date, index.get("show_commit_url") or "#",
                index.get("project") or "asv")
    path = os.path.join(html_dir, "ladder.html")
    asv_results.write_text_atomically(path, text)
    with open(os.path.join(html_dir, "ladder.json"), "w", encoding="utf-8") as f:
        json.dump({"machines": machines, "charts": [f"{fam}-{p}" for fam, p in charts]}, f)
    return path
