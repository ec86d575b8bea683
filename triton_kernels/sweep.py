"""Sweep of fp32 (ieee/FFMA) configurations for stages "tiled" and "split_k": each candidate is
one fixed config (the kernels' ``config`` option, no autotuning), timed next to cuBLAS.

    python -m triton_kernels.sweep -o sweep.json            # full, < 180 s on one H100/H200
    python -m triton_kernels.sweep --quick -o sweep.json    # ~1/3 of the candidates
    python -m triton_kernels.sweep --interpret-smoke        # 2 configs per kernel, CPU interpreter

Every candidate is a set of kernel options ({"config": "128x128x32/8/3"}, plus "split_k" for
split-K) run through compare.harness.runner.run_kernel, the pipeline every number in this project comes
from: first launch (compile, or a disk-cache hit) -> checked run on a NaN-poisoned C (float64
reference; a wrong candidate is reported, not timed) -> compare.harness.timing.measure. cuBLAS is
measured in the same run, on the same shapes, for the %cuBLAS column. A row's ``options``
reproduce it: ``python -m compare --kernel triton.tiled --opt config=128x128x32/8/3 ...``.

Compile time: a pool of spawned worker processes compiles the candidates ahead of the main
process (the kernel's own ``_Plan.compile_only``: the same arguments and specialisation as the
real launch, nothing launched), in the order they will be timed, so the main process mostly
reads Triton's on-disk cache while the GPU times the previous candidate. If the pool fails, the
main process compiles by itself (slower, same results). A deadline (``--budget``, default 165 s
from start, split over the phases with unused time rolled over) stops a phase early; candidates
are ordered most-plausible first, and the JSON is rewritten after every phase.

Phases: tiled 4096^3 (all tiled candidates), tiled 8192^3 (the best ones from 4096^3, plus the
current autotune list), split-K 256x256x131072 and 512x512x65536 (deterministic and atomic).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from compare.harness.files import write_text_atomically

T_START = time.perf_counter()

# ---------------------------------------------------------------------------------------------
# Candidates.

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


def split_geometry(K: int, S: int) -> tuple[int, int]:
    """(S_eff, K_CHUNK) exactly as the split-K kernel makes them for an explicit split count."""
    from .split_k import split_geometry as kernel_geometry
    return kernel_geometry(K, S)


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


META_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")


def cfg_name(c: dict) -> str:
    s = f"{c['BLOCK_M']}x{c['BLOCK_N']}x{c['BLOCK_K']} w{c['num_warps']} s{c['num_stages']}"
    if "S" in c:
        s += f" S={c['S']}"
    if "variant" in c:
        s += f" {c['variant'][:3]}"
    return s


def options_of(c: dict, operands: str | None = None) -> dict:
    """The kernel options that run candidate ``c`` (what a user passes with --opt)."""
    opts = {"config": f"{c['BLOCK_M']}x{c['BLOCK_N']}x{c['BLOCK_K']}/{c['num_warps']}/{c['num_stages']}"
                      + ("" if c.get("GROUP_M", 8) == 8 else f"/{c['GROUP_M']}")}
    if "S" in c:
        opts["split_k"] = c["S"]
    if operands:
        opts["operands"] = operands
    return opts


def kernel_of(kind: str, c: dict):
    from . import split_k, tiled
    if kind == "tiled":
        return tiled.KERNEL
    return split_k.KERNEL if c["variant"] == "deterministic" else split_k.KERNEL_ATOMIC


# ---------------------------------------------------------------------------------------------
# Ahead-of-time compilation in worker processes (fills Triton's disk cache).


def _warm_one(job):
    """Worker: compile one candidate without launching. Returns (job id, seconds, error)."""
    t0 = time.perf_counter()
    try:
        import torch
        from . import split_k, tiled
        M, N, K = job["shape"]
        # Shapes and strides only: the plan's tensors need no memory.
        A, B, C = (torch.empty(r, c, device="meta") for r, c in ((M, K), (K, N), (M, N)))
        if job["kind"] == "tiled":
            plan = tiled._Plan(A, B, C, 1.0, 0.0, "fp32", job["options"])
        else:
            plan = split_k._Plan(A, B, C, 1.0, 0.0, "fp32", job["cfg"]["variant"] == "deterministic", job["options"])
        plan.compile_only()
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


ROW_FIELDS = ("status", "reason", "config", "rel_err", "worst_err", "prepare_s", "median_ms", "iqr_ms", "min_ms",
              "samples", "tflops", "sm_clock_mhz", "throttled")


def evaluate(kernel, c: dict, problem, options: dict, timing: bool, budget_s: float) -> dict:
    """One candidate through compare.harness.runner.run_kernel; the row keeps the candidate's fields, the
    options that reproduce it and the runner's result."""
    from compare.harness.runner import OK, run_kernel
    r = run_kernel(kernel, problem, timing=timing, device="cuda" if timing else "cpu",
                   options=options, measure_kw={"budget_s": budget_s})
    row = dict(c, name=cfg_name(c), kernel=kernel.name, shape=problem.shape, options=options,
               **{f: getattr(r, f) for f in ROW_FIELDS})
    row["ok"] = r.status == OK
    row["ms"] = row.pop("median_ms")
    if not row["ok"]:
        row["error"] = r.status_text
    return row


def cublas_row(problem, budget_s: float) -> dict:
    """cuBLAS fp32 on ``problem``, measured in this run (the %cuBLAS reference)."""
    from compare.harness.registry import get
    from compare.harness.runner import OK, run_kernel
    r = run_kernel(get("cublas"), problem, options={}, measure_kw={"budget_s": budget_s})
    row = dict(name="cublas", kernel="cublas", shape=problem.shape, ok=r.status == OK, **{f: getattr(r, f) for f in ROW_FIELDS})
    row["ms"] = row.pop("median_ms")
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
                    help="2 configs per kernel on 64x64x64 / 64x64x256 CPU problems under TRITON_INTERPRET=1 (no timing)")
    ap.add_argument("--list", action="store_true", help="print the candidates and exit (no GPU needed)")
    ap.add_argument("--operands", choices=("direct", "k_major", "m_major_a"), default=None,
                    help="operand mode for every candidate (default: each kernel's own choice)")
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
    from compare.harness.problem import Problem
    from . import tiled  # noqa: F401  (imports triton under the right mode)
    from ._common import interpreting

    smoke = args.interpret_smoke
    if smoke and not interpreting():
        print("TRITON_INTERPRET did not take effect", file=sys.stderr)
        return 2
    if not smoke and not torch.cuda.is_available():
        print("no CUDA GPU: use --interpret-smoke on a CPU box", file=sys.stderr)
        return 2
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
        s_base = [dict(c, S=split_geometry(256, c["S"])[0], K_CHUNK=split_geometry(256, c["S"])[1]) for c in s_base]
        phases = [("tiled 64^3", "tiled", (64, 64, 64), t_cands, 1),
                  ("split_k 64x64x256", "split", (64, 64, 256),
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

    def job_key(kind, shape, c):
        # One compile per (kernel, options, specialisation): the 4096 and 8192 cubes share
        # binaries (both divisible by 16), but keying on the shape keeps this obviously right.
        return (kind, shape, c.get("variant"), json.dumps(options_of(c, args.operands), sort_keys=True))

    jobs, job_of = [], {}
    for title, kind, shape, cands, _ in phases:
        for c in cands or []:
            key = job_key(kind, shape, c)
            if key not in job_of:
                job_of[key] = f"j{len(jobs)}"
                jobs.append(dict(id=job_of[key], kind=kind, cfg=c, shape=shape, options=options_of(c, args.operands)))
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
               triton=__import__("triton").__version__, budget_s=budget, operands=args.operands, phases=[])

    def write():
        out["wall_s"] = round(time.perf_counter() - T_START, 1)
        write_text_atomically(args.out, json.dumps(out, indent=1, default=str))

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
            problem = Problem(*shape, "fp32")
            t_phase = time.perf_counter()
            base = None if smoke else cublas_row(problem, args.measure_budget)
            rows = []
            skipped = 0
            for c in cands:
                if time.perf_counter() >= deadline:
                    skipped += 1
                    continue
                key = job_key(kind, shape, c)
                if key in job_of:
                    pre.wait(job_of[key], timeout=deadline - time.perf_counter())
                r = evaluate(kernel_of(kind, c), c, problem, options_of(c, args.operands), timing=not smoke,
                             budget_s=args.measure_budget)
                rows.append(r)
                if smoke:
                    print(f"  {title}: {r['name']:34s} ok={r['ok']} rel_err={r.get('rel_err')} "
                          f"{r.get('error', '')}", flush=True)
            rows_by_title[title] = rows
            out["phases"].append(dict(title=title, shape=problem.shape, kind=kind, cublas=base, rows=rows,
                                      skipped=skipped, phase_s=round(time.perf_counter() - t_phase, 1)))
            if not smoke:
                print_table(title + (f" ({skipped} skipped: deadline)" if skipped else ""), rows,
                            ref_tflops=base["tflops"] if base and base["ok"] else None)
                print(f"  phase {time.perf_counter() - t_phase:.1f}s, total {time.perf_counter() - T_START:.1f}s",
                      flush=True)
            write()
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
