"""The asv suite (benchmarks/gemm.py): params read from the registry, checks cleanly without a GPU."""
from __future__ import annotations

import importlib
import math
import os
import subprocess
import sys

import pytest

from compare.harness import registry
from compare.harness.inputs import gpu_available

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
    """The time classes of a group (kernel x shape x precision)."""
    return [c for c in _classes(gemm).values() if c.group == group and hasattr(c, "track_time")]


def _pct_classes(gemm):
    """The groups' % of cuBLAS classes (geometric means; the skinny set's are per shape)."""
    return [c for c in _classes(gemm).values() if hasattr(c, "track_pct_cublas") and c.group in registry.GROUPS]


def _skinny_classes(gemm):
    return {n: c for n, c in _classes(gemm).items() if c.group == "skinny"}


def _sweep_classes(gemm):
    return [c for c in _classes(gemm).values() if hasattr(c, "track_geomean_pct_cublas")]


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
        assert c.repeat == 1 and c.number == 1 and c.rounds == 1
        assert isinstance(c.version, str) and c.version
        assert 60 <= c.timeout <= 900
        assert hasattr(c, "setup") and not name.startswith("_")
        tracks = [m for m in ("track_time", "track_pct_cublas", "track_geomean_pct_cublas", "track_gbps")
                  if hasattr(c, m)]
        assert len(tracks) == 1, name                   # one value per process
        assert c.unit == {"track_time": "seconds", "track_gbps": "GB/s"}.get(tracks[0], "% of cuBLAS")
        # the gate reads the direction from the method name
        from compare.ci.asv_results import higher_is_better
        assert higher_is_better(f"gemm.{name}.{tracks[0]}") == (tracks[0] != "track_time")
    # the shared bases are not collected by asv (leading underscore), nor any module-level track_
    assert not [k for k in gemm._CLASSES if k.startswith("_")]
    assert not [k for k in vars(gemm) if k.startswith(("track_", "time_"))]


def test_pct_classes_cover_every_non_cublas_kernel_of_the_time_classes(monkeypatch):
    gemm = _suite(monkeypatch)
    time_points = {(k, p, c.group) for g in registry.GROUPS for c in _group_classes(gemm, g)
                   for k in c.params[0] for p in c.params[2] if registry.get(k).family != "cublas"}
    pct_points = {(k, p, c.group) for c in _pct_classes(gemm) for k in c.params[0] for p in c.params[1]}
    assert pct_points == time_points
    for c in _pct_classes(gemm):
        assert c.param_names == ["kernel", "precision"]
        assert c.shapes == gemm.shapes(c.group)


def test_sweep_classes_one_per_family_on_the_general_purpose_kernel(monkeypatch):
    gemm = _suite(monkeypatch)
    sweeps = {c.__name__: c for c in _sweep_classes(gemm)}
    assert sweeps["SweepCuda"].params[0] == ["cuda.11_stream_k"]          # the general-purpose kernels
    assert sweeps["SweepTriton"].params[0] == ["triton.stream_k"]
    assert sweeps["SweepTriton"].params[1] == ["fp32", "tf32", "tf32x3"]
    want = [gemm.shape_text(s) for s in gemm.sweep_shapes()]
    from compare.harness.shapes import shape_set
    assert want == [gemm.shape_text(s) for s in shape_set("asv")]
    for c in sweeps.values():
        assert c.shapes == want
        assert c.version.endswith(gemm.digest(want))       # a new shape set is a new measurement
    import benchmarks.params
    monkeypatch.setattr(benchmarks.params, "sweep_shapes", lambda: [(64, 64, 64)])
    assert gemm.sweep_version() != sweeps["SweepCuda"].version


def test_suite_measures_only_through_the_runner():
    with open(os.path.join(ROOT, "benchmarks", "gemm.py"), encoding="utf-8") as f:
        src = f.read()
    for private in ("checked_run", "runner import prepare", "from compare.harness.timing", "import measure"):
        assert private not in src, private


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
    assert all(c.params[c.param_names.index("precision")] == ["fp32"] for c in _classes(gemm).values())
    monkeypatch.setenv("GEMM_BENCH_SET", "nope")
    with pytest.raises(ValueError):
        importlib.reload(gemm)


@pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path")
def test_setup_without_gpu_is_not_implemented(monkeypatch):
    gemm = _suite(monkeypatch)
    for c in _classes(gemm).values():
        cache = c().setup_cache()           # on a box without a GPU: returns at once
        with pytest.raises(NotImplementedError, match="no CUDA GPU"):
            c().setup(cache, *[p[0] for p in c.params])


def test_plan_counts_processes(monkeypatch, capsys):
    gemm = _suite(monkeypatch)
    plan = dict(gemm.plan())
    for name, c in _classes(gemm).items():
        assert plan[name] == math.prod(len(p) for p in c.params)
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
    # forkserver: every benchmark process is a fork of one that imported the suite (torch, triton)
    # once; CUDA is first touched after the fork (tests: no module-level CUDA call)
    assert conf["environment_type"] == "virtualenv" and conf["launch_method"] == "forkserver"
    assert (conf["results_dir"], conf["html_dir"], conf["env_dir"], conf["benchmark_dir"]) == \
        (".asv/results", ".asv/html", ".asv/env", "benchmarks")
    assert any("[cuda12]" in c for c in conf["install_command"])


def _fake_kernel(wrong: bool = False, name: str = "fake", family: str = "cuda", seconds: float = 1.25e-3,
                 precisions=("fp32",), refuse_k=None):
    from compare.harness.registry import Kernel

    def prepare(problem, inputs, options=None):
        A, B, C = inputs.A, inputs.B, inputs.C

        def launch():
            if wrong:
                C.zero_()
            elif problem.beta == 0:          # BLAS: C is not read (it is NaN-poisoned)
                C.copy_(A @ B).mul_(problem.alpha)
            else:
                C.mul_(problem.beta).add_(A @ B, alpha=problem.alpha)
        launch.seconds = seconds             # what the fake engine below reports for it
        return launch
    supports = (lambda p: f"K={p.K} refused" if p.K == refuse_k else None) if refuse_k else None
    return Kernel(name=name, family=family, stage="cublas" if family == "cublas" else "naive",
                  precisions=precisions, prepare=prepare, supports=supports)


@pytest.fixture
def cpu_gpu(monkeypatch):
    """The GPU parts swapped for CPU ones: inputs on the CPU, a fake engine that reports
    ``launch.seconds`` (and records every call)."""
    import compare.harness.inputs as inputs_mod
    import compare.harness.runner as runner_mod
    import compare.harness.timing as timing_mod
    from compare.harness.timing import Measurement

    real_make = inputs_mod.make_inputs
    monkeypatch.setattr(inputs_mod, "gpu_available", lambda: True)
    monkeypatch.setattr(inputs_mod, "check_fits", lambda problem, device: None)
    cpu_make = lambda p, device=None: real_make(p, device="cpu")   # noqa: E731
    monkeypatch.setattr(inputs_mod, "make_inputs", cpu_make)
    monkeypatch.setattr(runner_mod, "make_inputs", cpu_make)
    measured = []

    def fake_measure(launch, before=None, **kw):
        before()
        launch()
        measured.append(launch.seconds)
        t = launch.seconds
        return Measurement(median_s=t, iqr_s=t / 100, min_s=t * 0.99, max_s=t * 1.01, samples=10, noise=0.001)
    monkeypatch.setattr(timing_mod, "measure", fake_measure)
    return measured


def test_setup_and_track_glue_on_cpu(monkeypatch, cpu_gpu):
    """The GPU path of setup/track_time through the runner on CPU: a right result is measured,
    a wrong one fails before any timing, an unsupported point is n/a."""
    gemm = _suite(monkeypatch)
    cls = next(iter(_group_classes(gemm, "naive")))
    point = [("fake", "64x48x32", "fp32"), ("fake", "64x48x32", "tf32")]
    for wrong in (False, True):
        kernels = {"fake": _fake_kernel(wrong), "cublas": _fake_kernel(name="cublas", family="cublas", seconds=1e-3)}
        monkeypatch.setattr(gemm._registry, "get", lambda name, k=kernels: k[name])
        cpu_gpu.clear()
        cache = gemm.measure_points(point, [])
        b = cls()
        b.setup(cache, "fake", "64x48x32", "fp32")
        if wrong:
            with pytest.raises(AssertionError, match="FAILED"):
                b.track_time(cache, "fake", "64x48x32", "fp32")
            assert cpu_gpu == [1e-3]             # the wrong kernel was never timed (cuBLAS was)
            continue
        assert b.track_time(cache, "fake", "64x48x32", "fp32") == pytest.approx(1.25e-3)
        assert sorted(cpu_gpu) == [1e-3, 1.25e-3]   # each (kernel, problem) measured once
        with pytest.raises(NotImplementedError, match="tf32"):
            cls().setup(cache, "fake", "64x48x32", "tf32")


def test_track_time_hands_samples_to_asv_when_the_runner_has_them(monkeypatch, cpu_gpu):
    import compare.harness.runner as runner_mod

    gemm = _suite(monkeypatch)
    real = runner_mod.run_kernel

    def with_times(*a, **kw):
        r = real(*a, **kw)
        r.times_ms = [1.0, 1.1, 1.2]
        return r
    monkeypatch.setattr(runner_mod, "run_kernel", with_times)
    monkeypatch.setattr(gemm._registry, "get", lambda name: _fake_kernel(name=name))
    cls = next(iter(_group_classes(gemm, "naive")))
    cache = gemm.measure_points([("fake", "64x48x32", "fp32")], [])
    b = cls()
    b.setup(cache, "fake", "64x48x32", "fp32")
    assert b.track_time(cache, "fake", "64x48x32", "fp32") == {"samples": [1e-3, 1.1e-3, 1.2e-3], "number": 1}


def test_geomean_pct_cublas_through_the_runner(monkeypatch, cpu_gpu):
    gemm = _suite(monkeypatch)
    # cuBLAS 1 ms everywhere, the kernel 2 ms: 50% of cuBLAS at every shape.
    kernels = {"cublas": _fake_kernel(name="cublas", family="cublas", seconds=1e-3, precisions=("fp32", "tf32")),
               "fake": _fake_kernel(seconds=2e-3), "refuses": _fake_kernel(name="refuses", refuse_k=40),
               "wrong": _fake_kernel(True, name="wrong")}
    monkeypatch.setattr(gemm._registry, "get", lambda name: kernels[name])
    assert gemm.geomean_pct_cublas("fake", "fp32", ["32x16x8", "48x32x40"]) == pytest.approx(50.0)
    assert sorted(cpu_gpu) == [1e-3, 1e-3, 2e-3, 2e-3]       # cuBLAS measured in the same process
    with pytest.raises(AssertionError, match="can't run every shape"):
        gemm.geomean_pct_cublas("refuses", "fp32", ["32x16x8", "48x32x40"])
    with pytest.raises(AssertionError, match="FAILED"):
        gemm.geomean_pct_cublas("wrong", "fp32", ["32x16x8"])
    pct = next(c for c in _pct_classes(gemm) if c.group == "naive")
    with pytest.raises(NotImplementedError, match="no tf32 path"):
        pct().setup({"na": None}, "fake", "tf32")


def test_asv_records_spread_for_a_track_returning_samples(tmp_path):
    """What track_time relies on: asv 0.6 turns a returned {"samples", "number"} into the median
    as the value plus stats_ci_99_a/b and stats_q_25/q_75 (then compare.ci.gate can read them)."""
    pytest.importorskip("asv")
    repo = tmp_path / "repo"
    (repo / "benchmarks").mkdir(parents=True)
    (repo / "benchmarks" / "__init__.py").write_text("")
    (repo / "benchmarks" / "b.py").write_text(
        "class S:\n    unit = 'seconds'\n    def track_time(self):\n"
        "        return {'samples': [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], 'number': 1}\n")
    conf = {"version": 1, "project": "p", "repo": ".", "branches": ["main"], "environment_type": "virtualenv",
            "benchmark_dir": "benchmarks", "results_dir": "results", "html_dir": "html", "env_dir": "env"}
    (repo / "asv.conf.json").write_text(__import__("json").dumps(conf))
    env = dict(os.environ, HOME=str(tmp_path), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-qm", "x"]):
        subprocess.run(cmd, cwd=repo, env=env, check=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    subprocess.run([sys.executable, "-m", "asv", "machine", "--yes", "--machine", "m"], cwd=repo, env=env,
                   check=True, capture_output=True)
    p = subprocess.run([sys.executable, "-m", "asv", "run", "--python=same", "--record-samples",
                        "--set-commit-hash", sha, "--machine", "m"],
                       cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    from compare.ci import asv_results
    files, warnings = asv_results.scan(str(repo / "results" / "m"))
    assert not warnings and len(files) == 1
    (point,) = files[0].points().values()
    assert point.value == 5.0
    assert point.quartiles == (3.0, 7.0)
    assert point.ci is not None and point.ci[0] < 5.0 < point.ci[1]
    # --record-samples (as compare.ci.history runs asv): the raw samples, for the gate's
    # distribution comparison (compare.ci.robust)
    assert point.samples == tuple(float(x) for x in range(1, 10))


def test_docs_name_only_generated_classes(monkeypatch):
    """docs/asv.md names classes as gemm.<Class>: each one must be generated (default set, all
    precisions), and every generated class must be documented or covered by the PctCublas row."""
    import re
    gemm = _suite(monkeypatch)
    with open(os.path.join(ROOT, "docs", "asv.md"), encoding="utf-8") as f:
        text = f.read()
    named = set(re.findall(r"`gemm\.([A-Z]\w*)", text))
    assert named and not named - set(gemm._CLASSES), named - set(gemm._CLASSES)
    assert all(n in named or n.endswith(gemm.PCT_SUFFIX) for n in gemm._CLASSES), set(gemm._CLASSES) - named


def _sticky_kernel():
    from compare.harness.registry import Kernel

    def prepare(problem, inputs, options=None):
        def launch():
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return launch
    return Kernel(name="faulty", family="cuda", stage="naive", precisions=("fp32",), prepare=prepare)


def _asv_env(monkeypatch, tmp_path, commit="abcdef0123" * 4):
    (tmp_path / "asv.conf.json").write_text('{\n  // a comment, as asv allows\n  "results_dir": "res"\n}\n')
    monkeypatch.setenv("ASV_CONF_DIR", str(tmp_path))
    monkeypatch.setenv("ASV_COMMIT", commit)
    return str(tmp_path / "res"), commit


def test_a_faulting_point_fails_and_leaves_a_note_for_the_gate(monkeypatch, cpu_gpu, tmp_path):
    from compare.ci import failure_notes
    results_dir, commit = _asv_env(monkeypatch, tmp_path)
    gemm = _suite(monkeypatch)
    kernels = {"faulty": _sticky_kernel(), "cublas": _fake_kernel(name="cublas", family="cublas", seconds=1e-3)}
    monkeypatch.setattr(gemm._registry, "get", lambda name: kernels[name])
    cache = gemm.measure_points([("faulty", "64x48x32", "fp32")], [])
    cls = next(iter(_group_classes(gemm, "naive")))
    with pytest.raises(AssertionError, match="an illegal memory access"):
        cls().track_time(cache, "faulty", "64x48x32", "fp32")
    notes = failure_notes.read(results_dir, commit)
    note = notes[(f"gemm.{cls.__name__}.track_time", ("faulty", "64x48x32", "fp32"))]
    assert note["kernel"] == "faulty" and note["status"] == "FAULT" and "illegal memory access" in note["reason"]
    assert cpu_gpu == [1e-3]      # cuBLAS timed, the faulty kernel never


def test_no_note_outside_asv(monkeypatch, cpu_gpu, tmp_path):
    monkeypatch.delenv("ASV_COMMIT", raising=False)
    monkeypatch.chdir(tmp_path)
    gemm = _suite(monkeypatch)
    kernels = {"faulty": _sticky_kernel(), "cublas": _fake_kernel(name="cublas", family="cublas", seconds=1e-3)}
    monkeypatch.setattr(gemm._registry, "get", lambda name: kernels[name])
    cache = gemm.measure_points([("faulty", "64x48x32", "fp32")], [])
    with pytest.raises(AssertionError, match="illegal memory access"):
        next(iter(_group_classes(gemm, "naive")))().track_time(cache, "faulty", "64x48x32", "fp32")
    assert os.listdir(tmp_path) == []


def test_time_and_pct_twins_share_one_measurement(monkeypatch, cpu_gpu):
    """A group's setup_cache measures each (kernel, problem) once; the time point and its % of
    cuBLAS twin both read that one measurement."""
    gemm = _suite(monkeypatch)
    kernels = {"fake": _fake_kernel(seconds=2e-3), "cublas": _fake_kernel(name="cublas", family="cublas", seconds=1e-3)}
    monkeypatch.setattr(gemm._registry, "get", lambda name: kernels[name])
    shapes = ("32x16x8", "48x32x40")
    cache = gemm.measure_points([("fake", s, "fp32") for s in shapes] + [("cublas", s, "fp32") for s in shapes],
                                [("fake", "fp32", shapes)])
    assert sorted(cpu_gpu) == [1e-3, 1e-3, 2e-3, 2e-3]
    time_cls = next(iter(_group_classes(gemm, "naive")))
    pct_cls = next(c for c in _pct_classes(gemm) if c.group == "naive")
    assert time_cls().track_time(cache, "fake", shapes[0], "fp32") == pytest.approx(2e-3)
    assert pct_cls().track_pct_cublas(cache, "fake", "fp32") == pytest.approx(50.0)


def test_one_setup_cache_per_group_and_one_for_the_sweep(monkeypatch):
    from asv_runner.benchmarks._base import get_setup_cache_key
    gemm = _suite(monkeypatch)
    keys = {}
    for name, c in _classes(gemm).items():
        keys.setdefault(c.group, set()).add(get_setup_cache_key(c.setup_cache))
    assert all(len(k) == 1 for k in keys.values()), keys          # a group's classes share one
    flat = [next(iter(k)) for k in keys.values()]
    assert len(set(flat)) == len(flat)                             # groups don't


def test_pct_track_hands_asv_per_sample_pcts_whose_median_is_the_value(monkeypatch, cpu_gpu):
    import compare.harness.runner as runner_mod

    gemm = _suite(monkeypatch)
    real = runner_mod.run_kernel

    def with_times(k, p, **kw):
        r = real(k, p, **kw)
        if k.family != "cublas":
            r.times_ms = [r.median_ms * f for f in (0.99, 1.0, 1.01, 1.02, 0.98)]
        return r
    monkeypatch.setattr(runner_mod, "run_kernel", with_times)
    kernels = {"fake": _fake_kernel(seconds=2e-3), "cublas": _fake_kernel(name="cublas", family="cublas", seconds=1e-3)}
    monkeypatch.setattr(gemm._registry, "get", lambda name: kernels[name])
    cache = gemm.measure_points([], [("fake", "fp32", ("32x16x8",))])
    pct_cls = next(c for c in _pct_classes(gemm) if c.group == "naive")
    got = pct_cls().track_pct_cublas(cache, "fake", "fp32")
    assert got["number"] == 1 and len(got["samples"]) == 5
    assert sorted(got["samples"])[2] == pytest.approx(50.0)          # the median is the value
    assert max(got["samples"]) == pytest.approx(50.0 / 0.98)        # a fast sample is a higher %
    assert cache["pct"][("fake", "fp32")]["value"] == pytest.approx(50.0)


def test_tensor_core_stage_gets_tf32_and_tf32x3_points(monkeypatch):
    """Stage 12 (tiled group, precisions tf32 and tf32x3 only) is timed in the tiled tensor-core
    class beside cuBLAS and Triton, and stays out of the fp32 class."""
    gemm = _suite(monkeypatch)
    tiled = _group_classes(gemm, "tiled")
    tc = [c for c in tiled if "tf32" in c.params[2]]
    fp32 = [c for c in tiled if c.params[2] == ["fp32"]]
    assert tc and fp32
    for name in ("cuda.12_tf32_mma", "cuda.13_wgmma_tma"):
        assert all(name in c.params[0] and {"tf32", "tf32x3"} <= set(c.params[2]) for c in tc)
        assert all(name not in c.params[0] for c in fp32)



def test_benchmark_names_are_the_recorded_ones(monkeypatch):
    """asv keys its history by benchmark name: the classes (read from the ladder's groups and
    the registry) keep the names recorded so far."""
    gemm = _suite(monkeypatch)
    assert sorted(gemm._CLASSES) == [
        "Naive", "NaivePctCublas", "SkinnyGbps", "SkinnyPctCublas", "SkinnyTensorCoreGbps", "SkinnyTensorCorePctCublas",
        "SplitK", "SplitKPctCublas", "SplitKTensorCore", "SplitKTensorCorePctCublas",
        "SweepCuda", "SweepTriton", "Tiled", "TiledPctCublas", "TiledTensorCore", "TiledTensorCorePctCublas"]
    # the quick set (the committed history is recorded with it) keeps exactly the names it had
    gemm = _suite(monkeypatch, GEMM_BENCH_QUICK="1")
    assert sorted(gemm._CLASSES) == [
        "Naive", "NaivePctCublas", "SplitK", "SplitKPctCublas", "SplitKTensorCore", "SplitKTensorCorePctCublas",
        "SweepCuda", "SweepTriton", "Tiled", "TiledPctCublas", "TiledTensorCore", "TiledTensorCorePctCublas"]


# ---------------------------------------------------------------------------- the skinny and small classes

SKINNY_SHAPES = ["16384x8x4096", "1x8192x4096", "1536x1024x768", "48x64x65536"]


def test_skinny_classes_names_params_and_version_are_pinned(monkeypatch):
    import hashlib
    gemm = _suite(monkeypatch)
    got = {n: (c.param_names, c.params, c.version) for n, c in _skinny_classes(gemm).items()}
    names = ["kernel", "shape", "precision"]
    version = "1-" + hashlib.sha1(",".join(SKINNY_SHAPES).encode()).hexdigest()[:8]
    assert got == {
        "SkinnyPctCublas": (names, [["cuda.11_stream_k", "triton.stream_k"], SKINNY_SHAPES, ["fp32"]], version),
        "SkinnyGbps": (names, [["cublas", "cuda.11_stream_k", "triton.stream_k"], SKINNY_SHAPES, ["fp32"]], version),
        "SkinnyTensorCorePctCublas": (names, [["triton.stream_k", "cuda.13_wgmma_tma"], SKINNY_SHAPES,
                                              ["tf32", "tf32x3"]], version),
        "SkinnyTensorCoreGbps": (names, [["cublas", "triton.stream_k", "cuda.13_wgmma_tma"], SKINNY_SHAPES,
                                         ["tf32", "tf32x3"]], version)}
    from compare.harness.shapes import shape_set
    assert SKINNY_SHAPES == ["x".join(map(str, s)) for s in shape_set("asv_skinny")]
    # higher is better, both, for the gate and the site; and the % is the one `--bench pct_cublas` gates on
    from compare.ci.asv_results import higher_is_better
    for n, c in _skinny_classes(gemm).items():
        method = "track_pct_cublas" if n.endswith("PctCublas") else "track_gbps"
        assert hasattr(c, method) and higher_is_better(f"gemm.{n}.{method}"), n
    # in full as in default; never in quick, whose history is committed; fp32 alone keeps the fp32 pair
    assert {n: c.params for n, c in _skinny_classes(_suite(monkeypatch, GEMM_BENCH_SET="full")).items()} == \
        {n: v[1] for n, v in got.items()}
    assert not _skinny_classes(_suite(monkeypatch, GEMM_BENCH_SET="quick"))
    assert not _skinny_classes(_suite(monkeypatch, GEMM_BENCH_QUICK="1"))
    fp32_only = _skinny_classes(_suite(monkeypatch, GEMM_BENCH_PRECISIONS="fp32"))
    assert sorted(fp32_only) == ["SkinnyGbps", "SkinnyPctCublas"]


def _precision_timed(name, family, seconds: dict, precisions, supports=None):
    """A fake kernel whose time depends on the precision (cuBLAS: tf32 faster than fp32)."""
    import dataclasses
    k = _fake_kernel(name=name, family=family, precisions=precisions)
    real_prepare = k.prepare

    def prepare(problem, inputs, options=None):
        launch = real_prepare(problem, inputs, options)
        launch.seconds = seconds[problem.precision]
        return launch
    return dataclasses.replace(k, prepare=prepare, supports=supports)


def _skinny_fakes(monkeypatch, gemm, shapes):
    import benchmarks.params
    monkeypatch.setattr(benchmarks.params, "skinny_shapes", lambda: list(shapes))
    kernels = {
        "cublas": _precision_timed("cublas", "cublas", {"fp32": 1e-3, "tf32": 0.5e-3}, ("fp32", "tf32")),
        "cuda.11_stream_k": _precision_timed("cuda.11_stream_k", "cuda", {"fp32": 2e-3}, ("fp32",)),
        "triton.stream_k": _precision_timed("triton.stream_k", "triton", {"fp32": 4e-3, "tf32": 2e-3, "tf32x3": 2e-3},
                                            ("fp32", "tf32", "tf32x3")),
        # as on a GPU without sm_90a: refused, so n/a
        "cuda.13_wgmma_tma": _precision_timed("cuda.13_wgmma_tma", "cuda", {}, ("tf32", "tf32x3"),
                                              supports=lambda p: "needs compute capability 9.0 (sm_90a)")}
    monkeypatch.setattr(gemm._registry, "get", lambda name: kernels[name])


def test_skinny_setup_cache_on_cpu(monkeypatch, cpu_gpu):
    """The skinny group's one measuring process (its setup_cache) through the runner on CPU: each
    (kernel, problem) timed once, the % of cuBLAS per shape against the same process's cuBLAS
    (tf32x3 against cuBLAS fp32), GB/s = 4 (MK + KN + MN) bytes / time, n/a where a kernel refuses
    or has no such precision."""
    gemm = _suite(monkeypatch)
    shapes = ["64x8x32", "1x40x24"]
    _skinny_fakes(monkeypatch, gemm, shapes)
    cache = gemm.cache_skinny(None)
    # cuBLAS fp32 + tf32, stage 11 fp32, Triton fp32 + tf32 + tf32x3, per shape; stage 13 refused
    assert sorted(cpu_gpu) == sorted([1e-3, 0.5e-3, 2e-3, 4e-3, 2e-3, 2e-3] * len(shapes))
    pct, gbps = gemm.SkinnyPctCublas(), gemm.SkinnyGbps()
    tc_pct, tc_gbps = gemm.SkinnyTensorCorePctCublas(), gemm.SkinnyTensorCoreGbps()
    for s, nbytes in (("64x8x32", 4 * (64 * 32 + 32 * 8 + 64 * 8)), ("1x40x24", 4 * (1 * 24 + 24 * 40 + 1 * 40))):
        pct.setup(cache, "cuda.11_stream_k", s, "fp32")
        assert pct.track_pct_cublas(cache, "cuda.11_stream_k", s, "fp32") == pytest.approx(50.0)   # 1 ms / 2 ms
        assert pct.track_pct_cublas(cache, "triton.stream_k", s, "fp32") == pytest.approx(25.0)    # 1 ms / 4 ms
        assert tc_pct.track_pct_cublas(cache, "triton.stream_k", s, "tf32") == pytest.approx(25.0)  # 0.5 / 2
        assert tc_pct.track_pct_cublas(cache, "triton.stream_k", s, "tf32x3") == pytest.approx(50.0)  # fp32 1 / 2
        gbps.setup(cache, "cublas", s, "fp32")
        assert gbps.track_gbps(cache, "cublas", s, "fp32") == pytest.approx(nbytes / 1e-3 / 1e9)
        assert gbps.track_gbps(cache, "cuda.11_stream_k", s, "fp32") == pytest.approx(nbytes / 2e-3 / 1e9)
        assert tc_gbps.track_gbps(cache, "cublas", s, "tf32") == pytest.approx(nbytes / 0.5e-3 / 1e9)
        with pytest.raises(NotImplementedError, match="sm_90a"):
            tc_pct.setup(cache, "cuda.13_wgmma_tma", s, "tf32")
        with pytest.raises(NotImplementedError, match="sm_90a"):
            tc_gbps.setup(cache, "cuda.13_wgmma_tma", s, "tf32x3")
        with pytest.raises(NotImplementedError, match="no tf32x3 path"):
            tc_gbps.setup(cache, "cublas", s, "tf32x3")


def test_skinny_tracks_hand_asv_per_sample_values_whose_median_is_the_value(monkeypatch, cpu_gpu):
    import compare.harness.runner as runner_mod
    gemm = _suite(monkeypatch)
    _skinny_fakes(monkeypatch, gemm, ["64x8x32"])
    real = runner_mod.run_kernel

    def with_times(k, p, **kw):
        r = real(k, p, **kw)
        if k.family != "cublas" and r.median_ms:      # (stage 13: refused)
            r.times_ms = [r.median_ms * f for f in (0.99, 1.0, 1.01, 1.02, 0.98)]
        return r
    monkeypatch.setattr(runner_mod, "run_kernel", with_times)
    cache = gemm.cache_skinny(None)
    got = gemm.SkinnyPctCublas().track_pct_cublas(cache, "cuda.11_stream_k", "64x8x32", "fp32")
    assert got["number"] == 1 and len(got["samples"]) == 5
    assert sorted(got["samples"])[2] == pytest.approx(50.0)           # the median is the value
    assert max(got["samples"]) == pytest.approx(50.0 / 0.98)          # a fast sample is a higher %
    nbytes = 4 * (64 * 32 + 32 * 8 + 64 * 8)
    got = gemm.SkinnyGbps().track_gbps(cache, "cuda.11_stream_k", "64x8x32", "fp32")
    assert sorted(got["samples"])[2] == pytest.approx(nbytes / 2e-3 / 1e9)
    assert max(got["samples"]) == pytest.approx(nbytes / (0.98 * 2e-3) / 1e9)


def test_a_wrong_skinny_point_fails_and_leaves_a_note(monkeypatch, cpu_gpu, tmp_path):
    from compare.ci import failure_notes
    results_dir, commit = _asv_env(monkeypatch, tmp_path)
    gemm = _suite(monkeypatch)
    _skinny_fakes(monkeypatch, gemm, ["64x8x32"])
    wrong = _fake_kernel(True, name="cuda.11_stream_k")
    real_get = gemm._registry.get
    monkeypatch.setattr(gemm._registry, "get", lambda name: wrong if name == "cuda.11_stream_k" else real_get(name))
    cache = gemm.cache_skinny(None)
    for cls, method in ((gemm.SkinnyPctCublas, "track_pct_cublas"), (gemm.SkinnyGbps, "track_gbps")):
        with pytest.raises(AssertionError, match="FAILED"):
            getattr(cls(), method)(cache, "cuda.11_stream_k", "64x8x32", "fp32")
        note = failure_notes.read(results_dir, commit)[(f"gemm.{cls.__name__}.{method}",
                                                         ("cuda.11_stream_k", "64x8x32", "fp32"))]
        assert note["kernel"] == "cuda.11_stream_k" and note["status"] == "FAILED"


@pytest.mark.gpu
def test_gpu_skinny_setup_cache_gives_every_point_a_number(monkeypatch):
    """The skinny group's one measuring process on a GPU: every point of the four classes has a
    number (a %, a GB/s), except cuBLAS tf32x3 (cuBLAS has none) and, on a GPU without sm_90a,
    stage 13 (n/a, saying why)."""
    import torch
    gemm = _suite(monkeypatch)
    sm90 = torch.cuda.get_device_capability() == (9, 0)
    cache = gemm.cache_skinny(None)
    numbers, bad = 0, []
    for name, cls in _skinny_classes(gemm).items():
        method = "track_gbps" if name.endswith("Gbps") else "track_pct_cublas"
        for k in cls.params[0]:
            for s in cls.params[1]:
                for p in cls.params[2]:
                    if (k, p) == ("cublas", "tf32x3") or (k == "cuda.13_wgmma_tma" and not sm90):
                        with pytest.raises(NotImplementedError, match="tf32x3|compute capability"):
                            cls().setup(cache, k, s, p)
                        continue
                    try:
                        b = cls()
                        b.setup(cache, k, s, p)
                        v = getattr(b, method)(cache, k, s, p)
                    except (AssertionError, NotImplementedError) as exc:
                        bad.append(f"{name} {k} {s} {p}: {exc}")
                        continue
                    v = sorted(v["samples"])[len(v["samples"]) // 2] if isinstance(v, dict) else v
                    assert math.isfinite(v) and v > 0, (name, k, s, p, v)
                    numbers += 1
    assert not bad, "\n".join(bad)
    assert numbers == (56 if sm90 else 40)
