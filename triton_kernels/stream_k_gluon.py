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

One program per C tile (no stream-K): the plan takes this path only where the tiles fill the
GPU well enough (ws_pays). GPU only: Gluon has no interpreter, and wgmma needs sm_90.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch
import triton

from compare.harness.errors import UsageError

from ._common import interpreting

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
    def _ws_consumer(a_desc, b_desc, a_s, b_s, full, empty, c_ptr, M, N, K, scm, alpha, beta, m0, n0,
                     HALF: gl.constexpr, HAS_BETA: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr,
                     BK: gl.constexpr, STAGES: gl.constexpr):
        # Columns n0 + HALF*BN/2 .. of C: rows of C^T, the wgmma's M side (64 per instruction).
        HB: gl.constexpr = BN // 2
        mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BM, 8])
        b_op: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=mma, k_width=1)
        acc = gl.zeros([HB, BM], gl.float32, mma)
        for kt in range(gl.cdiv(K, BK)):
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
        ptrs = c_ptr + rm.to(gl.int64)[:, None] * scm + rn[None, :]
        mask = (rm[:, None] < M) & (rn[None, :] < N)
        c = c * alpha
        if HAS_BETA:
            c = c + beta * gl.load(ptrs, mask=mask, other=0.0)
        gl.store(ptrs, c, mask=mask)

    @gluon.jit
    def _ws_producer(a_desc, b_desc, a_s, b_s, full, empty, c_ptr, M, N, K, scm, alpha, beta, m0, n0,
                     HALF: gl.constexpr, HAS_BETA: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr,
                     BK: gl.constexpr, STAGES: gl.constexpr):
        # (The worker partitions share one signature; this one uses the descriptors and ring.)
        nbytes: gl.constexpr = (BM * BK + BK * BN) * 4
        for kt in range(gl.cdiv(K, BK)):
            slot = kt % STAGES
            # A fresh mbarrier counts as having completed the phase before phase 0, so the first
            # round through the ring does not wait.
            mbarrier.wait(empty.index(slot), ((kt // STAGES) & 1) ^ 1)
            mbarrier.expect(full.index(slot), nbytes)
            _tma_load(a_desc, [m0, kt * BK], full.index(slot), a_s.index(slot))
            _tma_load(b_desc, [kt * BK, n0], full.index(slot), b_s.index(slot))

    @gluon.jit
    def _ws_kernel(a_desc, b_desc, c_ptr, M, N, K, scm, alpha, beta, HAS_BETA: gl.constexpr,
                   BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, STAGES: gl.constexpr,
                   GROUP: gl.constexpr, CONSUMER_REGS: gl.constexpr, PRODUCER_REGS: gl.constexpr):
        # Grouped order: GROUP column blocks of B walked down the rows of A, so that programs
        # running together share B's columns in L2.
        pid = gl.program_id(0)
        num_m = gl.cdiv(M, BM)
        num_n = gl.cdiv(N, BN)
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
            (_ws_consumer, (a_desc, b_desc, a_s, b_s, full, empty, c_ptr, M, N, K, scm, alpha, beta, m0, n0, 0,
                            HAS_BETA, BM, BN, BK, STAGES)),
            (_ws_consumer, (a_desc, b_desc, a_s, b_s, full, empty, c_ptr, M, N, K, scm, alpha, beta, m0, n0, 1,
                            HAS_BETA, BM, BN, BK, STAGES)),
            (_ws_producer, (a_desc, b_desc, a_s, b_s, full, empty, c_ptr, M, N, K, scm, alpha, beta, m0, n0, 0,
                            HAS_BETA, BM, BN, BK, STAGES)),
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


@dataclass(frozen=True)
class WsTile:
    bm: int
    bn: int
    bk: int
    stages: int

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
WS_TILE = WsTile(128, 256, 32, 4)
WS_TILE_SMALL = WsTile(128, 128, 32, 6)
WS_TILES = {t.dims: t for t in (WS_TILE, WS_TILE_SMALL)}
# Rows at most this many keep stream_k's own tf32 plan (the swapped tile GEMM, stream-K): at
# 128x4096x11008 it read 85% of cuBLAS tf32 against 60% here, at 64x8192x28672 98% against 93%.
WS_MIN_M = 129
# The better tile must fill at least this share of its last wave (tiles / (waves x SMs)): one
# program per tile has no stream-K to spread a short grid's K over the idle SMs. 1000x1004x996
# (64 tiles: 0.48) read 92% here against 65%; 128x4096x11008 (32 tiles: 0.24) 60% against 85%.
WS_MIN_FILL = 0.45
# 128x256 is taken unless 128x128 fills its waves this much better.
WS_SMALL_TILE_GAIN = 0.05
_WS_TILE_RE = re.compile(r"^(\d+)x(\d+)(?:x32)?$")


def parse_ws_tile(text) -> WsTile:
    if isinstance(text, WsTile):
        return text
    m = _WS_TILE_RE.match(str(text).strip())
    tile = WS_TILES.get(f"{m.group(1)}x{m.group(2)}x32") if m else None
    if tile is None:
        raise ValueError(f"expected one of {', '.join(sorted(WS_TILES))} (BMxBN[xBK])")
    return tile


def _fill(M: int, N: int, tile: WsTile, sms: int) -> float:
    tiles = triton.cdiv(M, tile.bm) * triton.cdiv(N, tile.bn)
    return tiles / (triton.cdiv(tiles, sms) * sms)


def default_ws_tile(M: int, N: int, sms: int) -> WsTile:
    big, small = _fill(M, N, WS_TILE, sms), _fill(M, N, WS_TILE_SMALL, sms)
    return WS_TILE_SMALL if small > big + WS_SMALL_TILE_GAIN else WS_TILE


def ws_pays(M: int, N: int, sms: int) -> bool:
    """The heuristic's rule (on eligible operands): enough rows, and tiles that fill the SMs."""
    return M >= WS_MIN_M and _fill(M, N, default_ws_tile(M, N, sms), sms) >= WS_MIN_FILL


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
    """The mode=ws launch: ``tile`` (WsTile; None: default_ws_tile)."""

    def __init__(self, A, B, C, alpha, beta, sms, tile=None):
        why = ws_unsupported(A, B, C)
        if why:
            raise UsageError(f"mode=ws (the Gluon warp-specialised tf32 GEMM): {why}")
        self.M, self.K = A.shape
        self.N = B.shape[1]
        self.A, self.B, self.C = A, B, C
        self.alpha, self.beta = float(alpha), float(beta)
        self.tile = parse_ws_tile(tile) if tile is not None else default_ws_tile(self.M, self.N, sms)
        t = self.tile
        self.tiles = triton.cdiv(self.M, t.bm) * triton.cdiv(self.N, t.bn)
        self.config = {
            "tile": t.dims, "num_warps": "4 + 4 + 1 (two consumer warpgroups, a TMA producer warp)",
            "num_stages": t.stages, "group_m": WS_GROUP, "decomposition": "ws", "tiles": self.tiles,
            "iters_per_tile": triton.cdiv(self.K, t.bk), "grid": self.tiles, "sms": sms,
            "wave_fill": round(_fill(self.M, self.N, t, sms), 3), "fixup": "none",
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
        t, C = self.tile, self.C
        _ws_kernel[(self.tiles,)](a_desc, b_desc, C, self.M, self.N, self.K, C.stride(0), self.alpha, self.beta,
                                  self.beta != 0, t.bm, t.bn, t.bk, t.stages, WS_GROUP, WS_CONSUMER_REGS,
                                  WS_PRODUCER_REGS, num_warps=WS_WARPS, maxnreg=WS_MAXNREG)
