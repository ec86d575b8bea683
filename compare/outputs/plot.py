"""Two pictures of one run: TFLOP/s against size (cuBLAS as the reference line) and the staircase
(% of cuBLAS per stage at one size)."""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from ..harness.runner import OK, Result
from .matrix import shape_label

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


def plot(results: list[Result], path: str, title: str = "", gpu: str = "") -> str:
    """Draw both pictures into ``path`` (.png/.svg). The figure's title is ``title`` when given,
    else :func:`default_title` (``gpu``, precisions, families, sizes)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in results if r.status == OK and r.tflops]
    if not ok:
        raise ValueError("nothing to plot: no row has status ok and a time (was it a --check run?)")
    shapes = sorted({(r.M * r.N * r.K, r.shape) for r in ok})
    xpos = {s: i for i, (_, s) in enumerate(shapes)}

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(16, 7.5), gridspec_kw={"width_ratios": [3, 2]})
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
    fig.suptitle(title or default_title(ok, gpu), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
