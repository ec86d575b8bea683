"""Helpers for a plugin file: a kernel of your own in a few lines (docs/design.md, "Your own kernel").

Each helper builds a :class:`compare.harness.registry.Kernel` of family ``plugin``, registers it
and returns it; from there it is a row like any other (checked against float64 with C
NaN-poisoned, timed by the one engine, next to cuBLAS, in asv's classes of its group).

* :func:`triton_gemm`: a ``@triton.jit`` function with the ladder's argument list;
* :func:`cuda_gemm`: a ``__global__`` function in your own ``.cu`` file, compiled by the ladder's
  loader (NVRTC through CuPy on a GPU, the CPU emulator in tests);
* :func:`gemm`: any Python callable ``matmul(A, B, C, alpha, beta, precision)`` that writes C in
  place on torch's current stream.

Stage: by default every plugin kernel gets a stage of its own, named after the kernel, in
``group`` (naive, tiled or split_k; default tiled): the group decides which cuBLAS-headed
comparison and which asv classes it joins. ``stage=`` names an existing stage instead (e.g.
"tiled", to sit on that rung), or a new one shared by several kernels.
"""
from __future__ import annotations

import os
import sys
from typing import Callable, Optional

from ..harness.problem import DOT_PRECISION
from ..harness.registry import GROUPS, Kernel, Stage, declare_stage, register, stages

# triton_gemm imports Triton and cuda_gemm cuda_kernels (importing it registers the CUDA ladder):
# a plugin of one kind loads only its own.

FAMILY = "plugin"


def _stage(name: str, stage: Optional[str], group: Optional[str], idea: str) -> str:
    """The kernel's stage: an existing one (its group must agree) or a new one in ``group``."""
    ladder = stages()     # the families' stages first: a plugin's stage is numbered after them
    have = next((s for s in ladder if s.name == (stage or name)), None)
    if have is not None:
        if group is not None and group != have.group:
            raise ValueError(f"kernel {name!r}: stage {have.name!r} is in group {have.group!r}, not {group!r}")
        return have.name
    group = group or "tiled"
    if group not in GROUPS:
        raise ValueError(f"kernel {name!r}: unknown group {group!r}; known: {', '.join(GROUPS)}")
    # numbered after every stage so far: the ladder's come first in tables and plots
    return declare_stage(Stage(1 + max(s.number for s in ladder), stage or name, group,
                               idea or f"plugin kernel {name}")).name


def gemm(name: str, matmul: Callable, *, group: Optional[str] = None, stage: Optional[str] = None,
         precisions: tuple = ("fp32",), idea: str = "", interpretable: bool = False,
         config: Optional[dict] = None) -> Kernel:
    """Register ``matmul(A, B, C, alpha, beta, precision)``: C = alpha*A@B + beta*C in place on
    torch's current stream, C not read when beta == 0. ``config``: what the row reports."""
    return _register(name, matmul, None, group=group, stage=stage, precisions=precisions, idea=idea,
                     interpretable=interpretable, config=config, where=_where(matmul))


def _register(name, matmul, check, *, group, stage, precisions, idea, interpretable, config, where) -> Kernel:
    """``config``: a dict, or a function of the problem's precision giving one (the row's config)."""
    def prepare(problem, inputs, options=None):
        A, B, C = inputs.A, inputs.B, inputs.C
        alpha, beta, precision = problem.alpha, problem.beta, problem.precision
        if check is not None:
            check(A, B, C, alpha, beta, precision)

        def launch():
            matmul(A, B, C, alpha, beta, precision)
        launch.config = dict((config(precision) if callable(config) else config) or {})
        return launch
    return register(Kernel(name=name, family=FAMILY, stage=_stage(name, stage, group, idea),
                           precisions=tuple(precisions), prepare=prepare, idea=idea, interpretable=interpretable,
                           meta={"plugin": where}))


def triton_gemm(name: str, fn, *, constexprs: dict, num_warps: int = 4, group: Optional[str] = None,
                stage: Optional[str] = None, precisions: tuple = ("fp32",), idea: str = "") -> Kernel:
    """Register a ``@triton.jit`` GEMM with the ladder's arguments and launch:

    ``fn(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
    stride_cn, alpha, beta, **constexprs)`` on a 1-D grid of ``cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)``
    programs (``constexprs`` holds BLOCK_M and BLOCK_N). If ``fn`` takes ``PRECISION`` it gets the
    problem's ``tl.dot`` input precision ("ieee" for fp32), if it takes ``HAS_BETA``, ``beta != 0``.
    It runs under ``--interpret`` too (the Triton interpreter on CPU tensors)."""
    import triton
    from triton_kernels._common import check_gemm_args
    bm, bn = constexprs["BLOCK_M"], constexprs["BLOCK_N"]
    takes = set(fn.arg_names)

    def check(A, B, C, alpha, beta, precision):
        check_gemm_args(name, A, B, C, alpha, beta, precision, precisions)

    def matmul(A, B, C, alpha, beta, precision):
        M, K = A.shape
        N = B.shape[1]
        extra = dict(constexprs)
        if "PRECISION" in takes:
            extra["PRECISION"] = DOT_PRECISION[precision]
        if "HAS_BETA" in takes:
            extra["HAS_BETA"] = beta != 0
        fn[(triton.cdiv(M, bm) * triton.cdiv(N, bn),)](
            A, B, C, M, N, K, A.stride(0), A.stride(1), B.stride(0), B.stride(1), C.stride(0), C.stride(1),
            float(alpha), float(beta), num_warps=num_warps, **extra)

    def config(precision):
        dot = {"input_precision": DOT_PRECISION[precision]} if "PRECISION" in takes else {}
        return {**constexprs, "num_warps": num_warps, **dot}

    return _register(name, matmul, check, group=group, stage=stage, precisions=precisions, idea=idea,
                     interpretable=True, config=config,
                     where=_where(getattr(fn, "fn", fn)))


class _Entry:
    """What cuda_kernels.loader's backends need of a configuration: the name expression to
    compile and fetch, and the dynamic shared memory to opt in to."""

    def __init__(self, expr: str, smem_dynamic: int = 0):
        self.expr, self.smem_dynamic = expr, smem_dynamic


def cuda_gemm(name: str, source: str, entry: str, *, tile: tuple = (32, 32), block: tuple = (32, 32, 1),
              smem_dynamic: int = 0, group: Optional[str] = None, stage: Optional[str] = None,
              idea: str = "") -> Kernel:
    """Register ``entry``, a ``__global__`` function (or a template instance, e.g.
    ``"my_gemm<64>"``) in the .cu file ``source``, with the ladder's arguments
    ``(int M, int N, int K, float alpha, const float* A, const float* B, float beta, float* C)``
    (row-major, contiguous) on a 1-D grid of ``cdiv(M, tile[0]) * cdiv(N, tile[1])`` blocks of
    ``block`` threads. ``source`` is a path, relative to the plugin file; ``#include "common.cuh"``
    and the ladder's other headers resolve to cuda_kernels/. Compiled once per process by
    cuda_kernels.loader (NVRTC via CuPy); fp32 only."""
    import numpy as np
    from cuda_kernels import loader
    path = os.path.abspath(os.path.join(os.path.dirname(_caller_file()), source))
    if not os.path.isfile(path):
        raise FileNotFoundError(f"kernel {name!r}: CUDA source {path} is not a file")
    cfg = _Entry(entry, smem_dynamic)
    tm, tn = tile

    def prepare(problem, inputs, options=None):
        A, B, C = inputs.cupy("A"), inputs.cupy("B"), inputs.cupy("C")
        fn = loader.backend().function(path, cfg, (entry,))
        grid = (-(-problem.M // tm) * -(-problem.N // tn), 1, 1)
        args = (np.int32(problem.M), np.int32(problem.N), np.int32(problem.K), np.float32(problem.alpha),
                A, B, np.float32(problem.beta), C)

        def launch():
            fn(grid, block, args, shared_mem=smem_dynamic, stream=loader.backend().stream())
        launch.config = {"entry": entry, "tile": f"{tm}x{tn}", "block": list(block), "grid": list(grid)}
        return launch
    return register(Kernel(name=name, family=FAMILY, stage=_stage(name, stage, group, idea), precisions=("fp32",),
                           prepare=prepare, idea=idea, meta={"plugin": path}))


def _where(fn) -> str:
    code = getattr(fn, "__code__", None)
    return f"{code.co_filename}:{code.co_firstlineno}" if code else repr(fn)


def _caller_file() -> str:
    """The plugin file that called cuda_gemm (two frames up)."""
    return sys._getframe(2).f_code.co_filename
