"""The CUDA stages launched: each :class:`~cuda_kernels.registry.StageSpec` becomes a registered
``Kernel`` whose ``prepare`` picks one of the spec's compiled configurations for a problem and
returns a launch of it.

Three prepare paths, one per ``StageSpec.plan``: one launch over a grid of tiles
(``_single_prepare``), split-K (``_split_k_prepare``: the split kernel then a fixed-order
reduction, or atomicAdd into C) and stream-K (``_stream_k_prepare``: data-parallel tiles plus
stream-K blocks, then a fixup or atomicAdd).

Options (``--opt NAME=VALUE``; everything left out is chosen by the kernel's heuristic, and every
launch reports the resolved values in ``launch.config``):

* ``tile`` (stages 09, 10, 11, 12): one of the stage's compiled tiles (``StageSpec.tiles``).
  Defaults: ``registry.DEFAULT_TILE``; stage 11 picks per shape (``stream_k_tile``).
* ``split_k`` (stage 10): the split count, >= 1 (1 = no split); default from the split-K cost
  model in ``compare.families.decompose``.
* ``mode`` (stage 11): ``dp`` | ``sk`` | ``hybrid``; ``grid`` (stage 11): stream-K blocks.
  Defaults from ``compare.families.decompose.stream_k_plan``.
* ``path`` (cuda.11_stream_k): ``auto`` | ``tile`` | ``gemv`` | ``skinny_n``: the stream-K tile
  plan or one of the bandwidth-bound paths of 11_stream_k_skinny.cu; ``auto`` applies
  ``PATH_RULE`` (``stream_k_path``), or takes the tile path where ``tile``, ``mode`` or ``grid``
  is set. Their K split: ``skinny_plan`` (``compare.families.decompose.skinny_split``).
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from compare.families import decompose
from compare.harness.registry import Kernel, Option, register

from . import loader
from .registry import (FAMILY, FIXUP_LANES, FIXUP_MANY_PARTIALS, FIXUP_THREADS, GEMV_COLS, GEMV_UNROLL, GEMV_WARPS,
                       PIPELINE_TILES, SINGLE, SKINNY_KC, SKINNY_NB, SKINNY_SUM, SKINNY_SUM_MANY_RANGES, SPECS,
                       SPLIT_K, STREAM_K, STREAM_K_TILES, TF32_DEFAULT_TILE, TF32_PRECISIONS, TF32_TILES, Config,
                       StageSpec, expressions, skinny_rows, WGMMA, WGMMA_TILES, REGB_TILES, B_TRANSPOSE_CHOICES, regb_label)


def _function(spec: StageSpec, cfg: Config):
    if spec.arch:
        return loader.backend().function(spec.file, cfg, expressions(spec.file), arch=spec.arch)
    return loader.backend().function(spec.file, cfg, expressions(spec.file))


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


def stream_k_tile(M: int, N: int, K: int, sms: int = 132) -> str:
    """Stage 11's tile heuristic: a 128-row tile half empty is half the FFMAs wasted, so skinny
    outputs get a quarter- or half-height tile (M <= 32, M <= 64) or a quarter- or half-width one
    (N <= 32, N <= 64), and an output at most 64 on both sides the 64x64 tile. Below one wave of
    128x128 tiles (fewer tiles than SMs) the 64x128 tile: twice the tiles and blocks per SM to
    share the work (results/h100/explore, % of cuBLAS 128x128 -> 64x128: 1021^3 78 -> 92,
    127x8191x1021 73 -> 85, 257x255x65537 73 -> 83, 320x320x81920 79 -> 92), except for long K
    (K >= 4 max(M, N)) where 64 rows pad no less than 128 (the H100 sweep: 1024x1024x16384 88%
    with 128x128, 82% with 64x128). 128-row tiles that leave more than PAD_MAX_EMPTY_ROWS of
    their rows empty: the 64x128 tile. Everything else the
    128x128x16 warp tile of stages 09/10 (the fastest per FFMA). Decode-sized M (1..32) is bound by
    reading B; the 32-row tile keeps the wasted FFMAs under that time, and for N <= 64 (tiny
    outputs, long K) the 32x64 tile halves the FFMAs a 32x128 tile spends on empty columns."""
    if M <= 32:
        return "32x64x16" if N <= 64 else "32x128x16"
    if M <= 64:
        return "64x64x16" if N <= 64 else "64x128x16"
    if N <= 32:
        return "128x32x16"
    if N <= 64:
        return "128x64x16"
    if _cdiv(M, 128) * _cdiv(N, 128) < sms:
        # Long K already has the blocks it needs from the split of K; there the 64-row tile
        # pays only where it pads fewer rows (257: 320 rows of 64 vs 384 of 128).
        long_k = K >= 4 * max(M, N)
        if not long_k or _cdiv(M, 64) * 64 < _cdiv(M, 128) * 128:
            return "64x128x16"
    if pads_many_rows(M, PAD_MAX_EMPTY_ROWS):
        return "64x128x16"
    return "128x128x16"


# 128x128 tiles leaving more than this share of their rows empty lose to 64x128 ones that pad
# fewer. Where neither pads, the 64-row tile's lower operand reuse costs 1-4.5% (768x5120x13824
# 96.5% -> 92.7% of cuBLAS); on the 12 tunable shapes of results/h100/explore/round15 where it
# pads fewer, it gained from 6.25% empty up (1200x3072x3072 91.3% -> 93.8%; 30%, 180x12288x12288:
# 76.7% -> 96.7%).
PAD_MAX_EMPTY_ROWS = 0.05


def pads_many_rows(M: int, max_empty: float) -> bool:
    """Do 128-row tiles leave more than ``max_empty`` of their rows empty (M = 300: 384 rows,
    22%), where 64-row tiles leave fewer (320 rows)?"""
    fill128, fill64 = decompose.tile_fill(M, 1, 128, 1), decompose.tile_fill(M, 1, 64, 1)
    return fill128 < 1 - max_empty and fill64 > fill128


# ---------------------------------------------------------------------------------------------
# stage 11's bandwidth-bound paths (11_stream_k_skinny.cu)

PATHS = ("auto", "tile", "gemv", "skinny_n")
SKINNY_MAX_N = SKINNY_NB[-1]
PATH_RULE = "N <= 8: skinny_n; else M == 1: gemv; else tile (the stream-K plan)"
# gemv_row keeps 16 KiB of loads in flight per block and fits up to 8 blocks per SM; 4 per SM
# (64 KiB) is over three times the ~18 KiB per SM that covers DRAM latency on an H100.
# skinny_n keeps 32-64 KiB per block (two chunks of 16-byte loads; one chunk, 16-32 KiB, in its
# scalar builds) and fits 2 per SM (<= 128 registers): 2 blocks per SM.
GEMV_COST = decompose.SkinnyCost(blocks_per_sm=4)
SKINNY_COST = decompose.SkinnyCost(blocks_per_sm=2)


def stream_k_path(M: int, N: int, K: int) -> str:
    """Stage 11's path for a shape (``PATH_RULE``; the ``path`` option's ``auto``). N <= 8 is a
    stream of A (at most 4 flops per byte of it) whatever M is, so it comes first: a single row
    with N <= 8 streams B's K x N through skinny_n's B copy with every warp load coalesced, where
    gemv_row would read N of every 128 columns it loads. One row with N > 8 streams B: gemv. The
    rest are tile problems."""
    if N <= SKINNY_MAX_N:
        return "skinny_n"
    if M == 1:
        return "gemv"
    return "tile"


def skinny_nb(N: int) -> int:
    """The skinny_n build for N columns: N rounded up to 1, 2, 4 or 8."""
    return next(b for b in SKINNY_NB if b >= N)


def skinny_plan(path: str, M: int, N: int, K: int, sms: int, splits: Optional[int] = None) -> tuple[int, int, int]:
    """(output blocks, K ranges, K per range) of a bandwidth-bound path: a pure function of the
    shape and the SM count (decompose.skinny_split with this path's geometry). gemv: blocks of
    128 columns, K ranges a multiple of the 32 rows a block's loop steps by, a partial row of N
    floats per range. skinny_n: blocks of 32 rows (16 for N > 4), K ranges a multiple of the
    256-wide chunk, a partial M x N per range. Streamed: both operands (4*(M*K + K*N) bytes; B
    dominates at M = 1, A at N <= 8 and M >> 8). ``splits`` forces the K range count (the
    ``k_splits`` option)."""
    if path == "gemv":
        blocks = _cdiv(N, GEMV_COLS)
        splits, kps = decompose.skinny_split(blocks, K, k_align=GEMV_WARPS * GEMV_UNROLL, sms=sms,
                                             stream_bytes=4 * (K + K * N), partial_bytes=4 * N, cost=GEMV_COST,
                                             splits=splits)
    elif path == "skinny_n":
        blocks = _cdiv(M, skinny_rows(skinny_nb(N)))
        splits, kps = decompose.skinny_split(blocks, K, k_align=SKINNY_KC, sms=sms, stream_bytes=4 * (M * K + K * N),
                                             partial_bytes=4 * M * N, cost=SKINNY_COST, splits=splits)
    else:
        raise ValueError(f"no bandwidth-bound path {path!r}")
    return blocks, splits, kps


# ---------------------------------------------------------------------------------------------
# options

def _options(spec: StageSpec) -> tuple:
    out = []
    if len(spec.tiles) > 1:
        default = f"default {spec.default_tile}" if spec.default_tile else "default: chosen per shape"
        if spec.precisions == tuple(TF32_PRECISIONS):
            default = "; ".join(f"{pr}: default {TF32_DEFAULT_TILE[pr]}, any of "
                                f"{', '.join(t for t, v in TF32_TILES.items() if pr in v[-1])}"
                                for pr in TF32_PRECISIONS)
        out.append(Option.choice("tile", f"block tile, one of {', '.join(spec.tiles)} ({default})", spec.tiles))
    if spec.plan == WGMMA:
        out.append(Option.choice("b_transpose", "how B (N-major) reaches the tensor cores: swap (the default: "
                                 "C^T = B^T A^T, B read as stored by TMA, or row-padded first where N % 4 != 0, "
                                 "its fragments loaded into registers) or copy (a K-major transposed copy of B "
                                 "each launch)", B_TRANSPOSE_CHOICES))
        gemms = tuple(c.label for c in spec.configs if c.kernel.startswith("sgemm_"))
        out.append(Option.choice("tile", "block tile of the GEMM (default: the register-operand path's tile the split-K "
                                  "model times fastest; the copy path has one per precision), one of "
                                  + ", ".join(gemms), gemms))
    if spec.plan in (SPLIT_K, WGMMA):
        out.append(Option.count("split_k", "K splits, >= 1 (1 = no split; default: the split-K cost model)"))
    if spec.plan == STREAM_K:
        out.append(Option.choice("mode", "dp (no stream-K), sk (every tile stream-K) or hybrid (two-tile stream-K + "
                                  "data-parallel waves); default from the wave count", decompose.MODES))
        out.append(Option.count("grid", "stream-K blocks, >= 1 (default: SMs x blocks per SM)"))
        if spec.variant != "atomic":
            out.append(Option.choice("path", f"auto ({PATH_RULE}; tile where tile, mode or grid is set), tile, gemv "
                                      f"(M == 1 only) or skinny_n (N <= {SKINNY_MAX_N} only)", PATHS))
            out.append(Option.count("k_splits", "K ranges of the gemv / skinny_n paths, >= 1 (1 = no split; default: "
                                          "decompose.skinny_split's bandwidth model)"))
    return tuple(out)


def _chosen_by(opts: dict) -> str:
    if not opts:
        return "heuristic"
    return f"user ({', '.join(sorted(opts))}), heuristic (the rest)"


def _with_config(launch, config: dict):
    launch.config = config
    return launch


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


def _launcher(*steps):
    """A zero-argument launch of (function, grid, block, args[, dynamic shared bytes]) steps, in
    order, each on torch's current stream as of the call (looked up per call: a CUDA graph
    capture or a side stream that is current when the launch runs gets the work)."""
    def launch():
        stream = loader.backend().stream()
        for fn, grid, block, args, *smem in steps:
            if smem and smem[0]:
                fn(grid, block, args, shared_mem=smem[0], stream=stream)
            else:
                fn(grid, block, args, stream=stream)
    return launch


def _geometry(cfg: Config, grid) -> dict:
    bm, bn = cfg.tile
    return {"BM": bm, "BN": bn, "BK": cfg.bk, "threads": cfg.threads, "grid": list(grid)}


def _pick_config(spec: StageSpec, problem, inputs, opts: dict, suffix: str = "") -> tuple[Config, bool, str]:
    """(configuration, float4 path?, tile label) for a single-kernel stage."""
    vec_only = spec.operands == "float4"
    _, _, _, aligned = _operands(problem, inputs, vec_needed=vec_only)
    vec = vec_only or (aligned and _aligned_rows(problem))
    if not spec.tiles:
        return spec.configs[0], vec, spec.configs[0].label
    tile = opts.get("tile") or spec.default_tile
    return spec.config(f"{tile}.{'vec' if vec else 'scalar'}{suffix}"), vec, tile


def _check_smem(spec: StageSpec, cfg: Config) -> None:
    """A block asking for more shared memory than the GPU lets one block opt in to can't launch
    (stage 12's 105 KiB runs on sm_80 / sm_90, not on sm_86 / sm_89 with 99 KiB): say so first."""
    be = loader.backend()
    if cfg.smem_dynamic > 48 * 1024 and hasattr(be, "smem_optin"):
        have = be.smem_optin()
        if have is not None and cfg.smem_dynamic > have:
            from compare.harness.errors import UsageError
            raise UsageError(f"{spec.name} tile {cfg.label} needs {cfg.smem_dynamic} bytes of shared memory per "
                             f"block; this GPU lets a block use at most {have}")


def _single_prepare(spec: StageSpec):
    """One kernel launch over a 1-D grid of C tiles."""
    def prepare(problem, inputs, options=None):
        opts = dict(options or {})
        tf32 = spec.precisions == tuple(TF32_PRECISIONS)
        suffix = TF32_PRECISIONS[problem.precision][1] if tf32 else ""
        if tf32:
            opts.setdefault("tile", TF32_DEFAULT_TILE[problem.precision])
            have = [t for t, v in TF32_TILES.items() if problem.precision in v[-1]]
            if opts["tile"] not in have:
                from compare.harness.errors import UsageError
                raise UsageError(f"{spec.name}: tile {opts['tile']} has no {problem.precision} configuration "
                                 f"(its registers can't hold the split); {problem.precision} tiles: {', '.join(have)}")
        cfg, vec, tile = _pick_config(spec, problem, inputs, opts, suffix)
        _check_smem(spec, cfg)
        A, B, C, _ = _operands(problem, inputs, vec_needed=False)
        grid = (_tiles(problem, cfg), 1, 1)
        launch = _launcher((_function(spec, cfg), grid, cfg.block, _gemm_args(problem, A, B, C), cfg.smem_dynamic))
        config = {"tile": tile, **_geometry(cfg, grid), "operands": "float4" if vec else "scalar",
                  "chosen_by": _chosen_by(dict(options or {})) if len(spec.tiles) > 1 else "fixed"}
        if len(spec.precisions) > 1:
            config["precision_path"] = ("3xTF32: big + small TF32 parts, 3 mma per product, summed by FADD"
                                        if suffix else "TF32: operands rounded to nearest (cvt.rna), 1 mma per product")
        if cfg.smem_dynamic:
            config["smem_bytes"] = cfg.smem_dynamic
        return _with_config(launch, config)
    return prepare


# Stage 10's split-K geometry: each split keeps at least this much K (a multiple of BK), so the
# pipeline fill and the partial's round trip stay small against the main loop.
MIN_SPLIT_CHUNK = 256
MAX_SPLITS = 512


def split_plan(M: int, N: int, K: int, sm_count: int, bk: int = 16, atomic: bool = False,
               splits: Optional[int] = None) -> tuple[int, int]:
    """(splits, k_chunk) of stage 10: compare.families.decompose.choose_split with stage 10's geometry
    (128x128 tiles, 2 blocks per SM, chunks a multiple of BK and >= MIN_SPLIT_CHUNK). ``splits`` forces the
    count (rounded so chunks stay multiples of BK)."""
    p = decompose.choose_split(M, N, K, sm_count, tile=(128, 128), blocks_per_sm=2, chunk_align=bk,
                               min_chunk=MIN_SPLIT_CHUNK, max_splits=MAX_SPLITS, deterministic=not atomic,
                               splits=splits)
    return p.splits, p.chunk


def _split_k_prepare(spec: StageSpec):
    atomic = spec.variant == "atomic"
    spec09 = next(s for s in SPECS if s.stage == "double_buffered")

    def prepare(problem, inputs, options=None):
        opts = dict(options or {})
        be = loader.backend()
        M, N, K = problem.M, problem.N, problem.K
        tile = opts.get("tile") or spec.default_tile
        bk = PIPELINE_TILES[tile][0]
        A, B, C, aligned = _operands(problem, inputs, vec_needed=False)
        vec = aligned and _aligned_rows(problem)
        if opts.get("split_k", 1) > MAX_SPLITS:
            from compare.harness.errors import UsageError
            raise UsageError(f"{spec.name}: split_k={opts['split_k']} is more than {MAX_SPLITS} splits")
        splits, chunk = split_plan(M, N, K, be.sm_count(), bk=bk, atomic=atomic, splits=opts.get("split_k"))
        config = {"tile": tile, "split_k": splits, "k_chunk": chunk, "operands": "float4" if vec else "scalar",
                  "variant": spec.variant, "chosen_by": _chosen_by(opts)}
        if splits == 1:
            # Nothing to split: the stage 09 kernel, no workspace, no second launch.
            cfg = spec09.config(f"{tile}.{'vec' if vec else 'scalar'}")
            grid = (_tiles(problem, cfg), 1, 1)
            launch = _launcher((_function(spec09, cfg), grid, cfg.block, _gemm_args(problem, A, B, C)))
            return _with_config(launch, {**config, **_geometry(cfg, grid), "reduction": "none (one split)"})

        cfg = spec.config(f"{tile}.{'vec' if vec else 'scalar'}{'.atomic' if atomic else ''}")
        gemm = _function(spec, cfg)
        grid = (_tiles(problem, cfg), 1, splits)
        MN = M * N
        if atomic:
            s_cfg = spec.config("scale_c")
            s_grid = (_cdiv(MN, s_cfg.block[0]), 1, 1)
            g_args = (np.int32(M), np.int32(N), np.int32(K), np.int32(chunk), np.float32(problem.alpha), A, B, C)
            launch = _launcher((_function(spec, s_cfg), s_grid, s_cfg.block, (np.int32(MN), np.float32(problem.beta), C)),
                               (gemm, grid, cfg.block, g_args))
            return _with_config(launch, {**config, **_geometry(cfg, grid), "reduction": "atomicAdd into C"})

        ws = be.empty(splits * MN)  # allocated once per prepare; every launch reuses it
        vec4 = MN % 4 == 0 and aligned
        red_cfg = spec.config("reduce.vec4" if vec4 else "reduce.scalar")
        r_grid = (_cdiv(MN // 4 if vec4 else MN, red_cfg.block[0]), 1, 1)
        g_args = (np.int32(M), np.int32(N), np.int32(K), np.int32(chunk), np.float32(1.0), A, B, ws)
        r_args = (np.int32(MN), np.int32(splits), np.float32(problem.alpha), ws, np.float32(problem.beta), C)
        launch = _launcher((gemm, grid, cfg.block, g_args), (_function(spec, red_cfg), r_grid, red_cfg.block, r_args))
        return _with_config(launch, {**config, **_geometry(cfg, grid),
                                     "reduction": "workspace, fixed order" + (" (float4)" if vec4 else "")})
    return prepare


def _resolve_path(spec: StageSpec, problem, opts: dict) -> str:
    """The path the ``path`` option (or its auto rule) gives this problem; a UsageError where the
    option asks for one that can't take it or combines a skinny path with the tile plan's options."""
    from compare.harness.errors import UsageError
    M, N = problem.M, problem.N
    path = opts.get("path", "auto")
    tile_opts = [o for o in ("tile", "mode", "grid") if o in opts]
    if path == "auto":
        path = "tile" if tile_opts else stream_k_path(M, N, problem.K)
        if path == "tile" and "k_splits" in opts:
            raise UsageError(f"{spec.name}: k_splits sets the K split of the gemv / skinny_n paths; this problem "
                             f"takes the tile path ({PATH_RULE}" + (f"; {', '.join(tile_opts)} set" if tile_opts else "")
                             + ")")
        return path
    if path == "tile" and "k_splits" in opts:
        raise UsageError(f"{spec.name}: k_splits sets the K split of the gemv / skinny_n paths, not path=tile's")
    if path != "tile" and tile_opts:
        raise UsageError(f"{spec.name}: {', '.join(tile_opts)} set the tile path's plan; path={path} has none")
    if path == "gemv" and M != 1:
        raise UsageError(f"{spec.name}: path=gemv multiplies a single row; this problem has M={M}")
    if path == "skinny_n" and N > SKINNY_MAX_N:
        raise UsageError(f"{spec.name}: path=skinny_n takes N <= {SKINNY_MAX_N}; this problem has N={N}")
    return path


def _skinny_launch(spec: StageSpec, path: str, problem, inputs, opts: dict):
    """gemv_row / skinny_n over (output blocks, K ranges), then, with more than one range, the
    fixed-order sum of the ranges' partials."""
    be = loader.backend()
    M, N, K = problem.M, problem.N, problem.K
    A, B, C, _ = _operands(problem, inputs, vec_needed=False)
    if path == "gemv":
        vec = N % 4 == 0 and be.address(B) % 16 == 0
        cfg = spec.config(f"gemv.{'vec' if vec else 'scalar'}")
        count = N
    else:
        nb = skinny_nb(N)
        vec = K % 4 == 0 and be.address(A) % 16 == 0
        cfg = spec.config(f"skinny_n{nb}.{'vec' if vec else 'scalar'}")
        count = M * N
    blocks, splits, kps = skinny_plan(path, M, N, K, be.sm_count(), opts.get("k_splits"))
    if splits > 65535:  # gridDim.y
        from compare.harness.errors import UsageError
        raise UsageError(f"{spec.name}: k_splits={opts.get('k_splits')} gives {splits} K ranges; the grid's y "
                         f"dimension holds at most 65535")
    grid = (blocks, splits, 1)
    ws = be.empty(splits * count) if splits > 1 else C  # allocated once per prepare; every launch reuses it
    alpha, beta = np.float32(problem.alpha), np.float32(problem.beta)
    dims = (np.int32(N), np.int32(K)) if path == "gemv" else (np.int32(M), np.int32(N), np.int32(K))
    steps = [(_function(spec, cfg), grid, cfg.block, (*dims, np.int32(kps), alpha, A, B, beta, C, ws))]
    if splits > 1:
        sum_label = "skinny.sum.l32" if splits >= SKINNY_SUM_MANY_RANGES else "skinny.sum.l1"
        s_cfg = spec.config(sum_label)
        steps.append((_function(spec, s_cfg), (_cdiv(count, SKINNY_SUM[sum_label][0]), 1, 1), s_cfg.block,
                      (np.int32(count), np.int32(splits), alpha, ws, beta, C)))
    bm, bn = cfg.tile
    config = {"path": path, "path_rule": PATH_RULE, "tile": f"{bm}x{bn}", **_geometry(cfg, grid),
              "operands": "float4" if vec else "scalar",
              "streamed": ("B (K x N) read once, 16-byte loads along N" if path == "gemv" else
                           "A (M x K) read once, 16-byte loads along K; B (K x N) by each block of rows, "
                           "through shared memory"),
              "variant": spec.variant, "k_splits": splits, "k_per_split": kps,
              "fixup": ("none (one K range)" if splits == 1 else
                        f"workspace, K ranges summed in a fixed order by a second kernel "
                        f"({SKINNY_SUM[sum_label][1]} lane{'s' if SKINNY_SUM[sum_label][1] > 1 else ''} per output)"),
              "chosen_by": _chosen_by(opts)}
    launch = _launcher(*steps)
    return _with_config(launch, config)


def _stream_k_prepare(spec: StageSpec):
    atomic = spec.variant == "atomic"

    def prepare(problem, inputs, options=None):
        opts = dict(options or {})
        be = loader.backend()
        M, N, K = problem.M, problem.N, problem.K
        path = "tile" if atomic else _resolve_path(spec, problem, opts)
        if path != "tile":
            return _skinny_launch(spec, path, problem, inputs, opts)
        tile = opts.get("tile") or stream_k_tile(M, N, K, be.sm_count())
        bm, bn, bk, _, _, blocks_per_sm = STREAM_K_TILES[tile]
        A, B, C, aligned = _operands(problem, inputs, vec_needed=False)
        vec = aligned and _aligned_rows(problem)
        try:
            plan = decompose.stream_k_plan(_cdiv(M, bm) * _cdiv(N, bn), _cdiv(K, bk), be.sm_count(), blocks_per_sm,
                                           mode=opts.get("mode"), sk_blocks=opts.get("grid"))
        except ValueError as exc:
            from compare.harness.errors import UsageError
            raise UsageError(f"{spec.name}: {exc}") from None
        cfg = spec.config(f"{tile}.{'vec' if vec else 'scalar'}{'.atomic' if atomic else ''}")
        grid = (plan.grid, 1, 1)
        split = plan.sk_tiles > 0
        ws = be.empty(plan.sk_blocks * 2 * bm * bn) if split and not atomic else C
        g_args = (*_gemm_args(problem, A, B, C), ws, np.int32(plan.sk_tiles), np.int32(plan.sk_blocks),
                  np.int32(plan.iters_per_block), np.int32(plan.extra_iters))
        steps = [(_function(spec, cfg), grid, cfg.block, g_args)]
        fix = "none (no stream-K tiles)"
        if split and atomic:
            p_cfg = spec.config(f"prescale.{tile}")
            p_args = (np.int32(M), np.int32(N), np.int32(K), np.float32(problem.beta), C,
                      np.int32(plan.iters_per_block), np.int32(plan.extra_iters), np.int32(bk))
            steps.insert(0, (_function(spec, p_cfg), (plan.sk_tiles, bm * bn // (4 * FIXUP_THREADS), 1),
                             p_cfg.block, p_args))
            fix = "beta*C on split tiles, then atomicAdd"
        elif split:
            partials = decompose.most_partials(plan.iters_per_tile, plan.iters_per_block)
            lanes = FIXUP_LANES[-1] if partials >= FIXUP_MANY_PARTIALS else FIXUP_LANES[0]
            f_cfg = spec.config(f"fixup.{tile}.{'vec' if vec else 'scalar'}.l{lanes}")
            f_args = (np.int32(M), np.int32(N), np.int32(K), np.float32(problem.alpha), np.float32(problem.beta), C,
                      ws, np.int32(plan.iters_per_block), np.int32(plan.extra_iters), np.int32(bk))
            cols = FIXUP_THREADS // lanes
            steps.append((_function(spec, f_cfg), (plan.sk_tiles, bm * bn // (4 * cols), 1), f_cfg.block, f_args))
            fix = f"workspace, summed in a fixed order ({lanes} lane{'s' if lanes > 1 else ''} per column)"
        config = {**({} if atomic else {"path": "tile", "path_rule": PATH_RULE}),
                  "tile": tile, **_geometry(cfg, grid), "operands": "float4" if vec else "scalar",
                  "variant": spec.variant, **{k: v for k, v in plan.as_dict().items() if k not in ("chosen_by", "grid")},
                  "fixup": fix, "chosen_by": _chosen_by(opts)}
        launch = _launcher(*steps)
        launch.plan = plan  # for tests
        return _with_config(launch, config)
    return prepare


# Stage 13's split-K, in the shared split-K model's units (compare/families/decompose.py): one k of
# a 128x128 tile is 2*128*128 flops at ~2.8 TFLOP/s per SM (cuBLAS tf32 at ~370 TFLOP/s over 132
# SMs) = 11.7 ns, tf32x3 three products; a block's fixed cost (launch, pipeline fill, writing a
# 128x256 tile at ~23 GB/s per SM: ~6 us) is ~256 k-steps of its tile; the partials move through
# HBM at ~2.5 TB/s plus a second launch. Chunks stay whole 32-wide K tiles.
WGMMA_SPLIT_COST = {False: decompose.SplitCost(tile_k_seconds=2 * 128 * 128 / 2.8e12, overhead_k=256),
                    True: decompose.SplitCost(tile_k_seconds=3 * 2 * 128 * 128 / 2.8e12, overhead_k=96)}
WGMMA_MIN_SPLIT_CHUNK = 128
WGMMA_MAX_SPLITS = 256


# The register-operand tiles' speed per multiply-add relative to 256 rows (estimated, not yet
# measured): every K tile costs each consumer thread the same 16 fragment loads whatever TM is, so
# a 64-row tile spends 4x as many per multiply-add as a 256-row one.
REGB_RELATIVE_SPEED = {256: 1.0, 128: 0.9, 64: 0.75}


def _wgmma_cost(split3: bool, tm: int = 256) -> decompose.SplitCost:
    c = WGMMA_SPLIT_COST[split3]
    return decompose.SplitCost(tile_k_seconds=c.tile_k_seconds / REGB_RELATIVE_SPEED[tm], overhead_k=c.overhead_k)


def wgmma_split_plan(M: int, N: int, K: int, sm_count: int, tile: tuple, split3: bool,
                     splits: Optional[int] = None, regb_rows: int = 256) -> decompose.SplitPlan:
    """Stage 13's K splits for an M x N x K product on ``tile`` (BM, BN) blocks, one per SM: the
    shared split-K model with the tensor-core costs above (``regb_rows``: the register-operand
    tile's rows, whose relative speed scales them); ``splits`` forces the count."""
    return decompose.choose_split(M, N, K, sm_count, tile=tuple(tile), blocks_per_sm=1, chunk_align=32,
                                  min_chunk=WGMMA_MIN_SPLIT_CHUNK, max_splits=WGMMA_MAX_SPLITS,
                                  cost=_wgmma_cost(split3, regb_rows), splits=splits)


def regb_tile(M: int, N: int, K: int, sm_count: int, precision: str, splits: Optional[int] = None) -> tuple:
    """(TM, STAGES) of the register-operand path: the tile whose best split the shared split-K
    model times fastest (rows padded, waves and K splits all counted there)."""
    split3 = precision == "tf32x3"

    def modeled(tm: int) -> float:
        cost = _wgmma_cost(split3, tm)
        plan = decompose.choose_split(M, N, K, sm_count, tile=(tm, 128), chunk_align=32,
                                      min_chunk=WGMMA_MIN_SPLIT_CHUNK, max_splits=WGMMA_MAX_SPLITS, cost=cost,
                                      splits=splits)
        return decompose.split_seconds(M, N, K, sm_count, plan.splits, tile=(tm, 128), chunk_align=32,
                                       cost=cost)[0]
    return min(REGB_TILES[precision], key=lambda t: modeled(t[0]))


def _wgmma_prepare(spec: StageSpec):
    """Stage 13: the operand copies (B's rows padded where N % 4 != 0, or B^T with b_transpose=copy; A
    where K % 4 != 0, its address is not 16-byte aligned, or for the tf32x3 split), their tensor
    maps, the GEMM (tile and K splits from the shared split-K model), the split-K reduction; all
    in one timed launch."""
    def prepare(problem, inputs, options=None):
        from compare.harness.errors import UsageError
        opts = dict(options or {})
        why = _needs_arch(spec)(problem)
        if why:
            raise UsageError(f"{spec.name}: {why}")
        from . import tma
        be = loader.backend()
        M, N, K = problem.M, problem.N, problem.K
        bn, stages, split3 = WGMMA_TILES[problem.precision]
        cfg = spec.config(f"128x{bn}x32s{stages}{'.x3' if split3 else ''}")
        A, B, C, _ = _operands(problem, inputs, vec_needed=False)
        kp = _cdiv(K, 4) * 4  # TMA: row strides a multiple of 16 bytes
        if max(_cdiv(K, 32), _cdiv(M, 32)) > 65535:
            raise UsageError(f"{spec.name}: the operand copy's grid has at most 65535 tiles of 32 rows; "
                             f"M={M}, K={K}")
        steps, held = [], []

        def copy(src, rows, cols, trans, split):
            out_rows = cols if trans else rows
            big = be.empty(out_rows * kp)
            small = be.empty(out_rows * kp) if split else big
            held.extend((big, small))
            p_cfg = spec.config(f"prepare.{'transpose' if trans else 'copy'}{'.split' if split else ''}")
            grid = (_cdiv(cols, 32), _cdiv(rows, 32), 1)
            steps.append((_function(spec, p_cfg), grid, p_cfg.block,
                          (src, np.int32(rows), np.int32(cols), big, small, np.int32(kp))))
            return big, small

        b_as_stored = N % 4 == 0 and be.address(B) % 16 == 0
        b_path = opts.get("b_transpose") or "swap"
        if opts.get("split_k", 1) > WGMMA_MAX_SPLITS:
            raise UsageError(f"{spec.name}: split_k={opts['split_k']} is more than {WGMMA_MAX_SPLITS} splits")
        cfg = _wgmma_tile(spec, problem, opts, split3, cfg, b_path, be.sm_count())
        if b_path == "copy":
            bt, bts = copy(B, K, N, True, split3)
        copied_a = split3 or K % 4 != 0 or be.address(A) % 16 != 0
        if copied_a:
            a, a_s = copy(A, M, K, False, split3)
            lda = kp
        else:
            a, a_s, lda = A, A, K
        if b_path == "swap":
            tm = cfg.tile[0]
            b, ldb = B, N
            if not b_as_stored:
                ldb = _cdiv(N, 4) * 4
                b = be.empty(K * ldb)
                held.append(b)
                p_cfg = spec.config("pad_rows")
                steps.append((_function(spec, p_cfg), (min(_cdiv(K * N, 256), 16 * be.sm_count()), 1, 1), p_cfg.block,
                              (B, np.int32(K), np.int32(N), b, np.int32(ldb))))
            maps = (tma.tensor_map(be.address(a), M, K, lda, tm), tma.tensor_map(be.address(b), K, N, ldb, 32),
                    tma.tensor_map(be.address(a_s), M, K, lda, tm))
        else:
            maps = (tma.tensor_map(be.address(a), M, K, lda, 128), tma.tensor_map(be.address(bt), N, K, kp, bn),
                    tma.tensor_map(be.address(a_s), M, K, lda, 128), tma.tensor_map(be.address(bts), N, K, kp, bn))
        plan = wgmma_split_plan(M, N, K, be.sm_count(), cfg.tile, split3, splits=opts.get("split_k"),
                                regb_rows=cfg.tile[0] if b_path == "swap" else 256)
        grid = (_tiles(problem, cfg), plan.splits, 1)
        partials = be.empty(plan.splits * M * N) if plan.splits > 1 else None
        if partials is not None:
            held.append(partials)
        steps.append((_function(spec, cfg), grid, cfg.block,
                      (*maps, np.int32(M), np.int32(N), np.int32(K), np.float32(problem.alpha),
                       np.float32(problem.beta), C, np.int32(_cdiv(plan.chunk, cfg.bk)),
                       partials if partials is not None else np.uint64(0)), cfg.smem_dynamic))
        if partials is not None:
            r_cfg = spec.config("splitk_reduce")
            r_grid = (min(_cdiv(M * N, r_cfg.block[0]), 16 * be.sm_count()), 1, 1)
            steps.append((_function(spec, r_cfg), r_grid, r_cfg.block,
                          (np.int32(M * N), np.int32(plan.splits), np.float32(problem.alpha), partials,
                           np.float32(problem.beta), C)))
        launch = _launcher(*steps)
        launch.workspaces = held  # the tensor maps point into these: they live as long as the launch
        launch.plan = plan  # for tests
        config = _wgmma_config(cfg, grid, plan, opts, kp=kp, N=N, split3=split3, b_path=b_path,
                               b_as_stored=b_as_stored, copied_a=copied_a)
        return _with_config(launch, config)
    return prepare


def _wgmma_tile(spec: StageSpec, problem, opts: dict, split3: bool, cfg, b_path: str, sms: int):
    """Stage 13's kernel configuration: on the register-operand path the tile --opt tile names,
    else regb_tile's choice for the shape; on the copy path its one tile (an --opt tile naming
    another is refused)."""
    from compare.harness.errors import UsageError
    M, N, K = problem.M, problem.N, problem.K
    if b_path == "swap":
        labels = [regb_label(tm, st, split3) for tm, st in REGB_TILES[problem.precision]]
        if opts.get("tile") and opts["tile"] not in labels:
            raise UsageError(f"{spec.name}: tile={opts['tile']} is not a {problem.precision} tile of the "
                             f"register-operand path; one of {', '.join(labels)}")
        tm, stages = (next(t for t in REGB_TILES[problem.precision] if regb_label(*t, split3) == opts["tile"])
                      if opts.get("tile") else
                      regb_tile(M, N, K, sms, problem.precision, opts.get("split_k")))
        return spec.config(regb_label(tm, stages, split3))
    if opts.get("tile") and opts["tile"] != cfg.label:
        raise UsageError(f"{spec.name}: tile={opts['tile']}: the copy path of {problem.precision} has the one "
                         f"tile {cfg.label}")
    return cfg


def _wgmma_config(cfg, grid, plan, opts: dict, *, kp: int, N: int, split3: bool, b_path: str, b_as_stored: bool,
                  copied_a: bool) -> dict:
    """The row's config of a stage 13 launch: tile, geometry, split-K and how each operand is read."""
    return {"tile": cfg.label, **_geometry(cfg, grid), "stages": cfg.targs[1], "smem_bytes": cfg.smem_dynamic,
            "split_k": plan.splits, "k_chunk": plan.chunk,
            "reduction": ("partial tiles in a workspace, summed in split order (splitk_reduce)"
                          if plan.splits > 1 else "none (one split)"),
            "b_transpose": (f"B copied to K-major B^T (N x {kp}) each launch, rounded to TF32"
                            f"{' and split' if split3 else ''}" if b_path == "copy"
                            else ("B read by TMA as stored" if b_as_stored else
                                  f"B's rows padded to {_cdiv(N, 4) * 4} floats (a copy each launch) for TMA")
                                 + "; C^T = B^T A^T with B^T's fragments loaded from shared memory into "
                                   "registers, rounded to TF32" + (" and split into big + small there" if split3 else "")),
            "a_operand": (f"copied (M x {kp}){', split' if split3 else ', rounded to TF32'}" if copied_a
                          else "read by TMA as given (the tensor cores truncate to TF32)"),
            "precision_path": ("3xTF32: big + small TF32 parts of A and B^T, 3 wgmma per k8 into a temporary "
                               "per 32 of K, added by FADD" if split3 else
                               "TF32: 1 wgmma per k8, accumulated in the tensor cores"),
            "chosen_by": _chosen_by(opts)}


_PREPARE = {SINGLE: _single_prepare, SPLIT_K: _split_k_prepare, STREAM_K: _stream_k_prepare, WGMMA: _wgmma_prepare}


def _supports_any(problem) -> Optional[str]:
    return None


# compute capability (major, minor) each arch-specific target runs on.
ARCH_CC = {"sm_90a": (9, 0)}


def _needs_arch(spec: StageSpec) -> Callable:
    """supports() of an arch-specific stage: None on a device of that compute capability, else why."""
    want = ARCH_CC[spec.arch]

    def supports(problem) -> Optional[str]:
        cc_of = getattr(loader.backend(), "compute_capability", None)
        cc = cc_of() if cc_of else None
        need = f"needs compute capability {want[0]}.{want[1]} ({spec.arch}: wgmma, setmaxnreg and TMA)"
        if cc is None:
            return f"{need}; no CUDA device here"
        if tuple(cc) != want:
            return f"{need}; this GPU is sm_{cc[0]}{cc[1]}, which has no wgmma"
        return None
    return supports


def _meta(spec: StageSpec) -> dict:
    d = {"file": spec.file, "configs": [c.label for c in spec.configs],
         "threads": sorted({c.threads for c in spec.configs if c.tile != (0, 0)}),
         "operands": ("float4 only (N % 4 == 0 and K % 4 == 0)" if spec.operands == "float4"
                      else "float4 when K%4==0 and N%4==0, else predicated scalar")}
    if spec.tiles:
        d["tiles"] = list(spec.tiles)
    if spec.variant:
        d["deterministic"] = spec.variant != "atomic"
    if spec.precisions != ("fp32",):
        d["precisions"] = list(spec.precisions)
    if spec.not_emulated:
        d["emulated"] = f"no: {spec.not_emulated}"
    if spec.arch:
        d["arch"] = spec.arch
    d.update(spec.meta)
    return d


def _register(spec: StageSpec) -> Kernel:
    return register(Kernel(
        name=spec.name, family=FAMILY, stage=spec.stage, precisions=spec.precisions,
        prepare=_PREPARE[spec.plan](spec),
        supports=(_needs_arch(spec) if spec.arch else
                  _vec_requirement if spec.operands == "float4" else _supports_any),
        variant=spec.variant, idea=spec.description, options=_options(spec), meta=_meta(spec)))


KERNELS: list[Kernel] = [_register(s) for s in SPECS]
