r"""A plugin that tests an idea (results/h100/tf32-llm/): tf32 with a row-major B handed to tl.dot
through registers (b * one, so Triton stores it K-major itself) instead of a K-major copy.

    python -m compare --plugin docs/examples/tf32_b_through_registers.py --kernel x.stage256 \
        --precision tf32 --shape 960x8192x8192

On an H100 with Triton 3.6 it read 10-35% of cuBLAS tf32, below triton.stream_k with the copy
(47-82%) on every shape measured."""
import triton
import triton.language as tl

from compare.families.plugin import gemm


@triton.jit
def _k(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, alpha, one,
       BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr, MODE: tl.constexpr):
    pid = tl.program_id(0)
    num_m = tl.cdiv(M, BM)
    num_n = tl.cdiv(N, BN)
    group_size = GROUP * num_n
    first_m = (pid // group_size) * GROUP
    gm = min(num_m - first_m, GROUP)
    pm = first_m + (pid % group_size) % gm
    pn = (pid % group_size) // gm
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * sam + rk[None, :] * sak
    b_ptrs = b_ptr + rk[:, None] * sbk + rn[None, :] * sbn
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=rm[:, None] < M, other=0.0)
        b = tl.load(b_ptrs, mask=rn[None, :] < N, other=0.0)
        if MODE == 1:
            b = b * one
        if MODE == 2:
            acc = tl.trans(tl.dot(tl.trans(b) * one, tl.trans(a), tl.trans(acc), input_precision="tf32"))
        else:
            acc = tl.dot(a, b, acc, input_precision="tf32")
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    c = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    tl.store(c, alpha * acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def make(bm, bn, bk, warps, stages, mode):
    def matmul(A, B, C, alpha, beta, precision):
        M, K = A.shape
        N = B.shape[1]
        if K % bk or beta != 0:
            raise ValueError("experiment: K % BK == 0 and beta == 0 only")
        grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn),)
        _k[grid](A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1), C.stride(0), C.stride(1),
                 float(alpha), 1.0, BM=bm, BN=bn, BK=bk, GROUP=8, MODE=mode, num_warps=warps, num_stages=stages)
    return matmul


for name, cfg in {"x.load256": (128, 256, 32, 8, 3, 0), "x.stage256": (128, 256, 32, 8, 3, 1),
                  "x.stage128": (128, 128, 32, 8, 4, 1), "x.stage128w4": (128, 128, 32, 4, 4, 1),
                  "x.swap128": (128, 128, 32, 8, 4, 2)}.items():
    gemm(name, make(*cfg), precisions=("tf32",), idea=f"tf32 B-through-registers experiment {cfg}", interpretable=True,
         config={"tile": "x".join(map(str, cfg[:3])), "warps": cfg[3], "stages": cfg[4], "mode": cfg[5]})
