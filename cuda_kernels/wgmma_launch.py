"""Stage 13 launched (13_wgmma_tma.cu): the operand copies (B's rows padded where N % 4 != 0 and
b_unaligned=pad, or B^T with b_transpose=copy; A where K % 4 != 0, its address is not 16-byte
aligned, or for the tf32x3 split: A's and B's row copies in one pad_rows launch), their TMA tensor
maps, the GEMM (tile and K splits from the shared split-K model: cuda_kernels/heuristics.py) and
the split-K reduction, all in one timed launch.
"""
from __future__ import annotations

import numpy as np

from compare.harness.errors import UsageError

from . import loader, tma
from .heuristics import (REGB_BULK_MAX_N, WGMMA_MAX_SPLITS, cdiv, regb_a_split, regb_b_unaligned, regb_tile,
                         wgmma_decomposition)
from .launch_steps import chosen_by, function, geometry, launcher, needs_arch, operands, tiles, with_config
from .registry import B_LOADS, REGB_TILES, WGMMA_TILES, StageSpec, regb_label

# pad_rows' modes (13_wgmma_tma.cu, PadMode): values as they are, rounded to TF32, split into big + small.
PAD_AS_IS, PAD_ROUND, PAD_SPLIT = 0, 1, 2


def wgmma_prepare(spec: StageSpec):
    """Stage 13: the operand copies (B's rows padded where N % 4 != 0 and b_unaligned=pad, or B^T
    with b_transpose=copy; A where K % 4 != 0, its address is not 16-byte aligned, or for the tf32x3 split), their tensor
    maps, the GEMM (tile and K splits from the shared split-K model), the split-K reduction; all
    in one timed launch."""
    def prepare(problem, inputs, options=None):
        opts = dict(options or {})
        why = needs_arch(spec)(problem)
        if why:
            raise UsageError(f"{spec.name}: {why}")
        be = loader.backend()
        M, N, K = problem.M, problem.N, problem.K
        bn, stages, split3 = WGMMA_TILES[problem.precision]
        cfg = spec.config(f"128x{bn}x32s{stages}{'.x3' if split3 else ''}")
        A, B, C, _ = operands(problem, inputs, vec_needed=False)
        kp = cdiv(K, 4) * 4  # TMA: row strides a multiple of 16 bytes
        if max(cdiv(K, 32), cdiv(M, 32)) > 65535:
            raise UsageError(f"{spec.name}: the operand copy's grid has at most 65535 tiles of 32 rows; "
                             f"M={M}, K={K}")
        steps, held = [], []

        def transpose(src, rows, cols, split):   # B^T (cols x kp), rounded to TF32 (and split)
            big = be.empty(cols * kp)
            small = be.empty(cols * kp) if split else big
            held.extend((big, small))
            p_cfg = spec.config(f"prepare.transpose{'.split' if split else ''}")
            grid = (cdiv(cols, 32), cdiv(rows, 32), 1)
            steps.append((function(spec, p_cfg), grid, p_cfg.block,
                          (src, np.int32(rows), np.int32(cols), big, small, np.int32(kp))))
            return big, small

        pads = []   # (src, rows, cols, out, ld, out_small, mode): A's and B's, one pad_rows launch for both

        def pad(src, rows, cols, mode=PAD_AS_IS):
            """Rows padded to a multiple of 4 floats (TMA's 16-byte stride): values as they are, rounded
            to TF32 (PAD_ROUND) or split into big + small TF32 parts (PAD_SPLIT): (out, small, ld)."""
            ld = cdiv(cols, 4) * 4
            out = be.empty(rows * ld)
            small = be.empty(rows * ld) if mode == PAD_SPLIT else None
            held.extend(x for x in (out, small) if x is not None)
            if not pads:
                steps.append(None)   # the launch's place, filled once every pad is known (pad_launch)
                pads.append(len(steps) - 1)
            pads.append((src, np.int32(rows), np.int32(cols), out, np.int32(ld),
                         np.uint64(0) if small is None else small, np.int32(mode)))
            return out, (out if small is None else small), ld

        def pad_launch():
            if not pads:
                return
            at, *jobs = pads
            assert len(jobs) <= 2, "pad_rows takes two matrices (A's rows and B's)"
            p_cfg = spec.config("pad_rows")
            floats = sum(int(job[1]) * int(job[2]) for job in jobs)
            none = (np.uint64(0), np.int32(0), np.int32(0), np.uint64(0), np.int32(0), np.uint64(0), np.int32(0))
            steps[at] = (function(spec, p_cfg), (min(cdiv(floats, 256), 16 * be.sm_count()), 1, 1), p_cfg.block,
                         (*jobs[0], *(jobs[1] if len(jobs) > 1 else none)))

        b_as_stored = N % 4 == 0 and be.address(B) % 16 == 0
        b_path = opts.get("b_transpose") or "swap"
        _check_options(spec, problem, opts, split3, b_path)
        # B at an address TMA and the in-GEMM loads (bulk and cp_async read B's own 16-byte units)
        # can't take is padded whatever the tile.
        b_unaligned = opts.get("b_unaligned") if be.address(B) % 16 == 0 else "pad"
        cfg = _wgmma_tile(spec, problem, opts, split3, cfg, b_path, be.sm_count(), b_unaligned)
        if b_path == "copy":
            bt, bts = transpose(B, K, N, split3)
        a_aligned = K % 4 == 0 and be.address(A) % 16 == 0
        a_raw = split3 and b_path == "swap" and (opts.get("a_split") or regb_a_split(N)) == "smem"
        if a_raw:   # the GEMM splits A's raw tiles in shared memory
            copied_a = "" if a_aligned else "padded"
            a, a_s, lda = (A, A, K) if a_aligned else pad(A, M, K)
        elif split3 or not a_aligned:
            copied_a = "split" if split3 else "rounded"
            a, a_s, lda = pad(A, M, K, PAD_SPLIT if split3 else PAD_ROUND)
        else:
            copied_a = ""
            a, a_s, lda = A, A, K
        b_load = "tma"
        if b_path == "swap" and N % 4 != 0:
            choice = b_unaligned or regb_b_unaligned(M, N, cfg.tile[0])
            b_load = "tma" if choice == "pad" else choice   # pad: a copy, then TMA reads it
        if b_path == "swap":
            cfg = spec.config(regb_label(cfg.targs[0], cfg.targs[1], split3, b_load, a_raw))
        b_rows = np.uint64(0)
        if b_load != "tma":   # the GEMM loads B's rows itself, from B as given
            tm = cfg.targs[0]
            b_rows = B
            a_map = tma.tensor_map(be.address(a), M, K, lda, tm)
            maps = (a_map, a_map, tma.tensor_map(be.address(a_s), M, K, lda, tm))   # tB unread: A's map fills it
        elif b_path == "swap":
            tm = cfg.tile[0]
            b, _, ldb = (B, B, N) if b_as_stored else pad(B, K, N)
            maps = (tma.tensor_map(be.address(a), M, K, lda, tm), tma.tensor_map(be.address(b), K, N, ldb, 32),
                    tma.tensor_map(be.address(a_s), M, K, lda, tm))
        else:
            maps = (tma.tensor_map(be.address(a), M, K, lda, 128), tma.tensor_map(be.address(bt), N, K, kp, bn),
                    tma.tensor_map(be.address(a_s), M, K, lda, 128), tma.tensor_map(be.address(bts), N, K, kp, bn))
        pad_launch()
        plan, sk, grid, cfg = _gemm_steps(spec, problem, cfg, maps, C, split3, opts,
                                          cfg.tile[0] if b_path == "swap" else 256, steps, held,
                                          (b_rows,) if cfg.kernel == "sgemm_wgmma_regb" else ())
        launch = launcher(*steps)
        launch.workspaces = held  # the tensor maps point into these: they live as long as the launch
        launch.plan = plan  # for tests
        launch.stream_k = sk
        config = _wgmma_config(cfg, grid, plan, sk, opts, kp=kp, N=N, split3=split3, b_path=b_path,
                               b_as_stored=b_as_stored, b_load=b_load, copied_a=copied_a, a_raw=a_raw)
        return with_config(launch, config)
    return prepare


def _check_options(spec: StageSpec, problem, opts: dict, split3: bool, b_path: str) -> None:
    """A UsageError, before anything is allocated, where stage 13's options contradict each other
    or the launch they would shape."""
    N = problem.N
    if opts.get("b_unaligned") and b_path != "swap":
        raise UsageError(f"{spec.name}: b_unaligned={opts['b_unaligned']} is an option of the swap path; "
                         f"b_transpose={b_path} copies B K-major whatever its rows")
    if opts.get("b_unaligned") == "bulk" and N > REGB_BULK_MAX_N:
        raise UsageError(f"{spec.name}: b_unaligned=bulk copies whole K rows of B, one column tile of "
                         f"{REGB_BULK_MAX_N}: N <= {REGB_BULK_MAX_N}; got N={N}")
    a_split = opts.get("a_split")
    if a_split and not (split3 and b_path == "swap"):
        raise UsageError(f"{spec.name}: a_split={a_split} is an option of tf32x3 on the swap path; "
                         f"this launch is {problem.precision} with b_transpose={b_path}")
    if opts.get("split_k", 1) > 1 and opts.get("mode") in ("sk", "hybrid"):
        raise UsageError(f"{spec.name}: split_k={opts['split_k']} and mode={opts['mode']} are two ways to split "
                         f"K; set one")
    if "grid" in opts and opts.get("mode") == "dp":
        raise UsageError(f"{spec.name}: grid sets the stream-K blocks; mode=dp has none")
    if (opts.get("mode") in ("sk", "hybrid") or "grid" in opts) and opts.get("b_transpose") == "copy":
        raise UsageError(f"{spec.name}: stream-K runs on the swap path; b_transpose=copy has split-K only")
    if opts.get("split_k", 1) > WGMMA_MAX_SPLITS:
        raise UsageError(f"{spec.name}: split_k={opts['split_k']} is more than {WGMMA_MAX_SPLITS} splits")


def _gemm_steps(spec: StageSpec, problem, cfg, maps: tuple, C, split3: bool, opts: dict, regb_rows: int,
                steps: list, held: list, extra: tuple = ()) -> tuple:
    """(plan, stream-K plan or None, grid, the GEMM's configuration): appends the GEMM to
    ``steps`` and its second pass: over (tiles, K splits) and, with more than one split, the
    fixed-order sum of the partials (splitk_reduce); or, on the register-operand path where ``wgmma_decomposition`` takes stream-K,
    stream-K blocks then data-parallel tiles, and the fixup summing split tiles' partials in block
    order. Workspaces go to ``held``. ``extra``: the
    GEMM's arguments after the tensor maps (the register-operand path's B rows)."""
    be = loader.backend()
    M, N, K = problem.M, problem.N, problem.K
    regb = cfg.kernel == "sgemm_wgmma_regb"
    try:
        plan, sk = wgmma_decomposition(M, N, K, be.sm_count(), cfg.tile, split3, regb_rows, splits=opts.get("split_k"),
                                       mode=opts.get("mode"), sk_blocks=opts.get("grid"), stream_k=regb)
    except ValueError as exc:
        raise UsageError(f"{spec.name}: {exc}") from None
    if sk:   # the stream-K build of the same tile
        cfg = spec.config(regb_label(*cfg.targs[:2], split3, next(b for b, (c, _) in B_LOADS.items() if c == cfg.targs[3]),
                                     cfg.targs[4], True))
    grid = (sk.grid, 1, 1) if sk else (tiles(problem, cfg), plan.splits, 1)
    partials = be.empty(plan.splits * M * N) if plan.splits > 1 else None
    ws = be.empty(sk.sk_blocks * 2 * cfg.tile[0] * cfg.tile[1]) if sk else None
    held.extend(x for x in (partials, ws) if x is not None)
    null = np.uint64(0)
    sk_args = ((ws, np.int32(sk.sk_tiles), np.int32(sk.sk_blocks), np.int32(sk.iters_per_block),
                np.int32(sk.extra_iters)) if sk else (null, np.int32(0), np.int32(0), np.int32(0), np.int32(0)))
    steps.append((function(spec, cfg), grid, cfg.block,
                  (*maps, *extra, np.int32(M), np.int32(N), np.int32(K), np.float32(problem.alpha),
                   np.float32(problem.beta), C, np.int32(cdiv(plan.chunk, cfg.bk)),
                   partials if partials is not None else null, *(sk_args if regb else ())), cfg.smem_dynamic))
    if partials is not None:
        r_cfg = spec.config("splitk_reduce")
        r_grid = (min(cdiv(M * N, r_cfg.block[0]), 16 * be.sm_count()), 1, 1)
        steps.append((function(spec, r_cfg), r_grid, r_cfg.block,
                      (np.int32(M * N), np.int32(plan.splits), np.float32(problem.alpha), partials,
                       np.float32(problem.beta), C)))
    if sk:
        tm = cfg.tile[0]
        f_cfg = spec.config(f"sk_fixup.{tm}")
        steps.append((function(spec, f_cfg), (sk.sk_tiles, tm * cfg.tile[1] // (4 * f_cfg.block[0]), 1), f_cfg.block,
                      (np.int32(M), np.int32(N), np.int32(K), np.float32(problem.alpha), np.float32(problem.beta),
                       C, ws, np.int32(sk.iters_per_block), np.int32(sk.extra_iters))))
    return plan, sk, grid, cfg


def _wgmma_tile(spec: StageSpec, problem, opts: dict, split3: bool, cfg, b_path: str, sms: int,
                b_unaligned: str | None = None):
    """Stage 13's kernel configuration: on the register-operand path the tile --opt tile names,
    else regb_tile's choice for the shape (``b_unaligned``: how B's rows are read where N % 4 !=
    0, None for the default's per-tile choice); on the copy path its one tile (an --opt tile naming
    another is refused)."""
    M, N, K = problem.M, problem.N, problem.K
    if b_path == "swap":
        labels = [regb_label(tm, st, split3) for tm, st in REGB_TILES[problem.precision]]
        if opts.get("tile") and opts["tile"] not in labels:
            raise UsageError(f"{spec.name}: tile={opts['tile']} is not a {problem.precision} tile of the "
                             f"register-operand path; one of {', '.join(labels)}")
        tm, stages = (next(t for t in REGB_TILES[problem.precision] if regb_label(*t, split3) == opts["tile"])
                      if opts.get("tile") else
                      regb_tile(M, N, K, sms, problem.precision, opts.get("split_k"), b_unaligned))
        return spec.config(regb_label(tm, stages, split3))
    if opts.get("tile") and opts["tile"] != cfg.label:
        raise UsageError(f"{spec.name}: tile={opts['tile']}: the copy path of {problem.precision} has the one "
                         f"tile {cfg.label}")
    return cfg


def _wgmma_config(cfg, grid, plan, sk, opts: dict, *, kp: int, N: int, split3: bool, b_path: str, b_as_stored: bool,
                  b_load: str, copied_a: str, a_raw: bool) -> dict:
    """The row's config of a stage 13 launch: tile, geometry, split-K and how each operand is read."""
    return {"tile": cfg.label, **geometry(cfg, grid), "stages": cfg.targs[1], "smem_bytes": cfg.smem_dynamic,
            "split_k": plan.splits, "k_chunk": plan.chunk,
            "reduction": ("partial tiles in a workspace, summed in split order (splitk_reduce)"
                          if plan.splits > 1 else
                          "stream-K tiles' partials in a workspace, summed in block order (regb_stream_k_fixup)"
                          if sk else "none (one split)"),
            **({"mode": sk.mode, "sk_tiles": sk.sk_tiles, "sk_blocks": sk.sk_blocks, "iters_per_block": sk.iters_per_block,
                "waves": sk.waves} if sk else {"mode": "dp"}),
            "b_transpose": (f"B copied to K-major B^T (N x {kp}) each launch, rounded to TF32"
                            f"{' and split' if split3 else ''}" if b_path == "copy"
                            else ("B read by TMA as stored" if b_as_stored else
                                  "B's rows loaded as stored by the producer warpgroup (16-byte cp.async, no copy)"
                                  if b_load == "cp_async" else
                                  "B's rows loaded as stored, one bulk copy of 32 whole rows per K tile (no copy)"
                                  if b_load == "bulk" else
                                  f"B's rows padded to {cdiv(N, 4) * 4} floats (a copy each launch) for TMA")
                                 + "; C^T = B^T A^T with B^T's fragments loaded from shared memory into "
                                   "registers, rounded to TF32" + (" and split into big + small there" if split3 else "")),
            "a_operand": ((f"rows padded to {kp} floats (a copy each launch), " if copied_a == "padded" else
                           "read by TMA as given, ")
                          + "split into big + small TF32 parts in shared memory by the producer warpgroup"
                          if a_raw else
                          f"copied (M x {kp}), {'split' if copied_a == 'split' else 'rounded to TF32'}" if copied_a
                          else "read by TMA as given (the tensor cores truncate to TF32)"),
            "precision_path": ("3xTF32: big + small TF32 parts of A and B^T, 3 wgmma per k8 into a temporary "
                               "per 32 of K, added by FADD" if split3 else
                               "TF32: 1 wgmma per k8, accumulated in the tensor cores"),
            "chosen_by": chosen_by(opts)}
