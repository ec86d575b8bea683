"""The CUDA stages: one declaration per stage, read by everything else.

Each :class:`StageSpec` lists the kernel configurations (template arguments, block shape,
dynamic shared memory) its .cu file is compiled for. The loader instantiates exactly these
(NVRTC name expressions), the compile tests and ``python -m cuda_kernels.resources`` compile
exactly these with nvcc, and ``prepare`` launches one of them. There is no second list.

Knobs (environment, read at prepare time):
* ``CUDA_TILE_09`` / ``CUDA_TILE_10``: block tile of stages 09 / 10: ``128x128x16`` (half the
  barriers per FFMA of BK=8, twice the loop code; stage 10's default), ``128x128x8`` or
  ``128x128x8s3`` (three shared-memory stages instead of two; stage 09's default). See DEFAULT_TILE. Stage 09 also takes the experimental
  ``VARIANTS_09`` (swizzle group 4/16, 128x256 tiles with 8x16 per thread); ``python -m
  cuda_kernels.sweep`` times them all.
* ``CUDA_SPLIT_K``: force the split count of stage 10 (1 = no split).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from compare.registry import Kernel, register

from . import loader

FAMILY = "cuda"


@dataclass(frozen=True)
class Config:
    """One compiled instantiation of a kernel template."""

    kernel: str                       # template name in the .cu file
    targs: tuple = ()                 # template arguments in order (int / bool)
    block: tuple = (256, 1, 1)        # threads per block (x, y, z)
    tile: tuple = (0, 0)              # (BM, BN) of the C tile a block computes; (0, 0): elementwise
    smem_dynamic: int = 0             # bytes of dynamic shared memory per block
    label: str = ""                   # short name for tables and env knobs

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


@dataclass(frozen=True)
class StageSpec:
    number: int
    stage: str
    file: str
    configs: tuple
    idea: str = ""
    variant: str = ""
    meta: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        base = f"cuda.{self.number:02d}_{self.stage}"
        return f"{base}_{self.variant}" if self.variant else base

    def config(self, label: str) -> Config:
        for c in self.configs:
            if c.label == label:
                return c
        raise KeyError(f"{self.name}: no configuration {label!r}; has {', '.join(c.label for c in self.configs)}")


def _gemm(kernel, targs, block, tile, label):
    return Config(kernel=kernel, targs=targs, block=block, tile=tile, label=label)


def _warp_tiled(kernel, tile, vec, extra=(), suffix="", pipelined=True):
    """Stages 08-10: 128x128 block tile, 256 threads (8 warps of 32x64), 8x8 per thread.
    Template arguments: BM, BN, BK, [STAGES,] VEC, extra..."""
    bk, stages = PIPELINE_TILES[tile] if pipelined else (int(tile.split("x")[2]), None)
    targs = (128, 128, bk) + ((stages,) if pipelined else ()) + (vec,) + extra
    return _gemm(kernel, targs, (256, 1, 1), (128, 128), f"{tile}.{'vec' if vec else 'scalar'}{suffix}")


def _stage09(tile, vec):
    """Stage 09: sgemm_double_buffered<BM, BN, BK, STAGES, VEC, WN, GROUP>, 256 threads."""
    bm, bn, bk, stages, wn, group = _TILE_PARAMS_09[tile]
    return _gemm("sgemm_double_buffered", (bm, bn, bk, stages, vec, wn, group), (256, 1, 1), (bm, bn),
                 f"{tile}.{'vec' if vec else 'scalar'}")


# The reduction is a memory stream: 128-thread blocks spread a small M*N over more SMs.
REDUCE_THREADS = 128
# Block tiles of the pipelined stages 09/10: name -> (BK, shared-memory stages). The first is
# the default. BK=16 halves the barriers per FFMA at twice the loop code; measured on an H200
# (results/h200/tile-sweep.txt) it beat BK=8 by 2-5% at 4096^3, 8192^3 and on the split-K
# shapes, and three BK=8 stages lost 2%. CUDA_TILE_09 / CUDA_TILE_10 pick another.
PIPELINE_TILES = {"128x128x16": (16, 2), "128x128x8": (8, 2), "128x128x8s3": (8, 3)}
TILES_10 = tuple(PIPELINE_TILES)
# Stage-09-only variants (for the sweep, cuda_kernels/sweep.py): name -> (BM, BN, BK, STAGES,
# WN, GROUP). gN: tile rows per group of the launch-order swizzle (default 8). 128x256: warp
# tiles 32x128, 8x16 per thread (6 LDS.128 per 128 FFMA instead of 4 per 64), 1 block of 8
# warps per SM (<= 255 registers); BK=8 only, since BK=16 needs 48.5 KiB (> 48 KiB static).
VARIANTS_09 = {
    "128x128x16g4": (128, 128, 16, 2, 64, 4),
    "128x128x16g16": (128, 128, 16, 2, 64, 16),
    "128x256x8": (128, 256, 8, 2, 128, 8),
    "128x256x8s3": (128, 256, 8, 3, 128, 8),
}
_TILE_PARAMS_09 = {**{t: (128, 128, bk, st, 64, 8) for t, (bk, st) in PIPELINE_TILES.items()}, **VARIANTS_09}
TILES_09 = TILES_10 + tuple(VARIANTS_09)
# Defaults from `python -m cuda_kernels.sweep` on an H200 (results/h200/cuda-sweep.json): for the
# square ladder three BK=8 stages won (46.4 TFLOP/s at 4096^3, 46.8 at 8192^3; BK=16 two stages
# 45.7 / 46.7); for split-K, BK=16 won on both long-K shapes (45.0 / 45.5 against 44.4 / 44.7).
DEFAULT_TILE = {9: "128x128x8s3", 10: "128x128x16"}

SPECS: tuple[StageSpec, ...] = (
    StageSpec(1, "naive", "01_naive.cu",
              (_gemm("sgemm_naive", (32,), (32, 32, 1), (32, 32), "32x32"),),
              idea="one thread per C element; threadIdx.x walks M, so A and C accesses are strided"),
    StageSpec(2, "coalesced", "02_coalesced.cu",
              (_gemm("sgemm_coalesced", (32,), (32, 32, 1), (32, 32), "32x32"),),
              idea="threadIdx.x walks N: a warp reads B and writes C in 128-byte lines"),
    StageSpec(3, "smem_tiled", "03_smem_tiled.cu",
              (_gemm("sgemm_smem_tiled", (32,), (32, 32, 1), (32, 32), "32x32"),),
              idea="32x32 tiles of A and B staged in shared memory; each global value read once per block"),
    StageSpec(4, "blocktile_1d", "04_blocktile_1d.cu",
              (_gemm("sgemm_blocktile_1d", (64, 64, 8, 8), (512, 1, 1), (64, 64), "64x64x8.tm8"),),
              idea="64x64x8 block tile, 8 results per thread: one B value from smem feeds 8 FMAs"),
    StageSpec(5, "blocktile_2d", "05_blocktile_2d.cu",
              (_gemm("sgemm_blocktile_2d", (128, 128, 8, 8, 8), (256, 1, 1), (128, 128), "128x128x8.8x8"),),
              idea="128x128x8 block tile, 8x8 outer product per thread"),
    StageSpec(6, "vectorized", "06_vectorized.cu",
              (_gemm("sgemm_vectorized", (128, 128, 8, 8, 8), (256, 1, 1), (128, 128), "128x128x8.8x8"),),
              idea="float4 global and shared loads; A stored transposed in shared memory"),
    StageSpec(7, "bank_conflict_free", "07_bank_conflict_free.cu",
              (_gemm("sgemm_bank_conflict_free", (128, 128, 8, 8, 8), (256, 1, 1), (128, 128), "128x128x8.4x4x4"),),
              idea="padded transposed A tile and 4-wide thread patches: no shared-memory bank conflicts"),
    StageSpec(8, "warptile", "08_warptile.cu",
              tuple(_warp_tiled("sgemm_warptile", "128x128x8", vec, pipelined=False) for vec in (True, False)),
              idea="32x64 warp tiles with a 4x8 lane grid: one wavefront per operand load; any shape"),
    StageSpec(9, "double_buffered", "09_double_buffered.cu",
              tuple(_stage09(t, vec) for t in TILES_09 for vec in (True, False)),
              idea="two smem stages filled by cp.async: next tile's loads overlap this tile's FFMAs, one barrier per step"),
    StageSpec(10, "split_k", "10_split_k.cu",
              tuple(_warp_tiled("sgemm_split_k", t, vec, (False,)) for t in TILES_10 for vec in (True, False))
              + (Config("split_k_reduce", (True, REDUCE_THREADS), (REDUCE_THREADS, 1, 1), label="reduce.vec4"),
                 Config("split_k_reduce", (False, REDUCE_THREADS), (REDUCE_THREADS, 1, 1), label="reduce.scalar")),
              idea="K split over gridDim.z; partials to a workspace, summed in fixed order (deterministic)"),
    StageSpec(10, "split_k", "10_split_k.cu",
              (_warp_tiled("sgemm_split_k", TILES_10[0], True, (True,), ".atomic"),
               _warp_tiled("sgemm_split_k", TILES_10[0], False, (True,), ".atomic"),
               Config("scale_c", (256,), (256, 1, 1), label="scale_c")),
              variant="atomic",
              idea="K split over gridDim.z; partials atomicAdd-ed into C (non-deterministic last bits)"),
)


def configs_by_file() -> dict[str, list[Config]]:
    """file -> every configuration compiled from it (deduplicated, declaration order)."""
    out: dict[str, list[Config]] = {}
    for s in SPECS:
        lst = out.setdefault(s.file, [])
        for c in s.configs:
            if c.expr not in {x.expr for x in lst}:
                lst.append(c)
    return out


def all_configs() -> list[tuple[StageSpec, Config]]:
    """(stage, configuration) for every compiled instantiation, each expression once."""
    seen, out = set(), []
    for s in SPECS:
        for c in s.configs:
            if (s.file, c.expr) not in seen:
                seen.add((s.file, c.expr))
                out.append((s, c))
    return out


# ---------------------------------------------------------------------------------------------
# shape rules

def _aligned_rows(problem) -> bool:
    return problem.N % 4 == 0 and problem.K % 4 == 0


def _vec_requirement(problem) -> Optional[str]:
    if _aligned_rows(problem):
        return None
    return (f"float4 path needs N % 4 == 0 and K % 4 == 0 (16-byte aligned rows of A, B and C); "
            f"got N={problem.N}, K={problem.K}")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _tiles(problem, cfg: Config) -> int:
    bm, bn = cfg.tile
    return _cdiv(problem.M, bm) * _cdiv(problem.N, bn)


def _tile_choice(stage_number: int) -> str:
    import os
    var = f"CUDA_TILE_{stage_number:02d}"
    tiles = TILES_09 if stage_number == 9 else TILES_10
    t = os.environ.get(var, "").strip() or DEFAULT_TILE[stage_number]
    if t not in tiles:
        raise ValueError(f"{var} must be one of {', '.join(tiles)}; got {t!r}")
    return t


# ---------------------------------------------------------------------------------------------
# prepare / launch

def _operands(problem, inputs, vec_needed: bool):
    """CuPy views of A, B, C and whether their base addresses allow 16-byte accesses."""
    A, B, C = inputs.cupy("A"), inputs.cupy("B"), inputs.cupy("C")
    be = loader.backend()
    aligned = all(be.address(x) % 16 == 0 for x in (A, B, C))
    if vec_needed and not aligned:
        raise ValueError("float4 path needs 16-byte aligned A, B and C; got a base address that is not")
    return A, B, C, aligned


def _gemm_args(problem, A, B, C):
    return (np.int32(problem.M), np.int32(problem.N), np.int32(problem.K), np.float32(problem.alpha),
            A, B, np.float32(problem.beta), C)


def _single_kernel_prepare(spec: StageSpec, pick: Callable):
    """Stages that are one kernel launch over a 1-D grid of C tiles."""
    def prepare(problem, inputs, options=None):
        cfg = pick(problem, inputs)
        be = loader.backend()
        fn = be.function(spec.file, cfg)
        A, B, C, _ = _operands(problem, inputs, vec_needed=False)
        grid = (_tiles(problem, cfg), 1, 1)
        block = cfg.block
        args = _gemm_args(problem, A, B, C)
        smem = cfg.smem_dynamic
        stream = be.stream()

        def launch():
            fn(grid, block, args, shared_mem=smem, stream=stream)
        return launch
    return prepare


def _fixed(spec: StageSpec, vec: bool = False):
    cfg = spec.configs[0]

    def pick(problem, inputs):
        if vec:
            _operands(problem, inputs, vec_needed=True)
        return cfg
    return pick


def _any_shape(spec: StageSpec, tile: Optional[str] = None, suffix: str = ""):
    """VEC instantiation when rows are 16-byte aligned, the scalar one otherwise."""
    def pick(problem, inputs):
        t = tile or _tile_choice(spec.number)
        _, _, _, aligned = _operands(problem, inputs, vec_needed=False)
        vec = aligned and _aligned_rows(problem)
        return spec.config(f"{t}.{'vec' if vec else 'scalar'}{suffix}")
    return pick


# Split-K cost model: seconds per k of one 128x128 block at 2 blocks/SM (~0.7 of FFMA peak,
# H100 clocks), fixed cost of a block (prologue, epilogue) in k units, bytes/s of the workspace
# round trip, and the extra launch.
_T_K = 128 * 128 / (0.7 * 128 / 2) / 1.98e9
_BLOCK_OVERHEAD_K = 64
_BYTES_PER_S = 2.5e12
_LAUNCH_S = 4e-6
MIN_SPLIT_CHUNK = 256
MAX_SPLITS = 512
MAX_WORKSPACE_BYTES = 1 << 30


def split_plan(M: int, N: int, K: int, sm_count: int, bk: int = 8, blocks_per_sm: int = 2,
               tile: tuple = (128, 128), atomic: bool = False) -> tuple[int, int]:
    """(splits, k_chunk): the split count that minimizes modeled time, and the K range per split.

    Blocks run in waves of sm_count*blocks_per_sm; a split multiplies the block count and
    divides each block's K range, so the time is waves * (chunk + overhead) plus moving the
    S*M*N partials. Each split keeps K/S >= MIN_SPLIT_CHUNK, a multiple of bk (so 16-byte
    alignment of A rows holds at every split start). CUDA_SPLIT_K forces the count.
    """
    tiles = _cdiv(M, tile[0]) * _cdiv(N, tile[1])
    slots = max(1, sm_count * blocks_per_sm)

    def plan(s: int) -> tuple[int, int]:
        chunk = _cdiv(_cdiv(K, s), bk) * bk
        return _cdiv(K, chunk), chunk

    forced = loader.env_int("CUDA_SPLIT_K")
    if forced is not None:
        if forced < 1:
            raise ValueError(f"CUDA_SPLIT_K must be >= 1, got {forced}")
        return plan(min(forced, K))

    def cost(s: int) -> float:
        s_eff, chunk = plan(s)
        waves = _cdiv(tiles * s_eff, slots)
        t = waves * (chunk + _BLOCK_OVERHEAD_K) * _T_K
        if s_eff > 1:
            moved = (s_eff * M * N * 4) * (1 if atomic else 2) + M * N * 8
            t += moved / _BYTES_PER_S + _LAUNCH_S
        return t

    best_s, best_t = 1, cost(1)
    max_s = min(MAX_SPLITS, K // MIN_SPLIT_CHUNK, max(1, MAX_WORKSPACE_BYTES // max(1, 4 * M * N)))
    for s in range(2, max_s + 1):
        t = cost(s)
        if t < best_t * 0.99:  # a split must pay for itself clearly
            best_s, best_t = s, t
    return plan(best_s)


def _split_k_prepare(spec: StageSpec, atomic: bool):
    spec09 = next(s for s in SPECS if s.number == 9)

    def prepare(problem, inputs, options=None):
        be = loader.backend()
        M, N, K = problem.M, problem.N, problem.K
        tile = TILES_10[0] if atomic else _tile_choice(10)
        bk = PIPELINE_TILES[tile][0]
        A, B, C, aligned = _operands(problem, inputs, vec_needed=False)
        vec = aligned and _aligned_rows(problem)
        splits, chunk = split_plan(M, N, K, be.sm_count(), bk=bk, atomic=atomic)
        stream = be.stream()
        if splits == 1:
            # Nothing to split: the stage 09 kernel, no workspace, no second launch.
            cfg = spec09.config(f"{tile}.{'vec' if vec else 'scalar'}")
            fn = be.function(spec09.file, cfg)
            grid, block, args = (_tiles(problem, cfg), 1, 1), cfg.block, _gemm_args(problem, A, B, C)

            def launch():
                fn(grid, block, args, stream=stream)
            launch.splits, launch.k_chunk = 1, K
            return launch

        suffix = ".atomic" if atomic else ""
        cfg = spec.config(f"{tile}.{'vec' if vec else 'scalar'}{suffix}")
        gemm = be.function(spec.file, cfg)
        grid = (_tiles(problem, cfg), 1, splits)
        block = cfg.block
        MN = M * N
        if atomic:
            s_cfg = spec.config("scale_c")
            scale = be.function(spec.file, s_cfg)
            s_block = s_cfg.block
            s_grid, s_args = (_cdiv(MN, s_block[0]), 1, 1), (np.int32(MN), np.float32(problem.beta), C)
            g_args = (np.int32(M), np.int32(N), np.int32(K), np.int32(chunk), np.float32(problem.alpha), A, B, C)

            def launch():
                scale(s_grid, s_block, s_args, stream=stream)
                gemm(grid, block, g_args, stream=stream)
            launch.splits, launch.k_chunk = splits, chunk
            return launch

        ws = be.empty(splits * MN)  # allocated once per prepare; every launch reuses it
        vec4 = MN % 4 == 0 and aligned
        red_cfg = spec.config("reduce.vec4" if vec4 else "reduce.scalar")
        red = be.function(spec.file, red_cfg)
        r_block = red_cfg.block
        r_grid = (_cdiv(MN // 4 if vec4 else MN, r_block[0]), 1, 1)
        g_args = (np.int32(M), np.int32(N), np.int32(K), np.int32(chunk), np.float32(1.0), A, B, ws)
        r_args = (np.int32(MN), np.int32(splits), np.float32(problem.alpha), ws, np.float32(problem.beta), C)

        def launch():
            gemm(grid, block, g_args, stream=stream)
            red(r_grid, r_block, r_args, stream=stream)
        launch.splits, launch.k_chunk = splits, chunk  # for reports and tests
        return launch
    return prepare


def _supports_any(problem) -> Optional[str]:
    return None


def _spec(number: int, variant: str = "") -> StageSpec:
    return next(s for s in SPECS if s.number == number and s.variant == variant)


def _meta(spec: StageSpec, **extra) -> dict:
    d = {"file": spec.file, "configs": [c.label for c in spec.configs],
         "threads": sorted({c.threads for c in spec.configs if c.tile != (0, 0)})}
    d.update(extra)
    return d


def _register_all() -> list[Kernel]:
    out = []
    for n in range(1, 8):
        spec = _spec(n)
        vec = n in (6, 7)
        out.append(register(Kernel(
            name=spec.name, family=FAMILY, stage=spec.stage, precisions=("fp32",),
            prepare=_single_kernel_prepare(spec, _fixed(spec, vec=vec)),
            supports=_vec_requirement if vec else _supports_any,
            idea=spec.idea, meta=_meta(spec, tile=spec.configs[0].label))))
    for n in (8, 9):
        spec = _spec(n)
        out.append(register(Kernel(
            name=spec.name, family=FAMILY, stage=spec.stage, precisions=("fp32",),
            prepare=_single_kernel_prepare(spec, _any_shape(spec, tile="128x128x8" if n == 8 else None)),
            supports=_supports_any, idea=spec.idea,
            meta=_meta(spec, tile="128x128x8" if n == 8 else f"env CUDA_TILE_09 ({'|'.join(TILES_09)})",
                       paths="float4 when K%4==0 and N%4==0, else predicated scalar"))))
    for variant in ("", "atomic"):
        spec = _spec(10, variant)
        out.append(register(Kernel(
            name=spec.name, family=FAMILY, stage=spec.stage, precisions=("fp32",),
            prepare=_split_k_prepare(spec, atomic=bool(variant)), supports=_supports_any,
            variant=variant, idea=spec.idea,
            meta=_meta(spec, split="auto from SM count, tiles and K; env CUDA_SPLIT_K forces it",
                       deterministic=not variant))))
    return out


KERNELS: list[Kernel] = _register_all()
