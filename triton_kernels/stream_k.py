"""Triton "stream_k": the Triton family's general-purpose GEMM (Osama et al., PPoPP'23).

The idea
--------
A fixed BLOCK_M x BLOCK_N tile grid leaves SMs idle whenever the tile count is not a multiple of
the SM count: 1000^3 with 128x128 tiles is 64 tiles on 132 SMs (48% busy), a 16x4096x4096
output is 32 tiles. Stream-K splits the *work*, (output tiles) x (K-iterations per tile), evenly
over a grid sized to the SMs. Hybrid form used here ("data-parallel + one-tile stream-K"):

* ``T`` tiles, ``I`` = cdiv(K, BLOCK_K) iterations per tile, ``P`` = SM count times
  ``programs_per_sm`` (program slots).
* the first ``T_sk`` tiles of the launch order (``T_sk = T mod P``, or all tiles when T < P) are
  stream-K tiles: their ``T_sk * I`` iterations are cut into ``G`` equal contiguous ranges
  (``G <= P``, each of at least ``MIN_SK_ITERS`` iterations), one per stream-K program. A range
  may start and end in the middle of a tile (at any iteration: odd K boundaries included);
* the other ``T - T_sk`` tiles are ordinary data-parallel programs (one tile each, full K),
  launched in the same grid after the stream-K programs: they fill exactly whole waves, so
  the SMs that finish their stream-K share early pick them up.
* a program whose range covers a whole tile writes C directly. A partial tile ("segment") is
  written as a raw fp32 partial into a workspace slot (program, segment index); a second small
  kernel (``_fixup_kernel``) then sums each split tile's partials in a fixed order (up to 16
  partials per step, the steps in program order: the same bits on every run) and applies alpha/beta. That is ``triton.stream_k``.
  ``triton.stream_k_atomic`` instead scales the stream-K tiles of C by beta first (a small
  kernel over those tiles only) and ``tl.atomic_add``s every segment (non-deterministic
  summation order; one launch less and no workspace).

The per-shape heuristic (``choose_plan``; a cuBLAS-style table, chosen per (M, N, K, precision),
recorded in ``launch.config``; every entry can be overridden with an option):

===============  ==========================================================================
tile             (heuristic_plan; fitted on the tunable shape sets, H100, first.log/final.log
                 in results/sweeps_triton_streamk/, never on compare.harness.shapes' heldout set)
                 M <= 64 or N <= 64: that side 16/32/64 (skinny outputs don't compute wasted
                 rows), the other 128, BLOCK_K 32, 4 warps.
                 fp32: K >= 4*max(M, N) (long reductions) 128x128x32/8 warps/3 stages, or
                 64x128x16/4/4 (FP32_FEW_ROWS_TILE) where 64-row tiles pad fewer rows
                 (257x255x65537 58.8% -> 82.9%); at least 900 tiles of 128x128 64x128x32/4/4
                 (91-100% at 4096..8192^3 vs 86-90% for 128x128); less than a wave of 128x128
                 tiles that 64-row ones fill data-parallel: FP32_FEW_ROWS_TILE (1000^3 89.3% ->
                 93.7%, 127x8191x1021 82.1% -> 89.8%); otherwise 128x128x16/8/4.
                 tf32: 128x256x32/8/3 once those tiles fill 90% of a wave (85-97% vs 79-88% for
                 128x128 at 2048..14336 wide), else for M > 512 and K < 4*max(M, N) 128x64x32/4/4
                 data-parallel (TF32_MID_TILE: 1024^3 0.034 -> 0.024 ms), else 128x128x32/8/4.
                 tf32x3: 128x128x32/8/3.
decomposition    "dp" when the data-parallel waves are >= 90% full, counted on P SMs or on
                 P * programs_per_sm slots (e.g. T = 1000 on 132 SMs: 95%), or a tile has fewer
                 than 2*MIN_SK_ITERS iterations;
                 else "sk" (hybrid above). 3001x2999x3003 fp32 (4.4 waves): sk 97% vs dp 89%.
operands         see "Alignment" below, and _k_major_b for tf32/tf32x3's B.
b_transpose      tf32/tf32x3 with 32 < M <= 512 (tf32 with 128x128 tiles: M <= 1024), N > 64,
                 or 33..64 columns on 128x64 tiles:
                 "swap", C^T = B^T A^T with the row-major B as wgmma's register operand (no
                 K-major copy of B; _swap_pays, _dot); 128x4096x11008 tf32 0.171 -> 0.102 ms.
                 Otherwise as "operands" says.
sk_align         tf32 with A + B larger than the L2 and every tile stream-K: a grid that is a
                 multiple of the tile count, so tiles sharing A rows / B columns read them at
                 the same K offsets (align_pays); 1024x1024x16384 DRAM 710 -> 145 MB.
tf32x3_split     tf32x3, K not long: B split into TF32 big/small parts once by its K-major copy
                 (b; M > 512), A too from N = 4096 (ab), or, for the swapped product, A^T split
                 by a copy of A (a; N >= 4096); else Triton's built-in, which splits both tiles
                 every k-step (in_loop). x3_split_plan; 4096^3 1.724 -> 1.413 ms (ab).
===============  ==========================================================================

Measured (H100, % of cuBLAS measured in the same run, 58 shapes, results/h100/sweep/): fp32
geomean 97.7% (worst 2039^3 79.4%; unaligned operands, results/h100/explore/ rounds 10-12);
tf32 90.5% (long-K outputs of ~1000^2 52-55%, the 512-row LLM shapes 53-58%); tf32x3 143.5% of
cuBLAS fp32 (worst 127x8191x1021 69%). The swapped product for M <= 512 (b_transpose) took tf32
from 77.1% and tf32x3 from 125% (before: 64x8192x28672 55% / 57%, after 98% / 124%); aligned
stream-K ranges (sk_align) and 128x64 tiles for mid-size outputs (TF32_MID_TILE) took tf32 from
84.9% to 88.3%; the tf32x3 split out of the loop (tf32x3_split) took tf32x3 from 134% to 143%;
loading unaligned operands along their contiguous axis (below), copying them only where 256
flops per copied byte repay it, and FP32_FEW_ROWS_TILE took fp32's worst case from 51.5% to 79.4%.
Stream-K grid: ``programs_per_sm`` programs per SM (2 for 4-warp tiles); the fixup's step and
piece follow the partial count (``fixup_shape``); operand copies only where the GEMM does
``COPY_MIN_FLOPS_PER_BYTE`` flops per copied byte (``worth_copying``).

Alignment: why Triton collapses off multiples of 16, and the fix used here
------------------------------------------------------------------------------
Triton specialises an integer argument as "divisible by 16" or nothing; it never learns that
1000 is a multiple of 8. A load is vectorised (ld.global.v4 / 16-byte cp.async) only when the
compiler can prove every row of the tile starts 16-byte aligned and the mask is constant over
4 elements. Compiled for sm_90 on this box (CPU, ``python -m triton_kernels.stream_k --ptx``;
counts of vector vs scalar global loads per kernel):

* triton.tiled fp32 128x128x32 at M=N=K=1024: 24 16-byte ``cp.async.cg`` per k-step copy in
  the kernel text, 16 ``st.global.v4``; at 1000: 96 4-byte ``cp.async.ca`` (4x the copy
  instructions) and 64 scalar ``st.global.b32``. tf32 at 1000: 256 4-byte copies, no 16-byte
  one. With EVEN_K=False (1000 % 32 != 0) every k-step's loads are also masked.
* stream_k at 1000 with the hint below: 48 16-byte copies, no 4-byte one, vector C stores;
  without it: 192 4-byte copies (tests/test_triton_stream_k.py compiles both and checks).

(The exact counts are in results/sweeps_triton_streamk/ptx_alignment.txt.)

The fix has four parts, each only where it is TRUE:

1. ``_mult4(x)`` = ``(x // 4) * 4`` on a stride / wrap extent the host has checked is a
   multiple of 4 (constexpr flags): equal to x, and Triton's axis analysis now knows its
   divisibility is 4 (16 bytes for fp32), so the loads become 16-byte vectors. This costs no
   copy: 1000, 3000, 5000 ... are multiples of 4.
2. The K tail: only the last K-iteration of a tile is masked (a separate step after an
   unmasked main loop), so a K that is not a multiple of BLOCK_K doesn't predicate every step.
3. An operand whose layout can't be hinted truthfully (its leading dimension is not a multiple
   of 4, e.g. K = 1023 for A, or neither of its strides is 1) is either read as given, 4 bytes
   at a time, or copied, inside the timed launch, into a buffer whose leading dimension is a
   multiple of 16 (``_operands._buffer``; a copy that only re-aligns rows is a row copy,
   ``_copy_rows_kernel``, with no transpose). The copy moves 8 bytes per element of that
   operand, so it is taken where the GEMM does COPY_MIN_FLOPS_PER_BYTE flops per copied byte
   (fp32: 256, round 11). Rows/columns past the edge of a tile wrap around (``% extent``); for a
   copied operand the extent is the buffer's padded leading dimension (a multiple of 16), so
   the padding only ever feeds C rows/columns that are never stored; K is masked, so no padding
   along K is read. The buffers are zeroed when allocated and the row copy writes zeros there,
   so nothing depends on leftover bits.
4. The lanes of a 4-byte load. For an operand read as given and contiguous along its wrapped
   axis (B row-major, an M-major A), ``% extent`` hides that the offsets run consecutively, and
   with no contiguous axis to follow the compiler ordered the load's lanes along K: one row per
   lane, 32 rows per warp load (127x8191x1021 fp32 with B read that way: 0.197 ms vs 0.088 ms
   through an aligned copy; H100, results/h100/explore/round10). ``tl.max_contiguous`` on those
   offsets puts the lanes back along the contiguous axis (0.066 ms, round 11); the loads stay
   4-byte because the offsets' divisibility is still one element. (This claim is the one that
   is not true everywhere: it is false across the single wrap, and harmless there because it
   widens no load and every lane computes its own address.) ``operand_load_lanes`` /
   ``--load-lanes`` report the lanes from the compiled TTGIR (tests/test_triton_stream_k.py).

fp32 additionally reads A through an M-major copy for wide outputs (N >= 2048, measured for
triton.tiled: _operands.py fact 2), and tf32/tf32x3 read B through a K-major copy (wgmma takes
32-bit B only K-major: _operands.py fact 1); those copies are the aligned buffers of part 3.

Precisions: fp32 = ``input_precision="ieee"``, tf32 = ``"tf32"``, tf32x3 = ``"tf32x3"``.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Optional

import torch
import triton
import triton.language as tl

from compare.families import decompose as model
from compare.families.decompose import most_partials
from compare.harness.errors import UsageError
from compare.harness.registry import Kernel, Option, register

from . import _operands as ops
from ._common import DEFAULT_L2_BYTES, check_gemm_args, interpreting, l2_bytes, sm_count
from ._gemm import parse_choice, parse_on_off, plan_prepare, store_c

__all__ = ["KERNEL", "KERNEL_ATOMIC", "choose_plan", "stream_k_matmul", "stream_k_atomic_matmul"]

PRECISIONS = ("fp32", "tf32", "tf32x3")
DOT_PRECISION = {"fp32": "ieee", "tf32": "tf32", "tf32x3": "tf32x3"}
STAGES = {"fp32": 3, "tf32": 4, "tf32x3": 3}
BLOCK_K = 32
# A stream-K program gets at least this many K-iterations: fewer and the pipeline fill plus the
# partial's write-out cost more than the balance gains.
MIN_SK_ITERS = 4
# Data-parallel waves at least this full need no stream-K (the shared model's TRITON_STREAM_K rule).
DP_WAVE_EFFICIENCY = model.TRITON_STREAM_K.dp_fill
# Aligned stream-K ranges (align_pays) may leave at most this share of the programs idle.
ALIGN_MAX_IDLE = 0.05
DECOMPOSITIONS = ("dp", "sk")
# The fixup kernel: partials loaded per step (the next power of two of a tile's most partials,
# at most FIX_SEGS_MAX) and elements of a split tile per program (FIX_ELEMS / segs, within
# [FIX_PIECE_MIN, FIX_PIECE_MAX], at most FIX_N wide): a 16-partial step where one tile has
# hundreds of partials, a 2-partial step over 1024 elements where each of 64 tiles has 2 or 3
# (1000^3: more, smaller steps there cost more programs than the sums they save).
FIX_SEGS_MAX, FIX_ELEMS, FIX_PIECE_MIN, FIX_PIECE_MAX, FIX_N = 16, 4096, 256, 1024, 64


def fixup_shape(max_partials: int, bm: int, bn: int) -> tuple[int, int, int]:
    """(segs, FIX_M, FIX_N) of the fixup for tiles of at most ``max_partials`` partials."""
    segs = min(FIX_SEGS_MAX, triton.next_power_of_2(max(2, max_partials)))
    piece = min(FIX_PIECE_MAX, max(FIX_PIECE_MIN, FIX_ELEMS // segs))
    fn = min(bn, FIX_N)
    return segs, min(bm, max(1, piece // fn)), fn
# Under TRITON_INTERPRET=1 the heuristic sees this many "SMs" unless told otherwise, so the small
# test shapes get real stream-K splits (132 SMs would make every test tile a whole range).
INTERPRET_SMS = 132


# ---------------------------------------------------------------------------------------------
# The plan: tile, warps, stages, decomposition.


@dataclass(frozen=True)
class Tile:
    bm: int
    bn: int
    bk: int
    warps: int
    stages: int
    group_m: int = 8

    @property
    def name(self) -> str:
        return f"{self.bm}x{self.bn}x{self.bk}/{self.warps}/{self.stages}"


@dataclass(frozen=True)
class Decomposition:
    """How the T = tiles_m * tiles_n tiles are shared out over the grid."""
    tiles: int          # T
    iters: int          # I = cdiv(K, BLOCK_K), iterations per tile
    sk_tiles: int       # the first sk_tiles tiles (launch order) are stream-K
    sk_programs: int    # G programs share their sk_tiles * I iterations
    max_segments: int   # most tiles one stream-K range touches (workspace slots per program)
    aligned: bool = False  # G is a multiple of T: every tile's k-th range starts at one K offset

    @property
    def mode(self) -> str:
        return "sk" if self.sk_tiles else "dp"

    @property
    def dp_tiles(self) -> int:
        return self.tiles - self.sk_tiles

    @property
    def grid(self) -> int:
        return self.sk_programs + self.dp_tiles

    def range_of(self, g: int) -> tuple[int, int]:
        """[start, end) of stream-K program g in the stream-K iteration space."""
        total = self.sk_tiles * self.iters
        q, r = divmod(total, self.sk_programs)
        start = g * q + min(g, r)
        return start, start + q + (1 if g < r else 0)


def programs_per_sm(tile: Tile) -> int:
    """Stream-K programs per SM: 2 for 4-warp tiles, else 1. One 4-warp program per SM is 4 of
    the SM's 64 warp slots: too few to hide the loads behind FFMAs. ncu at 64x8192x28672 fp32
    (64x128x32/4/3, 132 programs): 6% warps active, FMA pipe 49% busy, 57% of cuBLAS; with 264
    programs 93%, with 396 80% (results/h100/explore). The 8-warp 128-row tiles use ~230
    registers a thread: one program fills an SM's register file."""
    return 2 if tile.warps <= 4 else 1


def decompose(M: int, N: int, K: int, tile: Tile, sms: int, mode: Optional[str] = None,
              sk_programs: Optional[int] = None, align: bool = False) -> Decomposition:
    """The decomposition for ``tile`` on ``sms`` SMs: ``mode`` "dp" | "sk" | None (heuristic);
    ``sk_programs`` overrides G. Waves and the stream-K grid count ``programs_per_sm`` slots
    per SM. ``align``: when every tile is a stream-K tile, shrink G to a multiple of the tile
    count (at most ALIGN_MAX_IDLE of it left idle) so the ranges line up across tiles
    (``align_pays``)."""
    T = triton.cdiv(M, tile.bm) * triton.cdiv(N, tile.bn)
    I = triton.cdiv(K, tile.bk)
    # The shared model (compare/families/decompose.py) with this family's rule: "sk" here is
    # its hybrid (the last partial wave's tiles stream-K, all of them below one wave).
    plan = model.stream_k_plan(T, I, sms, programs_per_sm(tile), mode={"sk": "hybrid"}.get(mode, mode),
                                   sk_blocks=sk_programs or None, min_iters_per_block=MIN_SK_ITERS,
                                   rule=model.TRITON_STREAM_K)
    if plan.sk_tiles == 0:
        return Decomposition(T, I, 0, 0, 0)
    sk_tiles, work, G = plan.sk_tiles, plan.sk_tiles * I, plan.sk_blocks
    aligned = False
    if align and not sk_programs and sk_tiles == T >= 2:
        per_tile = G // T
        if per_tile >= 2 and G - per_tile * T <= ALIGN_MAX_IDLE * G:
            G, aligned = per_tile * T, True
    q = work // G
    # A range of at most q+1 iterations touches at most cdiv(q, I) + 1 tiles.
    return Decomposition(T, I, sk_tiles, G, triton.cdiv(q, I) + 1, aligned)


def align_pays(precision: str, M: int, N: int, K: int, tile: Tile, l2: int) -> bool:
    """Line the stream-K ranges up across tiles (``decompose(align=True)``)? For tf32 when A
    and B together overflow the L2.

    With G = SMs programs over T tiles, program g starts at g*T*I/G: the programs of tiles that
    share A's rows (or B's columns) read them at unrelated K offsets, so each tile re-reads
    them from DRAM once the operands no longer fit in L2. With G a multiple of T (T*I/G = I/s
    iterations a range, up to rounding), the k-th range of every tile starts at about k*I/s and
    those tiles read the same operand bytes together. ncu (H100, tf32, results/h100/explore/
    round6): 1024x1024x16384 read 710 MB from DRAM with 132 programs, 145 MB with 128 (the
    minimum is 138 MB), 0.268 -> 0.234 ms; 256x512x131072 767 -> 479 MB, 0.286 -> 0.235 ms;
    384x384x65536 (126 programs) 50% -> 66% of cuBLAS, 64x4096x65536 (256) 75% -> 93%. So: tf32,
    A and B together larger than the L2, and the operand bytes more than one tile reads (A when
    there are several tile columns, B when several tile rows) at least a quarter of it (16.8 MB
    at 64x4096x65536, the least measured; below that the shared operand stays in L2 anyway and
    the idle SMs are pure loss). tf32 is the precision that is DRAM-bound there: tf32x3 (three
    products per loaded element) moved by -3..+5% and fp32 lost 2-5% to the idle SMs, so both
    keep the full grid."""
    shared = (4 * M * K if N > tile.bn else 0) + (4 * K * N if M > tile.bm else 0)
    return precision == "tf32" and 4 * K * (M + N) > l2 and 4 * shared >= l2


def _small(n: int) -> int:
    """Block size for a dimension of at most 64: the next of 16, 32, 64."""
    return 16 if n <= 16 else 32 if n <= 32 else 64


def _small_m_tile(M: int, precision: str) -> Tile:
    return Tile(_small(M), 128, 32, 4, STAGES[precision])


# fp32 64-row tiles (4 warps, two programs per SM), round 12 (H100, results/h100/explore/round12,
# % of cuBLAS, 128-row default -> this tile): where 128x128 tiles are less than a wave and these
# fill one data-parallel, 1000^3 89.3 -> 93.7, 1021^3 83.6 -> 89.8, 127x8191x1021 82.1 -> 89.8
# (128x4096x11008, whose 64 such tiles would run stream-K, lost: 93.2 -> 90.4); at long K where
# they pad fewer rows, 257x255x65537 58.8 -> 82.9 (long K with M a multiple of 128 lost 5-9%:
# 256x256x131072 86.5 -> 80.1, 1000x1000x20000 84.2 -> 71.2). The 512-row LLM shapes also won
# (512x12288x4096 93.5 -> 96.1, 512x28672x8192 90.3 -> 93.3) but larger outputs were not measured:
# they keep 128x128 tiles.
FP32_FEW_ROWS_TILE = Tile(64, 128, 16, 4, 4)


# tf32 outputs of 513+ rows that 128x256 tiles can't fill a wave with (and not long-K): 128x64
# tiles, data-parallel. Round 7 (H100, results/h100/explore/round7): 1024^3 0.0340 -> 0.0240 ms,
# 1000^3 0.0355 -> 0.0267, 1536^3 0.0598 -> 0.0524 against 128x128 stream-K (2048^3, where
# 128x256 tiles fill a wave, lost with it: 0.067 -> 0.096). Few rows keep 128x128 tiles and
# the swapped product (b_transpose).
TF32_MID_TILE = Tile(128, 64, 32, 4, 4)


def heuristic_plan(M: int, N: int, K: int, precision: str, sms: int) -> tuple[Tile, Optional[str]]:
    """The tile table (module docstring), from results/sweeps_triton_streamk/first.log (H100),
    and the decomposition the tile was measured with ("dp"), or None for decompose's wave rule."""
    if M <= 64:
        t = _small_m_tile(M, precision)
        return (t if N > 64 else Tile(t.bm, _small(N), 32, 4, t.stages)), None
    if N <= 64:
        return Tile(128, _small(N), 32, 4, STAGES[precision]), None
    t128 = triton.cdiv(M, 128) * triton.cdiv(N, 128)
    long_k = K >= 4 * max(M, N)
    if precision == "fp32":
        if long_k:
            # 64-row tiles where they pad fewer rows (257 rows: 320 instead of 384).
            pads_less = triton.cdiv(M, 64) < 2 * triton.cdiv(M, 128)
            return (FP32_FEW_ROWS_TILE if pads_less else Tile(128, 128, 32, 8, 3)), None
        if t128 >= 900:
            return Tile(64, 128, 32, 4, 4), None
        if t128 < sms and decompose(M, N, K, FP32_FEW_ROWS_TILE, sms).mode == "dp":
            # Less than a wave of 128x128 tiles, which 64-row tiles fill data-parallel.
            return FP32_FEW_ROWS_TILE, "dp"
        return Tile(128, 128, 16, 8, 4), None
    if precision == "tf32":
        if triton.cdiv(M, 128) * triton.cdiv(N, 256) >= DP_WAVE_EFFICIENCY * sms:
            return Tile(128, 256, 32, 8, 3), None
        if M > SWAP_MAX_M and not long_k:
            return TF32_MID_TILE, "dp"
        return Tile(128, 128, 32, 8, 4), None
    return Tile(128, 128, 32, 8, 3), None


def choose_plan(M: int, N: int, K: int, precision: str, sms: int, tile: Optional[Tile] = None,
                mode: Optional[str] = None, sk_programs: Optional[int] = None,
                align: Optional[bool] = None, l2: int = DEFAULT_L2_BYTES) -> tuple[Tile, Decomposition]:
    """The heuristic table of the module docstring: (tile, decomposition). ``align`` None: the
    heuristic (``align_pays`` on an ``l2``-byte L2)."""
    if tile is None:
        tile, preferred = heuristic_plan(M, N, K, precision, sms)
        if mode is None and sk_programs is None:
            mode = preferred
    if align is None:
        align = align_pays(precision, M, N, K, tile, l2)
    return tile, decompose(M, N, K, tile, sms, mode, sk_programs, align)


# ---------------------------------------------------------------------------------------------
# Kernels.


@triton.jit
def _mult4(x, KNOWN: tl.constexpr):
    # x // 4 * 4 == x when the host checked x % 4 == 0 (KNOWN); the product tells the compiler's
    # axis analysis that x is divisible by 4 (16 bytes of fp32), which a plain runtime int
    # (specialised only as "divisible by 16" or not) can't.
    if KNOWN:
        x = (x // 4) * 4
    return x


@triton.jit
def _tile_coords(tile, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    # Grouped launch order: GROUP_M tile rows walked down a tile column before moving right, so
    # programs running together share A rows and B columns in L2; the last group may be short.
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * num_n
    group = tile // per_group
    first_m = group * GROUP_M
    size_m = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (tile % per_group) % size_m
    pid_n = (tile % per_group) // size_m
    return pid_m, pid_n


@triton.jit
def _dot(a, b, acc, one, DOT_PRECISION: tl.constexpr, SWAP_AB: tl.constexpr):
    # acc += a @ b, or, with SWAP_AB ("swap"), acc^T += b^T @ a^T (acc is held transposed).
    # wgmma reads a 32-bit B from shared memory only K-major. Given an N-major B tile the
    # compiler copies it into that layout with 4-byte cp.async ("load"). Swapped,
    # b^T is wgmma's A operand, which may come from registers in any layout; multiplying it by
    # a runtime 1.0 (exact) makes it a computed value rather than a load, so the compiler keeps
    # the 16-byte async copies and feeds wgmma from registers (without the product it goes back
    # to 4-byte copies: compiled for sm_90, triton 3.6 and 3.9; results/h100/explore/round4).
    if SWAP_AB:
        acc = tl.dot(tl.trans(b) * one, tl.trans(a), acc, input_precision=DOT_PRECISION)
    else:
        acc = tl.dot(a, b, acc, input_precision=DOT_PRECISION)
    return acc


@triton.jit
def _dot_x3(a, a_small, b, b_small, acc, SPLIT_A: tl.constexpr, MASK_NAN: tl.constexpr):
    # acc + a @ b in 3xTF32 with B (and, SPLIT_A, A) already split into TF32 big and small
    # parts by the operand copy (_operands.tf32_split): b is B's big part, b_small its small
    # part, likewise a / a_small when SPLIT_A; else A is split here, in registers. The
    # structure is Triton's built-in tf32x3 (F32DotTC): the two small products summed in the
    # tensor core onto ``acc`` (MASK_NAN: from zero, NaN from inf * 0 masked to 0, as the
    # built-in does), then the big product. What leaves the loop is the split of b, wgmma's
    # shared-memory operand (B, or A^T in the swapped product): the built-in rounds its tile
    # and writes both parts back to shared memory at every k-step.
    if SPLIT_A:
        a_big = a
    else:
        a_big, a_small = ops.tf32_split(a)
    if MASK_NAN:
        small = tl.dot(a_small, b, input_precision="tf32")
        small = tl.dot(a_big, b_small, small, input_precision="tf32")
        small = tl.where(small == small, small, 0.0)
        acc = acc + small
    else:
        acc = tl.dot(a_small, b, acc, input_precision="tf32")
        acc = tl.dot(a_big, b_small, acc, input_precision="tf32")
    return tl.dot(a_big, b, acc, input_precision="tf32")


@triton.jit
def _step(acc, a, b, a_small, b_small, one, DOT_PRECISION: tl.constexpr, SWAP_AB: tl.constexpr,
          SPLIT_A: tl.constexpr, SPLIT_B: tl.constexpr, MASK_NAN: tl.constexpr):
    # acc += a @ b for one BLOCK_K step (acc^T += b^T a^T with SWAP_AB), however the operands come.
    if SPLIT_A or SPLIT_B:
        # 3xTF32 from pre-split operands: the step's three products summed in the tensor core
        # from zero, then added to the fp32 accumulator with a rounded add, as the built-in
        # does (tensor-core sums truncate: summed over all of K they bias the result,
        # docs/design.md).
        zero = tl.zeros_like(acc)
        if SWAP_AB:
            # B^T is the register operand, split here; A^T, wgmma's shared-memory operand,
            # comes pre-split (the built-in would split it and write both parts back to shared
            # memory every step).
            acc += _dot_x3(tl.trans(b) * one, b, tl.trans(a), tl.trans(a_small), zero, False, MASK_NAN)
        else:
            acc += _dot_x3(a, a_small, b, b_small, zero, SPLIT_A, MASK_NAN)
    else:
        acc = _dot(a, b, acc, one, DOT_PRECISION, SWAP_AB)
    return acc


@triton.jit
def _mac_steps(acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs, n_steps, step_a, step_b, one,
               DOT_PRECISION: tl.constexpr, SWAP_AB: tl.constexpr, SPLIT_A: tl.constexpr,
               SPLIT_B: tl.constexpr, MASK_NAN: tl.constexpr):
    # acc += A_tile @ B_tile for n_steps unmasked BLOCK_K steps.
    for _ in range(0, n_steps):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        a_small = a
        b_small = b
        if SPLIT_A:
            a_small = tl.load(a_small_ptrs)
        if SPLIT_B:
            b_small = tl.load(b_small_ptrs)
        acc = _step(acc, a, b, a_small, b_small, one, DOT_PRECISION, SWAP_AB, SPLIT_A, SPLIT_B, MASK_NAN)
        a_ptrs += step_a
        b_ptrs += step_b
        a_small_ptrs += step_a
        b_small_ptrs += step_b
    return acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs


@triton.jit
def _tile_partial(a_ptr, b_ptr, a_small_ptr, b_small_ptr, tile, it_lo, it_hi, M, N, K, M_wrap, N_wrap,
                  stride_am, stride_ak, stride_bk, stride_bn, one,
                  DOT_PRECISION: tl.constexpr, SWAP_AB: tl.constexpr, SPLIT_A: tl.constexpr, SPLIT_B: tl.constexpr,
                  MASK_NAN: tl.constexpr, A_K_CONTIG: tl.constexpr, B_K_CONTIG: tl.constexpr,
                  A_HINT: tl.constexpr, B_HINT: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    """The fp32 accumulator of ``tile`` over its K-iterations [it_lo, it_hi)."""
    pid_m, pid_n = _tile_coords(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    # Each operand is contiguous along K (A_K_CONTIG / B_K_CONTIG) or along M (A) / N (B); the
    # unit stride is written as the constant 1. A_HINT / B_HINT: the host checked that the other stride,
    # and the wrap extent when the wrapped axis is the contiguous one, are multiples of 4
    # (_mult4). Rows/columns past the tile edge wrap around (% extent) instead of being masked,
    # so loads along M and N stay unpredicated; the wrapped values only reach C elements that
    # are never stored.
    if A_K_CONTIG:
        stride_ak = 1
        stride_am = _mult4(stride_am, A_HINT)
    else:
        stride_am = 1
        stride_ak = _mult4(stride_ak, A_HINT)
        M_wrap = _mult4(M_wrap, A_HINT)
    if B_K_CONTIG:
        stride_bk = 1
        stride_bn = _mult4(stride_bn, B_HINT)
    else:
        stride_bn = 1
        stride_bk = _mult4(stride_bk, B_HINT)
        N_wrap = _mult4(N_wrap, B_HINT)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M_wrap
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N_wrap
    # An unhinted operand contiguous along M (A) or N (B): "% extent" hides from the compiler
    # that the offsets run consecutively (but for the one wrap), and with no contiguous axis
    # the coalescing pass ordered the loads' lanes along K, one row per lane: 32 rows per warp
    # load (B read this way made 127x8191x1021 fp32 2.2x slower, results/h100/explore/round10).
    # max_contiguous restores the order; the loads stay 4-byte (the pointers' divisibility is
    # one element), so every lane still computes its own, possibly wrapped, address.
    if not A_K_CONTIG and not A_HINT:
        offs_am = tl.max_contiguous(offs_am, BLOCK_M)
    if not B_K_CONTIG and not B_HINT:
        offs_bn = tl.max_contiguous(offs_bn, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    k0 = it_lo * BLOCK_K
    a_offs = offs_am[:, None] * stride_am + (k0 + offs_k)[None, :] * stride_ak
    b_offs = (k0 + offs_k)[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    a_ptrs = a_ptr + a_offs
    b_ptrs = b_ptr + b_offs
    # The small TF32 parts (SPLIT_A / SPLIT_B) live in buffers of the same layout.
    a_small_ptrs = a_small_ptr + a_offs
    b_small_ptrs = b_small_ptr + b_offs
    step_a = BLOCK_K * stride_ak
    step_b = BLOCK_K * stride_bk
    # Unmasked steps: every iteration but a partial last one (K % BLOCK_K != 0).
    if EVEN_K:
        full_hi = it_hi
    else:
        full_hi = tl.minimum(it_hi, K // BLOCK_K)
    n_full = tl.maximum(full_hi - it_lo, 0)
    if SWAP_AB:
        acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if DOT_PRECISION == "ieee" or SPLIT_A or SPLIT_B:
        acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs = _mac_steps(
            acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs, n_full, step_a, step_b, one, DOT_PRECISION,
            SWAP_AB, SPLIT_A, SPLIT_B, MASK_NAN)
    else:
        # First step peeled (as _gemm.mac): with a zero accumulator entering a single loop,
        # ptxas 12.8 serialises the wgmmas of 128-row tiles (a wait after each).
        n_first = tl.minimum(n_full, 1)
        acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs = _mac_steps(
            acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs, n_first, step_a, step_b, one, DOT_PRECISION,
            SWAP_AB, SPLIT_A, SPLIT_B, MASK_NAN)
        acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs = _mac_steps(
            acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs, n_full - n_first, step_a, step_b, one,
            DOT_PRECISION, SWAP_AB, SPLIT_A, SPLIT_B, MASK_NAN)
    if not EVEN_K:
        if it_hi * BLOCK_K > K:
            # The partial last step: the only masked loads (a_ptrs/b_ptrs point at it now).
            k_left = K - (it_hi - 1) * BLOCK_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
            a_small = a
            b_small = b
            if SPLIT_A:
                a_small = tl.load(a_small_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            if SPLIT_B:
                b_small = tl.load(b_small_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
            acc = _step(acc, a, b, a_small, b_small, one, DOT_PRECISION, SWAP_AB, SPLIT_A, SPLIT_B, MASK_NAN)
    if SWAP_AB:
        acc = tl.trans(acc)
    return acc, pid_m, pid_n


@triton.jit
def _epilogue(acc, c_ptr, pid_m, pid_n, M, N, stride_cm, stride_cn, alpha, beta,
              HAS_BETA: tl.constexpr, C_HINT: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # C = alpha*acc + beta*C, with C's row stride and N hinted as multiples of 4 where true.
    store_c(acc, c_ptr, pid_m * BLOCK_M + tl.arange(0, BLOCK_M), pid_n * BLOCK_N + tl.arange(0, BLOCK_N),
            M, _mult4(N, C_HINT), _mult4(stride_cm, C_HINT), stride_cn, alpha, beta, HAS_BETA)


@triton.jit
def _stream_k_kernel(a_ptr, b_ptr, c_ptr, w_ptr, a_small_ptr, b_small_ptr, M, N, K, M_wrap, N_wrap,
                     stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     alpha, beta, one, SK_TILES, SK_PROGRAMS, SK_Q, SK_R, MAX_SEG,
                     DOT_PRECISION: tl.constexpr, SWAP_AB: tl.constexpr, SPLIT_A: tl.constexpr,
                     SPLIT_B: tl.constexpr, MASK_NAN: tl.constexpr, ATOMIC: tl.constexpr, HAS_BETA: tl.constexpr,
                     A_K_CONTIG: tl.constexpr, B_K_CONTIG: tl.constexpr, A_HINT: tl.constexpr,
                     B_HINT: tl.constexpr, C_HINT: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    pid = tl.program_id(0)
    iters = tl.cdiv(K, BLOCK_K)
    if pid >= SK_PROGRAMS:
        # Data-parallel: one whole tile after the stream-K tiles.
        tile = SK_TILES + pid - SK_PROGRAMS
        acc, pid_m, pid_n = _tile_partial(a_ptr, b_ptr, a_small_ptr, b_small_ptr, tile, 0, iters, M, N, K,
                                          M_wrap, N_wrap, stride_am, stride_ak, stride_bk, stride_bn, one,
                                          DOT_PRECISION, SWAP_AB, SPLIT_A, SPLIT_B, MASK_NAN,
                                          A_K_CONTIG, B_K_CONTIG, A_HINT, B_HINT, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                                          EVEN_K)
        _epilogue(acc, c_ptr, pid_m, pid_n, M, N, stride_cm, stride_cn, alpha, beta, HAS_BETA, C_HINT,
                  BLOCK_M, BLOCK_N)
    else:
        # Stream-K: iterations [start, end) of the stream-K tiles' iteration space, tile by tile.
        start = pid * SK_Q + tl.minimum(pid, SK_R)
        end = start + SK_Q + (pid < SK_R).to(tl.int32)
        first_tile = start // iters
        it = start
        while it < end:
            tile = it // iters
            tile_lo = tile * iters
            seg_hi = tl.minimum(end, tile_lo + iters)
            acc, pid_m, pid_n = _tile_partial(a_ptr, b_ptr, a_small_ptr, b_small_ptr, tile, it - tile_lo,
                                              seg_hi - tile_lo, M, N, K, M_wrap, N_wrap, stride_am, stride_ak,
                                              stride_bk, stride_bn, one, DOT_PRECISION, SWAP_AB, SPLIT_A, SPLIT_B,
                                              MASK_NAN, A_K_CONTIG, B_K_CONTIG, A_HINT, B_HINT, BLOCK_M, BLOCK_N,
                                              BLOCK_K, GROUP_M, EVEN_K)
            whole = (it == tile_lo) & (seg_hi == tile_lo + iters)
            if whole:
                _epilogue(acc, c_ptr, pid_m, pid_n, M, N, stride_cm, stride_cn, alpha, beta, HAS_BETA,
                          C_HINT, BLOCK_M, BLOCK_N)
            elif ATOMIC:
                # C of the stream-K tiles was scaled by beta beforehand (_scale_tiles_kernel).
                offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
                offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
                c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
                c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
                tl.atomic_add(c_ptrs, acc * alpha, mask=c_mask, sem="relaxed")
            else:
                # Raw partial into slot (program, segment): the fixup kernel sums them in order.
                slot = pid * MAX_SEG + (tile - first_tile)
                offs = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
                tl.store(w_ptr + slot * (BLOCK_M * BLOCK_N) + offs, acc)
            it = seg_hi


@triton.jit
def _owner(i, SK_Q, SK_R):
    # The stream-K program whose range holds iteration i (ranges: SK_R of SK_Q+1, then SK_Q).
    big = SK_R * (SK_Q + 1)
    return tl.where(i < big, i // (SK_Q + 1), SK_R + (i - big) // tl.maximum(SK_Q, 1))


@triton.jit
def _fixup_kernel(w_ptr, c_ptr, M, N, K, stride_cm, stride_cn, alpha, beta, SK_Q, SK_R, MAX_SEG,
                  HAS_BETA: tl.constexpr, C_HINT: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, FIX_M: tl.constexpr, FIX_N: tl.constexpr, FIX_SEGS: tl.constexpr):
    # Axis 0: a stream-K tile; axis 1: a FIX_M x FIX_N piece of it. A tile inside one program's
    # range was written to C by that program; a split tile's partials are summed here, FIX_SEGS
    # partials per step (one [FIX_SEGS, piece] load, reduced along the partials; fixup_shape),
    # steps in program order: a fixed order, the same bits every run. One partial per step left a
    # single-tile shape (64x64x1048576: 132 partials, 4 programs) with a 117 us fixup behind a
    # 250 us GEMM (ncu, results/h100/explore): the loads of a step are now in flight together.
    # Then C = alpha*sum + beta*C.
    tile = tl.program_id(0)
    piece = tl.program_id(1)
    iters = tl.cdiv(K, BLOCK_K)
    lo = tile * iters
    g0 = _owner(lo, SK_Q, SK_R)
    g1 = _owner(lo + iters - 1, SK_Q, SK_R)
    if g1 > g0:
        pieces_n: tl.constexpr = BLOCK_N // FIX_N
        e = tl.arange(0, FIX_M * FIX_N)
        rows = (piece // pieces_n) * FIX_M + e // FIX_N
        cols = (piece % pieces_n) * FIX_N + e % FIX_N
        offs = rows * BLOCK_N + cols
        acc = tl.zeros((FIX_M * FIX_N,), dtype=tl.float32)
        for gb in range(g0, g1 + 1, FIX_SEGS):
            g = gb + tl.arange(0, FIX_SEGS)
            start = g * SK_Q + tl.minimum(g, SK_R)
            slot = g * MAX_SEG + (tile - start // iters)
            part = tl.load(w_ptr + slot[:, None] * (BLOCK_M * BLOCK_N) + offs[None, :],
                           mask=(g <= g1)[:, None], other=0.0)
            acc += tl.sum(part, axis=0)
        pid_m, pid_n = _tile_coords(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        # New names, not N / stride_cm reassigned: inside this runtime `if` a reassigned argument
        # must keep its type, and an argument equal to 1 (N = 1, a 1-column C's row stride) is
        # specialised as constexpr[1] while _mult4 returns an int32 ("initial value for `N` is
        # of type constexpr[1], but the then block redefines it as int32[]" on the GPU).
        c_stride_m = _mult4(stride_cm, C_HINT)
        c_n = _mult4(N, C_HINT)
        offs_cm = pid_m * BLOCK_M + rows
        offs_cn = pid_n * BLOCK_N + cols
        c_ptrs = c_ptr + offs_cm * c_stride_m + offs_cn * stride_cn
        c_mask = (offs_cm < M) & (offs_cn < c_n)
        out = acc * alpha
        if HAS_BETA:
            out += beta * tl.load(c_ptrs, mask=c_mask, other=0.0)
        tl.store(c_ptrs, out, mask=c_mask)


@triton.jit
def _scale_tiles_kernel(c_ptr, M, N, stride_cm, stride_cn, beta, K, SK_Q, SK_R,
                        BETA_ZERO: tl.constexpr, C_HINT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Atomic variant: C = beta*C on the split stream-K tiles (0 when beta == 0, C never read)
    # before their segments are atomically added. Whole tiles are written by their program.
    tile = tl.program_id(0)
    iters = tl.cdiv(K, BLOCK_K)
    lo = tile * iters
    if _owner(lo + iters - 1, SK_Q, SK_R) > _owner(lo, SK_Q, SK_R):
        pid_m, pid_n = _tile_coords(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        c_stride_m = _mult4(stride_cm, C_HINT)      # new names: see _fixup_kernel
        c_n = _mult4(N, C_HINT)
        offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + offs_cm[:, None] * c_stride_m + offs_cn[None, :] * stride_cn
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < c_n)
        if BETA_ZERO:
            out = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        else:
            out = beta * tl.load(c_ptrs, mask=c_mask, other=0.0)
        tl.store(c_ptrs, out, mask=c_mask)


# ---------------------------------------------------------------------------------------------
# Operands: direct where a truthful 16-byte hint exists, else an aligned copy.


@dataclass
class _Operand:
    """How the kernel reads one operand: ``view`` (the tensor or its aligned copy) seen as the
    GEMM's M x K (A) or K x N (B), which axis is contiguous, and the extent its tile rows (A) or
    columns (B) wrap at. Every layout here satisfies the kernel's 16-byte hint (the non-unit
    stride, and the wrap extent when the wrapped axis is the contiguous one, are multiples of 4;
    the base is 16-byte aligned)."""
    view: torch.Tensor
    k_contiguous: bool            # stride along K is 1 (else the M / N stride is 1)
    wrap: int
    layout: str                   # for the report: "direct" or "copy:<major>"
    copy_src: Optional[torch.Tensor] = None   # fill(): transpose_into(copy_src, copy_dst[, small_dst])
    copy_dst: Optional[torch.Tensor] = None
    hinted: bool = True           # its strides (and wrap extent) take the 16-byte hint
    small: Optional[torch.Tensor] = None      # split(): the TF32 small parts, laid out as view
    small_dst: Optional[torch.Tensor] = None  # (copy_dst then holds the big parts)

    def fill(self) -> None:
        if self.copy_dst is not None:
            ops.transpose_into(self.copy_src, self.copy_dst, self.small_dst)

    def copy_bytes(self) -> int:
        # Read once, written once (twice when split into big and small parts).
        per_element = 12 if self.small_dst is not None else 8
        return 0 if self.copy_dst is None else per_element * self.copy_src.numel()

    def split(self) -> "_Operand":
        """This copy, writing the TF32 big parts into its buffer and the small parts into a
        second buffer of the same layout (3xTF32 with the split out of the K loop)."""
        assert self.copy_dst is not None, "only a copied operand can be split by its copy"
        small_dst = _padded(*self.copy_dst.shape, self.copy_dst)   # copy_dst's own layout
        # view is the buffer itself or its transpose (_prepare_a / _prepare_b).
        small = small_dst if self.view.stride() == self.copy_dst.stride() else small_dst.t()
        assert small.stride() == self.view.stride() and small.shape == self.view.shape
        return _Operand(self.view, self.k_contiguous, self.wrap, self.layout + "+split", self.copy_src,
                        self.copy_dst, self.hinted, small, small_dst)


def _padded(rows: int, cols: int, like: torch.Tensor) -> torch.Tensor:
    """rows x cols view of a zero-filled buffer whose leading dimension is a multiple of 16
    (as _operands._buffer, but zeroed once here: the transposing copy never writes the padding
    and the row copy writes zeros there, so wrapped-in rows/columns read zeros, not leftover
    bits)."""
    ld = triton.cdiv(cols, 16) * 16
    return torch.zeros((rows, ld), device=like.device, dtype=torch.float32)[:, :cols]


def _aligned(t: torch.Tensor) -> bool:
    return t.data_ptr() % 16 == 0


def _prepare_a(A: torch.Tensor, major: str, allow_direct: bool, allow_copy: bool = True) -> _Operand:
    """A (M x K) in the preferred ``major`` ("k": row-major, "m": M-major); read as given when
    it already is in that layout with hintable strides, else copied (``allow_copy``), else read
    as given (hinted only where its strides allow)."""
    M, K = A.shape
    if allow_direct and _aligned(A):
        if major == "k" and A.stride(1) == 1 and A.stride(0) % 4 == 0:
            return _Operand(A, True, M, "direct")
        if major == "m" and A.stride(0) == 1 and A.stride(1) % 4 == 0 and M % 4 == 0:
            return _Operand(A, False, M, "direct")
    if not allow_copy and allow_direct and (A.stride(1) == 1 or A.stride(0) == 1):
        k_contig = A.stride(1) == 1
        hinted = _aligned(A) and (A.stride(0) % 4 == 0 if k_contig else (A.stride(1) % 4 == 0 and M % 4 == 0))
        return _Operand(A, k_contig, M, "direct" if hinted else "direct:4-byte", hinted=hinted)
    if major == "m":
        buf = _padded(K, M, A)       # K x M, leading dimension a multiple of 16
        return _Operand(buf.t(), False, buf.stride(0), "copy:m_major", A, buf)
    buf = _padded(M, K, A)           # M x K, leading dimension a multiple of 16
    return _Operand(buf, True, M, "copy:k_major", A.t(), buf)


def _n_major_hintable(B: torch.Tensor) -> bool:
    """B (K x N) can be read N-major as given with 16-byte loads (the kernel's B hint holds)."""
    return _aligned(B) and B.stride(1) == 1 and B.stride(0) % 4 == 0 and B.shape[1] % 4 == 0


def _prepare_b(B: torch.Tensor, major: str, allow_direct: bool, allow_copy: bool = True) -> _Operand:
    """B (K x N) in the preferred ``major`` ("n": row-major, "k": K-major, what wgmma reads);
    ``allow_copy`` as for A."""
    K, N = B.shape
    if allow_direct and major == "n" and _n_major_hintable(B):
        return _Operand(B, False, N, "direct")
    if allow_direct and major == "k" and _aligned(B) and B.stride(0) == 1 and B.stride(1) % 4 == 0:
        return _Operand(B, True, N, "direct")
    if not allow_copy and allow_direct and (B.stride(1) == 1 or B.stride(0) == 1):
        k_contig = B.stride(1) != 1
        hinted = _aligned(B) and (B.stride(1) % 4 == 0 if k_contig else (B.stride(0) % 4 == 0 and N % 4 == 0))
        return _Operand(B, k_contig, N, "direct" if hinted else "direct:4-byte", hinted=hinted)
    if major == "k":
        buf = _padded(N, K, B)       # N x K, leading dimension a multiple of 16
        return _Operand(buf.t(), True, N, "copy:k_major", B, buf)
    buf = _padded(K, N, B)           # K x N, leading dimension a multiple of 16
    return _Operand(buf, False, buf.stride(0), "copy:n_major", B.t(), buf)


# fp32 (FFMA) reads A M-major from this N up (triton.tiled's measured rule, _gemm.M_MAJOR_A_MIN_N).
M_MAJOR_A_MIN_N = 2048
# tf32/tf32x3 copy B K-major (for wgmma) only where it paid in final.log (H100, every shape
# measured both ways): the copy moves 8*K*N bytes whatever M is, and the kernel is memory-bound
# for few rows. tf32: copying won at every M > 128 (e.g. 1000^3 51% vs 32% of cuBLAS, 1999x4091
# x1031 126% vs 52%) and lost at M <= 128 (128x4096x11008 39% vs 50%, 64x8192x28672 36% vs 56%).
# tf32x3 (three products per element: more compute per byte) won from M > 32 when N > 64
# (128x4096x11008 85% vs 74%, 64x8192x28672 52% vs 42%) and lost at 64x64x1048576 (66% vs 85%).
# Tiles under 64 rows use mma.sync, which reads N-major B with 16-byte copies anyway.
def _k_major_b(precision: str, M: int, N: int) -> bool:
    if precision == "tf32":
        return M > 128
    return M > 32 and N > 64


OPERAND_CHOICES = ("auto", "direct", "as_given", "k_major_b", "copy", "copy_a", "copy_b")
# How a B that is not K-major reaches wgmma at tf32/tf32x3 (_dot): a K-major copy before the
# GEMM ("copy"), the compiler's 4-byte async copies ("load") or the swapped product ("swap",
# SWAP_AB). A fourth way, B * 1.0 unswapped (16-byte copies, then a register pass writing the
# K-major layout), was slower than the K-major copy on 12 of 14 tf32 shapes in round 4 and is not offered.
B_TRANSPOSE_CHOICES = ("auto", "copy", "load", "swap")
# tf32x3: where the TF32 big/small split happens (_dot_x3). in_loop: Triton's built-in, both
# tiles split at every k-step; b: B split once by its K-major copy, A in the loop; ab: both
# split by copies; a (the swapped product): A split by a copy, B^T in the loop.
X3_SPLIT_CHOICES = ("auto", "in_loop", "a", "b", "ab")
# The split paths sum the small products onto the running sum in the tensor core, without the
# built-in's NaN mask between the small and the big products (True puts it back). Round 8:
# the mask's wait and selects took most of the gain (4096^3 b 1.481 ms without, 1.637 with;
# in_loop 1.71-1.74). What it is for: an infinite input times a zero small part is NaN where
# IEEE fp32 gives +-inf; so with b/ab a non-finite input can turn its output row or column to
# NaN (the built-in, in_loop, masks that case).
X3_MASK_NAN = False
# "auto" takes "swap" for tf32/tf32x3 at SWAP_MIN_M < M <= SWAP_MAX_M rows (N > 64, B readable
# with 16-byte loads as given). Round 4 (H100, results/h100/explore/round4): swap against the
# previous default, tf32: 48x12288x4096 0.183 -> 0.097 ms, 128x4096x11008 0.171 -> 0.102,
# 64x4096x65536 0.765 -> 0.484, 256x512x131072 0.439 -> 0.291, 512x12288x4096 0.384 -> 0.331;
# tf32x3: 64x8192x28672 1.075 -> 0.482, 128x4096x11008 0.289 -> 0.199. Few rows waste most of a
# 64-row wgmma (or a K-major copy of all of B for a small GEMM); swapped, B's columns fill the
# wgmma's 64-row side. From M = 1024 on it loses (1024x5120x13824 0.697 -> 0.825, 4096^3 0.441 ->
# 0.714): the register operand's per-step layout shuffle costs more than the K-major copy; tf32
# with 128x128 tiles still wins up to M = 1024 (1024x1024x16384 0.303 -> 0.271, 1000^3 0.0369 ->
# 0.0352, 1024^3 even; 1536^3 loses, 0.0605 -> 0.0708). M <= 32 (mma.sync tiles, 94-242% of
# cuBLAS already) kept its path: swapped, round 6 lost 1-24% on all six such shapes
# (results/h100/explore/round6/swap_small.json). Narrow outputs (33..64 columns, 128x64 tiles)
# swap at any M: B^T is then a single 64-row wgmma operand and A^T is read K-major as given;
# 4096x64x4096 tf32 0.0509 -> 0.0492 ms, tf32x3 0.0688 -> 0.0562 (round 6; the one such shape
# measured).
SWAP_MIN_M, SWAP_MAX_M, SWAP_MAX_M_TF32_128 = 32, 512, 1024


def _swap_pays(precision: str, M: int, N: int, B: torch.Tensor, tile: Tile) -> bool:
    if precision == "fp32" or not _n_major_hintable(B):
        return False
    if tile.bm == 128 and tile.bn == 64 and 32 < N <= 64:
        return True
    max_m = SWAP_MAX_M_TF32_128 if precision == "tf32" and tile.bn == 128 else SWAP_MAX_M
    return SWAP_MIN_M < M <= max_m and N > 64

# A copy moves 8 bytes per element of its operand (read + write) before the GEMM starts: per
# copied byte that is N/4 GEMM flops for A (2*M*N*K / (8*M*K)) and M/4 for B. An operand is
# copied (to an aligned buffer, or to the layout the kernel prefers) only when the GEMM does at
# least this many flops per copied byte; else it is read as given, with 4-byte loads where it
# can't be hinted (256x512x131072 tf32, 64 flops per byte: the K-major copy of B took 181 us,
# more than cuBLAS's whole 162 us; ncu, results/h100/explore). fp32 (FFMA) reads an unaligned
# operand almost as fast with coalesced 4-byte loads, so only reuse by many tiles repays a copy:
# on the nine unaligned sweep shapes of round 11 (results/h100/explore/round11, every shape with
# each operand copied or not) 256 picked the fastest of the four choices or one within 1%
# (1021^3 nothing copied 85.1% of cuBLAS vs 78.3% both; 127x8191x1021 A's M-major copy only
# 81.4% vs 60.8%; 2039^3 both 79.5% vs 78.2% neither; 5003x1021x2039 B only 85.2% vs 83.8%).
COPY_MIN_FLOPS_PER_BYTE = {"fp32": 256, "tf32": 128, "tf32x3": 8}


# tf32x3_split=auto (x3_split_plan), from round 8 (H100, results/h100/explore/round8, ms):
# * B split by its K-major copy (b) or A and B (ab), in_loop -> b -> ab: 4096^3 1.724 -> 1.481 ->
#   1.413, 2048^3 0.236 -> 0.209 -> 0.212, 1024^3 0.0507 -> 0.0452 -> 0.0503, 2039^3 0.268 ->
#   0.252 -> 0.257, 3001x2999x3003 0.816 -> 0.758 -> 0.780, 1024x13824x5120 2.045 -> 1.828 ->
#   1.707; b lost where the copy's extra bytes weigh more than the loop it saves: 127x8191x1021
#   0.0872 -> 0.104, 257x255x65537 0.330 -> 0.356, 1000x1000x20000 (long K) 0.594 -> 0.650.
# * The swapped product (M <= 512) with A split by a copy (a), in_loop -> a: 512x12288x4096 0.748
#   -> 0.636, 512x28672x8192 3.41 -> 2.80, 128x4096x11008 0.198 -> 0.162, 64x8192x28672 0.485 ->
#   0.456, 48x12288x4096 0.126 -> 0.112; lost at long K (64x4096x65536 0.561 -> 0.636,
#   384x384x65536 0.318 -> 0.410, 128x128x262144 0.160 -> 0.319) and few columns (4096x64x4096
#   0.057 -> 0.149).
# A's copy (12 bytes per element of A) is repaid by the N columns each element feeds: it is
# taken from N = 4096 (ab, a). Long K (K >= 4*max(M, N)) keeps the built-in.
X3_SPLIT_MIN_M, X3_SPLIT_A_MIN_N = 512, 4096


def x3_split_plan(M: int, N: int, K: int, b_layout: str, swapped: bool) -> str:
    """tf32x3_split=auto: the built-in (in_loop) at long K; for the swapped product "a" from
    N = 4096; otherwise, where B goes through a K-major copy anyway (which then writes 12 bytes
    per element of B instead of 8) and M > 512, "ab" from N = 4096, else "b"."""
    if K >= 4 * max(M, N):
        return "in_loop"
    if swapped:
        return "a" if N >= X3_SPLIT_A_MIN_N else "in_loop"
    if b_layout != "copy:k_major" or M <= X3_SPLIT_MIN_M:
        return "in_loop"
    return "ab" if N >= X3_SPLIT_A_MIN_N else "b"


def worth_copying(precision: str, M: int, N: int, K: int, operand: str) -> bool:
    per_byte = (N if operand == "a" else M) / 4
    return per_byte >= COPY_MIN_FLOPS_PER_BYTE[precision]


def _layouts(precision: str, M: int, N: int, tile: Tile, k_major_b: bool = False) -> tuple[str, str]:
    """(A major, B major) the kernel prefers: "k"/"m" for A, "n"/"k" for B."""
    if precision == "fp32":
        return ("m" if N >= M_MAJOR_A_MIN_N else "k"), ("k" if k_major_b else "n")
    return "k", ("k" if k_major_b or _k_major_b(precision, M, N) else "n")


# ---------------------------------------------------------------------------------------------
# Plan and launch.


_TILE_RE = re.compile(r"^(\d+)x(\d+)x(\d+)(?:/(\d+)(?:/(\d+))?)?$")


def parse_tile(text: str) -> Tile:
    m = _TILE_RE.match(str(text).strip())
    if not m:
        raise ValueError("expected BMxBNxBK[/warps[/stages]], e.g. 128x128x32/8/3")
    bm, bn, bk = (int(g) for g in m.groups()[:3])
    for nm, v in (("BM", bm), ("BN", bn), ("BK", bk)):
        if v < 16 or v & (v - 1) or v > 256:
            raise ValueError(f"{nm}={v} must be a power of two in 16..256")
    warps = int(m.group(4)) if m.group(4) else (8 if bm * bn >= 128 * 128 else 4)
    if warps not in (1, 2, 4, 8, 16):
        raise ValueError(f"warps={warps} must be 1, 2, 4, 8 or 16")
    stages = int(m.group(5)) if m.group(5) else 3
    if not 1 <= stages <= 8:
        raise ValueError(f"stages={stages} must be 1..8")
    return Tile(bm, bn, bk, warps, stages)


def _parse_positive(text) -> int:
    n = int(text)
    if n < 1:
        raise ValueError(f"{n} is not a positive number")
    return n


OPTIONS = (
    Option("tile", "BMxBNxBK[/warps[/stages]] (default: the per-shape heuristic), e.g. 128x128x32/8/3",
           parse_tile),
    Option("mode", "decomposition: dp (one program per tile) or sk (hybrid data-parallel + stream-K "
           "for the last partial wave); default: the heuristic", parse_choice(DECOMPOSITIONS)),
    Option("grid", "number of stream-K programs (default: up to the SM count, >= "
           f"{MIN_SK_ITERS} K-iterations each); implies mode=sk", _parse_positive),
    Option("sms", "SM count the decomposition assumes (default: the GPU's)", _parse_positive),
    Option("sk_align", "auto (default: on for tf32 when A and B overflow the L2), on: a stream-K "
           "grid that is a multiple of the tile count (every tile's k-th range starts at the same "
           "K offset, so tiles sharing A rows or B columns read them from L2 together; at most "
           f"{ALIGN_MAX_IDLE:.0%} of the programs idle, else the full grid; implies mode=sk), off: the full grid",
           parse_choice(("auto", "on", "off"))),
    Option("hint", "on (default): 16-byte alignment hints where true; off: none (what Triton does "
           "unhinted, for comparison)", parse_on_off),
    Option("operands", "auto (default: copy an operand only when it can't be read with 16-byte "
           "loads, plus fp32's M-major A for N >= 2048 and tf32/tf32x3's K-major B for large M; "
           "either only where the GEMM has enough flops per copied byte), "
           "direct (the layouts as given; a copy only where 16-byte loads are impossible), "
           "as_given (never copy: 4-byte loads where 16-byte ones are impossible), "
           "k_major_b (auto, but B always through a K-major copy), copy (A and B always copied "
           "into aligned buffers), copy_a / copy_b (A / B copied wherever it can't be read in the "
           "layout auto prefers with 16-byte loads, the other never copied)", parse_choice(OPERAND_CHOICES)),
    Option("b_transpose", "tf32/tf32x3 only: how a row-major (N-major) B reaches the tensor cores, "
           "which take a 32-bit B only K-major: auto (default), copy (a K-major copy before the "
           "GEMM), load (read as given; the compiler transposes with 4-byte async copies), swap "
           "(computes C^T = B^T A^T with B^T as the register operand)", parse_choice(B_TRANSPOSE_CHOICES)),
    Option("tf32x3_split", "tf32x3 only: where A and B are split into TF32 big and small parts: auto "
           "(default: b where B goes through a K-major copy anyway), in_loop (Triton's built-in: both "
           "tiles at every k-step), b (B once, by its K-major copy; implies b_transpose=copy), ab (A "
           "and B once, by copies), a (A once, by a copy, for the swapped product C^T = B^T A^T; "
           "implies b_transpose=swap)", parse_choice(X3_SPLIT_CHOICES)),
)


class _Plan:
    def __init__(self, A, B, C, alpha, beta, precision, deterministic, options=None):
        options = dict(options or {})
        self.M, self.K = A.shape
        self.N = B.shape[1]
        self.C, self.alpha, self.beta, self.precision = C, float(alpha), float(beta), precision
        self.deterministic = deterministic
        sms = options.get("sms") or (INTERPRET_SMS if interpreting() else sm_count(A.device))
        mode = options.get("mode")
        grid = options.get("grid")
        if grid is not None:
            if mode == "dp":
                raise UsageError("options grid= and mode=dp contradict each other: grid is the stream-K program count")
            mode = "sk"
        tile = options.get("tile")
        if isinstance(tile, str):
            tile = parse_tile(tile)
        sk_align = options.get("sk_align", "auto")
        if grid is not None and sk_align != "auto":
            raise UsageError(f"options grid= and sk_align={sk_align} contradict each other: grid sets the program count")
        if mode == "dp" and sk_align == "on":
            raise UsageError("options mode=dp and sk_align=on contradict each other: sk_align shapes the stream-K grid")
        if sk_align == "on":
            mode = "sk"
        align = None if sk_align == "auto" else sk_align == "on"
        self.tile, self.d = choose_plan(self.M, self.N, self.K, precision, sms, tile, mode, grid, align,
                                        l2_bytes(A.device))

        operands = options.get("operands", "auto")
        b_transpose = options.get("b_transpose", "auto")
        if b_transpose != "auto" and precision == "fp32":
            raise UsageError("option b_transpose applies to tf32 and tf32x3 (tensor cores); fp32 uses FFMA")
        if b_transpose != "auto" and operands == "k_major_b" and b_transpose != "copy":
            raise UsageError(f"options operands=k_major_b and b_transpose={b_transpose} contradict each other")
        if b_transpose == "copy" and operands in ("as_given", "copy_a"):
            raise UsageError(f"options operands={operands} (B not copied) and b_transpose=copy contradict each other")
        x3_split = options.get("tf32x3_split", "auto")
        if x3_split != "auto" and precision != "tf32x3":
            raise UsageError(f"option tf32x3_split applies to precision tf32x3, not {precision}")
        if x3_split in ("b", "ab"):
            # B is split by its K-major copy.
            if b_transpose in ("load", "swap"):
                raise UsageError(f"options tf32x3_split={x3_split} (B split by a K-major copy) and "
                                 f"b_transpose={b_transpose} contradict each other")
            if operands in ("as_given", "copy_a") or (x3_split == "ab" and operands == "copy_b"):
                raise UsageError(f"options tf32x3_split={x3_split} (copies) and operands={operands} (no copy of "
                                 f"{'A' if operands == 'copy_b' else 'B'}) contradict each other")
            b_transpose = "copy"
        if x3_split == "a":
            # A^T, the swapped product's shared-memory operand, is split by a copy of A.
            if b_transpose in ("load", "copy") or operands in ("as_given", "k_major_b", "copy_b"):
                raise UsageError(f"option tf32x3_split=a (the swapped product, A split by a copy) contradicts "
                                 f"{'b_transpose=' + b_transpose if b_transpose != 'auto' else 'operands=' + operands}")
            b_transpose = "swap"
        if b_transpose == "auto" and operands in ("auto", "as_given", "copy_a", "copy_b") and _swap_pays(precision, self.M, self.N, B, self.tile):
            b_transpose = "swap"
        a_major, b_major = _layouts(precision, self.M, self.N, self.tile,
                                    k_major_b=operands == "k_major_b" or b_transpose == "copy")
        if b_transpose in ("load", "swap"):
            b_major = "n"
        if operands in ("direct", "as_given"):
            # The layouts as given.
            a_major = "m" if A.stride(0) == 1 and A.stride(1) != 1 else "k"
            b_major = "k" if B.stride(0) == 1 and B.stride(1) != 1 else "n"
        # A copy is taken only where it pays for itself (worth_copying), always with
        # operands=copy/direct/k_major_b (copy_a / copy_b: for that operand), never with
        # as_given (4-byte loads where unaligned).
        M, N, K = self.M, self.N, self.K
        copy_a = operands in ("copy", "direct", "k_major_b", "copy_a") or (
            operands == "auto" and worth_copying(precision, M, N, K, "a"))
        copy_b = operands in ("copy", "direct", "k_major_b", "copy_b") or b_transpose == "copy" or (
            operands == "auto" and worth_copying(precision, M, N, K, "b"))
        self.a = _prepare_a(A, a_major, allow_direct=operands != "copy", allow_copy=copy_a)
        self.b = _prepare_b(B, b_major, allow_direct=operands != "copy", allow_copy=copy_b)
        # The swapped product only where B reaches the dot N-major.
        self.swap_ab = b_transpose == "swap" and precision != "fp32" and not self.b.k_contiguous
        if precision == "tf32x3" and x3_split == "auto":
            x3_split = x3_split_plan(M, N, K, self.b.layout, self.swap_ab)
        if x3_split in ("b", "ab"):
            if not (self.b.copy_dst is not None and self.b.k_contiguous):
                self.b = _prepare_b(B, "k", allow_direct=False)
            self.b = self.b.split()
        if x3_split == "a" and not self.swap_ab:
            raise UsageError("tf32x3_split=a needs the swapped product, which reads B N-major; this B "
                             f"is read {self.b.layout} K-major: use tf32x3_split=b or ab")
        if x3_split in ("ab", "a"):
            if not (self.a.copy_dst is not None and self.a.k_contiguous):
                self.a = _prepare_a(A, "k", allow_direct=False)
            self.a = self.a.split()
        self.x3_split = x3_split if precision == "tf32x3" else "n/a"
        # The 16-byte hints where true (every copy satisfies them; an operand read as given
        # only when its strides do); hint=off only to compare with what Triton does unhinted
        # (python -m triton_kernels.stream_k --ptx).
        self.hint = bool(options.get("hint", True))
        self.a_hint = self.hint and self.a.hinted
        self.b_hint = self.hint and self.b.hinted
        self.c_hint = self.hint and (C.stride(1) == 1 and C.stride(0) % 4 == 0 and self.N % 4 == 0 and _aligned(C))

        d, t = self.d, self.tile
        self.sk_q, self.sk_r = (divmod(d.sk_tiles * d.iters, d.sk_programs) if d.sk_programs else (0, 0))
        self.W = None
        # The fixup's (partials per step, piece rows, piece columns), fixed by the plan.
        self.fixup = fixup_shape(most_partials(d.iters, self.sk_q), t.bm, t.bn)
        if d.sk_programs and deterministic:
            n = d.sk_programs * d.max_segments * t.bm * t.bn
            if n > 2**31 - 1:
                raise UsageError(f"stream-K workspace of {n} elements exceeds 32-bit indexing; use fewer programs")
            self.W = torch.empty(n, device=A.device, dtype=torch.float32)
        split_tiles = sum(1 for tt in range(d.sk_tiles) if self._split(tt))
        given = sorted(k for k, v in options.items() if v is not None)
        self.config = {
            "tile": f"{t.bm}x{t.bn}x{t.bk}", "num_warps": t.warps, "num_stages": t.stages, "group_m": t.group_m,
            "decomposition": d.mode, "tiles": d.tiles, "iters_per_tile": d.iters, "sk_tiles": d.sk_tiles,
            "split_tiles": split_tiles, "sk_programs": d.sk_programs, "dp_tiles": d.dp_tiles, "grid": d.grid,
            "sms": sms, "programs_per_sm": programs_per_sm(t),
            "sk_align": ("n/a" if not d.sk_programs else "on" if d.aligned else "off"), "fixup": ("none" if not split_tiles else
                                  "workspace + fixed-order fixup kernel" if deterministic else
                                  "beta pre-scale + atomic_add"),
            "operands": f"A {self.a.layout}, B {self.b.layout}", "operand_copy_bytes":
                self.a.copy_bytes() + self.b.copy_bytes(), "c_vector_hint": self.c_hint,
            "b_transpose": ("n/a" if precision == "fp32" else "k_major" if self.b.k_contiguous else
                            "swap" if self.swap_ab else "load"),
            "input_precision": DOT_PRECISION[precision], "tf32x3_split": self.x3_split,
            # What the user set (any option: operands, b_transpose and tf32x3_split change the
            # plan as much as tile does), as the CUDA family records it.
            "chosen_by": (f"user ({', '.join(given)}), heuristic (the rest)" if given else "heuristic"),
        }

    def _split(self, tile: int) -> bool:
        """Host twin of the kernels' test: is stream-K tile ``tile`` shared by two programs?"""
        lo = tile * self.d.iters
        return self._owner(lo + self.d.iters - 1) > self._owner(lo)

    def _owner(self, i: int) -> int:
        q, r = self.sk_q, self.sk_r
        big = r * (q + 1)
        return i // (q + 1) if i < big else r + (i - big) // max(q, 1)

    def _common(self):
        t = self.tile
        return dict(BLOCK_M=t.bm, BLOCK_N=t.bn, BLOCK_K=t.bk, GROUP_M=t.group_m)

    def launch(self):
        C, d, t = self.C, self.d, self.tile
        self.a.fill()
        self.b.fill()
        av, bv = self.a.view, self.b.view
        split = self.config["split_tiles"] > 0
        atomic = split and not self.deterministic
        if atomic:
            _scale_tiles_kernel[(d.sk_tiles,)](C, self.M, self.N, C.stride(0), C.stride(1), self.beta, self.K,
                                               self.sk_q, self.sk_r, BETA_ZERO=self.beta == 0, C_HINT=self.c_hint,
                                               num_warps=4, **self._common())
        w = self.W if self.W is not None else C
        a_small = self.a.small if self.a.small is not None else av
        b_small = self.b.small if self.b.small is not None else bv
        _stream_k_kernel[(d.grid,)](
            av, bv, C, w, a_small, b_small, self.M, self.N, self.K, self.a.wrap, self.b.wrap,
            av.stride(0), av.stride(1), bv.stride(0), bv.stride(1), C.stride(0), C.stride(1),
            self.alpha, self.beta, 1.0, d.sk_tiles, d.sk_programs, self.sk_q, self.sk_r, d.max_segments,
            DOT_PRECISION=DOT_PRECISION[self.precision], SWAP_AB=self.swap_ab,
            SPLIT_A=self.a.small is not None, SPLIT_B=self.b.small is not None, MASK_NAN=X3_MASK_NAN,
            ATOMIC=atomic, HAS_BETA=self.beta != 0,
            A_K_CONTIG=self.a.k_contiguous, B_K_CONTIG=self.b.k_contiguous, A_HINT=self.a_hint,
            B_HINT=self.b_hint, C_HINT=self.c_hint,
            EVEN_K=self.K % t.bk == 0, num_warps=t.warps, num_stages=t.stages, **self._common())
        if split and self.deterministic:
            segs, fm, fn = self.fixup
            _fixup_kernel[(d.sk_tiles, (t.bm // fm) * (t.bn // fn))](
                self.W, C, self.M, self.N, self.K, C.stride(0), C.stride(1), self.alpha, self.beta,
                self.sk_q, self.sk_r, d.max_segments, HAS_BETA=self.beta != 0, C_HINT=self.c_hint,
                FIX_M=fm, FIX_N=fn, FIX_SEGS=segs, num_warps=4, **self._common())


def _matmul(name, A, B, C, alpha, beta, precision, deterministic, options):
    check_gemm_args(name, A, B, C, alpha, beta, precision, PRECISIONS)
    _Plan(A, B, C, alpha, beta, precision, deterministic, options).launch()
    return C


def stream_k_matmul(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, alpha: float = 1.0, beta: float = 0.0,
                    precision: str = "fp32", **options) -> torch.Tensor:
    """Deterministic stream-K: C = alpha*A@B + beta*C in place; returns C. ``options``: the
    kernel's options (tile, sk, grid, sms, operands, b_transpose) as parsed values."""
    return _matmul("stream_k_matmul", A, B, C, alpha, beta, precision, True, options)


def stream_k_atomic_matmul(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, alpha: float = 1.0,
                           beta: float = 0.0, precision: str = "fp32", **options) -> torch.Tensor:
    """Stream-K with atomic fixup (last bits depend on the order): C = alpha*A@B + beta*C."""
    return _matmul("stream_k_atomic_matmul", A, B, C, alpha, beta, precision, False, options)


STAGE = "stream_k"   # stage 11 of the ladder (declared in compare/harness/registry.py)
_META = {"heuristic": "tile by M (16/32/64/128 rows x 128 x 32), dp vs hybrid stream-K by wave fill; "
                      "tf32/tf32x3 with few rows computes C^T = B^T A^T (b_transpose=swap); "
                      "tf32x3 splits operands into TF32 parts by their copies where that pays (tf32x3_split); "
                      "options tile/sk/grid/sms/operands/b_transpose/sk_align/tf32x3_split override",
         "alignment": "16-byte hints where strides are multiples of 4, aligned copies otherwise"}


def _register(kernel: Kernel) -> Kernel:
    # ``python -m triton_kernels.stream_k`` runs this file again as __main__ after importing the
    # package has registered it: the registry refuses a second kernel of the same name, so the
    # CLI (--ptx, --ptx-check, --compile-check) takes the registered one.
    if __name__ == "__main__":
        from compare.harness import registry
        return registry.get(kernel.name)
    return register(kernel)


KERNEL = _register(Kernel(
    name="triton.stream_k", family="triton", stage=STAGE, variant="deterministic",
    precisions=PRECISIONS, prepare=plan_prepare("triton.stream_k", _Plan, True), interpretable=True,
    options=OPTIONS,
    idea="stream-K: the last partial wave's tiles x K-iterations split evenly over the SMs; split tiles' "
         "partials summed in a fixed order by a fixup kernel (bit-identical run to run)",
    meta=_META,
))

KERNEL_ATOMIC = _register(Kernel(
    name="triton.stream_k_atomic", family="triton", stage=STAGE, variant="atomic",
    precisions=PRECISIONS, prepare=plan_prepare("triton.stream_k_atomic", _Plan, False), interpretable=True,
    options=OPTIONS,
    idea="stream-K with split tiles pre-scaled by beta and their segments tl.atomic_add'ed "
         "(non-deterministic summation order)",
    meta=_META,
))


# ---------------------------------------------------------------------------------------------
# The alignment study (module docstring): compile for sm_90 without a GPU and count the global
# copies by width. ``python -m triton_kernels.stream_k --ptx [OUT.txt]``.


def compile_sm90(fn, args: dict, constexprs: dict, num_warps: int, num_stages: int):
    """Compile jitted ``fn`` for sm_90 as the JIT would for these argument values (same
    specialisation: pointers and ints divisible by 16 get tt.divisibility=16, ints equal to 1
    become constants), without a GPU. Returns the CompiledKernel (``.asm["ptx"]``)."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend, GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler import compile as triton_compile
    sig, attrs, consts = {}, {}, {}
    for i, name in enumerate(fn.arg_names):
        if name in constexprs:
            sig[name], consts[name] = "constexpr", constexprs[name]
            continue
        ty, attr = native_specialize_impl(BaseBackend, args[name], False, True, True)
        sig[name] = ty
        if ty == "constexpr":
            consts[name] = args[name]
        if isinstance(attr, str) and attr:
            attrs[(i,)] = BaseBackend.parse_attr(attr)
    return triton_compile(ASTSource(fn, sig, consts, attrs), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": num_warps, "num_stages": num_stages})


_PTX_COUNTS = {
    "cp.async 16B": r"cp\.async\.cg\.shared\.global[^;]*, 0x10",
    "cp.async 8B": r"cp\.async\.ca\.shared\.global[^;]*, 0x8",
    "cp.async 4B": r"cp\.async\.ca\.shared\.global[^;]*, 0x4",
    "ld.global.v4": r"ld\.global[\w.]*\.v4",
    "ld.global.b32": r"ld\.global(?:\.(?!v\d)\w+)*\.b32\s",
    "st.global.v4": r"st\.global[\w.]*\.v4",
    "st.global.b32": r"st\.global(?:\.(?!v\d)\w+)*\.b32\s",
}


def ptx_counts(ptx: str) -> dict:
    return {k: len(re.findall(p, ptx)) for k, p in _PTX_COUNTS.items()}


def _ptx_study(out_path: Optional[str]) -> str:
    import os
    from . import _gemm, tiled
    lines = ["# PTX for sm_90 (compiled on a CPU box by python -m triton_kernels.stream_k --ptx),",
             f"# triton {triton.__version__}; counts of global copy instructions in the kernel text",
             "# (loop bodies are counted once, not per iteration).", ""]
    for prec in ("fp32", "tf32"):
        for n in (1024, 1000, 1001):
            A, B, C = torch.empty(n, n), torch.empty(n, n), torch.empty(n, n)
            fn = _gemm.bare(tiled._tiled_kernel)
            args = dict(a_ptr=A, b_ptr=B, c_ptr=C, M=n, N=n, K=n, stride_am=n, stride_ak=1, stride_bk=n,
                        stride_bn=1, stride_cm=n, stride_cn=1, alpha=1.0, beta=0.0)
            ce = dict(PRECISION=DOT_PRECISION[prec], HAS_BETA=False, BLOCK_M=128, BLOCK_N=128, BLOCK_K=32,
                      GROUP_M=8, EVEN_K=n % 32 == 0)
            k = compile_sm90(fn, args, ce, 8, STAGES[prec])
            lines.append(f"triton.tiled {prec} {n}^3 (B row-major as given, 128x128x32/8): "
                         f"{ptx_counts(k.asm['ptx'])}")
            for hint in (False, True):
                plan_args, plan_ce, t = _study_args(n, prec, hint)
                k = compile_sm90(_stream_k_kernel, plan_args, plan_ce, t.warps, t.stages)
                lines.append(f"triton.stream_k {prec} {n}^3 hint={'on' if hint else 'off'} "
                             f"(operands {plan_ce.pop('_layout')}): {ptx_counts(k.asm['ptx'])}")
        lines.append("")
    text = "\n".join(lines) + "\n"
    if out_path:
        tmp = out_path + ".tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, out_path)
    return text


def _study_args(n: int, prec: str, hint: bool):
    A, B, C = torch.empty(n, n), torch.empty(n, n), torch.empty(n, n)
    plan = _Plan(A, B, C, 1.0, 0.0, prec, True, {"hint": hint, "sms": 132, "tile": Tile(128, 128, 32, 8, STAGES[prec])})
    av, bv = plan.a.view, plan.b.view
    args = dict(a_ptr=av, b_ptr=bv, c_ptr=C, w_ptr=C, a_small_ptr=av, b_small_ptr=bv, M=n, N=n, K=n, M_wrap=plan.a.wrap, N_wrap=plan.b.wrap,
                stride_am=av.stride(0), stride_ak=av.stride(1), stride_bk=bv.stride(0), stride_bn=bv.stride(1),
                stride_cm=C.stride(0), stride_cn=C.stride(1), alpha=1.0, beta=0.0, one=1.0, SK_TILES=plan.d.sk_tiles,
                SK_PROGRAMS=plan.d.sk_programs, SK_Q=plan.sk_q, SK_R=plan.sk_r, MAX_SEG=plan.d.max_segments)
    ce = dict(DOT_PRECISION=DOT_PRECISION[prec], SWAP_AB=plan.swap_ab, SPLIT_A=False, SPLIT_B=False, MASK_NAN=X3_MASK_NAN, ATOMIC=False, HAS_BETA=False, A_K_CONTIG=plan.a.k_contiguous,
              B_K_CONTIG=plan.b.k_contiguous, A_HINT=plan.a_hint, B_HINT=plan.b_hint, C_HINT=plan.c_hint,
              BLOCK_M=128, BLOCK_N=128,
              BLOCK_K=32, GROUP_M=8, EVEN_K=n % 32 == 0, _layout=plan.config["operands"])
    return args, ce, plan.tile


def _ptx_check() -> dict:
    """fp32 1000^3 stream-K for sm_90 with the 16-byte hint off and on: {hint: counts}
    (tests/test_triton_stream_k.py runs it in a subprocess without TRITON_INTERPRET)."""
    out = {}
    for hint in (False, True):
        args, ce, t = _study_args(1000, "fp32", hint)
        ce.pop("_layout")
        out["on" if hint else "off"] = ptx_counts(compile_sm90(_stream_k_kernel, args, ce, t.warps, t.stages).asm["ptx"])
    return out


_BLOCKED_RE = re.compile(r"^#(blocked\d*) = #ttg\.blocked<\{sizePerThread = \[([\d, ]+)\], "
                         r"threadsPerWarp = \[([\d, ]+)\], warpsPerCTA = \[[\d, ]+\], order = \[([\d, ]+)\]", re.M)
_TILE_LOAD_RE = re.compile(r"(?:async_copy_global_to_local|tt\.load) .*?: tensor<(\d+)x(\d+)x!tt\.ptr<f32>, #(blocked\d*)>")


def load_lanes(ttgir: str, block_m: int, block_n: int, block_k: int) -> dict:
    """Which axis consecutive lanes of a warp walk in a compiled kernel's global loads of
    BLOCK_M x BLOCK_K A tiles and BLOCK_K x BLOCK_N B tiles (from its TTGIR): {"a": {"m"|"k"},
    "b": {"k"|"n"}}. A coalesced load walks the operand's contiguous axis; a load whose lanes
    walk the other axis touches one row (or column) per lane. The A and B tile shapes must
    differ (BLOCK_M x BLOCK_K vs BLOCK_K x BLOCK_N) to be told apart."""
    assert (block_m, block_k) != (block_k, block_n), "A and B tiles of one shape can't be told apart"
    layouts = {name: ([int(x) for x in tpw.split(",")], [int(x) for x in order.split(",")])
               for name, _, tpw, order in _BLOCKED_RE.findall(ttgir)}
    shapes = {(block_m, block_k): ("a", "mk"), (block_k, block_n): ("b", "kn")}
    out = {"a": set(), "b": set()}
    for rows, cols, name in _TILE_LOAD_RE.findall(ttgir):
        if (int(rows), int(cols)) not in shapes:
            continue
        operand, axes = shapes[(int(rows), int(cols))]
        tpw, order = layouts[name]
        fastest = next((d for d in order if tpw[d] > 1), order[0])
        out[operand].add(axes[fastest])
    return out


def operand_load_lanes(M: int, N: int, K: int, precision: str, options: dict) -> dict:
    """load_lanes of triton.stream_k's GEMM kernel for this problem and ``options`` ({name:
    text}), compiled for sm_90 without a GPU."""
    (fn, args, ce, warps, stages), = [s for s in launch_specs(M, N, K, precision, 1.0, 0.0, True, options)
                                      if s[0].__name__ == "_stream_k_kernel"]
    ttgir = compile_sm90(fn, args, ce, warps, stages).asm["ttgir"]
    return load_lanes(ttgir, ce["BLOCK_M"], ce["BLOCK_N"], ce["BLOCK_K"])


def launch_specs(M: int, N: int, K: int, precision: str, alpha: float, beta: float, deterministic: bool,
                 options: dict) -> list:
    """What ``prepare(...)()`` of triton.stream_k (``deterministic``) / triton.stream_k_atomic
    launches for a contiguous problem and ``options`` ({name: text}, as the CLI takes them), as
    ``(jitted kernel, args, constexprs, num_warps, num_stages)``: the operand copies, the
    beta pre-scale, the GEMM kernel and the fixup, in launch order. The real ``launch()`` runs
    with the kernels' ``[grid]`` launches recorded instead of run (no GPU needed)."""
    kernel = KERNEL if deterministic else KERNEL_ATOMIC
    opts = kernel.parse_options({"sms": "132", **{k: str(v) for k, v in options.items()}})
    specs = []

    class _Recorder:
        def __init__(self, fn):
            self.fn = fn

        def __getitem__(self, grid):
            def record(*args, **kwargs):
                warps, stages = kwargs.pop("num_warps", 4), kwargs.pop("num_stages", 3)
                named = dict(zip(self.fn.arg_names, args), **kwargs)
                ce = {p.name: named.pop(p.name) for p in self.fn.params if p.is_constexpr}
                specs.append((self.fn, named, ce, warps, stages))
            return record

    g = globals()
    names = ("_stream_k_kernel", "_fixup_kernel", "_scale_tiles_kernel")
    copies = ("_transpose_kernel", "_copy_rows_kernel")
    saved, saved_ops = {n: g[n] for n in names}, {n: getattr(ops, n) for n in copies}
    try:
        for n in names:
            g[n] = _Recorder(saved[n])
        for n in copies:
            setattr(ops, n, _Recorder(saved_ops[n]))
        A, B, C = torch.empty(M, K), torch.empty(K, N), torch.empty(M, N)
        _Plan(A, B, C, alpha, beta, precision, deterministic, opts).launch()
    finally:
        g.update(saved)
        for n in copies:
            setattr(ops, n, saved_ops[n])
    return specs


def _compile_check(cases: list) -> list:
    """Compile, for sm_90 (no GPU), every kernel each case's launch would run. ``cases``: [M, N,
    K, precision, alpha, beta, deterministic, {option: text}] lists; returns, per case, a list
    of "<kernel>: ok" / "<kernel>: <full error>" strings."""
    out = []
    for M, N, K, precision, alpha, beta, deterministic, options in cases:
        rows = []
        for fn, args, ce, warps, stages in launch_specs(M, N, K, precision, alpha, beta, deterministic, options):
            try:
                compile_sm90(fn, args, ce, warps, stages)
                rows.append(f"{fn.__name__}: ok")
            except Exception as e:          # the whole message: CompilationError's first line says little
                rows.append(f"{fn.__name__}: {type(e).__name__}: {e}")
        out.append(rows)
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--ptx"]:
        print(_ptx_study(sys.argv[2] if len(sys.argv) > 2 else None), end="")
    elif sys.argv[1:2] == ["--ptx-check"]:
        import json
        print(json.dumps(_ptx_check()))
    elif sys.argv[1:2] == ["--compile-check"] and len(sys.argv) == 3:
        import json
        print(json.dumps(_compile_check(json.loads(sys.argv[2]))))
    elif sys.argv[1:2] == ["--load-lanes"] and len(sys.argv) == 3:
        import json
        print(json.dumps([{k: sorted(v) for k, v in operand_load_lanes(*case).items()}
                          for case in json.loads(sys.argv[2])]))
    else:
        print("usage: python -m triton_kernels.stream_k --ptx [OUT.txt] | --ptx-check | --compile-check JSON_CASES"
              " | --load-lanes JSON_CASES",
              file=sys.stderr)
        sys.exit(2)
