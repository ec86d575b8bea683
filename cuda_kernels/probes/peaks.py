"""The three ceilings every row's speed of light is taken against, measured on the GPU at hand:

* ``fp32``: the FFMA rate (mma_peak.cu's register-resident ``fma.rn.f32`` loop, the best of a few
  warps-per-SM x chains configurations);
* ``tf32``: the TF32 tensor-core rate: on sm_90 ``wgmma.mma_async m64n256k8`` (wgmma_peak.cu,
  operands in shared memory, the instruction stage 13 and cuBLAS's Hopper kernels use), with
  ``mma.sync m16n8k8`` (mma_peak.cu) recorded beside it; elsewhere mma.sync;
* ``dram``: the bandwidth of a device copy (dram_copy.cu, a buffer >= 8x the L2, bytes counted
  read + write), with cudaMemcpy's device-to-device copy beside it; the faster of the two.

Each records the SM clock it ran at (NVML, sampled while the timed launches run), its noise
((max - min) / median of the timed launches) and the datasheet figure beside it
(compare.harness.gpuinfo.DATASHEET). Every kernel's written result is checked against a closed
form (a wrong one makes that probe FAILED, with no number). The result is cached per GPU UUID and
driver (compare.harness.gpuinfo.peaks_path), so a run of ``python -m compare`` pays for it once;
every result's environment block carries it.

    python -m cuda_kernels.probes.peaks [--force] [--out FILE.json] [--target-ms 10] [--reps 7]

Exit status: 0; 1 when a probe FAILED; 2 for a bad argument or no usable GPU, before any kernel runs.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import time
from typing import Callable, Optional, Sequence

import numpy as np

from compare.harness import files, gpuinfo
from compare.harness.errors import UsageError

from .. import loader
from . import mma_peak

VERSION = 1
WGMMA_SOURCE = "probes/wgmma_peak.cu"
COPY_SOURCE = "probes/dram_copy.cu"
WGMMA_BODY = 16                      # wgmma_peak.cu's WGMMA_BODY
WGMMA_FLOPS = 2 * 64 * 256 * 8       # one m64n256k8
WGMMA_THREADS = 128                  # one warpgroup per block
WGMMA_SMEM = 64 * 128 + 256 * 128 + 1024
# Each wgmma adds 1 to each of a thread's 128 accumulators; the thread writes their sum, 128 x
# steps, exact in fp32 below 2^24.
WGMMA_MAX_STEPS = (1 << 24) // 128
# Configurations tried (warps per SM, chains); the best is the peak. From mma_peak's sweeps: FFMA
# needs many warps or chains to hide its 4-cycle latency, mma.sync a few chains per warp.
FFMA_CONFIGS = ((16, 8), (32, 4), (32, 8))
MMA_CONFIGS = ((8, 4), (16, 4), (16, 8))
WGMMA_WARPGROUPS = (2, 3)            # per SM; 154 registers x 128 threads: at most 3 fit
COPY_BLOCK = 512
COPY_MIN_BYTES = 1 << 30             # per buffer, and at least 8 x L2


def noise(times: Sequence[float]) -> float:
    """(max - min) / median of the timed launches: how far one number of the probe may stray."""
    med = statistics.median(times)
    return (max(times) - min(times)) / med if med > 0 else 0.0


def wgmma_check(out: np.ndarray, steps: int) -> Optional[str]:
    """None when every thread's sum is 128 x steps (each wgmma adds 1 to each of 128 accumulators)."""
    got = np.asarray(out, dtype=np.float64)
    bad = ~np.isclose(got, 128.0 * steps, rtol=1e-6, atol=0.0)
    if not bad.any():
        return None
    t = int(np.argwhere(bad)[0][0])
    return f"{int(bad.sum())} of {got.size} thread sums wrong; thread {t}: {float(got[t])!r}, expected {128.0 * steps!r}"


# ---------------------------------------------------------------------------------------- arguments

def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m cuda_kernels.probes.peaks",
                                 description="FFMA, TF32 tensor-core and DRAM-copy ceilings of this GPU, cached")
    ap.add_argument("--out", help="also write the result as JSON here (atomically)")
    ap.add_argument("--force", action="store_true", help="measure again even when this GPU and driver are cached")
    ap.add_argument("--target-ms", type=float, default=10.0, help="length of one timed launch, 1-200 ms (default 10)")
    ap.add_argument("--reps", type=int, default=7, help="timed launches per configuration, 3-50 (default 7)")
    args = ap.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if not 1 <= args.target_ms <= 200:
        raise UsageError(f"--target-ms {args.target_ms:g}: between 1 and 200")
    if not 3 <= args.reps <= 50:
        raise UsageError(f"--reps {args.reps}: between 3 and 50")
    if args.out:
        mma_peak.check_out(args.out)
    return args


# ------------------------------------------------------------------------------------- on the GPU

def _identity(cupy) -> dict:
    """Name, UUID and driver of CuPy's current device, as gpuinfo keys the cache."""
    env = gpuinfo.environment().as_dict()
    uuid = gpuinfo.gpu_uuid(gpuinfo._nvml_index())
    return {"gpu": env.get("gpu"), "uuid": uuid, "driver": env.get("driver"),
            "sm_count": int(cupy.cuda.Device().attributes["MultiProcessorCount"]),
            "compute_capability": env.get("compute_capability"), "l2_bytes": env.get("l2_bytes"),
            "max_sm_clock_mhz": env.get("max_sm_clock_mhz")}


def _timed(cupy, launch: Callable[[int], None], iters: int, n: int):
    events = [cupy.cuda.Event() for _ in range(n + 1)]
    events[0].record()
    for e in events[1:]:
        launch(iters)
        e.record()
    clock = gpuinfo.clock_sample()  # taken while the launches run: the clock they ran at
    events[-1].synchronize()
    return [float(cupy.cuda.get_elapsed_time(a, b)) for a, b in zip(events, events[1:])], clock


def _grow(cupy, launch, max_iters: int, target_ms: float) -> int:
    """The loop count at which one launch lasts about ``target_ms`` (at most ``max_iters``)."""
    iters = 1
    (ms,), _ = _timed(cupy, launch, iters, 1)
    while ms < target_ms / 2 and iters < max_iters:
        iters = min(max_iters, max(2 * iters, int(iters * target_ms / max(ms, 1e-3))))
        (ms,), _ = _timed(cupy, launch, iters, 1)
    return max(1, min(max_iters, round(iters * target_ms / max(ms, 1e-3))))


def measure_wgmma(cupy, fn, warpgroups: int, sms: int, target_ms: float, reps: int) -> dict:
    blocks = sms * warpgroups
    out = cupy.empty(blocks * WGMMA_THREADS, dtype=cupy.float32)
    smem = max(WGMMA_SMEM, mma_peak._pinning_smem(cupy, warpgroups))
    if smem > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = smem
    launch = lambda iters: fn((blocks,), (WGMMA_THREADS,), (np.int32(iters), out), shared_mem=smem)
    launch(1)  # loads the module: not timed
    iters = _grow(cupy, launch, WGMMA_MAX_STEPS // WGMMA_BODY, target_ms)
    _timed(cupy, launch, iters, 1)  # warm-up at the timed length: clocks settle
    out.fill(float("nan"))
    times, clock = _timed(cupy, launch, iters, reps)
    median = statistics.median(times)
    flops = blocks * iters * WGMMA_BODY * WGMMA_FLOPS
    row = dict(instr="wgmma", warpgroups_per_sm=warpgroups, blocks=blocks, iters=iters,
               pinning_smem_bytes=smem, resident_blocks_per_sm=mma_peak._occupancy(cupy, fn, smem),
               registers=mma_peak._attr(fn, "num_regs"), times_ms=[round(t, 4) for t in times],
               median_ms=round(median, 4), tflops=None, sm_mhz=clock.sm_mhz, throttle=clock.throttle,
               noise=round(noise(times), 4))
    why = wgmma_check(cupy.asnumpy(out), iters * WGMMA_BODY)
    row["status"] = f"FAILED: {why}" if why else "ok"
    if not why:
        row["tflops"] = round(flops / (median * 1e-3) / 1e12, 2)
    return row


def measure_copy(cupy, fn, sms: int, l2_bytes: int, reps: int) -> list[dict]:
    """The copy kernel and cudaMemcpy, each ``reps`` times over one buffer pair; two rows."""
    free = int(cupy.cuda.runtime.memGetInfo()[0])
    nbytes = max(COPY_MIN_BYTES, 8 * int(l2_bytes or 0))
    nbytes = min(nbytes, free // 3) // 16 * 16   # two buffers, with room to spare
    n = nbytes // 16
    src = cupy.arange(nbytes // 4, dtype=cupy.uint32).view(cupy.float32)
    dst = cupy.empty_like(src)
    grid = sms * (2048 // COPY_BLOCK)           # every SM full of threads
    kernel = lambda _: fn((grid,), (COPY_BLOCK,), (src, dst, np.int64(n)))
    memcpy = lambda _: dst.data.copy_from_device_async(src.data, nbytes)
    rows = []
    for method, launch in (("copy kernel (LDG.128 / STG.128)", kernel), ("cudaMemcpy device to device", memcpy)):
        dst.fill(0)
        launch(0)  # loads the module, touches the pages: not timed
        _timed(cupy, launch, 0, 2)
        dst.fill(0)
        times, clock = _timed(cupy, launch, 0, reps)
        median = statistics.median(times)
        ok = bool(cupy.array_equal(src.view(cupy.uint32), dst.view(cupy.uint32)))
        rows.append(dict(method=method, buffer_bytes=nbytes, bytes_moved=2 * nbytes, times_ms=[round(t, 4) for t in times],
                         median_ms=round(median, 4), gbps=round(2 * nbytes / (median * 1e-3) / 1e9, 1) if ok else None,
                         noise=round(noise(times), 4), sm_mhz=clock.sm_mhz,
                         status="ok" if ok else "FAILED: the copy differs from its source"))
    del src, dst
    return rows


def _best(rows: list[dict], key: str) -> Optional[dict]:
    ok = [r for r in rows if r.get("status") == "ok" and r.get(key)]
    return max(ok, key=lambda r: r[key]) if ok else None


def run(args: argparse.Namespace, cupy, say: Callable[[str], None] = lambda s: None) -> dict:
    """Every probe; the result document (what the cache holds)."""
    ident = _identity(cupy)
    sms, cc = ident["sm_count"], str(ident["compute_capability"])
    sheet = gpuinfo.datasheet(ident["gpu"] or "")
    names = [f"{mma_peak.INSTRS[i].kernel}<{c}>" for i in ("ffma", "mma") for c in mma_peak.CHAINS]
    mod = cupy.RawModule(code=loader.source(mma_peak.SOURCE), options=loader.NVRTC_OPTIONS, name_expressions=names)
    rows = []
    for instr, configs in (("ffma", FFMA_CONFIGS), ("mma", MMA_CONFIGS)):
        for warps, chains in configs:
            fn = mod.get_function(f"{mma_peak.INSTRS[instr].kernel}<{chains}>")
            r = mma_peak.measure(cupy, fn, instr, chains, warps, sms, args.target_ms, args.reps)
            r["noise"] = round(noise(r["times_ms"]), 4)
            rows.append(r)
            say(f"  {instr:<5} {warps:>2} warps/SM x {chains} chains: {r['tflops'] or '-'} TFLOP/s at {r['sm_mhz']} MHz  {r['status']}")
    if cc == "9.0":
        # Names passed as name expressions, as cuda_kernels/loader.py loads stage 13 (sm_90a too).
        wmod = cupy.RawModule(code=loader.source(WGMMA_SOURCE), options=loader.NVRTC_OPTIONS + ("-arch=sm_90a",),
                              name_expressions=["wgmma_tf32_peak"])
        wfn = wmod.get_function("wgmma_tf32_peak")
        for wg in WGMMA_WARPGROUPS:
            r = measure_wgmma(cupy, wfn, wg, sms, args.target_ms, args.reps)
            rows.append(r)
            say(f"  wgmma {wg} warpgroups/SM: {r['tflops'] or '-'} TFLOP/s at {r['sm_mhz']} MHz  {r['status']}")
    cmod = cupy.RawModule(code=loader.source(COPY_SOURCE), options=loader.NVRTC_OPTIONS, name_expressions=["dram_copy"])
    copies = measure_copy(cupy, cmod.get_function("dram_copy"), sms, ident["l2_bytes"], args.reps)
    for r in copies:
        say(f"  dram  {r['method']}: {r['gbps'] or '-'} GB/s (read + write of {r['buffer_bytes'] / 2**30:.2f} GiB)  {r['status']}")

    def peak(best: Optional[dict], instr: str, datasheet_key: str) -> Optional[dict]:
        if best is None:
            return None
        return {"tflops": best["tflops"], "sm_mhz": best["sm_mhz"], "noise": best["noise"], "instr": instr,
                "config": {k: best[k] for k in ("warps_per_sm", "chains", "warpgroups_per_sm") if k in best},
                "datasheet_tflops": (sheet or {}).get(datasheet_key)}

    ffma = _best([r for r in rows if r["instr"] == "ffma"], "tflops")
    mma = _best([r for r in rows if r["instr"] == "mma"], "tflops")
    wgmma = _best([r for r in rows if r["instr"] == "wgmma"], "tflops")
    fp32 = peak(ffma, "FFMA (fma.rn.f32)", "fp32_tflops")
    if fp32 is not None:
        lanes = gpuinfo.FP32_LANES_PER_SM.get(tuple(int(v) for v in cc.split(".")))
        if lanes and ffma["sm_mhz"]:
            # SMs x FP32 lanes x 2 flops at the clock the probe ran at: what FFMA can reach.
            fp32["lanes_at_clock_tflops"] = round(sms * lanes * 2 * ffma["sm_mhz"] * 1e6 / 1e12, 3)
    if cc == "9.0":
        tf32 = peak(wgmma, "wgmma.mma_async m64n256k8 tf32", "tf32_tflops")
    else:
        tf32 = peak(mma, "mma.sync m16n8k8 tf32", "tf32_tflops")
    if tf32 is not None and mma is not None:
        tf32["mma_sync_tflops"] = mma["tflops"]
    best_copy = _best(copies, "gbps")
    dram = None
    if best_copy is not None:
        dram = {"gbps": best_copy["gbps"], "noise": best_copy["noise"], "sm_mhz": best_copy["sm_mhz"],
                "method": best_copy["method"], "counts": "read + write", "buffer_bytes": best_copy["buffer_bytes"],
                "datasheet_gbps": (sheet or {}).get("dram_gbps")}
    return {"version": VERSION, **ident, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "command": " ".join(["python -m cuda_kernels.probes.peaks", *map(shlex.quote, args.argv)]),
            "datasheet": sheet, "fp32": fp32, "tf32": tf32, "dram": dram, "rows": rows + copies}


def failed(doc: dict) -> list[str]:
    """The probes that gave no number (FAILED rows, or a peak missing), or a tensor-core number
    no tensor core gives: below FFMA's, or (wgmma) below mma.sync's on the same GPU. One device
    start's wgmma probe ran 17x slow (36.3 TFLOP/s against mma.sync's 323.8; H200,
    results/h200/tensor-core/stage13-general-10/README.md), and every row's % SOL took it."""
    bad = [r.get("instr") or r.get("method") for r in doc.get("rows", []) if r.get("status") != "ok"]
    bad += [k for k in ("fp32", "tf32", "dram") if not doc.get(k)]
    tf32, fp32 = doc.get("tf32") or {}, doc.get("fp32") or {}
    t = tf32.get("tflops")
    if t and str(tf32.get("instr", "")).startswith("wgmma") and t < (tf32.get("mma_sync_tflops") or 0):
        bad.append(f"tf32 ({t} TFLOP/s by wgmma, below mma.sync's {tf32['mma_sync_tflops']})")
    elif t and fp32.get("tflops") and t < fp32["tflops"]:
        bad.append(f"tf32 ({t} TFLOP/s, below FFMA's {fp32['tflops']})")
    return bad


def _device():
    """CuPy with a device of compute capability 8.0+; raises UsageError."""
    return mma_peak._device()


def ensure(say: Callable[[str], None] = lambda s: None, force: bool = False, args=None) -> Optional[dict]:
    """This GPU's peaks: from the cache, else measured now and cached (when every probe passed).
    None, with a line said, where there is no usable GPU or a probe failed. Never raises."""
    try:
        cupy = _device()
        if not force:
            ident = _identity(cupy)
            cached = gpuinfo.load_peaks(ident["uuid"], ident["driver"])
            if cached is not None:
                return cached
        args = args or parse_args([])
        say("measuring this GPU's peaks once (FFMA, TF32 tensor core, DRAM copy; "
            "python -m cuda_kernels.probes.peaks) ...")
        try:
            doc = run(args, cupy, say=say)
        finally:
            # the copy's buffers go back to the device, not to this process's pool: the kernels
            # measured next (in a worker process) get the whole memory
            cupy.get_default_memory_pool().free_all_blocks()
    except Exception as e:  # no GPU, no CuPy, a compile error: rows get no % SOL, the run goes on
        say(f"peaks not measured: {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:200]}")
        return None
    bad = failed(doc)
    if bad:
        say(f"peaks not cached: {', '.join(map(str, bad))} gave no number or an implausible one; "
            "rows get no % SOL this run")
        return None
    if doc.get("uuid") and doc.get("driver"):
        try:
            os.makedirs(gpuinfo.peaks_dir(), exist_ok=True)
            files.write_text_atomically(gpuinfo.peaks_path(doc["uuid"], doc["driver"]), json.dumps(doc, indent=1) + "\n")
        except OSError as e:
            say(f"peaks measured but not cached ({e})")
    return doc


def summary(doc: dict) -> str:
    def pct(x, of):
        return f" ({100 * x / of:.0f}% of {of:g})" if x and of else ""
    lines = [f"{doc.get('gpu')} ({doc.get('uuid')}, driver {doc.get('driver')})"]
    if doc.get("fp32"):
        p = doc["fp32"]
        lines.append(f"FP32 FFMA   {p['tflops']:8.1f} TFLOP/s at {p['sm_mhz']} MHz, noise {100 * p['noise']:.1f}%; "
                     f"datasheet {p.get('datasheet_tflops') or '-'}{pct(p['tflops'], p.get('lanes_at_clock_tflops'))}")
    if doc.get("tf32"):
        p = doc["tf32"]
        lines.append(f"TF32 tensor {p['tflops']:8.1f} TFLOP/s at {p['sm_mhz']} MHz, noise {100 * p['noise']:.1f}% "
                     f"({p['instr']}); datasheet {p.get('datasheet_tflops') or '-'}"
                     + (f"; mma.sync {p['mma_sync_tflops']}" if p.get("mma_sync_tflops") else ""))
    if doc.get("dram"):
        p = doc["dram"]
        lines.append(f"DRAM        {p['gbps']:8.0f} GB/s ({p['counts']}, {p['method']}), noise {100 * p['noise']:.1f}%; "
                     f"datasheet {p.get('datasheet_gbps') or '-'}")
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    try:
        args = parse_args(argv)
        _device()
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    say = lambda s: print(s, file=sys.stderr, flush=True)
    doc = ensure(say=say, force=args.force, args=args)
    if doc is None:
        return 1
    print(summary(doc))
    print(f"cached in {gpuinfo.peaks_path(doc['uuid'], doc['driver'])}" if doc.get("uuid") else "not cached (no UUID)")
    if args.out:
        files.write_text_atomically(args.out, json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
