r"""Probe plugin: NVIDIA CUTLASS's Ampere mma.sync TF32 GEMM beside stage 12, on the ladder's
inputs, checked and timed by the one engine. Question it answers: how fast does tuned mma.sync
code with rounded operands (what stage 12 was asked to reach: 60% of cuBLAS tf32) run on the GPU in hand?

Build first (nvcc and a CUTLASS checkout, headers only), then run:

    bash reproduce/cutlass-reference.sh CUTLASS_DIR
    python -m compare --plugin reproduce/cutlass_reference.py --kernel x.cutlass.128x128x16s4.half_ulp \
        --kernel cuda.12_tf32_mma --precision tf32 --shape 4096

Every library in .cache/cutlass-reference/ becomes a kernel ``x.cutlass.<tile>s<stages>.<rounding>``:
half_ulp (add 0x1000 to the bits of finite values, stage 12's rounding), rn (cvt.rn.tf32.f32),
trunc (no conversion; the tensor core drops the low 13 bits). The row's config is the library's
own description (tile, warp tile, stages, threads, shared memory, CUTLASS version) plus its commit."""
import ctypes
import glob
import json
import os

from compare.families.plugin import gemm

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
LIBS = os.path.join(ROOT, ".cache", "cutlass-reference")


def _load(path):
    lib = ctypes.CDLL(path)
    lib.cutlass_gemm.restype = ctypes.c_int
    lib.cutlass_gemm.argtypes = [ctypes.c_int] * 3 + [ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p,
                                                      ctypes.c_float, ctypes.c_void_p, ctypes.c_void_p]
    lib.cutlass_status.restype = ctypes.c_char_p
    lib.cutlass_status.argtypes = [ctypes.c_int]
    lib.cutlass_config.restype = ctypes.c_char_p
    return lib


def make(name, lib):
    def matmul(A, B, C, alpha, beta, precision):
        import torch
        M, K = A.shape
        N = B.shape[1]
        if not (A.is_contiguous() and B.is_contiguous() and C.is_contiguous()):
            raise ValueError(f"{name}: row-major contiguous A, B and C only")
        code = lib.cutlass_gemm(M, N, K, float(alpha), A.data_ptr(), B.data_ptr(), float(beta), C.data_ptr(),
                                torch.cuda.current_stream().cuda_stream)
        if code:
            stage = "can_implement" if code < 2000 else "run"
            raise ValueError(f"{name}: CUTLASS {stage} refused {M}x{N}x{K}: "
                             f"{lib.cutlass_status(code).decode()} (128-bit operand alignment needs K % 4 == 0 "
                             f"and N % 4 == 0)")
    return matmul


_libs = sorted(glob.glob(os.path.join(LIBS, "cutlass_*.so")))
if not _libs:
    raise FileNotFoundError(f"no CUTLASS libraries in {LIBS}: build them with "
                            "bash reproduce/cutlass-reference.sh CUTLASS_DIR")
try:
    _commit = open(os.path.join(LIBS, "CUTLASS_COMMIT")).read().strip()
except OSError:
    _commit = "unknown"
for _path in _libs:
    _, _tile, _rounding = os.path.basename(_path)[:-3].split("_", 2)
    _name = f"x.cutlass.{_tile}.{_rounding}"
    _lib = _load(_path)
    gemm(_name, make(_name, _lib), precisions=("tf32",), stage="cutlass_tf32_mma_sync",
         idea="CUTLASS's Ampere mma.sync TF32 GEMM (example 14's kernel), a reference for stage 12",
         config={**json.loads(_lib.cutlass_config()), "rounding": _rounding, "cutlass_commit": _commit})
