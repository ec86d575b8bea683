"""tf32 on triton.stream_k's bandwidth-bound FFMA paths (mode=skinny for N <= 8, mode=gemv for
M = 1): every A and B value is truncated to TF32 as it is loaded (the low 13 mantissa bits
dropped, as the tensor cores read an fp32 operand), then multiplied and summed in fp32. Checked
under TRITON_INTERPRET=1 (and with a GPU on odd shapes) against a float64 product of inputs
truncated here with numpy, on inputs where truncation moves the result far beyond fp32's
accumulation error, so a kernel that forgets to truncate an operand, or rounds instead, fails;
plus the row's config, the default rule and its switch, and the refusals lifted and kept."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from compare.harness.errors import UsageError
from compare.harness.problem import Problem
from compare.harness.runner import OK, run_kernel
from triton_kernels import stream_k as sk
from triton_kernels import stream_k_plan as plan_module
from triton_kernels._common import interpreting

interpreter = pytest.mark.skipif(not interpreting(), reason="needs TRITON_INTERPRET=1 (set by conftest without a GPU)")

U = 2.0 ** -24    # fp32's unit roundoff


def _truncated(t: torch.Tensor) -> torch.Tensor:
    """t's values with the low 13 of the 23 mantissa bits cleared (numpy, not the kernels' helper)."""
    bits = t.detach().cpu().contiguous().numpy().view(np.uint32) & np.uint32(0xFFFFE000)
    return torch.from_numpy(bits.view(np.float32).copy())


def _operands(M, N, K, device="cpu", a_m_major=False, b_k_major=False, seed=0):
    """A in [1, 2), B's column j in (-1)^j [1, 2): every value loses on average half a TF32 ulp
    (2^-11) to truncation, always toward zero, so the products' losses add up instead of
    cancelling (a relative 2 * 2^-11 * ln 2 = 6.8e-4 of each column's sum of |a b|)."""
    g = torch.Generator().manual_seed(seed)
    A = torch.rand(K, M, generator=g).t() if a_m_major else torch.rand(M, K, generator=g)
    B = torch.rand(N, K, generator=g).t() if b_k_major else torch.rand(K, N, generator=g)
    A = (1 + A).to(device)
    signs = torch.tensor([(-1.0) ** j for j in range(N)])
    B = ((1 + B) * signs).to(device)
    C = torch.randn(M, N, generator=g).to(device)
    return A, B, C


def _check_truncated(C, A, B, C0, alpha, beta):
    """C against alpha * trunc(A) @ trunc(B) + beta * C0 in float64, relative to the sum of
    magnitudes: within fp32 accumulation's error, the worst case (K + 4) u (K products summed,
    alpha, beta and C's add) or, past K = 64, the probabilistic 8 sqrt(K) u + 4 u (rounding
    errors that add like random ones, Higham & Mary 2019, with a margin of 8) where smaller:
    at K = 100003 that is 1.5e-4, under the 3.4e-4 one operand's truncation moves a sum; and
    away from the untruncated product by most of the expected 6.8e-4 (at least 4e-4, median)."""
    K = A.shape[1]
    bound = min((K + 4) * U, (8 * K ** 0.5 + 4) * U)
    At, Bt, C0 = _truncated(A).double(), _truncated(B).double(), C0.detach().cpu().double()
    Ad, Bd, got = A.detach().cpu().double(), B.detach().cpu().double(), C.detach().cpu().double()
    prod_scale = abs(alpha) * (At.abs() @ Bt.abs())
    ref = alpha * (At @ Bt) + beta * C0
    err = ((got - ref).abs() / (prod_scale + abs(beta) * C0.abs())).max().item()
    assert err <= bound, f"{err:.3g} from float64 of the truncated inputs (bound {bound:.3g})"
    full = alpha * (Ad @ Bd) + beta * C0
    off = ((got - full).abs() / prod_scale).median().item()
    assert off >= 4e-4, f"only {off:.3g} from the untruncated product: were the inputs truncated?"


def _plan_and_launch(A, B, C, alpha, beta, **options):
    plan = sk._Plan(A, B, C, alpha, beta, "tf32", True, {"sms": 132, **options})
    plan.launch()
    return plan


def _assert_tf32_ffma_config(config, decomposition):
    assert config["decomposition"] == decomposition, config
    assert config["input_precision"] == "tf32" and config["tf32x3_split"] == "n/a", config
    path = config["precision_path"]
    assert path.startswith("TF32 inputs (low 13 mantissa bits dropped") and "FFMA" in path, path
    assert "fp32 accumulation" in path and "bandwidth-bound" in path, path


# Every column count on odd M and K through mode=skinny: 16x16 pieces and 3 K ranges reach the
# wrapped rows (M = 37: 3 row blocks, the last wraps 11 rows), the range sum and the masked tail
# (K = 203: ranges of 80, 80, 43 = 2 steps + 11).
@interpreter
@pytest.mark.parametrize("N", range(1, 9))
def test_skinny_tf32_every_n(N):
    A, B, C = _operands(37, N, 203, seed=N)
    C0 = C.clone()
    plan = _plan_and_launch(A, B, C, 0.5, -1.5, mode="skinny", skinny_tile="16x16", skinny_splits=3)
    _assert_tf32_ffma_config(plan.config, "skinny")
    assert (plan.config["k_splits"], plan.config["grid"]) == (3, [3, 3])
    _check_truncated(C, A, B, C0, 0.5, -1.5)


# (M, N, K), options, layouts: K % 4 == 0 (16-byte loads, 4 k summed a thread: k_group 4), A read
# along M, B read K-major as given, K under one step, a single row through mode=skinny, and the
# heuristic's own tile and split count.
SKINNY_CASES = {
    "k_group": ((21, 6, 96), dict(skinny_tile="16x32", skinny_splits=2), {}),
    "a_m_major": ((44, 5, 120), dict(skinny_tile="16x16", skinny_splits=3), dict(a_m_major=True)),
    "b_k_major": ((45, 7, 121), dict(skinny_tile="16x16", skinny_splits=2), dict(b_k_major=True)),
    "k_below_one_step": ((9, 7, 5), dict(skinny_tile="16x16"), {}),
    "one_row": ((1, 8, 203), dict(skinny_tile="16x16", skinny_splits=3), {}),
    "heuristic_tile": ((67, 8, 333), dict(mode="skinny"), {}),
}


@interpreter
@pytest.mark.parametrize("case", list(SKINNY_CASES))
def test_skinny_tf32_paths(case):
    (M, N, K), options, layout = SKINNY_CASES[case]
    A, B, C = _operands(M, N, K, **layout)
    C0 = C.clone()
    plan = _plan_and_launch(A, B, C, 1.0, 0.25, **options)
    _assert_tf32_ffma_config(plan.config, "skinny")
    if case == "k_group":
        assert plan.config["k_group"] == 4, plan.config
    _check_truncated(C, A, B, C0, 1.0, 0.25)


# M = 1 through mode=gemv (the shapes of test_triton_gemv.py's cases): K ranges and their sum,
# wrapped columns with 4-byte loads (N = 70), one range, K under a step, the heuristic's tile,
# few columns, B K-major.
GEMV_CASES = {
    "splits_and_tail": ((96, 100), dict(gemv_tile="1x32x16", k_splits=3), {}),
    "wrapped_columns": ((70, 64), dict(gemv_tile="1x32x16", k_splits=2), {}),
    "one_range": ((64, 48), dict(gemv_tile="1x64x16", k_splits=1), {}),
    "k_below_one_step": ((40, 5), dict(gemv_tile="1x32x16"), {}),
    "heuristic_tile": ((300, 701), dict(mode="gemv"), {}),
    "few_columns": ((6, 701), dict(k_splits=2), {}),
    "b_k_major": ((136, 203), dict(gemv_tile="1x64x16", k_splits=4), dict(b_k_major=True)),
}


@interpreter
@pytest.mark.parametrize("case", list(GEMV_CASES))
def test_gemv_tf32_paths(case):
    (N, K), options, layout = GEMV_CASES[case]
    A, B, C = _operands(1, N, K, **layout)
    C0 = C.clone()
    plan = _plan_and_launch(A, B, C, -0.5, 1.5, **options)
    _assert_tf32_ffma_config(plan.config, "gemv")
    _check_truncated(C, A, B, C0, -0.5, 1.5)


@interpreter
@pytest.mark.parametrize("M,N,options", [(37, 5, dict(mode="skinny", skinny_tile="16x16", skinny_splits=3)),
                                         (1, 70, dict(mode="gemv", gemv_tile="1x32x16", k_splits=3))])
def test_tf32_ffma_keeps_nan_and_inf(M, N, options):
    """Truncation keeps a NaN (torch's, 0x7fc00000: the quiet bit is among the 19 kept) NaN and an
    infinity infinite: the row holding the NaN comes out NaN; the one holding +inf comes out +-inf
    by the columns' signs (B's column j has sign (-1)^j); the others stay finite."""
    K = 203
    A, B, C = _operands(M, N, K)
    A[0, 10] = float("nan")
    if M > 1:
        A[M - 1, 7] = float("inf")
    _plan_and_launch(A, B, C, 1.0, 0.0, **options)
    assert torch.isnan(C[0]).all(), C[0]
    if M > 1:
        want = torch.tensor([(-1.0) ** j for j in range(N)]) * float("inf")
        assert torch.equal(C[M - 1], want), C[M - 1]
        assert torch.isfinite(C[1:M - 1]).all()


@interpreter
def test_tf32_ffma_through_the_runner():
    """A tf32 row of mode=skinny / mode=gemv: the harness's check passes it, its config says what ran."""
    for shape, options, deco in (((37, 7, 203), dict(mode="skinny", skinny_tile="16x16"), "skinny"),
                                 ((1, 70, 203), dict(mode="gemv", gemv_tile="1x32x16", k_splits=3), "gemv")):
        parsed = sk.KERNEL.parse_options({k: str(v) for k, v in options.items()})
        r = run_kernel(sk.KERNEL, Problem(*shape, precision="tf32", alpha=0.5, beta=-1.5), timing=False,
                       device="cpu", options=parsed)
        assert r.status == OK, r.status_text
        _assert_tf32_ffma_config(r.config, deco)


def _plan(M, N, K, precision, **options):
    A, B, C = torch.empty(M, K), torch.empty(K, N), torch.empty(M, N)
    return sk._Plan(A, B, C, 1.0, 0.0, precision, True, {"sms": 132, **options})


def test_tf32_defaults_as_shipped():
    """M = 1: the GEMV on TF32-truncated inputs (TF32_ON_GEMV_PATH on); N <= 8 with M > 1: the
    tile GEMM on the tensor cores (TF32_ON_SKINNY_PATH off); the mode option's help says so."""
    _assert_tf32_ffma_config(_plan(1, 8192, 8192, "tf32").config, "gemv")
    _assert_tf32_ffma_config(_plan(1, 8, 8192, "tf32").config, "gemv")
    for M, N in ((4096, 8), (4096, 1), (2, 8)):
        got = _plan(M, N, 8192, "tf32").config
        assert got["decomposition"] in ("dp", "hybrid") and got["input_precision"] == "tf32", got
    help_text = " ".join(next(o for o in sk.OPTIONS if o.name == "mode").help.split())
    assert "gemv for a single row in fp32, tf32x3 and tf32, skinny for N <= 8 in fp32 and tf32x3," in help_text, help_text


@pytest.mark.parametrize("M,N", [(4096, 8), (4096, 1), (1, 8192), (1, 8)])
@pytest.mark.parametrize("gemv_on", [False, True])
@pytest.mark.parametrize("skinny_on", [False, True])
def test_tf32_default_follows_each_switch(monkeypatch, M, N, gemv_on, skinny_on):
    """Each class follows its own switch and only its own: TF32_ON_GEMV_PATH sends M = 1 to the
    GEMV, TF32_ON_SKINNY_PATH sends N <= 8 to the skinny kernel (M = 1 and N <= 8: the GEMV first,
    as in fp32); a switch off leaves its class on the tile GEMM; a tile still asks for the tile GEMM."""
    monkeypatch.setattr(plan_module, "TF32_ON_GEMV_PATH", gemv_on)
    monkeypatch.setattr(plan_module, "TF32_ON_SKINNY_PATH", skinny_on)
    got = _plan(M, N, 8192, "tf32").config
    want = "gemv" if M == 1 and gemv_on else "skinny" if N <= 8 and skinny_on else None
    if want:
        _assert_tf32_ffma_config(got, want)
    else:
        assert got["decomposition"] in ("dp", "hybrid") and got["input_precision"] == "tf32", got
    assert _plan(M, N, 8192, "tf32", tile="16x128x32").config["decomposition"] in ("dp", "hybrid")


@pytest.mark.parametrize("M,N,options,message", [
    (4, 64, {"mode": "gemv"}, "single row"),
    (64, 9, {"mode": "skinny"}, "at most 8 columns"),
    (64, 8, {"mode": "skinny", "tf32x3_split": "ffma"}, "applies to precision tf32x3"),
    (1, 64, {"mode": "gemv", "tf32x3_split": "ffma"}, "applies to precision tf32x3"),
    (64, 8, {"mode": "skinny", "b_transpose": "copy"}, "do not apply"),
    (1, 64, {"mode": "gemv", "operands": "copy"}, "do not apply"),
    (64, 8, {"skinny_tile": "16x16", "mode": "ws"}, "contradict"),
])
def test_tf32_refusals_that_remain(M, N, options, message):
    with pytest.raises(UsageError, match=message):
        _plan(M, N, 64, "tf32", **options)


def test_tf32_ffma_compiles_for_sm90():
    """Both kernels with tf32 truncation compiled for sm_90 without a GPU (the uint32 mask and the
    NaN select lower; the interpreter runs Python, not the compiler)."""
    cases = [[37, 5, 203, "tf32", 0.5, -1.5, True, {"mode": "skinny", "skinny_splits": "3"}],
             [4099, 8, 4096, "tf32", 1.0, 0.0, True, {"mode": "skinny"}],
             [1, 4099, 4093, "tf32", 1.0, 0.0, True, {"mode": "gemv"}],
             [1, 8192, 65536, "tf32", 1.0, 0.0, True, {"mode": "gemv"}]]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-m", "reproduce.stream_k_study", "--compile-check", json.dumps(cases)],
                         cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    results = json.loads(out.stdout.strip().splitlines()[-1])
    assert all(r.endswith(": ok") for rows in results for r in rows), results
    kernels = {r.split(":")[0] for rows in results for r in rows}
    assert {"_skinny_kernel", "_gemv_kernel"} <= kernels, kernels


def test_skinny_tf32_k_loop_truncates_every_load():
    """mode=skinny at tf32 compiled for sm_90, every N: as fp32's loop (16-byte loads only, no
    spills, no shared memory), plus one integer AND per loaded value: 4 per 16-byte load of A's
    rows and B's columns alike."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-m", "reproduce.stream_k_study", "--skinny-ir", "tf32"],
                         cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    ir = json.loads(out.stdout)
    assert len(ir) == 8, ir
    for name, r in ir.items():
        n = int(name.split()[0][2:])
        assert r["spill bytes"] == 0 and r["loop: shared or barrier"] == 0, (name, r)
        assert r["loop: other loads"] == 0 and r["loop: 16-byte loads"] > n, (name, r)
        assert r["loop: and.b32"] == 4 * r["loop: 16-byte loads"] and r["loop: fma"] >= n, (name, r)


def _result(kernel, shape, ms, pct, deco="", path="", status="ok"):
    M, N, K = (int(x) for x in shape.split("x"))
    return {"kernel": kernel, "shape": shape, "M": M, "N": N, "K": K, "precision": "tf32", "beta": 0.0,
            "status": status, "median_ms": ms, "pct_cublas": pct,
            "config": {"decomposition": deco, "precision_path": path}}


def test_measure_summary_by_hand(tmp_path):
    """reproduce/tf32_skinny_summary.py: N <= 8 tile GEMM at 90% and 80% of cuBLAS tf32 is a geomean
    of sqrt(90 * 80) = 84.9%, worst 80.0%; the new path at 110% and 120%: 114.9%, worst 110.0%,
    114.89 / 84.85 = 1.354x. 4096x8x4096 moves 4 * (4096*4096 + 2 * 4096*8) = 67,371,008 bytes:
    in 0.0164 ms 4108 GB/s. A new-path row that FAILED, or that ran the tile GEMM, fails the run."""
    from reproduce import tf32_skinny_summary as summary
    tf32 = "TF32 inputs (low 13 mantissa bits dropped, ...)"
    rows = [_result("cublas", "4096x8x4096", 0.018, 100.0),
            _result("triton.stream_k", "4096x8x4096", 0.02, 90.0, "dp"),
            _result("triton.stream_k[mode=skinny]", "4096x8x4096", 0.0164, 110.0, "skinny", tf32),
            _result("triton.stream_k", "2048x2x2048", 0.02, 80.0, "hybrid"),
            _result("triton.stream_k[mode=skinny]", "2048x2x2048", 0.01, 120.0, "skinny", tf32),
            _result("triton.stream_k", "1x1024x1024", 0.01, 95.0, "hybrid"),
            _result("triton.stream_k[mode=gemv]", "1x1024x1024", 0.01, 100.0, "gemv", tf32)]
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"results": rows}))
    lines, ok = summary.summarize([str(path)])
    text = "\n".join(lines)
    assert ok, text
    assert ("N <= 8  2 shapes: tile GEMM (triton.stream_k) geomean   84.9%, worst   80.0% (2048x2x2048); "
            "triton.stream_k[mode=skinny] geomean  114.9%, worst  110.0% (4096x8x4096); "
            "new / tile GEMM geomean 1.354x") in text, text
    assert "| 4096x8x4096 | N <= 8 | dp | 90.0 | 110.0 | 3369 | 4108 | 3743 |" in text, text
    bad = list(rows)
    bad[4] = _result("triton.stream_k[mode=skinny]", "2048x2x2048", None, None, "skinny", tf32, status="FAILED")
    bad[6] = _result("triton.stream_k[mode=gemv]", "1x1024x1024", 0.01, 100.0, "dp", "")
    path.write_text(json.dumps({"results": bad}))
    lines, ok = summary.summarize([str(path)])
    text = "\n".join(lines)
    assert not ok and "FAIL triton.stream_k[mode=skinny] 2048x2x2048: FAILED" in text, text
    assert "FAIL triton.stream_k[mode=gemv] 1x1024x1024: ran 'dp'" in text, text
    # The shape files: heldout_skinny's 20 shapes of N <= 8 and 10 single rows, by class.
    assert summary.main(["--write-shapes", str(tmp_path)]) == 0
    n8 = (tmp_path / "n8.shapes").read_text().split()
    m1 = (tmp_path / "m1.shapes").read_text().split()
    assert len(n8) == 20 and len(m1) == 10 and "1000000x2x100" in n8 and "1x50257x4096" in m1
    assert all(int(s.split("x")[1]) <= 8 for s in n8) and all(s.startswith("1x") for s in m1)
    assert summary.main([str(tmp_path / "missing.json")]) == 2


# GPU: the compiled kernels on odd shapes (N <= 8 through mode=skinny, M = 1 through mode=gemv),
# against float64 of the inputs truncated here.
GPU_SHAPES = [(4099, 1, 4093, "skinny"), (1001, 3, 100003, "skinny"), (50000, 5, 999, "skinny"),
              (8191, 7, 8193, "skinny"), (12289, 8, 12285, "skinny"), (3, 8, 100001, "skinny"),
              (1, 8192, 8192, "gemv"), (1, 1001, 100003, "gemv"), (1, 50001, 999, "gemv"), (1, 4099, 4093, "gemv")]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=lambda s: "x".join(map(str, s[:3])) + "-" + s[3])
def test_gpu_tf32_ffma_shapes(shape):
    M, N, K, mode = shape
    A, B, C = _operands(M, N, K, device="cuda")
    C0 = C.clone()
    plan = sk._Plan(A, B, C, 0.5, -1.5, "tf32", True, {"mode": mode})
    plan.launch()
    torch.cuda.synchronize()
    _assert_tf32_ffma_config(plan.config, mode)
    _check_truncated(C, A, B, C0, 0.5, -1.5)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 8192, 8192), (1, 1001, 100003), (1, 4099, 4093)], ids=lambda s: "x".join(map(str, s)))
def test_gpu_tf32_single_row_by_default(shape):
    """No option: a tf32 single row runs the GEMV on TF32-truncated inputs (TF32_ON_GEMV_PATH),
    right against float64 of the inputs truncated here, and the runner's own check passes it."""
    A, B, C = _operands(*shape, device="cuda")
    C0 = C.clone()
    plan = sk._Plan(A, B, C, 0.5, -1.5, "tf32", True, {})
    plan.launch()
    torch.cuda.synchronize()
    _assert_tf32_ffma_config(plan.config, "gemv")
    _check_truncated(C, A, B, C0, 0.5, -1.5)
    r = run_kernel(sk.KERNEL, Problem(*shape, precision="tf32", alpha=0.5, beta=-1.5), timing=False, device="cuda")
    assert r.status == OK and r.config["decomposition"] == "gemv", (r.status_text, r.config)
