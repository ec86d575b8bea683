"""Triton stream_k's plan types and wave model: a tile (``Tile``), how the tiles x K-iterations are
shared out over a grid (``Decomposition``, ``decompose``: data-parallel waves, the last partial
wave stream-K by the shared model of compare/families/decompose.py) and the fixup's shape. The
rules that pick a tile and a decomposition per shape are stream_k_heuristic.py's."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import triton

from compare.families import decompose as model

# A stream-K program gets at least this many K-iterations: fewer and the pipeline fill plus the
# partial's write-out cost more than the balance gains.
MIN_SK_ITERS = 4
# Data-parallel waves at least this full need no stream-K (the shared model's TRITON_STREAM_K rule).
DP_WAVE_EFFICIENCY = model.TRITON_STREAM_K.dp_fill
# Aligned stream-K ranges (align_pays) may leave at most this share of the programs idle.
ALIGN_MAX_IDLE = 0.05
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
    def dims(self) -> str:
        """BMxBNxBK, as a run's config names the tile."""
        return f"{self.bm}x{self.bn}x{self.bk}"

    @property
    def name(self) -> str:
        return f"{self.dims}/{self.warps}/{self.stages}"


@dataclass(frozen=True)
class Decomposition:
    """How the T = tiles_m * tiles_n tiles are shared out over the grid."""
    tiles: int          # T
    iters: int          # I = cdiv(K, BLOCK_K), iterations per tile
    sk_tiles: int       # the first sk_tiles tiles (launch order) are stream-K
    sk_programs: int    # G programs share their sk_tiles * I iterations
    max_segments: int   # most tiles one stream-K range touches (workspace slots per program)
    aligned: bool = False  # G is a multiple of T: every tile's k-th range starts at one K offset
    per_sm: int = 1        # program slots per SM the waves and the stream-K grid were counted in

    @property
    def mode(self) -> str:
        return "hybrid" if self.sk_tiles else "dp"

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
    """Stream-K programs per SM: 2 for 4-warp tiles (one leaves 60 of an SM's 64 warp slots
    empty: 6% warps active at 64x8192x28672 fp32, docs/findings.md#programs-per-sm), else 1
    (~230 registers a thread)."""
    return 2 if tile.warps <= 4 else 1


def decompose(M: int, N: int, K: int, tile: Tile, sms: int, mode: Optional[str] = None,
              sk_programs: Optional[int] = None, align: bool = False,
              per_sm: Optional[int] = None) -> Decomposition:
    """The decomposition for ``tile`` on ``sms`` SMs: ``mode`` "dp" | "hybrid" | None (heuristic);
    ``sk_programs`` overrides G. Waves and the stream-K grid count ``per_sm`` slots per SM
    (default ``programs_per_sm``). ``align``: when every tile is a stream-K tile, shrink G to a
    multiple of the tile count (at most ALIGN_MAX_IDLE of it left idle) so the ranges line up
    across tiles (``align_pays``)."""
    T = triton.cdiv(M, tile.bm) * triton.cdiv(N, tile.bn)
    I = triton.cdiv(K, tile.bk)
    # The shared model (compare/families/decompose.py)'s hybrid with this family's rule: the last
    # partial wave's tiles stream-K, all of them below one wave.
    per_sm = per_sm or programs_per_sm(tile)
    plan = model.stream_k_plan(T, I, sms, per_sm, mode=mode,
                                   sk_blocks=sk_programs or None, min_iters_per_block=MIN_SK_ITERS,
                                   rule=model.TRITON_STREAM_K)
    if plan.sk_tiles == 0:
        return Decomposition(T, I, 0, 0, 0, per_sm=per_sm)
    sk_tiles, work, G = plan.sk_tiles, plan.sk_tiles * I, plan.sk_blocks
    aligned = False
    if align and not sk_programs and sk_tiles == T >= 2:
        per_tile = G // T
        if per_tile >= 2 and G - per_tile * T <= ALIGN_MAX_IDLE * G:
            G, aligned = per_tile * T, True
    q = work // G
    # A range of at most q+1 iterations touches at most cdiv(q, I) + 1 tiles.
    return Decomposition(T, I, sk_tiles, G, triton.cdiv(q, I) + 1, aligned, per_sm)
