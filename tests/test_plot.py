"""The plot tells its lines apart and says what was measured, not how the command line looked."""
import pytest

from compare.outputs import plot as plotmod
from compare.harness.runner import Result, fill_pct_cublas

matplotlib = pytest.importorskip("matplotlib")  # the dev extra brings it; CI fails on this skip


def _rows(kernels, precision="fp32"):
    rows = []
    for i, (name, family) in enumerate([("cublas", "cublas"), *kernels]):
        for n in (1024, 4096):
            rows.append(Result(kernel=name, family=family, stage=name, group="tiled", variant="",
                               shape=f"{n}x{n}x{n}", M=n, N=n, K=n, precision=precision, alpha=1.0,
                               beta=0.0, status="ok", median_ms=1.0 + i,
                               tflops=2 * n**3 / ((1.0 + i) * 1e-3) / 1e12, rel_err=1e-6))
    fill_pct_cublas(rows)
    return rows


# The CUDA ladder and its variant plus the Triton kernels: more lines than a 10-colour cycle.
LADDER = [(f"cuda.{i:02d}_stage", "cuda") for i in range(1, 11)] + [("cuda.10_split_k_atomic", "cuda")] \
    + [(f"triton.k{i}", "triton") for i in range(19)]


def _drawn_figure(monkeypatch, rows, **kw):
    """Run plot() and keep the figure it draws (plot closes it after saving)."""
    import matplotlib.pyplot as plt
    kept = []
    real_close = plt.close
    monkeypatch.setattr(plt, "close", lambda fig=None: kept.append(fig))
    try:
        plotmod.plot(rows, kw.pop("path"), **kw)
    finally:
        monkeypatch.setattr(plt, "close", real_close)
    assert len(kept) == 1
    return kept[0]


def test_thirty_lines_look_different(monkeypatch, tmp_path):
    rows = _rows(LADDER)
    fig = _drawn_figure(monkeypatch, rows, path=str(tmp_path / "p.png"))
    lines = [l for l in fig.axes[0].get_lines() if not l.get_label().startswith("cublas")]
    assert len(lines) == len(LADDER) == 30
    looks = [(matplotlib.colors.to_hex(l.get_color()), l.get_marker(), l.get_linestyle()) for l in lines]
    assert len(set(looks)) == len(looks), "two kernel lines share colour, marker and line style"
    assert len({look[0] for look in looks}) == len(looks), "two kernel lines share a colour"
    by_label = dict(zip((l.get_label() for l in lines), looks))
    # the collision that was reported: stage 01 and stage 10's atomic variant, both blue circles
    assert by_label["cuda.01_stage [fp32]"] != by_label["cuda.10_split_k_atomic [fp32]"]
    matplotlib.pyplot.close(fig)


def test_line_styles_are_distinct_for_seventy_labels():
    styles = plotmod.line_styles(f"k{i}" for i in range(70))
    assert len(set(styles.values())) == 70


def test_title_is_a_description_not_a_command_line(monkeypatch, tmp_path):
    rows = _rows(LADDER[:3]) + _rows(LADDER[:3], precision="tf32")
    fig = _drawn_figure(monkeypatch, rows, path=str(tmp_path / "p.svg"), gpu="NVIDIA H200")
    title = fig._suptitle.get_text()
    assert "NVIDIA H200" in title and "fp32, tf32" in title and "2 shapes" in title, title
    assert "--" not in title and "/" not in title, title
    matplotlib.pyplot.close(fig)
    # an explicit title still wins
    fig = _drawn_figure(monkeypatch, rows, path=str(tmp_path / "q.png"), title="my title")
    assert fig._suptitle.get_text() == "my title"
    matplotlib.pyplot.close(fig)


def _ladder_rows():
    """A default run's shape: every registered kernel at its own group's shapes, cuBLAS at all."""
    from compare.harness import registry
    groups = {"naive": [256, 1024], "tiled": [1024, 4096], "split_k": [(256, 256, 131072)]}
    rows = []
    for group, shapes in groups.items():
        for s in shapes:
            M, N, K = s if isinstance(s, tuple) else (s, s, s)
            for i, k in enumerate(registry.kernels()):
                if k.family != "cublas" and k.group != group:
                    continue
                ms = 1.0 + i / 10
                rows.append(Result(kernel=k.name, family=k.family, stage=k.stage, group=k.group, variant=k.variant,
                                   shape=f"{M}x{N}x{K}", M=M, N=N, K=K, precision="fp32", alpha=1.0, beta=0.0,
                                   status="ok", median_ms=ms, tflops=2 * M * N * K / (ms * 1e-3) / 1e12))
    fill_pct_cublas(rows)
    return rows


def test_every_kernel_has_its_own_colour_and_every_rung_is_on_the_staircase(monkeypatch, tmp_path):
    rows = _ladder_rows()
    kernels = list(dict.fromkeys(r.kernel for r in rows if r.family != "cublas"))
    assert len(kernels) >= 19 and {r.family for r in rows} == {"cublas", "cuda", "triton"}
    fig = _drawn_figure(monkeypatch, rows, path=str(tmp_path / "p.png"), gpu="NVIDIA H100 80GB HBM3")
    lines = [l for l in fig.axes[0].get_lines() if not l.get_label().startswith("cublas")]
    colours = [matplotlib.colors.to_hex(l.get_color()) for l in lines]
    assert len(lines) == len(kernels) and len(set(colours)) == len(colours), "two kernels share a colour"
    # the staircase: cuBLAS's bar, then one bar per kernel of both families (the split-K and
    # stream-K rungs too, though they ran other shapes than the tiled stages), ladder order
    ticks = [t.get_text() for t in fig.axes[1].get_xticklabels()]
    assert ticks[0] == "cuBLAS"
    assert [t.split(" @ ")[0] for t in ticks[1:]] == kernels
    assert any(t.startswith("triton.stream_k") for t in ticks) and any(t.startswith("cuda.11_stream_k") for t in ticks)
    bars = fig.axes[1].patches
    bar_colours = [matplotlib.colors.to_hex(b.get_facecolor()) for b in bars[1:len(kernels) + 1]]
    assert bar_colours == colours, "a bar's colour differs from its kernel's line"
    title = fig._suptitle.get_text()
    assert "NVIDIA H100 80GB HBM3" in title and "How close is each kernel to cuBLAS?" in title
    assert "/" not in title and "python" not in title and "--" not in title, title
    matplotlib.pyplot.close(fig)
