"""Source text and compiled kernels for the CUDA stages.

* :func:`source` reads a stage's .cu file and pastes every ``#include "x"`` of a file in this
  folder in place (each file once), so NVRTC, which has no include path, gets one
  self-contained text. The compile tests and the resources view run nvcc on that same text.
* ``backend().function(filename, config, expressions)`` compiles the one configuration
  ``config`` names (it must be among ``expressions``, the ones the registry declares for the
  file) with ``cupy.RawModule`` (NVRTC), one module per configuration: a run compiles only the
  configurations it launches, and separate processes compile different ones in parallel
  (compare/harness/precompile.py). 11_stream_k.cu declares 54 configurations and a run launches
  a few. CuPy's on-disk kernel cache (``~/.cupy/kernel_cache``) makes a
  second process skip NVRTC; the dict here makes a second call in one process free. The loader
  knows nothing about stages (no import of the registry).

CuPy is imported lazily, on the first compile: importing ``cuda_kernels`` works on machines
without it. A *backend* object does everything device-specific (compile, the launch stream,
workspace, SM count), so the same prepare/launch code runs on the CPU emulator in the tests
(``cuda_kernels.emulator``).
"""
from __future__ import annotations

import contextlib
import os
import re
import warnings
from typing import Optional

HERE = os.path.dirname(os.path.abspath(__file__))
NVRTC_OPTIONS = ("-std=c++17",)
_INCLUDE_RE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"[ \t]*$', re.M)


def source(filename: str) -> str:
    """Self-contained source of ``cuda_kernels/<filename>`` with local includes pasted in."""
    seen: set[str] = set()

    def expand(name: str) -> str:
        path = os.path.join(HERE, name)
        if name in seen:
            return f"// (already included: {name})\n"
        seen.add(name)
        with open(path, encoding="utf-8") as fh:
            text = fh.read()

        def sub(m: re.Match) -> str:
            inc = m.group(1)
            if not os.path.exists(os.path.join(HERE, inc)):
                raise FileNotFoundError(f"{name}: #include \"{inc}\" is not a file in {HERE}")
            return f"// ---- begin {inc} ----\n{expand(inc)}\n// ---- end {inc} ----"

        return _INCLUDE_RE.sub(sub, text)

    return expand(filename)


class CupyBackend:
    """The real thing: NVRTC through CuPy, launches on torch's current CUDA stream."""

    name = "cupy"

    def __init__(self):
        self._modules: dict[tuple[str, str], object] = {}
        self._functions: dict[tuple[str, str], object] = {}
        self._streams: dict[int, object] = {}
        self._cc: Optional[tuple] = None

    def function(self, filename: str, config, expressions, arch: str = ""):
        """``config``'s kernel from ``filename``, compiled (once per process, alone) if it is one of ``expressions``;
        ``arch`` (e.g. "sm_90a") for a file written for one target, else CuPy's choice for the device."""
        key = (filename, config.expr)
        fn = self._functions.get(key)
        if fn is None:
            import cupy
            if config.expr not in expressions:
                raise KeyError(f"{filename}: {config.expr} is not among the expressions to compile")
            options = NVRTC_OPTIONS + ((f"-arch={arch}",) if arch else ())
            mod = cupy.RawModule(code=source(filename), options=options, name_expressions=[config.expr])
            self._modules[key] = mod
            fn = mod.get_function(config.expr)
            if config.smem_dynamic > 48 * 1024:
                # Above 48 KiB a kernel must opt in to dynamic shared memory before its launch.
                fn.max_dynamic_shared_size_bytes = config.smem_dynamic
            self._functions[key] = fn
        return fn

    def stream(self):
        """torch's current stream, now, as a CuPy stream object: called by every launch, so a
        launch goes where torch's work goes at call time (a side stream, a CUDA graph capture).
        Wrappers are cached by the raw pointer (a wrapper holds nothing but the pointer)."""
        import torch
        ptr = int(torch.cuda.current_stream().cuda_stream)
        s = self._streams.get(ptr)
        if s is None:
            s = self._streams[ptr] = _cupy_stream(ptr)
        return s

    def empty(self, n: int):
        import cupy
        return cupy.empty((n,), dtype=cupy.float32)

    def sm_count(self) -> int:
        import cupy
        return int(cupy.cuda.Device().attributes["MultiProcessorCount"])

    def compute_capability(self) -> Optional[tuple[int, int]]:
        """(major, minor) of the current device; None where CuPy or a device is missing."""
        if self._cc is None:
            try:
                import cupy
                cc = str(cupy.cuda.Device().compute_capability)
                self._cc = (int(cc[:-1]), int(cc[-1]))
            except Exception:  # no CuPy, no driver, no device: nothing that needs an arch can run
                self._cc = ()
        return self._cc or None

    def smem_optin(self) -> Optional[int]:
        """Bytes of shared memory one block may opt in to (163 KiB on sm_80, 227 on sm_90, 99 on
        sm_86/89; cudaDevAttrMaxSharedMemoryPerBlockOptin), or None where CuPy doesn't report it."""
        import cupy
        v = cupy.cuda.Device().attributes.get("MaxSharedMemoryPerBlockOptin")
        return None if v is None else int(v)

    @staticmethod
    def address(arr) -> int:
        return int(arr.data.ptr)


class _RawStream:
    """A raw cudaStream_t in the CUDA stream protocol (``__cuda_stream__``: version 0, pointer)."""

    def __init__(self, ptr: int):
        self.ptr = ptr

    def __cuda_stream__(self):
        return (0, self.ptr)


def _cupy_stream(ptr: int):
    """A CuPy stream object for a stream CuPy does not own. CuPy 14 has Stream.from_external
    (the protocol) and deprecates ExternalStream; CuPy 12/13 have only ExternalStream."""
    import cupy
    if hasattr(cupy.cuda.Stream, "from_external"):
        return cupy.cuda.Stream.from_external(_RawStream(ptr))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, message="ExternalStream is deprecated")
        return cupy.cuda.ExternalStream(ptr)


_backend: Optional[object] = None


def backend():
    global _backend
    if _backend is None:
        _backend = CupyBackend()
    return _backend


@contextlib.contextmanager
def use_backend(b):
    """Run prepare/launch against another backend (the CPU emulator in the tests)."""
    global _backend
    old = _backend
    _backend = b
    try:
        yield b
    finally:
        _backend = old
