"""Run the CUDA stages on the CPU: a loader backend for correctness tests without a GPU.

``EmuBackend`` stands in for :class:`cuda_kernels.loader.CupyBackend`: it compiles a stage's
self-contained source (the same text NVRTC gets) with g++ and ``emu.hpp`` (one fiber per CUDA
thread, see there), and launches kernels through ctypes. The kernels' ``prepare``/``launch``
code runs unchanged, so the tests cover the grid sizes, argument lists, split-K plan and
workspace too. ``GuardedArray`` puts each matrix right before an inaccessible page, so an
out-of-bounds access is reported instead of reading a neighbour's memory.

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


class GuardedArray:
    """float32 buffer whose last element sits right before a PROT_NONE page."""

    def __init__(self, n: int, align: int = 16):
        nbytes = 4 * max(int(n), 1)
        data_pages = -(-(nbytes + align) // PAGE)
        self._mm = mmap.mmap(-1, (data_pages + 1) * PAGE)
        base = ctypes.addressof(ctypes.c_char.from_buffer(self._mm))
        guard = base + data_pages * PAGE
        if _libc.mprotect(guard, PAGE, PROT_NONE) != 0:
            raise OSError(ctypes.get_errno(), "mprotect failed")
        start = guard - nbytes  # ends exactly at the guard page; aligned iff nbytes is
        self.address = start
        self.array = np.frombuffer(self._mm, dtype=np.float32, count=max(int(n), 1),
                                   offset=start - base)[: int(n)]

    @classmethod
    def from_numpy(cls, a: np.ndarray) -> "GuardedArray":
        g = cls(a.size)
        g.array[:] = np.ascontiguousarray(a, dtype=np.float32).ravel()
        return g


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
        if self._fn(dims, ptrs) != 0:
            raise EmulatorError(f"{self.name}: {self._lib.emu_error().decode()}")


class EmuBackend:
    """Loader backend that compiles with g++ and runs on the CPU."""

    name = "emulator"

    def __init__(self, sm_count: int = 132, cache_dir: str | None = None):
        self._sm_count = sm_count
        self._cache_dir = cache_dir or os.path.join(tempfile.gettempdir(), f"gemm_emu_{os.getuid()}")
        self._libs: dict[str, tuple] = {}
        self._lock = threading.Lock()

    def sm_count(self) -> int:
        return self._sm_count

    def stream(self):
        return None

    def empty(self, n: int) -> GuardedArray:
        g = GuardedArray(n)
        g.array[:] = np.nan  # a workspace element nobody writes shows up in the result
        return g

    @staticmethod
    def address(arr) -> int:
        return arr.address

    def build(self, filename: str):
        """Compile ``filename`` with every configuration the registry declares for it."""
        with self._lock:
            if filename in self._libs:
                return self._libs[filename]
            from ..registry import configs_by_file
            cfgs = configs_by_file()[filename]
            src = [loader.source(filename), "\n// ---- emulator entry points ----"]
            for i, c in enumerate(cfgs):
                src.append(f'extern "C" int emu_launch_{i}(const unsigned* d, void** a) '
                           f'{{ return emu::launch(&{c.expr}, d, a); }}')
            text = "\n".join(src) + "\n"
            with open(os.path.join(HERE, "emu.hpp"), encoding="utf-8") as fh:
                shim = fh.read()
            cxx = compiler()
            if not cxx:
                raise EmulatorError("no C++ compiler (g++) found for the CPU emulator")
            flags = ["-std=c++20", "-O2", "-fPIC", "-shared", "-w", "-fno-strict-aliasing"]
            key = hashlib.sha256("\0".join([shim, text, cxx, *flags]).encode()).hexdigest()[:20]
            os.makedirs(self._cache_dir, exist_ok=True)
            so = os.path.join(self._cache_dir, f"{os.path.splitext(filename)[0]}_{key}.so")
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
            for i, c in enumerate(cfgs):
                f = getattr(lib, f"emu_launch_{i}")
                f.argtypes = (ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_void_p))
                f.restype = ctypes.c_int
                fns[c.expr] = f
            self._libs[filename] = (lib, fns)
            return self._libs[filename]

    def function(self, filename: str, config) -> EmuFunction:
        lib, fns = self.build(filename)
        return EmuFunction(fns[config.expr], lib, f"{filename}:{config.expr}")


class EmuInputs:
    """What ``prepare`` needs from :class:`compare.inputs.Inputs`, backed by guarded CPU buffers.

    Built from CPU torch inputs (``compare.inputs.make_inputs(problem, device="cpu")``), so the
    float64 reference and error bound are the framework's own."""

    def __init__(self, inputs):
        self.inputs = inputs
        self.problem = inputs.problem
        self._arrays = {name: GuardedArray.from_numpy(getattr(inputs, name).numpy())
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
