"""Operand preparation for tiled.py and split_k.py.

Two facts about Hopper decide how A and B should reach ``tl.dot``:

1. K-major B. Triton lowers a tf32 ``tl.dot`` on sm_90 to ``wgmma``, which reads B from shared
   memory and, for 32-bit operands, only K-major (the MN-major "transposed" form exists for
   16-bit types only). Our B is row-major KxN = N-major, so Triton transposes it on the way into
   shared memory with 4-byte ``cp.async`` copies (checked by compiling tiled.py for sm_90 here:
   a 128x256x32 tile issues 32 4-byte LDGSTS per thread per k-step for B instead of 12 16-byte
   ones for A and B together). Writing B^T (NxK, contiguous along K) once per launch with a
   coalesced transpose and reading B through it turns every copy into a 16-byte one.

2. M-major A for the FFMA (fp32 ieee) path. Triton's FMA lowering reads each thread's column
   of A fragments from the shared tile; with the tile K-contiguous (row-major A) those are
   scalar shared loads, one per row of the thread's sub-tile. Reading A through an M-major copy
   (A^T, contiguous along M; one coalesced transpose per launch, inside the timed region) makes
   them vector loads, as CUDA stage 06 does by storing A transposed in shared memory. Measured on
   an H200 (results/h200/fp32-operands/): triton.tiled fp32 44.9 -> 49.4 TFLOP/s at 4096^3
   (88% -> 97% of cuBLAS), 46.9 -> 50.2 at 8192^3, 42.3 -> 47.0 at 2048^3. The copy moves
   8*M*K bytes, so for small N it costs more than it saves (split-K at 256x256x131072: 86% ->
   80%); tiled.py uses it from N >= 2048 and split_k.py not at all.

3. For 3xTF32, an operand can be split into its TF32 big and small parts by the same copy
   (``transpose_into`` with a ``small`` buffer): the GEMM then reads both parts instead of
   splitting the tile again at every k-step. (Splitting once *and* accumulating the big products across all of K
   inside the tensor core was faster still but biased: docs/design.md. The stream-K kernel
   keeps Triton's per-step structure, a zero-based three-product sum added to the fp32
   accumulator with a rounded add, and takes only the split out of the loop.)

Workspaces are allocated once (in ``prepare``); ``fill`` launches the copy on the current
stream and is part of every timed launch, since the user handed us plain row-major fp32.
``fill_both`` launches A's and B's copies as one kernel where a plan copies both (stream_k).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
import triton
import triton.language as tl

# How the GEMM kernels get their operands.
AS_GIVEN = "as_given"    # A and B as given (any strides), never copied
K_MAJOR_B = "k_major_b"  # A as given, B through a K-major copy (tf32, tf32x3)
M_MAJOR_A = "m_major_a"  # A through an M-major copy (A^T contiguous), B as given (fp32 FFMA)


@triton.jit
def tf32_round(x):
    """x rounded to the nearest TF32 value (10-bit mantissa), ties away from zero, as fp32 bits:
    cvt.rna.tf32.f32 written as integer arithmetic, so the interpreter runs it too. Adding half
    an ulp of TF32 (0x1000) to the magnitude bits and clearing the 13 low ones rounds the
    magnitude; the sign bit is untouched. Infinities stay infinite, NaN stays NaN."""
    bits = x.to(tl.int32, bitcast=True)
    return ((bits + 0x1000) & -8192).to(tl.float32, bitcast=True)


# A bandwidth-bound product's tf32 on the FFMA pipe (mode=gemv, mode=skinny), as its row's config says it.
TF32_FFMA_PATH = ("TF32 inputs (low 13 mantissa bits dropped, as the tensor cores read them), FFMA, fp32 "
                  "accumulation: a bandwidth-bound product, the tensor cores would idle")
FP32_FFMA_PATH = "fp32 inputs, FFMA (IEEE), fp32 accumulation"


@triton.jit
def tf32_truncate(x):
    """x as the tensor cores read an fp32 operand of a tf32 product: the top 19 bits (sign, 8
    exponent, 10 mantissa bits), the low 13 mantissa bits dropped (round toward zero), as fp32
    bits; one integer AND, so the interpreter runs it too. Infinities stay infinite and every
    quiet NaN (bit 22 set: any NaN arithmetic makes) stays NaN; a signalling NaN whose payload
    lies in the low 13 bits alone reads as an infinity. Keeping that one NaN too (a compare and a
    select per value) grew the skinny kernel's K loop at N = 8 from 327 PTX lines to 423 (279 in
    fp32; compiled for sm_90), for an input no arithmetic produces."""
    return (x.to(tl.uint32, bitcast=True) & 0xFFFFE000).to(tl.float32, bitcast=True)


@triton.jit
def tf32_split(x):
    """(big, small): big = tf32_round(x), small = tf32_round(x - big), so big + small carries
    x to ~2^-22 relative. Where x is not finite small is 0 (x - big would be NaN), as Triton's
    built-in tf32x3 masks NaN out of its small products."""
    big = tf32_round(x)
    small = x - big
    small = tf32_round(tl.where(small == small, small, 0.0))
    return big, small


@triton.jit
def _transpose_tile(pid, src_ptr, dst_ptr, small_ptr, R, S, stride_sr, stride_ss, ld_dst,
                    SPLIT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr):
    # dst (S x R, contiguous along R, leading dimension ld_dst) = src^T (src: R x S, any strides);
    # SPLIT: dst gets the TF32 big parts of src^T and small_ptr (same layout) the small parts.
    # One grid axis, r-tiles fastest (grid axis 1 would cap at 65535 programs).
    num_r = tl.cdiv(R, BLOCK_R)
    pid_r = pid % num_r
    pid_s = pid // num_r
    rr = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    ss = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    mask = (rr[:, None] < R) & (ss[None, :] < S)
    x = tl.load(src_ptr + rr[:, None] * stride_sr + ss[None, :] * stride_ss, mask=mask, other=0.0)
    # The tile is read with consecutive threads walking src's contiguous axis and written with
    # consecutive threads walking dst's: both global accesses are coalesced, and tl.trans makes
    # the compiler exchange the tile through shared memory in between.
    offs = ss[:, None] * ld_dst + rr[None, :]
    if SPLIT:
        big, small = tf32_split(x)
        tl.store(dst_ptr + offs, tl.trans(big), mask=tl.trans(mask))
        tl.store(small_ptr + offs, tl.trans(small), mask=tl.trans(mask))
    else:
        tl.store(dst_ptr + offs, tl.trans(x), mask=tl.trans(mask))


@triton.jit
def _copy_rows_tile(pid, src_ptr, dst_ptr, small_ptr, R, S, stride_src, ld_dst,
                    SPLIT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr):
    # dst (R x ld_dst, contiguous rows) = src (R x S, contiguous rows stride_src apart), with
    # the padding columns S..ld_dst-1 written as zeros; SPLIT: dst gets the TF32 big parts and
    # small_ptr (same layout) the small parts. The copy that only re-aligns rows (src and dst
    # contiguous along the same axis) needs no exchange through shared memory, unlike
    # _transpose_tile. Loads are 4-byte where src's rows are unaligned (that is why it is
    # copied) but coalesced; the stores cover whole padded rows, so their mask is constant over
    # every 16-element group (ld_dst is a multiple of 16) and they can be 16-byte.
    num_s = tl.cdiv(ld_dst, BLOCK_S)
    pid_s = pid % num_s
    pid_r = pid // num_s
    rr = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    ss = pid_s * BLOCK_S + tl.arange(0, BLOCK_S)
    row = rr[:, None].to(tl.int64)
    x = tl.load(src_ptr + row * stride_src + ss[None, :], mask=(rr[:, None] < R) & (ss[None, :] < S),
                other=0.0)
    offs = row * ld_dst + ss[None, :]
    mask = (rr[:, None] < R) & (ss[None, :] < ld_dst)
    if SPLIT:
        big, small = tf32_split(x)
        tl.store(dst_ptr + offs, big, mask=mask)
        tl.store(small_ptr + offs, small, mask=mask)
    else:
        tl.store(dst_ptr + offs, x, mask=mask)


@triton.jit
def _copy_job(pid, src_ptr, dst_ptr, small_ptr, R, S, stride_r, stride_s, ld_dst,
              ROWS: tl.constexpr, SPLIT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr):
    # One program of a copy _copy_plan describes (ROWS: a row copy, stride_s unused).
    if ROWS:
        _copy_rows_tile(pid, src_ptr, dst_ptr, small_ptr, R, S, stride_r, ld_dst, SPLIT, BLOCK_R, BLOCK_S)
    else:
        _transpose_tile(pid, src_ptr, dst_ptr, small_ptr, R, S, stride_r, stride_s, ld_dst, SPLIT, BLOCK_R, BLOCK_S)


@triton.jit
def _transpose_kernel(src_ptr, dst_ptr, small_ptr, R, S, stride_sr, stride_ss, ld_dst,
                      SPLIT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr):
    _transpose_tile(tl.program_id(0), src_ptr, dst_ptr, small_ptr, R, S, stride_sr, stride_ss, ld_dst,
                    SPLIT, BLOCK_R, BLOCK_S)


@triton.jit
def _copy_rows_kernel(src_ptr, dst_ptr, small_ptr, R, S, stride_src, ld_dst,
                      SPLIT: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr):
    _copy_rows_tile(tl.program_id(0), src_ptr, dst_ptr, small_ptr, R, S, stride_src, ld_dst,
                    SPLIT, BLOCK_R, BLOCK_S)


@triton.jit
def _copy_pair_kernel(first_programs,
                      src1, dst1, small1, R1, S1, stride_r1, stride_s1, ld1,
                      src2, dst2, small2, R2, S2, stride_r2, stride_s2, ld2,
                      ROWS1: tl.constexpr, SPLIT1: tl.constexpr, BR1: tl.constexpr, BS1: tl.constexpr,
                      ROWS2: tl.constexpr, SPLIT2: tl.constexpr, BR2: tl.constexpr, BS2: tl.constexpr):
    # Two copies in one launch: programs [0, first_programs) run the first, the rest the second.
    # A copy of a small operand is a few dozen programs; as two launches A's and B's copies took
    # 8.6 us at 9883x580x57 in tf32x3, as one 5.1 us (results/h200/copy-pair/).
    pid = tl.program_id(0)
    if pid < first_programs:
        _copy_job(pid, src1, dst1, small1, R1, S1, stride_r1, stride_s1, ld1, ROWS1, SPLIT1, BR1, BS1)
    else:
        _copy_job(pid - first_programs, src2, dst2, small2, R2, S2, stride_r2, stride_s2, ld2,
                  ROWS2, SPLIT2, BR2, BS2)


# _copy_rows_kernel's tile: 4096 elements (16 KB) per 4-warp program, at most 1024 columns.
COPY_ELEMS, COPY_MAX_COLS = 4096, 1024


def _buffer(rows: int, cols: int, like: torch.Tensor) -> torch.Tensor:
    """rows x cols fp32 view whose leading dimension is rounded up to 16 elements: Triton then
    specialises the stride as divisible by 16 and every row starts 64-byte aligned, so 16-byte
    vector loads along the row stay legal whatever ``cols`` is."""
    ld = triton.cdiv(cols, 16) * 16
    return torch.empty((rows, ld), device=like.device, dtype=torch.float32)[:, :cols]


def _copy_plan(src: torch.Tensor, dst: torch.Tensor, small: Optional[torch.Tensor]) -> tuple[int, tuple, dict]:
    """How transpose_into copies src into dst: (programs, the 8 arguments of _copy_job after pid,
    its constexprs)."""
    R, S = src.shape
    if small is not None:
        assert small.stride() == dst.stride() and small.shape == dst.shape
    ld = dst.stride(0)
    tail = dst if small is None else small
    if src.stride(0) == 1 and R > 1 and ld == triton.cdiv(R, 16) * 16:
        # src^T is S rows of R contiguous elements, like dst's, and dst has _buffer's (and
        # stream_k._padded's) layout, whose padding columns are its own: a row copy, which
        # zeroes them.
        bs = min(COPY_MAX_COLS, triton.next_power_of_2(ld))
        br = max(1, COPY_ELEMS // bs)
        programs = triton.cdiv(S, br) * triton.cdiv(ld, bs)
        return programs, (src, dst, tail, S, R, src.stride(1), 0, ld), dict(ROWS=True, SPLIT=small is not None,
                                                                            BLOCK_R=br, BLOCK_S=bs)
    BR, BS = 64, 64
    programs = triton.cdiv(R, BR) * triton.cdiv(S, BS)
    return programs, (src, dst, tail, R, S, src.stride(0), src.stride(1), ld), dict(ROWS=False, SPLIT=small is not None,
                                                                                    BLOCK_R=BR, BLOCK_S=BS)


def transpose_into(src: torch.Tensor, dst: torch.Tensor, small: Optional[torch.Tensor] = None) -> None:
    """dst = src^T on the current stream (dst: S x R with unit stride along R). With ``small``
    (same shape and strides as dst): dst + small = src^T as TF32 big and small parts
    (tf32_split). Where src is contiguous along R too (only dst's row alignment differs) and
    dst is laid out as ``_buffer`` makes it (leading dimension R rounded up to 16), the rows
    are copied without a transpose and dst's padding columns are zeroed."""
    programs, args, c = _copy_plan(src, dst, small)
    meta = dict(SPLIT=c["SPLIT"], BLOCK_R=c["BLOCK_R"], BLOCK_S=c["BLOCK_S"], num_warps=4)
    if c["ROWS"]:
        _copy_rows_kernel[(programs,)](*args[:6], args[7], **meta)
    else:
        _transpose_kernel[(programs,)](*args, **meta)


def transpose_pair_into(first: tuple, second: tuple) -> None:
    """transpose_into(*first) and transpose_into(*second) in one launch (_copy_pair_kernel); each
    a (src, dst, small or None) triple."""
    n1, args1, c1 = _copy_plan(*first)
    n2, args2, c2 = _copy_plan(*second)
    _copy_pair_kernel[(n1 + n2,)](n1, *args1, *args2, ROWS1=c1["ROWS"], SPLIT1=c1["SPLIT"], BR1=c1["BLOCK_R"],
                                  BS1=c1["BLOCK_S"], ROWS2=c2["ROWS"], SPLIT2=c2["SPLIT"], BR2=c2["BLOCK_R"],
                                  BS2=c2["BLOCK_S"], num_warps=4)


@dataclass
class Operands:
    """What the GEMM kernel reads: ``a`` (A or its M-major copy) and ``b`` (B or its K-major
    copy), with the strides to read them as M x K and K x N."""
    mode: str
    A: torch.Tensor
    B: torch.Tensor
    a: torch.Tensor
    b: torch.Tensor
    copy_b: bool = True

    @property
    def a_strides(self) -> tuple[int, int]:
        """(stride along M, stride along K)."""
        if self.mode == M_MAJOR_A:
            return self.a.stride(1), self.a.stride(0)   # a is K x M
        return self.a.stride(0), self.a.stride(1)

    @property
    def b_strides(self) -> tuple[int, int]:
        """(stride along K, stride along N)."""
        if self.mode == K_MAJOR_B:
            return self.b.stride(1), self.b.stride(0)   # b is N x K
        return self.b.stride(0), self.b.stride(1)

    def fill(self) -> None:
        """Launch the copy for the current contents of A and B (no sync)."""
        if self.mode == K_MAJOR_B and self.copy_b:
            transpose_into(self.B, self.b)
        elif self.mode == M_MAJOR_A:
            transpose_into(self.A, self.a)

    def workspace_bytes(self) -> int:
        if self.mode == K_MAJOR_B and self.copy_b:
            return 4 * self.b.shape[0] * self.b.stride(0)
        if self.mode == M_MAJOR_A:
            return 4 * self.a.shape[0] * self.a.stride(0)
        return 0


def make_operands(A: torch.Tensor, B: torch.Tensor, mode: str) -> Operands:
    """Allocate the workspace for ``mode`` (once); call ``.fill()`` in every launch."""
    K, N = B.shape
    M = A.shape[0]
    if mode == AS_GIVEN:
        return Operands(mode, A, B, A, B, copy_b=False)
    if mode == K_MAJOR_B:
        if B.stride(0) == 1 and B.stride(1) % 4 == 0:
            # B is already K-major (e.g. B = X.t() of a contiguous N x K X): read it as it is.
            return Operands(mode, A, B, A, B.t(), copy_b=False)
        return Operands(mode, A, B, A, _buffer(N, K, B))
    if mode == M_MAJOR_A:
        return Operands(mode, A, B, _buffer(K, M, A), B, copy_b=False)
    raise ValueError(f"unknown operand mode {mode!r}; known: {AS_GIVEN}, {K_MAJOR_B}, {M_MAJOR_A}")


# ---------------------------------------------------------------------------------------------
# Operands: direct where a truthful 16-byte hint exists, else an aligned copy.


@dataclass
class _Operand:
    """How the kernel reads one operand: ``view`` (the tensor or its aligned copy) seen as the
    GEMM's M x K (A) or K x N (B), which axis is contiguous, and the extent its tile rows (A) or
    columns (B) wrap at. Every layout here satisfies the kernel's 16-byte hint (the non-unit
    stride, and the wrap extent when the wrapped axis is the contiguous one, are multiples of 4;
    the base is 16-byte aligned)."""
    view: torch.Tensor
    k_contiguous: bool            # stride along K is 1 (else the M / N stride is 1)
    wrap: int
    layout: str                   # for the report: "direct" or "copy:<major>"
    copy_src: Optional[torch.Tensor] = None   # fill(): transpose_into(copy_src, copy_dst[, small_dst])
    copy_dst: Optional[torch.Tensor] = None
    hinted: bool = True           # its strides (and wrap extent) take the 16-byte hint
    small: Optional[torch.Tensor] = None      # split(): the TF32 small parts, laid out as view
    small_dst: Optional[torch.Tensor] = None  # (copy_dst then holds the big parts)

    def fill(self) -> None:
        if self.copy_dst is not None:
            transpose_into(self.copy_src, self.copy_dst, self.small_dst)

    def copy_bytes(self) -> int:
        # Read once, written once (twice when split into big and small parts).
        per_element = 12 if self.small_dst is not None else 8
        return 0 if self.copy_dst is None else per_element * self.copy_src.numel()

    def split(self) -> "_Operand":
        """This copy, writing the TF32 big parts into its buffer and the small parts into a
        second buffer of the same layout (3xTF32 with the split out of the K loop)."""
        assert self.copy_dst is not None, "only a copied operand can be split by its copy"
        small_dst = _padded(*self.copy_dst.shape, self.copy_dst)   # copy_dst's own layout
        # view is the buffer itself or its transpose (_prepare_a / _prepare_b).
        small = small_dst if self.view.stride() == self.copy_dst.stride() else small_dst.t()
        assert small.stride() == self.view.stride() and small.shape == self.view.shape
        return _Operand(self.view, self.k_contiguous, self.wrap, self.layout + "+split", self.copy_src,
                        self.copy_dst, self.hinted, small, small_dst)


def fill_both(a: _Operand, b: _Operand) -> None:
    """a.fill() then b.fill(), as one launch where both are copies (transpose_pair_into)."""
    if a.copy_dst is None or b.copy_dst is None:
        a.fill()
        b.fill()
        return
    transpose_pair_into((a.copy_src, a.copy_dst, a.small_dst), (b.copy_src, b.copy_dst, b.small_dst))


def _padded(rows: int, cols: int, like: torch.Tensor) -> torch.Tensor:
    """rows x cols view of a zero-filled buffer whose leading dimension is a multiple of 16
    (as _operands._buffer, but zeroed once here: the transposing copy never writes the padding
    and the row copy writes zeros there, so wrapped-in rows/columns read zeros, not leftover
    bits)."""
    ld = triton.cdiv(cols, 16) * 16
    return torch.zeros((rows, ld), device=like.device, dtype=torch.float32)[:, :cols]


def _aligned(t: torch.Tensor) -> bool:
    return t.data_ptr() % 16 == 0


def _prepare_a(A: torch.Tensor, major: str, allow_direct: bool, allow_copy: bool = True) -> _Operand:
    """A (M x K) in the preferred ``major`` ("k": row-major, "m": M-major); read as given when
    it already is in that layout with hintable strides, else copied (``allow_copy``), else read
    as given (hinted only where its strides allow)."""
    M, K = A.shape
    if allow_direct and _aligned(A):
        if major == "k" and A.stride(1) == 1 and A.stride(0) % 4 == 0:
            return _Operand(A, True, M, "direct")
        if major == "m" and A.stride(0) == 1 and A.stride(1) % 4 == 0 and M % 4 == 0:
            return _Operand(A, False, M, "direct")
    if not allow_copy and allow_direct and (A.stride(1) == 1 or A.stride(0) == 1):
        k_contig = A.stride(1) == 1
        hinted = _aligned(A) and (A.stride(0) % 4 == 0 if k_contig else (A.stride(1) % 4 == 0 and M % 4 == 0))
        return _Operand(A, k_contig, M, "direct" if hinted else "direct:4-byte", hinted=hinted)
    if major == "m":
        buf = _padded(K, M, A)       # K x M, leading dimension a multiple of 16
        return _Operand(buf.t(), False, buf.stride(0), "copy:m_major", A, buf)
    buf = _padded(M, K, A)           # M x K, leading dimension a multiple of 16
    return _Operand(buf, True, M, "copy:k_major", A.t(), buf)


def _n_major_hintable(B: torch.Tensor) -> bool:
    """B (K x N) can be read N-major as given with 16-byte loads (the kernel's B hint holds)."""
    return _aligned(B) and B.stride(1) == 1 and B.stride(0) % 4 == 0 and B.shape[1] % 4 == 0


def _prepare_b(B: torch.Tensor, major: str, allow_direct: bool, allow_copy: bool = True) -> _Operand:
    """B (K x N) in the preferred ``major`` ("n": row-major, "k": K-major, what wgmma reads);
    ``allow_copy`` as for A."""
    K, N = B.shape
    if allow_direct and major == "n" and _n_major_hintable(B):
        return _Operand(B, False, N, "direct")
    if allow_direct and major == "k" and _aligned(B) and B.stride(0) == 1 and B.stride(1) % 4 == 0:
        return _Operand(B, True, N, "direct")
    if not allow_copy and allow_direct and (B.stride(1) == 1 or B.stride(0) == 1):
        k_contig = B.stride(1) != 1
        hinted = _aligned(B) and (B.stride(1) % 4 == 0 if k_contig else (B.stride(0) % 4 == 0 and N % 4 == 0))
        return _Operand(B, k_contig, N, "direct" if hinted else "direct:4-byte", hinted=hinted)
    if major == "k":
        buf = _padded(N, K, B)       # N x K, leading dimension a multiple of 16
        return _Operand(buf.t(), True, N, "copy:k_major", B, buf)
    buf = _padded(K, N, B)           # K x N, leading dimension a multiple of 16
    return _Operand(buf, False, buf.stride(0), "copy:n_major", B.t(), buf)
