"""A kernel of your own joins a run without editing the suite.

The plugin files live OUTSIDE the package: each test copies docs/examples/ (the files
docs/design.md shows) or writes a file to tmp_path, and runs ``python -m compare`` / the asv suite
in a subprocess whose working directory is tmp_path, so nothing loaded here leaks into the
registry of the other tests.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "docs", "examples")


def _env(*paths, interpret=True):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *paths])
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return env


def _run(args, cwd, env=None, timeout=600):
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env or _env(), capture_output=True, text=True,
                          timeout=timeout)


def _compare(args, cwd, env=None):
    return _run(["-m", "compare", *args], cwd, env)


def _rows(stdout: str) -> dict:
    return {r["kernel"]: r for r in json.loads(stdout)["results"]}


@pytest.fixture
def toy(tmp_path):
    """docs/examples/my_kernel.py copied to tmp_path (a directory the package knows nothing of)."""
    shutil.copy(os.path.join(EXAMPLES, "my_kernel.py"), tmp_path / "my_kernel.py")
    return tmp_path


def test_plugin_file_runs_checked_next_to_the_ladder_and_cublas(toy):
    p = _compare(["--interpret", "--plugin", str(toy / "my_kernel.py"), "--stage", "my.blocked",
                  "--shape", "45x70x33", "--beta", "0.5", "--alpha", "2", "--format", "json"], toy)
    assert p.returncode == 0, p.stderr
    rows = _rows(p.stdout)
    assert set(rows) == {"cublas", "triton.naive_blocked", "my.blocked"}
    mine = rows["my.blocked"]
    assert (mine["status"], mine["family"], mine["stage"], mine["group"]) == ("ok", "plugin", "my.blocked", "naive")
    assert 0 < mine["rel_err"] < 1e-5 and mine["config"]["BLOCK_M"] == 32
    assert rows["triton.naive_blocked"]["status"] == "ok"
    assert rows["cublas"]["status"] == "skipped"      # the baseline row, as for every kernel under --interpret
    assert json.loads(p.stdout)["command"].count("--plugin") == 1


def test_plugin_by_module_name_from_the_current_directory_and_in_the_list(toy):
    p = _compare(["--interpret", "--plugin", "my_kernel", "--kernel", "my.blocked", "--shape", "33x31x65",
                  "--format", "json"], toy)
    assert p.returncode == 0, p.stderr
    assert _rows(p.stdout)["my.blocked"]["status"] == "ok"
    listed = _compare(["--plugin", "my_kernel", "--list"], toy)
    assert listed.returncode == 0, listed.stderr
    # the plugin's stage joins the ladder after the last declared stage number
    assert any(line.split()[1:4] == ["my.blocked", "naive", "plugin"] for line in listed.stdout.splitlines()
               if line.split()[:1] and line.split()[0].isdigit()), listed.stdout
    assert any(line.split()[:3] == ["my.blocked", "plugin", "my.blocked"] for line in listed.stdout.splitlines())


def test_a_wrong_plugin_kernel_fails_its_row(toy):
    """The plugin's row goes through the NaN-poisoned float64 check like any other: exit 1."""
    text = (toy / "my_kernel.py").read_text().replace("out = alpha * acc", "out = alpha * acc * 1.001")
    (toy / "wrong.py").write_text(text.replace('"my.blocked"', '"my.wrong"'))
    p = _compare(["--interpret", "--plugin", "wrong.py", "--kernel", "my.wrong", "--shape", "33x31x65",
                  "--format", "json"], toy)
    assert p.returncode == 1, p.stderr
    assert _rows(p.stdout)["my.wrong"]["status"] == "FAILED"


BROKEN = {
    "import_error.py": ("import no_such_module_for_gemm_ladder\n", "ModuleNotFoundError: No module named"),
    "raises.py": ("x = 1\nraise RuntimeError('my plugin is broken')\n", "RuntimeError: my plugin is broken (line 2)"),
    "bad_precision.py": ("from compare.families.plugin import gemm\n"
                         "gemm('my.bad', lambda *a: None, precisions=('fp16',))\n",
                         "ValueError: kernel 'my.bad': unknown precisions ['fp16'] (line 2)"),
    "bad_group.py": ("from compare.families.plugin import gemm\n"
                     "gemm('my.bad', lambda *a: None, group='huge')\n",
                     "ValueError: kernel 'my.bad': unknown group 'huge'"),
    "taken_name.py": ("from compare.families.plugin import gemm\n"
                      "gemm('triton.tiled', lambda *a: None)\n",
                      "ValueError: kernel 'triton.tiled' registered twice"),
    "empty.py": ("x = 1\n", "declares no kernel"),
    "syntax.py": ("def (\n", "SyntaxError"),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_plugin_exits_2_with_one_line_naming_the_file(tmp_path, name):
    body, message = BROKEN[name]
    (tmp_path / name).write_text(body)
    p = _compare(["--interpret", "--plugin", name, "--stage", "naive", "--shape", "8"], tmp_path)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: --plugin {name}"), p.stderr
    assert message in lines[0], lines[0]
    assert p.stdout == ""


def test_missing_plugin_file_or_module_exits_2(tmp_path):
    p = _compare(["--plugin", "nowhere/my.py", "--list"], tmp_path)
    assert p.returncode == 2 and p.stderr.strip() == "error: --plugin nowhere/my.py: no such file", p.stderr
    p = _compare(["--plugin", "no_such_plugin_module", "--list"], tmp_path)
    assert p.returncode == 2 and "no module named 'no_such_plugin_module'" in p.stderr, p.stderr


def test_loaded_plugins_are_the_specs_as_given(toy):
    """What a worker process is handed: the --plugin specs as given, each loaded once (a file given
    twice, or by two paths, registers its kernels once)."""
    code = textwrap.dedent(f"""
        from compare.harness import registry
        registry.load_plugins(["my_kernel.py", "my_kernel.py", {str(toy / 'my_kernel.py')!r}])
        print(registry.loaded_plugins())
        print(registry.plugin_kernels()["my_kernel.py"], registry.get("my.blocked").family)
    """)
    p = _run(["-c", code], toy)
    assert p.returncode == 0, p.stderr
    given, kernels = p.stdout.strip().splitlines()
    assert given == repr(["my_kernel.py", str(toy / "my_kernel.py")])
    assert kernels == "['my.blocked'] plugin"


def _install_entry_point(site, module="my_kernel", value=None):
    """A distribution on sys.path that declares ``module`` in the gemm_ladder.kernels group, as
    ``pip install`` of a package with [project.entry-points."gemm_ladder.kernels"] would."""
    info = site / "my_kernels-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my-kernels\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[gemm_ladder.kernels]\nmine = {value or module}\n")


def test_installed_entry_point_needs_no_flag(toy):
    site = toy / "site"
    _install_entry_point(site)
    shutil.move(str(toy / "my_kernel.py"), site / "my_kernel.py")
    p = _compare(["--interpret", "--kernel", "my.blocked", "--shape", "45x70x33", "--format", "json"], toy,
                 _env(str(site)))
    assert p.returncode == 0, p.stderr
    assert _rows(p.stdout)["my.blocked"]["status"] == "ok"


def test_asv_suite_has_classes_for_an_installed_plugin(toy):
    """benchmarks/gemm.py (what asv imports; no CLI flags) sees the entry point's kernel: it is in
    its group's time class and %-of-cuBLAS class, as every kernel of the group is."""
    site = toy / "site"
    _install_entry_point(site)
    shutil.move(str(toy / "my_kernel.py"), site / "my_kernel.py")
    code = ("import json, benchmarks.gemm as g\n"
            "print(json.dumps({n: c.params[0] for n, c in g._CLASSES.items()}))\n")
    p = _run(["-c", code], toy, _env(str(site), interpret=False))
    assert p.returncode == 0, p.stderr
    params = json.loads(p.stdout.strip().splitlines()[-1])
    assert "my.blocked" in params["Naive"] and "cublas" in params["Naive"]
    assert "my.blocked" in params["NaivePctCublas"]
    assert not any("my.blocked" in v for n, v in params.items() if not n.startswith("Naive"))
    # without the entry point, the same suite has no such parameter
    p = _run(["-c", code], toy, _env(interpret=False))
    assert "my.blocked" not in p.stdout


def test_broken_entry_point_warns_and_leaves_the_ladder(tmp_path):
    site = tmp_path / "site"
    _install_entry_point(site, module="no_such_plugin_module")
    p = _compare(["--interpret", "--stage", "naive_blocked", "--shape", "8", "--format", "json"], tmp_path,
                 _env(str(site)))
    assert p.returncode == 0, p.stderr
    assert "warning: could not load plugin mine = no_such_plugin_module" in p.stderr
    assert _rows(p.stdout)["triton.naive_blocked"]["status"] == "ok"


def test_cuda_plugin_runs_on_the_emulator(tmp_path):
    """docs/examples/my_cuda_kernel.py and its .cu, copied out of the package, compiled by the
    ladder's loader path on the CPU emulator (g++), checked against float64 with C NaN-poisoned."""
    from cuda_kernels.emulator import compiler
    if compiler() is None:
        pytest.skip("no C++ compiler (g++) for the CPU emulator")
    for f in ("my_cuda_kernel.py", "my_sgemm.cu"):
        shutil.copy(os.path.join(EXAMPLES, f), tmp_path / f)
    code = textwrap.dedent(f"""
        from compare.harness import registry
        from compare.harness.check import check
        from compare.harness.inputs import make_inputs
        from compare.harness.problem import Problem
        from cuda_kernels import loader
        from cuda_kernels.emulator import EmuBackend, EmuInputs
        registry.load_plugins(["my_cuda_kernel.py"])
        k = registry.get("my.cuda_sgemm")
        print(k.family, k.group, k.meta["plugin"])
        for p in (Problem(45, 70, 33), Problem(33, 65, 17, alpha=0.5, beta=-1.5)):
            inp = make_inputs(p, "cpu")
            emu = EmuInputs(inp)
            with loader.use_backend(EmuBackend(cache_dir={str(tmp_path / 'emu')!r})):
                launch = k.prepare(p, emu, {{}})
                emu.reset_c(poison=True)
                launch()
            r = check(p, emu.c_tensor(), inp.ref, inp.bound)
            print(r.ok, r.rel_err > 0, launch.config["grid"])
    """)
    p = _run(["-c", code], tmp_path, _env(interpret=False))
    assert p.returncode == 0, p.stderr
    lines = p.stdout.strip().splitlines()
    assert lines[0] == f"plugin tiled {tmp_path / 'my_sgemm.cu'}"
    assert lines[1:] == ["True True [6, 1, 1]", "True True [6, 1, 1]"]


def test_design_md_shows_the_example_file_literally():
    """docs/design.md's "Your own kernel" shows docs/examples/my_kernel.py, the file these tests run."""
    design = open(os.path.join(ROOT, "docs", "design.md"), encoding="utf-8").read()
    section = design.split("## Your own kernel", 1)[1].split("\n## ", 1)[0]
    shown = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert shown == open(os.path.join(EXAMPLES, "my_kernel.py"), encoding="utf-8").read()
    assert "--plugin docs/examples/my_kernel.py" in section


def test_triton_plugin_with_precision_gets_the_dot_precision_per_row(toy):
    """A kernel that takes PRECISION gets the problem's tl.dot input precision (ieee for fp32);
    the row's config says which."""
    text = (toy / "my_kernel.py").read_text()
    text = text.replace("BLOCK_K: tl.constexpr):", "BLOCK_K: tl.constexpr, PRECISION: tl.constexpr):")
    text = text.replace('input_precision="ieee")', "input_precision=PRECISION)")
    text = text.replace('group="naive",', 'group="tiled", precisions=("fp32", "tf32"),')
    (toy / "prec.py").write_text(text.replace('"my.blocked"', '"my.prec"'))
    p = _compare(["--interpret", "--plugin", "prec.py", "--kernel", "my.prec", "--shape", "33x31x65",
                  "--precision", "fp32", "--precision", "tf32", "--format", "json"], toy)
    assert p.returncode == 0, p.stderr
    got = {(r["kernel"], r["precision"]): r for r in json.loads(p.stdout)["results"]}
    assert got[("my.prec", "fp32")]["config"]["input_precision"] == "ieee"
    assert got[("my.prec", "tf32")]["config"]["input_precision"] == "tf32"
    assert got[("my.prec", "fp32")]["status"] == got[("my.prec", "tf32")]["status"] == "ok"
    assert got[("my.prec", "fp32")]["group"] == "tiled"


# --- GPU: timed next to cuBLAS, and tracked by asv ---------------------------------------------

@pytest.mark.gpu
def test_gpu_plugins_are_timed_next_to_cublas(tmp_path):
    for f in ("my_kernel.py", "my_cuda_kernel.py", "my_sgemm.cu"):
        shutil.copy(os.path.join(EXAMPLES, f), tmp_path / f)
    p = _compare(["--plugin", "my_kernel.py", "--plugin", "my_cuda_kernel.py", "--family", "plugin",
                  "--shape", "1000", "--shape", "1024", "--budget", "0.3", "--format", "json"], tmp_path,
                 _env(interpret=False))
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)["results"]
    mine = [r for r in rows if r["family"] == "plugin"]
    assert {r["kernel"] for r in mine} == {"my.blocked", "my.cuda_sgemm"} and len(mine) == 4
    assert all(r["status"] == "ok" and r["median_ms"] > 0 and r["pct_cublas"] > 0 for r in mine), mine
    assert any(r["kernel"] == "cublas" and r["status"] == "ok" for r in rows)


@pytest.mark.gpu
def test_gpu_asv_tracks_an_installed_plugin(tmp_path):
    site = tmp_path / "site"
    _install_entry_point(site)
    shutil.copy(os.path.join(EXAMPLES, "my_kernel.py"), site / "my_kernel.py")
    # the group's measuring process (asv's setup_cache), narrowed to the plugin's point
    code = ("import benchmarks.gemm as g\n"
            "c = g.measure_points([('my.blocked', '512x512x512', 'fp32')], [('my.blocked', 'fp32', ('512x512x512',))])\n"
            "t = g.Naive().track_time(c, 'my.blocked', '512x512x512', 'fp32')\n"
            "print(len(t['samples']) if isinstance(t, dict) else t)\n"
            "p = g.NaivePctCublas().track_pct_cublas(c, 'my.blocked', 'fp32')\n"
            "print(sorted(p['samples'])[len(p['samples']) // 2] if isinstance(p, dict) else p)\n")
    p = _run(["-c", code], tmp_path, _env(str(site), interpret=False))
    assert p.returncode == 0, p.stderr
    samples, pct = p.stdout.strip().splitlines()[-2:]
    assert float(samples) > 0 and 0 < float(pct) < 1000


def test_interpret_with_family_plugin_runs_the_plugin(toy):
    """--interpret refuses a --family that selects nothing interpretable (cuda); a plugin family
    whose Triton kernel runs under the interpreter is not refused."""
    p = _compare(["--interpret", "--plugin", "my_kernel.py", "--family", "plugin", "--shape", "8", "--format", "json"],
                 toy)
    assert p.returncode == 0, p.stderr
    assert _rows(p.stdout)["my.blocked"]["status"] == "ok"
    p = _compare(["--interpret", "--family", "cuda", "--shape", "8"], toy)
    assert p.returncode == 2 and "--interpret runs the Triton kernels only" in p.stderr


def test_the_tf32_b_through_registers_example_is_right_in_every_mode(tmp_path):
    """docs/examples/tf32_b_through_registers.py (the experiment behind results/h100/tf32-llm/):
    each of its B paths gives the right product on a shape with partial tiles, under the
    interpreter; on the GPU they are timed beside triton.stream_k."""
    shutil.copy(os.path.join(EXAMPLES, "tf32_b_through_registers.py"), tmp_path / "b_regs.py")
    kernels = ["x.load256", "x.stage256", "x.stage128", "x.stage128w4", "x.swap128"]
    selection = [a for k in kernels for a in ("--kernel", k)]
    p = _compare(["--interpret", "--plugin", str(tmp_path / "b_regs.py"), *selection,
                  "--precision", "tf32", "--shape", "70x96x64", "--format", "json"], tmp_path)
    assert p.returncode == 0, p.stderr
    rows = _rows(p.stdout)
    assert {k: rows[k]["status"] for k in kernels} == {k: "ok" for k in kernels}
    assert all(rows[k]["rel_err"] < 1e-3 for k in kernels)
    # K not a multiple of the tile's BLOCK_K is refused in words, not computed wrong
    p = _compare(["--interpret", "--plugin", str(tmp_path / "b_regs.py"), "--kernel", "x.stage128",
                  "--precision", "tf32", "--shape", "70x96x65", "--format", "json"], tmp_path)
    row = _rows(p.stdout)["x.stage128"]
    assert row["status"] == "error" and "K % BK == 0" in row["reason"], row


def test_the_tf32_mma_rounded_example_is_right_and_rounds_only_where_asked(tmp_path):
    """docs/examples/tf32_mma_rounded.py (results/h100/tensor-core/stage12-probes/triton-mma-sync/, part 6):
    both copies right on partial tiles under the interpreter; x.rna adds half a TF32 ulp to the
    operands' bits and x.trunc does not (the interpreter keeps every bit, so the added half ulp
    shows as ~2^-11 relative error: the rounding really runs); K % 32 != 0 refused in words."""
    shutil.copy(os.path.join(EXAMPLES, "tf32_mma_rounded.py"), tmp_path / "rounded.py")
    p = _compare(["--interpret", "--plugin", str(tmp_path / "rounded.py"), "--kernel", "x.trunc", "--kernel",
                  "x.rna", "--precision", "tf32", "--shape", "70x96x64", "--format", "json"], tmp_path)
    assert p.returncode == 0, p.stderr
    rows = _rows(p.stdout)
    assert rows["x.trunc"]["status"] == rows["x.rna"]["status"] == "ok"
    assert rows["x.trunc"]["rel_err"] < 1e-6 < 1e-4 < rows["x.rna"]["rel_err"] < 2e-3
    assert rows["x.rna"]["config"]["operands"] == "rna" and rows["x.trunc"]["config"]["operands"] == "truncated"
    p = _compare(["--interpret", "--plugin", str(tmp_path / "rounded.py"), "--kernel", "x.rna",
                  "--precision", "tf32", "--shape", "70x96x65", "--format", "json"], tmp_path)
    row = _rows(p.stdout)["x.rna"]
    assert row["status"] == "error" and "K % BK == 0" in row["reason"], row


def test_the_tf32_b_by_tma_example_is_right_and_its_ir_study_runs(tmp_path):
    """docs/examples/tf32_b_by_tma.py (B read by TMA as stored, plain and swapped product): right
    under the interpreter on partial tiles; an unaligned N is refused in words; and
    ``stream_k_study --tma-b-ir`` compiles both for sm_90 and counts what the compiler made of B."""
    shutil.copy(os.path.join(EXAMPLES, "tf32_b_by_tma.py"), tmp_path / "b_tma.py")
    kernels = ["x.tma_direct", "x.tma_swap"]
    selection = [a for k in kernels for a in ("--kernel", k)]
    p = _compare(["--interpret", "--plugin", str(tmp_path / "b_tma.py"), *selection,
                  "--precision", "tf32", "--shape", "130x300x100", "--format", "json"], tmp_path)
    assert p.returncode == 0, p.stderr
    rows = _rows(p.stdout)
    assert {k: rows[k]["status"] for k in kernels} == {k: "ok" for k in kernels}
    assert all(rows[k]["rel_err"] < 1e-3 for k in kernels)
    p = _compare(["--interpret", "--plugin", str(tmp_path / "b_tma.py"), "--kernel", "x.tma_swap",
                  "--precision", "tf32", "--shape", "70x95x64", "--format", "json"], tmp_path)
    row = _rows(p.stdout)["x.tma_swap"]
    assert row["status"] == "error" and "16-byte row strides" in row["reason"], row
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-m", "reproduce.stream_k_study", "--tma-b-ir"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    counts = json.loads(out.stdout[out.stdout.index("{"):])
    assert set(counts) == set(kernels) and all(c["wgmma"] >= 1 for c in counts.values()), counts


def test_the_tf32_gluon_example_compiles_to_register_operand_wgmma():
    """docs/examples/tf32_gluon_swap.py is GPU-only (Gluon has no interpreter): compiled for sm_90
    by ``stream_k_study --gluon-ir``, every wgmma of both tiles takes B^T from registers and A and B
    arrive by TMA; ptxas's note on the pipeline is reported, whatever it says."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-m", "reproduce.stream_k_study", "--gluon-ir"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    counts = json.loads(out.stdout[out.stdout.index("{"):])
    assert set(counts) == {"x.gluon_swap", "x.gluon_swap128"}, counts
    for c in counts.values():
        assert c["wgmma"] > 0 and c["wgmma with A from registers"] == c["wgmma"] and c["tma copies"] > 0, c
        assert not c["ptxas serialisation"].startswith("ptxas failed"), c


def test_the_plugin_cli_fixture_runs_nothing_when_a_spawned_worker_imports_it(monkeypatch):
    """Dask's nanny starts a worker by spawn, which runs the parent's main file again under the name
    ``__mp_main__``: the fixture the GPU fault tests start must not run the command there (it did: every
    Dask worker ran the whole sweep again, started its own cluster and printed a spawn traceback)."""
    import runpy
    monkeypatch.setattr(sys, "argv", ["plugin_cli.py", "--list"])
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "plugin_cli.py")
    runpy.run_path(path, run_name="__mp_main__")   # raised SystemExit (the command ran) before the guard
