"""triton.stream_k's matrix-times-vectors path (mode=skinny, triton_kernels/stream_k_skinny.py):
correctness under TRITON_INTERPRET=1 for every N in 1..8 on odd shapes with beta != 0 in each
precision, the cases that reach each branch (K ranges and their in-order sum, the masked K
tail, wrapped rows, A read along K or M with 16-byte or 4-byte loads, B K-major as given or
copied), the plan's rule (which path for which shape, at the N = 8/9 and M = 1 boundaries), the
default K split by hand, options and refusals, the kernel compiled for sm_90, and, with a GPU,
odd shapes per path and bit-identical reruns."""
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
from triton_kernels import stream_k_skinny as skinny
from triton_kernels._common import interpreting

interpreter = pytest.mark.skipif(not interpreting(), reason="needs TRITON_INTERPRET=1 (set by conftest without a GPU)")


def _row(kernel, problem, device, **options):
    parsed = kernel.parse_options({k: str(v) for k, v in options.items()})
    r = run_kernel(kernel, problem, timing=False, device=device, options=parsed)
    assert r.status == OK, f"{kernel.name} {problem} {options}: {r.status_text}"
    return r


def _plan(M, N, K, precision, **options):
    A, B, C = torch.empty(M, K), torch.empty(K, N), torch.empty(M, N)
    return sk._Plan(A, B, C, 1.0, 0.0, precision, True, {"sms": 132, **options})


# Every column count on odd M and K, beta != 0, checked against float64 by the runner. 16x16
# pieces and 3 K ranges keep the interpreter's work small and still reach the wrapped rows
# (M = 37: 3 row blocks, the last wraps 11 rows), the range sum and the masked tail
# (K = 203: ranges of 80, 80, 43 = 2 steps + 11).
@interpreter
@pytest.mark.parametrize("N", range(1, 9))
@pytest.mark.parametrize("precision", ["fp32", "tf32x3", "tf32"])
def test_skinny_every_n(N, precision):
    problem = Problem(37, N, 203, precision=precision, alpha=0.5, beta=-1.5)
    if precision == "tf32":
        # tf32 keeps the tile GEMM (tensor cores) by default (TF32_ON_SKINNY_PATH off); mode=skinny
        # at tf32: tests/test_triton_tf32_ffma.py.
        r = _row(sk.KERNEL, problem, "cpu")
        assert r.config["decomposition"] in ("dp", "hybrid") and r.config["input_precision"] == "tf32", r.config
        return
    r = _row(sk.KERNEL, problem, "cpu", skinny_tile="16x16", skinny_splits=3)
    c = r.config
    assert c["decomposition"] == "skinny" and c["input_precision"] == ("tf32" if precision == "tf32" else "ieee")
    assert c["tf32x3_split"] == ("ffma" if precision == "tf32x3" else "n/a")
    assert (c["tile"], c["k_splits"], c["k_per_split"], c["grid"]) == (f"16x{N}x16", 3, 80, [3, 3])


# (M, N, K), options: what each case reaches.
CASES = {
    # K % 4 == 0: A takes 16-byte loads and each thread sums 4 k in registers (k_group 4).
    "k_group": ((21, 6, 96), dict(skinny_tile="16x32", skinny_splits=2)),
    # one range, written straight to C with beta (no workspace); M < BLOCK_M wraps.
    "one_range": ((5, 3, 48), dict(skinny_tile="16x16", skinny_splits=1)),
    # K < BLOCK_K: only the masked step.
    "k_below_one_step": ((9, 7, 5), dict(skinny_tile="16x16")),
    # the heuristic's own tile and split count.
    "heuristic": ((67, 8, 333), dict()),
    # more ranges than SKINNY_FIXUP_GROUP: the two-level fixup, its last group partial (19
    # ranges of 32: groups of 16 and 3), wrapped rows (37 = 2 x 16 + 5).
    "two_level": ((37, 5, 597), dict(skinny_tile="16x16", skinny_splits=37)),
}


@interpreter
@pytest.mark.parametrize("kernel", [sk.KERNEL, sk.KERNEL_ATOMIC], ids=lambda k: k.name)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-0.5, 1.5)])
def test_skinny_paths(kernel, case, alpha, beta):
    shape, options = CASES[case]
    r = _row(kernel, Problem(*shape, precision="fp32", alpha=alpha, beta=beta), "cpu", **options)
    assert r.config["decomposition"] == "skinny", r.config
    if case == "k_group":
        assert r.config["k_group"] == 4 and "16-byte" in r.config["operands"]
    if case == "two_level":
        assert r.config["k_splits"] == 19 and "two levels" in r.config["fixup"], r.config


@interpreter
@pytest.mark.parametrize("splits_asked, ranges, groups", [(37, 19, 2), (32, 32, 2), (16, 16, 0)])
def test_skinny_two_level_fixup_sums_every_range_once_and_leaves_its_tickets_at_zero(splits_asked, ranges, groups):
    """K = 32 x ranges in 16-wide steps: each range is 2 steps. Up to 16 ranges one level (the
    last range sums all); past 16 the last of each group of 16 sums its group, the last group
    sums the groups. Against float64 a range added twice or left out is off by a range's whole
    partial (O(1) here), not by rounding (1e-6). The tickets are back at 0 after the launch
    (each last arrival resets its own), so a second launch is right too."""
    torch.manual_seed(ranges)
    M, N, K = 37, 5, 32 * ranges
    A, B = torch.randn(M, K), torch.randn(K, N)
    want = A.double() @ B.double()
    C = torch.full((M, N), float("nan"))
    plan = sk._Plan(A, B, C, 1.0, 0.0, "fp32", True, {"sms": 132, "skinny_tile": "16x16",
                                                        "skinny_splits": splits_asked})
    assert plan.config["k_splits"] == ranges
    assert ("two levels" in plan.config["fixup"]) == (groups > 0), plan.config["fixup"]
    for _ in range(2):
        C.fill_(float("nan"))
        plan.launch()
        assert torch.allclose(C.double(), want, rtol=1e-5, atol=1e-4)
        assert plan.skinny.lock.numel() == 3 * (groups + 1 if groups else 1)
        assert int(plan.skinny.lock.abs().sum()) == 0


@interpreter
@pytest.mark.parametrize("layout", ["row_major", "a_m_major", "b_k_major", "a_unaligned"])
def test_skinny_reads_either_layout(layout):
    """A along K or M (a transposed view), B K-major as given (read directly) or row-major
    (copied K-major: operands=k_major_b here, the rows-as-given build has its own test below), A
    with a row stride that is not a multiple of 4 (4-byte loads)."""
    torch.manual_seed(0)
    M, N, K = 44, 5, 120
    A = torch.randn(K, M).t() if layout == "a_m_major" else (
        torch.randn(M, K + 1)[:, :K] if layout == "a_unaligned" else torch.randn(M, K))
    B = torch.randn(N, K).t() if layout == "b_k_major" else torch.randn(K, N)
    C = torch.randn(M, N)
    C0 = C.clone()
    plan = sk._Plan(A, B, C, 2.0, 0.25, "fp32", True, {"sms": 132, "skinny_tile": "16x16", "skinny_splits": 3,
                                                         "operands": "k_major_b"})
    plan.launch()
    ref = 2.0 * (A.double() @ B.double()) + 0.25 * C0.double()
    assert torch.allclose(C.double(), ref, rtol=1e-5, atol=1e-4)
    ops = plan.config["operands"]
    want = {"row_major": ("A direct (K-major, 16-byte", "B copy:k_major"),
            "a_m_major": ("A direct (M-major, 16-byte", "B copy:k_major"),
            "b_k_major": ("A direct (K-major, 16-byte", "B direct"),
            "a_unaligned": ("A direct (K-major, 4-byte", "B copy:k_major")}[layout]
    assert all(w in ops for w in want), ops
    # The copy reads and writes B once: 8 bytes an element; none when B is read as given.
    assert plan.config["operand_copy_bytes"] == (0 if layout == "b_k_major" else 8 * K * N)
    assert plan.config["k_group"] == (4 if layout in ("row_major", "b_k_major") else 1)


@interpreter
@pytest.mark.parametrize("layout", ["column", "transposed_row", "column_of_wider", "unaligned"])
def test_skinny_reads_a_single_column_in_place(layout):
    """N = 1: a B whose k are consecutive (a K x 1 tensor, or a 1 x K row seen transposed) is
    K-major as it stands and is read in place, no copy; a column of a wider matrix (k a row
    apart) and a misaligned base are still copied. Right against float64 either way."""
    torch.manual_seed(1)
    M, K = 37, 203
    A = torch.randn(M, K)
    B = {"column": lambda: torch.randn(K, 1), "transposed_row": lambda: torch.randn(1, K).t(),
         "column_of_wider": lambda: torch.randn(K, 3)[:, 1:2],
         "unaligned": lambda: torch.randn(K + 1)[1:].reshape(K, 1)}[layout]()
    C = torch.full((M, 1), float("nan"))
    plan = sk._Plan(A, B, C, 1.0, 0.0, "fp32", True, {"sms": 132, "skinny_tile": "16x64", "skinny_splits": 2})
    plan.launch()
    assert torch.allclose(C.double(), A.double() @ B.double(), rtol=1e-5, atol=1e-4)
    in_place = layout in ("column", "transposed_row")
    assert ("B direct" in plan.config["operands"]) == in_place, plan.config["operands"]
    # a copy reads and writes each of B's K elements once: 8 bytes an element
    assert plan.config["operand_copy_bytes"] == (0 if in_place else 8 * K)


@pytest.mark.parametrize("M,N,precision,options,want", [
    (2, 8, "fp32", {}, "skinny"),
    (2, 9, "fp32", {}, "tiles"),        # N = 9: past SKINNY_MAX_N
    (4096, 1, "fp32", {}, "skinny"),
    (4096, 8, "fp32", {}, "skinny"),
    (4096, 9, "fp32", {}, "tiles"),
    (1, 8, "fp32", {}, "gemv"),         # a single row takes the GEMV first
    (1, 9, "fp32", {}, "gemv"),
    (4096, 8, "tf32x3", {}, "skinny"),  # through tf32x3_split=ffma
    # tf32: the tile GEMM by default (TF32_ON_SKINNY_PATH off); a single row takes the GEMV
    # (TF32_ON_GEMV_PATH on), both FFMA paths on TF32-truncated inputs
    (4096, 8, "tf32", {}, "tiles"),
    (2, 1, "tf32", {}, "tiles"),
    (1, 8, "tf32", {}, "gemv"),
    (4096, 8, "fp32", {"tile": "64x16x32"}, "tiles"),  # a tile asks for the GEMM
    (4096, 8, "fp32", {"mode": "hybrid"}, "hybrid"),
    (4096, 8, "tf32x3", {"tf32x3_split": "in_loop"}, "tiles"),
    (4096, 8, "fp32", {"skinny_splits": 2}, "skinny"),
    (1, 8, "fp32", {"mode": "skinny"}, "skinny"),
    (1, 8, "tf32x3", {"skinny_tile": "16x16"}, "skinny"),
])
def test_skinny_rule(M, N, precision, options, want):
    c = _plan(M, N, 8192, precision, **options).config
    got = c["decomposition"]
    assert got == want if want != "tiles" else got in ("dp", "hybrid"), got
    if want == "skinny" and precision == "tf32x3":
        assert c["tf32x3_split"] == "ffma" and c["input_precision"] == "ieee"
    if want == "tiles" and precision == "tf32" or "in_loop" in options.values():
        assert c["input_precision"] != "ieee"


def test_skinny_default_tile_and_splits_by_hand():
    """32x64 pieces for 3-8 columns, 64x64 for 1-2; K cut until the row blocks x ranges reach
    4 programs per SM, no range under 8 steps of 64."""
    c = _plan(4096, 8, 65536, "fp32").config
    # 4096 / 32 = 128 row blocks; 4 * 132 = 528 programs wanted: ceil(528 / 128) = 5 ranges;
    # ceil(65536 / 5) = 13108 rounds up to whole steps of 64: 13120; 5 ranges cover 65600.
    assert (c["tile"], c["tiles"], c["k_splits"], c["k_per_split"]) == ("32x8x64", 128, 5, 13120)
    c = _plan(4096, 2, 65536, "fp32").config
    # 4096 / 64 = 64 row blocks: ceil(528 / 64) = 9 ranges; ceil(65536 / 9) = 7282 -> 7296.
    assert (c["tile"], c["tiles"], c["k_splits"], c["k_per_split"]) == ("64x2x64", 64, 9, 7296)
    # 300 x 1000: ceil(300 / 32) = 10 blocks want 53 ranges, but ranges of 8 steps of 64 = 512
    # allow ceil(1000 / 512) = 2.
    assert _plan(300, 4, 1000, "fp32").config["k_splits"] == 2
    # 2**17 rows: 4096 blocks already fill 528 slots: one range, no workspace, no second kernel.
    c = _plan(1 << 17, 8, 4096, "fp32").config
    assert c["k_splits"] == 1 and c["fixup"] == "none"


@pytest.mark.parametrize("N", [1, 2, 3, 5, 8])
def test_skinny_scalar_rows_take_16_row_pieces(N):
    """A read along K 4 bytes at a time (K % 4 != 0) takes 16x64 pieces at N >= 3 (a 32x64 piece
    held 16 accumulators a lane a column there) and 32x64 at N <= 2 up to K = 16384 (64x64 held
    32); 16-byte loads keep 32x64 and 64x64; a column-major A (read along M) keeps the 16-byte
    rule's tile."""
    want_scalar = "32x{}x64" if N <= 2 else "16x{}x64"
    want_vector = "64x{}x64" if N <= 2 else "32x{}x64"
    c = _plan(30460, N, 3170, "fp32").config          # 3170 % 4 == 2
    assert c["k_group"] == 1 and c["tile"] == want_scalar.format(N), c
    assert c["tiles"] == -(-30460 // (32 if N <= 2 else 16))
    # Past K = 16384 the 1-2 column rows keep 64x64 (their tuning rows there lost up to 18%).
    assert _plan(3000, N, 16387, "fp32").config["tile"] == ("64x{}x64" if N <= 2 else "16x{}x64").format(N)
    assert _plan(3000, N, 16383, "fp32").config["tile"] == want_scalar.format(N)
    c = _plan(30460, N, 3172, "fp32").config          # 16-byte loads
    assert c["k_group"] == 4 and c["tile"] == want_vector.format(N), c
    # tf32x3 runs fp32's plan here (tf32x3_split=ffma): the same piece.
    assert _plan(30460, N, 3170, "tf32x3").config["tile"] == want_scalar.format(N)
    A = torch.empty(3170, 30460).t()                   # column-major: read along M
    B, C = torch.empty(3170, N), torch.empty(30460, N)
    c = sk._Plan(A, B, C, 1.0, 0.0, "fp32", True, {"sms": 132}).config
    assert c["k_group"] == 1 and c["tile"] == want_vector.format(N), c
    # A tile the user names is kept.
    assert _plan(30460, N, 3170, "fp32", skinny_tile="32x64/4").config["tile"] == f"32x{N}x64"


@interpreter
@pytest.mark.parametrize("N", [1, 3, 8])
def test_skinny_scalar_rows_default_piece_runs_right(N):
    """The 4-byte-load pieces by default (16x64 at N >= 3, 32x64 at N <= 2) on odd M and K,
    checked against float64: 37 rows wrap 11 (16 rows) or 27 (32 rows) in the last row block;
    K = 203 is 3 steps + 11."""
    r = _row(sk.KERNEL, Problem(37, N, 203, precision="fp32", alpha=0.5, beta=-1.5), "cpu")
    assert r.config["tile"] == f"{32 if N <= 2 else 16}x{N}x64" and r.config["k_group"] == 1, r.config


@pytest.mark.parametrize("M,N,precision,options,message", [
    (64, 9, "fp32", {"mode": "skinny"}, "at most 8 columns"),
    (64, 8, "fp32", {"skinny_splits": 2, "mode": "dp"}, "contradict"),
    (64, 8, "fp32", {"skinny_tile": "16x16", "mode": "gemv"}, "contradict"),
    (64, 8, "fp32", {"gemv_tile": "1x64x16", "mode": "skinny"}, "contradict"),
    (64, 8, "fp32", {"skinny_splits": 2, "k_splits": 2}, "contradict"),
    (64, 8, "fp32", {"skinny_tile": "16x16", "grid": 4}, "do not apply"),
    (64, 8, "fp32", {"mode": "skinny", "operands": "copy"}, "do not apply"),
    (64, 8, "tf32x3", {"mode": "skinny", "tf32x3_split": "b"}, "contradicts"),
])
def test_skinny_refusals(M, N, precision, options, message):
    with pytest.raises(UsageError, match=message):
        _plan(M, N, 64, precision, **options)


@pytest.mark.parametrize("text", ["16x48", "8x64", "16x512", "128x256", "32x64/3", "32"])
def test_skinny_tile_parse_refuses(text):
    with pytest.raises(ValueError):
        skinny.parse_skinny_tile(text)


def test_skinny_tile_parse():
    assert skinny.parse_skinny_tile("64x128/8") == skinny.SkinnyTile(64, 128, 8)
    assert skinny.parse_skinny_tile("16x16") == skinny.SkinnyTile(16, 16, 4)


def _study(*args):
    """stream_k_study in a subprocess without TRITON_INTERPRET (the interpreter's
    InterpretedFunctions can't be compiled)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-m", "reproduce.stream_k_study", *args],
                         cwd=root, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    return out.stdout


def test_skinny_cases_compile_for_sm90():
    """The kernels every case above launches (B's copy, the skinny kernel), compiled for sm_90 without a GPU (the interpreter runs Python, not the compiler)."""
    cases = [[*shape, "fp32", 0.5, -1.5, True, {k: str(v) for k, v in options.items()}]
             for shape, options in CASES.values()]
    cases.append([37, 1, 203, "tf32x3", 1.0, 0.0, True, {"skinny_splits": "3"}])
    cases.append([4099, 5, 4093, "fp32", 1.0, 0.0, True, {}])
    results = json.loads(_study("--compile-check", json.dumps(cases)).strip().splitlines()[-1])
    assert all(r.endswith(": ok") for rows in results for r in rows), results
    kernels = {r.split(":")[0] for rows in results for r in rows}
    # B's K-major copy, the skinny kernel; the K ranges are summed inside it (no second kernel).
    assert "_skinny_kernel" in kernels and kernels <= {"_skinny_kernel", "_transpose_kernel", "_copy_rows_kernel"}, kernels


def test_skinny_k_loop_compiles_to_vector_loads_and_ffma():
    """The design's premise, checked in the sm_90 code for every N: no spills, only 16-byte
    global loads in the K loop (A's rows along K and one or more per column of B), FFMAs for
    every column, and no shared memory or barrier (no layout conversion inside the loop)."""
    ir = json.loads(_study("--skinny-ir"))
    assert len(ir) == 8, ir
    for name, r in ir.items():
        n = int(name.split()[0][2:])
        assert r["spill bytes"] == 0 and r["loop: shared or barrier"] == 0, (name, r)
        assert r["loop: other loads"] == 0 and r["loop: 16-byte loads"] > n, (name, r)
        assert r["loop: fma"] >= n, (name, r)


def test_skinny_scalar_pieces_hold_fewer_registers():
    """The 4-byte-load rules' premise, checked in the sm_90 code for every N: with A read along K
    4 bytes at a time, the piece the plan picks (16x64 at N >= 3, 32x64 at N <= 2) holds fewer
    registers than the one it replaced (32x64, 64x64), so more programs fit an SM; no spills."""
    ir = json.loads(_study("--skinny-scalar-ir"))
    assert len(ir) == 8, ir
    for name, r in ir.items():
        n = int(name[2:])
        d, old = r["default"], r["replaced"]
        assert d["piece"] == ("32x64/4" if n <= 2 else "16x64/4") and d["k_group"] == 1, (name, r)
        assert d["spill bytes"] == 0 and d["registers"] < old["registers"], (name, r)


# GPU: odd shapes per path (the skinny kernel for N <= 8 in fp32 and tf32x3, the tile GEMM for
# tf32 by default, the GEMV at M = 1), checked against float64 by the runner.
SHAPES = [(4099, 1, 4093), (1001, 3, 100003), (50000, 5, 999), (8191, 7, 8193), (12289, 8, 12285),
          (3, 8, 1000001), (1 << 20, 2, 129),
          # B's rows read as given (operands=auto's rule there: N <= 7, M <= 32 N), unaligned rows
          (24, 3, 700001), (97, 7, 20011)]


@pytest.mark.gpu
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("precision", ["fp32", "tf32x3", "tf32"])
def test_gpu_skinny_shapes(shape, precision):
    r = _row(sk.KERNEL, Problem(*shape, precision=precision, alpha=0.5, beta=-1.5), "cuda")
    want = ("dp", "hybrid") if precision == "tf32" else ("skinny",)
    assert r.config["decomposition"] in want, r.config


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["row_major", "a_m_major", "b_k_major"])
def test_gpu_skinny_layouts_and_bit_identical(layout):
    torch.manual_seed(0)
    M, N, K = 3001, 7, 20011
    A = torch.randn(K, M, device="cuda").t() if layout == "a_m_major" else torch.randn(M, K, device="cuda")
    B = torch.randn(N, K, device="cuda").t() if layout == "b_k_major" else torch.randn(K, N, device="cuda")
    outs = []
    for _ in range(3):
        C = torch.full((M, N), float("nan"), device="cuda")
        plan = sk._Plan(A, B, C, 1.0, 0.0, "fp32", True, {})
        plan.launch()
        outs.append(C)
    assert plan.config["decomposition"] == "skinny" and plan.config["k_splits"] > 1, plan.config
    assert plan.config["k_order"] == "rotated", plan.config    # N = 7: SKINNY_ROTATED_SPLIT_N
    ref = A.double() @ B.double()
    assert torch.allclose(outs[0].double(), ref, rtol=1e-5, atol=1e-3)
    assert all(torch.equal(outs[0], o) for o in outs[1:])


def _result(kernel, shape, precision, ms, pct, deco, beta=0.0):
    M, N, K = (int(x) for x in shape.split("x"))
    return {"kernel": kernel, "shape": shape, "M": M, "N": N, "K": K, "precision": precision, "beta": beta,
            "status": "ok", "median_ms": ms, "pct_cublas": pct, "config": {"decomposition": deco}}


def test_skinny_check_judges_goals_paths_and_bandwidth(tmp_path):
    """--skinny-check: fp32 geomean of 90% and 100% is 94.9% (< 95: FAIL; a row that ran the
    wrong path still counts); a tf32x3 row at 99%
    of cuBLAS fp32 fails its worst >= 100%; a row that ran the tile GEMM where the rule says
    skinny fails, as does a tf32 single row on the tile GEMM (TF32_ON_GEMV_PATH: the GEMV), while
    a tf32 N <= 8 row on the tile GEMM passes (TF32_ON_SKINNY_PATH off); GB/s is the bytes a row must move over its time: 4096x8x4096 moves
    4 * (4096*4096 + 4096*8 + 4096*8) = 67,371,008 bytes, in 0.02 ms 3369 GB/s."""
    from reproduce import stream_k_study
    rows = [_result("cublas", "4096x8x4096", "fp32", 0.018, 100.0, ""),
            _result("triton.stream_k", "4096x8x4096", "fp32", 0.02, 90.0, "skinny"),
            _result("cublas", "1x8x999", "fp32", 0.01, 100.0, ""),
            _result("triton.stream_k", "1x8x999", "fp32", 0.01, 100.0, "gemv"),
            _result("triton.stream_k", "4096x8x4096", "tf32x3", 0.02, 99.0, "skinny"),
            _result("triton.stream_k", "2048x5x2048", "fp32", 0.02, 100.0, "hybrid"),
            _result("triton.stream_k", "1x4096x4096", "tf32", 0.02, 80.0, "hybrid"),
            _result("triton.stream_k", "4096x8x4096", "tf32", 0.02, 95.0, "dp")]
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"results": rows}))
    lines, ok = stream_k_study.skinny_check([str(path)])
    text = "\n".join(lines)
    assert not ok
    assert " 3369 GB/s (cuBLAS    3743)" in text, text          # 67371008 / 0.018 ms = 3743 GB/s
    assert "FAIL fp32   2048x5x2048: ran hybrid, the rule says skinny" in text, text
    assert "FAIL tf32   1x4096x4096: ran hybrid, the rule says gemv" in text, text
    assert "4096x8x4096: ran" not in text, text
    assert "FAIL fp32   N <= 8    2 shapes: geomean   94.9%, worst   90.0% (4096x8x4096)" in text, text
    assert "PASS fp32   M = 1     1 shapes" in text, text
    assert "FAIL tf32x3 N <= 8    1 shapes: geomean   99.0%, worst   99.0%" in text, text
    good = [r for r in rows if r["shape"] not in ("2048x5x2048", "1x4096x4096") and r["precision"] != "tf32x3"]
    good[1] = dict(good[1], pct_cublas=96.0)
    path.write_text(json.dumps({"results": good}))
    assert stream_k_study.skinny_check([str(path)])[1]


def test_skinny_k_order_rule_by_hand():
    """rotated where the plan does not split K and N >= 3, or N = 7 whatever the split, in_order
    elsewhere; the option overrides and the row's config names the order that ran."""
    assert skinny.default_order(1, 3) == skinny.default_order(1, 8) == "rotated"
    assert skinny.default_order(2, 8) == skinny.default_order(512, 8) == "in_order"
    # N = 7 runs rotated with K split too (SKINNY_ROTATED_SPLIT_N); its neighbours do not.
    assert skinny.default_order(2, 7) == skinny.default_order(512, 7) == "rotated"
    assert skinny.default_order(2, 6) == skinny.default_order(2, 3) == "in_order"
    assert skinny.default_order(1, 1) == skinny.default_order(1, 2) == "in_order"
    assert _plan(4096, 1, 512, "fp32").config["k_order"] == "in_order"
    # 25000 rows: 782 row blocks of 32 fill 132 SMs x 4 without a split; 16 rows: one block, K split
    assert _plan(25000, 7, 5000, "fp32").config["k_order"] == "rotated"
    assert _plan(25000, 7, 5000, "fp32").config["k_splits"] == 1
    # 11357 rows: 355 row blocks, K split in 2; rotated at N = 7 only
    seven = _plan(11357, 7, 6476, "fp32").config
    assert seven["k_splits"] == 2 and seven["k_order"] == "rotated"
    assert _plan(11357, 6, 6476, "fp32").config["k_order"] == "in_order"
    few = _plan(16, 8, 1 << 20, "fp32").config
    assert few["k_splits"] > 1 and few["k_order"] == "in_order"
    assert _plan(25000, 7, 5000, "fp32", skinny_order="in_order").config["k_order"] == "in_order"
    assert _plan(16, 8, 1 << 20, "fp32", skinny_order="rotated").config["k_order"] == "rotated"


@pytest.mark.parametrize("options", [dict(skinny_order="rotated", mode="dp"),
                                     dict(skinny_order="in_order", k_splits=2)])
def test_skinny_order_refused_with_another_path(options):
    with pytest.raises(UsageError, match="skinny_order"):
        _plan(64, 8, 1000, "fp32", **options)


@pytest.mark.parametrize("operands", ["direct", "copy", "copy_a", "copy_b"])
def test_skinny_refuses_operand_modes_it_has_no_build_for(operands):
    """mode=skinny reads A as given and B as given or K-major: operands=auto / as_given /
    k_major_b; the others name what they contradict."""
    with pytest.raises(UsageError, match=f"operands={operands}"):
        _plan(64, 8, 1000, "fp32", mode="skinny", operands=operands)


@interpreter
@pytest.mark.parametrize("order", ["in_order", "rotated"])
@pytest.mark.parametrize("M, N, K, splits", [(70, 7, 333, 1), (37, 5, 203, 3), (100, 3, 150, 1), (5, 2, 7, 1),
                                             (40, 8, 160, 1)])
def test_skinny_either_k_order_sums_every_step_once(order, M, N, K, splits):
    """16x16 pieces: K = 333 is 20 full steps and a masked 13 (rotated programs start at steps
    0..4 and wrap); K = 7 has no full step; K = 160 no tail. A step read twice or skipped is off
    by a step's whole contribution, not by rounding."""
    torch.manual_seed(M + K)
    A, B = torch.randn(M, K), torch.randn(K, N)
    C = torch.randn(M, N)
    C0 = C.clone()
    plan = sk._Plan(A, B, C, 0.5, -1.5, "fp32", True, {"sms": 132, "skinny_tile": "16x16",
                                                         "skinny_splits": splits, "skinny_order": order})
    assert plan.config["k_order"] == order
    plan.launch()
    ref = 0.5 * (A.double() @ B.double()) - 1.5 * C0.double()
    assert torch.allclose(C.double(), ref, rtol=1e-5, atol=1e-4)


@interpreter
def test_skinny_default_order_at_n7_with_k_split_is_rotated_and_right():
    """The default plan at N = 7 with K split (SKINNY_ROTATED_SPLIT_N): rotated ranges of 12 and 13
    steps wrap at different starts, a masked tail, partials summed in range order; vs float64."""
    torch.manual_seed(7)
    M, N, K = 45, 7, 16 * 37 + 9
    A, B = torch.randn(M, K), torch.randn(K, N)
    C = torch.full((M, N), float("nan"))
    plan = sk._Plan(A, B, C, 1.0, 0.0, "fp32", True, {"sms": 132, "skinny_tile": "16x16", "skinny_splits": 3})
    assert plan.config["k_order"] == "rotated" and plan.config["k_splits"] == 3, plan.config
    plan.launch()
    assert torch.allclose(C.double(), A.double() @ B.double(), rtol=1e-5, atol=1e-4)


def test_skinny_b_rows_rule_by_hand():
    """B's rows as given where N <= 7 and M <= 32 N (the K-major copy at least 1/16 of A's
    bytes), else the copy; N = 8 always copies; a K-major B is read as given either way."""
    assert skinny.default_b_rows(224, 7) and skinny.default_b_rows(8, 2) and skinny.default_b_rows(96, 3)
    assert not skinny.default_b_rows(225, 7) and not skinny.default_b_rows(97, 3)
    assert not skinny.default_b_rows(2, 8) and not skinny.default_b_rows(32, 8)
    ops = _plan(24, 3, 700001, "fp32").config
    assert "B direct" in ops["operands"] and "(its rows, 4-byte loads)" in ops["operands"], ops
    assert ops["operand_copy_bytes"] == 0, ops
    ops = _plan(32, 8, 524288, "fp32").config
    assert "B copy:k_major" in ops["operands"] and ops["operand_copy_bytes"] == 8 * 524288 * 8, ops
    ops = _plan(24, 3, 700001, "fp32", mode="skinny", operands="k_major_b").config
    assert "B copy:k_major" in ops["operands"]
    ops = _plan(2000, 3, 7001, "fp32", mode="skinny", operands="as_given").config
    assert "B direct" in ops["operands"] and "(its rows, 4-byte loads)" in ops["operands"], ops


@interpreter
@pytest.mark.parametrize("order", ["in_order", "rotated"])
@pytest.mark.parametrize("M, N, K, splits", [(37, 5, 203, 3), (70, 7, 333, 1), (37, 5, 597, 37), (5, 2, 7, 1),
                                             (9, 8, 100, 2), (3, 3, 1001, 1)])
def test_skinny_reads_b_rows_as_given(order, M, N, K, splits):
    """operands=as_given: a row-major B read in place (k a row of N floats apart, 4-byte loads), with
    either K order, one or many K ranges, the masked tail, N = 8 (forced on) and a B whose rows
    are not 16-byte aligned (N = 3, 5, 7); beta != 0; against float64."""
    torch.manual_seed(M * N + K)
    A, B = torch.randn(M, K), torch.randn(K, N)
    C = torch.randn(M, N)
    C0 = C.clone()
    plan = sk._Plan(A, B, C, 0.5, -1.5, "fp32", True, {"sms": 132, "skinny_tile": "16x16", "skinny_splits": splits,
                                                         "skinny_order": order, "operands": "as_given"})
    ops = plan.config["operands"]
    assert "B direct" in ops and "(its rows, 4-byte loads)" in ops and plan.config["operand_copy_bytes"] == 0
    plan.launch()
    ref = 0.5 * (A.double() @ B.double()) - 1.5 * C0.double()
    assert torch.allclose(C.double(), ref, rtol=1e-5, atol=1e-4)
