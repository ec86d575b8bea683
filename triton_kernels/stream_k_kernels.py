"""Triton stream_k's kernels: the stream-K GEMM (data-parallel tiles and stream-K ranges in one
grid), the deterministic fixup that sums split tiles' partials in program order, the beta
pre-scale of the atomic variant, and the in-order sum of whole-output K-range partials that the
GEMV (stream_k_gemv.py) and the Gluon GEMM (stream_k_gluon.py) write. The host side is
stream_k_plan.py."""
from __future__ import annotations

import triton
import triton.language as tl

from . import _operands as ops
from ._gemm import store_c

# ---------------------------------------------------------------------------------------------
# Kernels.


@triton.jit
def _mult4(x, KNOWN: tl.constexpr):
    # x // 4 * 4 == x when the host checked x % 4 == 0 (KNOWN); the product tells the compiler's
    # axis analysis that x is divisible by 4 (16 bytes of fp32), which a plain runtime int
    # (specialised only as "divisible by 16" or not) can't.
    if KNOWN:
        x = (x // 4) * 4
    return x


@triton.jit
def _tile_coords(tile, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    # Grouped launch order: GROUP_M tile rows walked down a tile column before moving right, so
    # programs running together share A rows and B columns in L2; the last group may be short.
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * num_n
    group = tile // per_group
    first_m = group * GROUP_M
    size_m = tl.minimum(num_m - first_m, GROUP_M)
    pid_m = first_m + (tile % per_group) % size_m
    pid_n = (tile % per_group) // size_m
    return pid_m, pid_n


@triton.jit
def _dot(a, b, acc, one, DOT_PRECISION: tl.constexpr, SWAP_AB: tl.constexpr):
    # acc += a @ b, or, with SWAP_AB ("swap"), acc^T += b^T @ a^T (acc is held transposed).
    # wgmma reads a 32-bit B from shared memory only K-major. Given an N-major B tile the
    # compiler copies it into that layout with 4-byte cp.async ("load"). Swapped,
    # b^T is wgmma's A operand, which may come from registers in any layout; multiplying it by
    # a runtime 1.0 (exact) makes it a computed value rather than a load, so the compiler keeps
    # the 16-byte async copies and feeds wgmma from registers (without the product it goes back
    # to 4-byte copies: compiled for sm_90, triton 3.6 and 3.9; results/h100/explore/round4).
    if SWAP_AB:
        acc = tl.dot(tl.trans(b) * one, tl.trans(a), acc, input_precision=DOT_PRECISION)
    else:
        acc = tl.dot(a, b, acc, input_precision=DOT_PRECISION)
    return acc


@triton.jit
def _dot_x3(a, a_small, b, b_small, acc, SPLIT_A: tl.constexpr, MASK_NAN: tl.constexpr):
    # acc + a @ b in 3xTF32 with B (and, SPLIT_A, A) already split into TF32 big and small
    # parts by the operand copy (_operands.tf32_split): b is B's big part, b_small its small
    # part, likewise a / a_small when SPLIT_A; else A is split here, in registers. The
    # structure is Triton's built-in tf32x3 (F32DotTC): the two small products summed in the
    # tensor core onto ``acc`` (MASK_NAN: from zero, NaN from inf * 0 masked to 0, as the
    # built-in does), then the big product. What leaves the loop is the split of b, wgmma's
    # shared-memory operand (B, or A^T in the swapped product): the built-in rounds its tile
    # and writes both parts back to shared memory at every k-step.
    if SPLIT_A:
        a_big = a
    else:
        a_big, a_small = ops.tf32_split(a)
    if MASK_NAN:
        small = tl.dot(a_small, b, input_precision="tf32")
        small = tl.dot(a_big, b_small, small, input_precision="tf32")
        small = tl.where(small == small, small, 0.0)
        acc = acc + small
    else:
        acc = tl.dot(a_small, b, acc, input_precision="tf32")
        acc = tl.dot(a_big, b_small, acc, input_precision="tf32")
    return tl.dot(a_big, b, acc, input_precision="tf32")


@triton.jit
def _step(acc, a, b, a_small, b_small, one, DOT_PRECISION: tl.constexpr, SWAP_AB: tl.constexpr,
          SPLIT_A: tl.constexpr, SPLIT_B: tl.constexpr, MASK_NAN: tl.constexpr):
    # acc += a @ b for one BLOCK_K step (acc^T += b^T a^T with SWAP_AB), however the operands come.
    if SPLIT_A or SPLIT_B:
        # 3xTF32 from pre-split operands: the step's three products summed in the tensor core
        # from zero, then added to the fp32 accumulator with a rounded add, as the built-in
        # does (tensor-core sums truncate: summed over all of K they bias the result,
        # docs/design.md).
        zero = tl.zeros_like(acc)
        if SWAP_AB:
            # B^T is the register operand, split here; A^T, wgmma's shared-memory operand,
            # comes pre-split (the built-in would split it and write both parts back to shared
            # memory every step).
            acc += _dot_x3(tl.trans(b) * one, b, tl.trans(a), tl.trans(a_small), zero, False, MASK_NAN)
        else:
            acc += _dot_x3(a, a_small, b, b_small, zero, SPLIT_A, MASK_NAN)
    else:
        acc = _dot(a, b, acc, one, DOT_PRECISION, SWAP_AB)
    return acc


@triton.jit
def _mac_steps(acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs, n_steps, step_a, step_b, one,
               DOT_PRECISION: tl.constexpr, SWAP_AB: tl.constexpr, SPLIT_A: tl.constexpr,
               SPLIT_B: tl.constexpr, MASK_NAN: tl.constexpr):
    # acc += A_tile @ B_tile for n_steps unmasked BLOCK_K steps.
    for _ in range(0, n_steps):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        a_small = a
        b_small = b
        if SPLIT_A:
            a_small = tl.load(a_small_ptrs)
        if SPLIT_B:
            b_small = tl.load(b_small_ptrs)
        acc = _step(acc, a, b, a_small, b_small, one, DOT_PRECISION, SWAP_AB, SPLIT_A, SPLIT_B, MASK_NAN)
        a_ptrs += step_a
        b_ptrs += step_b
        a_small_ptrs += step_a
        b_small_ptrs += step_b
    return acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs


@triton.jit
def _tile_partial(a_ptr, b_ptr, a_small_ptr, b_small_ptr, tile, it_lo, it_hi, M, N, K, M_wrap, N_wrap,
                  stride_am, stride_ak, stride_bk, stride_bn, one,
                  DOT_PRECISION: tl.constexpr, SWAP_AB: tl.constexpr, SPLIT_A: tl.constexpr, SPLIT_B: tl.constexpr,
                  MASK_NAN: tl.constexpr, A_K_CONTIG: tl.constexpr, B_K_CONTIG: tl.constexpr,
                  A_HINT: tl.constexpr, B_HINT: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    """The fp32 accumulator of ``tile`` over its K-iterations [it_lo, it_hi)."""
    pid_m, pid_n = _tile_coords(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
    # Each operand is contiguous along K (A_K_CONTIG / B_K_CONTIG) or along M (A) / N (B); the
    # unit stride is written as the constant 1. A_HINT / B_HINT: the host checked that the other stride,
    # and the wrap extent when the wrapped axis is the contiguous one, are multiples of 4
    # (_mult4). Rows/columns past the tile edge wrap around (% extent) instead of being masked,
    # so loads along M and N stay unpredicated; the wrapped values only reach C elements that
    # are never stored.
    if A_K_CONTIG:
        stride_ak = 1
        stride_am = _mult4(stride_am, A_HINT)
    else:
        stride_am = 1
        stride_ak = _mult4(stride_ak, A_HINT)
        M_wrap = _mult4(M_wrap, A_HINT)
    if B_K_CONTIG:
        stride_bk = 1
        stride_bn = _mult4(stride_bn, B_HINT)
    else:
        stride_bn = 1
        stride_bk = _mult4(stride_bk, B_HINT)
        N_wrap = _mult4(N_wrap, B_HINT)
    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M_wrap
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N_wrap
    # An unhinted operand contiguous along M (A) or N (B): "% extent" hides from the compiler
    # that the offsets run consecutively (but for the one wrap), and with no contiguous axis
    # the coalescing pass ordered the loads' lanes along K, one row per lane: 32 rows per warp
    # load (B read this way made 127x8191x1021 fp32 2.2x slower, results/h100/explore/round10).
    # max_contiguous restores the order; the loads stay 4-byte (the pointers' divisibility is
    # one element), so every lane still computes its own, possibly wrapped, address.
    if not A_K_CONTIG and not A_HINT:
        offs_am = tl.max_contiguous(offs_am, BLOCK_M)
    if not B_K_CONTIG and not B_HINT:
        offs_bn = tl.max_contiguous(offs_bn, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    k0 = it_lo * BLOCK_K
    a_offs = offs_am[:, None] * stride_am + (k0 + offs_k)[None, :] * stride_ak
    b_offs = (k0 + offs_k)[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    a_ptrs = a_ptr + a_offs
    b_ptrs = b_ptr + b_offs
    # The small TF32 parts (SPLIT_A / SPLIT_B) live in buffers of the same layout.
    a_small_ptrs = a_small_ptr + a_offs
    b_small_ptrs = b_small_ptr + b_offs
    step_a = BLOCK_K * stride_ak
    step_b = BLOCK_K * stride_bk
    # Unmasked steps: every iteration but a partial last one (K % BLOCK_K != 0).
    if EVEN_K:
        full_hi = it_hi
    else:
        full_hi = tl.minimum(it_hi, K // BLOCK_K)
    n_full = tl.maximum(full_hi - it_lo, 0)
    if SWAP_AB:
        acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if DOT_PRECISION == "ieee" or SPLIT_A or SPLIT_B:
        acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs = _mac_steps(
            acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs, n_full, step_a, step_b, one, DOT_PRECISION,
            SWAP_AB, SPLIT_A, SPLIT_B, MASK_NAN)
    else:
        # First step peeled (as _gemm.mac): with a zero accumulator entering a single loop,
        # ptxas 12.8 serialises the wgmmas of 128-row tiles (a wait after each).
        n_first = tl.minimum(n_full, 1)
        acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs = _mac_steps(
            acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs, n_first, step_a, step_b, one, DOT_PRECISION,
            SWAP_AB, SPLIT_A, SPLIT_B, MASK_NAN)
        acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs = _mac_steps(
            acc, a_ptrs, b_ptrs, a_small_ptrs, b_small_ptrs, n_full - n_first, step_a, step_b, one,
            DOT_PRECISION, SWAP_AB, SPLIT_A, SPLIT_B, MASK_NAN)
    if not EVEN_K:
        if it_hi * BLOCK_K > K:
            # The partial last step: the only masked loads (a_ptrs/b_ptrs point at it now).
            k_left = K - (it_hi - 1) * BLOCK_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
            a_small = a
            b_small = b
            if SPLIT_A:
                a_small = tl.load(a_small_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            if SPLIT_B:
                b_small = tl.load(b_small_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
            acc = _step(acc, a, b, a_small, b_small, one, DOT_PRECISION, SWAP_AB, SPLIT_A, SPLIT_B, MASK_NAN)
    if SWAP_AB:
        acc = tl.trans(acc)
    return acc, pid_m, pid_n


@triton.jit
def _epilogue(acc, c_ptr, pid_m, pid_n, M, N, stride_cm, stride_cn, alpha, beta,
              HAS_BETA: tl.constexpr, C_HINT: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # C = alpha*acc + beta*C, with C's row stride and N hinted as multiples of 4 where true.
    store_c(acc, c_ptr, pid_m * BLOCK_M + tl.arange(0, BLOCK_M), pid_n * BLOCK_N + tl.arange(0, BLOCK_N),
            M, _mult4(N, C_HINT), _mult4(stride_cm, C_HINT), stride_cn, alpha, beta, HAS_BETA)


# The stream-K bookkeeping ints and the wrap bounds are not specialised on (divisible by 16,
# equal to 1): each such value would be a compile of its own, about a third of the 1,000-shape
# corpus's compiles, and the sm_90 PTX is byte-identical without it for every divisible-by-16
# case tried, one scalar compare apart where a value is 1 (docs/findings.md, "Specialisation").
NOT_SPECIALISED = ("M_wrap", "N_wrap", "SK_TILES", "SK_PROGRAMS", "SK_Q", "SK_R", "MAX_SEG")


@triton.jit(do_not_specialize=NOT_SPECIALISED)
def _stream_k_kernel(a_ptr, b_ptr, c_ptr, w_ptr, a_small_ptr, b_small_ptr, M, N, K, M_wrap, N_wrap,
                     stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                     alpha, beta, one, SK_TILES, SK_PROGRAMS, SK_Q, SK_R, MAX_SEG,
                     DOT_PRECISION: tl.constexpr, SWAP_AB: tl.constexpr, SPLIT_A: tl.constexpr,
                     SPLIT_B: tl.constexpr, MASK_NAN: tl.constexpr, ATOMIC: tl.constexpr, HAS_BETA: tl.constexpr,
                     A_K_CONTIG: tl.constexpr, B_K_CONTIG: tl.constexpr, A_HINT: tl.constexpr,
                     B_HINT: tl.constexpr, C_HINT: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                     GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    pid = tl.program_id(0)
    iters = tl.cdiv(K, BLOCK_K)
    if pid >= SK_PROGRAMS:
        # Data-parallel: one whole tile after the stream-K tiles.
        tile = SK_TILES + pid - SK_PROGRAMS
        acc, pid_m, pid_n = _tile_partial(a_ptr, b_ptr, a_small_ptr, b_small_ptr, tile, 0, iters, M, N, K,
                                          M_wrap, N_wrap, stride_am, stride_ak, stride_bk, stride_bn, one,
                                          DOT_PRECISION, SWAP_AB, SPLIT_A, SPLIT_B, MASK_NAN,
                                          A_K_CONTIG, B_K_CONTIG, A_HINT, B_HINT, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
                                          EVEN_K)
        _epilogue(acc, c_ptr, pid_m, pid_n, M, N, stride_cm, stride_cn, alpha, beta, HAS_BETA, C_HINT,
                  BLOCK_M, BLOCK_N)
    else:
        # Stream-K: iterations [start, end) of the stream-K tiles' iteration space, tile by tile.
        start = pid * SK_Q + tl.minimum(pid, SK_R)
        end = start + SK_Q + (pid < SK_R).to(tl.int32)
        first_tile = start // iters
        it = start
        while it < end:
            tile = it // iters
            tile_lo = tile * iters
            seg_hi = tl.minimum(end, tile_lo + iters)
            acc, pid_m, pid_n = _tile_partial(a_ptr, b_ptr, a_small_ptr, b_small_ptr, tile, it - tile_lo,
                                              seg_hi - tile_lo, M, N, K, M_wrap, N_wrap, stride_am, stride_ak,
                                              stride_bk, stride_bn, one, DOT_PRECISION, SWAP_AB, SPLIT_A, SPLIT_B,
                                              MASK_NAN, A_K_CONTIG, B_K_CONTIG, A_HINT, B_HINT, BLOCK_M, BLOCK_N,
                                              BLOCK_K, GROUP_M, EVEN_K)
            whole = (it == tile_lo) & (seg_hi == tile_lo + iters)
            if whole:
                _epilogue(acc, c_ptr, pid_m, pid_n, M, N, stride_cm, stride_cn, alpha, beta, HAS_BETA,
                          C_HINT, BLOCK_M, BLOCK_N)
            elif ATOMIC:
                # C of the stream-K tiles was scaled by beta beforehand (_scale_tiles_kernel).
                offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
                offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
                c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
                c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
                tl.atomic_add(c_ptrs, acc * alpha, mask=c_mask, sem="relaxed")
            else:
                # Raw partial into slot (program, segment): the fixup kernel sums them in order.
                slot = pid * MAX_SEG + (tile - first_tile)
                offs = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
                tl.store(w_ptr + slot * (BLOCK_M * BLOCK_N) + offs, acc)
            it = seg_hi


@triton.jit
def _owner(i, SK_Q, SK_R):
    # The stream-K program whose range holds iteration i (ranges: SK_R of SK_Q+1, then SK_Q).
    big = SK_R * (SK_Q + 1)
    return tl.where(i < big, i // (SK_Q + 1), SK_R + (i - big) // tl.maximum(SK_Q, 1))


@triton.jit
def _fixup_kernel(w_ptr, c_ptr, M, N, K, stride_cm, stride_cn, alpha, beta, SK_Q, SK_R, MAX_SEG,
                  HAS_BETA: tl.constexpr, C_HINT: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, FIX_M: tl.constexpr, FIX_N: tl.constexpr, FIX_SEGS: tl.constexpr):
    # Axis 0: a stream-K tile; axis 1: a FIX_M x FIX_N piece of it. A tile inside one program's
    # range was written to C by that program; a split tile's partials are summed here, FIX_SEGS
    # partials per step (one [FIX_SEGS, piece] load, reduced along the partials; fixup_shape),
    # steps in program order: a fixed order, the same bits every run. One partial per step left a
    # single-tile shape (64x64x1048576: 132 partials, 4 programs) with a 117 us fixup behind a
    # 250 us GEMM (ncu, results/h100/explore): the loads of a step are now in flight together.
    # Then C = alpha*sum + beta*C.
    tile = tl.program_id(0)
    piece = tl.program_id(1)
    iters = tl.cdiv(K, BLOCK_K)
    lo = tile * iters
    g0 = _owner(lo, SK_Q, SK_R)
    g1 = _owner(lo + iters - 1, SK_Q, SK_R)
    if g1 > g0:
        pieces_n: tl.constexpr = BLOCK_N // FIX_N
        e = tl.arange(0, FIX_M * FIX_N)
        rows = (piece // pieces_n) * FIX_M + e // FIX_N
        cols = (piece % pieces_n) * FIX_N + e % FIX_N
        offs = rows * BLOCK_N + cols
        acc = tl.zeros((FIX_M * FIX_N,), dtype=tl.float32)
        for gb in range(g0, g1 + 1, FIX_SEGS):
            g = gb + tl.arange(0, FIX_SEGS)
            start = g * SK_Q + tl.minimum(g, SK_R)
            slot = g * MAX_SEG + (tile - start // iters)
            part = tl.load(w_ptr + slot[:, None] * (BLOCK_M * BLOCK_N) + offs[None, :],
                           mask=(g <= g1)[:, None], other=0.0)
            acc += tl.sum(part, axis=0)
        pid_m, pid_n = _tile_coords(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        # New names, not N / stride_cm reassigned: inside this runtime `if` a reassigned argument
        # must keep its type, and an argument equal to 1 (N = 1, a 1-column C's row stride) is
        # specialised as constexpr[1] while _mult4 returns an int32 ("initial value for `N` is
        # of type constexpr[1], but the then block redefines it as int32[]" on the GPU).
        c_stride_m = _mult4(stride_cm, C_HINT)
        c_n = _mult4(N, C_HINT)
        offs_cm = pid_m * BLOCK_M + rows
        offs_cn = pid_n * BLOCK_N + cols
        c_ptrs = c_ptr + offs_cm * c_stride_m + offs_cn * stride_cn
        c_mask = (offs_cm < M) & (offs_cn < c_n)
        out = acc * alpha
        if HAS_BETA:
            out += beta * tl.load(c_ptrs, mask=c_mask, other=0.0)
        tl.store(c_ptrs, out, mask=c_mask)


@triton.jit
def _scale_tiles_kernel(c_ptr, M, N, stride_cm, stride_cn, beta, K, SK_Q, SK_R,
                        BETA_ZERO: tl.constexpr, C_HINT: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Atomic variant: C = beta*C on the split stream-K tiles (0 when beta == 0, C never read)
    # before their segments are atomically added. Whole tiles are written by their program.
    tile = tl.program_id(0)
    iters = tl.cdiv(K, BLOCK_K)
    lo = tile * iters
    if _owner(lo + iters - 1, SK_Q, SK_R) > _owner(lo, SK_Q, SK_R):
        pid_m, pid_n = _tile_coords(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        c_stride_m = _mult4(stride_cm, C_HINT)      # new names: see _fixup_kernel
        c_n = _mult4(N, C_HINT)
        offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        c_ptrs = c_ptr + offs_cm[:, None] * c_stride_m + offs_cn[None, :] * stride_cn
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < c_n)
        if BETA_ZERO:
            out = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        else:
            out = beta * tl.load(c_ptrs, mask=c_mask, other=0.0)
        tl.store(c_ptrs, out, mask=c_mask)


@triton.jit
def _range_sum_kernel(w_ptr, c_ptr, M, N, MN, stride_cm, stride_cn, alpha, beta, SPLITS, HAS_BETA: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # C = alpha * (the SPLITS partials of C, K range by K range, added in range order) + beta * C:
    # the same bits every run. w holds the partials as SPLITS contiguous M x N planes.
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    p = w_ptr + rm.to(tl.int64)[:, None] * N + rn[None, :]
    s = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, SPLITS):
        s += tl.load(p, mask=mask, other=0.0)
        p += MN
    c_ptrs = c_ptr + rm.to(tl.int64)[:, None] * stride_cm + rn[None, :] * stride_cn
    out = s * alpha
    if HAS_BETA:
        out += beta * tl.load(c_ptrs, mask=mask, other=0.0)
    tl.store(c_ptrs, out, mask=mask)
