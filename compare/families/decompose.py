"""How a GEMM's work is cut into blocks: the split-K cost model and the stream-K plan.

Pure arithmetic on the problem size and the SM count, shared by every family: CUDA stages 10
and 11 and Triton's split_k / stream_k call the same functions, each with its own parameters
(``SplitCost``: DEFAULT_SPLIT_COST / TRITON_SPLIT_COST; ``StreamKRule``: CUDA_STREAM_K /
TRITON_STREAM_K), so "how many splits" has one model, not one per family.

Split-K model
-------------
Blocks run in waves of ``sms * blocks_per_sm``. A tile costs ``chunk + overhead_k`` k-steps
(prologue, epilogue, pipeline fill) of ``tile_k_seconds`` each; splitting K in S chunks
multiplies the block count by S and divides each block's K range by S, and the deterministic
variant moves S partial tiles through memory (written, read back by the reduction) plus one
extra launch. The atomic variant adds the partials into C: one pass of traffic instead of two.

    time(S) = ceil(tiles*S / slots) * (chunk + overhead_k) * tile_k_seconds
              + [S > 1] * (S*M*N*4 * (2 deterministic | 1 atomic) + 8*M*N) / bytes_per_s + launch_s

minimised over S with chunk >= ``min_chunk`` (a multiple of ``chunk_align``). A split must beat
the best so far by 1% (it adds a workspace and a launch for nothing otherwise).

Stream-K plan
-------------
Osama et al., "Stream-K: Work-centric Parallel Decomposition for Dense Matrix-Matrix
Multiplication on the GPU" (PPoPP'23). The MAC-loop iterations (one BK step of one tile) of the
stream-K tiles are divided evenly over a grid of ``sms * blocks_per_sm`` blocks; the other tiles
run data-parallel (one block each) in whole waves. The "two-tile" hybrid: with T tiles and W
slots, T % W == 0 (or waves on average at least ``dp_fill`` full: T / (W*ceil(T/W)) >= 0.95 for
CUDA, 0.90 for Triton) is pure data-parallel; T < W is pure stream-K; otherwise the last partial
wave plus ``hybrid_extra_waves`` full waves (CUDA: one, W + T % W tiles, so every stream-K block
does between one and two tiles of work; Triton: none) go to stream-K and the data-parallel tiles
fill whole waves. A tile whose iterations span several blocks is fixed up by the caller
(partials summed in a fixed order, or atomics).
"""
from __future__ import annotations

import math

from dataclasses import asdict, dataclass


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def tile_fill(M: int, N: int, bm: int, bn: int) -> float:
    """The share of a bm x bn tile grid over an M x N output that is real output (1.0 when both
    sides are multiples of the tile)."""
    return M * N / (cdiv(M, bm) * bm * cdiv(N, bn) * bn)


# --------------------------------------------------------------------------------------------
# split-K

@dataclass(frozen=True)
class SplitCost:
    """Constants of the split-K model, one set per family. Defaults (the CUDA stage 10): a
    128x128 fp32 tile on an H100/H200 SM at about 0.7 of FFMA peak (2*128*128 flops per k at
    ~0.35 TFLOP/s per SM = 94 ns per k-step), HBM at ~2.5 TB/s achieved, ~4 us for an extra
    launch; partials moved as 4-byte words per output element: (per split, fixed)."""

    tile_k_seconds: float = 2 * 128 * 128 / 0.35e12
    overhead_k: int = 96
    bytes_per_s: float = 2.5e12
    launch_s: float = 4e-6
    # Written and read back (2 per split) plus C read and written (2), deterministic; atomic adds
    # each partial into C once (1 per split) plus the beta pre-scale of C (2).
    deterministic_words: tuple = (2, 2)
    atomic_words: tuple = (1, 2)
    # A split must beat the best so far by this factor (it adds a workspace and a launch).
    min_gain: float = 0.99
    # An unsplit K is one chunk of exactly K (False) or of K rounded up to the chunk alignment.
    round_unsplit: bool = False


DEFAULT_SPLIT_COST = SplitCost()
# Triton's split_k: 84 ns per k-step of a 128x128 tile (0.39 TFLOP/s per SM), 128 k-steps of
# fill and write-out; the deterministic reduction reads S partials and C once and writes C
# (S + 2 words), the atomic variant's traffic is not counted, and the launch is free; an unsplit
# chunk is K rounded up to 64 (every BLOCK_K divides it).
TRITON_SPLIT_COST = SplitCost(tile_k_seconds=84e-9, overhead_k=128, launch_s=0.0, deterministic_words=(1, 2),
                              atomic_words=(0, 0), min_gain=1.0, round_unsplit=True)


@dataclass(frozen=True)
class SplitPlan:
    splits: int        # S: K chunks actually used (ceil(K / chunk))
    chunk: int         # K range of one split (a multiple of chunk_align, except when S == 1)
    chosen_by: str     # "heuristic" or "user"

    def as_dict(self) -> dict:
        return asdict(self)


def split_geometry(K: int, splits: int, chunk_align: int, round_unsplit: bool = False) -> tuple[int, int]:
    """(S, chunk) for a requested split count: the chunk is rounded up to ``chunk_align`` so S
    may come out smaller than asked (K=1000, 7 splits, align 16 -> chunk 144, 7 splits)."""
    if splits < 1:
        raise ValueError(f"split count must be >= 1, got {splits}")
    if splits == 1 and not round_unsplit:
        return 1, K
    chunk = cdiv(cdiv(K, min(splits, K)), chunk_align) * chunk_align
    return cdiv(K, chunk), chunk


def split_seconds(M: int, N: int, K: int, sms: int, splits: int, *, tile: tuple[int, int] = (128, 128),
                  blocks_per_sm: int = 1, chunk_align: int = 16, deterministic: bool = True,
                  cost: SplitCost = DEFAULT_SPLIT_COST) -> tuple[float, int, int]:
    """The model above for ``splits`` K chunks: (seconds, splits actually used, chunk)."""
    tiles = cdiv(M, tile[0]) * cdiv(N, tile[1])
    slots = max(1, sms * blocks_per_sm)
    # Two blocks sharing an SM each run at half speed: a block's k-step costs blocks_per_sm times more.
    t_k = cost.tile_k_seconds * blocks_per_sm * (tile[0] * tile[1]) / (128 * 128)
    per_split, fixed = cost.deterministic_words if deterministic else cost.atomic_words
    s_eff, chunk = split_geometry(K, splits, chunk_align, cost.round_unsplit)
    t = cdiv(tiles * s_eff, slots) * (chunk + cost.overhead_k) * t_k
    if s_eff > 1:
        t += (per_split * s_eff + fixed) * M * N * 4 / cost.bytes_per_s + cost.launch_s
    return t, s_eff, chunk


def choose_split(M: int, N: int, K: int, sms: int, *, tile: tuple[int, int] = (128, 128),
                 blocks_per_sm: int = 1, chunk_align: int = 16, min_chunk: int = 256,
                 max_splits: int = 512, max_workspace_bytes: int = 1 << 30, deterministic: bool = True,
                 cost: SplitCost = DEFAULT_SPLIT_COST, splits: int | None = None) -> SplitPlan:
    """The split count minimising the model above (split_seconds); ``splits`` forces one (the
    user's option)."""
    if splits is not None:
        s, chunk = split_geometry(K, splits, chunk_align, cost.round_unsplit)
        return SplitPlan(s, chunk, "user")

    def modeled(s: int) -> tuple[float, int, int]:
        return split_seconds(M, N, K, sms, s, tile=tile, blocks_per_sm=blocks_per_sm, chunk_align=chunk_align,
                             deterministic=deterministic, cost=cost)

    best_t, best_s, best_chunk = modeled(1)
    max_s = min(max_splits, K // max(1, min_chunk), max(1, max_workspace_bytes // max(1, 4 * M * N)))
    for s in range(2, max_s + 1):
        t, s_eff, chunk = modeled(s)
        if t < best_t * cost.min_gain:
            best_t, best_s, best_chunk = t, s_eff, chunk
    return SplitPlan(best_s, best_chunk, "heuristic")


# --------------------------------------------------------------------------------------------
# stream-K

MODES = ("dp", "sk", "hybrid")


def most_partials(iters_per_tile: int, iters_per_block: int) -> int:
    """The most stream-K ranges (blocks or programs) one tile's iterations can span when each
    range holds at least ``iters_per_block`` of them: how many partials a fixup may have to sum."""
    return cdiv(iters_per_tile, max(1, iters_per_block)) + 1


@dataclass(frozen=True)
class StreamKPlan:
    mode: str             # "dp" (no stream-K tiles), "sk" (all tiles stream-K) or "hybrid"
    tiles: int            # output tiles in all
    iters_per_tile: int   # BK steps of one tile: ceil(K / BK)
    sk_tiles: int         # tiles 0 .. sk_tiles-1 (in launch order) are stream-K, the rest data-parallel
    sk_blocks: int        # blocks sharing the stream-K tiles' iterations
    iters_per_block: int  # every stream-K block gets this many iterations ...
    extra_iters: int      # ... and blocks 0 .. extra_iters-1 one more
    grid: int             # sk_blocks + (tiles - sk_tiles)
    slots: int            # sms * blocks_per_sm: blocks that run at once
    waves: float          # tiles / slots: the data-parallel schedule's wave count
    chosen_by: str

    def as_dict(self) -> dict:
        return asdict(self)

    def block_range(self, b: int) -> tuple[int, int]:
        """[start, end) of stream-K block b in the stream-K iteration space."""
        start = b * self.iters_per_block + min(b, self.extra_iters)
        return start, start + self.iters_per_block + (1 if b < self.extra_iters else 0)


@dataclass(frozen=True)
class StreamKRule:
    """A family's parameters of the stream-K heuristic (defaults: the CUDA stage 11).

    ``dp_fill``: waves at least this full on average run data-parallel; ``fill_blocks_per_sm``:
    the per-SM block counts the fill is measured at (the best one counts); ``min_iters_to_split``:
    tiles of fewer iterations run data-parallel; ``hybrid_extra_waves``: full waves of tiles the
    hybrid adds to the last partial wave (1: two-tile stream-K, every block one to two tiles of
    work; 0: the partial wave alone); ``check_32bit``: refuse plans whose iteration count
    overflows a 32-bit kernel counter."""
    dp_fill: float = 0.95
    fill_blocks_per_sm: tuple = ()
    min_iters_to_split: int = 2
    hybrid_extra_waves: int = 1
    check_32bit: bool = True


CUDA_STREAM_K = StreamKRule()
# Triton's stream_k: its wave fill counted at one program per SM and at programs_per_sm (128
# tiles of 32x128 on 132 SMs are 97% of a wave: data-parallel made 107% of cuBLAS tf32 at
# 32x16384x4096, stream-K over 264 programs 97%); 0.90 full is full enough; fewer than 8
# iterations (two programs' minimum) never split; stream-K takes the last partial wave only.
TRITON_STREAM_K = StreamKRule(dp_fill=0.90, fill_blocks_per_sm=(1,), min_iters_to_split=8, hybrid_extra_waves=0,
                              check_32bit=False)


def stream_k_plan(tiles: int, iters_per_tile: int, sms: int, blocks_per_sm: int, *, mode: str | None = None,
                  sk_blocks: int | None = None, min_iters_per_block: int = 4, dp_fill: float | None = None,
                  rule: StreamKRule = CUDA_STREAM_K) -> StreamKPlan:
    """The decomposition described in the module docstring, with a family's ``rule``. ``mode`` /
    ``sk_blocks`` force it (the user's options); otherwise: data-parallel when the last wave is
    full enough, stream-K when there is less than one wave of tiles, the hybrid in between.
    Stream-K blocks get at least ``min_iters_per_block`` iterations (the prologue and the
    partial's round trip must be paid for), so a short K means fewer stream-K blocks."""
    if tiles < 1 or iters_per_tile < 1:
        raise ValueError(f"empty problem: {tiles} tiles of {iters_per_tile} iterations")
    if mode is not None and mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    if sk_blocks is not None and sk_blocks < 1:
        raise ValueError(f"grid must be >= 1, got {sk_blocks}")
    dp_fill = rule.dp_fill if dp_fill is None else dp_fill
    slots = max(1, sms * blocks_per_sm)
    waves = tiles / slots
    chosen_by = "user" if (mode is not None or sk_blocks is not None) else "heuristic"
    if mode is None:
        full, rem = divmod(tiles, slots)
        fill = max(tiles / (cdiv(tiles, n) * n) for n in (slots, *(max(1, sms * b) for b in rule.fill_blocks_per_sm)))
        if (iters_per_tile < rule.min_iters_to_split or rem == 0 or fill >= dp_fill
                or tiles * iters_per_tile // max(1, min_iters_per_block) <= tiles):
            # Nothing to split, the waves are (nearly) full already, or K is too short for
            # stream-K to use more blocks than there are tiles.
            mode = "dp"
        elif full == 0:
            mode = "sk"
        else:
            mode = "hybrid"
    if mode == "dp":
        sk_tiles = 0
    elif mode == "sk":
        sk_tiles = tiles
    else:
        full, rem = divmod(tiles, slots)
        extra = rule.hybrid_extra_waves * slots if rem else 0
        sk_tiles = tiles if full == 0 else (rem or slots) + extra
        sk_tiles = min(sk_tiles, tiles)
    # Say what the grid does: a forced "hybrid" with under two waves of tiles is all stream-K.
    mode = "dp" if sk_tiles == 0 else "sk" if sk_tiles == tiles else "hybrid"
    total = sk_tiles * iters_per_tile
    if rule.check_32bit and tiles * iters_per_tile >= 2 ** 31:
        raise ValueError(f"{tiles} tiles x {iters_per_tile} iterations do not fit the kernel's 32-bit counters")
    if sk_tiles == 0:
        nb = 0
    elif sk_blocks is not None:
        nb = min(sk_blocks, total)
    else:
        nb = max(1, min(slots, total // max(1, min_iters_per_block)))
    per, extra = divmod(total, nb) if nb else (0, 0)
    return StreamKPlan(mode=mode, tiles=tiles, iters_per_tile=iters_per_tile, sk_tiles=sk_tiles, sk_blocks=nb,
                       iters_per_block=per, extra_iters=extra, grid=nb + tiles - sk_tiles, slots=slots,
                       waves=round(waves, 3), chosen_by=chosen_by)


# --------------------------------------------------------------------------------------------
# skinny products: K split for a stream of one operand

@dataclass(frozen=True)
class SkinnyCost:
    """Constants of the K-split model of the bandwidth-bound paths (a row times a matrix, a
    matrix times a few vectors). Such a product streams one operand (``stream_bytes``) once; its
    blocks keep a fixed amount of loads in flight each, so the achieved bandwidth grows with the
    blocks running at once until ``blocks_per_sm`` per SM cover DRAM latency (Little's law: an
    H100's 3.35 TB/s x ~0.7 us is ~2.3 MB in flight, ~18 KiB per SM; blocks_per_sm x the kernel's
    bytes in flight per block should be above that). Splitting K multiplies the blocks by S and
    adds S partial outputs written and read back plus a second launch:

        time(S) = (stream_bytes + 2 * S * partial_bytes) / (bytes_per_s * min(1, blocks*S / (sms*blocks_per_sm)))
                  + [S > 1] * launch_s

    minimised over S with each K range at least ``k_align`` long (a multiple of it); a split must
    beat the best so far by ``min_gain``. Defaults: ~3 TB/s achieved (H100 copy class), ~3 us for
    the extra launch.

    Past one wave (w = blocks*S / (sms*blocks_per_sm) > 1) the defaults count the slots full; with
    ``tail_weight`` > 0 a partly filled last wave costs that share of its idle slots,
    fill = 1 - tail_weight * (1 - w / ceil(w)), and ``range_fill_chunks`` > 0 charges every K range
    that many ``k_align`` chunks more (its pipeline fill and its block's reduction): stream_bytes
    x (1 + range_fill_chunks / chunks per range). The search then goes on up to ``max_waves`` waves."""

    blocks_per_sm: int = 4
    bytes_per_s: float = 3.0e12
    launch_s: float = 3e-6
    min_gain: float = 0.99
    tail_weight: float = 0.0
    range_fill_chunks: float = 0.0
    max_waves: float = 1.0


def skinny_seconds(blocks: int, K: int, splits: int, *, k_align: int, sms: int, stream_bytes: int,
                   partial_bytes: int, cost: SkinnyCost = SkinnyCost()) -> tuple[float, int, int]:
    """The model above for ``splits`` K ranges: (seconds, ranges actually used, K per range)."""
    s_eff, chunk = split_geometry(K, splits, k_align, round_unsplit=True)
    want = max(1, sms * cost.blocks_per_sm)
    waves = blocks * s_eff / want
    fill = min(1.0, waves) if waves <= 1 else 1.0 - cost.tail_weight * (1.0 - waves / math.ceil(waves))
    streamed = stream_bytes * (1.0 + cost.range_fill_chunks / cdiv(chunk, k_align))
    t = (streamed + (2 * s_eff * partial_bytes if s_eff > 1 else 0)) / (cost.bytes_per_s * fill)
    return t + (cost.launch_s if s_eff > 1 else 0.0), s_eff, chunk


def skinny_split_candidates(blocks: int, K: int, *, k_align: int, sms: int, stream_bytes: int, partial_bytes: int,
                            cost: SkinnyCost = SkinnyCost()) -> list[tuple[float, int, int]]:
    """``skinny_seconds`` for 1, 2, ... K ranges: never more than it takes to reach ``max_waves``
    waves of ``blocks_per_sm`` blocks per SM, nor ranges shorter than ``k_align``."""
    top = min(cdiv(math.ceil(max(1, sms * cost.blocks_per_sm) * cost.max_waves), blocks), cdiv(K, k_align))
    return [skinny_seconds(blocks, K, s, k_align=k_align, sms=sms, stream_bytes=stream_bytes,
                           partial_bytes=partial_bytes, cost=cost) for s in range(1, max(1, top) + 1)]


def least_modeled(candidates: list[tuple[float, int, int]], min_gain: float) -> tuple[int, int]:
    """(K ranges, K per range) of the fastest candidate, in order, each beating the best so far by
    ``min_gain`` (more ranges add a workspace and a launch)."""
    best_t, best_s, best_chunk = candidates[0]
    for t, s_eff, chunk in candidates[1:]:
        if t < best_t * min_gain:
            best_t, best_s, best_chunk = t, s_eff, chunk
    return best_s, best_chunk


def skinny_split(blocks: int, K: int, *, k_align: int, sms: int, stream_bytes: int, partial_bytes: int,
                 cost: SkinnyCost = SkinnyCost(), splits: int | None = None) -> tuple[int, int]:
    """(K ranges, K per range) for a bandwidth-bound path with ``blocks`` output blocks: the split
    minimising ``skinny_seconds`` over ``skinny_split_candidates``. ``splits`` forces the count
    (the user's option), rounded so ranges stay multiples of ``k_align`` (K=1000, 3 ranges of a
    multiple of 256: 2 ranges of 512)."""
    if blocks < 1 or K < 1:
        raise ValueError(f"empty problem: {blocks} blocks, K={K}")
    if splits is not None:
        return split_geometry(K, splits, k_align, round_unsplit=True)
    return least_modeled(skinny_split_candidates(blocks, K, k_align=k_align, sms=sms, stream_bytes=stream_bytes,
                                                 partial_bytes=partial_bytes, cost=cost), cost.min_gain)
