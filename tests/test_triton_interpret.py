"""The Triton kernels under TRITON_INTERPRET=1 on CPU tensors: correctness only.

tests/conftest.py sets TRITON_INTERPRET=1 before anything imports triton_kernels when there is
no GPU (Triton 3.6 decides interpreter vs. compiler when @triton.jit decorates). With a GPU the
module is skipped: tests/test_gpu_triton.py runs the same cases compiled.

What the interpreter can't show: it runs ``tl.dot`` as ``np.matmul`` in fp32 whatever
``input_precision`` says (triton/runtime/interpreter.py, ``create_dot``), so a "tf32" kernel
here computes fp32 products. test_tf32_under_the_interpreter_is_fp32 pins that down; the GPU
module asserts that real TF32 fails the fp32 tolerance. The 3xTF32 *algorithm* (our operand
split) is integer arithmetic on the fp32 bits, which the interpreter does run exactly; it is
tested on its own below.
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

from compare.check import check  # noqa: E402
from compare.inputs import make_inputs  # noqa: E402
from compare.problem import Problem  # noqa: E402
from compare.runner import check_kernel, prepare  # noqa: E402
from triton_kernels import _operands, naive_blocked, split_k, tiled  # noqa: E402
from triton_kernels._common import interpreting  # noqa: E402

KERNELS = [naive_blocked.KERNEL, tiled.KERNEL, split_k.KERNEL, split_k.KERNEL_ATOMIC]
CASES = [(k, p) for k in KERNELS for p in k.precisions]
CASE_IDS = [f"{k.name}-{p}" for k, p in CASES]
SMALL_SHAPES = [(1, 1, 1), (7, 33, 127), (77, 65, 300)]
BIG_SHAPE = (255, 129, 1023)
ALPHA_BETA = [(1.0, 0.0), (0.5, -1.5), (-2.0, 0.0), (1.0, 1.0)]
SPLIT_KERNELS = [split_k.KERNEL, split_k.KERNEL_ATOMIC]


def _ok(kernel, problem):
    res = check_kernel(kernel, problem, device="cpu")
    assert res.ok, f"{kernel.name} {problem}: {res.message}"
    return res


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


@pytest.mark.parametrize("kernel,precision", CASES, ids=CASE_IDS)
def test_big_odd_shape(kernel, precision):
    _ok(kernel, Problem(*BIG_SHAPE, precision=precision, alpha=1.0, beta=0.0))


@pytest.mark.parametrize("kernel,precision", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("alpha,beta", ALPHA_BETA)
def test_alpha_beta(kernel, precision, alpha, beta):
    # beta == 0: check_kernel poisons C with NaN, so a kernel that reads C fails here.
    _ok(kernel, Problem(7, 33, 127, precision=precision, alpha=alpha, beta=beta))


# --- split-K with the split forced (the heuristic gives S = 1 for K this small) ---------------


@pytest.mark.parametrize("kernel", SPLIT_KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("precision", ["fp32", "tf32", "tf32x3"])
@pytest.mark.parametrize("alpha,beta", ALPHA_BETA)
def test_split_k_forced_split(kernel, precision, alpha, beta, monkeypatch):
    monkeypatch.setenv("TRITON_SPLIT_K", "3")
    problem = Problem(77, 65, 300, precision=precision, alpha=alpha, beta=beta)
    inputs = make_inputs(problem, "cpu")
    launch = kernel.prepare(problem, inputs)
    assert launch.plan.S == 3 and launch.plan.chunk == 128   # 128 + 128 + 44
    _ok(kernel, problem)


@pytest.mark.parametrize("kernel", SPLIT_KERNELS, ids=lambda k: k.name)
def test_split_k_forced_split_big(kernel, monkeypatch):
    monkeypatch.setenv("TRITON_SPLIT_K", "5")
    _ok(kernel, Problem(*BIG_SHAPE, precision="fp32", alpha=0.5, beta=-1.5))


def test_split_k_deterministic_is_bit_identical(monkeypatch):
    monkeypatch.setenv("TRITON_SPLIT_K", "4")
    problem = Problem(77, 65, 600, precision="fp32", alpha=0.5, beta=-1.5)   # chunks 192 x 3 + 24
    inputs = make_inputs(problem, "cpu")
    launch, _ = prepare(split_k.KERNEL, problem, inputs)
    assert launch.plan.S == 4
    outs = []
    for _ in range(2):
        inputs.reset_c()
        launch()
        outs.append(inputs.C.clone())
    assert torch.equal(outs[0], outs[1])


def test_split_heuristic():
    # one wave of ~132 programs on an H100, chunks >= 512, multiples of 64
    assert split_k.choose_split(256, 256, 131072, 132) == (33, 4032)
    assert split_k.choose_split(512, 512, 65536, 132) == (8, 8192)
    assert split_k.choose_split(4096, 4096, 4096, 132)[0] == 1
    assert split_k.choose_split(300, 300, 511, 132) == (1, 512)
    for M, N, K in [(256, 256, 16384), (1024, 1024, 16384), (4096, 128, 4096), (77, 65, 300)]:
        s, chunk = split_k.choose_split(M, N, K, 132)
        assert chunk % 64 == 0 and (s == 1 or chunk >= 512) and (s - 1) * chunk < K <= s * chunk


def test_split_k_override_keyword_and_errors(monkeypatch):
    A, B = torch.randn(33, 300), torch.randn(300, 20)
    C = torch.empty(33, 20)
    split_k.split_k_matmul(A, B, C, split_k=2)
    torch.testing.assert_close(C, A @ B, rtol=1e-5, atol=1e-4)
    with pytest.raises(ValueError, match="split_k must be a positive integer"):
        split_k.split_k_matmul(A, B, C, split_k=0)
    monkeypatch.setenv("TRITON_SPLIT_K", "two")
    with pytest.raises(ValueError, match="TRITON_SPLIT_K='two' is not an integer"):
        split_k.split_k_atomic_matmul(A, B, C)


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


def _tf32_rna(x: torch.Tensor) -> torch.Tensor:
    """Reference cvt.rna.tf32.f32 in torch: round to 10 mantissa bits, ties away from zero."""
    bits = x.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    bits = ((bits + 0x1000) & 0xFFFFE000) & 0xFFFFFFFF
    return (bits - ((bits >> 31) << 32)).to(torch.int32).view(torch.float32)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf - inf, on purpose
def test_tf32_split_kernel_matches_reference_rounding():
    torch.manual_seed(0)
    x = torch.randn(70, 90) * torch.logspace(-20, 20, 90)
    x[0, :6] = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), 1.0 + 2**-11, -(1.0 + 2**-11)])
    big, small = torch.empty(70, 96)[:, :90], torch.empty(70, 96)[:, :90]
    _operands._launch_prep(x, big, small, transpose=False, split=True)
    assert torch.equal(big, _tf32_rna(x))
    finite = torch.isfinite(x)
    assert torch.equal(small[finite], _tf32_rna(x - big)[finite])
    assert (big.view(torch.int32) & 0x1FFF).eq(0).all() and (small[finite].view(torch.int32) & 0x1FFF).eq(0).all()
    assert big[0, 4].item() == 1.0 + 2**-10 and big[0, 5].item() == -(1.0 + 2**-10)   # ties away
    err = (big + small - x)[finite].abs()
    assert (err <= x[finite].abs() * 2.0**-21).all()
    # transposed split (how B is prepared) is the same numbers, transposed
    bt, st = torch.empty(90, 80)[:, :70], torch.empty(90, 80)[:, :70]
    _operands._launch_prep(x, bt, st, transpose=True, split=True)
    assert torch.equal(bt, big.t()) and torch.equal(st[finite.t()], small.t()[finite.t()])


def test_one_tf32_pass_fails_fp32_tolerance_three_pass():
    """The algorithm the GPU runs, emulated exactly in float64 from the kernel's own split: one
    TF32 pass (big*big) fails the fp32 check, 3xTF32 (+ small*big + big*small) passes it."""
    p32 = Problem(64, 48, 1024, precision="fp32")
    inputs = make_inputs(p32, "cpu")
    A, B = inputs.A, inputs.B
    Ab, As = torch.empty_like(A), torch.empty_like(A)
    Bb, Bs = torch.empty_like(B), torch.empty_like(B)
    _operands._launch_prep(A, Ab, As, transpose=False, split=True)
    _operands._launch_prep(B, Bb, Bs, transpose=False, split=True)
    one = (Ab.double() @ Bb.double()).float()
    three = (As.double() @ Bb.double() + Ab.double() @ Bs.double() + Ab.double() @ Bb.double()).float()
    r1 = check(p32, one, inputs.ref, inputs.bound)
    r3 = check(p32, three, inputs.ref, inputs.bound)
    assert not r1.ok and r1.rel_err > 1e-4, r1
    assert check(p32.with_(precision="tf32"), one, inputs.ref, inputs.bound).ok
    assert r3.ok and r3.rel_err < 1e-6, r3


# --- operand modes and strided inputs through the python functions ---------------------------


@pytest.mark.parametrize("precision,mode", [("tf32", "direct"), ("tf32x3", "k_major"), ("tf32x3", "direct"),
                                            ("fp32", "k_major"), ("fp32", "m_major_a")])
def test_operand_mode_overrides(precision, mode):
    torch.manual_seed(1)
    A, B, C0 = torch.randn(40, 100), torch.randn(100, 30), torch.randn(40, 30)
    ref = 0.5 * (A.double() @ B.double()) - 1.5 * C0.double()
    for fn in (tiled.tiled_matmul, split_k.split_k_matmul):
        C = C0.clone()
        kw = {"split_k": 2} if fn is split_k.split_k_matmul else {}
        fn(A, B, C, 0.5, -1.5, precision, operands=mode, **kw)
        torch.testing.assert_close(C.double(), ref, rtol=1e-5, atol=1e-4)
    with pytest.raises(ValueError, match="'presplit' is the tf32x3 algorithm"):
        tiled.tiled_matmul(A, B, torch.empty(40, 30), precision="tf32", operands="presplit")
    with pytest.raises(ValueError, match="unknown operand mode"):
        tiled.tiled_matmul(A, B, torch.empty(40, 30), precision="tf32", operands="fast")
    with pytest.raises(ValueError, match="'m_major_a' is an fp32"):
        tiled.tiled_matmul(A, B, torch.empty(40, 30), precision="tf32", operands="m_major_a")


def test_fp32_takes_the_m_major_copy_of_a_only_for_wide_outputs():
    assert tiled.operand_mode("fp32", N=tiled.M_MAJOR_A_MIN_N) == _operands.M_MAJOR_A
    assert tiled.operand_mode("fp32", N=tiled.M_MAJOR_A_MIN_N - 1) == _operands.DIRECT
    assert tiled.operand_mode("fp32") == _operands.DIRECT          # split-K: no N, no copy
    assert tiled.operand_mode("tf32", N=4096) == _operands.K_MAJOR


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
    o = _operands.make_operands(A, X.t(), _operands.K_MAJOR)
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


def test_best_config_under_the_interpreter():
    # One config, nothing timed (and no scratch run): the interpreter only checks correctness.
    A, B, C = torch.randn(9, 17), torch.randn(17, 5), torch.empty(9, 5)
    tiled.tiled_matmul(A, B, C, precision="tf32x3")
    assert tiled.best_config(9, 5, 17, "tf32x3") == str(tiled.INTERPRET_CONFIG)


def test_each_dot_names_its_input_precision():
    """The repository's pre-stop hook greps for tl.dot( lines without input_precision."""
    import pathlib
    root = pathlib.Path(tiled.__file__).parent
    for path in root.glob("*.py"):
        for i, line in enumerate(path.read_text().splitlines(), 1):
            if "tl.dot(" in line:
                assert "input_precision" in line, f"{path.name}:{i}: {line.strip()}"
