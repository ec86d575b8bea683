"""cuBLAS: the baseline row of every group, called through torch (``C.addmm_``, cublasSgemm).

fp32 means TF32 off: torch's matmul precision is set to "ieee" for the call, so cuBLAS runs FFMA
kernels (tests/test_gpu_foundation.py proves it: the fp32 row passes the fp32 tolerance and the
tf32 row fails it). cuBLAS has no 3xTF32 mode, so a tf32x3 row is compared with cuBLAS fp32,
the result of the same accuracy class.
"""
from __future__ import annotations

import contextlib

import torch

from ..harness.registry import Kernel, register


@contextlib.contextmanager
def matmul_precision(tf32: bool):
    """Set torch's fp32 matmul mode for the block and put it back after."""
    m = torch.backends.cuda.matmul
    if hasattr(m, "fp32_precision"):          # torch >= 2.9
        old = m.fp32_precision
        m.fp32_precision = "tf32" if tf32 else "ieee"
        try:
            yield
        finally:
            m.fp32_precision = old
    else:
        old = m.allow_tf32
        m.allow_tf32 = tf32
        try:
            yield
        finally:
            m.allow_tf32 = old


def _prepare(problem, inputs, options=None):
    A, B, C = inputs.A, inputs.B, inputs.C
    alpha, beta = problem.alpha, problem.beta
    tf32 = problem.precision == "tf32"

    def launch():
        with matmul_precision(tf32):
            C.addmm_(A, B, beta=beta, alpha=alpha)
    # cuBLAS picks its own kernel per call; what this row can state is the library, the math mode
    # and the torch build that called it.
    launch.config = {"library": "cuBLAS", "tf32": tf32, "torch": torch.__version__}
    return launch


CUBLAS = register(Kernel(
    name="cublas", family="cublas", stage="cublas", precisions=("fp32", "tf32"),
    prepare=_prepare, idea="vendor library: cublasSgemm via torch (fp32: TF32 off; tf32: tensor cores)",
))
