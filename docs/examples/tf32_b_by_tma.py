r"""A plugin that tests an idea (docs/findings.md, "tf32 on LLM projections"): tf32 with the row-major
B read by TMA (a host tensor descriptor) as stored, in the plain product (x.tma_direct) and in the
swapped one C^T = B^T A^T (x.tma_swap), instead of triton.stream_k's K-major copy of B.

    python -m compare --plugin docs/examples/tf32_b_by_tma.py --kernel x.tma_direct --kernel x.tma_swap \
        --kernel triton.stream_k --precision tf32 --shape 960x8192x8192

What the compiler makes of it (sm_90; python -m reproduce.stream_k_study --tma-b-ir): a tf32
operand that is not K-major in shared memory is read into registers and written back transposed
every K-step (local_load + local_alloc), and the wgmma is then waited for at once (pendings = 0),
with Triton 3.6 and 3.9 alike."""
import triton
import triton.language as tl

from compare.families.plugin import gemm


@triton.jit
def _k(a_desc, b_desc, c_ptr, M, N, K, scm, alpha,
       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, SWAP: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    group_size = GROUP * num_n
    first_m = (pid // group_size) * GROUP
    gm = min(num_m - first_m, GROUP)
    pm = first_m + (pid % group_size) % gm
    pn = (pid % group_size) // gm
    m0 = pm * BM
    n0 = pn * BN
    if SWAP:
        acc = tl.zeros((BN, BM), dtype=tl.float32)
    else:
        acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        # TMA zero-fills what lies past the matrix: no masks.
        a = a_desc.load([m0, k])
        b = b_desc.load([k, n0])
        if SWAP:
            acc = tl.dot(tl.trans(b), tl.trans(a), acc, input_precision="tf32")
        else:
            acc = tl.dot(a, b, acc, input_precision="tf32")
    if SWAP:
        acc = tl.trans(acc)
    rm = m0 + tl.arange(0, BM)
    rn = n0 + tl.arange(0, BN)
    c = c_ptr + rm[:, None] * scm + rn[None, :]
    tl.store(c, alpha * acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


# name: (BM, BN, BK, warps, stages, swap)
CONFIGS = {"x.tma_direct": (128, 256, 32, 8, 3, 0), "x.tma_swap": (128, 128, 32, 8, 4, 1)}


def make(bm, bn, bk, warps, stages, swap):
    def matmul(A, B, C, alpha, beta, precision):
        from triton.tools.tensor_descriptor import TensorDescriptor
        M, K = A.shape
        N = B.shape[1]
        if beta != 0 or K % 4 or N % 4 or A.stride(1) != 1 or B.stride(1) != 1 or C.stride(1) != 1:
            raise ValueError("experiment: beta == 0, row-major operands with K % 4 == 0 and N % 4 == 0 "
                             "(TMA needs 16-byte row strides)")
        a_desc = TensorDescriptor.from_tensor(A, [bm, bk])
        b_desc = TensorDescriptor.from_tensor(B, [bk, bn])
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
        _k[grid](a_desc, b_desc, C, M, N, K, C.stride(0), float(alpha), BM=bm, BN=bn, BK=bk, GROUP=8, SWAP=swap,
                 num_warps=warps, num_stages=stages)
    return matmul


for name, cfg in CONFIGS.items():
    gemm(name, make(*cfg), precisions=("tf32",), idea=f"tf32, B read by TMA as stored {cfg}", interpretable=True,
         config={"tile": "x".join(map(str, cfg[:3])), "warps": cfg[3], "stages": cfg[4], "swap": bool(cfg[5])})
