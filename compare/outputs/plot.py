"""Two pictures of one run: TFLOP/s against size (cuBLAS as the reference line) and the staircase
(% of cuBLAS per stage at one size)."""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from ..harness.runner import OK, Result

# Each kernel line gets a (colour, marker) pair. Ten colours and seven markers advance together,
# and 10 and 7 share no factor, so no two of the first 70 lines look alike (a colour cycle alone
# repeats at the 11th line: stage 01 and stage 10's atomic variant were both blue). The family
# sets the line style on top (CUDA solid, Triton dotted); cuBLAS is always black and dashed.
COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple",
           "tab:brown", "tab:pink", "tab:gray", "tab:olive", "tab:cyan")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
FAMILY_LINESTYLE = {"cuda": "-", "triton": ":"}


def _label(r: Result) -> str:
    return f"{r.kernel} [{r.precision}]"


def line_styles(labels: Iterable[str]) -> dict[str, tuple[str, str]]:
    """(colour, marker) per label, in the order given: distinct for up to 70 labels."""
    return {label: (COLOURS[i % len(COLOURS)], MARKERS[i % len(MARKERS)])
            for i, label in enumerate(dict.fromkeys(labels))}


def default_title(results: list[Result], gpu: str = "") -> str:
    """A short description of what was measured: GPU, precisions, families, sizes."""
    precisions = ", ".join(dict.fromkeys(r.precision for r in results))
    families = ", ".join(dict.fromkeys(r.family for r in results))
    shapes = len({r.shape for r in results})
    parts = [gpu.strip() or "GPU not recorded", precisions, families,
             f"{shapes} shape{'s' if shapes != 1 else ''}"]
    return "  ·  ".join(p for p in parts if p)


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

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(15, 7), gridspec_kw={"width_ratios": [3, 2]})
    lines = defaultdict(list)
    for r in ok:
        lines[_label(r)].append((xpos[r.shape], r.tflops, r.family))
    styles = line_styles(label for label, pts in sorted(lines.items()) if pts[0][2] != "cublas")
    for label, pts in sorted(lines.items()):
        pts.sort()
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        if pts[0][2] == "cublas":
            ax1.plot(xs, ys, "k--", lw=2.5, marker="s", label=label, zorder=5)
        else:
            colour, marker = styles[label]
            ax1.plot(xs, ys, linestyle=FAMILY_LINESTYLE.get(pts[0][2], "-."), color=colour,
                     marker=marker, label=label)
    ax1.set_xticks(range(len(shapes)), [s for _, s in shapes], rotation=30, ha="right")
    ax1.set_ylabel("TFLOP/s (2MNK / median time)")
    ax1.set_xlabel("M x N x K")
    ax1.set_title("Throughput by size (cuBLAS dashed)")
    ax1.grid(alpha=0.3)
    ax1.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.22))

    # Staircase: the largest shape that has a cuBLAS row, one bar per kernel in ladder order.
    with_base = [r for r in ok if r.pct_cublas is not None and r.family != "cublas"]
    if with_base:
        size, shape = max((r.M * r.N * r.K, r.shape) for r in with_base)
        bars = [r for r in with_base if r.shape == shape]
        colors = {"cuda": "tab:blue", "triton": "tab:orange"}
        ax2.bar(range(len(bars)), [r.pct_cublas for r in bars], color=[colors.get(r.family, "gray") for r in bars])
        ax2.set_xticks(range(len(bars)), [_label(r) for r in bars], rotation=60, ha="right", fontsize=7)
        ax2.axhline(100, color="k", ls="--", lw=1.5, label="cuBLAS")
        for i, r in enumerate(bars):
            ax2.text(i, r.pct_cublas + 1, f"{r.pct_cublas:.0f}", ha="center", fontsize=7)
        ax2.set_ylabel("% of cuBLAS (same run, same inputs)")
        ax2.set_title(f"Staircase at {shape}")
        ax2.legend(fontsize=8)
    else:
        ax2.text(0.5, 0.5, "no cuBLAS baseline in this run", ha="center", transform=ax2.transAxes)
    fig.suptitle(title or default_title(ok, gpu), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
