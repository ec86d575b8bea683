"""Triton stage 1, "naive_blocked": the most direct Triton GEMM (counterpart of CUDA 01-03).

The idea
--------
Triton's unit of work is a program that owns a *block* of the output, so even the simplest
Triton GEMM is already "blocked": one program per 32x32 tile of C, a loop over K in steps of
32, ``tl.dot`` on the two loaded tiles in IEEE fp32 (FFMA, no tensor cores), masks on every
edge. There is no tuning, no launch-order swizzle and nothing chosen for the GPU.

How it maps to the CUDA ladder: CUDA 01 (one thread per C element) has no Triton spelling,
since a program always owns a tile. What CUDA 02 (coalescing) and 03 (shared-memory staging)
do by hand the compiler does for this loop: it lays the loads out so a warp reads contiguous
128-byte lines and stages the tiles that ``tl.dot`` consumes in shared memory (with its default
num_stages=3 it even overlaps the next tile's copy, compiled for sm_90: cp.async into shared
memory). So this rung sits at or a little past CUDA 03; what bigger, tuned tiles
and the grouped launch order add is stage "tiled".
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl

from compare.harness.registry import Kernel, Stage, declare_stage, register

from ._common import check_gemm_args

PRECISIONS = ("fp32",)
BLOCK_M = BLOCK_N = BLOCK_K = 32
NUM_WARPS = 4


@triton.jit
def _naive_blocked_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                          stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                          alpha, beta, HAS_BETA: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    # Row-major launch order: program ids run along N first, the obvious mapping. (One grid
    # axis: axis 0 takes up to 2**31-1 programs, axis 1 only 65535.)
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m[:, None] < M
    n_ok = offs_n[None, :] < N

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = (k0 + offs_k) < K
        a = tl.load(a_ptr + offs_m[:, None] * stride_am + (k0 + offs_k)[None, :] * stride_ak,
                    mask=m_ok & k_ok[None, :], other=0.0)
        b = tl.load(b_ptr + (k0 + offs_k)[:, None] * stride_bk + offs_n[None, :] * stride_bn,
                    mask=k_ok[:, None] & n_ok, other=0.0)
        acc = tl.dot(a, b, acc, input_precision="ieee")

    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    out = acc * alpha
    if HAS_BETA:  # beta == 0: C is not read (it may hold NaN)
        out += beta * tl.load(c_ptrs, mask=m_ok & n_ok, other=0.0)
    tl.store(c_ptrs, out, mask=m_ok & n_ok)


def _launch(A, B, C, alpha, beta):
    M, K = A.shape
    N = B.shape[1]
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    _naive_blocked_kernel[grid](A, B, C, M, N, K,
                                A.stride(0), A.stride(1), B.stride(0), B.stride(1),
                                C.stride(0), C.stride(1), float(alpha), float(beta),
                                HAS_BETA=beta != 0, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N,
                                BLOCK_K=BLOCK_K, num_warps=NUM_WARPS)


def naive_blocked_matmul(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, alpha: float = 1.0,
                         beta: float = 0.0, precision: str = "fp32") -> torch.Tensor:
    """C = alpha*A@B + beta*C in place (float32; any strides); returns C."""
    check_gemm_args("naive_blocked_matmul", A, B, C, alpha, beta, precision, PRECISIONS)
    _launch(A, B, C, alpha, beta)
    return C


def _prepare(problem, inputs, options=None):
    A, B, C = inputs.A, inputs.B, inputs.C
    check_gemm_args("triton.naive_blocked", A, B, C, problem.alpha, problem.beta, problem.precision, PRECISIONS)
    alpha, beta = problem.alpha, problem.beta

    def launch():
        _launch(A, B, C, alpha, beta)
    return launch


# A Triton-only stage: numbered after its group's first CUDA stage (naive, 1).
STAGE = declare_stage(Stage(1, "naive_blocked", "naive", "one program per output tile, fixed small tiles, tl.dot in "
                                                          "IEEE fp32"))

KERNEL = register(Kernel(
    name="triton.naive_blocked", family="triton", stage=STAGE.name, precisions=PRECISIONS,
    prepare=_prepare, interpretable=True,
    idea="one program per 32x32 C tile, K loop of tl.dot (ieee), masks on every edge, no tuning",
    meta={"BLOCK_M": BLOCK_M, "BLOCK_N": BLOCK_N, "BLOCK_K": BLOCK_K, "num_warps": NUM_WARPS},
))
