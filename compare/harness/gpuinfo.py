"""What GPU is this, how fast can it go, and is it running at speed right now (NVML)."""
from __future__ import annotations

import functools
import json
import os
import platform
from dataclasses import asdict, dataclass
from typing import Optional

# torch (~1 s), triton, pynvml (optional) and importlib.metadata (25 ms) are imported by the
# functions that ask them, so that importing this module costs ~4 ms.

# FP32 lanes (FFMA units) per SM by compute capability major.minor; 2 flops per FFMA.
FP32_LANES_PER_SM = {(7, 0): 64, (7, 5): 64, (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128,
                     (9, 0): 128, (10, 0): 128, (12, 0): 128}


# Datasheet figures beside the measured peaks (cuda_kernels/probes/peaks.py records them; they are
# never the ceiling a row is judged against). Dense TF32 (no sparsity); DRAM in GB/s. Matched in
# order against the device name: the first entry whose every word is in it.
DATASHEET = (
    (("H100", "PCIe"), dict(name="H100 PCIe", fp32_tflops=51.2, tf32_tflops=378.0, dram_gbps=2000.0)),
    (("H100",), dict(name="H100 SXM", fp32_tflops=66.9, tf32_tflops=494.7, dram_gbps=3350.0)),
    (("H200",), dict(name="H200 SXM", fp32_tflops=66.9, tf32_tflops=494.7, dram_gbps=4800.0)),
    (("A100", "80GB"), dict(name="A100 80GB SXM", fp32_tflops=19.5, tf32_tflops=156.0, dram_gbps=2039.0)),
    (("A100",), dict(name="A100 40GB", fp32_tflops=19.5, tf32_tflops=156.0, dram_gbps=1555.0)),
)


def datasheet(gpu_name: str) -> Optional[dict]:
    """The datasheet row for a device name ("NVIDIA H100 80GB HBM3" -> H100 SXM), or None."""
    for words, row in DATASHEET:
        if all(w in (gpu_name or "") for w in words):
            return dict(row)
    return None


def peaks_dir() -> str:
    """Where measured peaks are kept: the user's cache folder ($XDG_CACHE_HOME or ~/.cache),
    gemm-ladder/peaks. One file per GPU and driver: a run pays for the probes once."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "gemm-ladder", "peaks")


def peaks_path(uuid: str, driver: str) -> str:
    """The cache file of one GPU (its UUID) under one driver: a new driver measures again."""
    safe = lambda s: "".join(c if c.isalnum() or c in "-._" else "_" for c in str(s))
    return os.path.join(peaks_dir(), f"{safe(uuid)}_driver-{safe(driver)}.json")


def load_peaks(uuid: Optional[str], driver: Optional[str]) -> Optional[dict]:
    """The measured peaks of this GPU and driver (cuda_kernels/probes/peaks.py), or None when
    they were never measured, or the file is unreadable or of another GPU / driver."""
    if not uuid or not driver:
        return None
    try:
        with open(peaks_path(uuid, driver), encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("uuid") != uuid or doc.get("driver") != driver:
        return None
    return doc


def current_peaks() -> Optional[dict]:
    """The cached peaks of the current GPU, or None (no GPU, never measured). Never raises."""
    try:
        import torch
        if not torch.cuda.is_available():
            return None
        return load_peaks(gpu_uuid(_nvml_index()), _static_env().get("driver"))
    except Exception:
        return None


@dataclass
class ClockSample:
    sm_mhz: Optional[int] = None
    temp_c: Optional[int] = None
    power_w: Optional[float] = None
    # NVML "clocks event reasons" that mean the clock was pulled down by heat, power or the driver
    # (idle and application-clock settings are not throttling).
    throttle: list = None


_THROTTLE_NAMES = {
    0x2: "applications_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x20: "sw_thermal",
    0x40: "hw_thermal", 0x80: "hw_power_brake", 0x100: "display_clocks",
}
_THROTTLE_MASK = 0x4 | 0x8 | 0x20 | 0x40 | 0x80


def gpu_uuid(index: int = 0) -> Optional[str]:
    """torch's CUDA device ``index`` as NVML and nvidia-smi name it ("GPU-..."), or None."""
    import torch
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    if uuid is None:
        return None
    uuid = str(uuid)
    return uuid if uuid.startswith("GPU-") else "GPU-" + uuid


@functools.lru_cache(maxsize=None)
def _nvml_handle(index: int = 0):
    """The NVML handle of torch's CUDA device ``index``. NVML numbers every GPU of the host and
    ignores CUDA_VISIBLE_DEVICES, so under CUDA_VISIBLE_DEVICES=3 (a distributed sweep's worker
    pinned to GPU 3) torch's device 0 is NVML's GPU 3: the device's UUID says which."""
    try:
        import pynvml
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        return pynvml.nvmlDeviceGetHandleByUUID(gpu_uuid(index))
    except Exception:
        pass
    try:
        return pynvml.nvmlDeviceGetHandleByIndex(index)
    except Exception:
        return None


def _nvml_index() -> int:
    import torch
    return torch.cuda.current_device() if torch.cuda.is_available() else 0


def clock_sample() -> ClockSample:
    h = _nvml_handle(_nvml_index())
    if h is None:
        return ClockSample(throttle=[])
    import pynvml
    s = ClockSample(throttle=[])
    try:
        s.sm_mhz = int(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))
    except Exception:
        pass
    try:
        s.temp_c = int(pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU))
    except Exception:
        pass
    try:
        s.power_w = pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0
    except Exception:
        pass
    try:
        get = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        bits = int(get(h)) & _THROTTLE_MASK
        s.throttle = [n for b, n in _THROTTLE_NAMES.items() if bits & b]
    except Exception:
        pass
    return s


@functools.lru_cache(maxsize=None)
def max_sm_clock_mhz() -> Optional[int]:
    h = _nvml_handle(_nvml_index())
    if h is None:
        return None
    import pynvml
    try:
        return int(pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM))
    except Exception:
        return None


@dataclass
class Environment:
    gpu: str
    sm_count: int
    compute_capability: str
    l2_bytes: int
    memory_gib: float
    max_sm_clock_mhz: Optional[int]
    sm_clock_mhz: Optional[int]
    fp32_peak_tflops: Optional[float]
    driver: str
    cuda_runtime: str
    torch: str
    triton: str
    cupy: str
    python: str
    # Environment variables set for this run that change the code Triton compiles (Triton's own
    # list, the one its cache key uses), e.g. {"DISABLE_MMA_V3": "true"}: that one made Triton's tf32
    # 1.6x slower at 4096^3 (results/h100/triton-env/) with nothing else in the output saying so.
    # None: this Triton can't tell.
    triton_env: Optional[dict] = None
    # The measured peaks of this GPU (FFMA, TF32 tensor core, DRAM copy), each with the SM clock it
    # ran at and the datasheet figure beside it (cuda_kernels/probes/peaks.py, cached per GPU UUID
    # and driver); None where they were never measured. Every row's % SOL is against these.
    peaks: Optional[dict] = None

    def as_dict(self) -> dict:
        return asdict(self)


def _version(mod: str) -> str:
    try:
        from importlib.metadata import version
        for dist in {"cupy": ("cupy-cuda12x", "cupy-cuda13x", "cupy"), "triton": ("triton",),
                     "torch": ("torch",)}.get(mod, (mod,)):
            try:
                return version(dist)
            except Exception:
                continue
    except Exception:
        pass
    return "not installed"


def fp32_peak_tflops(sm_count: int, cc: tuple[int, int], mhz: Optional[int]) -> Optional[float]:
    lanes = FP32_LANES_PER_SM.get(cc)
    if lanes is None or not mhz:
        return None
    return sm_count * lanes * 2 * mhz * 1e6 / 1e12


@functools.lru_cache(maxsize=None)
def _static_env() -> dict:
    import torch
    d = {"torch": torch.__version__, "triton": _version("triton"), "cupy": _version("cupy"),
         "python": platform.python_version()}
    if not torch.cuda.is_available():
        return d
    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    cc = (p.major, p.minor)
    maxclk = max_sm_clock_mhz()
    driver = "unknown"
    h = _nvml_handle(_nvml_index())
    if h is not None:
        import pynvml
        try:
            driver = pynvml.nvmlSystemGetDriverVersion()
            driver = driver.decode() if isinstance(driver, bytes) else driver
        except Exception:
            pass
    d.update(gpu=p.name, sm_count=p.multi_processor_count, compute_capability=f"{p.major}.{p.minor}",
             l2_bytes=int(getattr(p, "L2_cache_size", 0) or 50 * 2**20),
             memory_gib=round(p.total_memory / 2**30, 1), max_sm_clock_mhz=maxclk,
             fp32_peak_tflops=fp32_peak_tflops(p.multi_processor_count, cc, maxclk),
             driver=driver, cuda_runtime=str(torch.version.cuda))
    return d


def triton_env() -> Optional[dict]:
    """The set environment variables that change Triton's compiled code, read now (not cached: a
    process may set one between runs); None where Triton doesn't export its list."""
    try:
        from triton._C.libtriton import get_cache_invalidating_env_vars
    except ImportError:
        return None
    return dict(get_cache_invalidating_env_vars())


def environment() -> Environment:
    d = dict(_static_env())
    d["triton_env"] = triton_env()
    base = dict(gpu="none", sm_count=0, compute_capability="-", l2_bytes=0, memory_gib=0.0,
                max_sm_clock_mhz=None, fp32_peak_tflops=None, driver="-", cuda_runtime="-")
    base.update(d)
    base["sm_clock_mhz"] = clock_sample().sm_mhz if d.get("gpu") else None
    base["peaks"] = current_peaks() if d.get("gpu") else None
    return Environment(**base)
