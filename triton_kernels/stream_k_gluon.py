"""Triton stream_k's tf32 path on Hopper: a warp-specialised GEMM in Gluon (mode=ws).

wgmma takes a 32-bit operand from shared memory only K-major, and a row-major B is N-major. cuBLAS
answers with the swapped product C^T = B^T A^T, B^T handed to wgmma in registers; `tl.dot` can't
say that, so stream_k's tile GEMM copies B K-major first, and on LLM projections (a few hundred
rows, K >= 8192) the copy was half the launch: 58-64% of cuBLAS tf32 whatever the tile
(docs/findings.md, "tf32 on LLM projections"). Gluon (triton.experimental.gluon: explicit layouts,
TMA, mbarriers, warpgroup_mma) can say it:

* A^T, K-major as stored, is wgmma's shared-memory operand; B^T's fragments are loaded from B's
  tile as stored straight into wgmma's register-operand layout, rounded to TF32 on the way (half
  an ulp added to the bits: the tensor cores read the upper 19). A is read as stored, so the
  tensor cores truncate it, as CUDA stage 13 does.
* Three partitions (gl.warp_specialize): one producer warp issues the TMA copies of A's and B's
  K-tiles into a STAGES-deep ring, each slot guarded by a "full" mbarrier (bytes landed) and an
  "empty" one (both consumers done with it); two consumer warpgroups each own half of the tile's
  columns.
* Each consumer waits for its own wgmma before loading the next K-tile's fragments, and the two
  share no barrier. So no instruction writes a register that a wgmma in flight reads (when one
  did, ptxas serialised every wgmma, C7513, or the results were wrong), and one warpgroup's
  wgmma keep the tensor cores busy while the other loads.

One program per tile and K range: where whole tiles would leave much of the last wave of SMs idle,
K is cut into ranges whose partials a second kernel adds in range order (the same bits every
run); the split count is the least estimated time by compare/families/decompose.py's split-K model
(the one Triton's split_k and CUDA stage 10 use), and the plan takes this path where that grid
fills the GPU well enough, or on a small problem, where the tile GEMM's fixed costs weigh more than
an idle SM (ws_pays). GPU only: Gluon has no interpreter, and wgmma needs
sm_90; the partials' sum is stream_k_kernels._range_sum_kernel (plain Triton).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch
import triton

from compare.families import decompose as model
from compare.harness.errors import UsageError

from ._common import interpreting
from .stream_k_kernels import _range_sum_kernel

try:   # Gluon with warp specialisation: Triton >= 3.5 (its API as in 3.6 and 3.9)
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma,
                                                                  warpgroup_mma, warpgroup_mma_wait)
    HAVE_GLUON = hasattr(gl, "warp_specialize")
except ImportError:  # pragma: no cover - older Triton
    HAVE_GLUON = False

# ---------------------------------------------------------------------------------------------
# Kernel.

if HAVE_GLUON:
    # Triton 3.6 names the TMA load async_copy_global_to_shared; 3.9 async_load.
    _tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared

    @gluon.jit
    def _ws_consumer(a_desc, b_desc, a_s, b_s, full, empty, c_ptr, w_ptr, M, N, scm, alpha, beta, m0, n0, kt0,
                     n_kt, split, HALF: gl.constexpr, SPLIT: gl.constexpr, BM: gl.constexpr,
                     BN: gl.constexpr, BK: gl.constexpr, STAGES: gl.constexpr):
        # Columns n0 + HALF*BN/2 .. of C: rows of C^T, the wgmma's M side (64 per instruction).
        HB: gl.constexpr = BN // 2
        mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BM, 8])
        b_op: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=mma, k_width=1)
        acc = gl.zeros([HB, BM], gl.float32, mma)
        for kt in range(n_kt):
            slot = kt % STAGES
            mbarrier.wait(full.index(slot), (kt // STAGES) & 1)
            bt = b_s.index(slot).slice(HALF * HB, HB, dim=1).permute((1, 0)).load(b_op)
            bt = (bt.to(gl.int32, bitcast=True) + 0x1000).to(gl.float32, bitcast=True)
            acc = warpgroup_mma(bt, a_s.index(slot).permute((1, 0)), acc, is_async=True)
            acc = warpgroup_mma_wait(num_outstanding=0, deps=[acc])
            # The slot's shared-memory reads (fragments, the wgmma's A^T) are done; order them
            # before the producer's next TMA write into it (another proxy), then hand it back.
            fence_async_shared()
            mbarrier.arrive(empty.index(slot), count=1)

        out: gl.constexpr = gl.BlockedLayout([1, 4], [1, 32], [4, 1], [1, 0])
        c = gl.convert_layout(gl.permute(acc, (1, 0)), out)
        rm = m0 + gl.arange(0, BM, gl.SliceLayout(1, out))
        rn = n0 + HALF * HB + gl.arange(0, HB, gl.SliceLayout(0, out))
        mask = (rm[:, None] < M) & (rn[None, :] < N)
        if SPLIT:
            # This K range's raw partial, summed in range order (and beta * C added) by
            # _range_sum_kernel. beta * C here would hold C's tile beside the accumulator: past the
            # 232 registers (ptxas spilled 3.5 KB with Triton 3.6).
            ptrs = w_ptr + (split.to(gl.int64) * M + rm)[:, None] * N + rn[None, :]
            gl.store(ptrs, c, mask=mask)
        else:
            ptrs = c_ptr + rm.to(gl.int64)[:, None] * scm + rn[None, :]
            gl.store(ptrs, c * alpha, mask=mask)

    @gluon.jit
    def _ws_producer(a_desc, b_desc, a_s, b_s, full, empty, c_ptr, w_ptr, M, N, scm, alpha, beta, m0, n0, kt0,
                     n_kt, split, HALF: gl.constexpr, SPLIT: gl.constexpr, BM: gl.constexpr,
                     BN: gl.constexpr, BK: gl.constexpr, STAGES: gl.constexpr):
        # (The worker partitions share one signature; this one uses the descriptors and ring.)
        nbytes: gl.constexpr = (BM * BK + BK * BN) * 4
        for kt in range(n_kt):
            slot = kt % STAGES
            # A fresh mbarrier counts as having completed the phase before phase 0, so the first
            # round through the ring does not wait.
            mbarrier.wait(empty.index(slot), ((kt // STAGES) & 1) ^ 1)
            mbarrier.expect(full.index(slot), nbytes)
            _tma_load(a_desc, [m0, (kt0 + kt) * BK], full.index(slot), a_s.index(slot))
            _tma_load(b_desc, [(kt0 + kt) * BK, n0], full.index(slot), b_s.index(slot))

    @gluon.jit
    def _ws_kernel(a_desc, b_desc, c_ptr, w_ptr, M, N, K, scm, alpha, beta, kt_per_split, SPLIT: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, STAGES: gl.constexpr,
                   GROUP: gl.constexpr, CONSUMER_REGS: gl.constexpr, PRODUCER_REGS: gl.constexpr):
        # Program pid: K range pid // tiles (SPLIT: kt_per_split K-tiles of it, written raw to the
        # workspace w_ptr; else all of K, alpha * it written to C) of tile pid % tiles. Tiles in grouped order: GROUP column blocks of B walked down the rows
        # of A, so that programs running together share B's columns in L2.
        num_m = gl.cdiv(M, BM)
        num_n = gl.cdiv(N, BN)
        split = gl.program_id(0) // (num_m * num_n)
        pid = gl.program_id(0) % (num_m * num_n)
        k_tiles = gl.cdiv(K, BK)
        if SPLIT:
            kt0 = split * kt_per_split
            n_kt = gl.maximum(gl.minimum(kt_per_split, k_tiles - kt0), 0)
        else:
            kt0 = 0
            n_kt = k_tiles
        per_group = GROUP * num_m
        first_n = (pid // per_group) * GROUP
        size_n = gl.minimum(num_n - first_n, GROUP)
        m0 = ((pid % per_group) // size_n) * BM
        n0 = (first_n + (pid % per_group) % size_n) * BN

        a_s = gl.allocate_shared_memory(gl.float32, [STAGES, BM, BK], a_desc.layout)
        b_s = gl.allocate_shared_memory(gl.float32, [STAGES, BK, BN], b_desc.layout)
        full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(STAGES):
            mbarrier.init(full.index(i), count=1)
            mbarrier.init(empty.index(i), count=2)   # one arrival per consumer warpgroup
        fence_async_shared()
        # The argument tuples are written out: a tuple built by concatenation turns its
        # constexprs into tensors.
        gl.warp_specialize([
            (_ws_consumer, (a_desc, b_desc, a_s, b_s, full, empty, c_ptr, w_ptr, M, N, scm, alpha, beta, m0, n0,
                            kt0, n_kt, split, 0, SPLIT, BM, BN, BK, STAGES)),
            (_ws_consumer, (a_desc, b_desc, a_s, b_s, full, empty, c_ptr, w_ptr, M, N, scm, alpha, beta, m0, n0,
                            kt0, n_kt, split, 1, SPLIT, BM, BN, BK, STAGES)),
            (_ws_producer, (a_desc, b_desc, a_s, b_s, full, empty, c_ptr, w_ptr, M, N, scm, alpha, beta, m0, n0,
                            kt0, n_kt, split, 0, SPLIT, BM, BN, BK, STAGES)),
        ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])

# ---------------------------------------------------------------------------------------------
# Plan.

# The default partition (consumer 0) is the kernel's 4 warps; the workers add 4 (consumer 1) and
# 1 (the producer, a warpgroup of its own): 3 warpgroups. maxnreg 168 x 384 threads is the SM's
# 64K registers; setmaxnreg then gives each consumer 232 (a 128x128 accumulator takes 128) and
# the producer 40: 2 x 232 + 40 = 3 x 168.
WS_WARPS = 4
WS_MAXNREG = 168
WS_CONSUMER_REGS = 232
WS_PRODUCER_REGS = 40
WS_GROUP = 8
SUM_BLOCK_M, SUM_BLOCK_N = 32, 128


@dataclass(frozen=True)
class WsTile:
    bm: int
    bn: int
    bk: int
    stages: int
    # Seconds one SM takes per k of a 128x128 area of this tile on an H100 (decompose's split-K
    # model, SplitCost.tile_k_seconds): 128x256 at ~330 TFLOP/s over 132 SMs in full waves (0.84 us
    # per K-tile of 32); 128x128 at 0.8 of that rate per flop (0.74-0.86 on six tunable shapes
    # where both filled their waves alike, results/h100/tf32-ws/round2).
    k_seconds: float

    @property
    def cost(self) -> model.SplitCost:
        """decompose's split-K model with mode=ws's numbers: no fill overhead counted; a split
        pays the sum kernel's launch (WS_SUM_LAUNCH_S) and its partials written and read back (2
        words per range) and C written (1), at ~2.5 TB/s; a split must strictly beat whole K."""
        return model.SplitCost(tile_k_seconds=self.k_seconds, overhead_k=0, launch_s=WS_SUM_LAUNCH_S,
                               deterministic_words=(2, 1), min_gain=1.0)

    @property
    def dims(self) -> str:
        return f"{self.bm}x{self.bn}x{self.bk}"

    @property
    def name(self) -> str:
        return f"{self.dims}/{self.stages}"

    def smem_bytes(self) -> int:
        return self.stages * (self.bm * self.bk + self.bk * self.bn) * 4


# Two tiles, chosen on tunable shapes (results/h100/tf32-ws/round1): 128x256 (each consumer a
# 128x128 wgmma) moves the fewest bytes per flop; 128x128 (each consumer 64 columns, 6 stages)
# doubles the tile count where 128x256 tiles fill the SMs poorly. A 256x128 tile (N = 256 wgmma,
# half the fragment loads) won one shape of 18 and lost 2048^3 by 10 points.
WS_TILE = WsTile(128, 256, 32, 4, 0.84e-6 / 32 / 2)
WS_TILE_SMALL = WsTile(128, 128, 32, 6, 0.84e-6 / 32 / 2 / 0.8)
WS_TILES = {t.dims: t for t in (WS_TILE, WS_TILE_SMALL)}
# Rows at most this many keep stream_k's own tf32 plan (the swapped tile GEMM, stream-K): at
# 128x4096x11008 it read 85% of cuBLAS tf32 against 60% here, at 64x8192x28672 98% against 93%.
WS_MIN_M = 129
# From this many rows the tile GEMM's K-major copy of B is a small share of the launch (its
# bytes per element of B against 2M flops) and its all-shared-memory pipeline wins: 6144^3 read
# 84.6% there against 83.1% here, 8192^3 89.5% against 78.2% (4096^3: 81.9% against 85.9%).
WS_MAX_M = 6144
# Columns fewer than this keep the tile GEMM's narrow tiles: the swapped product puts N on
# wgmma's 64-row side (8192x16x8192: 93.7% there, 89.3% here; 4096x64x4096: 88.9%, 93.6% here).
WS_MIN_N = 64
# The chosen grid (tiles x K ranges) must fill at least this share of its last wave: 1000x1004x996
# (64 tiles: 0.48) read 92% here against 65%; 128x4096x11008 (32 tiles: 0.24) 60% against 85%.
WS_MIN_FILL = 0.45
# K ranges per tile (ws_splits): at most this many, each at least WS_MIN_SPLIT_KT K-tiles long,
# where decompose's split-K model (WsTile.cost) says the fuller grid repays writing and summing
# partials.
# Up to WS_MAX_SPLITS_FEW_TILES where WS_MAX_SPLITS ranges per tile would still leave half the SMs
# idle (long K, tiny grids: 384x384x65536 99% of cuBLAS tf32 with 12 ranges, 46% with 4); the
# estimate misplaces 5-7 ranges on larger grids (600x5120x13824: 95% whole, 83% in 3 ranges),
# so they keep 4 (results/h100/tf32-ws/round2, round3).
WS_MAX_SPLITS = 4
WS_MAX_SPLITS_FEW_TILES = 16
# A K range of at least this many K-tiles (512 of K): on small problems 16-K-tile ranges were the
# fastest split (640x640x2048: 4 ranges 22.7 us, whole K 33.0 us; results/h100/tf32-small/).
WS_MIN_SPLIT_KT = 16
# The sum kernel's launch, which a split adds (a launch on an H100: ~3-4 us of GPU time in this
# engine's samples): 1024^3 in 2 ranges took 22.0 us against 21.0 whole, which the model
# without it got the other way round.
WS_SUM_LAUNCH_S = 4e-6
# Small problems (K <= WS_SMALL_MAX_K, M*N <= WS_SMALL_MAX_OUTPUT): the fixed costs of the tile
# GEMM's plan (B's K-major copy, a stream-K fixup) are most of their time, and mode=ws took the
# fastest tf32 time on all 18 such tunable shapes however few tiles filled the SMs (768^3: 36
# tiles, 18.0 us against the tile GEMM's 26.6; 8192x256x1024: 24.0 against 35.4), from 96 rows
# (96x4096x2048 in 4 ranges: 27.2 against 33.5) to 8192 (results/h100/tf32-small/). So there the
# rows, wave-fill and WS_MAX_M bounds do not apply.
# Under WS_SMALL_MIN_TILES tiles of 128x128 the tile GEMM's stream-K (64 programs) beat mode=ws's
# at most 4 K ranges: 128x512x2048 75% of cuBLAS tf32 against 63%, all three tunable shapes of 4-6
# tiles alike; of 8-9 tiles mode=ws won four of five (320x320x2000: 69% against 61%). Those shapes
# were added to the tuning after the held-out 256x256x2048 (4 tiles) lost 76% -> 62.5% under the
# rule without this bound (results/h100/tf32-small/few-tiles/). K too short for two ranges keeps
# mode=ws at any tile count: 257x132x68 read 90.7% there against 77.3% (results/h100/tf32-ws/round1).
WS_SMALL_MAX_K = 2048
WS_SMALL_MAX_OUTPUT = 8 * 2**20
WS_SMALL_MIN_M = 65
WS_SMALL_MIN_TILES = 8
_WS_TILE_RE = re.compile(r"^(\d+)x(\d+)(?:x32)?$")


def parse_ws_tile(text) -> WsTile:
    if isinstance(text, WsTile):
        return text
    m = _WS_TILE_RE.match(str(text).strip())
    tile = WS_TILES.get(f"{m.group(1)}x{m.group(2)}x32") if m else None
    if tile is None:
        raise ValueError(f"expected one of {', '.join(sorted(WS_TILES))} (BMxBN[xBK])")
    return tile


# The most K ranges per tile option ws_splits takes (its default stays at or under WS_MAX_SPLITS_FEW_TILES).
WS_SPLITS_LIMIT = 64


def _tiles(M: int, N: int, tile: WsTile) -> int:
    return triton.cdiv(M, tile.bm) * triton.cdiv(N, tile.bn)


def _fill(programs: int, sms: int) -> float:
    return programs / (triton.cdiv(programs, sms) * sms)


def _split_plan(M: int, N: int, K: int, sms: int, tile: WsTile, splits=None) -> model.SplitPlan:
    most = WS_MAX_SPLITS_FEW_TILES if _tiles(M, N, tile) * WS_MAX_SPLITS < sms / 2 else WS_MAX_SPLITS
    return model.choose_split(M, N, K, sms, tile=(tile.bm, tile.bn), chunk_align=tile.bk,
                              min_chunk=WS_MIN_SPLIT_KT * tile.bk, max_splits=most, cost=tile.cost, splits=splits)


def ws_seconds(M: int, N: int, K: int, tile: WsTile, splits: int, sms: int) -> float:
    """The model behind the defaults (decompose.split_seconds with WsTile.cost): waves of
    programs x K per program x the tile's time per k, plus the partials' bytes when K is split."""
    return model.split_seconds(M, N, K, sms, splits, tile=(tile.bm, tile.bn), chunk_align=tile.bk,
                               cost=tile.cost)[0]


def default_ws_plan(M: int, N: int, K: int, sms: int, tile=None, splits=None) -> tuple:
    """(tile, K ranges per tile): per tile decompose.choose_split's range count, then the tile of
    the two with the least ws_seconds; a given tile or split count is kept."""
    best = None
    for t in [tile] if tile is not None else [WS_TILE, WS_TILE_SMALL]:
        s = _split_plan(M, N, K, sms, t, splits).splits
        est = ws_seconds(M, N, K, t, s, sms)
        if best is None or est < best[0]:
            best = (est, t, s)
    return best[1], best[2]


def ws_pays(M: int, N: int, K: int, sms: int) -> bool:
    """The heuristic's rule (on eligible operands): a small problem (WS_SMALL_MAX_K) of at least
    WS_SMALL_MIN_M rows and WS_SMALL_MIN_TILES tiles or a K too short to split; else rows and
    columns in range, and a grid that fills the SMs."""
    if N >= WS_MIN_N and M >= WS_SMALL_MIN_M and small_problem(M, N, K):
        t = WS_TILE_SMALL
        return _tiles(M, N, t) >= WS_SMALL_MIN_TILES or triton.cdiv(K, t.bk) < 2 * WS_MIN_SPLIT_KT
    if not (WS_MIN_M <= M < WS_MAX_M and N >= WS_MIN_N):
        return False
    tile, splits = default_ws_plan(M, N, K, sms)
    return _fill(_tiles(M, N, tile) * splits, sms) >= WS_MIN_FILL


def small_problem(M: int, N: int, K: int) -> bool:
    """K <= WS_SMALL_MAX_K and M*N <= WS_SMALL_MAX_OUTPUT (issue #43's "small and mid problems")."""
    return K <= WS_SMALL_MAX_K and M * N <= WS_SMALL_MAX_OUTPUT


def ws_unsupported(A, B, C) -> str:
    """Why this problem can't take mode=ws ('' when it can): the GPU, the Triton, the layouts."""
    if not HAVE_GLUON:
        return f"triton {triton.__version__} has no Gluon warp specialisation"
    if interpreting() or A.device.type != "cuda":
        return "Gluon kernels run on the GPU only (no interpreter)"
    cap = torch.cuda.get_device_capability(A.device)
    if cap[0] != 9:
        return f"wgmma needs sm_90 (Hopper); this GPU is sm_{cap[0]}{cap[1]}"
    for name, t in (("A", A), ("B", B)):
        if t.stride(1) != 1 or (t.stride(0) * 4) % 16 or t.data_ptr() % 16:
            return (f"TMA reads {name} row-major with 16-byte aligned rows; this {name} has strides "
                    f"{tuple(t.stride())} and address {t.data_ptr() % 16} mod 16")
    if C.stride(1) != 1:
        return f"the epilogue writes C row-major; this C has strides {tuple(C.stride())}"
    return ""


class WsPlan:
    """The mode=ws launch: ``tile`` (WsTile) and ``splits`` (K ranges per tile); either None:
    default_ws_plan's."""

    def __init__(self, A, B, C, alpha, beta, sms, tile=None, splits=None):
        why = ws_unsupported(A, B, C)
        if why:
            raise UsageError(f"mode=ws (the Gluon warp-specialised tf32 GEMM): {why}")
        self.M, self.K = A.shape
        self.N = B.shape[1]
        self.A, self.B, self.C = A, B, C
        self.alpha, self.beta = float(alpha), float(beta)
        tile = parse_ws_tile(tile) if tile is not None else None
        self.tile, splits = default_ws_plan(self.M, self.N, self.K, sms, tile, splits)
        t = self.tile
        k_tiles = triton.cdiv(self.K, t.bk)
        # Equal ranges of whole K-tiles; the count drops to what they need.
        self.splits, chunk = model.split_geometry(self.K, splits, t.bk)
        self.kt_per_split = triton.cdiv(chunk, t.bk)
        self.tiles = _tiles(self.M, self.N, t)
        # Partials go through the workspace when K is split, and when beta != 0 (the sum kernel
        # adds beta * C; see _ws_consumer).
        self.to_workspace = self.splits > 1 or self.beta != 0
        self.W = (torch.empty(self.splits * self.M * self.N, device=A.device, dtype=torch.float32)
                  if self.to_workspace else None)
        self.config = {
            "tile": t.dims, "num_warps": "4 + 4 + 1 (two consumer warpgroups, a TMA producer warp)",
            "num_stages": t.stages, "group_m": WS_GROUP, "decomposition": "ws", "tiles": self.tiles,
            "iters_per_tile": k_tiles, "k_splits": self.splits, "k_tiles_per_split": self.kt_per_split,
            "grid": self.tiles * self.splits, "sms": sms,
            "wave_fill": round(_fill(self.tiles * self.splits, sms), 3),
            "fixup": ("none" if not self.to_workspace else "workspace + fixed-order sum kernel (range order)"
                      if self.splits > 1 else "workspace + sum kernel (beta * C)"),
            "operands": "A, B as stored (TMA)", "operand_copy_bytes": 0,
            "b_transpose": "swap (C^T = B^T A^T, B^T's fragments in wgmma's register operand)",
            "input_precision": "tf32 (B rounded to nearest, A truncated by the tensor cores)",
        }
        self._descs = None

    def _descriptors(self):
        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
        t = self.tile
        a_l = gl.NVMMASharedLayout.get_default_for([t.bm, t.bk], gl.float32)
        b_l = gl.NVMMASharedLayout.get_default_for([t.bk, t.bn], gl.float32)
        return (TensorDescriptor.from_tensor(self.A, [t.bm, t.bk], a_l),
                TensorDescriptor.from_tensor(self.B, [t.bk, t.bn], b_l))

    def launch(self):
        if self._descs is None:   # host descriptors are built once per plan, outside the timing
            self._descs = self._descriptors()
        a_desc, b_desc = self._descs
        t, C, split = self.tile, self.C, self.to_workspace
        _ws_kernel[(self.tiles * self.splits,)](
            a_desc, b_desc, C, self.W if split else C, self.M, self.N, self.K, C.stride(0), self.alpha, self.beta,
            self.kt_per_split, split, t.bm, t.bn, t.bk, t.stages, WS_GROUP, WS_CONSUMER_REGS,
            WS_PRODUCER_REGS, num_warps=WS_WARPS, maxnreg=WS_MAXNREG)
        if split:
            _range_sum_kernel[(triton.cdiv(self.M, SUM_BLOCK_M), triton.cdiv(self.N, SUM_BLOCK_N))](
                self.W, C, self.M, self.N, self.M * self.N, C.stride(0), C.stride(1), self.alpha, self.beta,
                self.splits, HAS_BETA=self.beta != 0, BLOCK_M=SUM_BLOCK_M, BLOCK_N=SUM_BLOCK_N, num_warps=4)
