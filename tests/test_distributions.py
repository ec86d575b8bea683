"""Generated shape distributions (--distribution, compare/harness/shapes.py) and the sweep
summary's percentiles (compare/outputs/sweep.py). CPU only, no kernel runs."""
from __future__ import annotations

import math

import pytest

from compare import cli
from compare.harness import shapes
from compare.harness.errors import UsageError
from compare.harness.problem import MAX_ELEMENTS, MAX_K_FP32
from compare.outputs import sweep

GPU_DISTRIBUTIONS = ("loguniform", "llm")


@pytest.mark.parametrize("name", GPU_DISTRIBUTIONS)
def test_count_bounds_and_min_flops(name):
    got = shapes.distribution(name, 500, 3)
    assert len(got) == 500 and len(set(got)) == 500                  # count honoured, distinct
    for s in got:
        M, N, K = s
        assert all(type(d) is int and d >= 1 for d in s)
        assert shapes.MIN_FLOPS <= 2 * M * N * K <= shapes.MAX_FLOPS, s
        assert M * K + K * N + M * N <= shapes.MAX_OPERAND_ELEMENTS, s
        assert max(M * K, K * N, M * N) <= MAX_ELEMENTS and K <= MAX_K_FP32, s


@pytest.mark.parametrize("name", (*GPU_DISTRIBUTIONS, "interpret_tiny"))
def test_deterministic_by_seed_and_prefix_stable(name):
    a = shapes.distribution(name, 200, 7)
    assert a == shapes.distribution(name, 200, 7)
    assert a != shapes.distribution(name, 200, 8)
    assert shapes.distribution(name, 50, 7) == a[:50]     # a longer corpus extends a shorter one


def test_loguniform_spans_the_stream_k_ranges():
    got = shapes.distribution("loguniform", 2000, 0)
    lo, hi = shapes.LOGUNIFORM_RANGE
    dims = [d for s in got for d in s]
    assert min(dims) >= lo and max(dims) <= hi
    # log-uniform: about as many dimensions below the geometric midpoint as above it
    mid = math.sqrt(lo * hi)
    below = sum(d < mid for d in dims) / len(dims)
    assert 0.3 < below < 0.6, below


def test_llm_shapes_come_from_the_model_table():
    widths = {w for _, d, f in shapes.LLM_MODELS for w in (d, f, 3 * d)}
    for M, N, K in shapes.distribution("llm", 300, 0):
        assert N in widths and K in widths and shapes.LLM_TOKENS[0] <= M <= shapes.LLM_TOKENS[1]


def test_interpret_tiny_only_under_interpret():
    assert all(max(s) <= 48 for s in shapes.distribution_shapes("interpret_tiny:20", interpret=True))
    with pytest.raises(UsageError, match="--interpret"):
        shapes.distribution_shapes("interpret_tiny:20")


@pytest.mark.parametrize("spec, says", [
    ("gaussian", "NAME"), ("loguniform:ten", "COUNT"), ("loguniform:5:x", "SEED"),
    ("loguniform:0", "at least 1"), ("loguniform:1:2:3", "NAME"),
])
def test_bad_specs_are_usage_errors(spec, says):
    with pytest.raises(UsageError, match=says):
        shapes.parse_distribution(spec)


def test_parse_defaults():
    assert shapes.parse_distribution("llm") == ("llm", shapes.DEFAULT_COUNT, 0)
    assert shapes.parse_distribution("loguniform:30:4") == ("loguniform", 30, 4)


def test_impossible_count_says_so(monkeypatch):
    monkeypatch.setattr(shapes, "INTERPRET_TINY_RANGE", (8, 10))       # 27 distinct shapes
    assert len(shapes.distribution("interpret_tiny", 27, 0)) == 27
    with pytest.raises(UsageError, match="only 27 distinct shapes"):
        shapes.distribution("interpret_tiny", 28, 0)


def test_cli_distribution_is_a_sweep_and_bad_specs_exit_2(capsys):
    assert cli.main(["--interpret", "--distribution", "gaussian:5", "--kernel", "triton.stream_k"]) == 2
    assert "NAME" in capsys.readouterr().err
    assert cli.main(["--distribution", "interpret_tiny:5", "--kernel", "triton.stream_k", "--check"]) == 2
    assert "--interpret" in capsys.readouterr().err


# ---- percentiles --------------------------------------------------------------------------------

def test_percentile_interpolates_like_numpy():
    v = [10.0, 20.0, 30.0, 40.0]
    assert sweep.percentile(v, 50) == pytest.approx(25.0)
    assert sweep.percentile(v, 5) == pytest.approx(11.5)
    assert sweep.percentile(v, 95) == pytest.approx(38.5)
    assert sweep.percentile([7.0], 95) == 7.0 and sweep.percentile([], 50) is None


def test_summary_has_p5_p50_p95():
    from compare.harness.runner import Result
    rows = []
    for i, pct in enumerate([50.0, 60.0, 70.0, 80.0, 90.0, 100.0, 110.0, 120.0, 130.0, 140.0, 150.0]):
        base = dict(stage="s", group="g", variant="", shape=f"{i + 1}x1x1", M=i + 1, N=1, K=1, precision="fp32",
                    alpha=1.0, beta=0.0, status="ok")
        rows.append(Result(kernel="cublas", family="cublas", tflops=10.0, **base))
        rows.append(Result(kernel="k", family="triton", tflops=pct / 10, pct_cublas=pct, **base))
    (e,) = sweep.summarize(rows)
    assert (e["p5_pct"], e["p50_pct"], e["p95_pct"]) == pytest.approx((55.0, 100.0, 145.0))
    table = sweep.render_summary([e], "table")
    assert "p50 %" in table and "100.0" in table and "145.0" in table
