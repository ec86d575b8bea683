"""Triton stream_k's single-row path: C = alpha * a @ B + beta * C for M = 1 as a GEMV.

A one-row product reads all of B (4*K*N bytes) to do 2*K*N flops: half a flop per byte, so the
time is B's bytes over DRAM bandwidth whatever the multiply runs on. The tile GEMM wastes that
row's tile: its narrowest tile has 16 rows, so it issues 16x the multiply-adds and pays the
layouts a dot needs, and at 1x131072x4096 fp32 it reached 88% of cuBLAS (results/h100/heldout-
round16). Here each program streams a BLOCK_K x BLOCK_N piece of B at a time (16-byte loads where
B's alignment allows), multiplies it by the matching piece of the row with FFMAs into a BLOCK_K x
BLOCK_N accumulator (no reduction inside the loop) and sums it over K once at the end. cuBLAS
serves these shapes with GEMV kernels too.

K is cut into ``k_splits`` equal ranges when the column blocks alone would leave the GPU short of
programs (1x8192x65536 has 128 column blocks of 64 for 132 SMs); each range writes its partial
row to a workspace and takes a ticket (an atomic count per column block); the range that
finishes last sums all the block's partials in range order and writes C, so the result is the
same bits every run, whichever range finishes last, as the stream-K fixup's is. Summing in the
same kernel saves the second launch that, with the tail, kept 1x4096x4096 (a ~20 us read of 64 MB)
at 81% of cuBLAS (docs/findings.md); the ticket's count returns to 0 for the next launch.

Precision: fp32 (FFMA, IEEE). tf32x3 takes this path through tf32x3_split=ffma (its error is then
fp32's). tf32 (by default: stream_k_heuristic.TF32_ON_GEMV_PATH, on since an H100 A/B against
the tile GEMM; or mode=gemv) multiplies TF32 inputs on the FFMA pipe: the row and B are
truncated to TF32 as they are loaded (_operands.tf32_truncate: the low 13 mantissa bits dropped,
as the tensor cores read an fp32 operand), the products and sums in fp32; at half a flop per
byte the tensor cores would idle on DRAM either way.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from compare.harness.errors import UsageError

from ._common import check_block, check_stages, check_warps
from ._operands import FP32_FFMA_PATH, TF32_FFMA_PATH, _aligned, _n_major_hintable, tf32_truncate
from .stream_k_kernels import _mult4

# ---------------------------------------------------------------------------------------------
# Kernels.


@triton.jit
def _last_of(lock_ptr, splits):
    # A ticket for this program's K range, taken after every thread of the program stored its
    # partial (the barrier) and released with it (acq_rel at GPU scope, CUTLASS's split-K
    # semaphore pattern); True for the range that finishes last, which then reads the others'
    # partials (acquired) and resets the count to 0 for the next launch.
    tl.debug_barrier()
    ticket = tl.atomic_add(lock_ptr, 1, sem="acq_rel", scope="gpu")
    last = ticket == splits - 1
    if last:
        tl.store(lock_ptr, 0)
    return last


@triton.jit
def _gemv_out(y, c_ptr, offs_c, mask, stride_cn, alpha, beta, HAS_BETA: tl.constexpr):
    c_ptrs = c_ptr + offs_c * stride_cn
    out = y * alpha
    if HAS_BETA:
        out += beta * tl.load(c_ptrs, mask=mask, other=0.0)
    tl.store(c_ptrs, out, mask=mask)


@triton.jit
def _gemv_kernel(a_ptr, b_ptr, c_ptr, w_ptr, lock_ptr, N, K, k_per_split, splits, stride_ak, stride_bk, stride_bn,
                 stride_cn, alpha, beta, B_K_CONTIG: tl.constexpr, B_HINT: tl.constexpr, SPLIT: tl.constexpr,
                 HAS_BETA: tl.constexpr, TF32: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_n = tl.program_id(0)
    pid_k = tl.program_id(1)
    # B is contiguous along N (row-major) or K; the unit stride is written as the constant 1 so
    # the loads along that axis are vectors. Columns past N wrap around (% N) instead of being
    # masked: the loop's loads stay unpredicated, and wrapped columns are never stored.
    if B_K_CONTIG:
        stride_bk = 1
        stride_bn = _mult4(stride_bn, B_HINT)
        offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    else:
        stride_bn = 1
        stride_bk = _mult4(stride_bk, B_HINT)
        offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % _mult4(N, B_HINT)
        # "% N" hides that the columns run consecutively; say so, or the compiler orders a
        # warp's lanes along K (one row per lane) as it did for the GEMM (docs/findings.md).
        offs_n = tl.max_contiguous(offs_n, BLOCK_N)
    k_lo = pid_k * k_per_split
    k_hi = tl.minimum(k_lo + k_per_split, K)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (k_lo + offs_k) * stride_ak
    b_ptrs = b_ptr + (k_lo + offs_k)[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_K, BLOCK_N), dtype=tl.float32)
    n_full = (k_hi - k_lo) // BLOCK_K
    for _ in range(0, n_full):
        x = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        if TF32:
            # The row and B read as the tensor cores read them for a tf32 product.
            x = tf32_truncate(x)
            b = tf32_truncate(b)
        acc += x[:, None] * b
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    k_left = k_hi - k_lo - n_full * BLOCK_K
    if k_left > 0:
        # The range's partial last step: the only masked loads.
        x = tl.load(a_ptrs, mask=offs_k < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        if TF32:
            x = tf32_truncate(x)
            b = tf32_truncate(b)
        acc += x[:, None] * b
    y = tl.sum(acc, axis=0)
    offs_c = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = offs_c < N
    if SPLIT:
        # Raw partial row of range pid_k; the last range of the block adds them in range order
        # (".cg": from L2, where the other SMs' partials are, not a stale L1 line).
        tl.store(w_ptr + pid_k * N + offs_c, y, mask=mask)
        if _last_of(lock_ptr + pid_n, splits):
            s = tl.zeros((BLOCK_N,), dtype=tl.float32)
            for r in range(0, splits):
                s += tl.load(w_ptr + r * N + offs_c, mask=mask, other=0.0, cache_modifier=".cg")
            _gemv_out(s, c_ptr, offs_c, mask, stride_cn, alpha, beta, HAS_BETA)
    else:
        _gemv_out(y, c_ptr, offs_c, mask, stride_cn, alpha, beta, HAS_BETA)


# ---------------------------------------------------------------------------------------------
# Plan.

# Rows at most this many take the GEMV (the held-out single-row class; cuBLAS's GEMV territory).
GEMV_MAX_M = 1
# Programs to aim for: this many per SM keeps enough 16-byte loads in flight to cover DRAM
# latency and makes the last wave's idle SMs a small share of the run.
GEMV_PROGRAMS_PER_SM = 8
# A K range gets at least this many BLOCK_K steps: shorter ones spend more on the partial row's
# write and the sum than the extra programs gain.
GEMV_MIN_STEPS = 8


@dataclass(frozen=True)
class GemvTile:
    bn: int
    bk: int
    warps: int = 4
    stages: int = 1

    @property
    def dims(self) -> str:
        """1xBNxBK, as a run's config names the tile."""
        return f"1x{self.bn}x{self.bk}"

    @property
    def name(self) -> str:
        return f"{self.dims}/{self.warps}/{self.stages}"


# The tiles. With 16-byte loads, 64x128 pieces on 4 warps: on the ten tunable single rows of
# tune_skinny (H100) 91.5% of cuBLAS geomean, worst 84.8%, against 90.3% / 78.7% for the 64x64 on
# 2 warps taken before (results/h100/gemv-tile/); the long-K, narrow rows gain most (1x256x65536
# 79% -> 85%), as a 64x128 piece halves the K ranges' partial sums. With 4-byte loads (N % 4 != 0)
# 256x16 on 4 warps read 116% at 1x10007x9973 where 64x64 read 87% and 256x32 69%.
GEMV_TILE = GemvTile(64, 128, 4, 1)
GEMV_TILE_4B = GemvTile(256, 16, 4, 1)
_GEMV_TILE_RE = re.compile(r"^(?:1x)?(\d+)x(\d+)(?:/(\d+)(?:/(\d+))?)?$")


def parse_gemv_tile(text) -> GemvTile:
    if isinstance(text, GemvTile):
        return text
    m = _GEMV_TILE_RE.match(str(text).strip())
    if not m:
        raise ValueError("expected [1x]BNxBK[/warps[/stages]], e.g. 1x256x32/4/1")
    bn, bk = int(m.group(1)), int(m.group(2))
    for nm, v in (("BN", bn), ("BK", bk)):
        check_block(nm, v, 1024)
    if bn * bk > 32768:
        raise ValueError(f"BNxBK={bn}x{bk}: the accumulator holds BN*BK floats; at most 32768")
    warps = int(m.group(3)) if m.group(3) else 4
    check_warps(warps)
    stages = int(m.group(4)) if m.group(4) else 1
    check_stages(stages)
    return GemvTile(bn, bk, warps, stages)


def default_tile(b_hint: bool, N: int) -> GemvTile:
    """The tile for a B read with 16-byte loads (``b_hint``) or 4-byte ones, narrowed to the
    power of two (>= 16) that covers N, BK grown to keep BN * BK: columns past N wrap around and
    are loaded and multiplied for nothing, 8x the loads and FFMAs of the kept columns at N = 8
    in a 64-wide piece."""
    t = GEMV_TILE if b_hint else GEMV_TILE_4B
    bn = max(16, triton.next_power_of_2(N))
    if bn >= t.bn:
        return t
    return GemvTile(bn, min(1024, t.bn * t.bk // bn), t.warps, t.stages)


def default_splits(N: int, K: int, tile: GemvTile, sms: int) -> int:
    """K ranges per column block: enough programs for GEMV_PROGRAMS_PER_SM per SM, each range at
    least GEMV_MIN_STEPS steps long."""
    blocks = triton.cdiv(N, tile.bn)
    want = triton.cdiv(GEMV_PROGRAMS_PER_SM * sms, blocks)
    return max(1, min(want, triton.cdiv(K, GEMV_MIN_STEPS * tile.bk)))


class GemvPlan:
    """The M = 1 launch: ``tile`` (GemvTile) and ``k_splits`` (None: default_splits); ``tf32``:
    the row and B truncated to TF32 as they are loaded (tf32_truncate), multiplied and summed in fp32."""

    def __init__(self, A, B, C, alpha, beta, sms, tile=None, k_splits=None, tf32=False):
        M, K = A.shape
        N = B.shape[1]
        if M > GEMV_MAX_M:
            raise UsageError(f"mode=gemv multiplies a single row; this A has M={M} rows")
        self.N, self.K = N, K
        self.A, self.B, self.C = A, B, C
        self.alpha, self.beta = float(alpha), float(beta)
        self.tf32 = bool(tf32)
        self.b_k_contig = B.stride(0) == 1 and B.stride(1) != 1
        if self.b_k_contig:
            self.b_hint = _aligned(B) and B.stride(1) % 4 == 0 and K % 4 == 0
        else:
            self.b_hint = _n_major_hintable(B)
        self.tile = parse_gemv_tile(tile) if tile is not None else default_tile(self.b_hint, N)
        t = self.tile
        splits = k_splits or default_splits(N, K, t, sms)
        splits = max(1, min(splits, triton.cdiv(K, t.bk)))
        # Equal ranges of whole BLOCK_K steps; the count drops to what they need.
        self.k_per_split = triton.cdiv(triton.cdiv(K, splits), t.bk) * t.bk
        self.splits = triton.cdiv(K, self.k_per_split)
        self.blocks = triton.cdiv(N, t.bn)
        self.W = (torch.empty(self.splits * N, device=A.device, dtype=torch.float32)
                  if self.splits > 1 else None)
        # One ticket count per column block, 0 between launches (the last range resets it).
        self.lock = (torch.zeros(self.blocks, device=A.device, dtype=torch.int32)
                     if self.splits > 1 else None)
        self.config = {
            "tile": t.dims, "num_warps": t.warps, "num_stages": t.stages,
            "decomposition": "gemv", "tiles": self.blocks, "k_splits": self.splits,
            "k_per_split": self.k_per_split, "grid": [self.blocks, self.splits],
            "sms": sms, "fixup": ("none" if self.splits == 1 else
                                  "workspace + in-kernel sum by the last range (range order)"),
            "operands": f"A direct, B direct ({'K' if self.b_k_contig else 'N'}-major"
                        f"{', 16-byte loads' if self.b_hint else ', 4-byte loads'})",
            "operand_copy_bytes": 0, "input_precision": "tf32" if self.tf32 else "ieee",
            "precision_path": TF32_FFMA_PATH if self.tf32 else FP32_FFMA_PATH,
        }

    def launch(self):
        A, B, C, t = self.A, self.B, self.C, self.tile
        has_beta = self.beta != 0
        split = self.splits > 1
        _gemv_kernel[(self.blocks, self.splits)](
            A, B, C, self.W if split else C, self.lock if split else C, self.N, self.K, self.k_per_split,
            self.splits, A.stride(1), B.stride(0), B.stride(1), C.stride(1), self.alpha, self.beta,
            B_K_CONTIG=self.b_k_contig, B_HINT=self.b_hint, SPLIT=split, HAS_BETA=has_beta, TF32=self.tf32,
            BLOCK_N=t.bn, BLOCK_K=t.bk, num_warps=t.warps, num_stages=t.stages)
