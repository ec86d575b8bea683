"""The CUDA stages' per-shape heuristics: pure functions of the shape and the SM count, no GPU.
Stage 11's tile (``stream_k_tile``) and path (``stream_k_path``: the stream-K tile plan or one of
the bandwidth-bound paths of 11_stream_k_skinny.cu, split by ``skinny_plan``), stage 10's K
splits (``split_plan``) and stage 13's (``wgmma_split_plan``, ``regb_tile``), each the shared model
of compare.families.decompose with the stage's geometry. cuda_kernels/launch.py applies them.
"""
from __future__ import annotations

from typing import Optional

from compare.families import decompose

from .registry import (GEMV_COLS, GEMV_UNROLL, GEMV_WARPS, REGB_TILES, SKINNY_NB, SKINNY_SHORT_LANES,
                       SKINNY_SHORT_MAX_K, SKINNY_SPLIT_ALIGN, SKINNY_BUILDS, skinny_rows)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def stream_k_tile(M: int, N: int, K: int, sms: int = 132) -> str:
    """Stage 11's tile: 128x128x16, the fastest per FFMA, unless part of it would idle. A
    128-row tile half empty is half its FFMAs wasted, so skinny outputs get a quarter- or
    half-height (M <= 32, 64) or width (N <= 32, 64) tile, 32x64 for M <= 32 and N <= 64; at
    33-64 columns 64 rows unless the product is large (NARROW_N_MIN_ITERS_128), at 65-127
    64x128. Below one wave of 128x128 tiles (fewer than SMs) and not at long K, 64x128: twice
    the blocks to share the work; likewise where 128-row tiles leave more than
    PAD_MAX_EMPTY_ROWS of their rows empty. Measured: docs/findings.md#stage-11s-tile-h100."""
    if M <= 32:
        return "32x64x16" if N <= 64 else "32x128x16"
    if M <= 64:
        return "64x64x16" if N <= 64 else "64x128x16"
    if N <= 32:
        return "128x32x16"
    if N <= 64:
        # 64 rows, twice the blocks, unless 128-row tiles give every SM NARROW_N_MIN_ITERS_128
        # K-iterations of 16 (docs/findings.md#stage-11-a-matrix-times-33-127-vectors-h200).
        return "128x64x16" if cdiv(M, 128) * cdiv(K, 16) >= NARROW_N_MIN_ITERS_128 * sms else "64x64x16"
    if N < 128:
        return "64x128x16"      # 128x128 tiles here compute 129-256 columns for 65-127
    if cdiv(M, 128) * cdiv(N, 128) < sms:
        # Long K already has the blocks it needs from the split of K; there the 64-row tile
        # pays only where it pads fewer rows (257: 320 rows of 64 vs 384 of 128).
        long_k = K >= 4 * max(M, N)
        if not long_k or cdiv(M, 64) * 64 < cdiv(M, 128) * 128:
            return "64x128x16"
    if pads_many_rows(M, PAD_MAX_EMPTY_ROWS):
        return "64x128x16"
    return "128x128x16"


# Stage 11 at 33-64 columns takes 128-row tiles only from this many K-iterations per SM; on 64
# tuning shapes of 9-127 columns (reproduce/shapes/narrow_n_tune*.txt) 48-256 all read within 0.3
# points (results/h200/narrow-n-stage11/).
NARROW_N_MIN_ITERS_128 = 96


# 128x128 tiles leaving more than this share of their rows empty lose to 64x128 ones that pad
# fewer; where neither pads, the 64-row tile's lower operand reuse costs 1-4.5% of cuBLAS
# (docs/findings.md#padded-rows-128-row-tiles-just-past-a-multiple-of-128).
PAD_MAX_EMPTY_ROWS = 0.05


def pads_many_rows(M: int, max_empty: float) -> bool:
    """Do 128-row tiles leave more than ``max_empty`` of their rows empty (M = 300: 384 rows,
    22%), where 64-row tiles leave fewer (320 rows)?"""
    fill128, fill64 = decompose.tile_fill(M, 1, 128, 1), decompose.tile_fill(M, 1, 64, 1)
    return fill128 < 1 - max_empty and fill64 > fill128


# ---------------------------------------------------------------------------------------------
# stage 11's bandwidth-bound paths (11_stream_k_skinny.cu)

PATHS = ("auto", "tile", "gemv", "skinny_n")
SKINNY_MAX_N = SKINNY_NB[-1]
PATH_RULE = "N <= 8: skinny_n (its resident build where K <= 256); else M == 1: gemv; else tile (the stream-K plan)"
# gemv_row keeps 16 KiB of loads in flight per block and fits up to 8 blocks per SM; 4 per SM
# (64 KiB) is over three times the ~18 KiB per SM that covers DRAM latency on an H100.
# skinny_n keeps 32-64 KiB per block (two chunks of loads; one chunk, 16-32 KiB, in its scalar
# builds of N = 2 and 4 below sm_90) and fits 2 per SM (<= 128 registers): 2 blocks per SM.
GEMV_COST = decompose.SkinnyCost(blocks_per_sm=4)
# skinny_n past one wave: a last wave just begun costs most of a wave (14 H200 tuning shapes at
# K ranges 1-8: 1.07-1.45 waves ran at 0.78-0.96 of their best split, 3-4 waves at 0.96-1.0) and
# ranges of 3-4 chunks lose their fill (0.90-0.96): tail_weight 0.7, one chunk a range, up to 4
# waves (docs/findings.md, "Stage 11 skinny_n: K ranges past one wave").
SKINNY_COST = decompose.SkinnyCost(blocks_per_sm=2, tail_weight=0.7, range_fill_chunks=1.0, max_waves=4.0)


def stream_k_path(M: int, N: int, K: int) -> str:
    """Stage 11's path for a shape (``PATH_RULE``; the ``path`` option's ``auto``). N <= 8 is a
    stream of A (at most 4 flops per byte of it) whatever M is, so it comes first: a single row
    with N <= 8 streams B's K x N through skinny_n's B copy with every warp load coalesced, where
    gemv_row would read N of every 128 columns it loads. One row with N > 8 streams B: gemv. The
    rest are tile problems."""
    if N <= SKINNY_MAX_N:
        return "skinny_n"
    if M == 1:
        return "gemv"
    return "tile"


# Stage 13's paths: stage 11's, plus ffma (stage 11's tile plan, fp32 FFMA) for tf32x3 where N <= 64
# and M > 64. The register-operand tile gives each consumer warpgroup 64 columns of C (the wgmma M
# side) and a tile 128, so with N <= 64 it computes at least twice the columns N has, 3 wgmma each,
# where stage 11's tiles are 32 or 64 columns wide; with M <= 64 stage 11's 128-row tiles would be
# mostly empty where stage 13's 64-row tile is not. Both forced on tuning shapes (H200,
# results/h200/tensor-core/narrow-n/): 32 with N in 9..127 (reproduce/shapes/narrow_n_tune.txt)
# 80.9 -> 99.3% of cuBLAS fp32 geomean (worst 41.6 -> 59.3%); 16 tiny outputs
# (tiny_outputs_tf32.txt) 107.0 -> 116.3% (worst 75.4 -> 93.3%; stage 11 at M <= 64: 9x10x67432
# 52.5%). Summary: python reproduce/cublas_ratio_summary.py FILE --rule cuda.13_wgmma_tma.
WGMMA_PATHS = PATHS + ("ffma",)
WGMMA_FFMA_MAX_N, WGMMA_FFMA_MIN_M = 64, 65
WGMMA_PATH_RULE = (PATH_RULE + f"; tf32x3 with N <= {WGMMA_FFMA_MAX_N} and M >= {WGMMA_FFMA_MIN_M} (a tile problem): "
                   "ffma (stage 11's tile plan)")


def wgmma_path(M: int, N: int, K: int, precision: str) -> str:
    """Stage 13's path (``WGMMA_PATH_RULE``; the ``path`` option's ``auto``): stage 11's rule, and
    tf32x3's narrow tile problems to stage 11's FFMA tile kernel (fp32 is exact, within tf32x3's
    error); tf32 keeps the tensor cores its label promises."""
    path = stream_k_path(M, N, K)
    narrow = N <= WGMMA_FFMA_MAX_N and M >= WGMMA_FFMA_MIN_M
    return "ffma" if path == "tile" and precision == "tf32x3" and narrow else path


def skinny_nb(N: int) -> int:
    """The skinny_n build for N columns: N rounded up to 1, 2, 4 or 8."""
    return next(b for b in SKINNY_NB if b >= N)


def skinny_build(M: int, N: int, K: int, vec: bool, sms: int) -> str:
    """skinny_n's build (a label of registry.SKINNY_BUILDS): the one of NB (N rounded up) with float4
    or scalar loads of A, or its few_rows form (16 rows a block) where that exists and the main
    build's blocks would sit idle: M below its rows a block (most threads without a row), or its
    row blocks times the K ranges K allows (multiples of 256) below half the SMs' slots (the split
    cannot fill the GPU: 2807x8x384 ran 0.64x the 16-row blocks on an H200, docs/findings.md)."""
    label = f"skinny_n{skinny_nb(N)}.{'vec' if vec else 'scalar'}"
    few = label.replace(".", ".few_rows.", 1)
    if few not in SKINNY_BUILDS:
        return label
    rows = skinny_rows(label)
    fill = cdiv(M, rows) * cdiv(K, SKINNY_SPLIT_ALIGN)
    return few if M < rows or 2 * fill < sms * SKINNY_COST.blocks_per_sm else label


def skinny_plan(path: str, M: int, N: int, K: int, sms: int, splits: Optional[int] = None,
                vec: Optional[bool] = None) -> tuple[int, int, int]:
    """(output blocks, K ranges, K per range) of a bandwidth-bound path: a pure function of the
    shape and the SM count (decompose.skinny_split with this path's geometry). gemv: blocks of
    128 columns, K ranges a multiple of the 32 rows a block's loop steps by, a partial row of N
    floats per range. skinny_n: blocks of its build's rows (skinny_build: 32 where N <= 4; 128
    for N > 4, 64 in the scalar build, 16 where those blocks would sit idle), K ranges a multiple
    of 256, a partial M x N per range; ``vec`` (float4 loads of A; default K % 4 == 0, A aligned)
    picks the build. Streamed: both operands (4*(M*K + K*N) bytes; B dominates at M = 1, A at
    N <= 8 and M >> 8). ``splits`` forces the K range count (the ``k_splits`` option)."""
    if path == "gemv":
        blocks = cdiv(N, GEMV_COLS)
        splits, kps = decompose.skinny_split(blocks, K, k_align=GEMV_WARPS * GEMV_UNROLL, sms=sms,
                                             stream_bytes=4 * (K + K * N), partial_bytes=4 * N, cost=GEMV_COST,
                                             splits=splits)
    elif path == "skinny_n":
        blocks = cdiv(M, skinny_rows(skinny_build(M, N, K, K % 4 == 0 if vec is None else vec, sms)))
        splits, kps = decompose.skinny_split(blocks, K, k_align=SKINNY_SPLIT_ALIGN, sms=sms,
                                             stream_bytes=4 * (M * K + K * N), partial_bytes=4 * M * N,
                                             cost=SKINNY_COST, splits=splits)
    else:
        raise ValueError(f"no bandwidth-bound path {path!r}")
    return blocks, splits, kps


def skinny_short_plan(M: int, N: int, K: int, sms: int) -> tuple[int, int, int]:
    """(lanes per row, rows per group, blocks) of skinny_n's short-K build (skinny_b=resident,
    K <= SKINNY_SHORT_MAX_K): the fewest lanes whose 32 k's each cover K, 256 / lanes rows a group,
    and a persistent grid of at most SKINNY_COST.blocks_per_sm blocks per SM (the blocks its
    __launch_bounds__ promise), each walking every grid-th group."""
    if not 1 <= K <= SKINNY_SHORT_MAX_K:
        raise ValueError(f"skinny_short takes 1 <= K <= {SKINNY_SHORT_MAX_K}; got K={K}")
    lanes = next(l for l in SKINNY_SHORT_LANES if 32 * l >= K)
    rows = 256 // lanes
    return lanes, rows, min(cdiv(M, rows), sms * SKINNY_COST.blocks_per_sm)


# Stage 10's split-K geometry: each split keeps at least this much K (a multiple of BK), so the
# pipeline fill and the partial's round trip stay small against the main loop.
MIN_SPLIT_CHUNK = 256
MAX_SPLITS = 512


def split_plan(M: int, N: int, K: int, sm_count: int, bk: int = 16, atomic: bool = False,
               splits: Optional[int] = None) -> tuple[int, int]:
    """(splits, k_chunk) of stage 10: compare.families.decompose.choose_split with stage 10's geometry
    (128x128 tiles, 2 blocks per SM, chunks a multiple of BK and >= MIN_SPLIT_CHUNK). ``splits`` forces the
    count (rounded so chunks stay multiples of BK)."""
    p = decompose.choose_split(M, N, K, sm_count, tile=(128, 128), blocks_per_sm=2, chunk_align=bk,
                               min_chunk=MIN_SPLIT_CHUNK, max_splits=MAX_SPLITS, deterministic=not atomic,
                               splits=splits)
    return p.splits, p.chunk


# Stage 13's split-K, in the shared split-K model's units (compare/families/decompose.py): one k of
# a 128x128 tile is 2*128*128 flops at ~2.8 TFLOP/s per SM (cuBLAS tf32 at ~370 TFLOP/s over 132
# SMs) = 11.7 ns, tf32x3 three products; a block's fixed cost (launch, pipeline fill, writing a
# 128x256 tile at ~23 GB/s per SM: ~6 us) is ~256 k-steps of its tile; the partials move through
# HBM at ~2.5 TB/s plus a second launch. Chunks stay whole 32-wide K tiles.
WGMMA_SPLIT_COST = {False: decompose.SplitCost(tile_k_seconds=2 * 128 * 128 / 2.8e12, overhead_k=256),
                    True: decompose.SplitCost(tile_k_seconds=3 * 2 * 128 * 128 / 2.8e12, overhead_k=96)}
WGMMA_MIN_SPLIT_CHUNK = 128
WGMMA_MAX_SPLITS = 256


# The register-operand tiles' speed per multiply-add relative to the widest tile, per precision:
# every K tile costs each consumer thread the same 16 fragment loads whatever TM is, so a 64-row
# tile spends 4x as many per multiply-add as a 256-row one. tf32, 64 rows: 0.6 (0.75 guessed
# before), from every tile forced over 159 tuning shapes on an H100 (loguniform:120:2718,
# llm:40:2718; reproduce/measure-regb-tiles): 14 of them move off the 64-row tile, none slower,
# 1.011x geomean. A lower 128-row speed fits the geomean better (0.6 / 0.4: 1.030x) but makes 15
# of them slower, by up to 0.86x: the tile choice depends on more than a speed per tile.
# tf32x3 (three wgmma per k8 hide the loads better): the guess was within 0.5% of the fastest tile.
# 256 rows is also how the copy path's tiles are costed (regb_rows=256), tf32x3's included.
REGB_RELATIVE_SPEED = {False: {256: 1.0, 128: 0.9, 64: 0.6}, True: {256: 1.0, 128: 0.9, 64: 0.75}}


def _wgmma_cost(split3: bool, tm: int = 256, speeds: Optional[dict] = None) -> decompose.SplitCost:
    c = WGMMA_SPLIT_COST[split3]
    return decompose.SplitCost(tile_k_seconds=c.tile_k_seconds / (speeds or REGB_RELATIVE_SPEED[split3])[tm],
                               overhead_k=c.overhead_k)


def wgmma_split_plan(M: int, N: int, K: int, sm_count: int, tile: tuple, split3: bool,
                     splits: Optional[int] = None, regb_rows: int = 256) -> decompose.SplitPlan:
    """Stage 13's K splits for an M x N x K product on ``tile`` (BM, BN) blocks, one per SM: the
    shared split-K model with the tensor-core costs above (``regb_rows``: the register-operand
    tile's rows, whose relative speed scales them); ``splits`` forces the count."""
    return decompose.choose_split(M, N, K, sm_count, tile=tuple(tile), blocks_per_sm=1, chunk_align=32,
                                  min_chunk=WGMMA_MIN_SPLIT_CHUNK, max_splits=WGMMA_MAX_SPLITS,
                                  cost=_wgmma_cost(split3, regb_rows), splits=splits)


# The cp_async build's main loop (B's rows copied in 16-byte chunks by the producer warpgroup)
# against the TMA build's: 0.7 of its speed fits best over 40 tuning shapes where one row of
# 256-row tiles covers M and N % 4 != 0 (reproduce/shapes/regb_one_row_unaligned.txt, H200: time of
# the rule's pick / the fastest tile 1.027 at 1.0, 1.007 at 0.7, 1.019 at 0.6). At 1.0 the rule took
# 256 rows at short K where the cp.async loop starves a partial wave of blocks (0.83x at 230x326x3059).
REGB_CP_ASYNC_SPEED = 0.7


def regb_b_load_cost(M: int, N: int, K: int, tm: int, b_unaligned: Optional[str] = None) -> tuple[float, float]:
    """(seconds before the GEMM, the GEMM's speed factor) of how the plan on ``tm``-row tiles reads
    B where N % 4 != 0, by b_unaligned (the option, else regb_b_unaligned's default for this tile):
    pad copies B's rows first (one read and one write of K x N floats at the split-K model's HBM
    rate, plus a launch), cp_async slows the main loop (REGB_CP_ASYNC_SPEED); else (0, 1)."""
    if N % 4 == 0:
        return 0.0, 1.0
    choice = b_unaligned or regb_b_unaligned(M, N, tm)
    if choice == "pad":
        c = WGMMA_SPLIT_COST[False]
        return 2 * 4 * K * N / c.bytes_per_s + c.launch_s, 1.0
    return 0.0, REGB_CP_ASYNC_SPEED if choice == "cp_async" else 1.0


def regb_tile_seconds(M: int, N: int, K: int, sm_count: int, precision: str, tm: int, splits: Optional[int] = None,
                      b_unaligned: Optional[str] = None, speeds: Optional[dict] = None) -> float:
    """The modeled time of the register-operand path on ``tm``-row tiles: the shared split-K model
    at the tile's best split (rows padded, waves and K splits counted there; ``speeds``: relative
    speeds other than REGB_RELATIVE_SPEED's), with how this tile's plan reads B (regb_b_load_cost).
    That counts because the tile decides it: with M just past a tile's rows (131 on 128 or 64),
    N % 4 != 0 pads B by a copy, where one row of 256-row tiles loads B as stored by cp.async."""
    cost = _wgmma_cost(precision == "tf32x3", tm, speeds)
    plan = decompose.choose_split(M, N, K, sm_count, tile=(tm, 128), chunk_align=32, min_chunk=WGMMA_MIN_SPLIT_CHUNK,
                                  max_splits=WGMMA_MAX_SPLITS, cost=cost, splits=splits)
    gemm = decompose.split_seconds(M, N, K, sm_count, plan.splits, tile=(tm, 128), chunk_align=32, cost=cost)[0]
    before, speed = regb_b_load_cost(M, N, K, tm, b_unaligned)
    return before + gemm / speed


def regb_tile(M: int, N: int, K: int, sm_count: int, precision: str, splits: Optional[int] = None,
              b_unaligned: Optional[str] = None) -> tuple:
    """(TM, STAGES) of the register-operand path: the tile regb_tile_seconds times fastest."""
    return min(REGB_TILES[precision],
               key=lambda t: regb_tile_seconds(M, N, K, sm_count, precision, t[0], splits, b_unaligned))


# Where N % 4 != 0, B's rows are loaded by cp.async in the GEMM (no copy) only where one row of
# tiles covers M, so the GEMM reads B once, and N >= 32: there the padded copy's two extra passes
# over B cost more than the cp.async main loop loses (H100, reproduce/measure-b-unaligned:
# M <= 60, N 45..4097, K 4099..300001: 1.07-2.5x faster; N = 3: 0.64-0.99x). With more rows of
# tiles B is read again per row and the cp.async loop's extra instructions cost more than the copy
# (loguniform:120:2718, N % 4 != 0: 0.76x geomean, 1.42x best).
REGB_CP_ASYNC_MIN_N = 32
# Where N <= 128 one column tile holds all of B's columns, so a K tile of B (32 whole rows) is one
# contiguous run of bytes: one bulk copy, as fast as TMA, wherever B is read.
REGB_BULK_MAX_N = 128


def regb_b_unaligned(M: int, N: int, tm: int) -> str:
    """Stage 13's b_unaligned default for a B whose rows TMA can't read (N % 4 != 0)."""
    if N <= REGB_BULK_MAX_N:
        return "bulk"
    return "cp_async" if M <= tm and N >= REGB_CP_ASYNC_MIN_N else "pad"


# tf32x3's A split: the split copy moves A three times (read, big and small written) and the GEMM
# reads both parts once per column tile; the split in shared memory reads A once but adds 48 KiB of
# shared-memory traffic per 32-wide K tile to a main loop already near shared memory's bandwidth.
# The copy's cost against the GEMM's falls as 1/N, so the split in shared memory wins on narrow
# products: on the tuning corpus (loguniform:120:2718, llm:40:2718; reproduce/measure-a-split) it
# ran 1.15-1.74x the copy's speed with N <= 347 in 8 of 12 shapes, 0.70-0.95x with N >= 548 in
# all but 4; up to three column tiles of 128 (N <= 384) gave 1.019x geomean over all 160.
A_SPLIT_SMEM_MAX_N = 384


def regb_a_split(N: int) -> str:
    """Stage 13's a_split default for tf32x3 on the swap path."""
    return "smem" if N <= A_SPLIT_SMEM_MAX_N else "copy"


# Stage 13's stream-K (the register-operand path, one block per SM; options mode, grid): stream-K
# blocks share the stream-K tiles' K tiles (below one wave: all tiles; the hybrid: the last
# partial wave plus one wave, the rest data-parallel). A block gets at least WGMMA_SK_MIN_ITERS K
# tiles of 32 (the 4-8 stages in flight). Forced on every shape of the tuning corpus
# (loguniform:120:2718, llm:40:2718; reproduce/measure-stage13-stream-k) it ran 0.86x (tf32) and
# 0.97x (tf32x3) the time of no stream-K: its blocks read A and B at unrelated K offsets, so the L2
# no longer shares their slabs as data-parallel blocks do (0.69x at 2501x1011x8038), and a short K
# pays the fill twice. Where tf32x3 leaves nothing K-split and its tiles fill at most 3/4 of the
# SMs, all 9 tuning shapes ran 1.01-1.21x faster with it: the default takes it there only.
WGMMA_SK_MIN_ITERS = 8
WGMMA_SK_MAX_FILL = 0.75
WGMMA_STREAM_K = decompose.StreamKRule(min_iters_to_split=WGMMA_SK_MIN_ITERS, hybrid_extra_waves=1)


def wgmma_stream_k_plan(tiles: int, iters_per_tile: int, sm_count: int, mode: Optional[str] = None,
                        sk_blocks: Optional[int] = None) -> decompose.StreamKPlan:
    """Stage 13's stream-K decomposition of ``tiles`` unsplit tiles (the shared model, one block
    per SM); ``mode`` / ``sk_blocks`` force it (options mode, grid)."""
    return decompose.stream_k_plan(tiles, iters_per_tile, sm_count, 1, mode=mode, sk_blocks=sk_blocks,
                                   min_iters_per_block=WGMMA_SK_MIN_ITERS, rule=WGMMA_STREAM_K)


def wgmma_decomposition(M: int, N: int, K: int, sm_count: int, tile: tuple, split3: bool, regb_rows: int,
                        splits: Optional[int] = None, mode: Optional[str] = None, sk_blocks: Optional[int] = None,
                        stream_k: bool = True) -> tuple:
    """(split plan, stream-K plan or None) of stage 13: the K split of the split-K model, or all
    tiles stream-K where tf32x3 splits nothing and its tiles fill at most WGMMA_SK_MAX_FILL of the
    SMs (``stream_k``: the path has a stream-K build). ``splits`` forces a K split; ``mode`` /
    ``sk_blocks`` force the stream-K plan, mode=dp none (the K split as the model or ``splits`` has it)."""
    if mode == "dp":
        return wgmma_split_plan(M, N, K, sm_count, tile, split3, splits=splits, regb_rows=regb_rows), None
    forced = mode is not None or sk_blocks is not None
    split = wgmma_split_plan(M, N, K, sm_count, tile, split3, splits=1 if forced else splits, regb_rows=regb_rows)
    tiles = decompose.cdiv(M, tile[0]) * decompose.cdiv(N, tile[1])
    if not stream_k or not (forced or (splits is None and split3 and split.splits == 1
                                       and tiles <= WGMMA_SK_MAX_FILL * sm_count)):
        return split, None
    sk = wgmma_stream_k_plan(tiles, decompose.cdiv(K, 32), sm_count, mode or "sk", sk_blocks)
    if not sk.sk_tiles:
        return split, None
    return decompose.SplitPlan(1, K, "user" if forced else "heuristic"), sk
