"""The Triton kernels under TRITON_INTERPRET=1 on CPU tensors: correctness only.

tests/conftest.py sets TRITON_INTERPRET=1 before anything imports triton_kernels when there is
no GPU (Triton 3.6 decides interpreter vs. compiler when @triton.jit decorates). With a GPU the
module is skipped: tests/test_gpu_triton.py runs the same cases compiled.

What the interpreter can't show: it runs ``tl.dot`` as ``np.matmul`` in fp32 whatever
``input_precision`` says (triton/runtime/interpreter.py, ``create_dot``), so a "tf32" kernel
here computes fp32 products. test_tf32_under_the_interpreter_is_fp32 pins that down; the GPU
module asserts that real TF32 fails the fp32 tolerance. Nor can it show split-K's
(non-)determinism: it runs programs one after another, so atomics land in a fixed order
(test_gpu_triton.py has the determinism test with the atomic kernel as its negative control).

Split-K kernels run here with real splits (option split_k; the heuristic gives S = 1 for most
test shapes), and every tile kernel meets shapes with an odd number of tile rows: the
interpreter's config has GROUP_M = 2, so those end on a partial group of the launch order.
"""
from __future__ import annotations

import os

import pytest
import torch

if torch.cuda.is_available():
    pytest.skip("a CUDA GPU is present: tests/test_gpu_triton.py covers the Triton kernels compiled",
                allow_module_level=True)
if os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
    pytest.skip("TRITON_INTERPRET=1 must be set before triton_kernels is imported "
                "(tests/conftest.py does it when no GPU is present)", allow_module_level=True)

from compare.harness.check import check  # noqa: E402
from compare.harness.errors import UsageError  # noqa: E402
from compare.harness.inputs import make_inputs  # noqa: E402
from compare.harness.problem import Problem  # noqa: E402
from compare.harness.runner import OK, prepare, run_kernel  # noqa: E402
from triton_kernels import _gemm, _operands, naive_blocked, split_k, tiled  # noqa: E402
from triton_kernels._common import interpreting  # noqa: E402

KERNELS = [naive_blocked.KERNEL, tiled.KERNEL, split_k.KERNEL, split_k.KERNEL_ATOMIC]
CASES = [(k, p) for k in KERNELS for p in k.precisions]
CASE_IDS = [f"{k.name}-{p}" for k, p in CASES]
SMALL_SHAPES = [(1, 1, 1), (7, 33, 127), (77, 65, 300)]
BIG_SHAPE = (255, 129, 1023)
# Odd numbers of 64-row tiles (3, 5, 3) under the interpreter's 64x64 tile and GROUP_M = 2: the
# last group of the grouped launch order is short. 150x70x65 is where a swizzle without the
# min() leaves tile (2, 1) unwritten (132 NaN elements).
ODD_TILE_ROW_SHAPES = [(150, 70, 65), (300, 130, 200), (129, 65, 64)]
ALPHA_BETA = [(1.0, 0.0), (0.5, -1.5), (-2.0, 0.0), (1.0, 1.0)]
SPLIT_KERNELS = [split_k.KERNEL, split_k.KERNEL_ATOMIC]
SPLIT = 3      # forced split count for the split-K kernels (K >= 129: three chunks of >= 64)


def _options(kernel, **extra):
    return dict({"split_k": SPLIT} if kernel in SPLIT_KERNELS else {}, **extra)


def _ok(kernel, problem, **options):
    """Through the one pipeline (compare.harness.runner.run_kernel, no timing): a NaN-poisoned C, the
    float64 check. Returns the result row (its config is what ran)."""
    r = run_kernel(kernel, problem, timing=False, device="cpu", options=_options(kernel, **options))
    assert r.status == OK, f"{kernel.name} {problem}: {r.status_text}"
    if kernel in SPLIT_KERNELS:
        assert r.config["split_k"] == split_k.split_geometry(problem.K, options.get("split_k", SPLIT))[0]
    return r


def test_interpreter_is_on():
    assert interpreting()


def test_all_four_registered_once():
    assert [k.name for k in KERNELS] == ["triton.naive_blocked", "triton.tiled", "triton.split_k",
                                         "triton.split_k_atomic"]
    assert all(k.family == "triton" and k.interpretable for k in KERNELS)
    assert naive_blocked.KERNEL.precisions == ("fp32",)
    assert {k.variant for k in SPLIT_KERNELS} == {"deterministic", "atomic"}


@pytest.mark.parametrize("kernel,precision", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("shape", SMALL_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_odd_shapes(kernel, precision, shape):
    _ok(kernel, Problem(*shape, precision=precision, alpha=0.5, beta=-1.5))


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("shape", ODD_TILE_ROW_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_odd_tile_row_counts(kernel, shape, beta):
    r = _ok(kernel, Problem(*shape, precision="fp32", alpha=1.5, beta=beta))
    if kernel is not naive_blocked.KERNEL:
        assert r.config["group_m"] == 2 and r.config["tile"].startswith("64x64")   # a short last group


@pytest.mark.parametrize("kernel,precision", CASES, ids=CASE_IDS)
def test_big_odd_shape(kernel, precision):
    _ok(kernel, Problem(*BIG_SHAPE, precision=precision, alpha=1.0, beta=0.0))


@pytest.mark.parametrize("kernel,precision", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("alpha,beta", ALPHA_BETA)
def test_alpha_beta(kernel, precision, alpha, beta):
    # beta == 0: run_kernel poisons C with NaN, so a kernel that reads C fails here.
    _ok(kernel, Problem(77, 65, 300, precision=precision, alpha=alpha, beta=beta))


# --- split-K: real splits, the reduction's tail, the heuristic ----------------------------------


@pytest.mark.parametrize("kernel", SPLIT_KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("split", [2, 5, 8])
def test_split_counts_around_the_reduction_unroll(kernel, split):
    """The reduction adds four partials per step: S = 2 and 5 leave 2 and 3 masked-out partials in
    its last step, S = 8 none. K = 64*S - 10: S chunks of 64, the last one short."""
    r = _ok(kernel, Problem(65, 33, 64 * split - 10, precision="fp32", alpha=0.5, beta=-1.5), split_k=split)
    assert r.config["k_chunk"] == 64


@pytest.mark.parametrize("kernel", SPLIT_KERNELS, ids=lambda k: k.name)
def test_split_k_heuristic_split_long_k(kernel):
    """No option: the cost model splits a long K (Triton 3.9's interpreter once refused the
    reduction's masks at every S > 1: 'mask has unsupported dtype')."""
    problem = Problem(32, 32, 16384, precision="fp32", alpha=1.0, beta=0.0)
    r = run_kernel(kernel, problem, timing=False, device="cpu")
    assert r.status == OK, r.status_text
    assert r.config["split_k"] == split_k.choose_split(32, 32, 16384, 132)[0] > 1
    assert r.config["split_chosen_by"] == "heuristic"


def test_split_heuristic():
    # one wave of ~132 programs on an H100, chunks >= 512, multiples of 64
    assert split_k.choose_split(256, 256, 131072, 132) == (33, 4032)
    assert split_k.choose_split(512, 512, 65536, 132) == (8, 8192)
    assert split_k.choose_split(4096, 4096, 4096, 132)[0] == 1
    assert split_k.choose_split(300, 300, 511, 132) == (1, 512)
    for M, N, K in [(256, 256, 16384), (1024, 1024, 16384), (4096, 128, 4096), (77, 65, 300)]:
        s, chunk = split_k.choose_split(M, N, K, 132)
        assert chunk % 64 == 0 and (s == 1 or chunk >= 512) and (s - 1) * chunk < K <= s * chunk


def test_split_k_keyword_and_errors():
    A, B = torch.randn(33, 300), torch.randn(300, 20)
    C = torch.empty(33, 20)
    split_k.split_k_matmul(A, B, C, split_k=2)
    torch.testing.assert_close(C, A @ B, rtol=1e-5, atol=1e-4)
    with pytest.raises(UsageError, match="split_k must be a positive integer"):
        split_k.split_k_matmul(A, B, C, split_k=0)
    with pytest.raises(UsageError, match="more than 4096 splits"):
        split_k.split_k_atomic_matmul(A, B, C, split_k=5000)


# --- options: parsed, applied, reported -------------------------------------------------------


def test_options_parse_and_refuse():
    k = split_k.KERNEL
    assert k.parse_options({"split_k": "4", "operands": "k_major_b", "autotune": "off"}) == \
        {"split_k": 4, "operands": "k_major_b", "autotune": False}
    cfg = tiled.KERNEL.parse_options({"tile": "128x64x32/4/3"})["tile"]
    assert _gemm.config_name(cfg) == "128x64x32/4/3" and cfg.kwargs["GROUP_M"] == 8
    assert _gemm.config_name(_gemm.parse_config("64x64x64/4/1/2")) == "64x64x64/4/1/2"
    for kernel, raw, msg in [(tiled.KERNEL, {"split_k": "2"}, "has no option 'split_k'"),
                             (k, {"split_k": "0"}, "must be >= 1"),
                             (k, {"split_k": "two"}, "bad value 'two'"),
                             (tiled.KERNEL, {"operands": "presplit"}, "must be one of as_given"),
                             (tiled.KERNEL, {"autotune": "maybe"}, "must be one of on, off"),
                             (tiled.KERNEL, {"tile": "128x128x32"}, "BMxBNxBK/warps/stages"),
                             (tiled.KERNEL, {"tile": "100x128x32/4/3"}, "BM=100 must be a power of two"),
                             (tiled.KERNEL, {"tile": "128x128x32/3/3"}, "warps=3")]:
        with pytest.raises(UsageError, match=msg):
            kernel.parse_options(raw)
    with pytest.raises(UsageError, match="'m_major_a' is an fp32"):
        prepare(tiled.KERNEL, Problem(8, 8, 8, "tf32"), make_inputs(Problem(8, 8, 8, "tf32"), "cpu"),
                {"operands": "m_major_a"})


def _spy_launches(monkeypatch, chooser):
    seen = []
    real = chooser.launch

    def spy(C, args, config, *rest, **constexprs):
        seen.append((_gemm.config_name(config), args))
        real(C, args, config, *rest, **constexprs)
    monkeypatch.setattr(chooser, "launch", spy)
    return seen


@pytest.mark.parametrize("kernel,chooser", [(tiled.KERNEL, tiled.CHOOSER), (split_k.KERNEL, split_k.CHOOSER),
                                            (split_k.KERNEL_ATOMIC, split_k.CHOOSER)], ids=lambda x: getattr(x, "name", ""))
def test_user_config_is_what_runs_and_what_is_reported(kernel, chooser, monkeypatch):
    seen = _spy_launches(monkeypatch, chooser)
    r = _ok(kernel, Problem(150, 70, 65, precision="fp32", alpha=0.5, beta=-1.5), tile="32x16x16/4/2/1")
    assert r.config["config"] == "32x16x16/4/2/1" and r.config["chosen_by"] == "user"
    assert r.config["tile"] == "32x16x16" and r.config["autotune"] == "off"
    assert seen and {name for name, _ in seen} == {"32x16x16/4/2/1"}


@pytest.mark.parametrize("kernel,chooser", [(tiled.KERNEL, tiled.CHOOSER), (split_k.KERNEL, split_k.CHOOSER)],
                         ids=lambda x: getattr(x, "name", ""))
def test_reported_config_is_the_launched_one(kernel, chooser, monkeypatch):
    seen = _spy_launches(monkeypatch, chooser)
    r = _ok(kernel, Problem(77, 65, 300, precision="tf32", alpha=1.0, beta=0.0), operands="as_given")
    assert r.config["chosen_by"] == "heuristic" and r.config["operands"] == "as_given"
    assert r.config["operands_chosen_by"] == "user"
    assert {name for name, _ in seen} == {r.config["config"]}
    r = _ok(kernel, Problem(77, 65, 300, precision="tf32", alpha=1.0, beta=0.0))
    assert r.config["operands"] == "k_major_b" and r.config["operands_chosen_by"] == "heuristic"


# --- autotuning: keyed on everything that changes the kernel, never on the real C ---------------


def _runtime_args(jit_fn) -> set:
    """Arguments of a kernel that aren't pointers, alpha/beta or a tile meta-parameter."""
    meta = {"BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "EVEN_K"}
    return {a for a in jit_fn.arg_names if not a.endswith("_ptr") and a not in ("alpha", "beta") and a not in meta}


@pytest.mark.parametrize("mod", [tiled, split_k], ids=lambda m: m.__name__)
def test_tune_key_names_every_shape_stride_and_mode_argument(mod):
    assert set(mod.TUNE_KEY) == _runtime_args(mod.CHOOSER.jit)
    assert mod.CHOOSER.key_names == tuple(mod.TUNE_KEY)


@pytest.mark.parametrize("fn,chooser,autotuned", [
    (tiled.tiled_matmul, tiled.CHOOSER, tiled._tiled_kernel),
    (split_k.split_k_atomic_matmul, split_k.CHOOSER, split_k._split_k_kernel),
    (split_k.split_k_matmul, split_k.CHOOSER, split_k._split_k_kernel)], ids=lambda x: getattr(x, "__name__", ""))
def test_autotuning_runs_on_scratch_once_per_key(fn, chooser, autotuned, monkeypatch):
    """Same shape, A once row-major and once column-major, beta != 0: two tuning keys, each tuned
    once, and the autotuner never gets the real C (in atomic mode its repeated launches would
    add into it)."""
    monkeypatch.setattr(chooser, "tune_in_interpreter", True)
    monkeypatch.setattr(chooser, "chosen", {})
    tuned_on = []
    real_run = autotuned.run

    def spy(*args, **kwargs):
        tuned_on.append(args[2])     # c_ptr (held: a freed scratch's address could come back as a C)
        return real_run(*args, **kwargs)
    monkeypatch.setattr(autotuned, "run", spy)
    torch.manual_seed(3)
    B = torch.randn(200, 40)
    kw = {"split_k": 2} if fn is not tiled.tiled_matmul else {}
    for A in (torch.randn(70, 200), torch.randn(200, 70).t()):
        for _ in range(2):
            C0 = torch.randn(70, 40)
            C = C0.clone()
            fn(A, B, C, 1.0, 1.0, "fp32", **kw)
            torch.testing.assert_close(C.double(), A.double() @ B.double() + C0.double(), rtol=1e-5, atol=1e-4)
            assert C.data_ptr() not in {t.data_ptr() for t in tuned_on}
    assert len(tuned_on) == 2 and len(chooser.chosen) == 2


# --- precision: what the interpreter does and doesn't show ------------------------------------


def test_tf32_under_the_interpreter_is_fp32():
    """The interpreter ignores input_precision (np.matmul in fp32), so the tf32 kernel passes even
    the fp32 tolerance here and matches the fp32 kernel. On a GPU it fails it
    (test_gpu_triton.py::test_tf32_fails_fp32_tolerance)."""
    p32 = Problem(77, 65, 300, precision="fp32", alpha=1.0, beta=0.0)
    inputs = make_inputs(p32, "cpu")
    outs = {}
    for prec in ("fp32", "tf32"):
        launch, _ = prepare(tiled.KERNEL, p32.with_(precision=prec), inputs)
        inputs.reset_c()
        launch()
        outs[prec] = inputs.C.clone()
    assert check(p32, outs["tf32"], inputs.ref, inputs.bound).ok
    torch.testing.assert_close(outs["tf32"], outs["fp32"], rtol=1e-6, atol=1e-5)


# --- operand modes and strided inputs through the python functions ---------------------------


def test_transpose_copy_of_a_strided_source():
    src = torch.randn(150, 90)[::2, 1::3]               # 75 x 30, strided both ways
    dst = torch.full((30, 80), float("nan"))[:, :75]
    _operands.transpose_into(src, dst)
    assert torch.equal(dst, src.t())


@pytest.mark.parametrize("precision,mode", [("tf32", "as_given"), ("tf32x3", "k_major_b"), ("tf32x3", "as_given"),
                                            ("fp32", "k_major_b"), ("fp32", "m_major_a")])
def test_operand_mode_overrides(precision, mode):
    torch.manual_seed(1)
    A, B, C0 = torch.randn(40, 100), torch.randn(100, 30), torch.randn(40, 30)
    ref = 0.5 * (A.double() @ B.double()) - 1.5 * C0.double()
    for fn in (tiled.tiled_matmul, split_k.split_k_matmul):
        C = C0.clone()
        kw = {"split_k": 2} if fn is split_k.split_k_matmul else {}
        fn(A, B, C, 0.5, -1.5, precision, operands=mode, **kw)
        torch.testing.assert_close(C.double(), ref, rtol=1e-5, atol=1e-4)
    with pytest.raises(UsageError, match="unknown operand mode"):
        tiled.tiled_matmul(A, B, torch.empty(40, 30), precision="tf32", operands="presplit")
    with pytest.raises(UsageError, match="'m_major_a' is an fp32"):
        tiled.tiled_matmul(A, B, torch.empty(40, 30), precision="tf32", operands="m_major_a")


def test_fp32_takes_the_m_major_copy_of_a_only_for_wide_outputs():
    assert tiled.operand_mode("fp32", N=tiled.M_MAJOR_A_MIN_N) == _operands.M_MAJOR_A
    assert tiled.operand_mode("fp32", N=tiled.M_MAJOR_A_MIN_N - 1) == _operands.AS_GIVEN
    assert tiled.operand_mode("fp32") == _operands.AS_GIVEN          # split-K: no N, no copy
    assert tiled.operand_mode("tf32", N=4096) == _operands.K_MAJOR_B


@pytest.mark.parametrize("shape", [(7, 33, 127), (77, 65, 300), (255, 129, 1023)], ids=str)
def test_m_major_a_on_odd_shapes(shape):
    M, K, N = shape[0], shape[2], shape[1]
    torch.manual_seed(2)
    A, B, C0 = torch.randn(M, K), torch.randn(K, N), torch.randn(M, N)
    C = C0.clone()
    tiled.tiled_matmul(A, B, C, -2.0, 0.5, "fp32", operands="m_major_a")
    torch.testing.assert_close(C.double(), -2 * (A.double() @ B.double()) + 0.5 * C0.double(),
                               rtol=1e-5, atol=1e-4)


FUNCS = [naive_blocked.naive_blocked_matmul, tiled.tiled_matmul, split_k.split_k_matmul,
         split_k.split_k_atomic_matmul]


@pytest.mark.parametrize("fn", FUNCS, ids=lambda f: f.__name__)
def test_strided_inputs(fn):
    torch.manual_seed(2)
    A = torch.randn(80, 36).t()                  # 36 x 80, column-major
    B = torch.randn(160, 90)[::2, 1::3]          # 80 x 30, strided both ways
    Cbig = torch.randn(36, 70)
    before = Cbig.clone()
    C = Cbig[:, 5:35]                            # 36 x 30 inside a wider row
    C0 = C.clone()
    kw = {"split_k": 3} if "split_k" in fn.__name__ else {}
    fn(A, B, C, 2.0, 0.5, "fp32", **kw)
    torch.testing.assert_close(C.double(), 2 * (A.double() @ B.double()) + 0.5 * C0.double(), rtol=1e-5, atol=1e-4)
    assert torch.equal(Cbig[:, :5], before[:, :5]) and torch.equal(Cbig[:, 35:], before[:, 35:])


def test_k_major_b_is_read_in_place():
    """B handed over as the transpose of a contiguous N x K matrix is already K-major: no copy."""
    X = torch.randn(24, 64)                      # N x K
    A = torch.randn(10, 64)
    o = _operands.make_operands(A, X.t(), _operands.K_MAJOR_B)
    assert not o.copy_b and o.b.data_ptr() == X.data_ptr() and o.workspace_bytes() == 0
    C = torch.empty(10, 24)
    tiled.tiled_matmul(A, X.t(), C, precision="tf32")
    torch.testing.assert_close(C, A @ X.t(), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("fn", FUNCS, ids=lambda f: f.__name__)
def test_bad_arguments_name_the_problem(fn):
    A, B, C = torch.randn(4, 5), torch.randn(5, 6), torch.empty(4, 6)
    cases = [
        ((A.double(), B, C), {}, "A must be float32, got torch.float64"),
        ((A, B[None], C), {}, "B must be 2-D, got 3-D"),
        ((A, torch.randn(4, 6), C), {}, r"inner dimensions differ: A is 4x5 but B is 4x6"),
        ((A, B, torch.empty(6, 4)), {}, r"C must be 4x6"),
        ((A, B, torch.empty(4, 6, device="meta")), {}, "must be on one device"),
        ((A, B, C), {"precision": "fp16"}, "precision 'fp16' is not supported"),
        ((A, B, C), {"alpha": float("nan")}, "alpha must be a finite Python number"),
        ((A, B, torch.empty(4, 1).expand(4, 6)), {}, "C has a zero stride"),
        ((torch.empty(4, 0), torch.empty(0, 6), C), {}, "every dimension must be >= 1"),
        (("A", B, C), {}, "A must be a torch.Tensor"),
    ]
    for args, kw, msg in cases:
        with pytest.raises(ValueError, match=msg):
            fn(*args, **kw)
    buf = torch.randn(4, 6)
    with pytest.raises(ValueError, match="C shares memory with A"):
        fn(buf[:, :5], torch.randn(5, 6), buf)


def test_no_environment_variable_changes_a_kernel():
    """Kernel knobs are options; the only variable read is TRITON_INTERPRET (which picks the
    interpreter, before import)."""
    import pathlib
    import re
    root = pathlib.Path(tiled.__file__).parent
    for path in root.glob("*.py"):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"os\.environ|getenv", line):
                assert "TRITON_INTERPRET" in line, f"{path.name}:{i}: {line.strip()}"


def test_triton_code_generation_switches_are_recorded_and_shown(monkeypatch):
    """Triton's own environment switches (DISABLE_MMA_V3 makes tl.dot use mma.sync on sm_90: tf32
    1.6x slower at 4096^3, results/h100/triton-env/) can't be options of ours, so
    every run records the set ones in its environment and the table's header says so."""
    from compare.harness import gpuinfo
    from compare.outputs import report
    monkeypatch.delenv("DISABLE_MMA_V3", raising=False)
    clean = gpuinfo.environment().as_dict()
    assert clean["triton_env"] == {}
    assert not any("Triton code generation" in line for line in report.header_lines(clean))
    monkeypatch.setenv("DISABLE_MMA_V3", "1")
    env = gpuinfo.environment().as_dict()
    assert env["triton_env"] == {"DISABLE_MMA_V3": "true"}
    shown = [line for line in report.header_lines(env) if "Triton code generation" in line]
    assert shown and "DISABLE_MMA_V3=true" in shown[0]
    assert "DISABLE_MMA_V3=true" in report.to_markdown([], env)


def test_each_dot_names_its_input_precision():
    """The repository's pre-stop hook greps for tl.dot( lines without input_precision."""
    import pathlib
    root = pathlib.Path(tiled.__file__).parent
    for path in root.glob("*.py"):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if "tl.dot(" in line:
                assert "input_precision" in line, f"{path.name}:{i}: {line.strip()}"
