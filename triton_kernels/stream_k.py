"""Triton "stream_k": the Triton family's general-purpose GEMM (Osama et al., PPoPP'23).

A fixed BLOCK_M x BLOCK_N tile grid leaves SMs idle whenever the tile count is not a multiple of
the SM count: 1000^3 with 128x128 tiles is 64 tiles on 132 SMs (48% busy). Stream-K splits the
*work*, (output tiles) x (K-iterations per tile), evenly over a grid sized to the SMs. Hybrid
form used here ("data-parallel + one-tile stream-K"): the last partial wave's tiles (all tiles
below one wave) have their iterations cut into equal contiguous ranges, one per stream-K
program, which may start and end inside a tile; the other tiles run data-parallel in whole
waves in the same grid. A program whose range covers a whole tile writes C; a partial tile is
written to a workspace slot and summed by a fixup kernel in program order (``triton.stream_k``,
the same bits every run), or ``tl.atomic_add``-ed into a beta-scaled C
(``triton.stream_k_atomic``).

One idea per file:

* stream_k_decomposition.py: the plan's types (Tile, Decomposition) and the wave model that shares
  tiles x K-iterations over a grid;
* stream_k_heuristic.py: the per-shape table (tile, decomposition, operands, b_transpose,
  sk_align, tf32x3_split);
* stream_k_tiny.py: the tiny outputs' programs per SM and K-tile depth (rules over the table's plan);
* stream_k_kernels.py: the @triton.jit kernels;
* stream_k_gemv.py: single rows (M = 1) as a GEMV, its kernels and launch (mode=gemv);
* stream_k_skinny.py: a matrix times 1-8 vectors (N <= 8), A read once (mode=skinny);
* stream_k_gluon.py: tf32 on Hopper as a warp-specialised Gluon GEMM reading B as stored (mode=ws);
* stream_k_plan.py: the options, their implications and conflicts, and the launch;
* _operands.py: operand preparation (16-byte hints where true, aligned copies otherwise);
* the alignment study (PTX and load lanes compiled for sm_90 on a CPU) is a lab tool outside the
  package: ``python -m reproduce.stream_k_study --ptx | --ptx-check | --compile-check | --load-lanes``.

Precisions: fp32 = ``input_precision="ieee"``, tf32 = ``"tf32"``, tf32x3 = ``"tf32x3"``. What was
measured behind the choices: docs/findings.md.
"""
from __future__ import annotations

import torch

from compare.harness.problem import PRECISIONS
from compare.harness.registry import Kernel, register

from ._common import check_gemm_args
from ._gemm import plan_prepare
from .stream_k_decomposition import *  # noqa: F401,F403  (the one stream_k namespace of the tests and docs)
from .stream_k_heuristic import *  # noqa: F401,F403
from .stream_k_heuristic import TF32_ON_GEMV_PATH, TF32_ON_SKINNY_PATH, choose_plan
from .stream_k_kernels import _fixup_kernel, _scale_tiles_kernel, _stream_k_kernel  # noqa: F401
from .stream_k_plan import OPTIONS, _Plan, parse_tile  # noqa: F401

__all__ = ["KERNEL", "KERNEL_ATOMIC", "choose_plan", "stream_k_matmul", "stream_k_atomic_matmul"]


def _matmul(name, A, B, C, alpha, beta, precision, deterministic, options):
    check_gemm_args(name, A, B, C, alpha, beta, precision, PRECISIONS)
    _Plan(A, B, C, alpha, beta, precision, deterministic, options).launch()
    return C


def stream_k_matmul(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, alpha: float = 1.0, beta: float = 0.0,
                    precision: str = "fp32", **options) -> torch.Tensor:
    """Deterministic stream-K: C = alpha*A@B + beta*C in place; returns C. ``options``: the
    kernel's options (tile, mode, grid, sms, operands, b_transpose) as parsed values."""
    return _matmul("stream_k_matmul", A, B, C, alpha, beta, precision, True, options)


def stream_k_atomic_matmul(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, alpha: float = 1.0,
                           beta: float = 0.0, precision: str = "fp32", **options) -> torch.Tensor:
    """Stream-K with atomic fixup (last bits depend on the order): C = alpha*A@B + beta*C."""
    return _matmul("stream_k_atomic_matmul", A, B, C, alpha, beta, precision, False, options)


STAGE = "stream_k"   # stage 11 of the ladder (declared with the CUDA stages, cuda_kernels/registry.py)
_GEMV_PRECISIONS = "fp32/tf32x3/tf32" if TF32_ON_GEMV_PATH else "fp32/tf32x3"
_SKINNY_PRECISIONS = "fp32/tf32x3/tf32" if TF32_ON_SKINNY_PATH else "fp32/tf32x3"
_META = {"heuristic": f"M = 1 in {_GEMV_PRECISIONS}: a GEMV (mode=gemv); N <= 8 in {_SKINNY_PRECISIONS}: A read "
                      "once for all columns, K split to fill the SMs, K steps rotated by program where K is not "
                      "split and N >= 3, B's rows read in place where N <= 7 and M <= 32 N (mode=skinny); mode=gemv / mode=skinny at tf32 "
                      "multiply TF32-truncated inputs on the FFMA pipe; tf32 on sm_90 with N >= 64 and "
                      "TMA-readable operands, 128 < M < 6144 where tiles x K ranges fill the SMs, or a small problem "
                      "(K <= 2048, M*N <= 8M) of M > 64 and 8+ tiles: the warp-specialised Gluon GEMM (mode=ws); "
                      "else tile by M (16/32/64/128 rows x 128 x 32), "
                      "dp vs hybrid stream-K by wave fill; "
                      "tf32/tf32x3 with few rows, and tf32 tiny outputs of <= 64 columns, compute C^T = B^T A^T "
                      "(b_transpose=swap); tf32 tiny outputs run one stream-K program per SM; "
                      "small and mid problems of K <= 512: fp32 64x64x16 tiles, tf32x3 128x64x32 (fp32's "
                      "plan at K <= 52); "
                      "tf32x3 splits operands into TF32 parts by their copies where that pays (tf32x3_split); "
                      "options tile/mode/grid/sms/operands/b_transpose/sk_align/tf32x3_split/gemv_tile/k_splits/"
                      "skinny_tile/skinny_splits/skinny_order/ws_tile override",
         "alignment": "16-byte hints where strides are multiples of 4, aligned copies otherwise"}


KERNEL = register(Kernel(
    name="triton.stream_k", family="triton", stage=STAGE, variant="deterministic",
    precisions=PRECISIONS, prepare=plan_prepare("triton.stream_k", _Plan, True), interpretable=True,
    options=OPTIONS,
    idea="stream-K: the last partial wave's tiles x K-iterations split evenly over the SMs; split tiles' "
         "partials summed in a fixed order by a fixup kernel (bit-identical run to run)",
    meta=_META,
))

KERNEL_ATOMIC = register(Kernel(
    name="triton.stream_k_atomic", family="triton", stage=STAGE, variant="atomic",
    precisions=PRECISIONS, prepare=plan_prepare("triton.stream_k_atomic", _Plan, False), interpretable=True,
    options=OPTIONS,
    idea="stream-K with split tiles pre-scaled by beta and their segments tl.atomic_add'ed "
         "(non-deterministic summation order)",
    meta=_META,
))
