"""A kernel of your own: python -m compare --plugin docs/examples/my_kernel.py --kernel my.blocked"""
import triton
import triton.language as tl

from compare.families.plugin import triton_gemm


@triton.jit
def my_blocked(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
               alpha, beta, HAS_BETA: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr):
    pid = tl.program_id(0)
    rm = (pid // tl.cdiv(N, BLOCK_N)) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = (pid % tl.cdiv(N, BLOCK_N)) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")      # fp32: FFMA, no TF32
    c_ptrs = c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    out = alpha * acc
    if HAS_BETA:                                               # beta == 0: C is not read
        out += beta * tl.load(c_ptrs, mask=mask, other=0.0)
    tl.store(c_ptrs, out, mask=mask)


triton_gemm("my.blocked", my_blocked, constexprs=dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=32), group="naive",
            idea="my first Triton GEMM: 32x32 tiles, tl.dot in IEEE fp32")
