"""Operand preparation for tiled.py and split_k.py.

Three facts about Hopper decide how A and B should reach ``tl.dot``:

1. K-major B. Triton lowers a tf32 ``tl.dot`` on sm_90 to ``wgmma``, which reads B from shared
   memory and, for 32-bit operands, only K-major (the MN-major "transposed" form exists for
   16-bit types only). Our B is row-major KxN = N-major, so Triton transposes it on the way into
   shared memory with 4-byte ``cp.async`` copies (checked by compiling tiled.py for sm_90 here:
   a 128x256x32 tile issues 32 4-byte LDGSTS per thread per k-step for B instead of 12 16-byte
   ones for A and B together). Writing B^T (NxK, contiguous along K) once per launch with a
   coalesced transpose and reading B through it turns every copy into a 16-byte one.

2. 3xTF32 outside the loop. ``tl.dot(..., input_precision="tf32x3")`` splits each operand into a
   TF32 "big" part and the TF32 "small" remainder *inside* the K loop: per k-step every thread
   reloads both tiles from shared memory, splits them (about 300 ALU instructions per 12 wgmma
   for a 128x128x32 tile on sm_90) and writes B's halves back to shared memory before the
   tensor cores may start. The split depends only on the input, so here it is done once, in
   the same pass as the B transpose: A -> A_big, A_small (MxK) and B -> Bt_big, Bt_small (NxK,
   K-major). The GEMM then runs three plain tf32 K loops, small*big + big*small + big*big
   (the small*small term, < 2**-22 of the product, is dropped, as Triton's tf32x3 drops it):
   per tile it reads 1.5x the operand bytes of one tf32 pass and issues 3x the wgmma, with no
   ALU work in the loop. Extra traffic of the split pass: read A and B once, write them twice.

   Rounding: big = round-to-nearest (ties away, PTX cvt.rna.tf32.f32) of x to 10 mantissa bits,
   done with integer ops so the interpreter runs it too; small = x - big is exact in fp32 and
   is itself rounded to TF32, so the tensor core (which ignores the low 13 bits) sees both
   parts exactly. |small| <= 2**-11 |x|, so each product keeps ~22 bits: fp32-class accuracy.

3. M-major A for the FFMA (fp32 ieee) path. Triton's FMA lowering reads each thread's column
   of A fragments from the shared tile; with the tile K-contiguous (row-major A) those are
   scalar shared loads, one per row of the thread's sub-tile. Reading A through an M-major copy
   (A^T, contiguous along M; one coalesced transpose per launch, inside the timed region) makes
   them vector loads, as CUDA stage 06 does by storing A transposed in shared memory. Measured on
   an H200 (results/h200/fp32-operands/): triton.tiled fp32 44.9 -> 49.4 TFLOP/s at 4096^3
   (88% -> 97% of cuBLAS), 46.9 -> 50.2 at 8192^3, 42.3 -> 47.0 at 2048^3. The copy moves
   8*M*K bytes, so for small N it costs more than it saves (split-K at 256x256x131072: 86% ->
   80%); tiled.py uses it from N >= 2048 and split_k.py not at all.

Workspaces are allocated once (in ``prepare``); ``fill`` launches the pass(es) on the current
stream and is part of every timed launch, since the user handed us plain row-major fp32.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import triton
import triton.language as tl

# How the GEMM kernels get their operands.
DIRECT = "direct"       # A and B as given (fp32 ieee FFMA path; any strides)
K_MAJOR = "k_major"     # A as given, B through a K-major copy (tf32; builtin tf32x3)
PRESPLIT = "presplit"   # A and K-major B, each as a TF32 big/small pair (tf32x3)
M_MAJOR_A = "m_major_a"  # A through an M-major copy (A^T contiguous), B as given (fp32 FFMA study)


@triton.jit
def _round_to_tf32(x):
    # Round-to-nearest, ties away from zero, at mantissa bit 13: add half a TF32 ulp to the
    # magnitude bits and clear the 13 bits TF32 drops (sign-magnitude format: the carry does the
    # rounding, and a carry out of the mantissa correctly bumps the exponent; inf stays inf).
    bits = x.to(tl.uint32, bitcast=True)
    bits = (bits + 0x1000) & 0xFFFFE000
    return bits.to(tl.float32, bitcast=True)


@triton.jit
def _prep_kernel(src_ptr, big_ptr, small_ptr, R, S, stride_sr, stride_ss, ld_dst,
                 TRANSPOSE: tl.constexpr, SPLIT: tl.constexpr,
                 BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr):
    # Reads an R x S tile of src (any strides); writes it (TRANSPOSE: as S x R) to big, and with
    # SPLIT its TF32 big part to big and the TF32 remainder to small. Destinations are
    # contiguous along their last axis with leading dimension ld_dst.
    # One grid axis, r-tiles fastest (grid axis 1 would cap at 65535 programs).
    pid = tl.program_id(0)
    num_r = tl.cdiv(R, BLOCK_R)
    pid_r = pid % num_r
    pid_s = pid // num_r
    rr = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    ss = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    mask = (rr[:, None] < R) & (ss[None, :] < S)
    x = tl.load(src_ptr + rr[:, None] * stride_sr + ss[None, :] * stride_ss, mask=mask, other=0.0)
    if SPLIT:
        hi = _round_to_tf32(x)
        lo = _round_to_tf32(x - hi)
    else:
        hi = x
        lo = x
    if TRANSPOSE:
        # The tile is read with consecutive threads walking src's contiguous axis and written
        # with consecutive threads walking dst's: both global accesses are coalesced, and
        # tl.trans makes the compiler exchange the tile through shared memory in between.
        offs = ss[:, None] * ld_dst + rr[None, :]
        tl.store(big_ptr + offs, tl.trans(hi), mask=tl.trans(mask))
        if SPLIT:
            tl.store(small_ptr + offs, tl.trans(lo), mask=tl.trans(mask))
    else:
        offs = rr[:, None] * ld_dst + ss[None, :]
        tl.store(big_ptr + offs, hi, mask=mask)
        if SPLIT:
            tl.store(small_ptr + offs, lo, mask=mask)


def _buffer(rows: int, cols: int, like: torch.Tensor) -> torch.Tensor:
    """rows x cols fp32 view whose leading dimension is rounded up to 16 elements: Triton then
    specialises the stride as divisible by 16 and every row starts 64-byte aligned, so 16-byte
    vector loads along the row stay legal whatever ``cols`` is."""
    ld = triton.cdiv(cols, 16) * 16
    return torch.empty((rows, ld), device=like.device, dtype=torch.float32)[:, :cols]


def _launch_prep(src: torch.Tensor, big: torch.Tensor, small: Optional[torch.Tensor],
                 transpose: bool, split: bool) -> None:
    R, S = src.shape
    BR, BS = 64, 64
    grid = (triton.cdiv(R, BR) * triton.cdiv(S, BS),)
    _prep_kernel[grid](src, big, small if small is not None else big, R, S,
                       src.stride(0), src.stride(1), big.stride(0),
                       TRANSPOSE=transpose, SPLIT=split, BLOCK_R=BR, BLOCK_S=BS, num_warps=4)


@dataclass
class Operands:
    """What the GEMM kernel reads. ``a2``/``b2`` are the small halves in PRESPLIT mode and
    aliases of ``a``/``b`` otherwise. ``b_strides`` = (stride along K, stride along N)."""
    mode: str
    A: torch.Tensor
    B: torch.Tensor
    a: torch.Tensor
    a2: torch.Tensor
    b: torch.Tensor
    b2: torch.Tensor
    copy_b: bool = True

    @property
    def a_strides(self) -> tuple[int, int]:
        if self.mode == M_MAJOR_A:
            return self.a.stride(1), self.a.stride(0)   # a is K x M
        return self.a.stride(0), self.a.stride(1)

    @property
    def b_strides(self) -> tuple[int, int]:
        if self.mode in (DIRECT, M_MAJOR_A):
            return self.b.stride(0), self.b.stride(1)
        return self.b.stride(1), self.b.stride(0)   # b is N x K

    def fill(self) -> None:
        """Launch the preparation pass(es) for the current contents of A and B (no sync)."""
        if self.mode == K_MAJOR:
            if self.copy_b:
                _launch_prep(self.B, self.b, None, transpose=True, split=False)
        elif self.mode == M_MAJOR_A:
            _launch_prep(self.A, self.a, None, transpose=True, split=False)
        elif self.mode == PRESPLIT:
            _launch_prep(self.A, self.a, self.a2, transpose=False, split=True)
            _launch_prep(self.B, self.b, self.b2, transpose=True, split=True)

    def workspace_bytes(self) -> int:
        n = 0
        if self.mode == K_MAJOR and self.copy_b:
            n = self.b.shape[0] * self.b.stride(0)
        elif self.mode == M_MAJOR_A:
            n = self.a.shape[0] * self.a.stride(0)
        elif self.mode == PRESPLIT:
            n = 2 * (self.a.shape[0] * self.a.stride(0) + self.b.shape[0] * self.b.stride(0))
        return 4 * n


def make_operands(A: torch.Tensor, B: torch.Tensor, mode: str) -> Operands:
    """Allocate the workspaces for ``mode`` (once); call ``.fill()`` in every launch."""
    K, N = B.shape
    M = A.shape[0]
    if mode == DIRECT:
        return Operands(mode, A, B, A, A, B, B)
    if mode == K_MAJOR:
        if B.stride(0) == 1 and B.stride(1) % 4 == 0:
            # B is already K-major (e.g. B = X.t() of a contiguous N x K X): read it as it is.
            return Operands(mode, A, B, A, A, B.t(), B.t(), copy_b=False)
        bt = _buffer(N, K, B)
        return Operands(mode, A, B, A, A, bt, bt)
    if mode == M_MAJOR_A:
        at = _buffer(K, M, A)
        return Operands(mode, A, B, at, at, B, B)
    if mode == PRESPLIT:
        return Operands(mode, A, B, _buffer(M, K, A), _buffer(M, K, A), _buffer(N, K, B), _buffer(N, K, B))
    raise ValueError(f"unknown operand mode {mode!r}; known: {DIRECT}, {K_MAJOR}, {PRESPLIT}")
