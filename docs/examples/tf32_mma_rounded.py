r"""A plugin that tests an idea (results/h100/tensor-core/stage12-probes/triton-mma-sync/, part 6): is
rounding the TF32 operands what keeps stage 12 below Triton's own mma.sync code? Two copies of
one tutorial-style tf32 GEMM: ``x.trunc`` hands the fp32 tiles to tl.dot as loaded (the tensor
cores ignore the low 13 bits: truncation, what Triton's tf32 does), ``x.rna`` first adds half a
TF32 ulp to each element's bits, stage 12's rounding (cvt.rna.tf32.f32's rule, nearest with ties
away). On sm_90 run it with Triton's mma.sync lowering, which is what stage 12 uses:

    DISABLE_MMA_V3=1 python -m compare --plugin docs/examples/tf32_mma_rounded.py \
        --kernel x.trunc --kernel x.rna --kernel cuda.12_tf32_mma --precision tf32 --shape 4096

x.trunc and x.rna: 128x128x32, 4 warps (64x64 each, stage 12's), 4 stages; x.rna.128x256 and
x.rna.256x128: 8 warps, 3 stages. Grouped launch order."""
import triton
import triton.language as tl

from compare.families.plugin import gemm
from triton_kernels._gemm import grouped_tile, wrapped_range


@triton.jit
def _k(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, alpha,
       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, ROUND: tl.constexpr):
    pm, pn = grouped_tile(tl.program_id(0), M, N, BM, BN, GROUP)
    # Rows and columns past the edge wrap (their results are never stored): unmasked loads.
    rm = wrapped_range(pm, BM, M)
    rn = wrapped_range(pn, BN, N)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        if ROUND:
            # + half a TF32 ulp (2^12 in the bit pattern); the mma reads the upper 19 bits.
            a = (a.to(tl.uint32, bitcast=True) + 0x1000).to(tl.float32, bitcast=True)
            b = (b.to(tl.uint32, bitcast=True) + 0x1000).to(tl.float32, bitcast=True)
        acc = tl.dot(a, b, acc, input_precision="tf32")
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    c = c_ptr + (pm * BM + tl.arange(0, BM))[:, None] * scm + (pn * BN + tl.arange(0, BN))[None, :] * scn
    mask = ((pm * BM + tl.arange(0, BM))[:, None] < M) & ((pn * BN + tl.arange(0, BN))[None, :] < N)
    tl.store(c, alpha * acc, mask=mask)


def make(round_operands, bm=128, bn=128, bk=32, warps=4, stages=4):
    def matmul(A, B, C, alpha, beta, precision):
        M, K = A.shape
        N = B.shape[1]
        if K % bk or beta != 0:
            raise ValueError("experiment: K % BK == 0 and beta == 0 only")
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
        _k[grid](A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1), C.stride(0), C.stride(1),
                 float(alpha), BM=bm, BN=bn, BK=bk, GROUP=8, ROUND=round_operands, num_warps=warps,
                 num_stages=stages)
    return matmul


# name -> (rounded, BM, BN, BK, warps, stages): stage 12's tile both ways, and rounded, the two
# larger tiles Triton's mma.sync lowering ran fastest with (results/.../stage12-probes/triton-mma-sync/).
VARIANTS = {"x.trunc": (False, 128, 128, 32, 4, 4), "x.rna": (True, 128, 128, 32, 4, 4),
            "x.rna.128x256": (True, 128, 256, 32, 8, 3), "x.rna.256x128": (True, 256, 128, 32, 8, 3)}
for name, (rounded, *tile) in VARIANTS.items():
    gemm(name, make(rounded, *tile), precisions=("tf32",), interpretable=True,
         idea=f"tf32 tutorial GEMM, operands {'rounded to nearest (stage 12)' if rounded else 'truncated'}",
         config={"tile": "x".join(map(str, tile[:3])), "warps": tile[3], "stages": tile[4],
                 "operands": "rna" if rounded else "truncated"})
