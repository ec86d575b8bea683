"""The ceiling of the legacy warp-level tensor-core instruction on the GPU at hand:
``mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32`` (what stage 12, 12_tf32_mma.cu, is built
from) issued from registers with no memory access in the loop; FFMA (``fma.rn.f32``) measured the
same way beside it, whose peak is known (FP32 lanes x 2 x clock), so a reader can trust the method.

Sweep: warps per SM (blocks of 4 warps, grid = SMs x blocks per SM, each block given unused shared
memory so that no more blocks fit an SM) x independent accumulator chains per warp (mma) or thread
(FFMA). Per configuration the loop count grows until one launch
lasts about ``--target-ms``; then one warm-up launch and ``--reps`` launches, each between CUDA
events (median), with the SM clock sampled through NVML while they run. Every thread's written sum
is checked against its closed form (float64, on the host): a wrong one makes the row FAILED, with
no number. The kernels: cuda_kernels/probes/mma_peak.cu.

    python -m cuda_kernels.probes.mma_peak --out mma_peak.json
        [--instr mma,ffma] [--warps 4,8,16,32] [--chains 1,2,4,8] [--target-ms 10] [--reps 5]

Exit status: 0; 1 when a configuration FAILED; 2 for a bad argument or no usable GPU, before any
kernel runs.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from compare.harness import files, gpuinfo
from compare.harness.errors import UsageError

from .. import loader
from ..resources import SMEM_RESERVED_PER_BLOCK

SOURCE = "probes/mma_peak.cu"
WARPS_PER_BLOCK = 4      # one warp per SM sub-partition: blocks spread evenly over the schedulers
THREADS = WARPS_PER_BLOCK * 32
CHAINS = (1, 2, 4, 8)
WARPS = (4, 8, 16, 32)   # per SM; 32 warps of the 8-chain mma kernel (43 registers) still fit
# Steps per chain at most: each step adds one power of two d (0.25 <= d <= 2) to a start <= 7,
# so every partial sum stays below 2^24 units of d and of 1: exact in fp32 (tests check it).
MAX_STEPS = 1 << 22
RTOL = 1e-5              # the device adds up to 32 exact terms in fp32: at most ~2e-6 relative


@dataclass(frozen=True)
class Instr:
    kernel: str   # template in SOURCE, instantiated per chain count
    ptx: str
    body: int     # instructions per loop iteration (SOURCE's MMA_BODY / FFMA_BODY)
    flops: int    # per instruction
    per: str      # what issues one: a warp (mma) or a thread (FFMA)


INSTRS = {
    "mma": Instr("mma_tf32_peak", "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", 32, 2 * 16 * 8 * 8, "warp"),
    "ffma": Instr("ffma_peak", "fma.rn.f32", 256, 2, "thread"),
}


def mma_product() -> np.ndarray:
    """D = A B (16x8) of SOURCE's operand values, in float64."""
    row, k = np.arange(16)[:, None], np.arange(8)[None, :]
    a = np.where(k == row % 8, 2.0 ** (row // 8), 0.0)
    kb, n = np.arange(8)[:, None], np.arange(8)[None, :]
    return a @ 2.0 ** ((kb + n) % 3 - 2)


def step_values(instr: str) -> np.ndarray:
    """What one step adds to each accumulator, per thread of a block: (THREADS, values)."""
    tid = np.arange(THREADS)
    if instr == "ffma":
        return (2.0 ** (tid % 3 - 1) * 2.0 ** -((tid // 3) % 2))[:, None]
    g, t = (tid % 32) // 4, tid % 4
    d = mma_product()
    # The accumulator fragment of lane 4g + t: (g, 2t), (g, 2t+1), (g+8, 2t), (g+8, 2t+1).
    return np.stack([d[g, 2 * t], d[g, 2 * t + 1], d[g + 8, 2 * t], d[g + 8, 2 * t + 1]], axis=1)


def expected_sums(instr: str, chains: int, steps: int) -> np.ndarray:
    """Each thread's written sum after ``steps`` steps of every chain (chain c starts at c)."""
    d = step_values(instr)
    return d.shape[1] * chains * (chains - 1) / 2 + chains * steps * d.sum(axis=1)


def check(out: np.ndarray, expected: np.ndarray) -> Optional[str]:
    """None when every thread's sum matches its block-relative expected value, else why not."""
    got = np.asarray(out, dtype=np.float64)
    if got.size == 0 or got.size % expected.size:
        return f"{got.size} sums for blocks of {expected.size} threads"
    got = got.reshape(-1, expected.size)
    bad = ~np.isclose(got, expected[None, :], rtol=RTOL, atol=0.0)  # a NaN is never close
    if not bad.any():
        return None
    b, t = np.argwhere(bad)[0]
    return (f"{int(bad.sum())} of {got.size} thread sums wrong; block {b} thread {t}: "
            f"{float(got[b, t])!r}, expected {float(expected[t])!r}")


# ---------------------------------------------------------------------------------------- arguments

def _int_list(text: str, flag: str, ok) -> tuple:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise UsageError(f"{flag} takes comma-separated integers; got {text!r}") from None
    bad = [v for v in values if not ok(v)]
    if not values or bad:
        raise UsageError(f"{flag} {text!r}: {', '.join(map(str, bad)) or 'nothing'} not allowed")
    return tuple(dict.fromkeys(values))


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The command line, checked; raises UsageError. Needs no GPU."""
    ap = argparse.ArgumentParser(prog="python -m cuda_kernels.probes.mma_peak",
                                 description="mma.sync TF32 and FFMA issue ceilings of this GPU")
    ap.add_argument("--out", help="write the result as JSON here (atomically)")
    ap.add_argument("--instr", default="mma,ffma", help="mma, ffma or both (default mma,ffma)")
    ap.add_argument("--warps", default=",".join(map(str, WARPS)),
                    help=f"warps per SM, multiples of {WARPS_PER_BLOCK} up to 32 (default 4,8,16,32)")
    ap.add_argument("--chains", default=",".join(map(str, CHAINS)),
                    help="independent accumulator chains per warp / thread, of 1,2,4,8 (default all)")
    ap.add_argument("--target-ms", type=float, default=10.0, help="length of one timed launch, 1-200 ms (default 10)")
    ap.add_argument("--reps", type=int, default=5, help="timed launches per configuration, 1-50 (default 5)")
    args = ap.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    instr = tuple(dict.fromkeys(v.strip() for v in args.instr.split(",") if v.strip()))
    if not instr or any(v not in INSTRS for v in instr):
        raise UsageError(f"--instr {args.instr!r}: one or more of {', '.join(INSTRS)}")
    args.instr = instr
    args.warps = _int_list(args.warps, "--warps", lambda v: 0 < v <= 32 and v % WARPS_PER_BLOCK == 0)
    args.chains = _int_list(args.chains, "--chains", lambda v: v in CHAINS)
    if not 1 <= args.target_ms <= 200:
        raise UsageError(f"--target-ms {args.target_ms:g}: between 1 and 200")
    if not 1 <= args.reps <= 50:
        raise UsageError(f"--reps {args.reps}: between 1 and 50")
    if args.out:
        check_out(args.out)
    return args


def check_out(path: str) -> None:
    """--out names a file that can be written (a probe's JSON), before anything is measured."""
    if os.path.isdir(path):
        raise UsageError(f"--out {path}: is a folder")
    try:
        files.prove_writable(path)
    except OSError as e:
        raise UsageError(f"--out {path}: cannot be written ({e})") from None


# ------------------------------------------------------------------------------------- on the GPU

def _device():
    """CuPy, with a device of compute capability 8.0+ (TF32 mma.sync); raises UsageError."""
    try:
        import cupy
    except ImportError:
        raise UsageError("CuPy is not installed (pip install -e \".[cuda13]\" or \".[cuda12]\")") from None
    try:
        cc = int(cupy.cuda.Device().compute_capability)
    except Exception as e:  # no driver, no device
        raise UsageError(f"no usable CUDA device ({e})") from None
    if cc < 80:
        raise UsageError(f"needs compute capability 8.0 or newer (TF32 mma.sync); this GPU is sm_{cc}")
    return cupy


def measure(cupy, fn, instr: str, chains: int, warps: int, sms: int, target_ms: float, reps: int) -> dict:
    """One configuration: grow the loop count to ~target_ms, warm up, time ``reps`` launches, check."""
    spec = INSTRS[instr]
    per_block = WARPS_PER_BLOCK if spec.per == "warp" else THREADS
    blocks_per_sm = warps // WARPS_PER_BLOCK
    blocks = sms * blocks_per_sm
    out = cupy.empty(blocks * THREADS, dtype=cupy.float32)
    smem = _pinning_smem(cupy, blocks_per_sm)
    if smem > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = smem  # above 48 KiB a kernel must opt in
    steps_per_iter = spec.body // chains
    max_iters = MAX_STEPS // steps_per_iter

    def timed(iters: int, n: int):
        events = [cupy.cuda.Event() for _ in range(n + 1)]
        events[0].record()
        for e in events[1:]:
            fn((blocks,), (THREADS,), (np.int32(iters), out), shared_mem=smem)
            e.record()
        clock = gpuinfo.clock_sample()  # taken while the launches run: the clock they ran at
        events[-1].synchronize()
        return [float(cupy.cuda.get_elapsed_time(a, b)) for a, b in zip(events, events[1:])], clock

    fn((blocks,), (THREADS,), (np.int32(1), out), shared_mem=smem)  # loads the module: not to be timed
    iters = 1
    (ms,), _ = timed(iters, 1)
    while ms < target_ms / 2 and iters < max_iters:
        iters = min(max_iters, max(2 * iters, int(iters * target_ms / max(ms, 1e-3))))
        (ms,), _ = timed(iters, 1)
    iters = max(1, min(max_iters, round(iters * target_ms / max(ms, 1e-3))))
    timed(iters, 1)  # warm-up at the timed length: clocks settle
    out.fill(float("nan"))  # only these launches' sums can pass the check
    times, clock = timed(iters, reps)
    steps = iters * steps_per_iter
    median = statistics.median(times)
    flops = blocks * per_block * iters * spec.body * spec.flops
    row = dict(instr=instr, warps_per_sm=warps, chains=chains, blocks=blocks, threads_per_block=THREADS,
               pinning_smem_bytes=smem, resident_blocks_per_sm=_occupancy(cupy, fn, smem),
               registers=_attr(fn, "num_regs"),
               local_bytes=_attr(fn, "local_size_bytes"), iters=iters, steps_per_chain=steps,
               times_ms=[round(t, 4) for t in times], median_ms=round(median, 4), tflops=None,
               flops_per_clk_per_sm=None, sm_mhz=clock.sm_mhz, temp_c=clock.temp_c, throttle=clock.throttle)
    if row["resident_blocks_per_sm"] is not None:
        row["all_resident"] = row["resident_blocks_per_sm"] >= blocks_per_sm
    why = check(cupy.asnumpy(out), expected_sums(instr, chains, steps))
    if why:
        row["status"] = f"FAILED: {why}"
        return row
    row["status"] = "ok"
    row["tflops"] = round(flops / (median * 1e-3) / 1e12, 2)
    if clock.sm_mhz:
        row["flops_per_clk_per_sm"] = round(flops / (median * 1e-3) / (sms * clock.sm_mhz * 1e6), 1)
    return row


def _attr(fn, name: str):
    try:
        return int(getattr(fn, name))
    except Exception:  # an attribute this CuPy does not have
        return None


def _pinning_smem(cupy, blocks_per_sm: int) -> int:
    """Dynamic shared memory per block (unused by the kernels) that leaves room for exactly
    ``blocks_per_sm`` blocks on an SM: the block scheduler then cannot stack more blocks on one SM
    while another idles, so every SM runs the warps the row names. 0 where CuPy doesn't say."""
    attrs = cupy.cuda.Device().attributes
    per_sm, per_block = attrs.get("MaxSharedMemoryPerMultiprocessor"), attrs.get("MaxSharedMemoryPerBlockOptin")
    if not per_sm or not per_block:
        return 0
    return int(min(per_block, (per_sm // blocks_per_sm - SMEM_RESERVED_PER_BLOCK) // 1024 * 1024))


def _occupancy(cupy, fn, smem: int) -> Optional[int]:
    """Blocks of THREADS that fit on one SM together (the driver's count); None where CuPy lacks it."""
    occ = getattr(cupy.cuda.driver, "occupancyMaxActiveBlocksPerMultiprocessor", None)
    try:
        return int(occ(fn.ptr, THREADS, smem)) if occ else None
    except Exception:
        return None


def run(args: argparse.Namespace, cupy, progress=None) -> dict:
    """Compile, sweep, and the result document."""
    names = [f"{INSTRS[i].kernel}<{c}>" for i in args.instr for c in args.chains]
    mod = cupy.RawModule(code=loader.source(SOURCE), options=loader.NVRTC_OPTIONS, name_expressions=names)
    sms = int(cupy.cuda.Device().attributes["MultiProcessorCount"])
    env = gpuinfo.environment().as_dict()
    rows = []
    for instr in args.instr:
        for warps in args.warps:
            for chains in args.chains:
                fn = mod.get_function(f"{INSTRS[instr].kernel}<{chains}>")
                rows.append(measure(cupy, fn, instr, chains, warps, sms, args.target_ms, args.reps))
                if progress:
                    progress(format_row(rows[-1]))
    best = {}
    for instr in args.instr:
        ok = [r for r in rows if r["instr"] == instr and r["status"] == "ok"]
        if ok:
            top = max(ok, key=lambda r: r["tflops"])
            best[instr] = {k: top[k] for k in ("tflops", "warps_per_sm", "chains", "flops_per_clk_per_sm", "sm_mhz")}
    ffma = best.get("ffma")
    if ffma and env.get("fp32_peak_tflops"):
        ffma["pct_of_fp32_peak_at_max_clock"] = round(100 * ffma["tflops"] / env["fp32_peak_tflops"], 1)
    lanes = gpuinfo.FP32_LANES_PER_SM.get(tuple(int(v) for v in str(env.get("compute_capability", "0.0")).split(".")))
    if ffma and lanes and ffma["flops_per_clk_per_sm"]:
        # Independent of the clock: FP32 lanes x 2 flops is the most an SM does per cycle.
        ffma["pct_of_fp32_peak_at_sampled_clock"] = round(100 * ffma["flops_per_clk_per_sm"] / (2 * lanes), 1)
    return {"probe": "cuda_kernels.probes.mma_peak",
            "command": " ".join(["python -m cuda_kernels.probes.mma_peak", *map(shlex.quote, args.argv)]),
            "instructions": {i: {"ptx": INSTRS[i].ptx, "flops": INSTRS[i].flops, "per": INSTRS[i].per}
                             for i in args.instr},
            "method": {"threads_per_block": THREADS, "grid": "SMs x warps_per_sm / 4 blocks, each with dynamic "
                                                               "shared memory that lets no more share an SM",
                       "target_ms": args.target_ms, "reps": args.reps, "time": "median of CUDA-event times",
                       "sm_mhz": "NVML, sampled while the timed launches run"},
            "environment": env, "rows": rows, "best": best}


# ---------------------------------------------------------------------------------------- outputs

HEADER = f"{'instr':<5} {'warps/SM':>8} {'chains':>6} {'TFLOP/s':>8} {'flops/clk/SM':>12} {'SM MHz':>6}  status"


def format_row(r: dict) -> str:
    tf = f"{r['tflops']:8.1f}" if r["tflops"] is not None else f"{'-':>8}"
    fpc = f"{r['flops_per_clk_per_sm']:12.1f}" if r["flops_per_clk_per_sm"] is not None else f"{'-':>12}"
    note = " (not all blocks resident at once)" if r.get("all_resident") is False else ""
    return (f"{r['instr']:<5} {r['warps_per_sm']:>8} {r['chains']:>6} {tf} {fpc} "
            f"{r['sm_mhz'] if r['sm_mhz'] is not None else '-':>6}  {r['status']}{note}")


def format_best(result: dict) -> str:
    lines = []
    for instr, b in result["best"].items():
        pct = [f"{b[k]}% of the FP32 peak at the {k.rsplit('_', 2)[1]} clock"
               for k in ("pct_of_fp32_peak_at_max_clock", "pct_of_fp32_peak_at_sampled_clock") if k in b]
        chains = f"{b['chains']} chain{'s' if b['chains'] > 1 else ''}"
        lines.append(f"best {instr}: {b['tflops']} TFLOP/s ({b['warps_per_sm']} warps/SM, {chains}; "
                     f"{b['flops_per_clk_per_sm']} flops/clk/SM at {b['sm_mhz']} MHz){'; ' if pct else ''}"
                     + ", ".join(pct))
    return "\n".join(lines)


def write_result(path: str, result: dict) -> None:
    files.write_text_atomically(path, json.dumps(result, indent=1) + "\n")


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        args = parse_args(argv)
        cupy = _device()
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(HEADER, flush=True)
    result = run(args, cupy, progress=lambda line: print(line, flush=True))
    print(format_best(result))
    if args.out:
        write_result(args.out, result)
    return 1 if any(r["status"] != "ok" for r in result["rows"]) else 0


if __name__ == "__main__":
    sys.exit(main())
