"""The figures a user reads, checked against numbers worked out by hand here, never through the
suite's own helpers (a test that asks the code for its FLOP count agrees with any definition).

* TFLOP/s and % of peak: 2*M*N*K over the median time, and nothing for the beta*C term (the
  suite counts the product only, as cuBLAS's own benchmarks do).
* "ms ±IQR/2": quartiles of the samples by the exclusive method (statistics.quantiles' default:
  the p-quantile sits at position (n+1)*p of the sorted samples).
* The L2 flush buffer: twice the device's L2 (compare/harness/timing.py's module doc), so that
  nothing of a sample's operands survives into the next "cold" sample.
* Every status that ran and has no number counts as failed in every summary.
* --resume refuses a checkpoint made with any flag that changes what was measured.
"""
from __future__ import annotations

import math
import types

import pytest

from compare.harness import runner, timing
from compare.harness.problem import Problem
from compare.harness.registry import Kernel


def _cpu_gemm(name: str = "test.cpu_gemm", family: str = "triton") -> Kernel:
    def prepare(problem, inputs, options=None):
        def launch():
            A, B, C = inputs.A, inputs.B, inputs.C
            C.copy_(problem.alpha * (A @ B) + (problem.beta * C if problem.beta else 0))
        return launch
    stage = "cublas" if family == "cublas" else "naive_blocked"
    return Kernel(name=name, family=family, stage=stage, precisions=("fp32",), prepare=prepare, interpretable=True)


class ScriptedGPU:
    """The GPU pieces of timing.measure (method "events"), each sample's time given in advance."""

    def __init__(self, samples_s):
        self.samples = list(samples_s)
        self.clock = 0.0

    def now(self):
        self.clock += 1e-3
        return self.clock

    def synchronize(self):
        pass

    def flush_l2(self):
        pass

    def new_event(self):
        return object()

    def record(self, event):
        pass

    def elapsed_s(self, start, end):
        return self.samples.pop(0)


# ---------------------------------------------------------------------- TFLOP/s, % of peak, IQR
def test_tflops_pct_peak_and_iqr_of_a_row_by_hand(monkeypatch):
    # Eight samples (ms), in the order they were taken: sorted 1.0, 1.4, ..., 3.8 (steps of 0.4).
    samples_ms = [2.6, 1.0, 3.8, 1.8, 3.0, 1.4, 3.4, 2.2]
    # median: mean of the 4th and 5th sorted, (2.2 + 2.6) / 2 = 2.4 ms.
    # exclusive quartiles: Q1 at position 9 * 0.25 = 2.25: 1.4 + 0.25 * 0.4 = 1.5 ms;
    #                      Q3 at position 9 * 0.75 = 6.75: 3.0 + 0.75 * 0.4 = 3.3 ms; IQR 1.8 ms.
    # (the inclusive method would give 1.7 and 3.1, IQR 1.4: the table would read ±0.7.)
    # FLOPs: 2 * 96 * 80 * 64 = 983,040 (alpha and beta change nothing: the product is counted);
    # TFLOP/s: 983,040 / 2.4e-3 s = 4.096e8 FLOP/s = 4.096e-4 TFLOP/s; against a peak of
    # 8.192e-4 TFLOP/s that is 50%.
    monkeypatch.setattr(runner.gpuinfo, "environment", lambda: types.SimpleNamespace(fp32_peak_tflops=8.192e-4))
    p = Problem(96, 80, 64, alpha=2.0, beta=0.5)
    gpu = ScriptedGPU([t / 1e3 for t in samples_ms])
    r = runner.run_kernel(_cpu_gemm(), p, device="cpu", batch=False,
                          measure_kw={"gpu": gpu, "method": "events", "warmup_s": 0.0, "min_samples": 8,
                                      "max_samples": 8})
    assert r.status == "ok", r.reason
    assert r.samples == 8 and not gpu.samples
    assert math.isclose(r.median_ms, 2.4, rel_tol=1e-12)
    assert math.isclose(r.iqr_ms, 1.8, rel_tol=1e-12)
    assert math.isclose(r.min_ms, 1.0, rel_tol=1e-12)
    assert math.isclose(r.tflops, 4.096e-4, rel_tol=1e-12)
    assert math.isclose(r.pct_peak, 50.0, rel_tol=1e-12)

    from compare.outputs.report import display_rows
    shown = display_rows([r])[0]
    assert shown["ms ±IQR/2"] == "2.4 ±0.9"
    assert shown["% peak"] == "50"


def test_the_flop_count_of_a_non_square_shape_by_hand():
    # 2 * 3 * 5 * 7 = 210: every dimension once, the multiply and the add of each product term.
    assert Problem(3, 5, 7).flops == 210
    assert Problem(3, 5, 7, alpha=3.0, beta=1.0).flops == 210


def test_pct_of_cublas_by_hand():
    # kernel 0.3 TFLOP/s, cuBLAS 0.4 TFLOP/s at the same shape and precision: 75%.
    p = Problem(16, 8, 24)
    k = runner.blank_row(_cpu_gemm(), p, runner.OK)
    b = runner.blank_row(_cpu_gemm("cublas", "cublas"), p, runner.OK)
    k.tflops, b.tflops = 0.3, 0.4
    runner.fill_pct_cublas([b, k])
    assert math.isclose(k.pct_cublas, 75.0, rel_tol=1e-12)


# ---------------------------------------------------------------------- the L2 flush
@pytest.mark.parametrize("l2_bytes, assumed", [(50 * 2**20, 50 * 2**20), (0, 64 * 2**20)])
def test_the_l2_flush_buffer_is_twice_the_l2_and_is_all_read(monkeypatch, l2_bytes, assumed):
    """An H100's 50 MiB L2, and a device that reports none (64 MiB is then assumed)."""
    import torch
    real_zeros = torch.zeros
    made = []

    def zeros(*shape, device=None, **kw):     # the buffer on the CPU, with the size asked for
        t = real_zeros(*shape, **kw)
        made.append(t)
        return t
    monkeypatch.setattr(timing, "_flush_buf", None)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: types.SimpleNamespace(L2_cache_size=l2_bytes))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda: None)
    monkeypatch.setattr(torch, "zeros", zeros)
    buf, sink = timing.l2_flush_buffer()
    assert made and buf is made[0]
    assert buf.numel() * buf.element_size() >= 2 * assumed
    if l2_bytes:
        # a flush reads every byte of it (what evicts the operands): the whole buffer, not a
        # slice, and writes none of it (a written buffer leaves L2 dirty for the timed launch)
        buf.fill_(3)
        gpu = timing.TorchGPU(flush=True)
        gpu.flush_l2()
        assert buf.numel() == 2 * assumed // 4
        assert math.isclose(float(sink), 3 * buf.numel(), rel_tol=1e-4)
        assert float(buf.min()) == float(buf.max()) == 3


# ---------------------------------------------------------------------- statuses without a number
NO_NUMBER = ["FAILED", "error", "FAULT", "HUNG"]      # every status of a row that ran, less "ok"


def test_the_declaration_is_every_status_without_a_number():
    from compare.harness import status
    assert set(status.NO_NUMBER) == set(NO_NUMBER)
    assert set(status.ALL) == {"ok", "unsupported", "skipped", *NO_NUMBER}
    assert set(runner.CHECKED) == {"ok", *NO_NUMBER}


def _rows(bad_status: str):
    """cuBLAS timed at two shapes; the kernel at 50% of it at the first, ``bad_status`` at the second."""
    k, b = _cpu_gemm("test.k"), _cpu_gemm("cublas", "cublas")
    p1, p2 = Problem(64, 64, 64), Problem(128, 128, 128)
    rows = []
    for p, tf in ((p1, 2.0), (p2, 4.0)):
        r = runner.blank_row(b, p, runner.OK)
        r.tflops, r.median_ms = tf, 1.0
        rows.append(r)
    ok = runner.blank_row(k, p1, runner.OK)
    ok.tflops, ok.median_ms, ok.pct_cublas = 1.0, 2.0, 50.0
    bad = runner.blank_row(k, p2, bad_status, "what went wrong")
    rows += [ok, bad]
    return rows, bad


@pytest.mark.parametrize("bad_status", NO_NUMBER)
def test_a_row_without_a_number_counts_as_failed_in_every_summary(bad_status, monkeypatch, tmp_path):
    rows, bad = _rows(bad_status)
    # the exit status
    assert runner.exit_status(rows) == 1
    # the sweep summary
    from compare.outputs import sweep
    (e,) = sweep.summarize(rows)
    assert (e["n_ok"], e["n_failed"], e["n_timed"], e["flagged"]) == (1, 1, 1, True)
    assert e["failed_shapes"] == ["128x128x128"] and math.isclose(e["geomean_pct"], 50.0, rel_tol=1e-12)
    # the matrix summary: the cell names the status, the geomean is marked as over fewer shapes
    from compare.outputs import matrix
    text = matrix.render(rows, "markdown")
    line = next(x for x in text.splitlines() if x.startswith("| test.k"))
    assert line.split("|")[2:5] == [" **50** ", f" {bad_status} ", " 50! "], line
    assert f"1 {bad_status}" in text and "!: geomean over the shapes it passed" in text, text
    # the pictures: the sweep's red cross at the failed shape, nothing of it in the CDF; the
    # run's plot draws only rows with a number (a stale TFLOP/s on the failed row is not drawn)
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    drawn = {"plot": [], "step": []}
    real_plot, real_step = Axes.plot, Axes.step

    def plot(self, *a, **kw):
        drawn["plot"].append((a, kw))
        return real_plot(self, *a, **kw)

    def step(self, *a, **kw):
        drawn["step"].append((a, kw))
        return real_step(self, *a, **kw)
    monkeypatch.setattr(Axes, "plot", plot)
    monkeypatch.setattr(Axes, "step", step)
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **kw: None)
    from compare.outputs import sweep_plot
    monkeypatch.setattr(sweep_plot, "write_atomically", lambda path, write: None)
    sweep.plot_sweep(rows, str(tmp_path / "sweep.png"))
    crosses = [a for a, kw in drawn["plot"] if kw.get("marker") == "x" and a and len(a[0])]
    assert crosses == [([1], [0.015])], drawn["plot"]
    assert [list(a[0]) for a, _ in drawn["step"]] == [[50.0]]
    drawn["plot"].clear()
    bad.tflops = 999.0
    from compare.outputs import plot as run_plot
    run_plot.plot(rows, str(tmp_path / "run.png"))
    assert drawn["plot"] and all(999.0 not in list(a[1]) for a, _ in drawn["plot"] if len(a) > 1), drawn["plot"]
    bad.tflops = None
    # the gate's points (the asv suite): the point fails, with the row's status as its label
    from compare.ci import suite_cache
    summary = suite_cache.row_summary(bad)
    assert summary["status"] == "failed" and summary["label"] == bad_status
    with pytest.raises(AssertionError):
        suite_cache.pct_of("test.k", "fp32", ["64x64x64", "128x128x128"], rows)


# ---------------------------------------------------------------------- --resume
_BASE = ["--distribution", "interpret_tiny:6:0", "--kernel", "triton.stream_k", "--workers", "2"]
# Each flag that changes what a checkpoint's rows measured, and the header key it is refused on.
_MEASURED = {
    "seed": ["--seed", "1"],
    "alpha": ["--alpha", "2"],
    "beta": ["--beta", "0.5"],
    "options": ["--opt", "triton.stream_k:grid=7"],
    "budget_s": ["--budget", "3"],
    "target_noise": ["--target-noise", "0.01"],
    "mode": ["--check"],
    "precisions": ["--precision", "tf32"],
}


def _selection(argv, kernels=("triton.stream_k",)):
    from compare.cli import build_parser
    from compare.harness.checkpoint import measured
    args = build_parser().parse_args(argv)
    return measured(args, [(types.SimpleNamespace(name=k), None) for k in kernels])


def _checkpoint(tmp_path, selection):
    from compare.harness.checkpoint import Checkpoint
    path = str(tmp_path / "ck.jsonl")
    Checkpoint(path, selection, {}).close()
    return path


@pytest.mark.parametrize("key", sorted(_MEASURED) + ["interpret", "kernels"])
def test_resume_refuses_every_change_of_what_is_measured(key, tmp_path):
    from compare.harness.errors import UsageError
    from compare.harness.checkpoint import resume
    path = _checkpoint(tmp_path, _selection(_BASE))
    if key == "kernels":
        now, key = _selection(_BASE, kernels=("triton.stream_k", "triton.tiled")), "kernels"
    elif key == "interpret":
        now, key = _selection(_BASE + ["--interpret"]), "mode"
    else:
        now = _selection(_BASE + _MEASURED[key])
    with pytest.raises(UsageError, match=f"other selection flags \\({key}: file "):
        resume(path, now)


@pytest.mark.parametrize("same", [["-q"], ["--workers", "3"], ["--kernel-timeout", "30"], ["--compile-jobs", "1"],
                                  ["--time-limit", "100"], ["--precision", "fp32"], ["--seed", "0"]])
def test_resume_takes_flags_that_change_nothing_measured(same, tmp_path):
    from compare.harness.checkpoint import resume
    path = _checkpoint(tmp_path, _selection(_BASE))
    assert resume(path, _selection(_BASE + same)) == {}
