"""Run the CUDA stages on the CPU: a loader backend for correctness tests without a GPU.

``EmuBackend`` stands in for :class:`cuda_kernels.loader.CupyBackend`: it compiles a stage's
self-contained source (the same text NVRTC gets) with g++ and ``emu.hpp`` (one fiber per CUDA
thread, see there), and launches kernels through ctypes. The kernels' ``prepare``/``launch``
code runs unchanged, so the tests cover the grid sizes, argument lists, split-K / stream-K plans
and workspaces too.

``GuardedArray`` puts an inaccessible (PROT_NONE) page on both sides of each buffer. Pages are
4 KiB and a buffer's size is not a multiple of that, so only one end can touch its guard page:
``place="end"`` (default) puts the last element right before the upper guard (an access past the
end faults exactly), ``place="start"`` puts the first element right after the lower guard (an
access below the start, a negative offset, faults exactly). The slack between the other end
and its guard page is filled with a canary pattern that every launch checks afterwards, so a
stray *write* there is reported too; a stray read there returns NaN. Tests run kernels with
both placements.

Slow (a 1000x1000x1000 GEMM takes seconds): for small odd shapes only.
"""
from __future__ import annotations

import ctypes
import hashlib
import mmap
import os
import shutil
import subprocess
import tempfile
import threading

import numpy as np

from .. import loader

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = mmap.PAGESIZE
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
PROT_NONE = 0


class EmulatorError(RuntimeError):
    pass


def compiler() -> str | None:
    return shutil.which(os.environ.get("CXX", "g++")) or shutil.which("g++") or shutil.which("clang++")


CANARY = np.uint32(0x7FC0DEAD)  # a quiet NaN: a stray read of the slack poisons the result
PLACES = ("end", "start")


class GuardedArray:
    """float32 buffer between two PROT_NONE pages; ``place`` says which end touches its guard."""

    def __init__(self, n: int, align: int = 16, place: str = "end"):
        if place not in PLACES:
            raise ValueError(f"place must be one of {PLACES}, got {place!r}")
        self.n = int(n)
        nbytes = 4 * max(self.n, 1)
        data_pages = -(-(nbytes + align) // PAGE)
        self._mm = mmap.mmap(-1, (data_pages + 2) * PAGE)
        base = ctypes.addressof(ctypes.c_char.from_buffer(self._mm))
        low_guard, data, high_guard = base, base + PAGE, base + (data_pages + 1) * PAGE
        for g in (low_guard, high_guard):
            if _libc.mprotect(g, PAGE, PROT_NONE) != 0:
                raise OSError(ctypes.get_errno(), "mprotect failed")
        # "end": ends exactly at the high guard (16-byte aligned iff nbytes is); "start": page aligned.
        start = high_guard - nbytes if place == "end" else data
        self.place = place
        self.address = start
        words = np.frombuffer(self._mm, dtype=np.uint32, count=data_pages * PAGE // 4, offset=PAGE)
        first = (start - data) // 4
        self._slack = (words[:first], words[first + max(self.n, 1):])
        for sl in self._slack:
            sl[:] = CANARY
        self.array = words[first:first + max(self.n, 1)].view(np.float32)[: self.n]

    def check_slack(self, what: str) -> None:
        """Raise EmulatorError if a launch wrote into the unguarded slack next to the buffer."""
        for side, sl in zip(("below the start", "past the end"), self._slack):
            bad = np.flatnonzero(sl != CANARY)
            if bad.size:
                off = (bad[-1] - sl.size) if side == "below the start" else bad[0] + self.n
                raise EmulatorError(f"{what}: write {side} of a {self.n}-element buffer (element {int(off)})")

    @classmethod
    def from_numpy(cls, a: np.ndarray, place: str = "end") -> "GuardedArray":
        g = cls(a.size, place=place)
        g.array[:] = np.ascontiguousarray(a, dtype=np.float32).ravel()
        return g


_LAUNCH_LOCK = threading.Lock()


class EmuFunction:
    """A kernel of an emulator library, called like CuPy's RawKernel."""

    def __init__(self, fn, lib, name: str):
        self._fn = fn
        self._lib = lib
        self.name = name

    def __call__(self, grid, block, args, shared_mem: int = 0, stream=None):
        grid = (tuple(grid) + (1, 1))[:3]
        block = (tuple(block) + (1, 1))[:3]
        dims = (ctypes.c_uint * 6)(*grid, *block)
        keep = []
        for a in args:
            if isinstance(a, GuardedArray):
                keep.append(ctypes.c_void_p(a.address))
            elif isinstance(a, np.int32):
                keep.append(ctypes.c_int32(int(a)))
            elif isinstance(a, np.float32):
                keep.append(ctypes.c_float(float(a)))
            else:
                raise TypeError(f"{self.name}: kernel argument of type {type(a).__name__}; pass numpy.int32, "
                                f"numpy.float32 or an array")
        ptrs = (ctypes.c_void_p * max(len(keep), 1))(*[ctypes.cast(ctypes.pointer(k), ctypes.c_void_p) for k in keep])
        with _LAUNCH_LOCK:  # emu.hpp's scheduler state is global: one launch at a time (see atomicAdd there)
            rc = self._fn(dims, ptrs)
        if rc != 0:
            raise EmulatorError(f"{self.name}: {self._lib.emu_error().decode()}")
        for a in args:
            if isinstance(a, GuardedArray):
                a.check_slack(self.name)


class EmuBackend:
    """Loader backend that compiles with g++ and runs on the CPU."""

    name = "emulator"

    def __init__(self, sm_count: int = 132, cache_dir: str | None = None, place: str = "end"):
        self._sm_count = sm_count
        self.place = place  # where workspaces sit in their guard pages (see GuardedArray)
        self._cache_dir = cache_dir or os.path.join(tempfile.gettempdir(), f"gemm_emu_{os.getuid()}")
        self._libs: dict[str, tuple] = {}
        self._lock = threading.Lock()

    def sm_count(self) -> int:
        return self._sm_count

    def stream(self):
        return None

    def empty(self, n: int) -> GuardedArray:
        g = GuardedArray(n, place=self.place)
        g.array[:] = np.nan  # a workspace element nobody writes shows up in the result
        return g

    @staticmethod
    def address(arr) -> int:
        return arr.address

    def build(self, filename: str, expressions):
        """Compile ``filename`` with every name expression in ``expressions`` (the registry's)."""
        with self._lock:
            if filename in self._libs:
                return self._libs[filename]
            exprs = list(expressions)
            src = [loader.source(filename), "\n// ---- emulator entry points ----"]
            for i, e in enumerate(exprs):
                src.append(f'extern "C" int emu_launch_{i}(const unsigned* d, void** a) '
                           f'{{ return emu::launch(&{e}, d, a); }}')
            text = "\n".join(src) + "\n"
            with open(os.path.join(HERE, "emu.hpp"), encoding="utf-8") as fh:
                shim = fh.read()
            cxx = compiler()
            if not cxx:
                raise EmulatorError("no C++ compiler (g++) found for the CPU emulator")
            flags = ["-std=c++20", "-O2", "-fPIC", "-shared", "-w", "-fno-strict-aliasing"]
            key = hashlib.sha256("\0".join([shim, text, cxx, *flags]).encode()).hexdigest()[:20]
            os.makedirs(self._cache_dir, exist_ok=True)
            so = os.path.join(self._cache_dir, f"{os.path.splitext(os.path.basename(filename))[0]}_{key}.so")
            if not os.path.exists(so):
                cpp = so[:-3] + ".cpp"
                with open(cpp, "w", encoding="utf-8") as fh:
                    fh.write(text)
                tmp = so + f".{os.getpid()}.tmp"
                proc = subprocess.run([cxx, *flags, "-include", os.path.join(HERE, "emu.hpp"), "-o", tmp, cpp],
                                      capture_output=True, text=True)
                if proc.returncode != 0:
                    raise EmulatorError(f"g++ failed on {filename}:\n{proc.stderr[-6000:]}")
                os.replace(tmp, so)
            lib = ctypes.CDLL(so)
            lib.emu_error.restype = ctypes.c_char_p
            fns = {}
            for i, e in enumerate(exprs):
                f = getattr(lib, f"emu_launch_{i}")
                f.argtypes = (ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_void_p))
                f.restype = ctypes.c_int
                fns[e] = f
            self._libs[filename] = (lib, fns)
            return self._libs[filename]

    def function(self, filename: str, config, expressions) -> EmuFunction:
        lib, fns = self.build(filename, expressions)
        return EmuFunction(fns[config.expr], lib, f"{filename}:{config.expr}")


class EmuInputs:
    """What ``prepare`` needs from :class:`compare.harness.inputs.Inputs`, backed by guarded CPU buffers.

    Built from CPU torch inputs (``compare.harness.inputs.make_inputs(problem, device="cpu")``), so the
    float64 reference and error bound are the framework's own. ``place``: where the matrices sit
    in their guard pages (GuardedArray)."""

    def __init__(self, inputs, place: str = "end"):
        self.inputs = inputs
        self.problem = inputs.problem
        self._arrays = {name: GuardedArray.from_numpy(getattr(inputs, name).numpy(), place=place)
                        for name in ("A", "B", "C")}

    def cupy(self, name: str) -> GuardedArray:
        return self._arrays[name]

    def reset_c(self, poison: bool = False) -> None:
        c = self._arrays["C"].array
        if poison and self.problem.beta == 0:
            c[:] = np.nan
        else:
            c[:] = self.inputs.C0.numpy().ravel()

    def c_tensor(self):
        import torch
        return torch.from_numpy(self._arrays["C"].array.copy().reshape(self.problem.M, self.problem.N))
