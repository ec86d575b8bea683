"""The Triton kernels compiled on a CUDA GPU: the interpreter cases plus real sizes, real TF32,
3xTF32 accuracy, split-K determinism (with the atomic kernel as the negative control) and
autotuning that never touches the real C. Skipped cleanly without a GPU.

Most cases run with the option autotune=off (the first candidate config, so dozens of shapes
don't each autotune); 1024^3, 2048^3 (tf32x3) and 256x256x16384 (split-K) autotune for real, the
path the benchmarks take.
"""
from __future__ import annotations

import pytest
import torch

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():
    pytest.skip("needs an NVIDIA GPU (torch.cuda.is_available() is False)", allow_module_level=True)

from compare.harness.check import check  # noqa: E402
from compare.harness.inputs import make_inputs  # noqa: E402
from compare.harness.problem import Problem  # noqa: E402
from compare.harness.runner import OK, check_kernel, prepare, run_kernel  # noqa: E402
from triton_kernels import _gemm, naive_blocked, split_k, tiled  # noqa: E402

KERNELS = [naive_blocked.KERNEL, tiled.KERNEL, split_k.KERNEL, split_k.KERNEL_ATOMIC]
CASES = [(k, p) for k in KERNELS for p in k.precisions]
CASE_IDS = [f"{k.name}-{p}" for k, p in CASES]
ODD_SHAPES = [(1, 1, 1), (7, 33, 127), (77, 65, 300), (255, 129, 1023)]
ALPHA_BETA = [(1.0, 0.0), (0.5, -1.5), (-2.0, 0.0), (1.0, 1.0)]
SPLIT_KERNELS = [split_k.KERNEL, split_k.KERNEL_ATOMIC]


QUICK = {"autotune": False}     # the first candidate config: no tuning on every odd shape


def _ok(kernel, problem, repeats=1, **options):
    if kernel is naive_blocked.KERNEL:
        options = {}        # no options: one fixed tile
    res = check_kernel(kernel, problem, device="cuda", repeats=repeats, options=options)
    assert res.ok, f"{kernel.name} {problem} {options}: {res.message}"
    return res


@pytest.mark.parametrize("kernel,precision", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("shape", ODD_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_odd_shapes(kernel, precision, shape):
    _ok(kernel, Problem(*shape, precision=precision, alpha=0.5, beta=-1.5), **QUICK)


@pytest.mark.parametrize("kernel,precision", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("alpha,beta", ALPHA_BETA)
def test_alpha_beta(kernel, precision, alpha, beta):
    _ok(kernel, Problem(77, 65, 300, precision=precision, alpha=alpha, beta=beta), **QUICK)


@pytest.mark.parametrize("kernel", SPLIT_KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("precision", ["fp32", "tf32", "tf32x3"])
@pytest.mark.parametrize("alpha,beta", ALPHA_BETA)
def test_split_k_forced_split(kernel, precision, alpha, beta):
    problem = Problem(255, 129, 1023, precision=precision, alpha=alpha, beta=beta)
    r = run_kernel(kernel, problem, timing=False, device="cuda", options={"split_k": 5, **QUICK})
    assert r.status == OK, r.status_text
    assert r.config["split_k"] == 4 and r.config["split_chosen_by"] == "user"  # ceil(1023/5) -> chunk 256


@pytest.mark.parametrize("kernel,precision", CASES, ids=CASE_IDS)
def test_large_autotuned(kernel, precision):
    res = _ok(kernel, Problem(1024, 1024, 1024, precision=precision, alpha=0.5, beta=-1.5), repeats=2)
    if precision != "tf32":
        assert res.rel_err < 1e-5


@pytest.mark.parametrize("kernel,precision", CASES, ids=CASE_IDS)
def test_large_odd(kernel, precision):
    res = _ok(kernel, Problem(1000, 1030, 2050, precision=precision, alpha=-2.0, beta=0.0), repeats=2, **QUICK)
    if precision != "tf32":
        assert res.rel_err < 1e-5


@pytest.mark.parametrize("kernel", SPLIT_KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("precision", ["fp32", "tf32", "tf32x3"])
def test_split_k_tall_k(kernel, precision):
    problem = Problem(256, 256, 16384, precision=precision, alpha=1.0, beta=1.0)
    r = run_kernel(kernel, problem, timing=False, device="cuda")
    assert r.status == OK, r.status_text
    assert r.config["split_k"] > 1 and r.config["chosen_by"] == "autotune"
    _ok(kernel, problem, repeats=3)


def _repeat(kernel, problem, runs, **options):
    """Bits of C after each of ``runs`` launches of one prepared kernel on the same inputs."""
    inputs = make_inputs(problem, "cuda")
    launch, _ = prepare(kernel, problem, inputs, options)
    outs = []
    for _ in range(runs):
        inputs.reset_c()
        launch()
        torch.cuda.synchronize()
        outs.append(inputs.C.clone())
    return launch, outs


# 4 output tiles x 64 splits = 256 programs adding into each tile, more than the SMs hold at once.
MANY_SPLITS = Problem(256, 256, 16384, precision="fp32", alpha=0.5, beta=-1.5)


def test_split_k_deterministic_is_bit_identical():
    launch, outs = _repeat(split_k.KERNEL, MANY_SPLITS, 20, split_k=64)
    assert launch.config["split_k"] == 64
    assert all(torch.equal(outs[0], o) for o in outs[1:])


def test_split_k_atomic_is_not_bit_identical():
    """The negative control of the test above: the same shape and splits through tl.atomic_add
    land in the order the SMs finish, so 20 runs don't all agree to the bit. (If this ever
    passes the identity check, the determinism test above proves nothing on this GPU.)"""
    launch, outs = _repeat(split_k.KERNEL_ATOMIC, MANY_SPLITS, 20, split_k=64)
    assert launch.config["split_k"] == 64
    distinct = {o.cpu().numpy().tobytes() for o in outs}
    assert len(distinct) > 1, "20 atomic split-K runs were bit-identical"


@pytest.mark.parametrize("fn", [tiled.tiled_matmul, split_k.split_k_matmul, split_k.split_k_atomic_matmul],
                         ids=lambda f: f.__name__)
def test_autotuning_never_touches_the_real_c(fn):
    """Same shape twice with A laid out differently (a new tuning key), beta = 1: the second call
    autotunes too, and has to do it on a scratch C (in atomic mode the autotuner's repeated
    launches would add into C; with beta != 0 they would compound)."""
    torch.manual_seed(5)
    M, N, K = 384, 320, 4096
    B = torch.randn(K, N, device="cuda")
    kw = {"split_k": 4} if fn is not tiled.tiled_matmul else {}
    for A in (torch.randn(M, K, device="cuda"), torch.randn(K, M, device="cuda").t(),
              torch.randn(M, 2 * K, device="cuda")[:, ::2]):
        C0 = torch.randn(M, N, device="cuda")
        C = C0.clone()
        fn(A, B, C, 1.0, 1.0, "fp32", **kw)
        torch.testing.assert_close(C.double(), A.double() @ B.double() + C0.double(), rtol=1e-5, atol=2e-3)
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


@pytest.mark.parametrize("operands", ["k_major_b", "as_given"])
def test_tf32x3_accuracy_2048(operands):
    res = _ok(tiled.KERNEL, Problem(2048, 2048, 2048, precision="tf32x3"), operands=operands)
    assert res.rel_err <= 1e-5, res


@pytest.mark.parametrize("precision,operands", [("tf32", "as_given"), ("tf32", "k_major_b"), ("tf32x3", "as_given"),
                                                ("tf32x3", "k_major_b"), ("fp32", "k_major_b"), ("fp32", "m_major_a")])
def test_operand_modes(precision, operands):
    for kernel in (tiled.KERNEL, split_k.KERNEL):
        r = run_kernel(kernel, Problem(1000, 1030, 2050, precision=precision, alpha=0.5, beta=-1.5), timing=False,
                       device="cuda", options={"operands": operands, **QUICK})
        assert r.status == OK and r.config["operands"] == operands, r.status_text


def test_strided_inputs_on_gpu():
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


def test_autotuned_config_is_reported():
    p = Problem(1024, 1024, 1024, precision="fp32")
    r = run_kernel(tiled.KERNEL, p, timing=False, device="cuda")
    assert r.status == OK and r.config["chosen_by"] == "autotune"
    assert r.config["config"] in {_gemm.config_name(c) for c in tiled.CONFIGS["ieee"]}
    # the reported config reproduces: passed back as an option, it runs and is reported unchanged
    r2 = run_kernel(tiled.KERNEL, p, timing=False, device="cuda", options={"tile": r.config["config"]})
    assert r2.status == OK and r2.config["config"] == r.config["config"] and r2.config["chosen_by"] == "user"
