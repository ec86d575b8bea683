"""The CLI never loses measurements and never passes vacuously, on the CPU.

Fake kernels stand in for the registry so every path (ok, FAILED, error, unsupported, skipped,
options, sweeps) runs in milliseconds: they compute on CPU tensors under --interpret, or through
a stand-in "GPU" run that reuses the real runner on the CPU and fills in made-up times.
"""
import json
import os
import sys
import types

import pytest
import torch

from compare.harness import registry, runner
from compare.outputs import report
from compare.cli import main
from compare.harness.errors import UsageError
from compare.harness.problem import Problem
from compare.harness.registry import Kernel, Option


# ---------------------------------------------------------------- fake kernels

def _right(problem, inputs, options=None):
    options = dict(options or {})

    def launch():
        inputs.C.copy_((problem.alpha * (inputs.A.double() @ inputs.B.double())
                        + problem.beta * inputs.C0.double()).float())
    launch.config = {"split": options.get("split", 2), "chosen_by": "user" if options else "heuristic"}
    return launch


def _wrong(problem, inputs, options=None):
    def launch():
        inputs.C.fill_(1.0)
    launch.config = {"tile": "8x8"}
    return launch


def _raises(problem, inputs, options=None):
    raise RuntimeError("compile failed: too many registers\nsecond line")


def _oom(problem, inputs, options=None):
    def launch():
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    return launch


def _only_even(problem):
    return None if problem.N % 2 == 0 else "needs even N"


FAKES = [
    Kernel(name="cublas", family="cublas", stage="cublas", precisions=("fp32", "tf32"), prepare=_right,
           interpretable=True),
    Kernel(name="triton.good", family="triton", stage="split_k", precisions=("fp32",), prepare=_right,
           interpretable=True, options=(Option("split", "split count", int),), supports=_only_even),
    Kernel(name="triton.wrong", family="triton", stage="split_k", precisions=("fp32",), prepare=_wrong,
           interpretable=True),
    Kernel(name="triton.raises", family="triton", stage="split_k", precisions=("fp32",), prepare=_raises,
           interpretable=True),
    Kernel(name="triton.naive", family="triton", stage="naive_blocked", precisions=("fp32",), prepare=_right,
           interpretable=True),
    Kernel(name="cuda.10_split_k", family="cuda", stage="split_k", precisions=("fp32",), prepare=_right,
           options=(Option("split", "split count", int),)),
]


@pytest.fixture
def fake_registry(monkeypatch):
    # The families declare the ladder's stages (the fakes name them): loaded before they are hidden.
    registry.stages()
    monkeypatch.setattr(registry, "_REGISTRY", {k.name: k for k in FAKES})
    monkeypatch.setattr(registry, "_loaded", True)
    # The fake registry lives in this process only; a worker process (compare/harness/worker.py)
    # would not see it, so these runs are in-process (--in-process; tests/test_worker.py covers the worker).
    from compare.harness import worker
    monkeypatch.setattr(worker, "start_for_run", lambda args: None)
    # --interpret sets TRITON_INTERPRET in this process; put it back afterwards
    monkeypatch.setenv("TRITON_INTERPRET", os.environ.get("TRITON_INTERPRET", "1"))
    from compare.harness import inputs
    inputs.clear_cache()
    yield
    inputs.clear_cache()


def _fake_measure(launch, before=None, **kw):
    from compare.harness.timing import Measurement
    if before:
        before()
    launch()
    return Measurement(median_s=1e-3, iqr_s=2e-5, min_s=0.9e-3, max_s=1.1e-3, samples=10, noise=1e-3)


@pytest.fixture
def fake_gpu(fake_registry, monkeypatch):
    """A run without --interpret, as if a GPU were there: the real runner on CPU tensors, timed
    by a stand-in clock. ``calls`` counts runs (the "GPU work")."""
    from compare.harness import inputs, timing
    monkeypatch.setattr(inputs, "gpu_available", lambda: True)
    monkeypatch.setattr(inputs, "check_fits", lambda p, d: None)
    monkeypatch.setattr(timing, "measure", _fake_measure)
    # no peaks to probe on a stand-in GPU (and importing the probes would register the real ladder
    # into the fake registry): the rows get no % SOL
    peaks_said = []
    monkeypatch.setitem(sys.modules, "cuda_kernels.probes.peaks",
                        types.SimpleNamespace(ensure=lambda say=None, **kw: peaks_said.append(kw)))
    real_run = runner.run
    calls = []

    def run(pairs, **kw):
        calls.append(kw)
        kw["device"] = "cpu"
        return real_run(pairs, **kw)
    monkeypatch.setattr(runner, "run", run)
    return calls


@pytest.fixture
def no_gpu_work(fake_registry, monkeypatch):
    def run(*a, **kw):
        raise AssertionError("GPU work started before the usage error")
    monkeypatch.setattr(runner, "run", run)


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


# ---------------------------------------------------------------- the runner

def test_run_kernel_rows_ok_failed_error_unsupported_and_config(fake_registry, monkeypatch):
    from compare.harness import timing
    timed = []

    def measure(launch, before=None, **kw):
        timed.append(launch)
        return _fake_measure(launch, before)
    monkeypatch.setattr(timing, "measure", measure)
    p = Problem(6, 8, 10, beta=0.5, seed=1)
    get = registry._REGISTRY.get

    ok = runner.run_kernel(get("triton.good"), p, device="cpu", options={"split": 4})
    assert ok.status == "ok" and ok.config == {"split": 4, "chosen_by": "user"}
    assert ok.median_ms == pytest.approx(1.0) and ok.tflops > 0 and ok.rel_err < 1e-6
    assert len(timed) == 1

    bad = runner.run_kernel(get("triton.wrong"), p, device="cpu")
    assert bad.status == "FAILED" and "relative error" in bad.reason and bad.config == {"tile": "8x8"}
    assert bad.median_ms is None and bad.tflops is None and len(timed) == 1   # never timed

    err = runner.run_kernel(get("triton.raises"), p, device="cpu")
    assert err.status == "error" and err.reason == "RuntimeError: compile failed: too many registers"

    oom = runner.run_kernel(get("triton.good").__class__(
        name="x.oom", family="cuda", stage="naive", precisions=("fp32",), prepare=_oom), p, device="cpu")
    assert oom.status == "error" and oom.reason.startswith("out of GPU memory: OutOfMemoryError")

    uns = runner.run_kernel(get("triton.good"), p.with_(N=7), device="cpu")
    assert uns.status == "unsupported" and uns.reason == "needs even N"

    # an exception while timing is an error row too, not a crash of the whole run
    def broken_measure(launch, before=None, **kw):
        raise RuntimeError("event timing failed")
    monkeypatch.setattr(timing, "measure", broken_measure)
    late = runner.run_kernel(get("triton.good"), p, device="cpu")
    assert late.status == "error" and "event timing failed" in late.reason and late.config["split"] == 2

    rows = [ok, uns]
    assert not runner.any_bad(rows) and not runner.nothing_checked(rows)
    assert runner.any_bad(rows + [err]) and runner.any_bad(rows + [bad])
    assert runner.nothing_checked([uns])


def test_run_passes_each_kernel_its_own_options(fake_registry):
    p = Problem(4, 4, 4)
    ks = [registry._REGISTRY["triton.good"], registry._REGISTRY["cublas"]]
    rows = runner.run([(k, p) for k in ks], timing=False, device="cpu", options={"triton.good": {"split": 8}})
    assert [r.config for r in rows] == [{"split": 8, "chosen_by": "user"}, {"split": 2, "chosen_by": "heuristic"}]


# ---------------------------------------------------------------- files checked before any GPU work

def test_output_in_a_missing_directory_is_a_usage_error_before_gpu_work(no_gpu_work, capsys):
    assert main(["--stage", "split_k", "-o", "/nonexistent/dir/out.json"]) == 2
    err = _err(capsys)
    assert "/nonexistent/dir/out.json" in err and "does not exist" in err


def test_output_that_is_a_directory_is_a_usage_error(no_gpu_work, tmp_path, capsys):
    assert main(["--interpret", "-o", str(tmp_path)]) == 2
    assert "is a directory" in _err(capsys)


@pytest.mark.parametrize("name, msg", [("p.xyz", "unknown image type .xyz"), ("p", "unknown image type (no suffix)"),
                                       ("missing/p.png", "does not exist")])
def test_bad_plot_target_is_a_usage_error_before_gpu_work(no_gpu_work, tmp_path, capsys, name, msg):
    assert main(["--stage", "split_k", "--plot", str(tmp_path / name)]) == 2
    err = _err(capsys)
    assert msg in err and "--plot" in err


def test_plot_with_check_or_interpret_is_a_usage_error(no_gpu_work, tmp_path, capsys):
    assert main(["--interpret", "--plot", str(tmp_path / "p.png")]) == 2
    assert "measures none" in _err(capsys)


@pytest.mark.parametrize("content, msg", [
    (None, "no such file"),
    ("", "is empty"),
    ("{not json", "is not valid JSON"),
    ("[1, 2]", "not a results file"),
    ('{"results": [{"kernel": "x"}]}', "result 0 lacks"),
    ('{"results": [7]}', "result 0 is int"),
])
def test_bad_from_json_is_a_usage_error_naming_the_file(no_gpu_work, tmp_path, capsys, content, msg):
    path = tmp_path / "r.json"
    if content is not None:
        path.write_text(content)
    assert main(["--from-json", str(path)]) == 2
    err = _err(capsys)
    assert str(path) in err and msg in err


# ---------------------------------------------------------------- writing results

def _interpret(argv):
    return main(["--interpret", "--stage", "split_k", "--shape", "6x8x10", *argv])


def test_output_format_follows_the_suffix(fake_registry, tmp_path):
    jp, cp, mp = tmp_path / "r.json", tmp_path / "r.csv", tmp_path / "r.md"
    assert _interpret(["--kernel", "triton.good", "-o", str(jp)]) == 0
    doc = json.loads(jp.read_text())                       # a table would not parse
    assert {r["kernel"] for r in doc["results"]} == {"cublas", "triton.good"}
    assert _interpret(["--kernel", "triton.good", "-o", str(cp)]) == 0
    assert cp.read_text().startswith("kernel,family,")
    assert _interpret(["--kernel", "triton.good", "-o", str(mp)]) == 0
    assert "| kernel |" in mp.read_text()


def test_format_contradicting_the_suffix_is_a_usage_error(no_gpu_work, tmp_path, capsys):
    assert _interpret(["--format", "csv", "-o", str(tmp_path / "r.json")]) == 2
    assert "--format csv contradicts" in _err(capsys)


def test_output_is_replaced_atomically(fake_registry, tmp_path, monkeypatch):
    out = tmp_path / "r.txt"
    out.write_text("the previous run's results\n")

    def broken_table(results, env, file):
        file.write("half a tab")
        raise RuntimeError("rendering broke")
    monkeypatch.setattr(report, "to_table", broken_table)
    with pytest.raises(RuntimeError):
        _interpret(["--kernel", "triton.good", "-o", str(out)])
    assert out.read_text() == "the previous run's results\n"
    # no temp file left behind; the rows measured before the write broke stay in the checkpoint
    assert sorted(os.listdir(tmp_path)) == ["r.txt", "r.txt.checkpoint.jsonl"]
    assert [r.kernel for r in report.load(str(out) + ".checkpoint.jsonl")[0]] == ["cublas", "triton.good"]
    monkeypatch.undo()


def test_json_records_the_reproducible_command(fake_registry, tmp_path):
    out = tmp_path / "r.json"
    assert _interpret(["--kernel", "triton.good", "-o", str(out)]) == 0
    cmd = json.loads(out.read_text())["command"]
    assert cmd == f"python -m compare --interpret --stage split_k --shape 6x8x10 --kernel triton.good -o {out}"


# ---------------------------------------------------------------- exit codes

def test_an_erroring_kernel_exits_1(fake_registry, capsys):
    assert _interpret(["--kernel", "triton.raises"]) == 1
    assert "compile failed" in capsys.readouterr().out


def test_a_failed_kernel_exits_1(fake_registry):
    assert _interpret(["--kernel", "triton.wrong", "-q"]) == 1


def test_nothing_to_check_is_exit_2_before_gpu_work(no_gpu_work, capsys):
    # every selected kernel unsupported at this shape (odd N), cuBLAS alone proves nothing
    assert main(["--interpret", "--stage", "split_k", "--kernel", "triton.good", "--shape", "6x7x10"]) == 2
    err = _err(capsys)
    assert "nothing to check" in err and "needs even N" in err
    # a CUDA kernel under --interpret is skipped: nothing to check either
    assert main(["--interpret", "--kernel", "cuda.10_split_k", "--shape", "8"]) == 2
    assert "needs a GPU" in _err(capsys)


def test_interpret_with_only_cuda_is_a_usage_error(no_gpu_work, capsys):
    assert main(["--interpret", "--family", "cuda"]) == 2
    assert "--interpret runs the Triton kernels only" in _err(capsys)


def test_from_json_where_nothing_was_checked_exits_2(fake_registry, tmp_path, capsys):
    rows = runner.run([(registry._REGISTRY["triton.good"], Problem(3, 3, 3))], timing=False, device="cpu")
    assert rows[0].status == "unsupported"
    path = tmp_path / "r.json"
    path.write_text(report.to_json(rows, {}))
    assert main(["--from-json", str(path), "-q"]) == 2
    assert "nothing was checked" in _err(capsys)


# ---------------------------------------------------------------- selection

def test_comma_shape_is_a_usage_error_suggesting_x(no_gpu_work, capsys):
    assert main(["--interpret", "--shape", "64,64,1024"]) == 2
    assert "64x64x1024" in _err(capsys)


def test_kernel_outside_the_stage_is_a_usage_error_naming_both(no_gpu_work, capsys):
    assert main(["--interpret", "--stage", "naive", "--kernel", "triton.good"]) == 2
    err = _err(capsys)
    assert "--kernel triton.good is not in the selection of --stage naive" in err


def test_fp32_k_over_the_limit_is_a_usage_error(no_gpu_work, capsys):
    assert main(["--interpret", "--shape", "8x8x4194305"]) == 2
    assert "over 4194304" in _err(capsys)


# ---------------------------------------------------------------- --opt and config

def test_opt_reaches_prepare_and_config_is_recorded(fake_registry, tmp_path):
    out = tmp_path / "r.json"
    assert _interpret(["--kernel", "triton.good", "--opt", "split=4", "-o", str(out)]) == 0
    rows, _ = report.load(str(out))
    by = {r.kernel: r for r in rows}
    assert by["triton.good"].config == {"split": 4, "chosen_by": "user"}
    assert by["cublas"].config == {"split": 2, "chosen_by": "heuristic"}   # declares no split: untouched


def test_opt_with_kernel_prefix(fake_registry, tmp_path):
    out = tmp_path / "r.json"
    assert _interpret(["--opt", "triton.good:split=16", "-o", str(out), "--kernel", "triton.good"]) == 0
    rows, _ = report.load(str(out))
    assert {r.kernel: r.config["split"] for r in rows}["triton.good"] == 16


@pytest.mark.parametrize("opt, msg", [
    ("nosuch=1", "no selected kernel has an option 'nosuch'"),
    ("split=abc", "bad value 'abc' for option 'split'"),
    ("triton.wrong:split=4", "triton.wrong has no option 'split'"),
    ("triton.naive:split=4", "kernel triton.naive is not selected"),
    ("split", "write [KERNEL:]NAME=VALUE"),
])
def test_bad_opt_is_a_usage_error_before_gpu_work(no_gpu_work, capsys, opt, msg):
    assert _interpret(["--opt", opt]) == 2
    assert msg in _err(capsys)


def test_config_column_in_table_markdown_csv(fake_registry, tmp_path):
    p = Problem(4, 4, 4)
    rows = runner.run([(k, p) for k in FAKES[:2]], timing=False, device="cpu", options={"triton.good": {"split": 4}})
    md = report.to_markdown(rows, {})
    assert "| config |" in md and "split=4 chosen_by=user" in md
    table = tmp_path / "t.txt"
    with open(table, "w") as f:       # the table leaves the config out (one line per row in 120 columns)
        report.to_table(rows, {}, f)
    assert "split=4" not in table.read_text() and "triton.good" in table.read_text()
    assert "triton.good 4x4x4 fp32: split=4 chosen_by=user" in report.config_view(rows)   # --show config
    cp = tmp_path / "r.csv"
    cp.write_text(report.to_csv(rows))
    back, _ = report.load(str(cp))
    assert [r.config for r in back] == [r.config for r in rows]
    # no row has a config: no empty column
    for r in rows:
        r.config = {}
    assert "config" not in report.to_markdown(rows, {})


def test_old_json_without_config_still_loads(tmp_path):
    p = Problem(4, 4, 4)
    row = runner.Result(kernel="cublas", family="cublas", stage="cublas", group="all", variant="", shape=p.shape,
                        M=4, N=4, K=4, precision="fp32", alpha=1.0, beta=0.0, status="ok").as_dict()
    del row["config"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"command": [], "environment": {}, "results": [row]}))
    rows, _ = report.load(str(path))
    assert rows[0].config == {}


# ---------------------------------------------------------------- plots

def test_plot_with_no_timed_rows_is_a_message_not_a_traceback(fake_gpu, tmp_path, capsys, monkeypatch):
    import dataclasses
    # every row FAILED, the baseline's too: there is no time to draw
    monkeypatch.setitem(registry._REGISTRY, "cublas", dataclasses.replace(registry._REGISTRY["cublas"], prepare=_wrong))
    plot = tmp_path / "p.png"
    assert main(["--stage", "split_k", "--shape", "6x8x10", "--kernel", "triton.wrong", "-q", "--family", "triton",
                 "--plot", str(plot)]) == 1
    assert fake_gpu, "the run happened"
    err = _err(capsys)
    assert "not written" in err and not plot.exists()


def test_plot_from_a_check_run_json_is_a_usage_error(fake_registry, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert _interpret(["--kernel", "triton.good", "-o", str(out)]) == 0
    assert main(["--from-json", str(out), "--plot", str(tmp_path / "p.png")]) == 2
    assert "nothing to plot" in _err(capsys)


def test_timed_run_writes_plot(fake_gpu, tmp_path, capsys):
    plot = tmp_path / "p.png"
    out = tmp_path / "r.json"
    assert main(["--stage", "split_k", "--shape", "6x8x10", "--kernel", "triton.good", "-q",
                 "--plot", str(plot), "-o", str(out)]) == 0
    assert plot.stat().st_size > 1000 and json.loads(out.read_text())["results"][0]["median_ms"] == 1.0


# ---------------------------------------------------------------- sweeps (stand-ins for compare.harness.shapes/sweep)

@pytest.fixture
def sweep_modules(monkeypatch):
    # The real shapes module (its sweep_shapes orders and de-duplicates), with stand-in sets.
    from compare.harness import shapes
    sets = {"tiny": [(6, 8, 10), (4, 4, 4)], "more": [(4, 4, 4), (2, 6, 8)]}
    monkeypatch.setattr(shapes, "SHAPE_SETS", sets, raising=False)

    def shape_set(name):
        if name not in sets:
            raise UsageError(f"unknown shape set {name!r}")
        return list(sets[name])

    def load_shapes_file(path):
        try:
            with open(path) as f:
                return [tuple(int(x) for x in line.split("x")) for line in f if line.strip()]
        except OSError as exc:
            raise UsageError(f"can't read {path}: {exc}") from None
    monkeypatch.setattr(shapes, "shape_set", shape_set)
    monkeypatch.setattr(shapes, "load_shapes_file", load_shapes_file)

    sweep = types.ModuleType("compare.outputs.sweep")
    seen = {}

    def summarize(results):
        seen["results"] = list(results)
        return [{"kernel": "triton.good", "precision": "fp32", "n": len(results)}]

    def render_summary(summary, fmt):
        return f"SUMMARY {fmt} n={summary[0]['n']}\n"

    def plot_sweep(results, path, title="", env=None):
        seen["title"], seen["env"] = title, env
        with open(path, "wb") as f:
            f.write(b"plot")
    sweep.summarize, sweep.render_summary, sweep.plot_sweep = summarize, render_summary, plot_sweep
    import compare.outputs
    from compare.outputs import render
    monkeypatch.setitem(sys.modules, "compare.outputs.sweep", sweep)
    monkeypatch.setattr(compare.outputs, "sweep", sweep, raising=False)
    monkeypatch.setattr(render, "sweep", sweep)      # bound when compare/outputs/render.py was imported
    return seen


def test_sweep_runs_every_shape_and_ends_with_the_summary(fake_registry, sweep_modules, capsys):
    assert main(["--interpret", "--kernel", "triton.good", "--sweep", "tiny,more", "-q"]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("SUMMARY table n=6")       # 3 distinct shapes x (triton.good, cublas)
    shapes = {r.shape for r in sweep_modules["results"]}
    assert shapes == {"6x8x10", "4x4x4", "2x6x8"}


def test_sweep_json_carries_the_summary_and_shapes_file(fake_registry, sweep_modules, tmp_path):
    sf = tmp_path / "shapes.txt"
    sf.write_text("6x8x10\n2x6x8\n")
    out = tmp_path / "r.json"
    assert main(["--interpret", "--kernel", "triton.good", "--shapes-file", str(sf), "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["summary"] == [{"kernel": "triton.good", "precision": "fp32", "n": 4}]


def test_sweep_plot_uses_plot_sweep(fake_gpu, sweep_modules, tmp_path):
    plot = tmp_path / "s.svg"
    assert main(["--kernel", "triton.good", "--sweep", "tiny", "-q", "--plot", str(plot),
                 "-o", str(tmp_path / "r.md")]) == 0
    assert plot.read_bytes() == b"plot"
    assert sweep_modules["title"].startswith("How close is each kernel to cuBLAS?")   # the question, no command line
    assert (tmp_path / "r.md").read_text().rstrip().endswith("SUMMARY markdown n=4")


@pytest.mark.parametrize("argv, msg", [
    (["--sweep", "tiny", "--shape", "8"], "--shape and --sweep both set the shapes"),
    (["--sweep", "nope"], "unknown shape set 'nope'"),
    (["--shapes-file", "/nonexistent/shapes.txt"], "/nonexistent/shapes.txt"),
])
def test_sweep_usage_errors(no_gpu_work, sweep_modules, capsys, argv, msg):
    assert main(["--interpret", *argv]) == 2
    assert msg in _err(capsys)


def test_from_json_is_repeatable_and_concatenates_rows(tmp_path, capsys):
    """One file per shape set of a sweep re-renders as one table; a bad second file still refuses."""
    def row(kernel, family, shape, tflops):
        return runner.Result(kernel=kernel, family=family, stage="tiled", group="tiled", variant="",
                             shape=shape, M=64, N=64, K=64, precision="fp32", alpha=1.0, beta=0.0,
                             status="ok", median_ms=1.0, tflops=tflops)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(report.to_json([row("cublas", "cublas", "64x64x64", 2.0), row("k1", "cuda", "64x64x64", 1.0)],
                                {"gpu": "test"}))
    b.write_text(report.to_json([row("cublas", "cublas", "64x64x65", 2.0), row("k1", "cuda", "64x64x65", 1.0)],
                                {"gpu": "test"}))
    out = tmp_path / "all.json"
    assert main(["--from-json", str(a), "--from-json", str(b), "-o", str(out)]) == 0
    shapes = [r["shape"] for r in json.loads(out.read_text())["results"]]
    assert shapes == ["64x64x64", "64x64x64", "64x64x65", "64x64x65"]
    (tmp_path / "bad.json").write_text("{")
    assert main(["--from-json", str(a), "--from-json", str(tmp_path / "bad.json")]) == 2
    assert "bad.json" in capsys.readouterr().err
