"""Triton stream_k's rules for issue #43's tiny outputs (M*N <= TINY_OUTPUT_MAX, K >= 16 max(M, N)):
how many stream-K programs an SM runs and how deep their K-tiles are. A tiny output is one tile or
two, so the whole GEMM is a K split over the SMs, bound by reading A and B; these rules adjust the
plan of stream_k_heuristic's table there (choose_plan calls them). What was measured behind each
number is in docs/findings.md.
"""
from __future__ import annotations

from typing import Optional

import triton

from .stream_k_decomposition import Tile, decompose
from .stream_k_skinny import SKINNY_MAX_N

__all__ = ["TINY_OUTPUT_MIN_TILE_AREA", "TINY_OUTPUT_MAX", "TINY_SHORT_K_TILES", "TINY_HALF_K_MIN_AREA",
           "TINY_HALF_K_MAX_TILES", "tiny_output", "tiny_output_per_sm", "tiny_output_half_k"]


# tf32 tiny outputs (tiny_output) on tiles of at least 64x32: one stream-K program per SM instead
# of two, each over twice the K range. Reading A and B bounds these shapes, not
# arithmetic (81 us at 48x48x262144 in fp32, tf32 and tf32x3 alike), and half the programs read
# them faster; smaller tiles and fp32 keep two
# (docs/findings.md#tf32-tiny-outputs-one-stream-k-program-per-sm). tf32x3 gained 1.01-1.19x on
# tune_small's 5 tiny outputs but lost 0.91x at 64x64x1048576 (long_k), so it keeps two
# (results/h100/tf32-small/).
TINY_OUTPUT_MIN_TILE_AREA = 64 * 32
TINY_OUTPUT_MAX = 4096
# fp32 and tf32x3 tiny outputs of one tile whose K gives each program at most this many K-tiles at
# one program an SM: one an SM, not two. Two programs of at most 12 K-tiles each spend much of
# their range filling the pipeline, and the second adds a partial to the fixup. On the 10 such
# tuning rows one an SM read 1.147x geomean in fp32 (0.99-1.31x) and 1.133x in tf32x3
# (1.02-1.30x); from 25 to 64 K-tiles it won about half the one-tile rows, past 64 few
# (64x64x1048576 0.91x / 0.81x), and outputs of two tiles lost even at 20 K-tiles (215x12x88248
# 0.86x in fp32) (results/h200/tiny-short-k/).
TINY_SHORT_K_TILES = 24


def tiny_output(M: int, N: int, K: int) -> bool:
    """Issue #43's tiny outputs: M*N <= TINY_OUTPUT_MAX and K >= 16 max(M, N), more than
    SKINNY_MAX_N columns (the matrix-times-vectors class has rules of its own)."""
    return M * N <= TINY_OUTPUT_MAX and K >= 16 * max(M, N) and N > SKINNY_MAX_N


def tiny_output_per_sm(M: int, N: int, K: int, precision: str, tile: Tile, sms: int) -> Optional[int]:
    """Programs per SM for a tiny output (tiny_output): 1 in tf32 on a tile of at least
    TINY_OUTPUT_MIN_TILE_AREA, and in fp32 and tf32x3 where one tile covers it and K is at most
    TINY_SHORT_K_TILES K-tiles for each of ``sms`` programs; else None (programs_per_sm)."""
    if not tiny_output(M, N, K):
        return None
    if precision == "tf32" and tile.bm * tile.bn >= TINY_OUTPUT_MIN_TILE_AREA:
        return 1
    one_tile = M <= tile.bm and N <= tile.bn
    if precision in ("fp32", "tf32x3") and one_tile and triton.cdiv(K, tile.bk) <= TINY_SHORT_K_TILES * sms:
        return 1
    return None


# fp32 and tf32x3 tiny outputs on tiles of at least TINY_HALF_K_MIN_AREA elements whose stream-K
# programs get at most TINY_HALF_K_MAX_TILES K-tiles of 32 each: K-tiles of 16. At BLOCK_K 32 such
# a tile's 4 warps hold 32-64 accumulators a thread beside a 32-deep slice of A and B (247-255
# registers at 32x128 and 128x32, ncu); where a program runs only a few K-tiles that build lost.
# On the 8 such tuning rows 16 read 1.02-1.93x in fp32 (29x74x5772 1.93x) and 1.08-1.74x in
# tf32x3; the same tiles with 15-124 K-tiles a program lost up to 7% in fp32 (60x60x100000 0.93x)
# and 17% in tf32x3 (64x64x1048576), and smaller tiles lost at any K (11x57x8714 0.77x)
# (results/h200/tiny-half-k/).
TINY_HALF_K_MIN_AREA = 64 * 64
TINY_HALF_K_MAX_TILES = 12


def tiny_output_half_k(M: int, N: int, K: int, precision: str, tile: Tile, sms: int, mode: Optional[str],
                       per_sm: Optional[int]) -> bool:
    """An fp32 or tf32x3 tiny output (tiny_output) whose ``tile`` (BLOCK_K 32) has at least
    TINY_HALF_K_MIN_AREA elements and whose decomposition on it gives each stream-K program at most
    TINY_HALF_K_MAX_TILES K-tiles: run it on K-tiles of 16."""
    if not (precision in ("fp32", "tf32x3") and tiny_output(M, N, K) and tile.bk == 32
            and tile.bm * tile.bn >= TINY_HALF_K_MIN_AREA):
        return False
    d = decompose(M, N, K, tile, sms, mode, None, False, per_sm)
    return d.sk_programs > 0 and d.sk_tiles * d.iters <= TINY_HALF_K_MAX_TILES * d.sk_programs
