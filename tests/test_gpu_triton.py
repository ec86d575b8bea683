"""The Triton kernels compiled on a CUDA GPU: the interpreter cases plus real sizes, real TF32,
3xTF32 accuracy and split-K determinism. Skipped cleanly without a GPU.

Most cases run with TRITON_GEMM_AUTOTUNE=first (one candidate config, so dozens of shapes don't
each autotune); 1024^3, 2048^3 (tf32x3) and 256x256x16384 (split-K) autotune for real, the path
the benchmarks take.
"""
from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():
    pytest.skip("needs an NVIDIA GPU (torch.cuda.is_available() is False)", allow_module_level=True)

from compare.check import check  # noqa: E402
from compare.inputs import make_inputs  # noqa: E402
from compare.problem import Problem  # noqa: E402
from compare.runner import check_kernel, prepare  # noqa: E402
from triton_kernels import naive_blocked, split_k, tiled  # noqa: E402

KERNELS = [naive_blocked.KERNEL, tiled.KERNEL, split_k.KERNEL, split_k.KERNEL_ATOMIC]
CASES = [(k, p) for k in KERNELS for p in k.precisions]
CASE_IDS = [f"{k.name}-{p}" for k, p in CASES]
ODD_SHAPES = [(1, 1, 1), (7, 33, 127), (77, 65, 300), (255, 129, 1023)]
ALPHA_BETA = [(1.0, 0.0), (0.5, -1.5), (-2.0, 0.0), (1.0, 1.0)]
SPLIT_KERNELS = [split_k.KERNEL, split_k.KERNEL_ATOMIC]


@pytest.fixture
def quick_tune(monkeypatch):
    monkeypatch.setenv("TRITON_GEMM_AUTOTUNE", "first")


def _ok(kernel, problem, repeats=1):
    res = check_kernel(kernel, problem, device="cuda", repeats=repeats)
    assert res.ok, f"{kernel.name} {problem}: {res.message}"
    return res


@pytest.mark.parametrize("kernel,precision", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("shape", ODD_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_odd_shapes(kernel, precision, shape, quick_tune):
    _ok(kernel, Problem(*shape, precision=precision, alpha=0.5, beta=-1.5))


@pytest.mark.parametrize("kernel,precision", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("alpha,beta", ALPHA_BETA)
def test_alpha_beta(kernel, precision, alpha, beta, quick_tune):
    _ok(kernel, Problem(77, 65, 300, precision=precision, alpha=alpha, beta=beta))


@pytest.mark.parametrize("kernel", SPLIT_KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("precision", ["fp32", "tf32", "tf32x3"])
@pytest.mark.parametrize("alpha,beta", ALPHA_BETA)
def test_split_k_forced_split(kernel, precision, alpha, beta, quick_tune, monkeypatch):
    monkeypatch.setenv("TRITON_SPLIT_K", "5")
    problem = Problem(255, 129, 1023, precision=precision, alpha=alpha, beta=beta)
    launch = kernel.prepare(problem, make_inputs(problem, "cuda"))
    assert launch.plan.S == 4   # ceil(1023/5) -> chunk 256 -> 4 splits
    _ok(kernel, problem)


@pytest.mark.parametrize("kernel,precision", CASES, ids=CASE_IDS)
def test_large_autotuned(kernel, precision):
    res = _ok(kernel, Problem(1024, 1024, 1024, precision=precision, alpha=0.5, beta=-1.5), repeats=2)
    if precision != "tf32":
        assert res.rel_err < 1e-5


@pytest.mark.parametrize("kernel,precision", CASES, ids=CASE_IDS)
def test_large_odd(kernel, precision, quick_tune):
    res = _ok(kernel, Problem(1000, 1030, 2050, precision=precision, alpha=-2.0, beta=0.0), repeats=2)
    if precision != "tf32":
        assert res.rel_err < 1e-5


@pytest.mark.parametrize("kernel", SPLIT_KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("precision", ["fp32", "tf32", "tf32x3"])
def test_split_k_tall_k(kernel, precision):
    problem = Problem(256, 256, 16384, precision=precision, alpha=1.0, beta=1.0)
    launch = kernel.prepare(problem, make_inputs(problem, "cuda"))
    assert launch.plan.S > 1
    _ok(kernel, problem, repeats=3)


def test_split_k_deterministic_is_bit_identical():
    problem = Problem(256, 256, 16384, precision="fp32", alpha=0.5, beta=-1.5)
    inputs = make_inputs(problem, "cuda")
    launch, _ = prepare(split_k.KERNEL, problem, inputs)
    assert launch.plan.S > 1
    outs = []
    for _ in range(5):
        inputs.reset_c()
        launch()
        torch.cuda.synchronize()
        outs.append(inputs.C.clone())
    assert all(torch.equal(outs[0], o) for o in outs[1:])


def test_tf32_fails_fp32_tolerance():
    """Real TF32 (10-bit mantissa inputs) is well outside the fp32 tolerance; the interpreter
    can't show this (it computes tf32 dots in fp32)."""
    p = Problem(1024, 1024, 1024, precision="tf32")
    inputs = make_inputs(p, "cuda")
    launch, _ = prepare(tiled.KERNEL, p, inputs)
    inputs.reset_c(poison=True)
    launch()
    torch.cuda.synchronize()
    as_tf32 = check(p, inputs.C, inputs.ref, inputs.bound)
    as_fp32 = check(p.with_(precision="fp32"), inputs.C, inputs.ref, inputs.bound)
    assert as_tf32.ok, as_tf32.message
    assert not as_fp32.ok and as_fp32.rel_err > 1e-4, as_fp32


@pytest.mark.parametrize("operands", ["presplit", "k_major"])
def test_tf32x3_accuracy_2048(operands, monkeypatch):
    monkeypatch.setenv("TRITON_TF32_OPERANDS", operands)
    res = _ok(tiled.KERNEL, Problem(2048, 2048, 2048, precision="tf32x3"))
    assert res.rel_err <= 1e-5, res


@pytest.mark.parametrize("precision,operands", [("tf32", "direct"), ("tf32", "k_major"), ("tf32x3", "direct"),
                                                ("tf32x3", "k_major"), ("tf32x3", "presplit"), ("fp32", "k_major")])
def test_operand_modes(precision, operands, monkeypatch, quick_tune):
    if precision != "fp32":
        monkeypatch.setenv("TRITON_TF32_OPERANDS", operands)
    for kernel in (tiled.KERNEL, split_k.KERNEL):
        if precision == "fp32":
            A = torch.randn(1000, 1030, device="cuda")
            B = torch.randn(1030, 2050, device="cuda")
            C = torch.empty(1000, 2050, device="cuda")
            fn = tiled.tiled_matmul if kernel is tiled.KERNEL else split_k.split_k_matmul
            fn(A, B, C, precision="fp32", operands=operands)
            torch.testing.assert_close(C.double(), A.double() @ B.double(), rtol=1e-5, atol=1e-3)
        else:
            _ok(kernel, Problem(1000, 1030, 2050, precision=precision, alpha=0.5, beta=-1.5))


def test_strided_inputs_on_gpu(quick_tune):
    A = torch.randn(300, 200, device="cuda").t()
    B = torch.randn(600, 180, device="cuda")[::2, ::3]
    Cbig = torch.randn(200, 100, device="cuda")
    C = Cbig[:, 10:70]
    C0 = C.clone()
    for fn in (naive_blocked.naive_blocked_matmul, tiled.tiled_matmul, split_k.split_k_matmul,
               split_k.split_k_atomic_matmul):
        for prec in (("fp32",) if fn is naive_blocked.naive_blocked_matmul else ("fp32", "tf32x3")):
            C.copy_(C0)
            fn(A, B, C, 2.0, 0.5, prec)
            torch.testing.assert_close(C.double(), 2 * (A.double() @ B.double()) + 0.5 * C0.double(),
                                       rtol=1e-5, atol=1e-3)


def test_best_config_is_inspectable():
    p = Problem(1024, 1024, 1024, precision="fp32")
    launch, _ = prepare(tiled.KERNEL, p, make_inputs(p, "cuda"))
    cfg = tiled.best_config(1024, 1024, 1024, "fp32")
    assert cfg and "BLOCK_M" in cfg
    assert (1024, 1024, 1024, "fp32", tiled.operand_mode("fp32", N=1024)) in tiled.TUNING
    assert tiled._tiled_kernel.best_config is not None
