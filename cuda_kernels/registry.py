"""The CUDA stages: one declaration per kernel, read by everything else.

The ladder's CUDA stages are declared here (``LADDER``: number, group, idea, profile claims; into
``compare.harness.registry.STAGES``). Each :class:`StageSpec` names its stage, its .cu file, the kernel
configurations (template arguments, block shape) that file is compiled for, and what the kernel
needs: its operand path (``float4`` only, or float4 where rows are 16-byte aligned and
predicated scalar elsewhere), its ``plan`` (one launch over a grid of tiles, split-K, or
stream-K) and the tiles a user may pick. The loader instantiates exactly these configurations
(NVRTC name expressions), the compile tests and ``python -m cuda_kernels.resources`` compile
exactly these with nvcc, and ``cuda_kernels.launch`` registers each spec and launches one of its
configurations (its options, heuristics and the three prepare paths live there). There is no
second list.
"""
from __future__ import annotations

import functools

from dataclasses import dataclass, field
from typing import Optional

from compare.harness.registry import STAGE_BY_NAME, Claim, Stage, declare_stage

FAMILY = "cuda"


@dataclass(frozen=True)
class Config:
    """One compiled instantiation of a kernel template."""

    kernel: str                       # template name in the .cu file
    targs: tuple = ()                 # template arguments in order (int / bool)
    block: tuple = (256, 1, 1)        # threads per block (x, y, z)
    tile: tuple = (0, 0)              # (BM, BN) of the C tile a block computes; (0, 0): elementwise
    smem_dynamic: int = 0             # bytes of dynamic shared memory per block
    label: str = ""                   # short name for tables and the `tile` option
    bk: int = 0                       # K step of the main loop (0: no K loop / not tiled)

    @property
    def expr(self) -> str:
        """The C++ name expression, exactly as NVRTC and nvcc are asked to instantiate it."""
        if not self.targs:
            return self.kernel
        args = ", ".join(("true" if a else "false") if isinstance(a, bool) else str(a) for a in self.targs)
        return f"{self.kernel}<{args}>"

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1] * self.block[2]


# What prepare does with a spec.
SINGLE, SPLIT_K, STREAM_K, WGMMA = "single", "split_k", "stream_k", "wgmma"


@dataclass(frozen=True)
class StageSpec:
    """One CUDA kernel. ``stage`` is a ladder stage (compare.harness.registry); ``variant`` is empty for a
    stage's only kernel, else "deterministic" (the stage's main kernel, named without a suffix)
    or "atomic" (named with ``_atomic``)."""

    stage: str
    file: str
    configs: tuple
    variant: str = ""
    idea: str = ""                    # this kernel's idea; defaults to the stage's
    operands: str = "any"             # "float4": needs N % 4 == 0 and K % 4 == 0; "any": float4 where aligned
    plan: str = SINGLE
    tiles: tuple = ()                 # values of the `tile` option (labels without .vec/.scalar); () = fixed
    default_tile: str = ""
    meta: dict = field(default_factory=dict)
    precisions: tuple = ("fp32",)     # the problem precisions it computes (Kernel.precisions)
    # None: the CPU emulator runs it; else why it can't (tests/test_cuda_emulated.py reads this).
    not_emulated: Optional[str] = None
    # "": compiled for every arch the tests and resources ask for (sm_80, sm_90); else the one
    # arch it is written for (stage 13: "sm_90a"), passed to NVRTC and nvcc, and the device's
    # compute capability must match it (Kernel.why_not says so otherwise).
    arch: str = ""

    @property
    def number(self) -> int:
        return STAGE_BY_NAME[self.stage].number

    @property
    def name(self) -> str:
        base = f"cuda.{self.number:02d}_{self.stage}"
        return f"{base}_{self.variant}" if self.variant not in ("", "deterministic") else base

    @property
    def description(self) -> str:
        return self.idea or STAGE_BY_NAME[self.stage].idea

    def config(self, label: str) -> Config:
        for c in self.configs:
            if c.label == label:
                return c
        raise KeyError(f"{self.name}: no configuration {label!r}; has {', '.join(c.label for c in self.configs)}")


def _gemm(kernel, targs, block, tile, label, bk=0):
    return Config(kernel=kernel, targs=targs, block=block, tile=tile, label=label, bk=bk)


# Block tiles of the pipelined stages 09/10: name -> (BK, shared-memory stages). BK=16 halves the
# barriers per FFMA at twice the loop code.
PIPELINE_TILES = {"128x128x16": (16, 2), "128x128x8": (8, 2), "128x128x8s3": (8, 3)}
TILES_10 = tuple(PIPELINE_TILES)
# Stage-09-only variants (timed by cuda_kernels/sweep.py): name -> (BM, BN, BK, STAGES, WN, GROUP).
# gN: tile rows per group of the launch-order swizzle (default 8). 128x256: warp tiles 32x128,
# 8x16 per thread (6 LDS.128 per 128 FFMA instead of 4 per 64), 1 block of 8 warps per SM
# (<= 255 registers); BK=8 only, since BK=16 needs 48.5 KiB (> 48 KiB static).
VARIANTS_09 = {
    "128x128x16g4": (128, 128, 16, 2, 64, 4),
    "128x128x16g16": (128, 128, 16, 2, 64, 16),
    "128x256x8": (128, 256, 8, 2, 128, 8),
    "128x256x8s3": (128, 256, 8, 3, 128, 8),
}
_TILE_PARAMS_09 = {**{t: (128, 128, bk, st, 64, 8) for t, (bk, st) in PIPELINE_TILES.items()}, **VARIANTS_09}
TILES_09 = TILES_10 + tuple(VARIANTS_09)
# Defaults from `python -m cuda_kernels.sweep` on an H200: for the square ladder three BK=8
# stages won (46.4 TFLOP/s at 4096^3, 46.8 at 8192^3; BK=16 two stages 45.7 / 46.7); for split-K,
# BK=16 won on both long-K shapes (45.0 / 45.5 against 44.4 / 44.7).
DEFAULT_TILE = {9: "128x128x8s3", 10: "128x128x16"}
# Stage 11 tiles: name -> (BM, BN, BK, STAGES, WN, blocks per SM the kernel is bounded for).
# 64x128: 2x2 warps of 32x64 (128 threads, 4 blocks per SM); 32x128: 1x2 warps (64 threads);
# 128x64: 4x2 warps of 32x32 (8x4 per thread); 128x32: 4x1 warps of 32x32 (128 threads);
# 64x64: 2x2 warps of 32x32 (128 threads); 32x64: 1x2 warps of 32x32 (64 threads).
STREAM_K_TILES = {
    "128x128x16": (128, 128, 16, 2, 64, 2),
    "64x64x16": (64, 64, 16, 2, 32, 4),
    "64x128x16": (64, 128, 16, 2, 64, 4),
    "32x128x16": (32, 128, 16, 2, 64, 8),
    "32x64x16": (32, 64, 16, 2, 32, 8),
    "128x64x16": (128, 64, 16, 2, 32, 2),
    "128x32x16": (128, 32, 16, 2, 32, 4),
}
# The reductions / fixups are memory streams: small blocks spread a small M*N over more SMs.
REDUCE_THREADS = 128
FIXUP_THREADS = 128
# Stage 11's fixup splits each split tile's partials over LANES lanes per float4 column
# (11_stream_k.cu, stream_k_fixup): 8 lanes where a tile has at least FIXUP_MANY_PARTIALS partials
# (long K, few tiles: 64x64x1048576 58% -> 120% of cuBLAS with the 64x64 tile), 1 otherwise
# (many tiles of a few partials each: 8 lanes there launched 8x the blocks for the same sums,
# 1021^3 92% -> 80%; results/h100/explore).
FIXUP_LANES = (1, 8)
FIXUP_MANY_PARTIALS = 16


def _warp_tiled(kernel, tile, vec, extra=(), suffix="", pipelined=True):
    """Stages 08/10: 128x128 block tile, 256 threads (8 warps of 32x64), 8x8 per thread.
    Template arguments: BM, BN, BK, [STAGES,] VEC, extra..."""
    bk, stages = PIPELINE_TILES[tile] if pipelined else (int(tile.split("x")[2]), None)
    targs = (128, 128, bk) + ((stages,) if pipelined else ()) + (vec,) + extra
    return _gemm(kernel, targs, (256, 1, 1), (128, 128), f"{tile}.{'vec' if vec else 'scalar'}{suffix}", bk)


def _stage09(tile, vec):
    """Stage 09: sgemm_double_buffered<BM, BN, BK, STAGES, VEC, WN, GROUP>, 256 threads."""
    bm, bn, bk, stages, wn, group = _TILE_PARAMS_09[tile]
    return _gemm("sgemm_double_buffered", (bm, bn, bk, stages, vec, wn, group), (256, 1, 1), (bm, bn),
                 f"{tile}.{'vec' if vec else 'scalar'}", bk)


def _stage11(tile, vec, atomic):
    """Stage 11: sgemm_stream_k<BM, BN, BK, STAGES, WN, VEC, ATOMIC>."""
    bm, bn, bk, stages, wn, _ = STREAM_K_TILES[tile]
    threads = 32 * (bm // 32) * (bn // wn)
    return _gemm("sgemm_stream_k", (bm, bn, bk, stages, wn, vec, atomic), (threads, 1, 1), (bm, bn),
                 f"{tile}.{'vec' if vec else 'scalar'}{'.atomic' if atomic else ''}", bk)


def _stage11_helpers(atomic):
    out = []
    for tile, (bm, bn, *_rest) in STREAM_K_TILES.items():
        if atomic:
            out.append(Config("stream_k_prescale", (bm, bn, FIXUP_THREADS), (FIXUP_THREADS, 1, 1),
                              label=f"prescale.{tile}"))
        else:
            out += [Config("stream_k_fixup", (bm, bn, vec, FIXUP_THREADS, lanes), (FIXUP_THREADS, 1, 1),
                           label=f"fixup.{tile}.{'vec' if vec else 'scalar'}.l{lanes}")
                    for vec in (True, False) for lanes in FIXUP_LANES]
    return tuple(out)


# Stage 11's bandwidth-bound paths (11_stream_k_skinny.cu), picked by launch.stream_k_path.
# gemv_row<WARPS, UNROLL, VEC>: one row, 128 columns x a K range per block of 8 warps, 4 rows of B
# in flight per thread (8 x 32 x 4 x 16 bytes = 16 KiB a block; ~40 registers, so up to 8 blocks
# per SM). skinny_n<NB, R, LPR, E, VEC>: N <= NB columns (NB in 1, 2, 4, 8: N rounded up; the
# padding columns multiply zeros), 8 warps x a K range per block, K in chunks of LPR x E; per chunk a
# thread loads E floats of each of its R rows (E / 4 16-byte loads, or E 4-byte ones in the scalar
# builds), two chunks in flight (2 x 4 R E bytes a thread: 32 KiB a block at R = 4, E = 8; one in
# the scalar builds of NB = 2 and 4 below sm_90; <= 128 registers: 2 blocks per SM).
GEMV_WARPS, GEMV_UNROLL, GEMV_COLS = 8, 4, 128
# label -> (NB, VEC, R, LPR, E): a thread holds E floats of each of R rows per chunk and LPR lanes
# share a row (chunks LPR x E wide, blocks of 8 R 32 / LPR rows). LPR = 32 (one row a warp load)
# where NB <= 4. At NB = 8 a B value read from shared memory served R = 2 rows that way (4 bytes of
# shared reads per byte of A); LPR = 8 (four rows a warp load, one B address per 8 lanes) with
# R = 4 reads a quarter of that (docs/findings.md has the measured gain). NB = 8's scalar build
# keeps R = 2: 4 rows of 8 scalars, twice, spilled (52 bytes on sm_90). Its blocks of 128 (64)
# rows leave most threads idle where M is smaller: there the few_rows builds (16 rows a block) run.
SKINNY_BUILDS = {
    "skinny_n1.vec": (1, True, 4, 32, 8), "skinny_n1.scalar": (1, False, 4, 32, 8),
    "skinny_n2.vec": (2, True, 4, 32, 8), "skinny_n2.scalar": (2, False, 4, 32, 8),
    "skinny_n4.vec": (4, True, 4, 32, 8), "skinny_n4.scalar": (4, False, 4, 32, 8),
    "skinny_n8.vec": (8, True, 4, 8, 8), "skinny_n8.scalar": (8, False, 2, 8, 8),
    "skinny_n8.few_rows.vec": (8, True, 2, 32, 8), "skinny_n8.few_rows.scalar": (8, False, 2, 32, 8),
}
SKINNY_NB = (1, 2, 4, 8)
# skinny_n's K ranges are multiples of 256, a multiple of every build's chunk (256 or 64): the
# split model's per-range costs were fit in ranges of 256 (docs/findings.md).
SKINNY_SPLIT_ALIGN = 256
# The K ranges' sum (skinny_sum_splits<COLS, LANES>): label -> (COLS, LANES). 32 lanes per output
# from SKINNY_SUM_MANY_RANGES ranges up (<= 17 partials a lane at the model's most, 528 ranges), one
# lane per output below (<= 16 partials a thread, 4 loads in flight).
SKINNY_SUM = {"skinny.sum.l1": (128, 1), "skinny.sum.l32": (8, 32)}
SKINNY_SUM_MANY_RANGES = 17
# skinny_short<NB, L, VEC> (skinny_b=resident): L lanes per row of A, 8 slots of 4 k's each, so
# K <= 32 L; L = 4 up to K = 128, 8 up to 256: the fewest partials per output (skinny_n adds 32).
SKINNY_SHORT_LANES = (4, 8)
SKINNY_SHORT_MAX_K = 32 * SKINNY_SHORT_LANES[-1]
SKINNY_B = ("chunked", "resident")


def skinny_rows(label: str) -> int:
    """Rows of A a skinny_n build's block computes: 8 warps x R rows a thread x 32 / LPR rows a warp load."""
    _nb, _vec, r, lpr, _e = SKINNY_BUILDS[label]
    return 8 * r * (32 // lpr)


def skinny_kc(label: str) -> int:
    """K width of a skinny_n build's chunk (LPR x E)."""
    _nb, _vec, _r, lpr, e = SKINNY_BUILDS[label]
    return lpr * e


def _skinny_configs():
    out = [Config("gemv_row", (GEMV_WARPS, GEMV_UNROLL, vec), (32 * GEMV_WARPS, 1, 1), (1, GEMV_COLS),
                  label=f"gemv.{'vec' if vec else 'scalar'}", bk=GEMV_WARPS * GEMV_UNROLL) for vec in (True, False)]
    out += [Config("skinny_n", (nb, r, lpr, e, vec), (256, 1, 1), (skinny_rows(label), nb), label=label,
                   bk=skinny_kc(label))
            for label, (nb, vec, r, lpr, e) in SKINNY_BUILDS.items()]
    out += [Config("skinny_short", (nb, lanes, vec), (256, 1, 1), (256 // lanes, nb),
                   label=f"skinny_short{nb}.l{lanes}.{'vec' if vec else 'scalar'}", bk=32 * lanes)
            for nb in SKINNY_NB for lanes in SKINNY_SHORT_LANES for vec in (True, False)]
    out += [Config("skinny_sum_splits", (cols, lanes), (cols * lanes, 1, 1), label=label)
            for label, (cols, lanes) in SKINNY_SUM.items()]
    return tuple(out)


# Stage 12 tiles: name -> (BM, BN, BK, WM, WN, STAGES, {precision: blocks per SM its registers
# are bounded for}); a precision missing from the dict has no configuration of that tile.
# 128x128x32: 4 warps of 64x64 (CUTLASS's sm_80 TF32 default), 105 KiB of shared memory, 2 blocks
# per SM on sm_90 (196 registers, 128 accumulators a thread); w8: 8 warps of 64x32;
# 128x256x32: 8 warps of 64x64, 153 KiB, 1 block per SM. tf32x3 holds big and small A fragments
# and a temporary per product chain: with 64x64 warp tiles that spilled at 255 registers, so
# tf32x3 runs on 64x32 warps, 1 block of 8 warps per SM.
TF32_TILES = {
    "128x128x32": (128, 128, 32, 64, 64, 3, {"tf32": 2}),
    "128x128x32w8": (128, 128, 32, 64, 32, 3, {"tf32": 2, "tf32x3": 1}),
    "128x256x32": (128, 256, 32, 64, 64, 3, {"tf32": 1}),
}
TF32_DEFAULT_TILE = {"tf32": "128x128x32", "tf32x3": "128x128x32w8"}
# Precision -> the SPLIT3 template flag and the label suffix of its configurations.
TF32_PRECISIONS = {"tf32": (False, ""), "tf32x3": (True, ".x3")}


def tf32_smem_bytes(bm: int, bn: int, bk: int, stages: int) -> int:
    """Dynamic shared memory of stage 12: STAGES x (A rows of BK+4 floats, B rows of BN+8)."""
    return stages * (bm * (bk + 4) + bk * (bn + 8)) * 4


def _stage12(tile, vec, precision):
    """Stage 12: sgemm_tf32_mma<BM, BN, BK, WM, WN, STAGES, MINB, VEC, SPLIT3>."""
    bm, bn, bk, wm, wn, stages, minbs = TF32_TILES[tile]
    split3, suffix = TF32_PRECISIONS[precision]
    threads = 32 * (bm // wm) * (bn // wn)
    return Config("sgemm_tf32_mma", (bm, bn, bk, wm, wn, stages, minbs[precision], vec, split3), (threads, 1, 1),
                  (bm, bn), tf32_smem_bytes(bm, bn, bk, stages), f"{tile}.{'vec' if vec else 'scalar'}{suffix}", bk)


def _tf32_configs():
    return tuple(_stage12(t, vec, pr) for pr in TF32_PRECISIONS for t, spec in TF32_TILES.items()
                 if pr in spec[-1] for vec in (True, False))


# Stage 13 (wgmma + TMA, sm_90a), the path that copies B K-major: precision -> (BN, STAGES,
# SPLIT3). BM = 128 (two consumer warpgroups of 64 rows), BK = 32 (one 128-byte swizzle row). tf32:
# 128x256, 4 stages of 48 KiB; tf32x3: four operand tiles a stage and a temporary beside the
# accumulators, so 128x128, 3 stages.
WGMMA_TILES = {"tf32": (256, 4, False), "tf32x3": (128, 3, True)}
WGMMA_THREADS = 384
# B read as stored (C^T = B^T A^T, B's fragments from registers; N % 4 == 0 for TMA's 16-byte row
# stride): precision -> (TM rows of C, STAGES) per tile, x 128 columns. A TM-row tile pads at most
# TM - 1 rows of a short M (M = 300 on 256 rows: 41% of the tensor work padding; on 64: 6%), at
# fewer multiply-adds per A byte read from shared memory. Each keeps ~192 KiB of stages in flight.
# tf32x3 keeps a temporary beside the accumulators: TM <= 128.
REGB_TILES = {"tf32": ((256, 4), (128, 6), (64, 8)), "tf32x3": ((128, 4), (64, 6))}
B_TRANSPOSE_CHOICES = ("swap", "copy")   # the option b_transpose: as Triton names them
# The option b_unaligned: how the register-operand path reads B's rows where N % 4 != 0 (TMA needs
# 16-byte row strides): bulk (N <= 128: a K tile of B is one contiguous run of bytes, one bulk copy
# each, no copy of B), cp_async (the producer warpgroup copies each row's 16-byte chunks with
# cp.async, no copy of B) or pad (one copy pads B's rows to 16 bytes, then TMA reads the copy; also
# where B's address is not 16-byte aligned, which bulk and cp_async need).
B_UNALIGNED_CHOICES = ("bulk", "cp_async", "pad")
# The GEMM builds by how B reaches shared memory (the kernel's B_LOAD): TMA (N % 4 == 0, or B's rows
# padded first), cp.async chunks, one bulk copy per K tile. The label suffix names the build.
B_LOADS = {"tma": (0, ""), "cp_async": (1, ".cpasync"), "bulk": (2, ".bulk")}
# The option a_split: where tf32x3's register-operand path splits A into big and small TF32 parts:
# smem (TMA loads A's raw tile, as given or row-padded where K % 4 != 0 or A is not 16-byte
# aligned; the producer warpgroup splits it in shared memory, the kernel's A_RAW) or copy (one
# copy writes both parts to global memory first: A read once, written twice, read twice).
A_SPLIT_CHOICES = ("smem", "copy")
PREPARE_BLOCK = (32, 8, 1)


def wgmma_smem_bytes(bn: int, stages: int, split3: bool) -> int:
    """Stage 13's dynamic shared memory: STAGES x (A 128x32 + B^T BNx32 floats, twice for the
    split) + 1 KiB to align the swizzled tiles to 1024 bytes + the full/empty mbarriers."""
    return stages * (2 if split3 else 1) * (128 + bn) * 32 * 4 + 1024 + 16 * stages


def regb_smem_bytes(tm: int, stages: int, split3: bool, b_load: str = "tma") -> int:
    """The register-operand path's dynamic shared memory: STAGES x (A's TM x 32 floats, twice for
    the split + B's 32 x 128, or where the GEMM loads B's rows itself (cp_async, bulk) 32 rows of
    136 floats) + 1 KiB of alignment slack + three mbarriers a stage (full, empty, and landed where
    the kernel splits A)."""
    b_floats = 32 * 128 if b_load == "tma" else 32 * 136
    return stages * ((2 if split3 else 1) * tm * 32 + b_floats) * 4 + 1024 + 24 * stages


def regb_label(tm: int, stages: int, split3: bool, b_load: str = "tma", a_raw: bool = False, sk: bool = False) -> str:
    """The register-operand tile's label; for a build that loads B's rows itself (option
    b_unaligned=cp_async or bulk) the label plus ``.cpasync`` or ``.bulk``, for tf32x3's build that
    splits A in shared memory (option a_split=smem) plus ``.asplit`` before it, for the stream-K
    build (option mode) ``.sk`` last (the ``tile`` option takes the label without any)."""
    return (f"{tm}x128x32s{stages}.regb{'.x3' if split3 else ''}{'.asplit' if a_raw else ''}{B_LOADS[b_load][1]}"
            f"{'.sk' if sk else ''}")


def _wgmma_configs():
    out = []
    for pr, (bn, stages, split3) in WGMMA_TILES.items():
        out.append(Config("sgemm_wgmma_tma", (bn, stages, split3), (WGMMA_THREADS, 1, 1), (128, bn),
                          wgmma_smem_bytes(bn, stages, split3), f"128x{bn}x32s{stages}{'.x3' if split3 else ''}", 32))
    for pr, tiles in REGB_TILES.items():
        split3 = pr == "tf32x3"
        for tm, stages in tiles:
            for a_raw in ((False, True) if split3 else (False,)):
                for b_load, (code, _) in B_LOADS.items():
                    for sk in (False, True):
                        out.append(Config("sgemm_wgmma_regb", (tm, stages, split3, code, a_raw, sk),
                                          (WGMMA_THREADS, 1, 1), (tm, 128), regb_smem_bytes(tm, stages, split3, b_load),
                                          regb_label(tm, stages, split3, b_load, a_raw, sk), 32))
    for split in (False, True):
        out.append(Config("tf32_transpose", (split,), PREPARE_BLOCK, label=f"prepare.transpose{'.split' if split else ''}"))
    out.append(Config("splitk_reduce", (), (256, 1, 1), label="splitk_reduce"))
    out.append(Config("pad_rows", (), (256, 1, 1), label="pad_rows"))
    for tm in sorted({tm for tiles in REGB_TILES.values() for tm, _ in tiles}, reverse=True):
        out.append(Config("regb_stream_k_fixup", (tm,), (128, 1, 1), label=f"sk_fixup.{tm}"))
    return tuple(out)


# The CUDA ladder, one row a stage (numbered like its NN_*.cu), declared before the StageSpecs that
# name them. A new stage is a row here, a StageSpec below, its .cu and a row of README.md's table.
LADDER: tuple[Stage, ...] = tuple(declare_stage(s) for s in (
    Stage(1, "naive", "naive", "one thread per C element; threadIdx.x walks M, so A and C accesses are strided"),
    Stage(2, "coalesced", "tiled", "threadIdx.x walks N: a warp reads B and writes C in 128-byte lines",
          (Claim("coalesced", "sectors_per_req", "<", "a warp's loads are 128-byte lines", than="naive"),)),
    Stage(3, "smem_tiled", "tiled", "32x32 tiles of A and B staged in shared memory; each global value read once "
                                    "per block",
          (Claim("smem_tiled", "ldg_mb", "<", "each global value read once per block, not once per thread",
                 than="coalesced"),)),
    Stage(4, "blocktile_1d", "tiled", "64x64x8 block tile, 8 results per thread: one B value from smem feeds 8 FMAs",
          (Claim("blocktile_1d", "fma_pct", ">", "one smem value feeds TM FMAs", than="smem_tiled"),)),
    Stage(5, "blocktile_2d", "tiled", "128x128x8 block tile, 8x8 outer product per thread",
          (Claim("blocktile_2d", "fma_pct", ">", "TMxTN outer product: fewer smem loads per FMA",
                 than="blocktile_1d"),)),
    Stage(6, "vectorized", "tiled", "float4 global and shared loads; A stored transposed in shared memory",
          (Claim("vectorized", "load_width", ">", "float4 global loads: 128-bit loads appear", than="blocktile_2d"),)),
    Stage(7, "bank_conflict_free", "tiled", "padded transposed A tile and 4-wide thread patches: no shared-memory "
                                            "bank conflicts",
          (Claim("bank_conflict_free", "conflicts_ld_pct", "~0", "no bank conflicts on the fragment loads", limit=1.0),
           # 7.4% of store wavefronts still conflict at 2048^3 on an H100, down from stage 06's 36.6%.
           Claim("bank_conflict_free", "conflicts_st_pct", "<",
                 "padding cuts the transposed-A store conflicts of stage 06 (not to zero)", than="vectorized"))),
    Stage(8, "warptile", "tiled", "32x64 warp tiles with a 4x8 lane grid: one wavefront per operand load; any shape",
          (Claim("warptile", "fma_pct", ">", "warp tiles: fragments reused, the FMA pipe busier",
                 than="bank_conflict_free"),)),
    Stage(9, "double_buffered", "tiled", "two smem stages filled by cp.async: next tile's loads overlap this tile's "
                                         "FFMAs, one barrier per step",
          (Claim("double_buffered", "barrier_pct", "<", "one barrier per step: fewer barrier stalls",
                 than="warptile"),)),
    Stage(10, "split_k", "split_k", "K split over gridDim.z to fill the SMs when M*N has few tiles; partials "
                                    "reduced after"),
    Stage(11, "stream_k", "split_k", "stream-K: every tile's K iterations spread evenly over a grid sized to the "
                                     "SMs, so no wave is left partly empty; any shape (the general-purpose kernel)"),
    Stage(12, "tf32_mma", "tiled", "TF32 tensor cores: warp-level mma.sync m16n8k8 from padded (conflict-free) "
                                   "shared memory, 3-stage cp.async pipeline; tf32, or tf32x3 (3 products of "
                                   "big/small TF32 parts, fp32-class error)",
          # An FFMA kernel reads ~0 tensor pipe; 30% is well under stage 12's 45-52% on the H100.
          (Claim("tf32_mma", "tensor_pct", ">=", "the work runs on the tensor cores (mma.sync); FFMA stages show ~0",
                 at_least=30.0),
           Claim("tf32_mma", "conflicts_ld_pct", "~0", "padded A and B rows: conflict-free fragment reads (ldmatrix, LDS)",
                 limit=1.0))),
    Stage(13, "wgmma_tma", "tiled", "Hopper warpgroup MMA (wgmma m64nNk8 TF32) from 128B-swizzled shared memory "
                                    "filled by TMA + mbarriers; producer / consumer warpgroups; B read as stored "
                                    "(C^T = B^T A^T, B^T from registers) or copied K-major; tf32 or tf32x3; sm_90a only",
          # Stage 13 removes stage 12's latency bound: the same tf32 / tf32x3 problem, a busier tensor pipe.
          (Claim("wgmma_tma", "tensor_pct", ">", "wgmma from TMA-filled shared memory keeps the tensor pipe busier "
                 "than mma.sync", than="tf32_mma"),)),
))


SPECS: tuple[StageSpec, ...] = (
    StageSpec("naive", "01_naive.cu", (_gemm("sgemm_naive", (32,), (32, 32, 1), (32, 32), "32x32"),)),
    StageSpec("coalesced", "02_coalesced.cu", (_gemm("sgemm_coalesced", (32,), (32, 32, 1), (32, 32), "32x32"),)),
    StageSpec("smem_tiled", "03_smem_tiled.cu",
              (_gemm("sgemm_smem_tiled", (32,), (32, 32, 1), (32, 32), "32x32", 32),)),
    StageSpec("blocktile_1d", "04_blocktile_1d.cu",
              (_gemm("sgemm_blocktile_1d", (64, 64, 8, 8), (512, 1, 1), (64, 64), "64x64x8.tm8", 8),)),
    StageSpec("blocktile_2d", "05_blocktile_2d.cu",
              (_gemm("sgemm_blocktile_2d", (128, 128, 8, 8, 8), (256, 1, 1), (128, 128), "128x128x8.8x8", 8),)),
    StageSpec("vectorized", "06_vectorized.cu",
              (_gemm("sgemm_vectorized", (128, 128, 8, 8, 8), (256, 1, 1), (128, 128), "128x128x8.8x8", 8),),
              operands="float4"),
    StageSpec("bank_conflict_free", "07_bank_conflict_free.cu",
              (_gemm("sgemm_bank_conflict_free", (128, 128, 8, 8, 8), (256, 1, 1), (128, 128), "128x128x8.4x4x4", 8),),
              operands="float4"),
    StageSpec("warptile", "08_warptile.cu",
              tuple(_warp_tiled("sgemm_warptile", "128x128x8", vec, pipelined=False) for vec in (True, False)),
              tiles=("128x128x8",), default_tile="128x128x8"),
    StageSpec("double_buffered", "09_double_buffered.cu",
              tuple(_stage09(t, vec) for t in TILES_09 for vec in (True, False)),
              tiles=TILES_09, default_tile=DEFAULT_TILE[9]),
    StageSpec("split_k", "10_split_k.cu",
              tuple(_warp_tiled("sgemm_split_k", t, vec, (False,)) for t in TILES_10 for vec in (True, False))
              + (Config("split_k_reduce", (True, REDUCE_THREADS), (REDUCE_THREADS, 1, 1), label="reduce.vec4"),
                 Config("split_k_reduce", (False, REDUCE_THREADS), (REDUCE_THREADS, 1, 1), label="reduce.scalar")),
              variant="deterministic", plan=SPLIT_K, tiles=TILES_10, default_tile=DEFAULT_TILE[10],
              idea="K split over gridDim.z; partials to a workspace, summed in a fixed order (bit-identical run to run)"),
    StageSpec("split_k", "10_split_k.cu",
              (_warp_tiled("sgemm_split_k", TILES_10[0], True, (True,), ".atomic"),
               _warp_tiled("sgemm_split_k", TILES_10[0], False, (True,), ".atomic"),
               Config("scale_c", (256,), (256, 1, 1), label="scale_c")),
              variant="atomic", plan=SPLIT_K, tiles=TILES_10[:1], default_tile=TILES_10[0],
              idea="K split over gridDim.z; partials atomicAdd-ed into C (non-deterministic last bits)"),
    StageSpec("stream_k", "11_stream_k.cu",
              tuple(_stage11(t, vec, False) for t in STREAM_K_TILES for vec in (True, False)) + _stage11_helpers(False)
              + _skinny_configs(),
              variant="deterministic", plan=STREAM_K, tiles=tuple(STREAM_K_TILES),
              idea="stream-K: tiles' K iterations spread evenly over the SMs (no wave quantization); split "
                   "tiles' partials summed in a fixed order by a fixup kernel (bit-identical run to run); "
                   "bandwidth-bound paths for one row (M = 1) and N <= 8"),
    StageSpec("stream_k", "11_stream_k.cu",
              tuple(_stage11(t, vec, True) for t in STREAM_K_TILES for vec in (True, False)) + _stage11_helpers(True),
              variant="atomic", plan=STREAM_K, tiles=tuple(STREAM_K_TILES),
              idea="stream-K with split tiles pre-scaled by beta and their pieces atomicAdd-ed into C "
                   "(non-deterministic last bits)"),
    StageSpec("tf32_mma", "12_tf32_mma.cu",
              _tf32_configs(), tiles=tuple(TF32_TILES), default_tile=TF32_DEFAULT_TILE["tf32"],
              precisions=tuple(TF32_PRECISIONS),
              not_emulated="mma.sync and ldmatrix are warp-collective (each lane's registers feed every lane's "
                           "result); the emulator runs a block's threads as fibers that meet only at "
                           "__syncthreads, and making a warp collective a block barrier would hide the "
                           "missing-barrier bugs it exists to find"),
    StageSpec("wgmma_tma", "13_wgmma_tma.cu", _wgmma_configs(), plan=WGMMA, precisions=tuple(WGMMA_TILES),
              arch="sm_90a",
              not_emulated="wgmma is a warpgroup collective reading shared memory through descriptors, and TMA "
                           "and mbarrier transactions are asynchronous copy-engine work: neither exists in "
                           "the emulator's fiber-per-thread model"),

)


def configs_by_file() -> dict[str, list[Config]]:
    """file -> every configuration compiled from it (deduplicated, declaration order)."""
    return {f: list(cfgs) for f, cfgs in _configs_by_file().items()}


@functools.lru_cache(maxsize=None)
def _configs_by_file() -> dict[str, tuple[Config, ...]]:
    # SPECS is a constant tuple: built once per process (every launch's prepare asks for it).
    out: dict[str, dict[str, Config]] = {}
    for s in SPECS:
        by_expr = out.setdefault(s.file, {})
        for c in s.configs:
            by_expr.setdefault(c.expr, c)
    return {f: tuple(d.values()) for f, d in out.items()}


def all_configs() -> list[tuple[StageSpec, Config]]:
    """(stage, configuration) for every compiled instantiation, each expression once."""
    seen, out = set(), []
    for s in SPECS:
        for c in s.configs:
            if (s.file, c.expr) not in seen:
                seen.add((s.file, c.expr))
                out.append((s, c))
    return out


def expressions(filename: str) -> tuple[str, ...]:
    """Every name expression the registry declares for ``filename`` (what the loader compiles)."""
    return tuple(c.expr for c in _configs_by_file().get(filename, ()))


