"""triton.stream_k / triton.stream_k_atomic: correctness under TRITON_INTERPRET=1 (CPU) on shapes
that exercise every path of the decomposition, the decomposition's arithmetic, the options, the
16-byte alignment fix (compiled for sm_90 without a GPU), and, with a GPU (@pytest.mark.gpu),
the compiled kernels: odd shapes in all precisions, bit-identical reruns, tf32x3 accuracy.

Stream-K splits only when a partial wave of tiles is left over, so the CPU tests force splits
with the options ``grid`` (stream-K program count) and ``sms`` (the SM count the decomposition
assumes), and small ``tile``s so that test shapes have several tiles.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from compare.harness.errors import UsageError
from compare.harness.problem import DOT_PRECISION, Problem
from compare.harness.runner import OK, run_kernel
from triton_kernels import stream_k as sk
from triton_kernels._common import interpreting

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = [sk.KERNEL, sk.KERNEL_ATOMIC]
PRECISIONS = ["fp32", "tf32", "tf32x3"]

interpreter = pytest.mark.skipif(not interpreting(), reason="needs TRITON_INTERPRET=1 (set by conftest without a GPU)")


def _ok(kernel, problem, device, **options):
    """Through the one pipeline (NaN-poisoned C, float64 check); returns the row."""
    parsed = kernel.parse_options({k: str(v) for k, v in options.items()})
    r = run_kernel(kernel, problem, timing=False, device=device, options=parsed)
    assert r.status == OK, f"{kernel.name} {problem} {options}: {r.status_text}"
    return r


# Shapes x options that reach each path (interpreter tile sizes keep them quick):
# * odd_tile_rows: 3 tile rows of 64 with GROUP_M = 8: the launch order's last group is short;
#   5 programs over 6 tiles' iterations: ranges start and end inside tiles.
# * odd_k_boundaries: K = 1000 (31 full BLOCK_K steps + a tail of 8), 7 programs over 4 tiles of
#   32 iterations: 18/19-iteration ranges cut tiles at odd iterations, and the range holding a
#   tile's last iteration also holds the masked tail.
# * k_below_one_block: K = 7 < BLOCK_K: one masked iteration per tile, every range a whole tile.
# * tiny_m / tiny_n / one: 1-row and 1-column outputs, a 1x1x1 product.
# * hybrid: sms = 3 with 7 tiles (78% of 3 waves): 6 data-parallel tiles + 1 stream-K tile of 8
#   iterations split over 2 programs (the heuristic's choice, no grid option).
# * many_segments: 2 programs over 9 tiles of 3 iterations: each range touches 5-6 tiles.
CASES = {
    "odd_tile_rows": ((150, 70, 65), dict(tile="64x64x16", grid=5)),
    "odd_k_boundaries": ((65, 33, 1000), dict(tile="64x32x32", grid=7)),
    "k_below_one_block": ((40, 50, 7), dict(tile="16x16x16", grid=3)),
    "tiny_m": ((1, 200, 300), dict(tile="16x64x32", grid=6)),
    "tiny_n": ((300, 1, 200), dict(tile="64x16x32", grid=6)),
    "one": ((1, 1, 1), dict(mode="hybrid")),
    "hybrid": ((223, 30, 256), dict(tile="32x32x32", sms=3)),
    "many_segments": ((48, 48, 45), dict(tile="16x16x16", grid=2)),
}


@interpreter
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("precision", PRECISIONS)
def test_split_paths(kernel, case, precision):
    shape, options = CASES[case]
    r = _ok(kernel, Problem(*shape, precision=precision, alpha=0.5, beta=-1.5), "cpu", **options)
    # A 1x1 output with no tile given: tf32x3 takes fp32's plan (tf32x3_split=ffma).
    ffma = precision == "tf32x3" and case == "one"
    assert r.config["input_precision"] == ("ieee" if ffma else DOT_PRECISION[precision])
    if case not in ("one", "k_below_one_block"):
        assert r.config["split_tiles"] >= 1, r.config    # the case really splits a tile
    if case == "hybrid":
        assert r.config["dp_tiles"] == 6 and r.config["sk_tiles"] == 1


@interpreter
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-2.0, 0.0), (0.5, 1.0), (1.0, -0.75)])
def test_alpha_beta_on_split_tiles(kernel, alpha, beta):
    # beta == 0: C is NaN-poisoned, so a fixup or pre-scale that reads C fails here.
    _ok(kernel, Problem(77, 65, 300, precision="fp32", alpha=alpha, beta=beta), "cpu", tile="32x32x16", grid=9)


@interpreter
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("shape", [(7, 33, 127), (255, 129, 1023), (1, 1, 1), (129, 65, 64), (16, 1001, 999)])
@pytest.mark.parametrize("precision", PRECISIONS)
def test_heuristic_on_odd_shapes(kernel, shape, precision):
    r = _ok(kernel, Problem(*shape, precision=precision, alpha=1.0, beta=0.5), "cpu")
    assert r.config["chosen_by"] == "heuristic"


@interpreter
@pytest.mark.parametrize("operands", sk.OPERAND_CHOICES)
@pytest.mark.parametrize("precision", ["fp32", "tf32"])
def test_operand_layouts_and_strided_inputs(operands, precision):
    """Transposed views (A M-major, B K-major), a sliced A (row stride 41: no 16-byte hint
    possible, so it is copied) and every operand mode agree with float64."""
    torch.manual_seed(1)
    A_t = torch.randn(40, 96).t()                 # 96 x 40, unit stride along M
    B_t = torch.randn(64, 40).t()                 # 40 x 64, unit stride along K
    A_s = torch.randn(96, 41)[:, :40]             # 96 x 40, row stride 41
    for A, B in ((A_t, B_t), (A_s, B_t.contiguous())):
        C = torch.full((96, 64), float("nan"))
        sk.stream_k_matmul(A, B, C, 1.0, 0.0, precision, operands=operands, grid=5, sms=4)
        ref = A.double() @ B.double()
        assert (C.double() - ref).abs().max().item() < 1e-4
    plan = sk._Plan(A_s, B_t.contiguous(), C, 1.0, 0.0, precision, True, {"operands": operands})
    if operands in ("as_given", "copy_b") or (operands == "auto" and not sk.worth_copying(precision, 96, 64, 40, "a")):
        # never copied (as_given, copy_b; auto where the copy would cost more than it saves): 4-byte loads
        assert plan.a.layout == "direct:4-byte" and not plan.a_hint and plan.b_hint
    else:
        assert plan.a.layout.startswith("copy")   # stride 41 can't be read with 16-byte loads
        assert plan.a_hint


def test_copies_only_where_they_pay():
    """operands=auto copies an operand only when the GEMM does enough flops per copied byte
    (N/4 for A, M/4 for B): a sliced A (row stride 41) is copied under a wide output and read as
    given (4-byte loads, no hint) under a narrow one (fp32: from N = 1024; tf32 from
    N = 512); tf32's K-major B copy needs M >= 512."""
    A_s = torch.randn(96, 41)[:, :40]
    for precision, wide_n, narrow_n in (("fp32", 1024, 1020), ("tf32", 512, 508)):
        for n, copied in ((wide_n, True), (narrow_n, False)):
            B, C = torch.randn(40, n), torch.empty(96, n)
            plan = sk._Plan(A_s, B, C, 1.0, 0.0, precision, True, {})
            assert plan.a.layout.startswith("copy") is copied, (precision, n, plan.config)
            assert plan.a_hint is copied
    # fp32's B: an unaligned B (N = 1021) is copied from M = 1024 rows on.
    for m, copied in ((1024, True), (1021, False)):
        B = torch.empty(64, 1021)
        plan = sk._Plan(torch.empty(m, 64), B, torch.empty(m, 1021), 1.0, 0.0, "fp32", True, {})
        assert plan.b.layout == ("copy:n_major" if copied else "direct:4-byte"), plan.config
    assert sk.worth_copying("tf32", 512, 4096, 4096, "b") and not sk.worth_copying("tf32", 256, 4096, 4096, "b")
    C = torch.empty(256, 512)
    plan = sk._Plan(torch.randn(256, 64), torch.randn(64, 512), C, 1.0, 0.0, "tf32", True, {})
    assert plan.b.layout == "direct" and not plan.b.k_contiguous   # 256 rows: B read N-major as given


def test_decomposition_covers_every_iteration_once():
    """The stream-K ranges partition the stream-K tiles' iterations, no range touches more tiles
    than the workspace has slots for, and the fixup's owner formula agrees with the ranges."""
    for M, N, K, tile, sms, grid in [(1000, 1000, 1000, sk.Tile(128, 128, 16, 8, 4), 132, None),
                                     (256, 256, 131072, sk.Tile(128, 128, 32, 8, 3), 132, None),
                                     (65, 33, 1000, sk.Tile(64, 32, 32, 4, 3), 132, 7),
                                     (48, 48, 45, sk.Tile(16, 16, 16, 4, 3), 132, 2),
                                     (3001, 2999, 3003, sk.Tile(128, 128, 16, 8, 4), 132, None)]:
        d = sk.decompose(M, N, K, tile, sms, "hybrid", grid)
        covered = []
        for g in range(d.sk_programs):
            lo, hi = d.range_of(g)
            assert hi > lo
            assert hi - 1 < (d.sk_tiles * d.iters)
            assert (hi - 1) // d.iters - lo // d.iters + 1 <= d.max_segments
            covered.extend(range(lo, hi))
        assert covered == list(range(d.sk_tiles * d.iters))
        A = torch.empty(M, K)
        plan = sk._Plan(A, torch.empty(K, N), torch.empty(M, N), 1.0, 0.0, "fp32", True,
                        {"tile": tile, "mode": "hybrid", "sms": sms, **({"grid": grid} if grid else {})})
        for i in range(0, d.sk_tiles * d.iters, max(1, d.iters // 3)):
            lo, hi = d.range_of(plan._owner(i))
            assert lo <= i < hi


def test_heuristic_table():
    # Below one wave: everything stream-K, one program per SM (128x4096x11008: 32 tiles of
    # 128x128, whose 64-row halves would not fill a data-parallel wave either).
    t, d = sk.choose_plan(128, 4096, 11008, "fp32", 132)
    assert (t.bm, t.bn, d.mode, d.sk_tiles, d.sk_programs) == (128, 128, "hybrid", 32, 132)
    # Full waves: data-parallel only.
    t, d = sk.choose_plan(4096, 4096, 4096, "tf32", 132)
    assert (t.bm, t.bn, d.mode) == (128, 256, "dp")
    # tf32 below a wave of 128x256 tiles, 513+ rows, not long-K: 128x64 tiles, data-parallel
    # (docs/findings.md#tf32-mid-size-outputs-tf32_mid_tile); a 64-column output takes the narrow
    # tiles: 64x64 would give 64 x 128 = 8192 tile-iterations < 48 x 264, so 32x64, 128 tiles, a wave.
    t, d = sk.choose_plan(1024, 1024, 1024, "tf32", 132)
    assert (t.bm, t.bn, t.warps, d.mode, d.tiles) == (128, 64, 4, "dp", 128)
    assert sk.choose_plan(1024, 1024, 16384, "tf32", 132)[0].bn == 128      # long K
    assert sk.choose_plan(512, 1024, 1024, "tf32", 132)[0].bn == 128        # few rows: swapped
    assert sk.choose_plan(2048, 2048, 2048, "tf32", 132)[0].bn == 256       # a wave of 128x256
    t, d = sk.choose_plan(4096, 64, 4096, "tf32", 132)
    assert (t.bm, t.bn, d.mode) == (32, 64, "dp")
    # Skinny outputs get skinny tiles.
    assert sk.choose_plan(16, 8192, 8192, "fp32", 132)[0].bm == 16
    assert sk.choose_plan(8192, 16, 8192, "fp32", 132)[0].bn == 16
    # 4.4 waves (3001x2999 in 128x128 tiles = 576): the partial last wave goes stream-K.
    t, d = sk.choose_plan(3001, 2999, 3003, "fp32", 132)
    assert d.mode == "hybrid" and d.sk_tiles == 576 % 132 and d.dp_tiles == 576 - 576 % 132


def test_options_parse_and_refuse():
    k = sk.KERNEL
    opts = k.parse_options({"tile": "64x128x32/4/4", "mode": "hybrid", "grid": "100", "operands": "copy"})
    assert opts["tile"] == sk.Tile(64, 128, 32, 4, 4) and opts["grid"] == 100
    for bad in ({"tile": "100x128x32"}, {"tile": "8x8x8"}, {"mode": "maybe"}, {"grid": "0"},
                {"operands": "sideways"}, {"nonsense": "1"}):
        with pytest.raises(UsageError):
            k.parse_options(bad)
    A, B, C = torch.empty(8, 8), torch.empty(8, 8), torch.empty(8, 8)
    with pytest.raises(UsageError, match="contradict"):
        sk._Plan(A, B, C, 1.0, 0.0, "fp32", True, {"mode": "dp", "grid": 4})


def test_registered_with_both_variants():
    from compare.harness import registry
    assert registry.get("triton.stream_k") is sk.KERNEL
    assert {k.variant for k in KERNELS} == {"deterministic", "atomic"}
    assert all(k.precisions == tuple(PRECISIONS) and k.interpretable for k in KERNELS)


def test_alignment_hint_turns_4_byte_copies_into_16_byte_ones():
    """The non-multiple-of-16 collapse and its fix, compiled for sm_90 without a GPU: at
    1000^3 fp32, without the hint every A/B copy into shared memory is a 4-byte cp.async; with
    it they are 16-byte ones and the C stores are vectors. Fails if the hint stops working."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-m", "reproduce.stream_k_study", "--ptx-check"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    counts = json.loads(out.stdout.strip().splitlines()[-1])
    assert counts["off"]["cp.async 4B"] > 0 and counts["off"]["cp.async 16B"] == 0
    assert counts["on"]["cp.async 4B"] == 0 and counts["on"]["cp.async 16B"] > 0
    assert counts["on"]["st.global.v4"] > 0 and counts["on"]["st.global.b32"] == 0


def _compile_check(cases):
    """stream_k_study._compile_check(cases) in a subprocess without TRITON_INTERPRET (under the interpreter
    @triton.jit makes InterpretedFunctions, which can't be compiled)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-m", "reproduce.stream_k_study", "--compile-check", json.dumps(cases)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_forced_split_cases_compile_for_sm90():
    """Every kernel (operand copies, beta pre-scale, GEMM, fixup) that test_gpu_forced_splits
    launches, for both variants, compiled for sm_90 without a GPU: the interpreter runs Python,
    not the compiler, so it can't see a kernel that doesn't compile. tiny_n (300x1x200, tile
    64x16x32, grid 6) once failed on the H100 only: N = 1 and C's row stride 1 are specialised as
    constexpr[1], and _fixup_kernel / _scale_tiles_kernel reassigned them (the 16-byte hint)
    inside a runtime ``if`` as int32 ("CompilationError at 15:4: initial value for `N` is of
    type constexpr[1], but the then block redefines it as int32[]")."""
    cases, names = [], []
    for case, (shape, options) in CASES.items():
        for deterministic in (True, False):
            cases.append([*shape, "fp32", 0.5, -1.5, deterministic, {k: str(v) for k, v in options.items()}])
            names.append(f"{case} {'stream_k' if deterministic else 'stream_k_atomic'}")
    # The column/row-vector shapes in the other precisions too (tensor-core dot paths).
    for prec in ("tf32", "tf32x3"):
        for case in ("tiny_m", "tiny_n", "one"):
            shape, options = CASES[case]
            cases.append([*shape, prec, 0.5, -1.5, True, {k: str(v) for k, v in options.items()}])
            names.append(f"{case} {prec} stream_k")
    results = _compile_check(cases)
    failed = {n: [r for r in rows if not r.endswith(": ok")] for n, rows in zip(names, results)}
    failed = {n: r for n, r in failed.items() if r}
    assert not failed, "\n".join(f"{n}: {e}" for n, rows in failed.items() for e in rows)
    # The tiny_n case really launches the kernels that failed: the fixup (deterministic) and the
    # beta pre-scale (atomic), each with N and stride_cm equal to 1.
    assert results[names.index("tiny_n stream_k")][-1] == "_fixup_kernel: ok"
    assert "_scale_tiles_kernel: ok" in results[names.index("tiny_n stream_k_atomic")]


# M > 64 and N <= 127 in fp32, <= 64 in tf32 (NARROW_N_TILES): the width that pads N least, then the most rows
# whose tiles x K-iterations reach 48 per program slot. At 8 SMs a slot is one of 16 (4-warp tiles
# run two an SM), so the bar is 48 * 16 = 768 tile-iterations; each case's sum by hand.
NARROW_N_8_SMS = [
    ((300, 11, 1000), "64x16x32"),      # I = 32; 128 rows: 3 tiles x 32 = 96 < 768
    ((1000, 13, 3100), "128x16x32"),    # I = 97; 128 rows: 8 x 97 = 776 >= 768
    ((77, 27, 300), "32x32x32"),        # I = 10; 64 rows: 2 x 10 = 20
    ((1000, 30, 1600), "64x32x32"),     # I = 50; 64 rows: 16 x 50 = 800; 128 rows: 8 x 50 = 400
    ((1000, 25, 3100), "128x32x32"),    # 128 rows: 8 x 97 = 776
    ((255, 59, 895), "32x64x32"),       # I = 28; 64 rows: 4 x 28 = 112
    ((1000, 45, 1600), "64x64x32"),     # 64 rows: 800; 128 rows: 400
    ((1000, 61, 3100), "128x64x32"),    # 128 rows: 776
    ((1000, 100, 1600), "128x64x32"),   # 100 columns pad to 128 either way: 64 wide; 8 x 2 x 50 = 800
    ((300, 67, 1000), "32x32x32"),      # 67 columns: 96 at 32 wide, 128 at 64; 64 rows: 5 x 3 x 32 = 480
]
_ids = lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else v  # noqa: E731


@pytest.mark.parametrize("shape,tile", NARROW_N_8_SMS, ids=_ids)
def test_fp32_narrow_n_tile(shape, tile):
    assert _plan_config(*shape, "fp32", {"sms": 8})["tile"] == tile


def test_fp32_narrow_n_tile_scope():
    """Only M > 64, and N <= 127 in fp32, <= 64 in tf32: at 132 SMs (264 slots, 12672 tile-iterations)."""
    assert _plan_config(1200, 59, 895, "fp32")["tile"] == "32x64x32"         # 19 x 28 = 532 at 64 rows
    assert _plan_config(13550, 41, 15980, "fp32")["tile"] == "128x64x32"     # 106 x 500 = 53000
    assert _plan_config(3409, 38, 14834, "fp32")["tile"] == "64x64x32"       # 128 rows: 27 x 464 = 12528
    assert _plan_config(1200, 59, 895, "tf32")["tile"] == "32x64x32"         # tf32 up to 64 columns too
    assert _plan_config(1200, 65, 895, "tf32")["tile"] != "32x64x32"         # but not past them (NARROW_WIDE_N)
    assert _plan_config(1200, 128, 895, "fp32")["tile"] != "32x64x32"        # 128 columns: the general table
    assert _plan_config(40, 59, 5000, "fp32")["tile"] == "64x64x16"          # M <= 64: the few-rows tile
    # (K-tiles of 16: a tiny output of 157 K-tiles of 32 over 39 programs, tiny_output_half_k)


# tf32 and tf32x3 at 65-127 columns, M > 64, not a tiny output (NARROW_WIDE_N). At 8 SMs a 4-warp
# tile's slots are 16. tf32: 64x128 once its tile-iterations reach 16 * 16 = 256, else 64x64.
# tf32x3: 64x64 on the tensor cores once its tile-iterations reach 8 * 16 = 128, else fp32's plan
# (FFMA: fp32's narrow tile, 48 * 16 = 768 tile-iterations for more rows); "split": a TF32 split on the
# tensor cores (which one is x3_split_plan's). Each sum by hand. Rows of B not 16-byte aligned
# (odd N or K) keep tf32 off the Gluon GEMM (mode=ws, which takes other tiles) on the GPU.
NARROW_WIDE_8_SMS = [
    ((640, 99, 799), "tf32", "64x64x32", "n/a"),      # 64x128: 10 x 1 x 25 = 250 < 256
    ((640, 99, 801), "tf32", "64x128x32", "n/a"),     # 10 x 1 x 26 = 260
    ((333, 127, 2001), "tf32", "64x128x32", "n/a"),   # 6 x 1 x 63 = 378
    ((300, 70, 500), "tf32x3", "64x64x32", "split"),  # 64x64: 5 x 2 x 16 = 160 >= 128
    ((300, 70, 380), "tf32x3", "32x32x32", "ffma"),   # 5 x 2 x 12 = 120; fp32: 70 columns 32 wide (96 < 128), 64 rows 5 x 3 x 12 = 180 < 768
    ((1000, 65, 1601), "tf32x3", "64x64x32", "split"),  # 16 x 2 x 51
]


def _split_kind(config) -> str:
    return {"n/a": "n/a", "ffma": "ffma"}.get(config["tf32x3_split"], "split")


@pytest.mark.parametrize("shape,precision,tile,split", NARROW_WIDE_8_SMS, ids=_ids)
def test_narrow_wide_tiles(shape, precision, tile, split):
    c = _plan_config(*shape, precision, {"sms": 8})
    assert (c["tile"], _split_kind(c)) == (tile, split), c


def test_narrow_wide_scope():
    """Only 65-127 columns, M > 64, not a tiny output; fp32 keeps NARROW_N_TILES; at 132 SMs (264 slots)."""
    assert _plan_config(1200, 65, 895, "tf32")["tile"] == "64x64x32"        # 64x128: 19 x 28 = 532 < 4224
    assert _plan_config(16504, 76, 603, "tf32")["tile"] == "64x128x32"      # 258 x 19 = 4902 >= 4224
    assert _plan_config(20620, 94, 233, "tf32")["tile"] == "64x64x32"       # 323 x 8 = 2584: not 128x256 any more
    assert _plan_config(1200, 65, 895, "tf32x3")["tf32x3_split"] == "ffma"  # 64x64: 19 x 2 x 28 = 1064 < 2112
    assert _plan_config(4096, 96, 2048, "tf32x3")["tile"] == "64x64x32"     # 64 x 2 x 64 = 8192
    assert _plan_config(1200, 64, 895, "tf32")["tile"] == "32x64x32"        # 64 columns: NARROW_N_TILES
    assert _plan_config(1200, 128, 895, "tf32")["tile"] not in ("64x64x32", "64x128x32")   # the general table
    assert _plan_config(2000, 100, 1600, "fp32")["tile"] == "32x64x32"      # fp32: NARROW_N_TILES (64 rows: 32 x 2 x 50 < 12672)
    assert _plan_config(40, 100, 5000, "tf32")["tile"] == "64x128x32"       # M <= 64: the few-rows tile
    assert _plan_config(40, 100, 1000, "tf32x3")["tf32x3_split"] != "ffma"  # and the split (64x64: 1 x 2 x 32 < 2112)
    assert _plan_config(60, 66, 5000, "tf32")["tile"] != "64x64x32"         # a tiny output (3960, K >= 16 x 66)


# --- GPU ------------------------------------------------------------------------------------

GPU_SHAPES = [(1000, 1000, 1000), (1021, 1021, 1021), (3001, 2999, 3003), (16, 8192, 8192), (4096, 64, 4096),
              (257, 255, 65537), (1, 1, 1), (7, 33, 127), (57, 45, 70001)]


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("precision", PRECISIONS)
def test_gpu_heuristic_shapes(kernel, shape, precision):
    _ok(kernel, Problem(*shape, precision=precision, alpha=0.5, beta=-1.5), "cuda")


@pytest.mark.gpu
@pytest.mark.parametrize("shape,precision,want", [
    ((40, 40, 40000), "tf32", {"b_transpose": "swap", "programs_per_sm": 1}),    # tiny output, <= 64 columns
    ((64, 36, 20004), "tf32", {"b_transpose": "swap", "programs_per_sm": 1}),
    ((30, 128, 9000), "tf32", {"b_transpose": "load", "programs_per_sm": 1}),    # 128 columns: not swapped
    ((384, 384, 2048), "tf32x3", {"tile": "64x64x32"}),                          # tf32x3 few tiles
    ((1021, 1021, 1021), "tf32x3", {"tile": "64x64x32"}),
    ((40, 40, 40000), "tf32x3", {"b_transpose": "swap", "tf32x3_split": "in_loop"}),  # x3_tiny_swap
    ((9, 60, 30004), "tf32x3", {"b_transpose": "swap", "tf32x3_split": "in_loop"}),
    ((40, 40, 40000), "fp32", {"programs_per_sm": 1}),                           # one tile, short K
    ((23, 17, 70001), "tf32x3", {"tf32x3_split": "ffma", "programs_per_sm": 1}),  # fp32's plan, too
    ((215, 12, 8801), "fp32", {"programs_per_sm": 2}),                           # two tiles: two an SM
    ((29, 74, 5772), "fp32", {"tile": "32x128x16"}),                            # K-tiles of 16
    ((43, 71, 48215), "tf32x3", {"tile": "64x128x16", "tf32x3_split": "in_loop"}),
    ((34, 41, 5726), "tf32x3", {"tile": "64x64x16", "tf32x3_split": "ffma"}),
    ((2887, 1025, 210), "fp32", {"tile": "64x64x16", "num_stages": 3}),          # short K
    ((2371, 1362, 126), "tf32x3", {"tile": "128x64x32", "num_stages": 2}),
    ((3094, 2147, 45), "tf32x3", {"tile": "64x64x16", "tf32x3_split": "ffma"}),
], ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_gpu_small_class_plans(shape, precision, want):
    """The small classes' default plans (results/h100/tf32-small/) right against float64, alpha and
    beta included, and the plan the rule names."""
    r = _ok(sk.KERNEL, Problem(*shape, precision=precision, alpha=0.5, beta=-1.5), "cuda")
    assert {k: r.config.get(k) for k in want} == want, r.config
    if precision == "tf32x3":
        assert r.rel_err <= 1e-6, r.rel_err   # fp32-class on the tensor cores too


@pytest.mark.gpu
@pytest.mark.parametrize("case", list(CASES))
def test_gpu_forced_splits(case):
    shape, options = CASES[case]
    for kernel in KERNELS:
        _ok(kernel, Problem(*shape, precision="fp32", alpha=0.5, beta=-1.5), "cuda", **options)


@pytest.mark.gpu
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("shape,tile", NARROW_N_8_SMS, ids=_ids)
def test_gpu_narrow_n_tiles(shape, tile, precision):
    """Each narrow-N tile compiled and checked on odd shapes (8 SMs assumed: stream-K splits too):
    fp32, tf32 up to 64 columns, tf32x3 at 33-64 columns through fp32's plan."""
    if precision != "fp32" and shape[1] > 64:
        pytest.skip("past 64 columns only fp32 takes the narrow tiles")
    if precision == "tf32x3" and shape[1] < 33:
        pytest.skip("tf32x3 keeps the tensor cores' plan under 33 columns")
    r = _ok(sk.KERNEL, Problem(*shape, precision=precision, alpha=0.5, beta=-1.5), "cuda", sms=8)
    assert r.config["tile"] == tile, r.config
    assert r.config["tf32x3_split"] == ("ffma" if precision == "tf32x3" else "n/a")


@pytest.mark.gpu
@pytest.mark.parametrize("shape,precision,tile,split", NARROW_WIDE_8_SMS, ids=_ids)
def test_gpu_narrow_wide_tiles(shape, precision, tile, split):
    """tf32 and tf32x3 at 65-127 columns on their tiles, odd shapes, 8 SMs assumed (stream-K splits
    too), against float64 with alpha and beta."""
    r = _ok(sk.KERNEL, Problem(*shape, precision=precision, alpha=0.5, beta=-1.5), "cuda", sms=8)
    assert (r.config["tile"], _split_kind(r.config)) == (tile, split), r.config
    if precision == "tf32x3":
        assert r.rel_err <= 1e-6, r.rel_err


@pytest.mark.gpu
def test_gpu_deterministic_is_bit_identical():
    torch.manual_seed(0)
    A, B = torch.randn(1000, 4000, device="cuda"), torch.randn(4000, 1000, device="cuda")
    outs = []
    for _ in range(3):
        C = torch.empty(1000, 1000, device="cuda")
        sk.stream_k_matmul(A, B, C)
        outs.append(C)
    assert all(torch.equal(outs[0], o) for o in outs[1:])


@pytest.mark.gpu
def test_gpu_tf32x3_is_fp32_accurate():
    r = run_kernel(sk.KERNEL, Problem(2048, 2048, 2048, precision="tf32x3"), timing=False, device="cuda")
    assert r.status == OK and r.rel_err <= 1e-6, (r.status_text, r.rel_err)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_heuristic_plans_build_for_every_measured_shape(precision):
    """Every shape of the benchmark sets gets a plan (a stale consistency check once turned every
    128x128x16 fp32 pick into an error row on the GPU), with a tile whose block dims are powers
    of two and a grid that covers every tile."""
    from compare.harness.shapes import SETS
    for M, N, K in SETS["all"].shapes + SETS["heldout"].shapes:
        if max(M * K, K * N, M * N) > 2**26:    # operand copies are allocated: stay small
            continue
        A = torch.empty_strided((M, K), (K, 1))
        B = torch.empty_strided((K, N), (N, 1))
        C = torch.empty_strided((M, N), (N, 1))
        plan = sk._Plan(A, B, C, 1.0, 0.0, precision, True, {"sms": 132})
        d = plan.d
        assert d.dp_tiles + d.sk_tiles == d.tiles and d.grid >= 1
        assert (d.sk_programs > 0) == (d.sk_tiles > 0)


def test_fixup_shape_follows_the_partial_count():
    """Many partials per tile: 16 per step over small pieces (more programs pulling); a few:
    short steps over big pieces (fewer programs); a piece never wider than the tile."""
    assert sk.fixup_shape(264, 128, 128) == (16, 4, 64)
    assert sk.fixup_shape(3, 128, 128) == (4, 16, 64)
    assert sk.fixup_shape(2, 128, 128) == (2, 16, 64)
    segs, fm, fn = sk.fixup_shape(40, 16, 32)
    assert segs == 16 and fn == 32 and fm == 8


def test_programs_per_sm_and_the_data_parallel_wave():
    """4-warp tiles run 2 stream-K programs per SM (1 left 6% of warps active at 64x8192x28672);
    a data-parallel wave counts as full on SMs or on program slots (128 tiles on 132 SMs: dp)."""
    tile, d = sk.choose_plan(64, 8192, 28672, "fp32", 132)
    assert tile.warps == 4 and sk.programs_per_sm(tile) == 2 and d.mode == "hybrid" and d.grid == 264
    tile, d = sk.choose_plan(32, 16384, 4096, "tf32", 132)
    assert tile.warps == 4 and d.mode == "dp" and d.grid == 128
    tile, d = sk.choose_plan(128, 4096, 11008, "fp32", 132)
    assert tile.warps == 8 and sk.programs_per_sm(tile) == 1 and d.sk_programs <= 132


def _plan_config(M, N, K, precision, options=None):
    A = torch.empty_strided((M, K), (K, 1))
    B = torch.empty_strided((K, N), (N, 1))
    C = torch.empty_strided((M, N), (N, 1))
    return sk._Plan(A, B, C, 1.0, 0.0, precision, True, {"sms": 132, **(options or {})}).config


def test_fp32_tf32x3_tiny_outputs_of_short_k_run_one_program_per_sm():
    """fp32 and tf32x3 tiny outputs of one tile run one stream-K program per SM while K is at most
    24 K-tiles of 32 for each of the 132 SMs (24 x 32 x 132 = 101376), two past it; outputs of two
    tiles keep two, and tf32 keeps its own rule (results/h200/tiny-short-k/)."""
    for precision in ("fp32", "tf32x3"):
        for M, N in ((40, 40), (9, 10), (60, 60), (23, 17), (33, 120)):
            tile, d = sk.choose_plan(M, N, 101376, precision, 132)
            assert d.tiles == 1 and d.per_sm == 1 and d.grid == 132, (precision, M, N, tile, d)
            tile, d = sk.choose_plan(M, N, 101377, precision, 132)
            assert d.per_sm == 2 and d.grid == 264, (precision, M, N, tile, d)
        tile, d = sk.choose_plan(215, 12, 88248, precision, 132)        # 128-row tiles: two of them
        assert d.tiles == 2 and d.per_sm == 2, (precision, tile, d)
    tile, d = sk.choose_plan(28, 28, 60000, "tf32", 132)                 # tf32 on a 32x32 tile: two
    assert tile.bm * tile.bn < 64 * 32 and d.grid == 264, (tile, d)
    cfg = _plan_config(23, 17, 70001, "tf32x3")                           # fp32's plan (ffma) too
    assert cfg["tf32x3_split"] == "ffma" and cfg["programs_per_sm"] == 1 and cfg["grid"] == 132, cfg
    cfg = _plan_config(23, 17, 70001, "fp32", {"grid": 264})             # a grid the user gives
    assert cfg["grid"] == 264 and cfg["programs_per_sm"] == 2, cfg


def test_fp32_tf32x3_tiny_outputs_of_few_k_tiles_a_program_take_k_tiles_of_16():
    """fp32 and tf32x3 tiny outputs on tiles of at least 64x64 whose programs get at most 12
    K-tiles of 32 run K-tiles of 16 (results/h200/tiny-half-k/). 60x60 on one 64x64 tile at one
    program an SM (132): K-tiles of 32 number cdiv(K, 32); 12 x 132 = 1584 of them is K = 50688."""
    for precision in ("fp32", "tf32x3"):
        tile, d = sk.choose_plan(60, 60, 50688, precision, 132)
        assert (tile.bm, tile.bn, tile.bk) == (64, 64, 16) and d.grid == 132, (precision, tile, d)
        assert d.iters == 50688 // 16
        tile, d = sk.choose_plan(60, 60, 50689, precision, 132)           # 1585 K-tiles: one too many
        assert (tile.bm, tile.bn, tile.bk) == (64, 64, 32), (precision, tile, d)
        # 181 K-tiles of 32 over cdiv(181, 4) - 1 = 45 programs of at least 4 (MIN_SK_ITERS): 16.
        tile, d = sk.choose_plan(29, 74, 5772, precision, 132)
        assert (tile.bm, tile.bn, tile.bk) == (32, 128, 16), (precision, tile, d)
        tile, d = sk.choose_plan(11, 57, 8714, precision, 132)             # a 16x64 tile: 32
        assert tile.bk == 32 and tile.bm * tile.bn < 64 * 64, (precision, tile)
    tile, d = sk.choose_plan(29, 74, 5772, "tf32", 132)                  # tf32 keeps its tile
    assert tile.bk == 32, tile
    tile, d = sk.choose_plan(29, 74, 5772, "fp32", 132, sk_programs=132)  # a grid the user gives
    assert tile.bk == 32, tile
    assert _plan_config(29, 74, 5772, "fp32")["tile"] == "32x128x16"
    assert _plan_config(29, 74, 5772, "fp32", {"tile": "32x128x32/4/3"})["tile"] == "32x128x32"


def test_tf32_tiny_outputs_run_one_program_per_sm():
    """tf32 outputs of at most 64x64 on one tile of 64x64, 64x32 or 32x64: a stream-K program per
    SM (docs/findings.md#tf32-tiny-outputs-one-stream-k-program-per-sm); smaller tiles,
    fp32, outputs past 64 rows and any grid, mode or tile the user gives keep the rule before it."""
    for M, N in ((56, 56), (40, 48), (64, 36), (56, 20), (24, 40), (30, 50)):
        tile, d = sk.choose_plan(M, N, 300000, "tf32", 132)
        assert tile.bm * tile.bn >= 64 * 32 and d.mode == "hybrid" and d.grid == d.sk_programs == 132, (M, N, tile)
        tile, d = sk.choose_plan(M, N, 300000, "fp32", 132)
        assert d.grid == 264, (M, N, tile)
    for M, N in ((36, 16), (28, 28), (17, 30), (16, 24)):       # 64x16, 32x32, 16x32 tiles
        tile, d = sk.choose_plan(M, N, 600000, "tf32", 132)
        assert tile.bm * tile.bn < 64 * 32 and d.grid == 264, (M, N, tile)
    assert sk.choose_plan(65, 64, 300000, "tf32", 132)[1].grid == 264   # a 128-row tile
    assert sk.choose_plan(56, 56, 300000, "tf32", 132, mode="hybrid")[1].grid == 264
    assert sk.choose_plan(56, 56, 300000, "tf32", 132, sk_programs=200)[1].grid == 200
    # Short K: one slot per SM, not a forced grid, so each program keeps MIN_SK_ITERS iterations.
    tile, d = sk.choose_plan(56, 56, 1000, "tf32", 132)
    assert d.sk_programs * sk.MIN_SK_ITERS <= d.iters and d.per_sm == 1, d
    # The run's config says so: one program per SM, and two where an option decided the grid.
    cfg = _plan_config(56, 56, 65536, "tf32")
    assert cfg["grid"] == 132 and cfg["programs_per_sm"] == 1
    cfg = _plan_config(56, 56, 65536, "tf32", {"grid": 264})
    assert cfg["grid"] == 264 and cfg["programs_per_sm"] == 2


# --- b_transpose: how a row-major B reaches the tensor cores (tf32/tf32x3) --------------------

B_TRANSPOSES = ("copy", "load", "swap")


@interpreter
@pytest.mark.parametrize("b_transpose", B_TRANSPOSES)
@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
@pytest.mark.parametrize("case", ["odd_tile_rows", "odd_k_boundaries", "tiny_m", "tiny_n"])
def test_b_transpose_paths(case, precision, b_transpose):
    """Every way of feeding B, on shapes whose splits cut tiles at odd iterations: the swapped
    product holds its accumulator transposed, so a wrong transpose or a swapped edge wrap shows
    up as a failed float64 check (C is NaN-poisoned first)."""
    shape, options = CASES[case]
    r = _ok(sk.KERNEL, Problem(*shape, precision=precision, alpha=0.5, beta=-1.5), "cpu",
            b_transpose=b_transpose, **options)
    want = {"copy": "k_major", "load": "load", "swap": "swap"}[b_transpose]
    assert r.config["b_transpose"] == want, r.config


def _plan(M, N, K, precision, **options):
    A, B, C = (torch.empty_strided(s, (s[1], 1)) for s in ((M, K), (K, N), (M, N)))
    return sk._Plan(A, B, C, 1.0, 0.0, precision, True, {"sms": 132, **options})


@pytest.mark.parametrize("shape,precision,want", [
    ((128, 4096, 11008), "tf32", "swap"),         # the swapped product's headline shape
    ((48, 12288, 4096), "tf32x3", "swap"),
    ((1024, 1024, 16384), "tf32", "swap"),        # 128x128 tiles: swapped up to M = 1024
    ((1024, 1024, 1024), "tf32x3", "k_major"),    # tf32x3 only up to M = 512
    ((1024, 5120, 13824), "tf32", "k_major"),     # 128x256 tiles: lost swapped (0.697 -> 0.825 ms)
    ((4096, 4096, 4096), "tf32", "k_major"),
    ((16, 4096, 4096), "tf32", "load"),           # M <= 32: mma.sync tiles keep their path
    ((127, 8191, 1021), "tf32", "load"),          # N % 4 != 0: no 16-byte loads of B to swap
    ((4096, 64, 4096), "tf32x3", "n/a"),          # <= 64 columns: fp32's plan (tf32x3_split=ffma)
    ((4096, 64, 4096), "tf32", "k_major"),        # the narrow 32x64 tile: no swap (128x64 tiles only)
    ((4096, 64, 16384), "tf32", "swap"),          # 33..64 columns on 128x64 tiles: 32 x 512 tile-iterations
    ((64, 64, 1048576), "tf32", "swap"),          # a tiny output of <= 64 columns (TINY_SWAP_MAX_N)
    ((40, 40, 400000), "tf32", "swap"),
    ((128, 32, 200000), "tf32", "swap"),
    ((32, 128, 65536), "tf32", "load"),           # tiny, but 128 columns: lost swapped
    ((64, 64, 1000), "tf32", "load"),             # K < 16 max(M, N): not a tiny output
    ((64, 64, 1048576), "tf32x3", "swap"),        # tf32x3 too on tiny outputs of <= 64 x 64 (x3_tiny_swap)
    ((64, 64, 1000), "tf32x3", "n/a"),            # K < 16 max(M, N): fp32's plan (tf32x3_split=ffma)
    ((128, 32, 200000), "tf32x3", "load"),        # 128 rows, a tiny output: the tensor cores, unswapped
    ((4096, 16, 4096), "tf32", "k_major"),        # 16 columns: no swap (B^T would fill a quarter of a wgmma)
    ((128, 4096, 11008), "fp32", "n/a"),
])
def test_b_transpose_heuristic(shape, precision, want):
    assert _plan(*shape, precision).config["b_transpose"] == want


def test_b_transpose_option_errors():
    with pytest.raises(UsageError, match="b_transpose applies to tf32"):
        _plan(64, 64, 64, "fp32", b_transpose="swap")
    with pytest.raises(UsageError, match="contradict"):
        _plan(64, 64, 64, "tf32", b_transpose="swap", operands="k_major_b")
    with pytest.raises(ValueError, match="must be one of"):
        sk.KERNEL.parse_options({"b_transpose": "regs"})


def test_swap_keeps_16_byte_copies_for_sm90():
    """The swapped product's ``* one`` is what keeps B's 16-byte async copies: compiled for sm_90,
    1024^3 tf32 reads its row-major B with 4-byte cp.async when loaded as is ("load") and with
    16-byte ones, and no 4-byte one, swapped (without the product the compiler goes back to
    4-byte copies)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    code = ("import json; from triton_kernels import stream_k as sk; from reproduce import stream_k_study as study\n"
            "out = {}\n"
            "for bt in ('load', 'swap'):\n"
            "    specs = [s for s in study.launch_specs(1024, 1024, 1024, 'tf32', 1.0, 0.0, True, {'b_transpose': bt})\n"
            "             if s[0] is sk._stream_k_kernel]\n"
            "    fn, args, ce, w, st = specs[0]\n"
            "    out[bt] = study.ptx_counts(study.compile_sm90(fn, args, ce, w, st).asm['ptx'])\n"
            "print(json.dumps(out))\n")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    counts = json.loads(res.stdout.strip().splitlines()[-1])
    assert counts["load"]["cp.async 4B"] > 0
    assert counts["swap"]["cp.async 4B"] == 0 and counts["swap"]["cp.async 16B"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("b_transpose", B_TRANSPOSES)
@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
@pytest.mark.parametrize("shape", [(1000, 1000, 1000), (48, 4096, 4096), (300, 520, 65537), (7, 33, 127),
                                   (129, 260, 1000)], ids=lambda s: "x".join(map(str, s)))
def test_gpu_b_transpose_paths(shape, precision, b_transpose):
    r = _ok(sk.KERNEL, Problem(*shape, precision=precision, alpha=0.5, beta=-1.5), "cuda", b_transpose=b_transpose)
    if precision == "tf32x3":
        assert r.rel_err <= 1e-6, r.rel_err


# --- sk_align: stream-K ranges that line up across tiles (tf32, operands larger than the L2) ----

@pytest.mark.parametrize("shape,precision,want,grid", [
    ((1024, 1024, 16384), "tf32", "on", 128),     # 64 tiles: 2 ranges each; DRAM 710 -> 145 MB
    ((256, 512, 131072), "tf32", "on", 128),      # 8 tiles x 16
    ((384, 384, 65536), "tf32", "on", 126),       # 9 tiles x 14: 6 programs idle (4.5%)
    ((64, 4096, 65536), "tf32", "on", 256),       # 4-warp tiles: 264 slots, 32 tiles x 8
    ((257, 255, 65537), "tf32", "on", 132),       # 6 tiles x 22: the full grid already lines up
    ((1024, 1024, 16384), "tf32x3", "off", 132),  # tf32x3 / fp32 are not DRAM-bound there
    ((1024, 1024, 16384), "fp32", "off", 132),
    ((512, 1024, 1024), "tf32", "off", 132),      # 6 MB of operands: they stay in L2
    ((128, 4096, 11008), "tf32", "off", 132),     # the one shared operand (A, 5.6 MB) fits in L2
    ((96, 5120, 13824), "tf32", "off", 132),      # 40 tiles: 120 programs would idle 9%
    ((4096, 4096, 4096), "tf32", "n/a", 0),       # data-parallel: no stream-K grid
])
def test_sk_align_heuristic(shape, precision, want, grid):
    cfg = _plan(*shape, precision).config
    assert (cfg["sk_align"], cfg["sk_programs"]) == (want, grid), cfg


def test_aligned_ranges_start_at_the_same_k_offset_in_every_tile():
    """With G = s * T programs (s per tile) and s dividing the iterations, program t*s + c covers
    iterations [c*I/s, (c+1)*I/s) of tile t: the tiles that share A rows / B columns read the same
    K slice at the same time. Without alignment (132 programs) the offsets scatter."""
    tile = sk.Tile(128, 128, 32, 8, 4)
    d = sk.decompose(1024, 1024, 16384, tile, 132, align=True)
    s = d.sk_programs // d.tiles
    assert d.aligned and (d.sk_programs, s) == (128, 2)
    offsets = {d.range_of(g)[0] % d.iters for g in range(d.sk_programs)}
    assert offsets == {c * d.iters // s for c in range(s)}
    plain = sk.decompose(1024, 1024, 16384, tile, 132)
    assert not plain.aligned and len({plain.range_of(g)[0] % plain.iters for g in range(132)}) > 50


def test_aligned_decomposition_covers_every_iteration_once():
    for M, N, K, sms in [(1000, 1000, 20000, 132), (384, 384, 65536, 132), (320, 320, 81920, 132)]:
        d = sk.decompose(M, N, K, sk.Tile(128, 128, 32, 8, 4), sms, align=True)
        assert d.aligned and d.sk_programs % d.tiles == 0
        covered = [i for g in range(d.sk_programs) for i in range(*d.range_of(g))]
        assert covered == list(range(d.sk_tiles * d.iters))
        assert all(hi // d.iters - lo // d.iters < d.max_segments
                   for lo, hi in map(d.range_of, range(d.sk_programs)))


def test_sk_align_option():
    cfg = _plan(1024, 1024, 16384, "tf32", sk_align="off").config
    assert (cfg["sk_align"], cfg["sk_programs"]) == ("off", 132)
    assert cfg["chosen_by"] == "user (sk_align, sms), heuristic (the rest)"
    cfg = _plan(1024, 1024, 16384, "fp32", sk_align="on").config
    assert (cfg["sk_align"], cfg["sk_programs"]) == ("on", 128)
    # Alignment asks for stream-K even where the heuristic would run data-parallel (1024^3 tf32).
    cfg = _plan(1024, 1024, 1024, "tf32", sk_align="on").config
    assert (cfg["decomposition"], cfg["sk_align"]) == ("hybrid", "on"), cfg
    with pytest.raises(UsageError, match="contradict"):
        _plan(1024, 1024, 16384, "tf32", sk_align="on", grid=100)
    with pytest.raises(UsageError, match="contradict"):
        _plan(1024, 1024, 16384, "tf32", sk_align="on", mode="dp")
    with pytest.raises(ValueError, match="must be one of"):
        sk.KERNEL.parse_options({"sk_align": "maybe"})


@interpreter
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
def test_sk_align_paths(kernel, precision):
    """Forced alignment on a small shape: 6 tiles of 64x64, 38 iterations each (K = 600: a masked
    tail), 25 SMs assumed with 2 slots each (4-warp tile): 48 programs, 8 per tile, ranges of 4-5
    iterations."""
    r = _ok(kernel, Problem(130, 70, 600, precision=precision, alpha=0.5, beta=-1.5), "cpu",
            tile="64x64x16", sms=25, sk_align="on")
    assert (r.config["sk_align"], r.config["sk_programs"], r.config["tiles"]) == ("on", 48, 6), r.config


@pytest.mark.gpu
@pytest.mark.parametrize("sk_align", ["on", "off"])
@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
@pytest.mark.parametrize("shape", [(1000, 1000, 20000), (384, 384, 65536), (257, 255, 65537)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gpu_sk_align(shape, precision, sk_align):
    r = _ok(sk.KERNEL, Problem(*shape, precision=precision, alpha=0.5, beta=-1.5), "cuda", sk_align=sk_align)
    assert r.config["sk_align"] == sk_align, r.config
    if precision == "tf32x3":
        assert r.rel_err <= 1e-6, r.rel_err


# ---------------------------------------------------------------------------------------------
# tf32x3 with the TF32 big/small split taken out of the K loop (option tf32x3_split).

X3_SPLITS = ("in_loop", "a", "b", "ab", "ffma")


@pytest.mark.parametrize("shape,want", [
    ((4096, 4096, 4096), "ab"),        # ab the fastest (docs/findings.md#tf32x3-the-split-out-of-the-loop-tf32x3_split)
    ((1024, 13824, 5120), "ab"),
    ((2048, 2048, 2048), "b"),         # ab lost to b below N = 4096 (A's copy)
    ((1024, 1024, 1024), "b"),
    ((3001, 2999, 3003), "b"),
    ((1000, 1000, 20000), "in_loop"),  # long K: the split lost (0.594 -> 0.650 ms)
    ((127, 8191, 1021), "in_loop"),    # few rows: the copy's extra bytes lost (0.087 -> 0.104)
    ((257, 255, 65537), "in_loop"),
    ((512, 12288, 4096), "a"),         # swapped product: A^T split by a copy (0.748 -> 0.636 ms)
    ((128, 4096, 11008), "a"),
    ((64, 4096, 65536), "in_loop"),    # swapped, long K: a lost (0.561 -> 0.636)
    ((4096, 64, 4096), "ffma"),        # <= 64 columns: fp32's plan (the swapped "a" lost: 0.057 -> 0.149)
    ((16, 8192, 8192), "in_loop"),     # mma.sync tiles: both operands in registers already
])
def test_tf32x3_split_heuristic(shape, want):
    plan = _plan(*shape, "tf32x3")
    assert plan.config["tf32x3_split"] == want, plan.config
    assert ("+split" in plan.config["operands"].split(", ")[1]) == (want in ("b", "ab"))
    assert ("+split" in plan.config["operands"].split(", ")[0]) == (want in ("a", "ab"))
    assert (plan.config["b_transpose"] == "swap") == (want == "a" or shape == (64, 4096, 65536))
    assert _plan(*shape, "tf32").config["tf32x3_split"] == "n/a"


@pytest.mark.parametrize("shape,ffma", [
    ((64, 64, 1023), True), ((1, 1, 1), True), ((33, 29, 600000), True), ((8, 64, 100000), True),
    ((48, 48, 262144), False), ((16, 40, 600000), False), ((64, 64, 1024), False), ((9, 64, 100000), False),
    ((65, 64, 100000), True), ((64, 65, 100000), False), ((8, 32768, 8192), False), ((4096, 4096, 4096), False),
])
def test_tf32x3_on_tiny_outputs_runs_fp32s_plan(shape, ffma):
    """At most 64 columns (outputs of at most 64x64: <= 16 flops per byte; more rows: fp32's narrow
    tiles, NARROW_N_TILES): tf32x3 takes fp32's plan with IEEE dots, and the config says so, except the tiny outputs (K >= 16 max(M, N), more than 8 columns) whose
    B can be read N-major for the swapped product (N % 4 == 0): those swap on the tensor cores
    (x3_tiny_swap, from 9 rows; 33x29x600000 can't swap; K = 1023 < 16 x 64 is not a tiny output);
    wider ones keep the tensor cores."""
    plan = _plan(*shape, "tf32x3")
    assert (plan.config["tf32x3_split"] == "ffma") == ffma, plan.config
    assert (plan.config["input_precision"] == "ieee") == ffma
    if ffma:
        fp32 = _plan(*shape, "fp32").config
        assert {k: v for k, v in plan.config.items() if k != "tf32x3_split"} == \
            {k: v for k, v in fp32.items() if k != "tf32x3_split"}
    # Forced on a large output, or refused beside a tensor-core option.
    assert _plan(1024, 1024, 1024, "tf32x3", tf32x3_split="ffma").config["input_precision"] == "ieee"
    with pytest.raises(UsageError, match="contradict"):
        _plan(*shape, "tf32x3", tf32x3_split="ffma", b_transpose="swap")
    # A tensor-core option or a tile given: the user's plan, not the fallback.
    assert _plan(*shape, "tf32x3", tf32x3_split="in_loop").config["input_precision"] == "tf32x3"
    assert _plan(*shape, "tf32x3", tile="32x32x32").config["input_precision"] == "tf32x3"
    if shape in ((48, 48, 262144), (16, 40, 600000), (64, 64, 1024), (9, 64, 100000)):
        assert plan.config["b_transpose"] == "swap" and plan.config["tf32x3_split"] == "in_loop", plan.config


def test_tf32x3_split_copy_bytes():
    """A split copy writes both parts: 12 bytes per element of the operand instead of 8."""
    M, N, K = 1024, 1000, 1024
    b = _plan(M, N, K, "tf32x3", tf32x3_split="b").config["operand_copy_bytes"]
    ab = _plan(M, N, K, "tf32x3", tf32x3_split="ab").config["operand_copy_bytes"]
    in_loop = _plan(M, N, K, "tf32x3", tf32x3_split="in_loop").config["operand_copy_bytes"]
    assert in_loop == 8 * K * N and b == 12 * K * N and ab == 12 * K * N + 12 * M * K


def test_tf32x3_split_option_errors():
    with pytest.raises(UsageError, match="applies to precision tf32x3"):
        _plan(64, 64, 64, "tf32", tf32x3_split="b")
    with pytest.raises(UsageError, match="contradict"):
        _plan(1024, 1024, 1024, "tf32x3", tf32x3_split="b", b_transpose="swap")
    with pytest.raises(UsageError, match="contradict"):
        _plan(1024, 1024, 1024, "tf32x3", tf32x3_split="ab", operands="as_given")
    with pytest.raises(UsageError, match="contradicts b_transpose=copy"):
        _plan(256, 4096, 4096, "tf32x3", tf32x3_split="a", b_transpose="copy")
    with pytest.raises(UsageError, match="needs the swapped product"):
        # B given K-major (X.t()) and read as given: no N-major B to swap with.
        A, X, C = torch.empty(256, 512), torch.empty(4096, 512), torch.empty(256, 4096)
        sk._Plan(A, X.t(), C, 1.0, 0.0, "tf32x3", True, {"sms": 132, "tf32x3_split": "a", "operands": "direct"})
    with pytest.raises(ValueError, match="must be one of"):
        sk.KERNEL.parse_options({"tf32x3_split": "ba"})
    # b implies a K-major copy of B even where the heuristic would swap.
    plan = _plan(256, 4096, 4096, "tf32x3", tf32x3_split="b")
    assert plan.config["b_transpose"] == "k_major" and plan.config["tf32x3_split"] == "b"
    # a implies the swapped product even where the heuristic would copy B K-major.
    plan = _plan(1024, 1024, 1024, "tf32x3", tf32x3_split="a")
    assert plan.config["b_transpose"] == "swap" and plan.config["operands"].startswith("A copy:k_major+split")


@interpreter
def test_tf32_split_parts():
    """The split copy's parts: big is a TF32 value (13 low mantissa bits clear) rounded to
    nearest, big + small carries x to 2^-22, and a non-finite x has a zero small part."""
    from triton_kernels import _operands as ops
    g = torch.Generator().manual_seed(3)
    x = torch.randn(70, 90, generator=g) * torch.exp2(torch.randint(-20, 20, (70, 90), generator=g).float())
    x[0, :4] = torch.tensor([float("inf"), float("-inf"), 0.0, -0.0])
    big = torch.full((90, 70), float("nan"))
    small = torch.full((90, 70), float("nan"))
    ops.transpose_into(x, big, small)
    big, small = big.t(), small.t()
    assert ((big.view(torch.int32) & 0x1FFF) == 0).all()
    fin = torch.isfinite(x)
    xd = x.double()
    # Round to nearest: no other TF32 value (big +- one TF32 ulp) is closer to x.
    ulp = torch.exp2(torch.floor(torch.log2(big.double().abs().clamp_min(1e-30))) - 10)
    assert ((xd - big.double()).abs() <= ulp / 2 + 1e-300)[fin & (x != 0)].all()
    rel = ((big.double() + small.double() - xd).abs() / xd.abs().clamp_min(1e-30))[fin & (x != 0)]
    assert rel.max().item() <= 2.0 ** -21
    assert torch.equal(big[0, :2], x[0, :2]) and (small[0, :4] == 0).all()


@interpreter
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("x3_split", X3_SPLITS)
@pytest.mark.parametrize("case", ["odd_tile_rows", "odd_k_boundaries", "k_below_one_block", "hybrid"])
def test_tf32x3_split_paths(kernel, case, x3_split):
    """Each split path through the stream-K ranges, the masked K tail and alpha/beta, checked
    against float64 (C NaN-poisoned first)."""
    shape, options = CASES[case]
    r = _ok(kernel, Problem(*shape, precision="tf32x3", alpha=0.5, beta=-1.5), "cpu",
            tf32x3_split=x3_split, **options)
    assert r.config["tf32x3_split"] == x3_split
    assert r.rel_err <= 1e-6, r.rel_err


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.name)
@pytest.mark.parametrize("x3_split", X3_SPLITS)
@pytest.mark.parametrize("shape", [(1000, 1000, 1000), (2039, 2039, 2039), (1030, 4100, 777), (300, 520, 65537),
                                   (4096, 4096, 4096)], ids=lambda s: "x".join(map(str, s)))
def test_gpu_tf32x3_split(kernel, shape, x3_split):
    """fp32 accuracy (rel. error <= 1e-6 against float64) on every split path, odd shapes and a
    K tail included, and the error does not grow with K (300x520x65537)."""
    r = _ok(kernel, Problem(*shape, precision="tf32x3", alpha=0.5, beta=-1.5), "cuda", tf32x3_split=x3_split)
    assert r.config["tf32x3_split"] == x3_split
    if x3_split == "ffma":
        # No split: fp32's plan and IEEE dots, so fp32's error (1.4e-6 at 4096^3), not the split's.
        f = _ok(kernel, Problem(*shape, precision="fp32", alpha=0.5, beta=-1.5), "cuda")
        assert r.config["input_precision"] == "ieee" and r.rel_err <= 1.5 * f.rel_err, (r.rel_err, f.rel_err)
        return
    assert r.rel_err <= 1e-6, r.rel_err


# --- unaligned operands: the row copy, which operand to copy, the lanes of 4-byte loads --------


@interpreter
def test_row_copy_aligns_rows_and_zeroes_the_padding():
    """An operand copied only to align its rows (src and dst contiguous along the same axis)
    goes through _copy_rows_kernel: dst holds src exactly, the padding columns up to the
    leading dimension are 0 (NaN before), and the TF32 split gives the same parts as the
    transposing copy."""
    from triton_kernels import _operands as ops
    torch.manual_seed(5)
    Y = torch.randn(37, 31)[:, :29]                        # 37 rows of 29, row stride 31: unaligned
    full = torch.full((37, 32), float("nan"))
    ops.transpose_into(Y.t(), full[:, :29])
    assert torch.equal(full[:, :29], Y) and (full[:, 29:] == 0).all()
    big, small = torch.full((37, 32), float("nan")), torch.full((37, 32), float("nan"))
    ops.transpose_into(Y.t(), big[:, :29], small[:, :29])
    big_t, small_t = torch.full((37, 32), float("nan")), torch.full((37, 32), float("nan"))
    ops.transpose_into(Y.t().contiguous(), big_t[:, :29], small_t[:, :29])     # the transposing path
    assert torch.equal(big[:, :29], big_t[:, :29]) and torch.equal(small[:, :29], small_t[:, :29])
    assert (big[:, 29:] == 0).all() and (small[:, 29:] == 0).all()


@interpreter
@pytest.mark.parametrize("first_rows,second_rows", [(True, False), (False, True), (True, True), (False, False)])
def test_two_copies_in_one_launch(first_rows, second_rows):
    """transpose_pair_into writes what two transpose_into calls write, each copy's programs after
    the other's (a row copy or a transpose, the second split into TF32 parts), with uneven program
    counts on each side, every element of both destinations from NaN."""
    from triton_kernels import _operands as ops
    torch.manual_seed(11)

    def job(rows, R, S, split):
        # A row copy: src contiguous along R (src^T's rows unaligned, S rows of R); a transpose:
        # src contiguous along S. dst: S x R, leading dimension R rounded up to 16 (_buffer's).
        src = torch.randn(S, R + 3)[:, :R].t() if rows else torch.randn(R, S)
        ld = (R + 15) // 16 * 16
        make = lambda: torch.full((S, ld), float("nan"))[:, :R]   # noqa: E731
        return src, make(), (make() if split else None)

    first, second = job(first_rows, 37, 70, False), job(second_rows, 150, 29, True)
    ops.transpose_pair_into(first, second)
    for src, dst, small in (first, second):
        want, want_small = torch.full_like(dst, float("nan")), None if small is None else torch.full_like(dst, float("nan"))
        ops.transpose_into(src, want, want_small)
        assert not dst.isnan().any() and torch.equal(dst, want)
        if small is not None:
            assert not small.isnan().any() and torch.equal(small, want_small)


def test_row_copy_for_same_orientation_copies_stores_16_bytes_for_sm90():
    """257x255x65537 with both operands copied: A's K-major and B's N-major copies only re-align
    rows, so both are row copies (no transpose), in one launch (_copy_pair_kernel), while the
    M-major copy of A at 127x8191x1021 is a real transpose. The row copy's loads are 4-byte (its
    source rows are unaligned), its stores 16-byte (whole padded rows), with no exchange through
    shared memory; compiled for sm_90 without a GPU (launch_specs records the launches; not under
    the interpreter)."""
    code = ("import json, re; from reproduce import stream_k_study as study\n"
            "specs = study.launch_specs(257, 255, 65537, 'fp32', 1.0, 0.0, True, {'operands': 'copy'})\n"
            "names = [s[0].__name__ for s in specs]\n"
            "specs_m = study.launch_specs(127, 8191, 1021, 'fp32', 1.0, 0.0, True, {'operands': 'copy'})\n"
            "ptx = study.compile_sm90(*specs[0]).asm['ptx']\n"
            "print(json.dumps(dict(study.ptx_counts(ptx), shared=len(re.findall(r'(?:ld|st)\\.shared', ptx)),"
            " names=names, rows=[specs[0][2][k] for k in ('ROWS1', 'ROWS2')],"
            " names_m=[s[0].__name__ for s in specs_m], rows_m=[specs_m[0][2][k] for k in ('ROWS1', 'ROWS2')])))\n")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    counts = json.loads(out.stdout.strip().splitlines()[-1])
    assert counts["names"][:2] == ["_copy_pair_kernel", "_stream_k_kernel"] and counts["rows"] == [True, True]
    assert counts["names_m"][:2] == ["_copy_pair_kernel", "_stream_k_kernel"] and counts["rows_m"] == [False, True]
    assert counts["st.global.v4"] > 0 and counts["st.global.b32"] == 0 and counts["shared"] == 0
    assert counts["ld.global.b32"] > 0


def test_unaligned_loads_walk_the_contiguous_axis():
    """Fails without the lane-order fix in _tile_partial. An operand read as given with rows
    that are not 16-byte aligned (N = 8191, 255) is loaded 4 bytes at a time; its offsets wrap
    (% N), which hid that they run consecutively along N, and the compiler then ordered the
    lanes of B's loads along K, one row per lane (127x8191x1021 fp32 ran 2.2x slower,
    results/h100/explore/round10-11). Compiled for sm_90 without a GPU: every tile load's lanes
    walk the operand's contiguous axis (A: K, B: N), for FFMA and for the tensor cores."""
    cases = [[127, 8191, 1021, "fp32", {"operands": "as_given", "tile": "64x128x16/4/4"}],
             [127, 8191, 1021, "fp32", {}],
             [257, 255, 65537, "tf32", {"operands": "as_given", "b_transpose": "load"}]]
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-m", "reproduce.stream_k_study", "--load-lanes", json.dumps(cases)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lanes = json.loads(out.stdout.strip().splitlines()[-1])
    assert lanes[0] == {"a": ["k"], "b": ["n"]}
    assert lanes[1] == {"a": ["m"], "b": ["n"]}            # A through its M-major copy, B as given
    assert lanes[2] == {"a": ["k"], "b": ["n"]}


@pytest.mark.parametrize("shape,tile,mode", [
    ((127, 8191, 1021), sk.FP32_FEW_ROWS_TILE, "dp"),      # 64 tiles of 128x128: 128 of 64x128, one wave
    ((1000, 1000, 1000), sk.FP32_FEW_ROWS_TILE, "dp"),
    ((128, 4096, 11008), sk.Tile(128, 128, 16, 8, 4), "hybrid"),  # 64-row tiles would not fill a wave
    ((2048, 2048, 2048), sk.Tile(128, 128, 16, 8, 4), "dp"),  # a wave or more of 128x128 tiles
    ((257, 255, 65537), sk.FP32_FEW_ROWS_TILE, "hybrid"),      # long K, 320 padded rows instead of 384
    ((256, 256, 131072), sk.Tile(128, 128, 32, 8, 3), "hybrid"),  # long K, no padding either way
    ((1000, 1000, 20000), sk.Tile(128, 128, 32, 8, 3), "hybrid"),
])
def test_fp32_few_rows_tile(shape, tile, mode):
    t, d = sk.choose_plan(*shape, "fp32", 132)
    assert (t, d.mode) == (tile, mode)


@pytest.mark.parametrize("shape,precision,tile", [
    ((800, 2400, 4500), "fp32", sk.FP32_FEW_TILES_TILE),     # 133 tiles of 128x128: a wave and one
    ((3500, 560, 320), "fp32", sk.FP32_FEW_TILES_TILE),
    ((2000, 1700, 2000), "fp32", sk.Tile(128, 128, 16, 8, 4)),  # 224 tiles: 128x128 as before
    ((768, 5120, 13824), "fp32", sk.Tile(128, 128, 16, 8, 4)),  # K >= 8192, 768 rows: no padding
    # 128-row tiles 17% / 7.4% empty: 64x256 ones fill 17 / 7 points more
    # (results/h100/explore/round16); 6% empty with 64-row tiles no better, and nothing padded: 128x128.
    ((320, 4096, 11008), "fp32", sk.FP32_PAD_TILE),
    ((830, 5000, 3000), "fp32", sk.FP32_PAD_TILE),
    ((768, 5120, 13824), "fp32", sk.Tile(128, 128, 16, 8, 4)),
    ((2048, 4096, 4096), "fp32", sk.Tile(128, 128, 16, 8, 4)),
    ((1537, 2049, 1023), "tf32", sk.TF32_MID_TILE),           # 429 tiles of 128x64: data-parallel
    ((1200, 170, 4000), "tf32", sk.Tile(128, 128, 32, 8, 4)),  # 30 tiles of 128x64: not a wave
    ((1024, 1024, 1024), "tf32", sk.TF32_MID_TILE),           # 128 tiles of 128x64: a wave, dp
    ((3500, 560, 320), "tf32", sk.TF32_MID_TILE),
    # tf32x3 keeps 128x128 where 64x64 pads less: the held-out A/B (300x8192x28672: 142% of
    # cuBLAS fp32 with 128x128, 111% with 64x64; results/h100/ab-tile-rules/)
    ((1200, 170, 4000), "tf32x3", sk.Tile(128, 128, 32, 8, 3)),
    ((300, 8192, 28672), "tf32x3", sk.Tile(128, 128, 32, 8, 3)),
    ((4096, 4096, 4096), "tf32x3", sk.Tile(128, 128, 32, 8, 3)),
    # tf32x3 small problems (K <= 2048) under half a wave of 128x128 (< 66 tiles), both sides over
    # 128: 64x64 (results/h100/tf32-small/); 128 rows or columns, 66 tiles or K > 2048 keep 128x128
    ((384, 384, 2048), "tf32x3", sk.Tile(64, 64, 32, 4, 3)),
    ((1024, 1024, 1024), "tf32x3", sk.Tile(64, 64, 32, 4, 3)),   # 64 tiles
    ((129, 4096, 2048), "tf32x3", sk.Tile(64, 64, 32, 4, 3)),    # 2 x 32 tiles, both sides over 128
    ((128, 4096, 2048), "tf32x3", sk.Tile(128, 128, 32, 8, 3)),
    ((4096, 128, 2048), "tf32x3", sk.Tile(128, 128, 32, 8, 3)),
    ((1100, 1024, 1024), "tf32x3", sk.Tile(128, 128, 32, 8, 3)),  # 9 x 8 = 72 tiles
    ((384, 384, 2049), "tf32x3", sk.Tile(128, 128, 32, 8, 3)),
    ((384, 384, 2048), "tf32", sk.Tile(128, 128, 32, 8, 4)),      # tf32x3's rule only
])
def test_tiles_for_few_tiles_and_padding(shape, precision, tile):
    # the rules measured on tunable shapes (scratch exploration, docs/findings.md "Few tiles")
    t, _ = sk.choose_plan(*shape, precision, 132)
    assert t == tile


def test_tf32x3_takes_fp32s_plan_at_33_to_64_columns():
    """tf32x3 with 33-64 columns runs fp32's plan (FFMA, no split) at any row count, its narrow
    tile included; 32 or 65 columns keep the split on the tensor cores."""
    c = _plan_config(1200, 59, 895, "tf32x3")
    assert (c["tf32x3_split"], c["input_precision"], c["tile"]) == ("ffma", "ieee", "32x64x32")
    c = _plan_config(20000, 33, 4000, "tf32x3")
    assert (c["tf32x3_split"], c["tile"]) == ("ffma", "128x64x32")       # 157 x 125 = 19625 >= 12672
    for n, m in ((32, 1200), (65, 4000)):   # 65 columns: 63 x 2 x 28 = 3528 >= 2112 (NARROW_WIDE_N)
        c = _plan_config(m, n, 895, "tf32x3")
        assert c["tf32x3_split"] != "ffma" and c["input_precision"] == "tf32x3"
    assert _plan_config(1200, 59, 895, "tf32x3", {"tile": "128x64x32"})["tf32x3_split"] != "ffma"  # a user tile


def test_copy_a_and_copy_b():
    """operands=copy_a / copy_b copy one operand (where it needs it) and never the other; the
    combinations that need the other copy are refused before any GPU work."""
    plan = _plan(257, 255, 65537, "fp32", operands="copy_a")
    assert plan.config["operands"] == "A copy:k_major, B direct:4-byte"
    plan = _plan(257, 255, 65537, "fp32", operands="copy_b")
    assert plan.config["operands"] == "A direct:4-byte, B copy:n_major"
    plan = _plan(2048, 2048, 2048, "fp32", operands="copy_b")       # aligned: nothing to copy
    assert plan.config["operands"] == "A direct, B direct"
    # The row records who chose: any option the user set, operands included.
    assert plan.config["chosen_by"] == "user (operands, sms), heuristic (the rest)"
    A, B, C = torch.empty(64, 64), torch.empty(64, 64), torch.empty(64, 64)
    assert sk._Plan(A, B, C, 1.0, 0.0, "fp32", True, {}).config["chosen_by"] == "heuristic"
    for options in ({"operands": "copy_a", "b_transpose": "copy"}, {"operands": "copy_a", "tf32x3_split": "b"},
                    {"operands": "copy_b", "tf32x3_split": "ab"}, {"operands": "copy_b", "tf32x3_split": "a"}):
        with pytest.raises(UsageError, match="contradict"):
            _plan(1024, 1024, 1024, "tf32x3", **options)


@interpreter
@pytest.mark.parametrize("operands", ["copy_a", "copy_b"])
@pytest.mark.parametrize("precision", PRECISIONS)
def test_copy_a_copy_b_paths(operands, precision):
    """Either operand copied, the other read with 4-byte loads, through stream-K ranges and the
    K tail, against float64 (C NaN-poisoned)."""
    _, options = CASES["odd_k_boundaries"]
    r = _ok(sk.KERNEL, Problem(65, 33, 999, precision=precision, alpha=0.5, beta=-1.5), "cpu", operands=operands,
            **options)
    assert r.config["operands"].count("copy") == 1 and r.config["operands"].count("4-byte") == 1


@pytest.mark.gpu
@pytest.mark.parametrize("operands", ["auto", "copy_a", "copy_b", "as_given"])
@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("shape", [(127, 8191, 1021), (257, 255, 65537), (1021, 1021, 1021), (33, 1001, 999)],
                         ids=lambda s: "x".join(map(str, s)))
def test_gpu_unaligned_operands(shape, precision, operands):
    """Unaligned rows read as given (4-byte loads, lanes along the contiguous axis) or copied."""
    _ok(sk.KERNEL, Problem(*shape, precision=precision), "cuda", operands=operands)


def test_stage_kernels_load_unaligned_b_along_n():
    """Fails without _gemm.wrapped_range's max_contiguous: triton.tiled and triton.split_k at
    1000^3 fp32 (N = 1000, not a multiple of 16) loaded B's rows with one row per lane, the
    lanes walking K; at 1024^3 they walked N. Compiled for sm_90 without a GPU."""
    code = '''if True:
        import json, torch
        from triton_kernels import _gemm, tiled, split_k; from reproduce import stream_k_study as study
        out = []
        for n in (1024, 1000):
            A, B, C = torch.empty(n, n), torch.empty(n, n), torch.empty(n, n)
            common = dict(a_ptr=A, b_ptr=B, c_ptr=C, M=n, N=n, K=n, stride_am=n, stride_ak=1, stride_bk=n,
                          stride_bn=1, stride_cm=n, stride_cn=1, alpha=1.0, beta=0.0)
            tiles = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, EVEN_K=n % 32 == 0)
            ks = [(_gemm.bare(tiled._tiled_kernel), common, dict(PRECISION="ieee", HAS_BETA=False, **tiles)),
                  (_gemm.bare(split_k._split_k_kernel), dict(common, w_ptr=C, K_CHUNK=256),
                   dict(PRECISION="ieee", MODE=1, HAS_BETA=False, **tiles))]
            for fn, args, ce in ks:
                ttgir = study.compile_sm90(fn, args, ce, 8, 3).asm["ttgir"]
                out.append({k: sorted(v) for k, v in study.load_lanes(ttgir, 128, 128, 32).items()})
        print(json.dumps(out))
'''
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    lanes = json.loads(out.stdout.strip().splitlines()[-1])
    assert lanes == [{"a": ["k"], "b": ["n"]}] * 4


@pytest.mark.parametrize("options, precision", [
    ({"grid": 4, "mode": "dp"}, "fp32"), ({"grid": 4, "sk_align": "off"}, "fp32"),
    ({"mode": "dp", "sk_align": "on"}, "fp32"), ({"b_transpose": "swap"}, "fp32"),
    ({"b_transpose": "load", "operands": "k_major_b"}, "tf32"), ({"b_transpose": "copy", "operands": "as_given"}, "tf32"),
    ({"tf32x3_split": "b"}, "tf32"), ({"tf32x3_split": "ab", "b_transpose": "swap"}, "tf32x3"),
    ({"tf32x3_split": "b", "operands": "copy_a"}, "tf32x3"), ({"tf32x3_split": "ab", "operands": "copy_b"}, "tf32x3"),
    ({"tf32x3_split": "a", "b_transpose": "load"}, "tf32x3"), ({"tf32x3_split": "a", "operands": "k_major_b"}, "tf32x3"),
    ({"tf32x3_split": "ffma", "b_transpose": "copy"}, "tf32x3"),
    ({"ws_tile": "128x128", "mode": "dp"}, "tf32"), ({"mode": "ws"}, "fp32"), ({"mode": "ws", "grid": 4}, "tf32"),
])
def test_every_declared_conflict_refuses(options, precision):
    """The plan's option table (stream_k_plan.CONFLICTS): each row refuses its option set, and
    exactly one row matches each example (the table has no dead or overlapping rows here)."""
    from triton_kernels import stream_k_plan as plan
    o = {k: options.get(k, d) for k, d in plan.DEFAULTS.items()}
    assert sum(bool(when(o, precision)) for when, _ in plan.CONFLICTS) == 1
    with pytest.raises(UsageError, match="contradict|applies to"):
        plan.resolve_options(options, precision)


def test_implications_complete_the_options():
    from triton_kernels import stream_k_plan as plan
    assert plan.resolve_options({"grid": 4}, "fp32")["mode"] == "hybrid"
    assert plan.resolve_options({"sk_align": "on"}, "tf32")["mode"] == "hybrid"
    assert plan.resolve_options({"tf32x3_split": "b"}, "tf32x3")["b_transpose"] == "copy"
    assert plan.resolve_options({"tf32x3_split": "a"}, "tf32x3")["b_transpose"] == "swap"
    assert plan.resolve_options({}, "fp32") == plan.DEFAULTS
    assert len(plan.CONFLICTS) == 23   # mode=gemv / mode=skinny at tf32 are allowed (TF32-truncated inputs on FFMA)
    assert plan.resolve_options({"ws_tile": "128x128"}, "tf32")["mode"] == "ws"
    assert plan.resolve_options({"skinny_splits": 2}, "fp32")["mode"] == "skinny"
    assert plan.resolve_options({"skinny_tile": "32x64"}, "tf32x3")["tf32x3_split"] == "ffma"


def test_small_and_mid_problems_of_short_k_take_smaller_tiles():
    """K <= 512, 512K to 8M elements of C, both sides at least 128 (results/h200/short-k-small/):
    fp32's 128x128x16/8/4 and 64x128x16/4/4 run 64x64x16/4/3, tf32x3's 128x128x32/8/3 128x64x32/4/2
    (past 512 rows, where it is not swapped), and tf32x3 of K <= 52 fp32's plan. Bounds by hand:
    2048 x 2048 = 4M, 4096 x 2048 = 8 x 1024 x 1024, 1024 x 512 = 512 x 1024."""
    def tile(M, N, K, precision, options=None):
        c = _plan_config(M, N, K, precision, options)
        return f"{c['tile']}/{c['num_warps']}/{c['num_stages']}", c["tf32x3_split"]
    assert tile(2048, 2048, 512, "fp32") == ("64x64x16/4/3", "n/a")
    assert tile(2048, 2048, 513, "fp32") == ("128x128x16/8/4", "n/a")          # K past 512
    assert tile(4096, 2048, 200, "fp32") == ("64x64x16/4/3", "n/a")
    assert tile(4097, 2048, 200, "fp32") == ("128x128x16/8/4", "n/a")          # C past 8M
    assert tile(1024, 512, 100, "fp32") == ("64x64x16/4/3", "n/a")             # FP32_FEW_ROWS_TILE's
    assert tile(1024, 511, 100, "fp32") == ("64x128x16/4/4", "n/a")            # C under 512K
    assert tile(128, 8192, 100, "fp32") == ("64x64x16/4/3", "n/a")
    assert tile(127, 8192, 100, "fp32") == ("64x128x16/4/4", "n/a")            # a side under 128
    assert tile(2048, 2048, 512, "tf32x3") == ("128x64x32/4/2", "b")
    assert tile(2048, 2048, 513, "tf32x3") == ("128x128x32/8/3", "b")
    assert tile(513, 8192, 100, "tf32x3")[0] == "128x64x32/4/2"
    assert tile(512, 8192, 100, "tf32x3")[0] == "128x128x32/8/3"               # swapped: not measured
    assert tile(2048, 256, 100, "tf32x3") == ("64x64x32/4/3", "b")             # X3_FEW_TILES_TILE stays
    assert tile(4096, 2048, 52, "tf32x3") == ("64x64x16/4/3", "ffma")          # fp32's plan
    assert tile(4096, 2048, 53, "tf32x3") == ("128x64x32/4/2", "b")
    assert tile(4097, 2048, 40, "tf32x3") == ("128x128x32/8/3", "b")           # C past 8M
    assert tile(4096, 2048, 52, "tf32")[0] == "128x256x32/8/3"                 # tf32 keeps its table
    # What the user gives stands.
    assert tile(2048, 2048, 200, "fp32", {"tile": "128x128x16/8/4"})[0] == "128x128x16/8/4"
    assert tile(2048, 2048, 40, "tf32x3", {"tf32x3_split": "b"}) == ("128x64x32/4/2", "b")


@interpreter
@pytest.mark.parametrize("shape,precision,want", [
    ((1031, 517, 45), "fp32", ("64x64x16", "n/a")),
    ((1031, 517, 45), "tf32x3", ("64x64x16", "ffma")),
    ((1100, 1100, 77), "tf32x3", ("128x64x32", "b")),
], ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_short_k_plans_right(shape, precision, want):
    """The short-K plans (odd M, N and K; alpha and beta) against float64 under the interpreter."""
    r = _ok(sk.KERNEL, Problem(*shape, precision=precision, alpha=0.5, beta=-1.5), "cpu")
    assert (r.config["tile"], r.config["tf32x3_split"]) == want, r.config
