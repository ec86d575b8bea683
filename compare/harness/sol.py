"""Speed of light (SOL) of one GEMM row against the GPU's measured peaks: how far a kernel, and
cuBLAS, is from what this machine can do, not only from the vendor.

The convention (docs/results.md, "Speed of light"):

* FLOPs = 2MNK, + 2MN when beta != 0 (beta C: one multiply and one add per element of C; alpha's
  multiply is folded into the product's last FMA and not counted, as cuBLAS's 2MNK does not).
* Minimum DRAM bytes = 4 (MK + KN + MN): A and B read once and C written once, in fp32; + 4MN
  when beta != 0 (C read). Intensity = FLOPs / minimum bytes.
* Compute time = products x 2MNK / pipe peak + beta FLOPs / FFMA peak. The pipe is FFMA for fp32
  and the TF32 tensor core for tf32 and tf32x3; tf32x3 does three TF32 products (a_big b_big,
  a_big b_small, a_small b_big) on the tensor pipe, so it counts 3 x 2MNK there. The beta term
  runs in the epilogue on the FP32 pipe in every kernel.
* Memory time = minimum bytes / DRAM bandwidth (a device copy's read + write rate).
* SOL time = max(compute time, memory time); bound = whichever is larger; % SOL = SOL time /
  measured median time x 100; achieved GB/s = minimum bytes / measured time.
* Compute peaks are scaled to the SM clock the row recorded (peak x row clock / probe clock): a
  power-capped row's ceiling is lower, and a row that ran faster than the probe is not flattered.
  DRAM bandwidth is not scaled (the memory clock is not the SM clock).
* A row above 100% SOL by more than the noise of the peak that bounds it (at least 1%) plus the
  row's own noise is flagged (``sol_flag``): a wrong peak or a wrong byte count, never a result.

Pure: no GPU, no I/O. The peaks are the dict cuda_kernels/probes/peaks.py writes (compare.harness
.gpuinfo.load_peaks): ``{"fp32": {"tflops", "sm_mhz", "noise"}, "tf32": {...}, "dram": {"gbps", "noise"}}``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

BYTES_PER_ELEMENT = 4                                   # fp32 storage for every precision
PIPE = {"fp32": "fp32", "tf32": "tf32", "tf32x3": "tf32"}
PRODUCTS = {"fp32": 1, "tf32": 1, "tf32x3": 3}
NOISE_FLOOR = 0.01


def flops(M: int, N: int, K: int, beta: float) -> int:
    """2MNK, + 2MN when C is scaled and added (beta != 0)."""
    return 2 * M * N * K + (2 * M * N if beta else 0)


def min_bytes(M: int, N: int, K: int, beta: float) -> int:
    """A, B read and C written once; C also read when beta != 0."""
    return BYTES_PER_ELEMENT * (M * K + K * N + M * N + (M * N if beta else 0))


def _rate(peak: Optional[dict], key: str, clock_mhz: Optional[int], scale_by_clock: bool) -> Optional[float]:
    """A peak in units per second, at ``clock_mhz`` when asked and both clocks are known."""
    if not peak or not peak.get(key):
        return None
    v = float(peak[key]) * (1e12 if key == "tflops" else 1e9)
    if scale_by_clock and clock_mhz and peak.get("sm_mhz"):
        v *= clock_mhz / float(peak["sm_mhz"])
    return v


@dataclass(frozen=True)
class Sol:
    flops: int
    min_bytes: int
    intensity: float
    compute_s: float
    memory_s: float
    sol_s: float
    bound: str            # "compute" or "memory"
    noise: float          # the noise of the peak that bounds it


def speed_of_light(M: int, N: int, K: int, precision: str, beta: float, peaks: Optional[dict],
                   sm_clock_mhz: Optional[int] = None) -> Optional[Sol]:
    """The SOL of one problem at one clock; None without the peaks it needs."""
    if not peaks or precision not in PIPE:
        return None
    pipe = _rate(peaks.get(PIPE[precision]), "tflops", sm_clock_mhz, True)
    ffma = _rate(peaks.get("fp32"), "tflops", sm_clock_mhz, True)
    bw = _rate(peaks.get("dram"), "gbps", None, False)
    if not pipe or not ffma or not bw:
        return None
    f, b = flops(M, N, K, beta), min_bytes(M, N, K, beta)
    compute = PRODUCTS[precision] * 2 * M * N * K / pipe + (f - 2 * M * N * K) / ffma
    memory = b / bw
    bound = "compute" if compute >= memory else "memory"
    src = peaks[PIPE[precision]] if bound == "compute" else peaks["dram"]
    return Sol(flops=f, min_bytes=b, intensity=f / b, compute_s=compute, memory_s=memory,
               sol_s=max(compute, memory), bound=bound, noise=float(src.get("noise") or 0.0))


def tolerance(sol: Sol, row_noise: Optional[float]) -> float:
    """How far above 100% a row may read before it is flagged: the bounding peak's noise (at
    least NOISE_FLOOR) plus the row's own."""
    return max(sol.noise, NOISE_FLOOR) + (row_noise or 0.0)


def fill(results: Iterable, peaks: Optional[dict]) -> None:
    """Set every row's SOL fields (in place). The problem's facts (flops, min_bytes, intensity)
    always; achieved GB/s wherever there is a time; sol_ms, pct_sol, bound and sol_flag where
    there are peaks as well. Without peaks, SOL fields a row already holds are kept (a CSV read
    back has no environment to recompute them from)."""
    for r in results:
        r.flops, r.min_bytes = flops(r.M, r.N, r.K, r.beta), min_bytes(r.M, r.N, r.K, r.beta)
        r.intensity = r.flops / r.min_bytes
        timed = r.status == "ok" and r.median_ms
        r.gbps = r.min_bytes / (r.median_ms * 1e-3) / 1e9 if timed else None
        s = speed_of_light(r.M, r.N, r.K, r.precision, r.beta, peaks, r.sm_clock_mhz)
        if s is None:
            if peaks or not timed:
                r.sol_ms, r.pct_sol, r.bound, r.sol_flag = None, None, "", ""
            continue
        r.sol_ms, r.bound = s.sol_s * 1e3, s.bound
        r.pct_sol = 100 * s.sol_s / (r.median_ms * 1e-3) if timed else None
        tol = tolerance(s, r.noise)
        if r.pct_sol is not None and r.pct_sol > 100 * (1 + tol):
            r.sol_flag = (f"{r.pct_sol:.0f}% of SOL is above 100% + {100 * tol:.1f}% noise: "
                          f"a wrong peak or byte count")
        else:
            r.sol_flag = ""


def cell(pct_sol: Optional[float], bound: str, flag: str) -> str:
    """The table's one narrow column: '76c' (76% of SOL, compute-bound), '93m' (memory-bound),
    '112c!' (flagged); '-' without a number."""
    if pct_sol is None:
        return "-"
    return f"{pct_sol:.0f}{(bound or '?')[0]}{'!' if flag else ''}"
