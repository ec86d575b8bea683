"""Triton stream_k's per-shape heuristic: tile, decomposition, operand layouts and copies,
the swapped product and the tf32x3 split, as a cuBLAS-style table of (M, N, K, precision) ->
choice (``choose_plan`` and the rules below it). Every entry can be overridden by an option
(stream_k_plan.OPTIONS); what was measured behind each number is in docs/findings.md.

===============  ==========================================================================
tile             M <= 64 or N <= 64: that side 16/32/64, the other 128, BLOCK_K 32, 4 warps.
                 fp32: long K (K >= 4*max(M, N)) 128x128x32/8/3 or FP32_FEW_ROWS_TILE where
                 64-row tiles pad fewer rows; >= 900 tiles of 128x128: 64x128x32/4/4; less than
                 a wave of 128x128 that 64-row tiles fill data-parallel: FP32_FEW_ROWS_TILE;
                 else 128x128x16/8/4. tf32: 128x256x32/8/3 once those fill 90% of a wave, else
                 TF32_MID_TILE for M > 512 and K < 4*max(M, N), else 128x128x32/8/4. tf32x3:
                 128x128x32/8/3.
decomposition    "dp" when the data-parallel waves are >= 90% full (one or programs_per_sm
                 programs per SM) or a tile has fewer than 2*MIN_SK_ITERS iterations; else "sk"
                 (the last partial wave stream-K): compare/families/decompose.py, TRITON_STREAM_K.
operands         worth_copying / _layouts / _k_major_b.
b_transpose      _swap_pays: "swap" (C^T = B^T A^T) for tf32/tf32x3 at SWAP_MIN_M < M <= SWAP_MAX_M.
sk_align         align_pays: tf32 with A + B larger than the L2 and every tile stream-K.
tf32x3_split     x3_split_plan.
===============  ==========================================================================
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import triton

from compare.families import decompose as model

from ._common import DEFAULT_L2_BYTES
from ._operands import _n_major_hintable

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
