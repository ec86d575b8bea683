"""triton.stream_k's single-row path (mode=gemv, triton_kernels/stream_k_gemv.py): correctness under
TRITON_INTERPRET=1 on the cases that reach each branch (K ranges and their in-order sum by the
last range, the masked K tail, wrapped columns, B contiguous along N or K, 4-byte and 16-byte
loads, alpha/beta, few columns),
the heuristic that picks it, its options and refusals, and, with a GPU, the compiled kernels on
odd shapes and bit-identical reruns."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from compare.harness.errors import UsageError
from compare.harness.problem import Problem
from compare.harness.runner import OK, run_kernel
from triton_kernels import stream_k as sk
from triton_kernels import stream_k_gemv as gemv
from triton_kernels._common import interpreting

interpreter = pytest.mark.skipif(not interpreting(), reason="needs TRITON_INTERPRET=1 (set by conftest without a GPU)")
KERNELS = [sk.KERNEL, sk.KERNEL_ATOMIC]


def _row(kernel, problem, device, **options):
    parsed = kernel.parse_options({k: str(v) for k, v in options.items()})
    r = run_kernel(kernel, problem, timing=False, device=device, options=parsed)
    assert r.status == OK, f"{kernel.name} {problem} {options}: {r.status_text}"
    return r


# (M, N, K), options: what each case reaches.
CASES = {
    # 3 K ranges of 2 steps of 16 and a tail of 4 in the last: the workspace and the in-order sum.
    "splits_and_tail": ((1, 96, 100), dict(gemv_tile="1x32x16", k_splits=3)),
    # N = 70: the last column block wraps past N; N % 4 != 0: 4-byte loads.
    "wrapped_columns": ((1, 70, 64), dict(gemv_tile="1x32x16", k_splits=2)),
    # one range, written straight to C with beta (no workspace).
    "one_range": ((1, 64, 48), dict(gemv_tile="1x64x16", k_splits=1)),
    # K < BLOCK_K: only the masked step.
    "k_below_one_step": ((1, 40, 5), dict(gemv_tile="1x32x16")),
    # the heuristic's own tile and split count.
    "heuristic": ((1, 300, 700), dict()),
    # N = 6: the default piece narrowed to 16 columns (1x16x256), 2 K ranges of 1 step + a tail.
    "few_columns": ((1, 6, 700), dict(k_splits=2)),
}


@interpreter
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("precision", ["fp32", "tf32x3"])
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-0.5, 1.5)])
def test_gemv_paths(kernel, case, precision, alpha, beta):
    shape, options = CASES[case]
    r = _row(kernel, Problem(*shape, precision=precision, alpha=alpha, beta=beta), "cpu", **options)
    assert r.config["decomposition"] == "gemv", r.config
    assert r.config["input_precision"] == "ieee"
    assert r.config["tf32x3_split"] == ("ffma" if precision == "tf32x3" else "n/a")
    if "k_splits" in options:
        assert r.config["k_splits"] == options["k_splits"]


@interpreter
@pytest.mark.parametrize("b_layout", ["n_major", "k_major", "n_major_strided"])
def test_gemv_reads_b_in_either_layout(b_layout):
    """B contiguous along K (a transposed view: 16-byte loads along K) or along N with a row
    stride that is not a multiple of 4 (4-byte loads), against float64."""
    torch.manual_seed(0)
    K, N = 200, 136
    A = torch.randn(1, K)
    if b_layout == "k_major":
        B = torch.randn(N, K).t()
    elif b_layout == "n_major_strided":
        B = torch.randn(K, N + 3)[:, :N]
    else:
        B = torch.randn(K, N)
    C = torch.full((1, N), float("nan"))
    plan = sk._Plan(A, B, C, 1.0, 0.0, "fp32", True, {"sms": 132, "gemv_tile": "1x64x16", "k_splits": 4})
    plan.launch()
    ref = A.double() @ B.double()
    assert torch.allclose(C.double(), ref, rtol=1e-5, atol=1e-4)
    want = {"n_major": "N-major, 16-byte", "k_major": "K-major, 16-byte", "n_major_strided": "N-major, 4-byte"}
    assert want[b_layout] in plan.config["operands"], plan.config["operands"]


def _plan(M, N, K, precision, **options):
    A, B, C = torch.empty(M, K), torch.empty(K, N), torch.empty(M, N)
    return sk._Plan(A, B, C, 1.0, 0.0, precision, True, {"sms": 132, **options})


@pytest.mark.parametrize("M,precision,options,want", [
    (1, "fp32", {}, "gemv"),
    (1, "tf32x3", {}, "gemv"),          # through tf32x3_split=ffma
    (1, "tf32", {}, "gemv"),            # TF32_ON_GEMV_PATH (on): TF32-truncated inputs on FFMA
    (1, "tf32", {"tile": "16x128x32"}, "tiles"),   # a tile asks for the tensor cores
    (2, "fp32", {}, "tiles"),
    (1, "fp32", {"tile": "16x128x32"}, "tiles"),   # a tile asks for the GEMM
    (1, "fp32", {"mode": "hybrid"}, "hybrid"),
    (1, "tf32x3", {"tf32x3_split": "in_loop"}, "tiles"),
    (1, "fp32", {"k_splits": 2}, "gemv"),
])
def test_gemv_heuristic(M, precision, options, want):
    got = _plan(M, 8192, 8192, precision, **options).config["decomposition"]
    assert got == want if want != "tiles" else got in ("dp", "hybrid"), got


def test_gemv_default_splits_fill_the_gpu():
    """Few column blocks: K is cut until there are about GEMV_PROGRAMS_PER_SM programs per SM,
    never into ranges under GEMV_MIN_STEPS steps; many column blocks: one range."""
    t = gemv.GEMV_TILE
    c = _plan(1, 8192, 65536, "fp32").config        # 32 blocks of 256
    assert c["k_splits"] * c["tiles"] >= gemv.GEMV_PROGRAMS_PER_SM * 132
    assert c["k_per_split"] >= gemv.GEMV_MIN_STEPS * t.bk and c["k_per_split"] % t.bk == 0
    assert (c["k_splits"] - 1) * c["k_per_split"] < 65536 <= c["k_splits"] * c["k_per_split"]
    assert _plan(1, 1 << 20, 64, "fp32").config["k_splits"] == 1
    assert _plan(1, 256, 100, "fp32").config["k_splits"] == 1     # one range of 4 steps


@pytest.mark.parametrize("M,precision,options,message", [
    (4, "fp32", {"mode": "gemv"}, "single row"),
    (1, "fp32", {"k_splits": 2, "mode": "dp"}, "contradict"),
    (1, "fp32", {"gemv_tile": "1x64x16", "grid": 4}, "do not apply"),
    (1, "tf32x3", {"mode": "gemv", "tf32x3_split": "b"}, "contradicts"),
])
def test_gemv_refusals(M, precision, options, message):
    with pytest.raises(UsageError, match=message):
        _plan(M, 64, 64, precision, **options)


@pytest.mark.parametrize("text", ["1x48x16", "1x256x32/3", "1x256x32/4/9", "256", "1x2048x32"])
def test_gemv_tile_parse_refuses(text):
    with pytest.raises(ValueError):
        gemv.parse_gemv_tile(text)


def test_gemv_tile_parse():
    assert gemv.parse_gemv_tile("1x128x64/8/2") == gemv.GemvTile(128, 64, 8, 2)
    assert gemv.parse_gemv_tile("512x16") == gemv.GemvTile(512, 16, 4, 1)


def _compile_check(cases):
    """stream_k_study --compile-check in a subprocess without TRITON_INTERPRET (the interpreter's
    InterpretedFunctions can't be compiled)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-m", "reproduce.stream_k_study", "--compile-check", json.dumps(cases)],
                         cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_gemv_cases_compile_for_sm90():
    """Both GEMV kernels, every case above, tf32x3 at M = 1 and a pipelined tile, compiled for
    sm_90 without a GPU (the interpreter runs Python, not the compiler)."""
    cases = [[*shape, "fp32", 0.5, -1.5, True, {k: str(v) for k, v in options.items()}]
             for shape, options in CASES.values()]
    cases.append([1, 8192, 65536, "tf32x3", 1.0, 0.0, True, {}])
    cases.append([1, 4096, 4096, "fp32", 1.0, 0.0, True, {"gemv_tile": "1x256x32/4/3"}])
    results = _compile_check(cases)
    assert all(r.endswith(": ok") for rows in results for r in rows), results
    kernels = {r.split(":")[0] for rows in results for r in rows}
    assert kernels == {"_gemv_kernel"}, kernels


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("shape", [(1, 8192, 8192), (1, 1001, 100003), (1, 50000, 999), (1, 4099, 4093)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("precision", ["fp32", "tf32x3"])
def test_gpu_gemv_shapes(kernel, shape, precision):
    r = _row(kernel, Problem(*shape, precision=precision, alpha=0.5, beta=-1.5), "cuda")
    assert r.config["decomposition"] == "gemv"


@pytest.mark.gpu
def test_gpu_gemv_k_major_b_and_bit_identical():
    torch.manual_seed(0)
    A = torch.randn(1, 20000, device="cuda")
    B = torch.randn(3000, 20000, device="cuda").t()
    outs = []
    for _ in range(3):
        C = torch.full((1, 3000), float("nan"), device="cuda")
        sk.stream_k_matmul(A, B, C)
        outs.append(C)
    ref = A.double() @ B.double()
    assert torch.allclose(outs[0].double(), ref, rtol=1e-5, atol=1e-3)
    assert all(torch.equal(outs[0], o) for o in outs[1:])


def test_gemv_tile_follows_b_alignment():
    """16-byte loads: GEMV_TILE; N % 4 != 0 (4-byte loads): GEMV_TILE_4B (results/h100/gemv-tile/,
    results/h100/explore/round17)."""
    assert _plan(1, 4096, 4096, "fp32").config["tile"] == "1x64x128"
    assert _plan(1, 4097, 4096, "fp32").config["tile"] == "1x256x16"
    assert "4-byte" in _plan(1, 4097, 4096, "fp32").config["operands"]


def test_gemv_tile_narrows_to_few_columns():
    """A piece wider than N loads and multiplies wrapped copies of B's columns: it narrows to the
    power of two >= max(16, N), BK grown to keep the accumulator's size (64 x 128: 8192 floats; 256 x 16: 4096)."""
    assert _plan(1, 8, 65536, "fp32").config["tile"] == "1x16x512"      # 64x128 -> 16 x 8192/16
    assert _plan(1, 20, 65536, "fp32").config["tile"] == "1x32x256"     # 64x128 -> 32 x 8192/32
    assert _plan(1, 40, 65536, "fp32").config["tile"] == "1x64x128"     # 64 covers 40 already
    assert _plan(1, 5, 65536, "fp32").config["tile"] == "1x16x256"      # 4-byte 256x16 -> 16 x 256
    assert _plan(1, 101, 65536, "fp32").config["tile"] == "1x128x32"    # 4-byte 256x16 -> 128 x 32


def test_gemv_split_k_sums_in_the_same_kernel():
    """K ranges: one launch (the range that finishes last sums the partials in range order), no
    second kernel; its ticket counts are back to 0 after the launch, so the next launch (the same
    plan, timed in a loop) gives the same bits."""
    launched = []

    class Recorder:
        def __init__(self, name):
            self.name = name

        def __getitem__(self, grid):
            return lambda *args, **kwargs: launched.append(self.name)

    # Every kernel the GEMV's module can launch (its own and those it imports) is recorded instead.
    kernels = {n: v for n, v in vars(gemv).items() if hasattr(v, "fn") and hasattr(v, "__getitem__")}
    assert "_gemv_kernel" in kernels, kernels
    plan = _plan(1, 96, 100, "fp32", gemv_tile="1x32x16", k_splits=3)
    try:
        vars(gemv).update({n: Recorder(n) for n in kernels})
        plan.launch()
    finally:
        vars(gemv).update(kernels)
    assert launched == ["_gemv_kernel"], launched
    assert "in-kernel" in plan.config["fixup"]


@interpreter
def test_gemv_ticket_counts_return_to_zero():
    torch.manual_seed(0)
    A, B = torch.randn(1, 100), torch.randn(100, 96)
    C = torch.zeros(1, 96)
    plan = sk._Plan(A, B, C, 1.0, 0.0, "fp32", True, {"sms": 132, "gemv_tile": "1x32x16", "k_splits": 3})
    outs = []
    for _ in range(2):
        plan.launch()
        assert torch.equal(plan.gemv.lock, torch.zeros(3, dtype=torch.int32)), plan.gemv.lock
        outs.append(C.clone())
    assert torch.equal(outs[0], outs[1])
    assert torch.allclose(C.double(), A.double() @ B.double(), rtol=1e-5, atol=1e-4)


@interpreter
def test_gemv_k_major_b_off_a_16_byte_boundary_takes_4_byte_loads():
    """A K-major B (a transposed view) whose rows are 16-byte multiples (K % 4 == 0) but whose base
    sits 4 bytes past a 16-byte boundary (a view into a larger buffer): no 16-byte hint, which on
    a GPU would be a misaligned vector load; the same B at an aligned base keeps it."""
    torch.manual_seed(0)
    K, N = 200, 136
    A = torch.randn(1, K)
    flat = torch.randn(N * K + 4)
    for offset, want in ((0, "K-major, 16-byte"), (1, "K-major, 4-byte")):
        B = flat[offset:offset + N * K].view(N, K).t()
        assert (B.data_ptr() % 16 == 0) == (offset == 0)
        C = torch.full((1, N), float("nan"))
        plan = sk._Plan(A, B, C, 1.0, 0.0, "fp32", True, {"sms": 132, "gemv_tile": "1x64x16", "k_splits": 2})
        assert want in plan.config["operands"], plan.config["operands"]
        plan.launch()
        assert torch.allclose(C.double(), A.double() @ B.double(), rtol=1e-5, atol=1e-4)
