"""Direct sweep of fp32 (ieee/FFMA) configurations for stages "tiled" and "split_k", bypassing
the autotuner: every candidate calls the jitted kernel with explicit meta-parameters.

    python -m triton_kernels.sweep -o sweep.json            # full, < 180 s on one H100/H200
    python -m triton_kernels.sweep --quick -o sweep.json    # ~1/3 of the candidates
    python -m triton_kernels.sweep --interpret-smoke        # 2 configs, 64x64x64, CPU interpreter

Per candidate: first launch (compile, or a disk-cache hit) -> checked run on a NaN-poisoned C
(compare.check.check against the float64 reference; a wrong candidate is reported, not timed)
-> compare.timing.measure(launch, before=inputs.reset_c, budget_s=0.3).

Compile time: a pool of spawned worker processes compiles the candidates ahead of the main
process (``JITFunction.warmup`` with dtype stand-ins, same specialisation as the real call), in
the order they will be timed, so the main process mostly reads Triton's on-disk cache while the
GPU times the previous candidate. If the pool fails, the main process compiles by itself
(slower, same results). A deadline (``--budget``, default 165 s from start, split over the
phases with unused time rolled over) stops a phase early; candidates are ordered most-plausible
first, and the JSON is rewritten after every phase.

Phases: tiled 4096^3 (all tiled candidates), tiled 8192^3 (the best ones from 4096^3, plus the
current autotune list), split-K 256x256x131072 and 512x512x65536 (deterministic and atomic).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

T_START = time.perf_counter()

# ---------------------------------------------------------------------------------------------
# Candidates (pure data; no triton import needed).

TILES = [(128, 128), (128, 256), (256, 128), (128, 64), (64, 128), (256, 64)]


def _acc_per_thread(bm, bn, warps):
    return bm * bn // (32 * warps)


def tiled_candidates(limit: int, smem_limit: int = 227 * 1024) -> list[dict]:
    """Ranked tiled fp32 candidates: the current autotune list first, then the grid
    {TILES} x BK {8,16,32} x warps {4,8} x stages {2,3,4}, GROUP_M 8, ranked by a penalty:
    accumulators per thread (64 ideal; 128 only with 8 warps: with 4 warps ptxas spills at
    255 registers; < 32 starves the FFMA pipe of independent chains), BLOCK_K (32 > 16 > 8: the
    per-k-step loop overhead and barrier are amortised over fewer FFMA at small BK), stages
    (3 > 4 > 2). Shared memory over the limit is dropped."""
    from_autotune = [(128, 128, 32, 8, 3), (128, 128, 32, 8, 4), (128, 128, 16, 8, 4),
                     (64, 256, 32, 8, 3), (64, 128, 32, 4, 4), (128, 64, 32, 4, 4)]
    scored = []
    for bm, bn in TILES:
        for warps in (4, 8):
            acc = _acc_per_thread(bm, bn, warps)
            if acc > 128 or acc < 32 or (acc == 128 and warps == 4):
                continue
            p_tile = {64: 0.0, 128: 1.0, 32: 2.0}[acc]
            if (bm, bn) == (256, 64):
                p_tile += 0.5          # tall-thin: B panel reuse poor, A panel 4x the B panel
            for bk in (32, 16, 8):
                for stages in (3, 4, 2):
                    smem = stages * (bm + bn) * bk * 4
                    if smem > smem_limit:
                        continue
                    p = p_tile + {32: 0.0, 16: 0.5, 8: 1.2}[bk] + {3: 0.0, 4: 0.3, 2: 0.8}[stages]
                    if bk == 8 and stages == 2:
                        p += 0.5
                    scored.append((p, (bm, bn, bk, warps, stages)))
    scored.sort(key=lambda t: t[0])
    out, seen = [], set()
    for cfg in from_autotune + [c for _, c in scored]:
        if cfg in seen:
            continue
        seen.add(cfg)
        bm, bn, bk, w, s = cfg
        out.append(dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w, num_stages=s,
                        origin="autotune" if cfg in from_autotune else "grid"))
        if len(out) >= limit:
            break
    return out


SPLIT_TILES = [  # (BM, BN, BK, warps, stages); the first two are in split_k.CONFIGS["ieee"]
    (128, 128, 32, 8, 3), (128, 128, 16, 8, 4), (64, 128, 32, 4, 4), (128, 64, 32, 4, 4),
    (128, 128, 32, 8, 4), (64, 128, 32, 4, 3), (64, 64, 32, 4, 4), (64, 64, 32, 4, 3),
]
SPLITS = (8, 16, 22, 33, 44, 66, 132)


def _cdiv(a, b):
    return (a + b - 1) // b


def split_geometry(K: int, S: int, align: int = 64) -> tuple[int, int]:
    """(S_eff, K_CHUNK) exactly as split_k.split_for does for an explicit split count."""
    chunk = _cdiv(_cdiv(K, S), align) * align
    return _cdiv(K, chunk), chunk


def split_candidates(M: int, N: int, K: int, limit: int, sms: int = 132,
                     baseline: tuple[int, int] | None = None) -> list[dict]:
    """Ranked (tile, S) pairs for one split-K shape. Rank: wave efficiency of the launch
    (programs / (waves * resident slots), slots = SMs x CTAs that fit by shared memory and
    registers), then tile order in SPLIT_TILES, then fewer programs. Programs outside
    [0.9 x SMs, 8 x SMs] or chunks < 512 are dropped. ``baseline`` = (S, index into SPLIT_TILES)
    of what the autotuned kernel currently runs, always included."""
    scored = []
    for ti, (bm, bn, bk, w, s) in enumerate(SPLIT_TILES):
        tiles = _cdiv(M, bm) * _cdiv(N, bn)
        smem = s * (bm + bn) * bk * 4
        acc = _acc_per_thread(bm, bn, w)
        regs = 255 if acc >= 64 else 128
        per_sm = max(1, min(228 * 1024 // (smem + 1024), 65536 // (32 * w * regs), 2048 // (32 * w)))
        for S in SPLITS:
            s_eff, chunk = split_geometry(K, S)
            programs = tiles * s_eff
            if chunk < 512 or not (0.9 * sms <= programs <= 8 * sms):
                continue
            slots = sms * per_sm
            eff = programs / (_cdiv(programs, slots) * slots)
            scored.append(((-round(eff, 2), ti, programs), (ti, S)))
    scored.sort(key=lambda t: t[0])
    picks = [p for _, p in scored]
    if baseline is not None:
        picks = [(baseline[1], baseline[0])] + [p for p in picks if p != (baseline[1], baseline[0])]
    # Every split count that survived the filters appears at least once (its best-ranked tile),
    # replacing the lowest-ranked picks: the occupancy model above is crude.
    chosen = picks[:limit]
    have = {split_geometry(K, S)[0] for _, S in chosen}
    for p in picks[limit:]:
        s_eff = split_geometry(K, p[1])[0]
        if s_eff not in have and len(chosen) > 1:
            counts = {}
            for q in chosen:
                counts[split_geometry(K, q[1])[0]] = counts.get(split_geometry(K, q[1])[0], 0) + 1
            # drop the last pick whose split count is represented more than once
            for i in range(len(chosen) - 1, 0, -1):
                if counts[split_geometry(K, chosen[i][1])[0]] > 1:
                    del chosen[i]
                    break
            else:
                continue
            chosen.append(p)
            have.add(s_eff)
    out = []
    for ti, S in chosen:
        bm, bn, bk, w, s = SPLIT_TILES[ti]
        s_eff, chunk = split_geometry(K, S)
        out.append(dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=w, num_stages=s,
                        S=s_eff, K_CHUNK=chunk,
                        origin="current" if baseline is not None and (ti, S) == (baseline[1], baseline[0]) else "grid"))
    return out


def cfg_name(c: dict) -> str:
    s = f"{c['BLOCK_M']}x{c['BLOCK_N']}x{c['BLOCK_K']} w{c['num_warps']} s{c['num_stages']}"
    if "S" in c:
        s += f" S={c['S']}"
    if "variant" in c:
        s += f" {c['variant'][:3]}"
    return s


# ---------------------------------------------------------------------------------------------
# Launchers (import triton lazily: --interpret-smoke sets TRITON_INTERPRET first).


def _bare(kernel):
    """The jitted function under @autotune / @heuristics."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    while isinstance(kernel, (Autotuner, Heuristics)):
        kernel = kernel.fn
    return kernel


META_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")


def _meta(c):
    return {k: c[k] for k in META_KEYS}


def tiled_args(M, N, K, A, B, C):
    """Positional args of tiled._tiled_kernel for fp32 direct operands (A, B may be dtypes for
    warmup)."""
    return (A, B, A, B, C, M, N, K, K, 1, N, 1, N, 1, 1.0, 0.0)


def tiled_launch(c, M, N, K, A, B, C):
    from . import tiled
    import triton
    fn = _bare(tiled._tiled_kernel)
    grid = (triton.cdiv(M, c["BLOCK_M"]) * triton.cdiv(N, c["BLOCK_N"]),)
    even = K % c["BLOCK_K"] == 0
    args = tiled_args(M, N, K, A, B, C)

    def launch():
        fn[grid](*args, PRECISION="ieee", PRESPLIT=False, HAS_BETA=False, EVEN_K=even, **_meta(c))
    return launch


def split_args(M, N, K, chunk, A, B, C, W):
    return (A, B, A, B, C, W, M, N, K, chunk, K, 1, N, 1, N, 1, 1.0, 0.0)


def split_launch(c, M, N, K, A, B, C, W):
    """The split-K kernel with explicit tile and split, + the reduction (deterministic) or a
    C.zero_() first (atomic): what split_k._Plan.launch does for fp32, beta = 0."""
    from . import split_k
    import triton
    fn = _bare(split_k._split_k_kernel)
    S, chunk = c["S"], c["K_CHUNK"]
    det = c["variant"] == "deterministic"
    mode = split_k.WORKSPACE if det else split_k.ATOMIC
    grid = (triton.cdiv(M, c["BLOCK_M"]) * triton.cdiv(N, c["BLOCK_N"]), S)
    even = K % c["BLOCK_K"] == 0 and chunk % c["BLOCK_K"] == 0
    args = split_args(M, N, K, chunk, A, B, C, W if det else C)
    RB = 1024
    rgrid = (triton.cdiv(M * N, RB),)

    def launch():
        if not det:
            C.zero_()
        fn[grid](*args, PRECISION="ieee", PRESPLIT=False, MODE=mode, HAS_BETA=False, EVEN_K=even,
                 **_meta(c))
        if det:
            split_k._reduce_kernel[rgrid](W, C, M, N, S, C.stride(0), C.stride(1), 1.0, 0.0,
                                          HAS_BETA=False, BLOCK=RB, num_warps=4)
    return launch


# ---------------------------------------------------------------------------------------------
# Ahead-of-time compilation in worker processes (fills Triton's disk cache).


def _warm_one(job):
    """Worker: compile one candidate without launching. Returns (job id, seconds, error)."""
    t0 = time.perf_counter()
    try:
        import torch
        import triton
        from . import split_k, tiled
        kind, c, shape = job["kind"], job["cfg"], job["shape"]
        M, N, K = shape
        f32 = torch.float32
        if kind == "tiled":
            fn = _bare(tiled._tiled_kernel)
            fn.warmup(*tiled_args(M, N, K, f32, f32, f32), grid=(1,), PRECISION="ieee", PRESPLIT=False,
                      HAS_BETA=False, EVEN_K=K % c["BLOCK_K"] == 0, **_meta(c))
        else:
            fn = _bare(split_k._split_k_kernel)
            det = c["variant"] == "deterministic"
            fn.warmup(*split_args(M, N, K, c["K_CHUNK"], f32, f32, f32, f32), grid=(1, 1),
                      PRECISION="ieee", PRESPLIT=False,
                      MODE=split_k.WORKSPACE if det else split_k.ATOMIC, HAS_BETA=False,
                      EVEN_K=K % c["BLOCK_K"] == 0 and c["K_CHUNK"] % c["BLOCK_K"] == 0, **_meta(c))
        return job["id"], time.perf_counter() - t0, None
    except Exception as exc:  # the main process compiles it itself
        return job["id"], time.perf_counter() - t0, f"{type(exc).__name__}: {exc}"[:200]


class Precompiler:
    def __init__(self, jobs: list[dict], workers: int):
        self.futures = {}
        self.pool = None
        if workers < 1 or not jobs:
            return
        try:
            import concurrent.futures as cf
            import multiprocessing as mp
            self.pool = cf.ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"))
            # Submit the function of the importable module, not of __main__ (python -m runs this
            # file as __main__; spawned workers unpickle by module name).
            from triton_kernels import sweep as _mod
            for j in jobs:
                self.futures[j["id"]] = self.pool.submit(_mod._warm_one, j)
        except Exception as exc:
            print(f"[sweep] precompile pool unavailable ({exc}); compiling in the main process", flush=True)
            self.pool = None

    def wait(self, job_id: str, timeout: float) -> str | None:
        f = self.futures.get(job_id)
        if f is None:
            return None
        try:
            _, _, err = f.result(timeout=max(0.0, timeout))
            return err
        except Exception as exc:
            return f"{type(exc).__name__}"

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


# ---------------------------------------------------------------------------------------------


def _sync(dev):
    if dev.type == "cuda":
        import torch
        torch.cuda.synchronize()


def evaluate(c: dict, problem, inputs, make_launch, timing: bool, budget_s: float) -> dict:
    """First launch (compile) -> checked run -> measure. Fills and returns a result row."""
    from compare.check import check
    row = dict(c, name=cfg_name(c), shape=problem.shape, ok=False)
    dev = inputs.device
    try:
        launch = make_launch()
        t0 = time.perf_counter()
        inputs.reset_c()
        launch()
        _sync(dev)
        row["first_call_s"] = round(time.perf_counter() - t0, 3)
        inputs.reset_c(poison=True)
        _sync(dev)
        launch()
        _sync(dev)
        res = check(problem, inputs.C, inputs.ref, inputs.bound)
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:300]
        return row
    row.update(ok=bool(res.ok), rel_err=res.rel_err, worst_err=res.worst_err)
    if not res.ok:
        row["error"] = res.message
        return row
    if timing:
        from compare.timing import measure
        m = measure(launch, before=inputs.reset_c, budget_s=budget_s)
        row.update(ms=m.median_s * 1e3, iqr_ms=m.iqr_s * 1e3, min_ms=m.min_s * 1e3, samples=m.samples,
                   tflops=problem.flops / m.median_s / 1e12, sm_clock_mhz=m.sm_clock_after_mhz,
                   throttled=m.throttled)
    return row


def print_table(title: str, rows: list[dict], top: int = 8, ref_tflops: float | None = None) -> None:
    timed = sorted([r for r in rows if r.get("tflops")], key=lambda r: -r["tflops"])
    bad = [r for r in rows if not r.get("ok")]
    print(f"\n== {title}: {len(rows)} tried, {len(timed)} timed, {len(bad)} wrong/error", flush=True)
    hdr = f"  {'config':34s} {'ms':>9s} {'TFLOP/s':>8s}" + (f" {'%cuBLAS':>7s}" if ref_tflops else "") + "  ok"
    print(hdr)
    for r in timed[:top]:
        pct = f" {100 * r['tflops'] / ref_tflops:7.1f}" if ref_tflops else ""
        tag = "" if r.get("origin", "grid") == "grid" else f"  [{r['origin']}]"
        print(f"  {r['name']:34s} {r['ms']:9.4f} {r['tflops']:8.2f}{pct}  ok{tag}")
    for r in bad[:4]:
        print(f"  {r['name']:34s} {'-':>9s} {'-':>8s}  FAIL {r.get('error', '')[:60]}")


# cuBLAS fp32 on the H200 (python -m compare), for the %cuBLAS column.
CUBLAS_FP32 = {"4096x4096x4096": 51.4, "8192x8192x8192": 50.9, "256x256x131072": 50.2, "512x512x65536": 50.4}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m triton_kernels.sweep", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="about a third of the candidates")
    ap.add_argument("-o", "--out", default="sweep.json", help="JSON file for every row (default sweep.json)")
    ap.add_argument("--budget", type=float, default=165.0, help="stop starting candidates after this many "
                    "seconds from process start (default 165)")
    ap.add_argument("--workers", type=int, default=None, help="compile worker processes (default: CPUs - 2, "
                    "at most 14; 0 = compile in the main process)")
    ap.add_argument("--measure-budget", type=float, default=0.3, help="timing.measure budget_s per candidate")
    ap.add_argument("--interpret-smoke", action="store_true",
                    help="2 configs per kernel on a 64x64x64 CPU problem under TRITON_INTERPRET=1 (no timing)")
    ap.add_argument("--list", action="store_true", help="print the candidates and exit (no GPU needed)")
    args = ap.parse_args(argv)

    if args.list:
        n_t, n_s = (10, 6) if args.quick else (30, 16)
        print(f"tiled fp32 4096^3 ({n_t}; best {4 if args.quick else 10} + autotune list re-run at 8192^3):")
        for c in tiled_candidates(n_t):
            print(f"  {cfg_name(c):28s} {c['origin']}")
        for (M, N, K), base_S in (((256, 256, 131072), 33), ((512, 512, 65536), 8)):
            print(f"split_k fp32 {M}x{N}x{K} (x deterministic, atomic):")
            for c in split_candidates(M, N, K, n_s, baseline=(base_S, 0)):
                print(f"  {cfg_name(c):28s} chunk {c['K_CHUNK']:6d} {c['origin']}")
        return 0

    if args.interpret_smoke:
        if os.environ.get("TRITON_INTERPRET", "0") in ("", "0"):
            # Triton picks interpreter vs compiler when @triton.jit decorates, and
            # `python -m triton_kernels.sweep` has imported the kernels already: start over.
            env = dict(os.environ, TRITON_INTERPRET="1")
            os.execve(sys.executable, [sys.executable, "-m", "triton_kernels.sweep",
                                       *(sys.argv[1:] if argv is None else argv)], env)

    import torch
    from compare.inputs import make_inputs
    from compare.problem import Problem
    from . import tiled  # noqa: F401  (imports triton under the right mode)
    from ._common import interpreting

    smoke = args.interpret_smoke
    if smoke and not interpreting():
        print("TRITON_INTERPRET did not take effect", file=sys.stderr)
        return 2
    if not smoke and not torch.cuda.is_available():
        print("no CUDA GPU: use --interpret-smoke on a CPU box", file=sys.stderr)
        return 2
    device = "cpu" if smoke else "cuda"
    budget = 1e9 if smoke else args.budget
    deadline_all = T_START + budget

    # Phase list: (title, kind, shape, candidates, weight)
    if smoke:
        t_cands = tiled_candidates(2)
        t_cands = [dict(c, BLOCK_M=32, BLOCK_N=32, BLOCK_K=bk, GROUP_M=2) for c, bk in zip(t_cands, (16, 32))]
        s_base = [dict(BLOCK_M=32, BLOCK_N=32, BLOCK_K=16, GROUP_M=2, num_warps=4, num_stages=3, S=2, K_CHUNK=32,
                       origin="smoke"),
                  dict(BLOCK_M=32, BLOCK_N=64, BLOCK_K=16, GROUP_M=2, num_warps=4, num_stages=3, S=4, K_CHUNK=16,
                       origin="smoke")]
        phases = [("tiled 64^3", "tiled", (64, 64, 64), t_cands, 1),
                  ("split_k 64^3", "split", (64, 64, 64),
                   [dict(c, variant=v) for c in s_base for v in ("deterministic", "atomic")], 1)]
        n8192 = 0
    else:
        n_t = 10 if args.quick else 30
        n_s = 6 if args.quick else 16
        n8192 = 4 if args.quick else 10
        t_cands = tiled_candidates(n_t)
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        phases = [("tiled fp32 4096^3", "tiled", (4096, 4096, 4096), t_cands, 3)]
        phases.append(("tiled fp32 8192^3", "tiled", (8192, 8192, 8192), None, 1.5))   # filled after 4096
        for (M, N, K), base_S in (((256, 256, 131072), 33), ((512, 512, 65536), 8)):
            sc = split_candidates(M, N, K, n_s, sms=sms, baseline=(base_S, 0))
            both = [dict(c, variant=v) for c in sc for v in ("deterministic", "atomic")]
            phases.append((f"split_k fp32 {M}x{N}x{K}", "split", (M, N, K), both, 2.5))

    # Compile jobs in timing order. tiled: M, N, K all divisible by 16 at 4096 and 8192, so one
    # binary serves both shapes; split: K_CHUNK is a multiple of 64, one binary per (tile, mode).
    jobs, job_of = [], {}
    for title, kind, shape, cands, _ in phases:
        for c in cands or []:
            key = (kind, tuple(sorted((k, v) for k, v in c.items() if k in META_KEYS or k == "variant")))
            if key not in job_of:
                job_of[key] = f"j{len(jobs)}"
                jobs.append(dict(id=job_of[key], kind=kind, cfg=c, shape=shape))
    if smoke:
        workers = 0
    else:
        ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 4)
        workers = args.workers if args.workers is not None else max(1, min(14, ncpu - 2))
    pre = Precompiler(jobs, workers)
    print(f"[sweep] {sum(len(p[3] or []) for p in phases)} candidates (+ 8192^3 re-runs), {len(jobs)} compiles, "
          f"{workers} compile workers, budget {budget:.0f}s", flush=True)

    out = dict(started=time.strftime("%Y-%m-%d %H:%M:%S"), quick=args.quick, smoke=smoke,
               device=torch.cuda.get_device_name(0) if not smoke else "cpu (TRITON_INTERPRET=1)",
               triton=__import__("triton").__version__, budget_s=budget, phases=[])

    def write():
        out["wall_s"] = round(time.perf_counter() - T_START, 1)
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1, default=str)

    rows_by_title = {}
    try:
        for pi, (title, kind, shape, cands, weight) in enumerate(phases):
            if cands is None:   # tiled 8192^3: best n8192 of 4096^3 + the autotune list
                prev = sorted([r for r in rows_by_title.get(phases[0][0], []) if r.get("tflops")],
                              key=lambda r: -r["tflops"])
                pick = [{k: r[k] for k in META_KEYS + ("origin",)} for r in prev[:n8192]]
                names = {cfg_name(c) for c in pick}
                pick += [c for c in t_cands if c["origin"] == "autotune" and cfg_name(c) not in names][:3 if args.quick else 6]
                cands = pick
            now = time.perf_counter()
            rest_w = sum(p[4] for p in phases[pi:])
            deadline = now + max(0.0, deadline_all - now) * weight / rest_w
            M, N, K = shape
            problem = Problem(M, N, K, "fp32")
            t_phase = time.perf_counter()
            inputs = make_inputs(problem, device)
            W = None
            if kind == "split":
                smax = max(c["S"] for c in cands)
                W = torch.empty(smax * M * N, device=device, dtype=torch.float32)
            rows = []
            skipped = 0
            for c in cands:
                if time.perf_counter() >= deadline:
                    skipped += 1
                    continue
                key = (kind, tuple(sorted((k, v) for k, v in c.items() if k in META_KEYS or k == "variant")))
                if key in job_of:
                    pre.wait(job_of[key], timeout=deadline - time.perf_counter())
                if kind == "tiled":
                    mk = lambda c=c: tiled_launch(c, M, N, K, inputs.A, inputs.B, inputs.C)
                else:
                    mk = lambda c=c: split_launch(c, M, N, K, inputs.A, inputs.B, inputs.C, W)
                r = evaluate(c, problem, inputs, mk, timing=not smoke, budget_s=args.measure_budget)
                rows.append(r)
                if smoke:
                    print(f"  {title}: {r['name']:34s} ok={r['ok']} rel_err={r.get('rel_err')} "
                          f"{r.get('error', '')}", flush=True)
            rows_by_title[title] = rows
            out["phases"].append(dict(title=title, shape=problem.shape, kind=kind, rows=rows, skipped=skipped,
                                      phase_s=round(time.perf_counter() - t_phase, 1)))
            if not smoke:
                print_table(title + (f" ({skipped} skipped: deadline)" if skipped else ""), rows,
                            ref_tflops=CUBLAS_FP32.get(problem.shape))
                print(f"  phase {time.perf_counter() - t_phase:.1f}s, total {time.perf_counter() - T_START:.1f}s",
                      flush=True)
            write()
            del inputs, W
    finally:
        pre.close()
        write()
    bad = [r for p in out["phases"] for r in p["rows"] if not r.get("ok")]
    print(f"\n[sweep] total wall time {time.perf_counter() - T_START:.1f}s; {len(bad)} wrong/error; "
          f"rows in {args.out}", flush=True)
    if smoke:
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
