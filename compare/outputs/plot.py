"""Three pictures of one run: TFLOP/s against size (cuBLAS as the reference line), the staircase
(% of cuBLAS per stage at one size), and the roofline (every row against this GPU's measured
peaks: compare.harness.sol)."""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Optional

import numpy as np

from ..harness import sol
from ..harness.runner import OK, Result
from .matrix import shape_label

# matplotlib (optional, ~370 ms to import, its backend chosen before pyplot) is imported by the
# functions that draw.

# Each kernel gets its own colour and a marker: 40 colours (tab10's ten, then tab20's ten light
# shades, then tab20b's twenty) and seven markers advance together, so no two of the first 40
# kernels share a colour and no two of the first 280 share both (the ladder has 19 kernels; a
# ten-colour cycle gave stage 01 and stage 10's atomic variant the same blue). The family sets
# the line style on top (CUDA solid, Triton dotted); cuBLAS is always black and dashed.
_TAB20 = ("#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7",
          "#dbdb8d", "#9edae5")
_TAB20B = ("#393b79", "#5254a3", "#6b6ecf", "#9c9ede", "#637939", "#8ca252", "#b5cf6b", "#cedb9c",
           "#8c6d31", "#bd9e39", "#e7ba52", "#e7cb94", "#843c39", "#ad494a", "#d6616b", "#e7969c",
           "#7b4173", "#a55194", "#ce6dbd", "#de9ed6")
COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple",
           "tab:brown", "tab:pink", "tab:gray", "tab:olive", "tab:cyan") + _TAB20 + _TAB20B
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
FAMILY_LINESTYLE = {"cuda": "-", "triton": ":"}
CUBLAS_MARKERS = {"fp32": "s", "tf32": "^", "tf32x3": "D"}
QUESTION = "How close is each kernel to cuBLAS?"


def _label(r: Result) -> str:
    return f"{r.kernel} [{r.precision}]"


def line_styles(labels: Iterable[str]) -> dict[str, tuple[str, str]]:
    """(colour, marker) per label, in the order given: distinct colours for up to 40 labels,
    distinct pairs for up to 280."""
    return {label: (COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)])
            for i, label in enumerate(dict.fromkeys(labels))}


def default_title(results: list[Result], gpu: str = "") -> str:
    """The question the figure answers, then what was measured: GPU, precisions, families, sizes."""
    precisions = ", ".join(dict.fromkeys(r.precision for r in results))
    families = ", ".join(dict.fromkeys(r.family for r in results))
    shapes = len({r.shape for r in results})
    parts = [gpu.strip() or "GPU not recorded", precisions, families,
             f"{shapes} shape{'s' if shapes != 1 else ''}"]
    return QUESTION + "\n" + "  ·  ".join(p for p in parts if p)


def staircase_bars(ok: list[Result]) -> list[Result]:
    """One bar per kernel (and precision) in ladder order (the order the run used): its row at
    the largest shape where it has a % of cuBLAS. Every rung of both families is there, whatever
    shapes each group ran (the tiled stages never run the split-K shapes)."""
    best: dict[str, Result] = {}
    for r in ok:
        if r.family == "cublas" or r.pct_cublas is None:
            continue
        key = _label(r)
        if key not in best or r.M * r.N * r.K > best[key].M * best[key].N * best[key].K:
            best[key] = r
    order = list(dict.fromkeys(_label(r) for r in ok if r.family != "cublas"))
    return [best[k] for k in order if k in best]


def plot(results: list[Result], path: str, title: str = "", gpu: str = "", env: Optional[dict] = None) -> str:
    """Draw the three pictures into ``path`` (.png/.svg). The figure's title is ``title`` when given,
    else :func:`default_title` (``gpu``, precisions, families, sizes); ``env`` (the run's
    environment) gives the roofline its measured peaks."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in results if r.status == OK and r.tflops]
    if not ok:
        raise ValueError("nothing to plot: no row has status ok and a time (was it a --check run?)")
    shapes = sorted({(r.M * r.N * r.K, r.shape) for r in ok})
    xpos = {s: i for i, (_, s) in enumerate(shapes)}

    fig = plt.figure(figsize=(16, 15))
    grid = fig.add_gridspec(2, 2, width_ratios=[3, 2], height_ratios=[1, 1])
    ax1, ax2, ax3 = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, :])
    lines = defaultdict(list)
    for r in ok:
        lines[_label(r)].append((xpos[r.shape], r.tflops, r.family))
    # colours in ladder order (the run's), shared by the lines and the staircase's bars
    styles = line_styles(_label(r) for r in ok if r.family != "cublas")
    for label, pts in sorted(lines.items(), key=lambda kv: (kv[1][0][2] != "cublas", list(lines).index(kv[0]))):
        pts.sort()
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        if pts[0][2] == "cublas":
            # one black dashed line per precision; the marker tells fp32 from tf32
            marker = CUBLAS_MARKERS.get(label.rsplit("[", 1)[-1].rstrip("]"), "s")
            ax1.plot(xs, ys, "k--", lw=2.5, marker=marker, label=label, zorder=5)
        else:
            colour, marker = styles[label]
            ax1.plot(xs, ys, linestyle=FAMILY_LINESTYLE.get(pts[0][2], "-."), color=colour,
                     marker=marker, label=label)
    ax1.set_xticks(range(len(shapes)), [s for _, s in shapes], rotation=30, ha="right")
    rates = [r.tflops for r in ok]
    if max(rates) / min(rates) > 20:   # naive stages sit near 1% of tuned ones: only a log axis shows both
        ax1.set_yscale("log")
    ax1.set_ylabel("TFLOP/s (2MNK / median time)")
    ax1.set_xlabel("M x N x K")
    ax1.set_title("Throughput by size (cuBLAS dashed)")
    ax1.grid(alpha=0.3)
    ax1.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.22))

    # Staircase: every kernel's % of cuBLAS, rungs in ladder order, beside cuBLAS's 100%.
    bars = staircase_bars(ok)
    if bars:
        one_shape = len({r.shape for r in bars}) == 1
        several_precisions = len({r.precision for r in bars}) > 1
        names = ["cuBLAS"] + [(_label(r) if several_precisions else r.kernel)
                              + ("" if one_shape else f" @ {shape_label(r.shape)}") for r in bars]
        heights = [100.0] + [r.pct_cublas for r in bars]
        colours = ["black"] + [styles[_label(r)][0] for r in bars]
        drawn = ax2.bar(range(len(names)), heights, color=colours, edgecolor="black", linewidth=0.5)
        for patch, r in zip(list(drawn)[1:], bars):
            if r.family == "triton":
                patch.set_hatch("//")   # the family, legible without colour
        ax2.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=7)
        ax2.axhline(100, color="k", ls="--", lw=1.5, label="cuBLAS = 100%")
        for i, h in enumerate(heights):
            ax2.text(i, h + 1, f"{h:.0f}", ha="center", fontsize=7)
        ax2.set_ylabel("% of cuBLAS (same run, same inputs)")
        ax2.set_title(f"Staircase at {bars[0].shape}" if one_shape else
                      "Staircase: each kernel at its largest shape")
        from matplotlib.patches import Patch
        ax2.legend(handles=[ax2.get_lines()[0], Patch(facecolor="white", edgecolor="black", label="CUDA"),
                            Patch(facecolor="white", edgecolor="black", hatch="//", label="Triton")], fontsize=8)
    else:
        ax2.text(0.5, 0.5, "no cuBLAS baseline in this run", ha="center", transform=ax2.transAxes)
    draw_roofline(ax3, roofline_points(ok), dict(env or {}, gpu=(env or {}).get("gpu") or gpu))
    fig.suptitle(title or default_title(ok, gpu), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


# --------------------------------------------------------------------------------------- roofline

# The roof of each precision: the pipe its products run on, and how many products it does there
# (compare.harness.sol: tf32x3 is three TF32 products, so its roof is a third of the TF32 one).
ROOF_NAMES = {"fp32": "FP32 FFMA", "tf32": "TF32 tensor core", "tf32x3": "tf32x3 = TF32 / 3"}


def roofs(peaks: dict, precisions: Iterable[str]) -> dict[str, float]:
    """{precision: compute roof in TFLOP/s at the probe's clock} for the precisions run."""
    out = {}
    for p in dict.fromkeys(precisions):
        pipe = (peaks or {}).get(sol.PIPE.get(p, ""))
        if isinstance(pipe, dict) and pipe.get("tflops"):
            out[p] = float(pipe["tflops"]) / sol.PRODUCTS[p]
    return out


def roofline_points(results: Iterable) -> list[dict]:
    """One point per timed row (a Result or the dict --format json wrote): its intensity (FLOPs /
    minimum DRAM bytes), its rate (FLOPs / median time, the beta term included, as the intensity
    counts it) and whether it is cuBLAS."""

    def get(r, k):
        return r.get(k) if isinstance(r, dict) else getattr(r, k, None)
    pts = []
    for r in results:
        ms = get(r, "median_ms")
        if get(r, "status") != OK or not ms:
            continue
        M, N, K, beta = int(get(r, "M")), int(get(r, "N")), int(get(r, "K")), float(get(r, "beta") or 0.0)
        f, b = sol.flops(M, N, K, beta), sol.min_bytes(M, N, K, beta)
        pts.append({"label": f"{get(r, 'kernel')} [{get(r, 'precision')}]", "kernel": get(r, "kernel"),
                    "family": get(r, "family"), "precision": get(r, "precision"), "shape": get(r, "shape"),
                    "intensity": f / b, "tflops": f / (float(ms) * 1e-3) / 1e12, "cublas": get(r, "family") == "cublas",
                    "achieved_intensity": None, "sm_clock_mhz": get(r, "sm_clock_mhz")})
    return pts


def roofline_title(env: dict, pts: list[dict]) -> str:
    p = (env or {}).get("peaks") or {}
    gpu = (env or {}).get("gpu") or p.get("gpu") or "GPU not recorded"
    if not p.get("dram") or not p.get("fp32"):
        return f"Roofline: {gpu} (no measured peaks: python -m cuda_kernels.probes.peaks)"
    clocks = sorted(c for c in (q.get("sm_clock_mhz") for q in pts) if c)
    rows = "" if not clocks else (f"; rows at {clocks[0]} MHz" if clocks[0] == clocks[-1]
                                  else f"; rows at {clocks[0]}-{clocks[-1]} MHz")
    return (f"Roofline: {gpu}; roofs measured at {p['fp32'].get('sm_mhz')} MHz{rows}: FFMA {p['fp32']['tflops']:.1f}, "
            f"TF32 {p.get('tf32', {}).get('tflops', 0):.0f} TFLOP/s, DRAM copy {p['dram']['gbps']:.0f} GB/s")


def draw_roofline(ax, pts: list[dict], env: dict, styles: Optional[dict] = None, kernel_legend: bool = True) -> None:
    """The roofline on ``ax``: the memory roof and the compute roofs of the precisions in
    ``pts``, every point at its intensity (cuBLAS a black star), and, where a point has an
    ``achieved_intensity`` (the DRAM bytes Nsight Compute counted), a hollow marker there joined
    to it: how far the kernel's traffic is from the minimum. ``styles`` ({label: (colour, marker)})
    keeps the colours of the figure's other panels; without ``kernel_legend`` the legend names only
    the roofs (inside the axes: a figure whose other legend names the kernels)."""
    peaks = (env or {}).get("peaks") or {}
    xs = [q["intensity"] for q in pts] + [q["achieved_intensity"] for q in pts if q.get("achieved_intensity")]
    lo, hi = (min(xs) / 3, max(xs) * 3) if xs else (0.1, 1e4)
    roof = roofs(peaks, (q["precision"] for q in pts))
    bw = (peaks.get("dram") or {}).get("gbps")
    if bw:
        lo, hi = min(lo, min(roof.values(), default=1) * 1e3 / bw / 3), max(hi, max(roof.values(), default=1) * 1e3 / bw * 3)
        x = np.geomspace(lo, hi, 256)
        top = max(roof.values(), default=None)
        mem = x if top is None else x[x <= top * 1e3 / bw]    # the slope up to the highest ridge
        ax.plot(mem, bw / 1e3 * mem, color="tab:red", lw=1.5, ls="-", label=f"memory roof: DRAM copy {bw:.0f} GB/s")
        for i, (prec, t) in enumerate(roof.items()):
            flat = x[x >= t * 1e3 / bw]     # from its ridge on: below it the memory roof is the ceiling
            ax.plot(np.concatenate([[t * 1e3 / bw], flat]), np.full(len(flat) + 1, t), color="0.15", lw=2.2 - 0.5 * i,
                    ls=("-", "--", ":")[i % 3],
                    label=f"{ROOF_NAMES.get(prec, prec)} roof {t:.1f} TFLOP/s (ridge {t * 1e3 / bw:.0f} FLOP/B)")
    styles = dict(line_styles(q["label"] for q in pts if not q["cublas"]), **(styles or {}))
    seen = set()
    for q in pts:
        if q["cublas"]:
            kw = dict(color="black", marker="*", s=160, zorder=6, edgecolors="white", linewidths=0.5)
        else:
            colour, marker = styles[q["label"]]
            kw = dict(color=colour, marker=marker, s=36, zorder=5)
        label = q["label"] if q["label"] not in seen and kernel_legend else None
        seen.add(q["label"])
        ax.scatter([q["intensity"]], [q["tflops"]], label=label, **kw)
        if q.get("achieved_intensity"):
            ax.scatter([q["achieved_intensity"]], [q["tflops"]], facecolors="none",
                       edgecolors=kw["color"], marker=kw["marker"], s=kw["s"], zorder=4)
            ax.plot([q["achieved_intensity"], q["intensity"]], [q["tflops"]] * 2, color=kw["color"], lw=0.7, alpha=0.6)
    if not kernel_legend and any(q["cublas"] for q in pts):
        ax.scatter([], [], color="black", marker="*", s=160, label="cuBLAS (the other points: the kernels, coloured as above)")
    if any(q.get("achieved_intensity") for q in pts):
        ax.scatter([], [], facecolors="none", edgecolors="k", marker="o",
                   label="hollow: at the DRAM bytes Nsight Compute counted (achieved intensity)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity, FLOP / byte (FLOPs over the minimum DRAM bytes: A, B, C once)")
    ax.set_ylabel("TFLOP/s (FLOPs / median time)")
    ax.set_title(roofline_title(env, pts), fontsize=9)
    ax.grid(True, which="both", alpha=0.25)
    if not pts:
        ax.text(0.5, 0.5, "no row with a median time", ha="center", transform=ax.transAxes)
    if ax.get_legend_handles_labels()[0]:
        if kernel_legend:
            ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        else:
            ax.legend(fontsize=6, loc="lower right")


def plot_roofline(pts: list[dict], path: str, env: dict) -> str:
    """The roofline alone into ``path`` (the profile's companion picture)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    if not pts:
        raise ValueError("nothing to plot: no row has status ok and a time")
    fig, ax = plt.subplots(figsize=(14, 7.5))
    draw_roofline(ax, pts, env)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
