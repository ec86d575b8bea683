"""What is the smallest slowdown the regression gate sees, and does it cry wolf? Measured on a GPU.

    python -m compare.ci.gate_sensitivity [--kernel triton.tiled] [--shape 2048] [--precision fp32]
                                          [--aa 5] [--ab 3] [--plant 3%] [--factor 1.02] [-o FILE.json]

Every run is a fresh process, as an asv benchmark process is (interpreter, torch import, CUDA
context, compile-cache hit), that measures cuBLAS and the kernel at one problem through the
runner and prints their samples. Base and head processes alternate (ABAB...), so a drifting
machine hits both sides alike:

  * A/A: ``--aa`` pairs of (base, base) processes of this commit: any SLOW or FAST is a false alarm;
  * A/B: ``--ab`` pairs of (base, head) where head's kernel carries a planted slowdown of
    ``--plant`` of its own median (compare.harness.timing.Plant: a calibrated device spin after
    the launch; no source line edited, never on outside this experiment).

Each pair is judged the way the gate judges a point with recorded samples
(compare.ci.robust.compare_samples, at ``--factor``), twice: on the kernel's times, and on its
times divided by the same process's cuBLAS median (the per-sample form of % of cuBLAS: a clock
or machine drift that slows both cancels). The pooled verdict compares all base samples with
all head samples. Exit status: 0 when no A/A pair is SLOW/FAST and every A/B pair is SLOW (on
the cuBLAS-relative samples), 1 otherwise, 2 when it can't start (bad arguments, no GPU).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Optional

from . import robust
from ..harness import registry
from ..harness.files import write_text_atomically
from ..harness.problem import Problem, parse_shape
from ..harness.timing import Plant

# compare.harness.runner and .inputs import torch (~1 s): the child process that measures
# imports them, so that --help and the argument checks start without it.

_CHILD = "--child"


def _child(kernel: str, shape: str, precision: str, plant: Optional[float]) -> int:
    """One process: cuBLAS then the kernel (planted if asked), samples as JSON on stdout."""
    from ..harness import runner
    from ..harness.inputs import gpu_available

    if not gpu_available():
        print(json.dumps({"error": "no CUDA GPU"}))
        return 2
    problem = Problem(*parse_shape(shape), precision=precision)
    out = {"pid": os.getpid(), "planted": None}
    rows = []
    for name, kw in (("cublas", None), (kernel, {"plant": Plant(plant)} if plant else None)):
        k = registry.get(name)
        p = runner.baseline_problem(problem) if k.family == "cublas" else problem
        r = runner.run_kernel(k, p, measure_kw=kw, batch=False)
        if r.status != "ok":
            print(json.dumps({"error": f"{name}: {r.status_text}"}))
            return 1
        rows.append(r)
        out[name if k.family == "cublas" else "kernel"] = {
            "median_s": r.median_ms / 1e3, "times_s": [t / 1e3 for t in r.times_ms],
            "sm_clock_mhz": r.sm_clock_mhz, "throttled": r.throttled}
        if r.planted:
            out["planted"] = r.planted
    print(json.dumps(out))
    return 0


def run_process(kernel: str, shape: str, precision: str, plant: Optional[float]) -> dict:
    cmd = [sys.executable, "-m", "compare.ci.gate_sensitivity", _CHILD, kernel, shape, precision, str(plant or 0)]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    last = (p.stdout.strip().splitlines() or ["{}"])[-1]
    try:
        d = json.loads(last)
    except ValueError:
        d = {"error": f"exit {p.returncode}: {(p.stderr.strip().splitlines() or [''])[-1][:300]}"}
    d["wall_s"] = wall
    return d


def relative_to_cublas(d: dict) -> list:
    """The kernel's samples over this process's cuBLAS median: % of cuBLAS, per sample, inverted."""
    c = d["cublas"]["median_s"]
    return [t / c for t in d["kernel"]["times_s"]]


def judge(base: dict, head: dict, factor: float) -> dict:
    t = robust.compare_samples(base["kernel"]["times_s"], head["kernel"]["times_s"], factor)
    r = robust.compare_samples(relative_to_cublas(base), relative_to_cublas(head), factor)
    return {"time": t.word if t else "no samples", "time_slowdown": t.slowdown if t else None,
            "rel_cublas": r.word if r else "no samples", "rel_cublas_slowdown": r.slowdown if r else None}


def _pooled(pairs: list, factor: float) -> dict:
    b_t = [x for b, _ in pairs for x in b["kernel"]["times_s"]]
    h_t = [x for _, h in pairs for x in h["kernel"]["times_s"]]
    b_r = [x for b, _ in pairs for x in relative_to_cublas(b)]
    h_r = [x for _, h in pairs for x in relative_to_cublas(h)]
    t, r = robust.compare_samples(b_t, h_t, factor), robust.compare_samples(b_r, h_r, factor)
    return {"time": t.word if t else None, "time_slowdown": t.slowdown if t else None,
            "rel_cublas": r.word if r else None, "rel_cublas_slowdown": r.slowdown if r else None}


def _parse_plant(text: str) -> float:
    t = text.strip()
    v = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    if not (0 < v <= 1):
        raise ValueError
    return v


def main(argv: Optional[list] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == _CHILD:
        kernel, shape, precision, plant = argv[1:5]
        return _child(kernel, shape, precision, float(plant) or None)
    ap = argparse.ArgumentParser(prog="python -m compare.ci.gate_sensitivity", description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", default="triton.tiled")
    ap.add_argument("--shape", default="2048")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--aa", type=int, default=5, help="A/A pairs (default 5)")
    ap.add_argument("--ab", type=int, default=3, help="A/B pairs with the planted slowdown (default 3)")
    ap.add_argument("--plant", default="3%", help="planted slowdown of head's kernel, e.g. 3%% or 0.03")
    ap.add_argument("--factor", type=float, default=robust.DEFAULT_FACTOR)
    ap.add_argument("-o", "--output", help="write everything (samples included) as JSON")
    try:
        args = ap.parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    try:
        plant = _parse_plant(args.plant)
    except ValueError:
        print(f"error: --plant {args.plant!r}: give a fraction in (0, 1] or a percentage, e.g. 3%", file=sys.stderr)
        return 2
    if args.aa < 0 or args.ab < 0 or args.aa + args.ab == 0 or not (args.factor > 1):
        print("error: --aa/--ab must be >= 0 (not both 0) and --factor > 1", file=sys.stderr)
        return 2
    try:
        registry.get(args.kernel)
        parse_shape(args.shape)
    except Exception as exc:     # unknown kernel or shape: the registry's/parser's own message
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.output:
        write_text_atomically(args.output, "{}")     # writable, before any GPU work

    runs, verdicts = [], {"aa": [], "ab": []}
    pairs = {"aa": [], "ab": []}
    plan = [("aa", None)] * args.aa + [("ab", plant)] * args.ab
    for i, (kind, head_plant) in enumerate(plan):
        base = run_process(args.kernel, args.shape, args.precision, None)
        head = run_process(args.kernel, args.shape, args.precision, head_plant)
        runs += [dict(base, role=f"{kind}{i}-base"), dict(head, role=f"{kind}{i}-head")]
        for d in (base, head):
            if "error" in d:
                print(f"error: {d['error']}", file=sys.stderr)
                return 2 if "no CUDA GPU" in d["error"] else 1
        v = judge(base, head, args.factor)
        v["planted"] = head.get("planted")
        verdicts[kind].append(v)
        pairs[kind].append((base, head))
        got = f"  planted {100 * v['planted']['achieved']:.2f}%" if v["planted"] else ""
        print(f"{kind.upper()} pair {len(verdicts[kind])}: time x{v['time_slowdown']:.4f} {v['time']:9s} "
              f"rel. cuBLAS x{v['rel_cublas_slowdown']:.4f} {v['rel_cublas']:9s}{got}  "
              f"({base['wall_s']:.1f} s + {head['wall_s']:.1f} s)", flush=True)
    pooled = {k: _pooled(v, args.factor) for k, v in pairs.items() if v}
    false_alarms = sum(v[m] in ("SLOW", "FAST") for v in verdicts["aa"] for m in ("time", "rel_cublas"))
    caught = sum(v["rel_cublas"] == "SLOW" for v in verdicts["ab"])
    aa_rel = [abs(v["rel_cublas_slowdown"] - 1) for v in verdicts["aa"]]
    summary = {
        "kernel": args.kernel, "shape": args.shape, "precision": args.precision, "factor": args.factor,
        "plant": plant, "aa_pairs": len(verdicts["aa"]), "ab_pairs": len(verdicts["ab"]),
        "aa_false_alarms": false_alarms, "ab_slow_rel_cublas": caught,
        "ab_slow_time": sum(v["time"] == "SLOW" for v in verdicts["ab"]),
        "aa_max_rel_cublas_shift": max(aa_rel) if aa_rel else None,
        "aa_max_time_shift": max((abs(v["time_slowdown"] - 1) for v in verdicts["aa"]), default=None),
        "pooled": pooled,
        "median_process_wall_s": statistics.median(r["wall_s"] for r in runs),
    }
    print(json.dumps(summary, indent=1))
    if args.output:
        write_text_atomically(args.output, json.dumps({"summary": summary, "verdicts": verdicts, "runs": runs},
                                                      indent=1) + "\n")
    ok = false_alarms == 0 and caught == len(verdicts["ab"])
    print(("PASS" if ok else "FAIL") + f": A/A {false_alarms} false alarm(s) over {len(verdicts['aa'])} pairs; "
          f"A/B planted {100 * plant:g}%: {caught} of {len(verdicts['ab'])} SLOW (relative to cuBLAS)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
