"""Triton stream_k's path for a matrix times 1-8 vectors: C = alpha * A @ B + beta * C for N <= 8.

With N <= 8 columns a product does at most 2*8 flops per 4-byte element of A: 4 flops per byte,
so its time is A's bytes over DRAM bandwidth (at 3.35 TB/s that asks 13.4 TFLOP/s of FFMA, a
fifth of H100's 67). The tile GEMM pads N to a 16-wide tile and pays a dot's layouts; here each
program streams a BLOCK_M x BLOCK_K piece of row-major A with 16-byte loads along K, reads A once
for all N columns, and keeps one FFMA accumulator per column in A's own register layout (no
layout conversion, no shared memory, no reduction across lanes inside the K loop). A thread sums
its 4 consecutive k of each product in registers (K_GROUP), so an accumulator holds a quarter of
the piece: 8 columns on a 32x64 piece take 102 registers a thread, no spills, and the K loop
has 12 16-byte loads, 64 FFMAs and no shared-memory access (compiled for sm_90 by
``python -m reproduce.stream_k_study --skinny-ir``), so 4 programs, 32 KB of A, are in
flight per SM.

B is read K-major, each column a run of consecutive k: a thread loads its 4 k of a column with
one 16-byte load. A row-major (N-major) B would cost a 4-byte load per k and column, 16 cache
lines a warp per load (N = 8), so it is first copied K-major (8 bytes per element of B, 2N/M of
A's bytes; ``operand_copy_bytes`` in the row's config).

K is cut into ``skinny_splits`` equal ranges when the row blocks alone leave the GPU short of
programs; each range writes its partial BLOCK_M x N block to a workspace and takes a ticket
(stream_k_gemv._last_of); the range of a row block that finishes last sums its partials in range
order and writes C: the same bits every run, whichever finishes last, as the stream-K fixup's
are, with no second launch. A few rows with a long K split into hundreds of ranges (32x8x524288:
512); one program adding them all was most of the row's time, so past SKINNY_FIXUP_GROUP ranges
the tickets go in two levels (_skinny_fixup).

Precision: fp32 (FFMA, IEEE). tf32x3 takes this path through tf32x3_split=ffma: at 4 flops per
byte FFMA keeps up with DRAM, so the three TF32 products buy no time (and its error is fp32's).
tf32 (mode=skinny; by default only where stream_k_heuristic.TF32_ON_SKINNY_PATH, off since an
H100 A/B lost its worst shape: the tile GEMM otherwise) multiplies TF32 inputs on the FFMA pipe:
every value of A and B is truncated to TF32 as it is loaded (_operands.tf32_truncate: the low 13 mantissa bits
dropped, as the tensor cores read an fp32 operand and as the tile GEMM's tf32 dots read theirs),
the products and sums in fp32. Its result is then the tensor cores' product of the same inputs
up to the order of fp32 additions; the tensor cores would idle on DRAM here either way. The
truncation costs one integer AND per loaded value (at N = 8, 48 in a K loop of 64 FFMAs).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from compare.harness.errors import UsageError

from ._common import check_block, check_warps
from ._operands import FP32_FFMA_PATH, TF32_FFMA_PATH, _aligned, _Operand, _prepare_b, tf32_truncate
from .stream_k_gemv import _last_of
from .stream_k_kernels import _mult4

# ---------------------------------------------------------------------------------------------
# Kernels.


@triton.jit
def _skinny_col(acc, a, b_ptrs, stride_bn, J: tl.constexpr, N_COLS: tl.constexpr, K_GROUP: tl.constexpr,
                TF32: tl.constexpr):
    # acc (BLOCK_M x BLOCK_K / K_GROUP) += a * column J of B, each thread's K_GROUP consecutive
    # k of the product summed in its registers first (they are one 16-byte load of A). TF32:
    # the column read as the tensor cores would (a is already).
    if J < N_COLS:
        b = tl.load(b_ptrs + J * stride_bn)
        if TF32:
            b = tf32_truncate(b)
        p = a * b[None, :]
        if K_GROUP > 1:
            p = tl.sum(tl.reshape(p, (p.shape[0], p.shape[1] // K_GROUP, K_GROUP)), axis=2)
        acc += p
    return acc


@triton.jit
def _skinny_tail(acc, a, b_ptrs, stride_bn, kmask, J: tl.constexpr, N_COLS: tl.constexpr,
                 K_GROUP: tl.constexpr, TF32: tl.constexpr):
    # The range's partial last step: column J of B masked past the range (A is masked too).
    if J < N_COLS:
        b = tl.load(b_ptrs + J * stride_bn, mask=kmask, other=0.0)
        if TF32:
            b = tf32_truncate(b)
        p = a * b[None, :]
        if K_GROUP > 1:
            p = tl.sum(tl.reshape(p, (p.shape[0], p.shape[1] // K_GROUP, K_GROUP)), axis=2)
        acc += p
    return acc


@triton.jit
def _skinny_out(acc, c_ptr, w_ptr, offs_m, M, N, pid_k, stride_cm, stride_cn, alpha, beta,
                J: tl.constexpr, N_COLS: tl.constexpr, SPLIT: tl.constexpr, HAS_BETA: tl.constexpr):
    # Column J of the block: the raw partial of range pid_k into the workspace (SPLIT; summed in
    # range order by _skinny_fixup), else alpha * y + beta * C into C.
    if J < N_COLS:
        y = tl.sum(acc, axis=1)
        mask = offs_m < M
        if SPLIT:
            tl.store(w_ptr + (pid_k * M + offs_m).to(tl.int64) * N + J, y, mask=mask)
        else:
            c_ptrs = c_ptr + offs_m.to(tl.int64) * stride_cm + J * stride_cn
            out = y * alpha
            if HAS_BETA:
                out += beta * tl.load(c_ptrs, mask=mask, other=0.0)
            tl.store(c_ptrs, out, mask=mask)


@triton.jit
def _skinny_add(src_ptr, first, count, offs_m, M, N, N_COLS: tl.constexpr, SUM_R: tl.constexpr):
    # The sum of partial blocks first .. first + count - 1 of src (each M x N, row-major) over the
    # rows offs_m, SUM_R blocks a load (".cg": from L2, where the other SMs' partials are, not a
    # stale L1 line), each load's blocks added in a fixed order: the same bits whichever program
    # runs it. SUM_R blocks a load, not one: one program adding 512 partials one load at a time
    # waited on L2 512 times (32x8x524288: 67 of its 89 us).
    offs_n = tl.arange(0, 8)
    offs_r = tl.arange(0, SUM_R)
    mask_mn = (offs_m < M)[:, None] & (offs_n < N_COLS)[None, :]
    at = offs_m.to(tl.int64)[:, None] * N + offs_n[None, :]
    s = tl.zeros((offs_m.shape[0], 8), dtype=tl.float32)
    for r0 in range(0, count, SUM_R):
        r = r0 + offs_r
        ptrs = src_ptr + (first + r).to(tl.int64)[:, None, None] * M * N + at[None, :, :]
        mask = (r < count)[:, None, None] & mask_mn[None, :, :]
        s += tl.sum(tl.load(ptrs, mask=mask, other=0.0, cache_modifier=".cg"), axis=0)
    return s


@triton.jit
def _skinny_store(s, c_ptr, offs_m, M, stride_cm, stride_cn, alpha, beta, HAS_BETA: tl.constexpr,
                  N_COLS: tl.constexpr):
    # alpha * sum + beta * C into the block's rows of C.
    offs_n = tl.arange(0, 8)
    mask = (offs_m < M)[:, None] & (offs_n < N_COLS)[None, :]
    c_ptrs = c_ptr + offs_m.to(tl.int64)[:, None] * stride_cm + offs_n[None, :] * stride_cn
    out = s * alpha
    if HAS_BETA:
        out += beta * tl.load(c_ptrs, mask=mask, other=0.0)
    tl.store(c_ptrs, out, mask=mask)


@triton.jit
def _skinny_fixup(c_ptr, w_ptr, g_ptr, lock_ptr, offs_m, M, N, pid_m, pid_k, splits, blocks, stride_cm, stride_cn,
                  alpha, beta, HAS_BETA: tl.constexpr, N_COLS: tl.constexpr, GROUP: tl.constexpr,
                  SUM_R: tl.constexpr):
    # After range pid_k of row block pid_m stored its partial. GROUP == 0: the range that
    # finishes last sums all the ranges' partials in range order and writes C. GROUP > 0 (more
    # ranges than GROUP): two levels of tickets, so no program adds more than GROUP + groups
    # partials: the last range of each group of GROUP consecutive ranges sums its group's
    # partials (range order) into g_ptr[group]; the last group to finish sums those (group order)
    # and writes C. Either way the order is fixed: the same bits every run.
    if GROUP == 0:
        if _last_of(lock_ptr + pid_m, splits):
            s = _skinny_add(w_ptr, 0, splits, offs_m, M, N, N_COLS, SUM_R)
            _skinny_store(s, c_ptr, offs_m, M, stride_cm, stride_cn, alpha, beta, HAS_BETA, N_COLS)
    else:
        groups = tl.cdiv(splits, GROUP)
        g = pid_k // GROUP
        first = g * GROUP
        count = tl.minimum(GROUP, splits - first)
        if _last_of(lock_ptr + pid_m * groups + g, count):
            s = _skinny_add(w_ptr, first, count, offs_m, M, N, N_COLS, SUM_R)
            offs_n = tl.arange(0, 8)
            mask = (offs_m < M)[:, None] & (offs_n < N_COLS)[None, :]
            g_ptrs = g_ptr + (g * M + offs_m).to(tl.int64)[:, None] * N + offs_n[None, :]
            tl.store(g_ptrs, s, mask=mask)
            if _last_of(lock_ptr + blocks * groups + pid_m, groups):
                s = _skinny_add(g_ptr, 0, groups, offs_m, M, N, N_COLS, SUM_R)
                _skinny_store(s, c_ptr, offs_m, M, stride_cm, stride_cn, alpha, beta, HAS_BETA, N_COLS)


@triton.jit
def _skinny_kernel(a_ptr, b_ptr, c_ptr, w_ptr, g_ptr, lock_ptr, M, N, K, k_per_split, splits, stride_am, stride_ak,
                   stride_bk, stride_bn, stride_cm, stride_cn, alpha, beta, A_K_CONTIG: tl.constexpr,
                   A_HINT: tl.constexpr, B_K_CONTIG: tl.constexpr, B_HINT: tl.constexpr, SPLIT: tl.constexpr,
                   HAS_BETA: tl.constexpr, N_COLS: tl.constexpr, K_GROUP: tl.constexpr, TF32: tl.constexpr,
                   BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, GROUP: tl.constexpr, SUM_R: tl.constexpr,
                   ROTATED: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)
    # A's unit stride is written as the constant 1 so its loads are vectors; rows past M wrap
    # (% M) instead of being masked, so the loop's loads stay unpredicated (never stored).
    if A_K_CONTIG:
        stride_ak = 1
        stride_am = _mult4(stride_am, A_HINT)
        offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    else:
        stride_am = 1
        stride_ak = _mult4(stride_ak, A_HINT)
        offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % _mult4(M, A_HINT)
        # "% M" hides that the rows run consecutively; without this the loads' lanes walk K.
        offs_m = tl.max_contiguous(offs_m, BLOCK_M)
    # B K-major (as given or copied so): column j's k are consecutive, each thread's 4 k one
    # 16-byte load. B_K_CONTIG False: B's rows as given (N-major, operands=as_given): 4-byte loads, the
    # N columns of a row in one 32-byte sector, no copy.
    if B_K_CONTIG:
        stride_bk = 1
        stride_bn = _mult4(stride_bn, B_HINT)
    else:
        stride_bn = 1
    k_lo = pid_k * k_per_split
    k_hi = tl.minimum(k_lo + k_per_split, K)
    offs_k = tl.arange(0, BLOCK_K)
    # int64 rows: M * K passes 2**31 elements from 46341^2 on.
    a_ptrs = a_ptr + offs_m.to(tl.int64)[:, None] * stride_am + (k_lo + offs_k)[None, :] * stride_ak
    b_ptrs = b_ptr + (k_lo + offs_k).to(tl.int64) * stride_bk
    zero = tl.zeros((BLOCK_M, BLOCK_K // K_GROUP), dtype=tl.float32)
    c0 = zero
    c1 = zero
    c2 = zero
    c3 = zero
    c4 = zero
    c5 = zero
    c6 = zero
    c7 = zero
    n_full = (k_hi - k_lo) // BLOCK_K
    # ROTATED: program pid_m takes its full steps from step pid_m % n_full on and wraps around,
    # so the programs in flight read A at different K offsets, not all at the same one (option
    # skinny_order; the sum order is fixed per program: the same bits every run). Each trip's
    # pointers are computed from the first step's: an offset of step * BLOCK_K keeps the loads'
    # 16-byte alignment visible to the compiler; moving them by a wrapped scalar step did not
    # (that build lost up to 20% on the H100, results/h100/skinny-order/).
    a_first = a_ptrs
    b_first = b_ptrs
    start = 0
    if ROTATED:
        start = pid_m % tl.maximum(n_full, 1)
    for i in range(0, n_full):
        if ROTATED:
            step = i + start
            step = tl.where(step >= n_full, step - n_full, step)
            a_ptrs = a_first + step * BLOCK_K * stride_ak
            b_ptrs = b_first + step * BLOCK_K * stride_bk
        a = tl.load(a_ptrs)
        if TF32:
            # A read as the tensor cores read it for a tf32 product (B: in _skinny_col).
            a = tf32_truncate(a)
        c0 = _skinny_col(c0, a, b_ptrs, stride_bn, 0, N_COLS, K_GROUP, TF32)
        c1 = _skinny_col(c1, a, b_ptrs, stride_bn, 1, N_COLS, K_GROUP, TF32)
        c2 = _skinny_col(c2, a, b_ptrs, stride_bn, 2, N_COLS, K_GROUP, TF32)
        c3 = _skinny_col(c3, a, b_ptrs, stride_bn, 3, N_COLS, K_GROUP, TF32)
        c4 = _skinny_col(c4, a, b_ptrs, stride_bn, 4, N_COLS, K_GROUP, TF32)
        c5 = _skinny_col(c5, a, b_ptrs, stride_bn, 5, N_COLS, K_GROUP, TF32)
        c6 = _skinny_col(c6, a, b_ptrs, stride_bn, 6, N_COLS, K_GROUP, TF32)
        c7 = _skinny_col(c7, a, b_ptrs, stride_bn, 7, N_COLS, K_GROUP, TF32)
        if not ROTATED:
            a_ptrs += BLOCK_K * stride_ak
            b_ptrs += BLOCK_K * stride_bk
    if ROTATED:
        a_ptrs = a_first + n_full * BLOCK_K * stride_ak
        b_ptrs = b_first + n_full * BLOCK_K * stride_bk
    k_left = k_hi - k_lo - n_full * BLOCK_K
    if k_left > 0:
        kmask = offs_k < k_left
        a = tl.load(a_ptrs, mask=kmask[None, :], other=0.0)
        if TF32:
            a = tf32_truncate(a)
        c0 = _skinny_tail(c0, a, b_ptrs, stride_bn, kmask, 0, N_COLS, K_GROUP, TF32)
        c1 = _skinny_tail(c1, a, b_ptrs, stride_bn, kmask, 1, N_COLS, K_GROUP, TF32)
        c2 = _skinny_tail(c2, a, b_ptrs, stride_bn, kmask, 2, N_COLS, K_GROUP, TF32)
        c3 = _skinny_tail(c3, a, b_ptrs, stride_bn, kmask, 3, N_COLS, K_GROUP, TF32)
        c4 = _skinny_tail(c4, a, b_ptrs, stride_bn, kmask, 4, N_COLS, K_GROUP, TF32)
        c5 = _skinny_tail(c5, a, b_ptrs, stride_bn, kmask, 5, N_COLS, K_GROUP, TF32)
        c6 = _skinny_tail(c6, a, b_ptrs, stride_bn, kmask, 6, N_COLS, K_GROUP, TF32)
        c7 = _skinny_tail(c7, a, b_ptrs, stride_bn, kmask, 7, N_COLS, K_GROUP, TF32)
    offs_c = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    _skinny_out(c0, c_ptr, w_ptr, offs_c, M, N, pid_k, stride_cm, stride_cn, alpha, beta, 0, N_COLS, SPLIT, HAS_BETA)
    _skinny_out(c1, c_ptr, w_ptr, offs_c, M, N, pid_k, stride_cm, stride_cn, alpha, beta, 1, N_COLS, SPLIT, HAS_BETA)
    _skinny_out(c2, c_ptr, w_ptr, offs_c, M, N, pid_k, stride_cm, stride_cn, alpha, beta, 2, N_COLS, SPLIT, HAS_BETA)
    _skinny_out(c3, c_ptr, w_ptr, offs_c, M, N, pid_k, stride_cm, stride_cn, alpha, beta, 3, N_COLS, SPLIT, HAS_BETA)
    _skinny_out(c4, c_ptr, w_ptr, offs_c, M, N, pid_k, stride_cm, stride_cn, alpha, beta, 4, N_COLS, SPLIT, HAS_BETA)
    _skinny_out(c5, c_ptr, w_ptr, offs_c, M, N, pid_k, stride_cm, stride_cn, alpha, beta, 5, N_COLS, SPLIT, HAS_BETA)
    _skinny_out(c6, c_ptr, w_ptr, offs_c, M, N, pid_k, stride_cm, stride_cn, alpha, beta, 6, N_COLS, SPLIT, HAS_BETA)
    _skinny_out(c7, c_ptr, w_ptr, offs_c, M, N, pid_k, stride_cm, stride_cn, alpha, beta, 7, N_COLS, SPLIT, HAS_BETA)
    if SPLIT:
        _skinny_fixup(c_ptr, w_ptr, g_ptr, lock_ptr, offs_c, M, N, pid_m, pid_k, splits, tl.num_programs(0), stride_cm,
                      stride_cn, alpha, beta, HAS_BETA, N_COLS, GROUP, SUM_R)


# ---------------------------------------------------------------------------------------------
# Plan.

# Columns at most this many take this path (a product of at most 4 flops per byte of A).
SKINNY_MAX_N = 8
# Programs to aim for: the default tiles take 56-102 registers a thread on 4 warps (stream_k_study
# --skinny-ir), so at least 4 programs reside per SM: 4 per SM fills the GPU in one wave.
SKINNY_PROGRAMS_PER_SM = 4
# More K ranges than this take the two-level fixup (_skinny_fixup): no program then adds more
# than 16 + ranges / 16 partials (512 ranges: 48, not 512).
SKINNY_FIXUP_GROUP = 16
# Floats of partials one fixup load reads (SUM_R blocks of BLOCK_M x 8): 8 a thread on 4 warps.
# 4096 (32 a thread, with their 64-bit addresses) took the whole kernel from 56-104 registers to
# 167 (python -m reproduce.stream_k_study --skinny-ir at a two-level shape) and lost 9-13% on the
# H100 where it halved the programs an SM holds; 1024 keeps the one-level build's 60-104.
SKINNY_SUM_FLOATS = 1024
# The order of a program's K steps: in_order (0, 1, ...) or rotated (from pid_m % steps on).
SKINNY_ORDERS = ("in_order", "rotated")
# A K range gets at least this many BLOCK_K steps: its partial block (4 * BLOCK_M * N bytes
# written, then read) stays under 1/64 of the A bytes the range reads (N = 8, BLOCK_K = 64).
SKINNY_MIN_STEPS = 8


@dataclass(frozen=True)
class SkinnyTile:
    bm: int
    bk: int
    warps: int = 4

    def dims(self, n: int) -> str:
        """BMxNxBK, as a run's config names the tile."""
        return f"{self.bm}x{n}x{self.bk}"

    @property
    def name(self) -> str:
        return f"{self.bm}x{self.bk}/{self.warps}"


# The tiles, from registers and loads in flight (compiled for sm_90 without a GPU, not yet
# timed): 3-8 columns 32x64 on 4 warps (102 registers at N = 8: 4 programs, 32 KB of A in
# flight an SM); 1-2 columns 64x64 (60-80 registers: 6-8 programs, 96-128 KB).
SKINNY_TILE = SkinnyTile(32, 64, 4)
SKINNY_TILE_NARROW = SkinnyTile(64, 64, 4)
# 3-8 columns where A is read along K 4 bytes at a time (K % 4 != 0, or A unaligned: k_group 1):
# the compiled layout gives each lane one k of 16 rows of a 32x64 piece, so the accumulators
# are 16 a column and N = 8 takes 234 registers, 2 programs an SM (ncu at 30460x8x3170: 238,
# DRAM 44.9% busy). 16x64 halves the rows a lane holds: 120 registers at N = 8, 72 at N = 4
# (sm_90: python -m reproduce.stream_k_study --skinny-scalar-ir). H200, the 8 such rows of 46
# tuning shapes: 1.120x, 0.869-1.455x
# (results/h200/skinny-scalar-tile/).
SKINNY_TILE_SCALAR = SkinnyTile(16, 64, 4)
# 1-2 columns read so: 64x64 holds 32 rows a lane, 168 registers at N = 1 and 204 at N = 2
# (sm_90); 32x64 takes 92 and 110. H200, 14 tuning rows (reproduce/shapes/skinny_scalar_narrow_tune.txt):
# 32x64 1.06-1.14x on the 9 with K <= SKINNY_NARROW_SCALAR_MAX_K, 0.82-1.24x on the 5 past it
# (results/h200/skinny-scalar-tile/narrow/).
SKINNY_TILE_NARROW_SCALAR = SkinnyTile(32, 64, 4)
SKINNY_NARROW_SCALAR_MAX_K = 16384
_SKINNY_TILE_RE = re.compile(r"^(\d+)x(\d+)(?:/(\d+))?$")


def parse_skinny_tile(text) -> SkinnyTile:
    if isinstance(text, SkinnyTile):
        return text
    m = _SKINNY_TILE_RE.match(str(text).strip())
    if not m:
        raise ValueError("expected BMxBK[/warps], e.g. 32x64/4")
    bm, bk = int(m.group(1)), int(m.group(2))
    for nm, v in (("BM", bm), ("BK", bk)):
        check_block(nm, v, 256)
    if bm * bk > 16384:
        raise ValueError(f"BMxBK={bm}x{bk}: up to 8 accumulators of BM*BK/4 floats; at most 16384")
    warps = int(m.group(3)) if m.group(3) else 4
    check_warps(warps)
    return SkinnyTile(bm, bk, warps)


def default_tile(N: int, a_k_scalar: bool, K: int) -> SkinnyTile:
    """The tile for ``N`` columns (the accumulators' registers grow with N); ``a_k_scalar``: A
    read along K with 4-byte loads (SKINNY_TILE_SCALAR, SKINNY_TILE_NARROW_SCALAR up to
    SKINNY_NARROW_SCALAR_MAX_K)."""
    if N <= 2:
        narrow_scalar = a_k_scalar and K <= SKINNY_NARROW_SCALAR_MAX_K
        return SKINNY_TILE_NARROW_SCALAR if narrow_scalar else SKINNY_TILE_NARROW
    return SKINNY_TILE_SCALAR if a_k_scalar else SKINNY_TILE


def default_splits(M: int, K: int, tile: SkinnyTile, sms: int) -> int:
    """K ranges per row block: enough programs for SKINNY_PROGRAMS_PER_SM per SM, each range at
    least SKINNY_MIN_STEPS steps long."""
    blocks = triton.cdiv(M, tile.bm)
    want = triton.cdiv(SKINNY_PROGRAMS_PER_SM * sms, blocks)
    return max(1, min(want, triton.cdiv(K, SKINNY_MIN_STEPS * tile.bk)))


# Rows of A at most this many per column of B read B's rows as given (default_b_rows).
SKINNY_B_ROWS_MAX_M_PER_N = 32


def default_b_rows(M: int, N: int) -> bool:
    """B's rows read as given (4-byte loads) instead of through a K-major copy where the copy
    (2 x B's bytes, and a launch) is at least 1/16 of A's bytes, M <= 32 N, and N <= 7. H100, 31
    tuning shapes (results/h100/skinny-b-rows/): there 1.31-2.14x (24x3x700001 73.5 -> 42.5 us);
    at N = 8 the rows build lost everywhere (0.38-0.67x, not understood), so N = 8 keeps the copy;
    with M > 32 N it read 0.93-1.33x, the copy's bytes negligible there and the gains unexplained,
    so those keep the copy too."""
    return N <= 7 and M <= SKINNY_B_ROWS_MAX_M_PER_N * N


# Columns at which the K-split kernel also runs rotated (default_order): at N = 7 the programs
# reading A at the same K offsets halve the DRAM rate (ncu at 11357x7x6476: 30% of DRAM peak
# in_order, 57% rotated, the same grid and bytes;
# docs/findings.md#triton-skinny-the-k-step-order-with-k-split-at-n--7-h200).
SKINNY_ROTATED_SPLIT_N = 7


def default_order(splits: int, N: int) -> str:
    """rotated where K is not split (many row blocks, every program from k = 0 at once) and
    N >= 3, or where N = SKINNY_ROTATED_SPLIT_N whatever the split; else in_order. H100
    (results/h100/skinny-order/, reproduce/skinny_order_summary.py): with one K range and N >= 3
    rotated read 0.92-2.53x in_order (25000x7x5000 520 -> 205 us; most of the gain at N = 5-8);
    with K split (few row blocks, a long K) it lost up to 0.69x, at N = 8; at N <= 2 (the 64-row
    tile) it gained nothing on the tuning shapes (0.93-1.02x) and lost 0.71x on heldout_skinny's
    4096x1x512. H200 (results/h200/skinny-order-split/): with K split, N = 7 read 1.00-2.00x
    rotated on all 12 such shapes measured (10701x7x13908 433 -> 217 us); N = 3-6 and 8 read
    0.93-1.24x on a fresh draw, so they keep in_order."""
    return "rotated" if N == SKINNY_ROTATED_SPLIT_N or (splits == 1 and N >= 3) else "in_order"


def _single_column(B):
    """A B of one column with consecutive k (K x 1 row-major, or a transposed row) read in place.
    One column is K-major however B is stored, so a K-major copy would only add a launch and 8
    bytes an element. The view's column stride is given as 4 so the kernel's 16-byte hint on
    it holds; only column 0 is ever read, so no address uses it."""
    K, N = B.shape
    if N == 1 and B.stride(0) == 1 and _aligned(B):
        return _Operand(B.as_strided((K, 1), (1, 4)), True, 1, "direct")
    return None


class SkinnyPlan:
    """The N <= 8 launch: ``tile`` (SkinnyTile) and ``k_splits`` (None: default_splits); ``tf32``:
    A and B truncated to TF32 as they are loaded (tf32_truncate), multiplied and summed in fp32."""

    def __init__(self, A, B, C, alpha, beta, sms, tile=None, k_splits=None, tf32=False, order=None, b_rows=None):
        M, K = A.shape
        N = B.shape[1]
        if N > SKINNY_MAX_N:
            raise UsageError(f"mode=skinny multiplies by at most {SKINNY_MAX_N} columns; this B has N={N}")
        self.M, self.N, self.K = M, N, K
        self.A, self.C = A, C
        self.alpha, self.beta = float(alpha), float(beta)
        self.tf32 = bool(tf32)
        self.a_k_contig = not (A.stride(0) == 1 and A.stride(1) != 1)
        if self.a_k_contig:
            self.a_hint = _aligned(A) and A.stride(0) % 4 == 0
        else:
            self.a_hint = _aligned(A) and A.stride(1) % 4 == 0 and M % 4 == 0
        # 4 k a thread summed in registers only where they are one 16-byte load along K.
        self.k_group = 4 if self.a_k_contig and self.a_hint else 1
        if b_rows is None:
            b_rows = default_b_rows(M, N)
        # b_rows: a row-major B read as given, no K-major copy (8 bytes an element of B and a launch)
        self.b = _single_column(B) or _prepare_b(B, "k", allow_direct=True,
                                                 allow_copy=not (b_rows and B.stride(1) == 1))
        self.tile = (parse_skinny_tile(tile) if tile is not None else
                     default_tile(N, a_k_scalar=self.a_k_contig and self.k_group == 1, K=K))
        if order is not None and order not in SKINNY_ORDERS:
            raise UsageError(f"skinny_order must be one of {', '.join(SKINNY_ORDERS)}; got {order!r}")
        t = self.tile
        splits = k_splits or default_splits(M, K, t, sms)
        splits = max(1, min(splits, triton.cdiv(K, t.bk)))
        # Equal ranges of whole BLOCK_K steps; the count drops to what they need.
        self.k_per_split = triton.cdiv(triton.cdiv(K, splits), t.bk) * t.bk
        self.splits = triton.cdiv(K, self.k_per_split)
        self.blocks = triton.cdiv(M, t.bm)
        self.order = order or default_order(self.splits, N)
        n = self.splits * M * N
        if self.splits > 1 and n > 2**31 - 1:
            raise UsageError(f"mode=skinny workspace of {n} elements exceeds 32-bit indexing; use fewer skinny_splits")
        self.W = torch.empty(n, device=A.device, dtype=torch.float32) if self.splits > 1 else None
        self.group = SKINNY_FIXUP_GROUP if self.splits > SKINNY_FIXUP_GROUP else 0
        self.sum_r = max(1, SKINNY_SUM_FLOATS // (t.bm * 8))
        groups = triton.cdiv(self.splits, self.group) if self.group else 0
        self.G = torch.empty(groups * M * N, device=A.device, dtype=torch.float32) if groups else None
        # Ticket counts, 0 between launches (each last arrival resets its own): one per row block,
        # or with groups one per (row block, group) and then one per row block.
        self.lock = (torch.zeros(self.blocks * (groups + 1) if groups else self.blocks, device=A.device,
                                 dtype=torch.int32) if self.splits > 1 else None)
        self.config = {
            "tile": t.dims(N), "num_warps": t.warps, "num_stages": 1,
            "decomposition": "skinny", "tiles": self.blocks, "k_splits": self.splits,
            "k_per_split": self.k_per_split, "grid": [self.blocks, self.splits], "sms": sms,
            "k_group": self.k_group, "k_order": self.order,
            "fixup": ("none" if self.splits == 1 else
                      "workspace + in-kernel sum by the last range (range order)" if not self.group else
                      f"workspace + in-kernel sums in two levels: the last range of each {self.group} (range "
                      "order), then the last group (group order)"),
            "operands": f"A direct ({'K' if self.a_k_contig else 'M'}-major"
                        f"{', 16-byte loads' if self.a_hint else ', 4-byte loads'}), B {self.b.layout} "
                        f"({'K-major' if self.b.k_contiguous else 'its rows, 4-byte loads'})",
            "operand_copy_bytes": self.b.copy_bytes(), "input_precision": "tf32" if self.tf32 else "ieee",
            "precision_path": TF32_FFMA_PATH if self.tf32 else FP32_FFMA_PATH,
        }

    def launch(self):
        A, C, t, b = self.A, self.C, self.tile, self.b
        b.fill()
        bv = b.view
        has_beta = self.beta != 0
        split = self.splits > 1
        _skinny_kernel[(self.blocks, self.splits)](
            A, bv, C, self.W if split else C, self.G if self.group else C, self.lock if split else C,
            self.M, self.N, self.K, self.k_per_split, self.splits, A.stride(0), A.stride(1), bv.stride(0),
            bv.stride(1), C.stride(0), C.stride(1), self.alpha, self.beta, A_K_CONTIG=self.a_k_contig,
            A_HINT=self.a_hint, B_K_CONTIG=b.k_contiguous, B_HINT=b.hinted, SPLIT=split, HAS_BETA=has_beta,
            N_COLS=self.N, K_GROUP=self.k_group, TF32=self.tf32, BLOCK_M=t.bm, BLOCK_K=t.bk, GROUP=self.group,
            SUM_R=self.sum_r, ROTATED=self.order == "rotated", num_warps=t.warps, num_stages=1)
