"""Compile-ahead (compare/harness/precompile.py) on the CPU: the run's worker and helper workers
prepare every uncompiled pair once, mark it, and a second run starts no helper; a pair that
raises, kills its process or hangs is left to the worker and costs no other pair.

The kernels are the worker tests' misbehaving ones (tests/fixtures/faulty_kernels.py, imported by
the worker processes only), run on CPU tensors (``interpret=True``).
"""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from compare.harness import precompile, runner, worker
from compare.harness.problem import Problem
from compare.harness.registry import Kernel

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAULTY = os.path.join(REPO, "tests", "fixtures", "faulty_kernels.py")


def _k(name: str) -> Kernel:
    return Kernel(name=name, family="triton", stage="naive_blocked", precisions=("fp32",), prepare=None,
                  interpretable=True)


@pytest.fixture
def marks(tmp_path, monkeypatch):
    folder = str(tmp_path / "marks")
    monkeypatch.setattr(precompile, "marker_dir", lambda: folder)
    return folder


def _ahead(pairs, w, jobs=2, **kw):
    return precompile.compile_ahead(pairs, w, options={}, skip=lambda k: None, jobs=jobs, plugins=[FAULTY],
                                    kernel_timeout=kw.pop("kernel_timeout", 60), interpret=True, **kw)


def test_every_cold_pair_is_compiled_once_then_none_again(marks):
    shapes = [Problem(16, 8, 24), Problem(32, 16, 8), Problem(8, 8, 8)]
    pairs = [(_k("test.healthy"), p) for p in shapes] + [(_k("test.healthy"), shapes[0])]   # a repeat
    said = []
    with worker.Worker(plugins=[FAULTY], interpret=True) as w:
        got = _ahead(pairs, w, say=said.append)
        assert got["pairs"] == 3 and got["compiled"] == 3 and got["helpers"] == 2 and not got["not_compiled"]
        assert len(os.listdir(marks)) == 3
        assert said and all(s.startswith("running compile-ahead:") for s in said)
        # all marked: a second run starts nothing
        assert _ahead(pairs, w) is None
        # the run's worker measures as usual afterwards
        rows = runner.run(pairs[:1], timing=False, device="cpu", execute=w.run_kernel)
        assert rows[0].status == runner.OK


def test_a_pair_that_raises_dies_or_hangs_costs_no_other(marks):
    good = [(_k("test.healthy"), Problem(8 * i, 8, 8)) for i in range(1, 5)]
    bad = [(_k("test.exit"), Problem(8, 8, 16)), (_k("test.sticky_fault"), Problem(8, 8, 24)),
           (_k("test.hang"), Problem(8, 8, 32))]
    with worker.Worker(plugins=[FAULTY], interpret=True, kernel_timeout=3) as w:
        got = _ahead(bad + good, w, kernel_timeout=3)
        assert got["compiled"] == 4, got
        why = " | ".join(got["not_compiled"])
        assert "test.exit" in why and "died" in why
        assert "test.sticky_fault" in why and "illegal memory access" in why
        assert "test.hang" in why and "hung" in why
        assert len(os.listdir(marks)) == 4          # only what compiled is marked
        rows = runner.run(good[:1], timing=False, device="cpu", execute=w.run_kernel)
        assert rows[0].status == runner.OK


def test_no_helpers_means_no_compile_ahead(marks):
    pairs = [(_k("test.healthy"), Problem(8 * i, 8, 8)) for i in range(1, 4)]
    with worker.Worker(plugins=[FAULTY], interpret=True) as w:
        assert _ahead(pairs, w, jobs=0) is None
    assert not os.path.exists(marks)


def test_helper_count():
    assert precompile.helper_count(4, 10) == 4
    assert precompile.helper_count(4, 3) == 2        # the worker takes one pair itself
    assert precompile.helper_count(0, 10) == 0
    assert precompile.helper_count(None, 1) == 0     # one pair: the worker alone
    assert 0 <= precompile.helper_count(None, 100) <= precompile.MAX_HELPERS
    assert precompile.helper_count(4, 3, with_worker=False) == 3   # a Dask sweep: helpers only
    assert precompile.helper_count(4, 1, with_worker=False) == 1


def test_helpers_alone_compile_ahead_of_a_dask_sweep(marks):
    # worker None (a --workers sweep: its Dask workers measure later): helpers take every pair
    shapes = [Problem(16, 8, 24), Problem(32, 16, 8)]
    pairs = [(_k("test.healthy"), p) for p in shapes]
    said = []
    got = _ahead(pairs, None, say=said.append)
    assert got["pairs"] == 2 and got["compiled"] == 2 and got["helpers"] == 2 and not got["not_compiled"]
    assert len(os.listdir(marks)) == 2 and "the worker" not in said[0]
    assert _ahead(pairs, None) is None
    assert _ahead([(_k("test.healthy"), Problem(8, 8, 8))], None, jobs=0) is None   # --compile-jobs 0


def test_key_changes_with_what_a_compile_depends_on():
    d = precompile.sources_digest()
    p = Problem(64, 64, 64)
    base = precompile.pair_key(("cuda.05_blocktile_1d", None), p, {}, d)
    assert base == precompile.pair_key(("cuda.05_blocktile_1d", None), Problem(64, 64, 64), {}, d)
    assert base != precompile.pair_key(("cuda.05_blocktile_1d", None), Problem(64, 64, 64, precision="tf32"), {}, d)
    assert base != precompile.pair_key(("cuda.05_blocktile_1d", None), p, {"tile": "64x64"}, d)
    assert base != precompile.pair_key(("cuda.05_blocktile_1d", None), Problem(64, 64, 64, beta=1.0), {}, d)
    assert base != precompile.pair_key(("cuda.05_blocktile_1d", None), p, {}, d[::-1])


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_compile_jobs_must_be_a_count(value):
    p = subprocess.run([sys.executable, "-m", "compare", "--compile-jobs", value, "--interpret"], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "--compile-jobs" in p.stderr and "whole number" in p.stderr, p.stderr
