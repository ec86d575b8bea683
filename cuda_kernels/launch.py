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
* ``path`` (cuda.13_wgmma_tma): the same choices; ``auto`` applies ``PATH_RULE`` unless a
  tensor-core option is set: single rows and N <= 8 go to stage 11's gemv / skinny_n (fp32 FFMA:
  bandwidth-bound, the tensor cores would idle; the row's config says so).
* ``a_split`` (cuda.13_wgmma_tma, tf32x3 on the swap path): ``smem`` | ``copy``: A split into big +
  small TF32 parts by the GEMM's producer warpgroup in shared memory, or by a copy first; default
  ``regb_a_split`` (smem where N <= ``A_SPLIT_SMEM_MAX_N``).
* ``skinny_b`` (cuda.11_stream_k): ``chunked`` | ``resident``: skinny_n's build. ``chunked`` (the
  default from K = 257 on, or where ``k_splits`` is set) copies B through shared memory 256 rows
  of K at a time in every block of rows; ``resident`` (the default for K <= 256,
  ``skinny_short``) copies all of B once per persistent block (``skinny_short_plan``) and has no
  K split.

The per-shape heuristics are in cuda_kernels/heuristics.py, the pieces every launch is made of in
cuda_kernels/launch_steps.py, stage 13's prepare in cuda_kernels/wgmma_launch.py.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from compare.families import decompose
from compare.harness.errors import UsageError
from compare.harness.registry import Kernel, Option, register

from . import loader
from .heuristics import (A_SPLIT_SMEM_MAX_N, WGMMA_SK_MAX_FILL, MAX_SPLITS, PATH_RULE, PATHS, REGB_BULK_MAX_N, SKINNY_MAX_N, cdiv, skinny_build, skinny_nb, skinny_plan,
                         skinny_short_plan, split_plan, stream_k_path, stream_k_tile, WGMMA_PATH_RULE, WGMMA_PATHS, wgmma_path)
from .launch_steps import (aligned_rows, chosen_by, function, gemm_args, geometry, launcher, needs_arch, operands,
                           tiles, with_config)
from .registry import (FAMILY, FIXUP_LANES, FIXUP_MANY_PARTIALS, FIXUP_THREADS, PIPELINE_TILES, SINGLE, SKINNY_SUM,
                       SKINNY_B, SKINNY_SHORT_MAX_K, SKINNY_SUM_MANY_RANGES, SPECS, SPLIT_K, STREAM_K,
                       STREAM_K_TILES, TF32_DEFAULT_TILE, TF32_PRECISIONS, TF32_TILES, WGMMA, B_TRANSPOSE_CHOICES,
                       B_UNALIGNED_CHOICES, A_SPLIT_CHOICES,
                       Config, StageSpec)
from .wgmma_launch import wgmma_prepare


def _vec_requirement(problem) -> Optional[str]:
    if aligned_rows(problem):
        return None
    return (f"float4 path needs N % 4 == 0 and K % 4 == 0 (16-byte aligned rows of A, B and C); "
            f"got N={problem.N}, K={problem.K}")


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
        out.append(Option.choice("b_unaligned", "on the swap path, how B is read where N % 4 != 0 (TMA needs 16-byte "
                                 f"row strides): bulk (N <= {REGB_BULK_MAX_N}: one bulk copy of 32 whole rows of B per "
                                 "K tile, no copy of B), cp_async (the producer warpgroup copies B's rows in 16-byte "
                                 "chunks with cp.async, no copy of B) or pad (one copy pads B's rows to 16 bytes "
                                 "first, then TMA); bulk and cp_async need B 16-byte aligned (else pad); default: "
                                 f"bulk where N <= {REGB_BULK_MAX_N}, else cp_async where one row of tiles covers M "
                                 "and N >= 32 (B read once), else pad", B_UNALIGNED_CHOICES))
        out.append(Option.choice("a_split", "tf32x3 on the swap path: where A is split into big + small TF32 parts: "
                                 "smem (the GEMM's producer warpgroup splits each raw tile TMA loads, A read once; "
                                 "rows padded by a copy first where K % 4 != 0 or A is not 16-byte aligned) or copy "
                                 "(one copy writes both parts first: A read, written twice, read twice); default: "
                                 f"smem where N <= {A_SPLIT_SMEM_MAX_N}, else copy", A_SPLIT_CHOICES))
        gemms = tuple(c.label for c in spec.configs if c.kernel.startswith("sgemm_")
                      and not c.label.endswith((".cpasync", ".bulk", ".sk")) and ".asplit" not in c.label)
        out.append(Option.choice("tile", "block tile of the GEMM (default: the register-operand path's tile the split-K "
                                  "model times fastest; the copy path has one per precision), one of "
                                  + ", ".join(gemms), gemms))
    if spec.plan in (SPLIT_K, WGMMA):
        out.append(Option.count("split_k", "K splits, >= 1 (1 = no split; default: the split-K cost model)"))
    if spec.plan == WGMMA:
        out.append(Option.choice("mode", "the register-operand path's decomposition: dp (no stream-K: a tile per block, K "
                                  "split as split_k or the split-K model says), sk (every tile's K tiles spread over "
                                  "one block per SM) or hybrid (the last partial wave's tiles plus one wave stream-K, "
                                  "the rest data-parallel); default: sk where tf32x3 splits nothing and its tiles fill "
                                  f"at most {WGMMA_SK_MAX_FILL} of the SMs, else dp (wgmma_decomposition)", decompose.MODES))
        out.append(Option.count("grid", "stream-K blocks, >= 1 (default: one per SM, fewer where K is short)"))
        out.append(Option.choice("path", f"auto ({WGMMA_PATH_RULE}: the stage 11 kernels in fp32, no tensor cores; "
                                  "tile where a tensor-core option is set), tile (the wgmma launch), gemv (M == 1 "
                                  f"only), skinny_n (N <= {SKINNY_MAX_N} only) or ffma (stage 11's tile plan, "
                                  "fp32 FFMA)", WGMMA_PATHS))
    if spec.plan == STREAM_K:
        out.append(Option.choice("mode", "dp (no stream-K), sk (every tile stream-K) or hybrid (two-tile stream-K + "
                                  "data-parallel waves); default from the wave count", decompose.MODES))
        out.append(Option.count("grid", "stream-K blocks, >= 1 (default: SMs x blocks per SM)"))
        if spec.variant != "atomic":
            out.append(Option.choice("path", f"auto ({PATH_RULE}; tile where tile, mode or grid is set), tile, gemv "
                                      f"(M == 1 only) or skinny_n (N <= {SKINNY_MAX_N} only)", PATHS))
            out.append(Option.count("k_splits", "K ranges of the gemv / skinny_n paths, >= 1 (1 = no split; default: "
                                          "decompose.skinny_split's bandwidth model)"))
            out.append(Option.choice("skinny_b", f"skinny_n's build: chunked (B copied into shared memory 256 rows "
                                      f"of K at a time by every block of rows, K split over blocks) or resident "
                                      f"(K <= {SKINNY_SHORT_MAX_K} only: B copied once per persistent block, 4-8 "
                                      f"lanes per row of A, no K split); default: resident where K <= "
                                      f"{SKINNY_SHORT_MAX_K} and k_splits is not set", SKINNY_B))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# prepare / launch

def _pick_config(spec: StageSpec, problem, inputs, opts: dict, suffix: str = "") -> tuple[Config, bool, str]:
    """(configuration, float4 path?, tile label) for a single-kernel stage."""
    vec_only = spec.operands == "float4"
    _, _, _, aligned = operands(problem, inputs, vec_needed=vec_only)
    vec = vec_only or (aligned and aligned_rows(problem))
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
                raise UsageError(f"{spec.name}: tile {opts['tile']} has no {problem.precision} configuration "
                                 f"(its registers can't hold the split); {problem.precision} tiles: {', '.join(have)}")
        cfg, vec, tile = _pick_config(spec, problem, inputs, opts, suffix)
        _check_smem(spec, cfg)
        A, B, C, _ = operands(problem, inputs, vec_needed=False)
        grid = (tiles(problem, cfg), 1, 1)
        launch = launcher((function(spec, cfg), grid, cfg.block, gemm_args(problem, A, B, C), cfg.smem_dynamic))
        config = {"tile": tile, **geometry(cfg, grid), "operands": "float4" if vec else "scalar",
                  "chosen_by": chosen_by(dict(options or {})) if len(spec.tiles) > 1 else "fixed"}
        if len(spec.precisions) > 1:
            config["precision_path"] = ("3xTF32: big + small TF32 parts, 3 mma per product, summed by FADD"
                                        if suffix else "TF32: operands rounded to nearest (cvt.rna), 1 mma per product")
        if cfg.smem_dynamic:
            config["smem_bytes"] = cfg.smem_dynamic
        return with_config(launch, config)
    return prepare


def _split_k_prepare(spec: StageSpec):
    atomic = spec.variant == "atomic"
    spec09 = next(s for s in SPECS if s.stage == "double_buffered")

    def prepare(problem, inputs, options=None):
        opts = dict(options or {})
        be = loader.backend()
        M, N, K = problem.M, problem.N, problem.K
        tile = opts.get("tile") or spec.default_tile
        bk = PIPELINE_TILES[tile][0]
        A, B, C, aligned = operands(problem, inputs, vec_needed=False)
        vec = aligned and aligned_rows(problem)
        if opts.get("split_k", 1) > MAX_SPLITS:
            raise UsageError(f"{spec.name}: split_k={opts['split_k']} is more than {MAX_SPLITS} splits")
        splits, chunk = split_plan(M, N, K, be.sm_count(), bk=bk, atomic=atomic, splits=opts.get("split_k"))
        config = {"tile": tile, "split_k": splits, "k_chunk": chunk, "operands": "float4" if vec else "scalar",
                  "variant": spec.variant, "chosen_by": chosen_by(opts)}
        if splits == 1:
            # Nothing to split: the stage 09 kernel, no workspace, no second launch.
            cfg = spec09.config(f"{tile}.{'vec' if vec else 'scalar'}")
            grid = (tiles(problem, cfg), 1, 1)
            launch = launcher((function(spec09, cfg), grid, cfg.block, gemm_args(problem, A, B, C)))
            return with_config(launch, {**config, **geometry(cfg, grid), "reduction": "none (one split)"})

        cfg = spec.config(f"{tile}.{'vec' if vec else 'scalar'}{'.atomic' if atomic else ''}")
        gemm = function(spec, cfg)
        grid = (tiles(problem, cfg), 1, splits)
        MN = M * N
        if atomic:
            s_cfg = spec.config("scale_c")
            s_grid = (cdiv(MN, s_cfg.block[0]), 1, 1)
            g_args = (np.int32(M), np.int32(N), np.int32(K), np.int32(chunk), np.float32(problem.alpha), A, B, C)
            launch = launcher((function(spec, s_cfg), s_grid, s_cfg.block, (np.int32(MN), np.float32(problem.beta), C)),
                               (gemm, grid, cfg.block, g_args))
            return with_config(launch, {**config, **geometry(cfg, grid), "reduction": "atomicAdd into C"})

        ws = be.empty(splits * MN)  # allocated once per prepare; every launch reuses it
        vec4 = MN % 4 == 0 and aligned
        red_cfg = spec.config("reduce.vec4" if vec4 else "reduce.scalar")
        r_grid = (cdiv(MN // 4 if vec4 else MN, red_cfg.block[0]), 1, 1)
        g_args = (np.int32(M), np.int32(N), np.int32(K), np.int32(chunk), np.float32(1.0), A, B, ws)
        r_args = (np.int32(MN), np.int32(splits), np.float32(problem.alpha), ws, np.float32(problem.beta), C)
        launch = launcher((gemm, grid, cfg.block, g_args), (function(spec, red_cfg), r_grid, red_cfg.block, r_args))
        return with_config(launch, {**config, **geometry(cfg, grid),
                                     "reduction": "workspace, fixed order" + (" (float4)" if vec4 else "")})
    return prepare


# Stage 11's options that shape its tile plan (the ``path`` option's ``tile``).
STREAM_K_TILE_OPTIONS = ("tile", "mode", "grid")


def _resolve_path(spec: StageSpec, problem, opts: dict, tile_options: tuple = STREAM_K_TILE_OPTIONS,
                  rule=None) -> str:
    """The path the ``path`` option (or its auto rule) gives this problem; a UsageError where the
    option asks for one that can't take it or combines a skinny path with the tile plan's options
    (``tile_options``: the kernel's; ``rule``: its auto rule, (M, N, K) -> path, stage 11's by default)."""
    M, N = problem.M, problem.N
    path = opts.get("path", "auto")
    tile_opts = [o for o in tile_options if o in opts]
    if path == "auto":
        path = "tile" if tile_opts else (rule or stream_k_path)(M, N, problem.K)
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


def _resolve_skinny_b(spec: StageSpec, path: str, problem, opts: dict) -> Optional[str]:
    """skinny_n's build (None off skinny_n); a UsageError where skinny_b is set for another path or
    asks for the resident build on a problem it can't take."""
    build = opts.get("skinny_b")
    if build is None:
        if path != "skinny_n":
            return None
        return "resident" if problem.K <= SKINNY_SHORT_MAX_K and "k_splits" not in opts else "chunked"
    if path != "skinny_n":
        raise UsageError(f"{spec.name}: skinny_b chooses the skinny_n path's build (N <= {SKINNY_MAX_N}); this "
                         f"problem (N={problem.N}) takes the {path} path")
    if build == "resident" and problem.K > SKINNY_SHORT_MAX_K:
        raise UsageError(f"{spec.name}: skinny_b=resident holds all of B in shared memory and takes K <= "
                         f"{SKINNY_SHORT_MAX_K}; this problem has K={problem.K}")
    if build == "resident" and "k_splits" in opts:
        raise UsageError(f"{spec.name}: skinny_b=resident has no K split (K <= {SKINNY_SHORT_MAX_K} is one range); "
                         f"k_splits set")
    return build


def _skinny_short_launch(spec: StageSpec, problem, inputs, opts: dict):
    """skinny_short: B resident in shared memory, a persistent grid over groups of rows, no K split."""
    be = loader.backend()
    M, N, K = problem.M, problem.N, problem.K
    A, B, C, _ = operands(problem, inputs, vec_needed=False)
    nb = skinny_nb(N)
    a_aligned = be.address(A) % 16 == 0  # a view of a larger buffer may start anywhere
    vec = K % 4 == 0 and a_aligned
    lanes, rows, blocks = skinny_short_plan(M, N, K, be.sm_count())
    cfg = spec.config(f"skinny_short{nb}.l{lanes}.{'vec' if vec else 'scalar'}")
    grid = (blocks, 1, 1)
    args = (np.int32(M), np.int32(N), np.int32(K), np.float32(problem.alpha), A, B, np.float32(problem.beta), C)
    config = {"path": "skinny_n", "skinny_b": "resident", "path_rule": PATH_RULE, "tile": f"{rows}x{nb}",
              **geometry(cfg, grid), "operands": "float4" if vec else "scalar",
              "streamed": (f"A (M x K) read once, {_load_width(vec)} loads along K; B (K x N) copied "
                           "into shared memory once per persistent block"),
              "lanes_per_row": lanes, "row_groups": cdiv(M, rows), "variant": spec.variant,
              "k_splits": 1, "k_per_split": K, "fixup": "none (one K range)", "chosen_by": chosen_by(opts)}
    return with_config(launcher((function(spec, cfg), grid, cfg.block, args)), config)


def _load_width(vec: bool) -> str:
    """How a bandwidth-bound build reads its streamed operand, for the row's config."""
    return "16-byte" if vec else "4-byte"


def _skinny_launch(spec: StageSpec, path: str, problem, inputs, opts: dict):
    """gemv_row / skinny_n over (output blocks, K ranges), then, with more than one range, the
    fixed-order sum of the ranges' partials."""
    be = loader.backend()
    M, N, K = problem.M, problem.N, problem.K
    A, B, C, _ = operands(problem, inputs, vec_needed=False)
    if path == "gemv":
        vec = N % 4 == 0 and be.address(B) % 16 == 0
        cfg = spec.config(f"gemv.{'vec' if vec else 'scalar'}")
        count = N
    else:
        vec = K % 4 == 0 and be.address(A) % 16 == 0
        cfg = spec.config(skinny_build(M, N, K, vec, be.sm_count()))
        count = M * N
    blocks, splits, kps = skinny_plan(path, M, N, K, be.sm_count(), opts.get("k_splits"), vec=vec)
    if splits > 65535:  # gridDim.y
        raise UsageError(f"{spec.name}: k_splits={opts.get('k_splits')} gives {splits} K ranges; the grid's y "
                         f"dimension holds at most 65535")
    grid = (blocks, splits, 1)
    ws = be.empty(splits * count) if splits > 1 else C  # allocated once per prepare; every launch reuses it
    alpha, beta = np.float32(problem.alpha), np.float32(problem.beta)
    dims = (np.int32(N), np.int32(K)) if path == "gemv" else (np.int32(M), np.int32(N), np.int32(K))
    steps = [(function(spec, cfg), grid, cfg.block, (*dims, np.int32(kps), alpha, A, B, beta, C, ws))]
    if splits > 1:
        sum_label = "skinny.sum.l32" if splits >= SKINNY_SUM_MANY_RANGES else "skinny.sum.l1"
        s_cfg = spec.config(sum_label)
        steps.append((function(spec, s_cfg), (cdiv(count, SKINNY_SUM[sum_label][0]), 1, 1), s_cfg.block,
                      (np.int32(count), np.int32(splits), alpha, ws, beta, C)))
    bm, bn = cfg.tile
    config = {"path": path, **({"skinny_b": "chunked"} if path == "skinny_n" else {}), "path_rule": PATH_RULE,
              "tile": f"{bm}x{bn}", **geometry(cfg, grid), "operands": "float4" if vec else "scalar",
              "streamed": (f"B (K x N) read once, {_load_width(vec)} loads along N" if path == "gemv" else
                           f"A (M x K) read once, {_load_width(vec)} loads along K; B (K x N) by each block of rows, "
                           "through shared memory"),
              **({"lanes_per_row": cfg.targs[2]} if path == "skinny_n" else {}),
              "variant": spec.variant, "k_splits": splits, "k_per_split": kps,
              "fixup": ("none (one K range)" if splits == 1 else
                        f"workspace, K ranges summed in a fixed order by a second kernel "
                        f"({SKINNY_SUM[sum_label][1]} lane{'s' if SKINNY_SUM[sum_label][1] > 1 else ''} per output)"),
              "chosen_by": chosen_by(opts)}
    launch = launcher(*steps)
    return with_config(launch, config)


def _stream_k_prepare(spec: StageSpec):
    atomic = spec.variant == "atomic"

    def prepare(problem, inputs, options=None):
        opts = dict(options or {})
        be = loader.backend()
        M, N, K = problem.M, problem.N, problem.K
        path = "tile" if atomic else _resolve_path(spec, problem, opts)
        build = None if atomic else _resolve_skinny_b(spec, path, problem, opts)
        if build == "resident":
            return _skinny_short_launch(spec, problem, inputs, opts)
        if path != "tile":
            return _skinny_launch(spec, path, problem, inputs, opts)
        tile = opts.get("tile") or stream_k_tile(M, N, K, be.sm_count())
        bm, bn, bk, _, _, blocks_per_sm = STREAM_K_TILES[tile]
        A, B, C, aligned = operands(problem, inputs, vec_needed=False)
        vec = aligned and aligned_rows(problem)
        try:
            plan = decompose.stream_k_plan(cdiv(M, bm) * cdiv(N, bn), cdiv(K, bk), be.sm_count(), blocks_per_sm,
                                           mode=opts.get("mode"), sk_blocks=opts.get("grid"))
        except ValueError as exc:
            raise UsageError(f"{spec.name}: {exc}") from None
        cfg = spec.config(f"{tile}.{'vec' if vec else 'scalar'}{'.atomic' if atomic else ''}")
        grid = (plan.grid, 1, 1)
        split = plan.sk_tiles > 0
        ws = be.empty(plan.sk_blocks * 2 * bm * bn) if split and not atomic else C
        g_args = (*gemm_args(problem, A, B, C), ws, np.int32(plan.sk_tiles), np.int32(plan.sk_blocks),
                  np.int32(plan.iters_per_block), np.int32(plan.extra_iters))
        steps = [(function(spec, cfg), grid, cfg.block, g_args)]
        fix = "none (no stream-K tiles)"
        if split and atomic:
            p_cfg = spec.config(f"prescale.{tile}")
            p_args = (np.int32(M), np.int32(N), np.int32(K), np.float32(problem.beta), C,
                      np.int32(plan.iters_per_block), np.int32(plan.extra_iters), np.int32(bk))
            steps.insert(0, (function(spec, p_cfg), (plan.sk_tiles, bm * bn // (4 * FIXUP_THREADS), 1),
                             p_cfg.block, p_args))
            fix = "beta*C on split tiles, then atomicAdd"
        elif split:
            partials = decompose.most_partials(plan.iters_per_tile, plan.iters_per_block)
            lanes = FIXUP_LANES[-1] if partials >= FIXUP_MANY_PARTIALS else FIXUP_LANES[0]
            f_cfg = spec.config(f"fixup.{tile}.{'vec' if vec else 'scalar'}.l{lanes}")
            f_args = (np.int32(M), np.int32(N), np.int32(K), np.float32(problem.alpha), np.float32(problem.beta), C,
                      ws, np.int32(plan.iters_per_block), np.int32(plan.extra_iters), np.int32(bk))
            cols = FIXUP_THREADS // lanes
            steps.append((function(spec, f_cfg), (plan.sk_tiles, bm * bn // (4 * cols), 1), f_cfg.block, f_args))
            fix = f"workspace, summed in a fixed order ({lanes} lane{'s' if lanes > 1 else ''} per column)"
        config = {**({} if atomic else {"path": "tile", "path_rule": PATH_RULE}),
                  "tile": tile, **geometry(cfg, grid), "operands": "float4" if vec else "scalar",
                  "variant": spec.variant, **{k: v for k, v in plan.as_dict().items() if k not in ("chosen_by", "grid")},
                  "fixup": fix, "chosen_by": chosen_by(opts)}
        launch = launcher(*steps)
        launch.plan = plan  # for tests
        return with_config(launch, config)
    return prepare


# Stage 13's options that shape its tensor-core launch (the ``path`` option's ``tile``).
WGMMA_TILE_OPTIONS = ("tile", "split_k", "b_transpose", "b_unaligned", "a_split", "mode", "grid")
# Why stage 13 hands a product to stage 11's bandwidth-bound paths, in its rows' config.
BANDWIDTH_PRECISION = ("fp32 FFMA on stage 11's bandwidth-bound path, not the tensor cores: the product is a stream "
                       "of one operand (at most 4 flops per byte of it), so time is DRAM bandwidth, not multiply "
                       "rate; fp32 is exact, within {precision}'s error")
# Why stage 13 hands tf32x3's narrow tile problems to stage 11's tile plan (heuristics.WGMMA_PATH_RULE).
FFMA_PRECISION = ("fp32 FFMA on stage 11's tile plan, not the tensor cores: with N <= 64 a wgmma tile (64 columns a "
                  "consumer warpgroup, 128 a tile) computes at least twice the columns N has, three wgmma each in "
                  "tf32x3, where stage 11's tiles are 32 or 64 wide; fp32 is exact, within {precision}'s error")


def _wgmma_paths_prepare(spec: StageSpec):
    """Stage 13 as the family's general tensor-core kernel: the tile plan (wgmma_prepare) for tile
    problems; a single row or N <= 8 (``WGMMA_PATH_RULE``, the ``path`` option's ``auto``) go to stage
    11's bandwidth-bound paths, as cuBLAS runs GEMV-class kernels there in TF32 mode too, and tf32x3
    with N <= 64 and M >= 65 to stage 11's tile plan (ffma); the row's config says so (``precision_path``)."""
    tensor = wgmma_prepare(spec)
    stream_k = next(s for s in SPECS if s.plan == STREAM_K and s.variant == "deterministic")
    stream_k_tile = _stream_k_prepare(stream_k)

    def prepare(problem, inputs, options=None):
        opts = dict(options or {})
        why = needs_arch(spec)(problem)
        if why:
            raise UsageError(f"{spec.name}: {why}")
        path = _resolve_path(spec, problem, opts, WGMMA_TILE_OPTIONS,
                             rule=lambda M, N, K: wgmma_path(M, N, K, problem.precision))
        opts.pop("path", None)
        if path == "tile":
            launch = tensor(problem, inputs, opts)
            launch.config = {"path": "tile", "path_rule": WGMMA_PATH_RULE, **launch.config}
            return launch
        if path == "ffma":
            launch = stream_k_tile(problem, inputs, {"path": "tile"})
            launch.config = {**launch.config, "path": "ffma", "path_rule": WGMMA_PATH_RULE,
                             "runs": f"{stream_k.name}'s tile path", "chosen_by": chosen_by(dict(options or {})),
                             "precision_path": FFMA_PRECISION.format(precision=problem.precision)}
            return launch
        build = _resolve_skinny_b(stream_k, path, problem, {})
        launch = (_skinny_short_launch(stream_k, problem, inputs, {}) if build == "resident" else
                  _skinny_launch(stream_k, path, problem, inputs, {}))
        launch.config = {**launch.config, "path_rule": WGMMA_PATH_RULE, "runs": f"{stream_k.name}'s {path} path",
                         "chosen_by": chosen_by(dict(options or {})),
                         "precision_path": BANDWIDTH_PRECISION.format(precision=problem.precision)}
        return launch
    return prepare


_PREPARE = {SINGLE: _single_prepare, SPLIT_K: _split_k_prepare, STREAM_K: _stream_k_prepare, WGMMA: _wgmma_paths_prepare}


def _supports_any(problem) -> Optional[str]:
    return None


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
        supports=(needs_arch(spec) if spec.arch else
                  _vec_requirement if spec.operands == "float4" else _supports_any),
        variant=spec.variant, idea=spec.description, options=_options(spec), meta=_meta(spec)))


KERNELS: list[Kernel] = [_register(s) for s in SPECS]
