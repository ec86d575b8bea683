r"""A plugin that tests an idea (docs/findings.md, "tf32 on LLM projections"): tf32 with the
row-major B read as stored, written in Gluon (Triton's explicit-layout language,
triton.experimental.gluon) so that what `tl.dot` can't say is said: the swapped product
C^T = B^T A^T, with B^T loaded from its TMA tile straight into wgmma's register operand layout
(DotOperandLayout) and A^T, K-major as stored, read by wgmma from shared memory.

    python -m compare --plugin docs/examples/tf32_gluon_swap.py --kernel x.gluon_swap \
        --kernel triton.stream_k --precision tf32 --shape 960x8192x8192

GPU only (Gluon has no interpreter); sm_90. One warpgroup pair (8 warps) per 256x128 tile of
C^T (BN x BM), STAGES-deep TMA ring on mbarriers, one wgmma in flight. B^T's registers are
rounded to TF32 (half an ulp added to the bits; the tensor cores read the upper 19); A^T is read
as stored (the tensor cores truncate it), as stage 13 does."""
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)

from compare.families.plugin import gemm

# Triton 3.6 names the TMA load async_copy_global_to_shared and the block barrier thread_barrier;
# 3.9 async_load and barrier.
_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
_block_barrier = getattr(gl, "thread_barrier", None) or gl.barrier


@gluon.jit
def _b_fragments(b_tile, layout: gl.constexpr):
    # B^T's registers for wgmma, rounded to TF32 (half an ulp added to the bits).
    bt = b_tile.permute((1, 0)).load(layout)
    return (bt.to(gl.int32, bitcast=True) + 0x1000).to(gl.float32, bitcast=True)


@gluon.jit
def _step(kt, acc, bt_in_flight, a_desc, b_desc, a_s, b_s, bars, m0, n0, k_tiles, b_op: gl.constexpr,
          BK: gl.constexpr, STAGES: gl.constexpr, nbytes: gl.constexpr):
    # K-tile kt: its B^T fragments into fresh registers while the previous wgmma (reading
    # bt_in_flight) runs, its wgmma, the wait that retires the previous one, then the refill of
    # the slot that one read. Returns (acc, the fragments now free, the fragments in flight).
    slot = kt % STAGES
    mbarrier.wait(bars.index(slot), (kt // STAGES) & 1)
    bt = _b_fragments(b_s.index(slot), b_op)
    acc = warpgroup_mma(bt, a_s.index(slot).permute((1, 0)), acc, is_async=True)
    acc, bt_done = warpgroup_mma_wait(num_outstanding=1, deps=[acc, bt_in_flight])
    _block_barrier()   # every warp's wgmma before this one is retired: its slot may be refilled
    nk = kt + STAGES - 1
    if nk < k_tiles:
        ns = nk % STAGES
        mbarrier.expect(bars.index(ns), nbytes)
        _tma_load(a_desc, [m0, nk * BK], bars.index(ns), a_s.index(ns))
        _tma_load(b_desc, [nk * BK, n0], bars.index(ns), b_s.index(ns))
    return acc, bt_done, bt


@gluon.jit
def _swap_kernel(a_desc, b_desc, c_ptr, M, N, K, scm, alpha, beta, HAS_BETA: gl.constexpr,
                 BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, STAGES: gl.constexpr,
                 GROUP: gl.constexpr, WARPS: gl.constexpr):
    # Grouped order: GROUP column blocks of B walked down the rows of A, so that programs running
    # together share B's columns in L2.
    pid = gl.program_id(0)
    num_m = gl.cdiv(M, BM)
    num_n = gl.cdiv(N, BN)
    per_group = GROUP * num_m
    first_n = (pid // per_group) * GROUP
    size_n = gl.minimum(num_n - first_n, GROUP)
    pid_n = first_n + (pid % per_group) % size_n
    pid_m = (pid % per_group) // size_n
    m0 = pid_m * BM
    n0 = pid_n * BN

    a_s = gl.allocate_shared_memory(gl.float32, [STAGES, BM, BK], a_desc.layout)
    b_s = gl.allocate_shared_memory(gl.float32, [STAGES, BK, BN], b_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(bars.index(i), count=1)
    fence_async_shared()

    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[WARPS, 1], instr_shape=[16, BM, 8])
    b_op: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=mma, k_width=1)
    k_tiles = gl.cdiv(K, BK)
    nbytes: gl.constexpr = (BM * BK + BK * BN) * 4
    for i in gl.static_range(STAGES - 1):
        if i < k_tiles:
            mbarrier.expect(bars.index(i), nbytes)
            _tma_load(a_desc, [m0, i * BK], bars.index(i), a_s.index(i))
            _tma_load(b_desc, [i * BK, n0], bars.index(i), b_s.index(i))
    # The first K-tile is peeled: its wgmma starts the accumulator (use_acc=False), so no other
    # instruction writes the accumulator once the wgmma pipeline runs (ptxas serialises every
    # wgmma otherwise: C7515).
    mbarrier.wait(bars.index(0), 0)
    bt_a = _b_fragments(b_s.index(0), b_op)
    acc = warpgroup_mma(bt_a, a_s.index(0).permute((1, 0)), gl.zeros([BN, BM], gl.float32, mma),
                        use_acc=False, is_async=True)
    acc = warpgroup_mma_wait(num_outstanding=1, deps=[acc])
    if STAGES - 1 < k_tiles:   # the last slot is still unused
        mbarrier.expect(bars.index(STAGES - 1), nbytes)
        _tma_load(a_desc, [m0, (STAGES - 1) * BK], bars.index(STAGES - 1), a_s.index(STAGES - 1))
        _tma_load(b_desc, [(STAGES - 1) * BK, n0], bars.index(STAGES - 1), b_s.index(STAGES - 1))
    # wgmma reads its register operand while it runs, and one stays in flight: consecutive K-tiles
    # take their B^T fragments into two register sets (b, then a, unrolled by two), each kept alive
    # until the wait that retires its wgmma. With one set the next tile's loads overwrote the
    # registers of the wgmma in flight (wrong results, 2026-11-26).
    bt_b = bt_a
    for kt0 in range(1, k_tiles, 2):
        acc, bt_a, bt_b = _step(kt0, acc, bt_a, a_desc, b_desc, a_s, b_s, bars, m0, n0, k_tiles, b_op,
                                BK, STAGES, nbytes)
        if kt0 + 1 < k_tiles:
            acc, bt_b, bt_a = _step(kt0 + 1, acc, bt_b, a_desc, b_desc, a_s, b_s, bars, m0, n0, k_tiles, b_op,
                                    BK, STAGES, nbytes)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=[acc])
    for i in gl.static_range(STAGES):
        mbarrier.invalidate(bars.index(i))

    out: gl.constexpr = gl.BlockedLayout([1, 4], [1, 32], [WARPS, 1], [1, 0])
    c = gl.convert_layout(gl.permute(acc, (1, 0)), out)
    rm = m0 + gl.arange(0, BM, gl.SliceLayout(1, out))
    rn = n0 + gl.arange(0, BN, gl.SliceLayout(0, out))
    ptrs = c_ptr + rm[:, None] * scm + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    c = c * alpha
    if HAS_BETA:
        c = c + beta * gl.load(ptrs, mask=mask, other=0.0)
    gl.store(ptrs, c, mask=mask)


# name: (BM, BN, BK, STAGES, warps)
CONFIGS = {"x.gluon_swap": (128, 256, 32, 4, 8), "x.gluon_swap128": (128, 128, 32, 4, 8)}


def make(bm, bn, bk, stages, warps):
    def matmul(A, B, C, alpha, beta, precision):
        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
        M, K = A.shape
        N = B.shape[1]
        if K % 4 or N % 4 or A.stride(1) != 1 or B.stride(1) != 1 or C.stride(1) != 1:
            raise ValueError("experiment: row-major operands with K % 4 == 0 and N % 4 == 0 "
                             "(TMA needs 16-byte row strides)")
        a_l = gl.NVMMASharedLayout.get_default_for([bm, bk], gl.float32)
        b_l = gl.NVMMASharedLayout.get_default_for([bk, bn], gl.float32)
        a_desc = TensorDescriptor.from_tensor(A, [bm, bk], a_l)
        b_desc = TensorDescriptor.from_tensor(B, [bk, bn], b_l)
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
        _swap_kernel[grid](a_desc, b_desc, C, M, N, K, C.stride(0), float(alpha), float(beta), beta != 0,
                           bm, bn, bk, stages, 8, warps, num_warps=warps)
    return matmul


for name, cfg in CONFIGS.items():
    gemm(name, make(*cfg), precisions=("tf32",), idea=f"tf32 in Gluon: C^T = B^T A^T, B^T from TMA into registers {cfg}",
         config={"tile": f"{cfg[1]}x{cfg[0]}x{cfg[2]} (C^T)", "stages": cfg[3], "warps": cfg[4]})
