"""Triton stream_k's per-shape heuristic: tile, decomposition, operand layouts and copies,
the swapped product and the tf32x3 split, as a cuBLAS-style table of (M, N, K, precision) ->
choice (``choose_plan`` and the rules below it). Every entry can be overridden by an option
(stream_k_plan.OPTIONS); what was measured behind each number is in docs/findings.md.

===============  ==========================================================================
tile             M <= 64 or N <= 64: that side 16/32/64, the other 128, BLOCK_K 32, 4 warps;
                 but M > 64 and 8 < N <= NARROW_N_MAX (fp32 127, tf32 64), not a tiny output:
                 NARROW_N_TILES (16/32/64 wide, the most rows that leave each program
                 NARROW_N_MIN_ITERS K-iterations). tf32 and tf32x3 at 65-127 columns, M > 64,
                 not a tiny output (NARROW_WIDE_N): 64x64, tf32 64x128 from
                 NARROW_WIDE_TF32_MIN_ITERS K-iterations a program slot.
                 fp32: long K (K >= 4*max(M, N)) 128x128x32/8/3 or FP32_FEW_ROWS_TILE where
                 64-row tiles pad fewer rows; >= 900 tiles of 128x128: 64x128x32/4/4; less than
                 a wave of 128x128 that 64-row tiles fill data-parallel: FP32_FEW_ROWS_TILE;
                 else under 1.1 waves of 128x128 with K < 8192: FP32_FEW_TILES_TILE
                 (64x64x32/4/4); else FP32_PAD_TILE (64x256x16/8/4) where it fills 5 points
                 more of its area than 128x128 tiles (M just past a multiple of 128); else
                 128x128x16/8/4. Small and mid problems of short K (SHORT_K_TILES): fp32's
                 128x128 and 64x128 tiles 64x64x16/4/3, tf32x3's 128x128 128x64x32/4/2.
                 tf32: 128x256x32/8/3 once those fill 90% of a wave, else TF32_MID_TILE
                 data-parallel for M > 512 and K < 4*max(M, N) where its tiles fill 90% of a
                 wave of SMs, else 128x128x32/8/4. tf32x3: 128x128x32/8/3 (64x64 where it pads
                 less lost on held-out shapes: docs/findings.md), X3_FEW_TILES_TILE (64x64)
                 under half a wave of 128x128 with both sides over 128 and K <= 2048;
                 outputs of at most 64x64 and 33-64 columns (not tiny outputs) of more rows:
                 fp32's plan (tf32x3_split=ffma), but tiny outputs of 9-64 rows and at most 64
                 columns (x3_tiny_swap) the swapped product.
decomposition    "dp" when the data-parallel waves are >= 90% full (one or programs_per_sm
                 programs per SM) or a tile has fewer than 2*MIN_SK_ITERS iterations; else "hybrid"
                 (the last partial wave stream-K): compare/families/decompose.py, TRITON_STREAM_K.
                 tf32 tiny outputs (M*N <= 4096, K >= 16 max(M, N), N > 8) on tiles of at
                 least 64x32 or 32x64, and fp32 and tf32x3 ones of one tile and at most
                 TINY_SHORT_K_TILES K-tiles a program at one an SM: one stream-K program per
                 SM, not programs_per_sm (tiny_output_per_sm); fp32 and tf32x3 ones on tiles of
                 at least 64x64 whose programs get at most TINY_HALF_K_MAX_TILES K-tiles: BLOCK_K
                 16 (tiny_output_half_k). Those two rules: stream_k_tiny.py.
operands         worth_copying / _layouts / _k_major_b.
b_transpose      _swap_pays: "swap" (C^T = B^T A^T) for tf32/tf32x3 at SWAP_MIN_M < M <= SWAP_MAX_M,
                 tf32 tiny outputs of at most 64 columns, tf32x3 ones x3_tiny_swap takes.
sk_align         align_pays: tf32 with A + B larger than the L2 and every tile stream-K.
tf32x3_split     x3_split_plan; outputs of at most 64x64 and 33-64 columns (x3_uses_ffma says
                 which; x3_tiny_swap's: "in_loop"), single rows and N <= 8, 65-127 columns
                 where 64x64 tiles give a slot under X3_FFMA_WIDE_MAX_ITERS, and short_k
                 problems of K <= X3_FFMA_SHORT_K: "ffma", fp32's plan.
gemv             M = 1 in fp32 (tf32x3 through ffma) and tf32 (TF32_ON_GEMV_PATH: TF32-truncated
                 inputs on FFMA): the GEMV of stream_k_gemv.py, not a tile.
skinny           N <= 8 (M > 1) in fp32 (tf32x3 through ffma): A read once by the FFMA kernel of
                 stream_k_skinny.py, K split to fill the SMs; tf32 keeps the tile GEMM
                 (TF32_ON_SKINNY_PATH off; mode=skinny takes tf32 on TF32-truncated inputs).
ws               tf32 on sm_90 with A and B TMA-readable and N >= 64: 128 < M < 6144 with a grid
                 of tiles x K ranges that fills the SMs, or a small problem (K <= 2048,
                 M*N <= 8M) of M > 64 and at least 8 tiles (ws_pays): the warp-specialised
                 Gluon GEMM of stream_k_gluon.py, B read as stored.
===============  ==========================================================================
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import torch
import triton

from compare.families import decompose as model

from ._common import DEFAULT_L2_BYTES
from ._operands import _n_major_hintable
from .stream_k_decomposition import DP_WAVE_EFFICIENCY, Decomposition, Tile, decompose, programs_per_sm
from .stream_k_gemv import GEMV_MAX_M
from .stream_k_skinny import SKINNY_MAX_N
from .stream_k_tiny import *  # noqa: F401,F403  (the tiny-output rules, re-exported with the table)
from .stream_k_tiny import tiny_output, tiny_output_half_k, tiny_output_per_sm

STAGES = {"fp32": 3, "tf32": 4, "tf32x3": 3}
BLOCK_K = 32
DECOMPOSITIONS = ("dp", "hybrid", "gemv", "skinny", "ws")


def align_pays(precision: str, M: int, N: int, K: int, tile: Tile, l2: int) -> bool:
    """Line the stream-K ranges up across tiles (``decompose(align=True)``)? For tf32 when A and B
    together overflow the L2 and the operand bytes more than one tile reads are at least a quarter
    of it: tiles sharing A rows or B columns then read them at the same K offsets, not each
    from DRAM again (5.1x the minimum bytes at 1024x1024x16384;
    docs/findings.md#aligned-stream-k-ranges-sk_align)."""
    shared = (4 * M * K if N > tile.bn else 0) + (4 * K * N if M > tile.bm else 0)
    return precision == "tf32" and 4 * K * (M + N) > l2 and 4 * shared >= l2


def _small(n: int) -> int:
    """Block size for a dimension of at most 64: the next of 16, 32, 64."""
    return 16 if n <= 16 else 32 if n <= 32 else 64


def _small_m_tile(M: int, precision: str) -> Tile:
    return Tile(_small(M), 128, 32, 4, STAGES[precision])


# fp32 64-row tiles where 128x128 tiles are under a wave or pad more rows at long K (257 rows: 320
# of 64-row tiles against 384; docs/findings.md#fp32-64-row-tiles-fp32_few_rows_tile).
FP32_FEW_ROWS_TILE = Tile(64, 128, 16, 4, 4)


# tf32 outputs of 513+ rows that 128x256 tiles can't fill a wave with (1024^3: 32 tiles for 132
# SMs): 128x64 data-parallel once its tiles fill a wave (128 there), else 128x128 stream-K
# (docs/findings.md#tf32-mid-size-outputs-tf32_mid_tile).
TF32_MID_TILE = Tile(128, 64, 32, 4, 4)


# tf32x3 small problems (K <= 2048) of fewer 128x128 tiles than half the SMs, both sides over 128:
# 64x64x32/4/3 tiles, data-parallel or stream-K by the wave rule (longer K was not tried). On
# tune_small's 6 such shapes 1.02-1.23x (384x384x2048: 89% -> 100% of cuBLAS fp32; 1000^3 107% ->
# 132%); where a side is at most 128 or the 128x128 tiles reach half a wave they lost 6-34%
# (results/h100/tf32-small/ab-tune/, variants/).
X3_FEW_TILES_TILE = Tile(64, 64, 32, 4, 3)
X3_FEW_TILES, X3_FEW_TILES_MIN_SIDE, X3_FEW_TILES_MAX_K = 0.5, 128, 2048

# fp32 outputs of under ~1.1 waves of 128x128 tiles, K under 8192: 64x64 tiles, four times as many
# to share out (at K >= 8192 two of three such shapes lost; docs/findings.md#few-tiles-and-padded-tiles).
FP32_FEW_TILES_TILE = Tile(64, 64, 32, 4, 4)
FP32_FEW_TILES, FP32_FEW_TILES_MAX_K = 1.1, 8192

# fp32 where 64x256 tiles leave at least 5 points more of their area in the output than 128x128
# ones (M just past a multiple of 128: 320 rows fill 83% of 384): 64x256x16/8/4, same area and
# warps; all 10 such tunable shapes gained
# (docs/findings.md#padded-rows-128-row-tiles-just-past-a-multiple-of-128).
FP32_PAD_TILE = Tile(64, 256, 16, 8, 4)
FP32_PAD_MIN_FILL_GAIN = 0.05


# fp32 and tf32 products of a matrix and a few dozen vectors (M > 64, SKINNY_MAX_N < N <=
# NARROW_N_MAX, not a tiny output: the tuning shapes had M >= 256 and N >= 9): the tile
# of the width that pads N least (16, 32 or 64) with the most rows (32, 64, 128) whose tiles still
# give each program slot NARROW_N_MIN_ITERS K-iterations of BLOCK_K. Fewer rows a tile spread a
# small product over more programs (fp32 1200x59x895: 29% -> 86% of cuBLAS with 32x64 tiles
# against 128x64); more rows are cheaper per flop once the slots are busy (13550x41x15980: 98%
# with 128x64, 78% with 32x64). Fit on 64 tuning shapes, fp32 geomean 70 -> 90% of cuBLAS (32-64
# iterations within 1.5 points), tf32 82 -> 89% with the same 48 up to 64 columns (past 64 it
# lost): docs/findings.md#triton-a-matrix-times-9-127-vectors-h200.
NARROW_N_MAX = {"fp32": 127, "tf32": 64}
NARROW_N_MIN_ITERS = 48
NARROW_N_TILES = {   # tile width -> its row choices, fewest rows first (fp32's stages)
    16: (Tile(64, 16, 32, 4, 3), Tile(128, 16, 32, 4, 3)),
    32: (Tile(32, 32, 32, 4, 3), Tile(64, 32, 32, 4, 3), Tile(128, 32, 32, 4, 3)),
    64: (Tile(32, 64, 32, 4, 3), Tile(64, 64, 32, 4, 4), Tile(128, 64, 32, 4, 3)),
}


def iters_per_slot(M: int, N: int, K: int, tile: Tile, sms: int) -> float:
    """K-iterations of ``tile`` over the product, per program slot (programs_per_sm a SM)."""
    work = triton.cdiv(M, tile.bm) * triton.cdiv(N, tile.bn) * triton.cdiv(K, tile.bk)
    return work / (programs_per_sm(tile) * sms)


def narrow_n_tile(M: int, N: int, K: int, precision: str, sms: int) -> Tile:
    """The tile for the narrow class (NARROW_N_TILES, heuristic_plan says where); tf32 with its stages."""
    width = _small(N) if N <= 64 else min((32, 64), key=lambda w: (triton.cdiv(N, w) * w, -w))
    tiles = NARROW_N_TILES[width]
    pick = tiles[0]
    for t in tiles[1:]:
        if iters_per_slot(M, N, K, t, sms) >= NARROW_N_MIN_ITERS:
            pick = t
    return pick if precision == "fp32" else replace(pick, stages=STAGES[precision])


# tf32 and tf32x3 products of a matrix and 65-127 vectors (M > 64, not a tiny output): 64-row tiles,
# not the 128x128 / 128x256 / 128x64 tiles of wide outputs, which computed up to 256 columns for 73
# (20620x94x233: 53% of cuBLAS tf32) or left a small product's few tiles to a stream-K of 1-2
# iterations a program. tf32: 64x64, or 64x128 once its tiles give each program slot
# NARROW_WIDE_TF32_MIN_ITERS K-iterations (8-32 all read 89.6-91.5% of cuBLAS tf32 on the 24
# tuning shapes of the class, against the old rule's 77.0%). tf32x3: 64x64 (85.4% -> 91.9% of cuBLAS
# fp32; 64x128 lost there); where those tiles give a slot fewer than X3_FFMA_WIDE_MAX_ITERS,
# fp32's plan (x3_uses_ffma): 94.4% (6-10 read 94.0-94.9%). Tuning data:
# results/h200/narrow-wide-n/ (docs/findings.md#triton-a-matrix-times-65-127-vectors-h200).
NARROW_WIDE_N = (65, 127)
NARROW_WIDE_TF32_TILES = (Tile(64, 64, 32, 4, 4), Tile(64, 128, 32, 4, 4))
NARROW_WIDE_TF32_MIN_ITERS = 16
NARROW_WIDE_X3_TILE = Tile(64, 64, 32, 4, 3)
X3_FFMA_WIDE_MAX_ITERS = 8


def narrow_wide(M: int, N: int, K: int) -> bool:
    """A matrix times NARROW_WIDE_N vectors: more than 64 rows, not a tiny output."""
    return NARROW_WIDE_N[0] <= N <= NARROW_WIDE_N[1] and M > 64 and not tiny_output(M, N, K)


def narrow_wide_tile(M: int, N: int, K: int, precision: str, sms: int) -> Tile:
    """The tile for narrow_wide at tf32 or tf32x3 (NARROW_WIDE_N says why)."""
    if precision == "tf32x3":
        return NARROW_WIDE_X3_TILE
    small, large = NARROW_WIDE_TF32_TILES
    return large if iters_per_slot(M, N, K, large, sms) >= NARROW_WIDE_TF32_MIN_ITERS else small


# Small and mid problems of short K (K <= SHORT_K_MAX, SHORT_K_OUTPUT elements of C, both sides at
# least SHORT_K_MIN_SIDE: the range the tuning shapes were drawn from). A tile runs a few K-tiles,
# then writes its C; the table's 128x128 tiles of 8 warps hold one program an SM (12% of the warps
# active at 9883x580x57 in tf32x3, ncu), smaller ones two or three to overlap one's stores with
# another's loads. fp32's 128x128x16/8/4 and 64x128x16/4/4 become 64x64x16/4/3, tf32x3's
# 128x128x32/8/3 128x64x32/4/2. On 24 tuning shapes (K 38-482) every row that moved won: fp32
# 1.04-1.38x, tf32x3 1.02-1.35x; on the table's other tiles (64x64x32, 64x256x16) they lost up to
# 12% (results/h200/short-k-small/).
SHORT_K_MAX, SHORT_K_OUTPUT, SHORT_K_MIN_SIDE = 512, (512 * 1024, 8 * 1024 * 1024), 128
SHORT_K_TILES = {   # precision -> (the table's tiles it replaces, the short-K tile)
    "fp32": ((Tile(128, 128, 16, 8, 4), FP32_FEW_ROWS_TILE), Tile(64, 64, 16, 4, 3)),
    "tf32x3": ((Tile(128, 128, 32, 8, 3),), Tile(128, 64, 32, 4, 2)),
}


def short_k(M: int, N: int, K: int) -> bool:
    """A small or mid problem of short K: K <= SHORT_K_MAX, SHORT_K_OUTPUT elements of C, both sides
    at least SHORT_K_MIN_SIDE."""
    return K <= SHORT_K_MAX and SHORT_K_OUTPUT[0] <= M * N <= SHORT_K_OUTPUT[1] and min(M, N) >= SHORT_K_MIN_SIDE


def short_k_tile(M: int, N: int, K: int, precision: str, tile: Tile) -> Optional[Tile]:
    """The short-K tile (SHORT_K_TILES) where the table's ``tile`` is one it replaces, else None.
    tf32x3 only past SWAP_MAX_M rows: no tuning row ran the swapped product on it."""
    replaces, short = SHORT_K_TILES.get(precision, ((), None))
    swapped = precision == "tf32x3" and M <= SWAP_MAX_M
    return short if short_k(M, N, K) and tile in replaces and not swapped else None


def heuristic_plan(M: int, N: int, K: int, precision: str, sms: int) -> tuple[Tile, Optional[str]]:
    """The tile table (module docstring), from results/sweeps_triton_streamk/first.log (H100),
    and the decomposition the tile was measured with ("dp"), or None for decompose's wave rule."""
    tile, preferred = _table_plan(M, N, K, precision, sms)
    short = short_k_tile(M, N, K, precision, tile)
    return (short, None) if short else (tile, preferred)


def _table_plan(M: int, N: int, K: int, precision: str, sms: int) -> tuple[Tile, Optional[str]]:
    if M <= 64:
        t = _small_m_tile(M, precision)
        return (t if N > 64 else Tile(t.bm, _small(N), 32, 4, t.stages)), None
    if SKINNY_MAX_N < N <= NARROW_N_MAX.get(precision, 0) and not tiny_output(M, N, K):
        return narrow_n_tile(M, N, K, precision, sms), None
    if precision in ("tf32", "tf32x3") and narrow_wide(M, N, K):
        return narrow_wide_tile(M, N, K, precision, sms), None
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
        if t128 < FP32_FEW_TILES * sms and K < FP32_FEW_TILES_MAX_K:
            return FP32_FEW_TILES_TILE, None
        if model.tile_fill(M, N, 64, 256) >= model.tile_fill(M, N, 128, 128) + FP32_PAD_MIN_FILL_GAIN:
            return FP32_PAD_TILE, None
        return Tile(128, 128, 16, 8, 4), None
    if precision == "tf32":
        if triton.cdiv(M, 128) * triton.cdiv(N, 256) >= DP_WAVE_EFFICIENCY * sms:
            return Tile(128, 256, 32, 8, 3), None
        if M > SWAP_MAX_M and not long_k and \
                triton.cdiv(M, TF32_MID_TILE.bm) * triton.cdiv(N, TF32_MID_TILE.bn) >= DP_WAVE_EFFICIENCY * sms:
            return TF32_MID_TILE, "dp"
        return Tile(128, 128, 32, 8, 4), None
    if t128 < X3_FEW_TILES * sms and min(M, N) > X3_FEW_TILES_MIN_SIDE and K <= X3_FEW_TILES_MAX_K:
        return X3_FEW_TILES_TILE, None
    return Tile(128, 128, 32, 8, 3), None


def choose_plan(M: int, N: int, K: int, precision: str, sms: int, tile: Optional[Tile] = None,
                mode: Optional[str] = None, sk_programs: Optional[int] = None,
                align: Optional[bool] = None, l2: int = DEFAULT_L2_BYTES) -> tuple[Tile, Decomposition]:
    """The heuristic table of the module docstring: (tile, decomposition). ``align`` None: the
    heuristic (``align_pays`` on an ``l2``-byte L2)."""
    per_sm = None
    if tile is None:
        tile, preferred = heuristic_plan(M, N, K, precision, sms)
        if mode is None and sk_programs is None:
            mode = preferred
            per_sm = tiny_output_per_sm(M, N, K, precision, tile, sms)
            if tiny_output_half_k(M, N, K, precision, tile, sms, mode, per_sm):
                tile = replace(tile, bk=16)
    if align is None:
        align = align_pays(precision, M, N, K, tile, l2)
    return tile, decompose(M, N, K, tile, sms, mode, sk_programs, align, per_sm)


# fp32 (FFMA) reads A M-major from this N up (triton.tiled's measured rule, _gemm.M_MAJOR_A_MIN_N).
M_MAJOR_A_MIN_N = 2048
# tf32/tf32x3 copy B K-major (wgmma reads a 32-bit B from shared memory only K-major) where it
# paid: tf32 from M > 128, tf32x3 from M > 32 with N > 64
# (docs/findings.md#tf32tf32x3-b-through-a-k-major-copy).
def _k_major_b(precision: str, M: int, N: int) -> bool:
    if precision == "tf32":
        return M > 128
    return M > 32 and N > 64


OPERAND_CHOICES = ("auto", "direct", "as_given", "k_major_b", "copy", "copy_a", "copy_b")
# How a B that is not K-major reaches wgmma at tf32/tf32x3 (_dot): a K-major copy ("copy"), the
# compiler's 4-byte async copies ("load") or the swapped product ("swap", SWAP_AB).
B_TRANSPOSE_CHOICES = ("auto", "copy", "load", "swap")
# tf32x3: where the TF32 big/small split happens (_dot_x3). in_loop: Triton's built-in, both
# tiles split at every k-step; b: B split once by its K-major copy, A in the loop; ab: both
# split by copies; a (the swapped product): A split by a copy, B^T in the loop.
X3_SPLIT_CHOICES = ("auto", "in_loop", "a", "b", "ab", "ffma")
# ffma: no split; fp32's plan and IEEE dots on the FFMA pipe, for outputs of at most
# X3_FFMA_MAX_SIDE on both sides. Such a product does at most 16 flops per byte of A and B read
# (64*64 / (2*128)), which FFMA sustains at HBM speed, so tf32x3's three TF32 products buy no time
# and cost the split (docs/findings.md#tf32x3-on-tiny-outputs-fp32s-plan-tf32x3_splitffma). With
# more rows and X3_FFMA_NARROW_MIN_N..64 columns, fp32's narrow tiles (NARROW_N_TILES) beat the
# split on 23 of 24 tuning shapes (54.7% -> 86.1% of cuBLAS fp32); at 9-32 columns they won 8 of
# 16 and lost up to 0.65x where M*K is large, past 64 the split won 17 of 24
# (docs/findings.md#triton-a-matrix-times-9-127-vectors-h200). A single row (M <= GEMV_MAX_M) does half
# a flop per byte: fp32's plan there is the GEMV (stream_k_gemv.py); N <= SKINNY_MAX_N columns at
# most 4 per byte of A: fp32's plan there is stream_k_skinny.py.
X3_FFMA_MAX_SIDE = 64
X3_FFMA_NARROW_MIN_N = 33
# tf32x3 on short_k's problems of K <= X3_FFMA_SHORT_K: fp32's plan. A GEMM of one or two K-tiles
# costs less than tf32x3's operand copies (A K-major, B split), each a launch of its own. On the
# tuning shapes fp32's plan won all 6 rows of K <= 49 (1.06-1.35x); from K = 57 on it won 5 of 18
# and lost down to 0.75x; the bound sits between 49 and 57 (results/h200/short-k-small/).
X3_FFMA_SHORT_K = 52
# tf32 on the bandwidth-bound paths by default, per class? A single row or N <= SKINNY_MAX_N
# columns does at most 4 flops per byte, so the tensor cores idle on DRAM either way; mode=gemv /
# mode=skinny at tf32 multiply TF32-truncated inputs (what the tensor cores read) on the FFMA pipe.
# Decided on the H100 on tune_skinny (results/h100/tf32-skinny-tune/, % of cuBLAS tf32):
# M = 1: the GEMV lifts the geomean from 79.3% to 89.5% (1.128x, no shape slower), so it is on.
TF32_ON_GEMV_PATH = True
# N <= 8: the skinny kernel's geomean is 102.6% against the tile GEMM's 100.4% but its worst shape
# falls to 76.2% (100003x3x33, 96.9% on the tiles), so tf32 keeps the tile GEMM there.
TF32_ON_SKINNY_PATH = False


def x3_tiny_swap(M: int, N: int, K: int) -> bool:
    """tf32x3 on a tiny output (tiny_output) of SKINNY_MAX_N < M <= X3_FFMA_MAX_SIDE rows and at most
    TINY_SWAP_MAX_N columns: the tensor cores on the swapped product (the split in the loop), not
    fp32's plan. Measured from 16 rows; 8 or fewer keep fp32's plan."""
    return SKINNY_MAX_N < M <= X3_FFMA_MAX_SIDE and N <= TINY_SWAP_MAX_N and tiny_output(M, N, K)


def x3_uses_ffma(M: int, N: int, K: int, sms: int, x3_split: str = "auto", b_transpose: str = "auto", tile=None,
                 B: Optional[torch.Tensor] = None) -> bool:
    """Does tf32x3 run fp32's plan (tf32x3_split=ffma)? As asked, or by the heuristic for an
    output of at most X3_FFMA_MAX_SIDE a side (not a tiny output that x3_tiny_swap takes where
    ``B`` can be read N-major for the swap; B None: not known, so not one), X3_FFMA_NARROW_MIN_N to
    X3_FFMA_MAX_SIDE columns and more rows but not a tiny output (those keep their measured rules),
    a single row or at most SKINNY_MAX_N columns, narrow_wide where NARROW_WIDE_X3_TILE gives a
    program slot fewer than X3_FFMA_WIDE_MAX_ITERS on ``sms`` SMs, or a short_k problem of K <=
    X3_FFMA_SHORT_K; where the user chose no split, B path or tile."""
    if x3_split != "auto":
        return x3_split == "ffma"
    small = (M <= X3_FFMA_MAX_SIDE and N <= X3_FFMA_MAX_SIDE) or M <= GEMV_MAX_M or N <= SKINNY_MAX_N \
        or (X3_FFMA_NARROW_MIN_N <= N <= X3_FFMA_MAX_SIDE and not tiny_output(M, N, K)) \
        or (narrow_wide(M, N, K) and iters_per_slot(M, N, K, NARROW_WIDE_X3_TILE, sms) < X3_FFMA_WIDE_MAX_ITERS) \
        or (K <= X3_FFMA_SHORT_K and short_k(M, N, K))
    if b_transpose != "auto" or tile is not None or not small:
        return False
    return not (B is not None and _n_major_hintable(B) and x3_tiny_swap(M, N, K))
# The split paths go without the built-in's NaN mask between the small and big products: its
# wait and selects cost most of the split's gain; an inf input can then give NaN where IEEE
# gives +-inf (docs/findings.md#tf32x3-the-nan-mask).
X3_MASK_NAN = False
# "auto" swaps (C^T = B^T A^T) for tf32/tf32x3 at SWAP_MIN_M < M <= SWAP_MAX_M (1024 for tf32 with
# 128x128 tiles), N > 64, and at any M for 33..64 columns: B^T becomes wgmma's register operand,
# read with 16-byte loads and no K-major copy (docs/findings.md#the-swapped-product-b_transposeswap).
SWAP_MIN_M, SWAP_MAX_M, SWAP_MAX_M_TF32_128 = 32, 512, 1024


# tf32 tiny outputs of at most TINY_SWAP_MAX_N columns swap too: on 10 tunable ones (M, N <= 64, and
# 128x32) 82-94% of cuBLAS tf32 against 63-93% unswapped (40x40x400000: 63 -> 83%); with 128 and
# 200 columns it lost 4 points (results/h100/tf32-small/tiny-swap/). tf32x3 on those of at most
# 64 x 64 swaps too instead of running fp32's plan (x3_tiny_swap): 1.03-1.17x on all 7 tunable
# ones (tiny-swap/summary-tf32x3.md).
TINY_SWAP_MAX_N = 64


def _swap_pays(precision: str, M: int, N: int, B: torch.Tensor, tile: Tile) -> bool:
    if precision == "fp32" or not _n_major_hintable(B):
        return False
    if precision == "tf32" and N <= TINY_SWAP_MAX_N and tiny_output(M, N, B.shape[0]):
        return True
    if precision == "tf32x3" and x3_tiny_swap(M, N, B.shape[0]):
        return True
    if tile.bm == 128 and tile.bn == 64 and 32 < N <= 64:
        return True
    max_m = SWAP_MAX_M_TF32_128 if precision == "tf32" and tile.bn == 128 else SWAP_MAX_M
    return SWAP_MIN_M < M <= max_m and N > 64

# An operand is copied (aligned, or to the preferred layout: 8 bytes moved per element) only where
# the GEMM does this many flops per copied byte (fp32 256: the fastest or within 1% on all nine
# unaligned sweep shapes; docs/findings.md#operand-copies-copy_min_flops_per_byte).
COPY_MIN_FLOPS_PER_BYTE = {"fp32": 256, "tf32": 128, "tf32x3": 8}


# tf32x3_split=auto (x3_split_plan): the split out of the loop where B is copied K-major anyway
# and M > 512, A's too from N = 4096 (its 12 bytes per element repaid by N columns); never at long
# K (docs/findings.md#tf32x3-the-split-out-of-the-loop-tf32x3_split).
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
