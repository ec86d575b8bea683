"""Registry selection and the CLI on a machine without a GPU: parsing, every error message,
output formats round-tripping, plots from a recorded result, the interpreter mode."""
import json
import math
import os
import subprocess
import sys

import pytest

from compare.harness import registry
from compare.outputs import report
from compare.cli import main
from compare.harness.runner import Result
from compare.harness.errors import UsageError

HAVE_GPU = __import__("torch").cuda.is_available()
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_stage_of_the_ladder_is_implemented_once_per_family():
    ks = registry.kernels()
    names = [k.name for k in ks]
    assert len(names) == len(set(names))
    cuda_stages = [k.stage for k in ks if k.family == "cuda" and k.variant in ("", "deterministic")]
    expected = [s.name for s in registry.STAGES if s.name not in ("naive_blocked", "tiled")]
    assert cuda_stages == expected
    assert {"naive_blocked", "tiled", "split_k", "stream_k"} <= {k.stage for k in ks if k.family == "triton"}
    assert [k.family for k in ks][0] == "cublas"


def test_select_semantics():
    split = registry.select("split_k")
    assert {k.family for k in split} == {"cublas", "cuda", "triton"}
    assert all(k.stage in ("cublas", "split_k", "stream_k") for k in split)
    vec = registry.select("vectorized")
    assert {k.stage for k in vec if k.family == "cuda"} == {"vectorized"}
    assert {k.stage for k in vec if k.family == "triton"} == {"tiled"}  # counterparts by group
    tiled = registry.select("tiled")
    assert [k.stage for k in tiled if k.family == "cuda"] == [
        "coalesced", "smem_tiled", "blocktile_1d", "blocktile_2d", "vectorized",
        "bank_conflict_free", "warptile", "double_buffered", "tf32_mma", "wgmma_tma"]
    only_triton = registry.select("all", ["triton"])
    assert {k.family for k in only_triton} == {"cublas", "triton"}  # cuBLAS stays as the baseline
    with pytest.raises(ValueError, match="unknown stage 'nope'; valid: all, naive"):
        registry.select("nope")
    with pytest.raises(ValueError, match="unknown family 'rocm'; valid: cublas, cuda, triton"):
        registry.select("all", ["rocm"])


def test_register_rejects_duplicates_and_unknowns():
    k = registry.kernels()[0]
    with pytest.raises(ValueError, match="registered twice"):
        registry.register(registry.Kernel(name=k.name, family=k.family, stage=k.stage,
                                          precisions=k.precisions, prepare=k.prepare))
    with pytest.raises(ValueError, match="unknown stage"):
        registry.register(registry.Kernel(name="x", family="cuda", stage="magic", precisions=("fp32",),
                                          prepare=None))


def test_list_prints_the_ladder(capsys):
    assert main(["--list"]) == 0
    out = capsys.readouterr().out
    for s in registry.STAGES:
        assert s.name in out
    assert "cuda.10_split_k" in out and "triton.tiled" in out


@pytest.mark.parametrize("argv, msg", [
    (["--stage", "bogus"], "unknown stage 'bogus'; valid: all, naive, tiled, split_k"),
    (["--family", "rocm"], "unknown family 'rocm'; valid: cublas, cuda, triton"),
    (["--shape", "12x"], "malformed shape '12x'"),
    (["--shape", "0x5x5"], "malformed shape"),
    (["--precision", "fp16"], "unknown precision 'fp16'; valid: fp32, tf32, tf32x3"),
    (["--kernel", "cuda.99_magic"], "unknown kernel 'cuda.99_magic'"),
])
def test_usage_errors_exit_2_with_a_message(argv, msg, capsys):
    assert main(argv + ["--interpret", "--check"]) == 2
    assert msg in capsys.readouterr().err


@pytest.mark.skipif(HAVE_GPU, reason="this checks the no-GPU message")
def test_no_gpu_is_one_line_and_exit_2():
    p = subprocess.run([sys.executable, "-m", "compare", "--stage", "split_k"], cwd=REPO,
                       capture_output=True, text=True)
    assert p.returncode == 2
    assert p.stderr.strip().startswith("error: no CUDA GPU found") and "--interpret" in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


def _fake_results():
    rows = []
    for i, (k, fam, stage) in enumerate([("cublas", "cublas", "cublas"), ("cuda.09_double_buffered", "cuda", "double_buffered"),
                                         ("triton.tiled", "triton", "tiled")]):
        for n in (1024, 4096):
            r = Result(kernel=k, family=fam, stage=stage, group="tiled" if fam != "cublas" else "all", variant="",
                       shape=f"{n}x{n}x{n}", M=n, N=n, K=n, precision="fp32", alpha=1.0, beta=0.0, status="ok",
                       median_ms=1.0 + i, iqr_ms=0.01, min_ms=0.99, samples=20, noise=0.001,
                       tflops=2 * n**3 / ((1.0 + i) * 1e-3) / 1e12, rel_err=1e-6, worst_err=1e-7, prepare_s=0.5,
                       sm_clock_mhz=1980, temp_c=50, throttled=False, throttle_reasons=[])
            rows.append(r)
    rows.append(Result(kernel="cuda.06_vectorized", family="cuda", stage="vectorized", group="tiled", variant="",
                       shape="7x7x7", M=7, N=7, K=7, precision="fp32", alpha=1.0, beta=0.0, status="unsupported",
                       reason="float4 path needs N % 4 == 0"))
    from compare.harness.runner import fill_pct_cublas
    fill_pct_cublas(rows)
    return rows


def test_csv_and_json_round_trip_the_same_rows(tmp_path):
    rows = _fake_results()
    jp, cp = tmp_path / "r.json", tmp_path / "r.csv"
    jp.write_text(report.to_json(rows, {"gpu": "test"}))
    cp.write_text(report.to_csv(rows))
    back_json, env = report.load(str(jp))
    back_csv, _ = report.load(str(cp))
    assert env == {"gpu": "test"}
    assert [r.as_dict() for r in back_json] == [r.as_dict() for r in rows]
    assert [r.as_dict() for r in back_csv] == [r.as_dict() for r in rows]
    doc = json.loads(jp.read_text())
    for key in ("median_ms", "iqr_ms", "min_ms", "samples", "noise", "sm_clock_mhz", "throttled",
                "prepare_s", "rel_err"):
        assert key in doc["results"][0]


def test_markdown_and_table(tmp_path):
    rows = _fake_results()
    md = report.to_markdown(rows, {"gpu": "H100", "fp32_peak_tflops": 66.9})
    assert md.count("\n| ") >= len(rows) and "% cuBLAS" in md and "unsupported: float4" in md
    path = tmp_path / "t.txt"
    with open(path, "w") as f:
        report.to_table(rows, {"gpu": "H100"}, f)
    assert "cuda.09_double_buffered" in path.read_text()


@pytest.mark.parametrize("ext", ["png", "svg"])
def test_plot_from_recorded_json(tmp_path, ext):
    jp = tmp_path / "r.json"
    jp.write_text(report.to_json(_fake_results(), {"gpu": "test"}))
    out = tmp_path / f"p.{ext}"
    assert main(["--from-json", str(jp), "--plot", str(out), "--format", "csv", "-o", str(tmp_path / "x.csv")]) == 0
    assert out.stat().st_size > 5000


def test_pct_cublas_uses_the_same_shape_and_precision():
    rows = _fake_results()
    by = {(r.kernel, r.shape): r for r in rows}
    assert math.isclose(by[("cublas", "4096x4096x4096")].pct_cublas, 100.0)
    assert math.isclose(by[("triton.tiled", "1024x1024x1024")].pct_cublas, 100 / 3)


@pytest.mark.skipif(HAVE_GPU, reason="interpreter mode is the no-GPU path")
def test_interpret_split_k_end_to_end(tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "compare", "--interpret", "--stage", "split_k", "--shape", "77x65x300",
                        "--format", "json", "-o", str(out)], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr
    rows, _ = report.load(str(out))
    triton_rows = [r for r in rows if r.family == "triton"]
    assert len(triton_rows) >= 2 and all(r.status == "ok" for r in triton_rows), [r.status_text for r in rows]
    assert all(r.rel_err < 1e-5 for r in triton_rows)
    others = [r for r in rows if r.family != "triton"]
    assert others and all(r.status == "skipped" and "needs a GPU" in r.reason for r in others)


def test_cuda_readme_table_matches_the_ladder():
    """cuda_kernels/README.md's stage table is checked against the one ladder: every registered
    CUDA kernel has a row with its stage number and an existing .cu file, and every row names a
    registered kernel."""
    import os
    import re
    from compare.harness import registry
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = open(os.path.join(root, "cuda_kernels", "README.md"), encoding="utf-8").read()
    rows = {m.group(2): (int(m.group(1)), m.group(3))
            for m in re.finditer(r"^\| (\d+) \| `(cuda\.[\w.]+)` \| (\w+\.cu)", text, re.M)}
    cuda = {k.name: k for k in registry.kernels() if k.family == "cuda"}
    assert set(rows) == set(cuda), set(rows) ^ set(cuda)
    for name, (number, cu) in rows.items():
        assert number == cuda[name].number, name
        assert os.path.exists(os.path.join(root, "cuda_kernels", cu)), cu


def _literal_stage_lists(path: str, names: set) -> list:
    """Tuples, lists, sets and dict keys in a Python file that spell three or more CUDA stages or
    CUDA kernel names (cuda.NN_...) as string literals: a hand-kept second list of the ladder."""
    import ast
    import re
    kernel = re.compile(r"cuda\.\d\d_\w+$")
    found = []
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            elts = node.keys if isinstance(node, ast.Dict) else node.elts
            texts = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if sum(1 for t in texts if t in names or kernel.match(t)) >= 3:
                found.append(f"{path}:{node.lineno}")
    return found


def test_a_new_cuda_stage_is_three_files(tmp_path):
    """docs/design.md: a CUDA stage is its .cu, its declaration in cuda_kernels/registry.py (the
    ladder row and its StageSpec) and its row in cuda_kernels/README.md. Every declared CUDA stage
    has a StageSpec whose .cu exists and is numbered like the stage (README rows: the test above),
    and no other module lists the stages by name: a fourth hand-kept list fails here."""
    import os
    from cuda_kernels import registry as cuda_registry
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    names = {s.name for s in cuda_registry.LADDER}
    assert [s.name for s in registry.stages()][:len(cuda_registry.LADDER)] == [s.name for s in cuda_registry.LADDER]
    for st in cuda_registry.LADDER:
        specs = [sp for sp in cuda_registry.SPECS if sp.stage == st.name]
        assert specs, f"stage {st.name} has no StageSpec"
        for sp in specs:
            assert sp.file.startswith(f"{st.number:02d}_"), (st.name, sp.file)
            assert os.path.exists(os.path.join(root, "cuda_kernels", sp.file)), sp.file
    lists = []
    for top in ("compare", "cuda_kernels", "triton_kernels", "benchmarks", "reproduce"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                path = os.path.join(dirpath, f)
                if f.endswith(".py") and path != cuda_registry.__file__:
                    lists += _literal_stage_lists(path, names)
    assert not lists, f"the CUDA stages listed by hand outside cuda_kernels/registry.py: {lists}"
    planted = tmp_path / "extra.py"                       # the check itself sees such a list
    planted.write_text('BENCHED = ("naive", "warptile", "cuda.13_wgmma_tma")\n')
    assert _literal_stage_lists(str(planted), names) == [f"{planted}:1"]


def test_front_ends_share_one_set_of_selection_flags():
    """python -m compare and its --profile read the same selection flags from one module: the
    profile takes --sweep now, and both refuse the same bad selection with the same message."""
    from compare import cli
    from compare.harness.errors import UsageError
    from compare.outputs import profile, selection

    def flags(parser):
        return {s for a in parser._actions for s in a.option_strings}
    shared = {"--stage", "--shape", "--sweep", "--shapes-file", "--precision", "--family", "--kernel", "--opt",
              "--alpha", "--beta", "--seed"}
    assert shared <= flags(cli.build_parser()) and shared <= flags(profile.build_parser())
    assert "--variant" in flags(cli.build_parser())
    args = profile.build_parser().parse_args(["--sweep", "odd", "--kernel", "cuda.08_warptile"])
    pairs = profile.select_pairs(args)
    from compare.harness.shapes import shape_set
    assert [(p.M, p.N, p.K) for _, p in pairs] == shape_set("odd")
    for argv in (["--stage", "nope"], ["--shape", "64", "--sweep", "odd"], ["--kernel", "cuda.nope"]):
        msgs = []
        for parser in (cli.build_parser(), profile.build_parser()):
            a = parser.parse_args(argv)
            with pytest.raises(UsageError) as e:
                selection.problems(a, selection.shape_texts(a, ["64"])) if "--shape" in argv else selection.kernels(a)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]


@pytest.mark.parametrize("argv, why", [
    (["--kernel", "triton.tiled", "--opt", "config=128x128x32/8/3"], "`config` was renamed to `tile`"),
    (["--kernel", "triton.tiled", "--opt", "triton.tiled:config=128x128x32/8/3"], "`config` was renamed to `tile`"),
    (["--kernel", "triton.stream_k", "--opt", "sk=dp"], "`sk` was renamed to `mode`"),
    (["--kernel", "triton.stream_k", "--opt", "triton.stream_k:sk=dp"], "`sk` was renamed to `mode`"),
    (["--kernel", "cuda.11_stream_k", "--opt", "sk_grid=6"], "`sk_grid` was renamed to `grid`"),
    (["--kernel", "cuda.11_stream_k", "--opt", "cuda.11_stream_k:sk_grid=6"], "`sk_grid` was renamed to `grid`"),
])
def test_old_option_spellings_are_refused_with_the_new_name(argv, why, capsys):
    from compare import cli
    assert cli.main(argv + ["--shape", "64"]) == 2
    assert why in capsys.readouterr().err


def test_unprefixed_opt_refused_where_the_name_means_different_things(capsys):
    """triton.tiled's operands take as_given | k_major_b | m_major_a, triton.stream_k's seven
    values (their declared values differ): without KERNEL: it is refused; with it, or where every
    selected kernel shares the declaration, it applies."""
    from compare import cli
    from compare.harness import registry
    both = [registry.get("triton.tiled"), registry.get("triton.stream_k")]
    with pytest.raises(UsageError, match="operands means different things to triton.tiled, triton.stream_k"):
        registry.opt_flags(["operands=as_given"], both)
    assert registry.opt_flags(["triton.stream_k:operands=direct"], both) == {"triton.stream_k": {"operands": "direct"}}
    shared = [registry.get("triton.tiled"), registry.get("triton.split_k")]      # one declaration
    assert registry.opt_flags(["operands=as_given"], shared) == {
        "triton.tiled": {"operands": "as_given"}, "triton.split_k": {"operands": "as_given"}}
    assert cli.main(["--family", "triton", "--opt", "operands=as_given", "--shape", "64"]) == 2
    assert "name the kernel" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# Typed options: every in-repo option is declared by kind, and each kind has one parser.

DECLARED_KINDS = ("count", "choice", "switch", "tile")


def test_every_registered_option_is_of_a_declared_kind():
    """No kernel of the suite carries a free parse callable: its options' kinds, bounds and
    closed lists are data (what --opt, --variant NAME=* and --list read)."""
    seen = set()
    for k in registry.kernels():
        for o in k.options:
            assert o.kind in DECLARED_KINDS, f"{k.name}: option {o.name} is of kind {o.kind!r}"
            if o.kind in ("choice", "switch"):
                assert o.choices and registry.declared_choices(o) == o.choices, (k.name, o.name)
            if o.kind == "count":
                assert isinstance(o.minimum, int) and o.minimum >= 1, (k.name, o.name)
            seen.add(o.kind)
    assert seen == set(DECLARED_KINDS)


def _decode_pair(text):
    a, x, b = str(text).partition("x")
    if not (x and a.isdigit() and b.isdigit()):
        raise ValueError("expected AxB, e.g. 2x3")
    return int(a), int(b)


@pytest.mark.parametrize("opt, bad, why", [
    (registry.Option.count("grid", "h"), "0", "must be >= 1"),
    (registry.Option.count("grid", "h"), "-3", "must be >= 1"),
    (registry.Option.count("grid", "h"), "2x", "must be an integer"),
    (registry.Option.count("grid", "h"), "", "must be an integer"),
    (registry.Option.count("ws_splits", "h", maximum=64), "65", "must be <= 64"),
    (registry.Option.choice("mode", "h", ("dp", "sk")), "fast", "must be one of dp, sk"),
    (registry.Option.switch("hint", "h"), "maybe", "must be one of on, off"),
    (registry.Option.tile("tile", "h", _decode_pair), "7", "expected AxB, e.g. 2x3"),
])
def test_each_kind_refuses_bad_text_naming_the_option(opt, bad, why):
    with pytest.raises(ValueError) as e:
        opt.value(bad)
    assert str(e.value) == f"bad value {bad!r} for option {opt.name!r}: {why}"
    # Through a kernel: the kernel's name in front, the option named once.
    k = registry.Kernel("t.k", "plugin", "naive", ("fp32",), prepare=None, options=(opt,))
    with pytest.raises(UsageError) as e:
        k.parse_options({opt.name: bad})
    assert str(e.value) == f"t.k: bad value {bad!r} for option {opt.name!r}: {why}"


def test_each_kind_reads_good_text():
    assert registry.Option.count("grid", "h").value(" 12 ") == 12
    assert registry.Option.count("ws_splits", "h", maximum=64).value("64") == 64
    assert registry.Option.choice("mode", "h", ("dp", "sk")).value(" SK") == "sk"
    assert registry.Option.choice("tile", "h", ("128x128x8s3",)).value("128x128x8s3") == "128x128x8s3"
    assert registry.Option.switch("hint", "h").value("off") is False
    assert registry.Option.switch("hint", "h").value("On") is True
    assert registry.Option.tile("tile", "h", _decode_pair).value("2x3") == (2, 3)


def test_a_plugins_old_style_option_still_works():
    """Option(name, help, parse) with a callable of the plugin's own: kind "free", its message
    wrapped as before, and a ``parse.choices`` attribute read once as the closed list."""
    def parse(text):
        if text not in ("a", "b"):
            raise ValueError("pick a or b")
        return text.upper()
    parse.choices = ("a", "b")
    o = registry.Option("side", "which side", parse)
    assert o.kind == "free" and o.choices == ("a", "b") and registry.declared_candidates(o) == ("a", "b")
    k = registry.Kernel("t.k", "plugin", "naive", ("fp32",), prepare=None, options=(o,))
    assert k.parse_options({"side": "b"}) == {"side": "B"}
    with pytest.raises(UsageError, match="t.k: bad value 'c' for option 'side': pick a or b"):
        k.parse_options({"side": "c"})
    assert registry.Option("n", "plain text").value("x") == "x"
    with pytest.raises(ValueError, match="unknown kind"):
        registry.Option("n", "h", kind="float")


def test_the_ladder_order_does_not_depend_on_which_family_is_imported_first():
    """The ladder reads CUDA stages 01-13, then the Triton-only stages, also in a program that
    imports a Triton kernel module first (the Triton 3.6 CI leg's test order declared
    naive_blocked before naive)."""
    import subprocess
    import sys
    code = ("import triton_kernels.naive_blocked\nfrom compare.harness import registry\n"
            "print(' '.join(s.name for s in registry.stages()))")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                         env=dict(os.environ, TRITON_INTERPRET="1"), check=True).stdout.split()
    assert out[:15] == ["naive", "coalesced", "smem_tiled", "blocktile_1d", "blocktile_2d", "vectorized",
                        "bank_conflict_free", "warptile", "double_buffered", "split_k", "stream_k",
                        "tf32_mma", "wgmma_tma", "naive_blocked", "tiled"]
