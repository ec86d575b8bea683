"""The asv suite (benchmarks/gemm.py): generated from the registry, checks cleanly without a GPU."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

from compare import registry
from compare.inputs import gpu_available

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _suite(monkeypatch, **env):
    for var in ("GEMM_BENCH_SET", "GEMM_BENCH_QUICK", "GEMM_BENCH_PRECISIONS"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    import benchmarks.gemm as gemm
    return importlib.reload(gemm)


def _classes(gemm):
    return {name: getattr(gemm, name) for name in gemm._CLASSES}


def _group_classes(gemm, group):
    return [c for c in _classes(gemm).values() if c.group == group]


@pytest.fixture(autouse=True)
def _reload_default_after(monkeypatch):
    yield
    monkeypatch.undo()
    import benchmarks.gemm as gemm
    importlib.reload(gemm)


def test_params_come_from_the_registry(monkeypatch):
    gemm = _suite(monkeypatch)
    for group in registry.GROUPS:
        want = registry.select(group)
        classes = _group_classes(gemm, group)
        assert classes, group
        names = {k for c in classes for k in c.params[0]}
        assert names == {k.name for k in want}, group        # no second list, cuBLAS included
        assert "cublas" in names
        for c in classes:
            assert c.param_names == ["kernel", "shape", "precision"]
            # ladder order of the registry is kept
            assert c.params[0] == [k.name for k in want if k.name in c.params[0]]
        # every (kernel, precision) a kernel has appears in exactly one class of its group
        for k in want:
            for p in k.precisions:
                if p == "fp32" or any(p in o.precisions for o in want if o.family != "cublas"):
                    hits = [c for c in classes if k.name in c.params[0] and p in c.params[2]]
                    assert len(hits) == 1, (group, k.name, p)


def test_class_attributes(monkeypatch):
    gemm = _suite(monkeypatch)
    for name, c in _classes(gemm).items():
        assert c.unit == "seconds"
        assert c.repeat == 1 and c.number == 1 and c.rounds == 1
        assert isinstance(c.version, str) and c.version
        assert 60 <= c.timeout <= 600
        assert hasattr(c, "track_time") and hasattr(c, "setup")
        assert not name.startswith("_")
    # the shared base is not collected by asv (leading underscore), nor any module-level track_
    assert "_GemmTrack" not in gemm._CLASSES
    assert not [k for k in vars(gemm) if k.startswith(("track_", "time_"))]


def test_shape_sets(monkeypatch):
    gemm = _suite(monkeypatch)
    assert gemm.shapes("naive") == ["512x512x512", "1024x1024x1024"]
    assert gemm.shapes("tiled") == ["1024x1024x1024", "4096x4096x4096"]
    assert gemm.shapes("split_k") == ["256x256x131072", "512x512x65536"]
    gemm = _suite(monkeypatch, GEMM_BENCH_QUICK="1")
    for group in registry.GROUPS:
        assert len(gemm.shapes(group)) == 1
        assert all(len(c.params[1]) == 1 for c in _group_classes(gemm, group))
    gemm = _suite(monkeypatch, GEMM_BENCH_SET="full")
    assert "8192x8192x8192" in gemm.shapes("tiled")
    gemm = _suite(monkeypatch, GEMM_BENCH_PRECISIONS="fp32")
    assert all(c.params[2] == ["fp32"] for c in _classes(gemm).values())
    monkeypatch.setenv("GEMM_BENCH_SET", "nope")
    with pytest.raises(ValueError):
        importlib.reload(gemm)


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path")
def test_setup_without_gpu_is_not_implemented(monkeypatch):
    gemm = _suite(monkeypatch)
    for c in _classes(gemm).values():
        with pytest.raises(NotImplementedError, match="no CUDA GPU"):
            c().setup(c.params[0][0], c.params[1][0], c.params[2][0])


def test_plan_counts_processes(monkeypatch, capsys):
    gemm = _suite(monkeypatch)
    plan = dict(gemm.plan())
    for name, c in _classes(gemm).items():
        assert plan[name] == len(c.params[0]) * len(c.params[1]) * len(c.params[2])
    gemm._main()
    assert "total" in capsys.readouterr().out


def test_asv_check_passes_without_gpu():
    pytest.importorskip("asv")
    env = dict(os.environ)
    for var in ("GEMM_BENCH_SET", "GEMM_BENCH_QUICK", "GEMM_BENCH_PRECISIONS"):
        env.pop(var, None)
    p = subprocess.run([sys.executable, "-m", "asv", "check", "--python=same"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "No problems found" in p.stdout


def test_asv_conf():
    import json
    with open(os.path.join(ROOT, "asv.conf.json"), encoding="utf-8") as f:
        conf = json.load(f)
    assert conf["repo"] == "." and conf["branches"] == ["main"]
    assert conf["environment_type"] == "virtualenv" and conf["launch_method"] == "spawn"
    assert (conf["results_dir"], conf["html_dir"], conf["env_dir"], conf["benchmark_dir"]) == \
        (".asv/results", ".asv/html", ".asv/env", "benchmarks")
    assert any("[cuda12]" in c for c in conf["install_command"])


def _fake_kernel(wrong: bool):
    from compare.registry import Kernel

    def prepare(problem, inputs, options=None):
        A, B, C = inputs.A, inputs.B, inputs.C

        def launch():
            if wrong:
                C.zero_()
            elif problem.beta == 0:          # BLAS: C is not read (it is NaN-poisoned)
                C.copy_(A @ B).mul_(problem.alpha)
            else:
                C.mul_(problem.beta).add_(A @ B, alpha=problem.alpha)
        return launch
    return Kernel(name="fake", family="cuda", stage="naive", precisions=("fp32",), prepare=prepare)


def test_setup_and_track_glue_on_cpu(monkeypatch):
    """The GPU path of setup/track_time with the GPU parts swapped for CPU ones: a right result
    is measured, a wrong one raises before any timing, an unsupported point is n/a."""
    import compare.inputs as inputs_mod
    import compare.timing as timing_mod
    from compare.timing import Measurement

    gemm = _suite(monkeypatch)
    real_make = inputs_mod.make_inputs
    monkeypatch.setattr(inputs_mod, "gpu_available", lambda: True)
    monkeypatch.setattr(inputs_mod, "make_inputs", lambda p, device=None: real_make(p, device="cpu"))
    measured = []

    def fake_measure(launch, before=None, **kw):
        before()
        launch()
        measured.append(1)
        return Measurement(median_s=1.25e-3, iqr_s=1e-5, min_s=1.2e-3, max_s=1.3e-3, samples=10, noise=0.001)
    monkeypatch.setattr(timing_mod, "measure", fake_measure)
    cls = next(iter(_classes(gemm).values()))
    for wrong in (False, True):
        monkeypatch.setattr(gemm._registry, "get", lambda name, w=wrong: _fake_kernel(w))
        b = cls()
        if wrong:
            with pytest.raises(AssertionError, match="wrong result"):
                b.setup("fake", "64x48x32", "fp32")
            continue
        b.setup("fake", "64x48x32", "fp32")
        assert b.track_time("fake", "64x48x32", "fp32") == 1.25e-3
    assert measured == [1]
    with pytest.raises(NotImplementedError, match="tf32"):
        cls().setup("fake", "64x48x32", "tf32")
