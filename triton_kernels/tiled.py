"""Triton stage 2, "tiled": the autotuned tile GEMM (CUDA stages 03-09, done by the compiler).

The idea
--------
One program computes a BLOCK_M x BLOCK_N tile of C, walking K in BLOCK_K steps with ``tl.dot``
(``mac_loop`` below). What the CUDA ladder does by hand, one .cu file per step, the Triton
compiler does from this one loop, and the autotuner picks the tile sizes:

* 03 shared-memory staging    -> the loads feeding ``tl.dot`` are staged in shared memory
* 04/05 1D/2D register blocking and 08 warptiling -> the layout the compiler gives ``acc``
  (each thread owns a sub-tile of C; warps own contiguous C regions)
* 06 vectorized loads          -> 16-byte global loads where the strides allow (contiguity
  and divisibility-by-16 of the strides are inferred / specialised by the JIT); off multiples
  of 16 (N = 1000) 4-byte ones, whose lanes ``_gemm.wrapped_range`` keeps along the contiguous
  axis (they walked K, one row per lane: 1000^3 fp32 36.8% -> 51.8% of cuBLAS, H100,
  results/h100/explore/round13)
* 07 bank-conflict-free smem   -> swizzled shared layouts
* 09 double buffering          -> ``num_stages``: software pipelining with async copies
* launch order                 -> GROUP_M "grouped" program ordering, so programs running
  together share A row-panels and B column-panels in L2 (the tutorial's swizzle)

Precisions: ``fp32`` = ``input_precision="ieee"`` (FFMA, compared with cuBLAS with TF32 off);
``tf32`` = one tensor-core pass (wgmma on sm_90) on inputs truncated to TF32; ``tf32x3`` = three
TF32 passes on a big/small split of each operand, fp32-class accuracy on tensor cores.

Design choices for the tensor-core paths (checked by compiling for sm_90 on a CPU box and
reading the SASS; the numbers need a GPU run)
----------------------------------------------------------------------------------------------
1. tf32 reads B through a K-major copy. ``wgmma`` takes 32-bit B operands from shared memory
   only K-major; row-major B is N-major, so Triton transposes it on the way into shared memory
   with 4-byte copies (a 128x256x32 tile: 32 scalar LDGSTS per thread per k-step). That is the
   ~40%-of-cuBLAS plateau that a plain tutorial-style autotuned kernel shows on an H200. The launch first writes B^T (N x K, contiguous along
   K) with a coalesced transpose into a workspace allocated in ``prepare``, and the GEMM reads
   B with stride_bk = 1: all copies become 16-byte LDGSTS. The transpose (2*K*N*4 bytes of
   traffic, ~45 us at 4096^2) is inside the timed launch: the user handed us a row-major B.
   (Computing C^T = B^T A^T instead doesn't help: Triton sees through the tl.trans and emits
   the same scalar copies.)
2. tf32x3 is Triton's built-in (three tf32 products per k-step, added into the fp32
   accumulator with rounded adds). Splitting A and B into TF32 pairs once before the launch was
   23% faster but its error grew with K (docs/design.md, "tf32x3 must not accumulate across all
   of K inside the tensor core"), so it is not a production path.
3. The first K step of a tensor-core loop is peeled (``_gemm.mac``): with a zero accumulator
   entering a single loop, ptxas serialises the wgmmas of 128x128 and 256x128 tiles.

The fp32 (ieee) path has no tensor-core constraint. Its FFMA lowering reads B along N from
shared memory either way (compiled both ways: same 160 LDS.128 per 2048 FFMA, and the K-major
variant needs more registers), so it reads the user's B directly, with no copy (A goes through
an M-major copy for wide outputs: _operands.py, fact 3).

Choosing the config
-------------------
Options (``--opt``): ``tile=BMxBNxBK/warps/stages`` fixes one; ``autotune=off`` takes the first
of the precision's list; otherwise the autotuner times the precision's list (those that fit the
GPU's shared memory, <= 6, so an asv process that tunes once stays quick) on a scratch copy of C,
once per tuning key (``TUNE_KEY``: shape, every stride, precision, beta != 0), and every launch
on the real C runs the bare kernel with the chosen config (_gemm.ConfigChooser). ``cache_results
=True`` makes Triton store the timings under ``<TRITON_CACHE_DIR or ~/.triton/cache>``, keyed on
the Triton version, GPU target, kernel source, tuning key and config list, so a fresh process
reads the winner instead of re-timing. Tuning happens in the first launch, which the harness
makes inside ``prepare`` (prepare_s); ``launch.config`` reports what ran and who chose it.

Under TRITON_INTERPRET=1 there is one small config and nothing is timed.
"""
from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl

from compare.harness.problem import DOT_PRECISION, PRECISIONS
from compare.harness.registry import Kernel, Stage, declare_stage, register

from . import _operands as ops
from ._common import check_gemm_args
from ._gemm import (M_MAJOR_A_MIN_N, ConfigChooser, all_configs, tile_options,
                    candidates, cfg, default_config, even_k, grouped_tile, mac, operand_mode, read_options,
                    store_c, wrapped_range)

__all__ = ["CONFIGS", "KERNEL", "TUNE_KEY", "operand_mode", "tiled_matmul"]

# Per precision, a short list, each checked by compiling for sm_90 (registers, spills, wgmma
# pipelining) on a CPU box:
# * ieee (FFMA): 64-128 accumulators per thread, no spills (128x256 / 256x128 / 128x128 with
#   4 warps spill at 255 registers). The main loop is ~90% FFMA; BLOCK_K 16-32.
# * tf32 (wgmma m64nNk8): a warpgroup per 64 rows, wide N; BLOCK_K = 32 fp32 = one 128-byte
#   swizzled row; 3-4 stages of 48-96 KiB fit in 227 KiB.
# * tf32x3 (Triton's in-loop split): the split keeps more registers live, so 128x128 and smaller.
CONFIGS = {
    "ieee": [
        cfg(128, 128, 32, 8, 3),
        cfg(128, 128, 32, 8, 4),
        cfg(128, 128, 16, 8, 4),
        cfg(64, 256, 32, 8, 3),
        cfg(64, 128, 32, 4, 4),
        cfg(128, 64, 32, 4, 4),
    ],
    "tf32": [
        cfg(128, 256, 32, 8, 3),
        cfg(128, 256, 32, 8, 4),
        cfg(256, 128, 32, 8, 3),
        cfg(128, 128, 32, 8, 4),
        cfg(128, 128, 64, 8, 3),
        cfg(64, 256, 32, 4, 3),
    ],
    "tf32x3": [
        cfg(128, 128, 32, 8, 3),
        cfg(128, 128, 16, 8, 4),
        cfg(64, 128, 32, 4, 4),
    ],
}
# Everything that makes a different kernel or a different best tile; the scratch-tuning cache
# (ConfigChooser) is keyed on the same values, so it can't miss a key the autotuner would time.
TUNE_KEY = ["M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn",
            "PRECISION", "HAS_BETA"]


def _prune(configs, named_args, **kwargs):
    mine = candidates(CONFIGS, kwargs["PRECISION"], named_args["M"], named_args["N"], trim_to_output=True)
    return [c for c in configs if c in mine] or mine


@triton.autotune(
    configs=all_configs(CONFIGS),
    key=TUNE_KEY,
    prune_configs_by={"early_config_prune": _prune},
    cache_results=True,
)
@triton.heuristics({"EVEN_K": lambda a: even_k(a["K"], a["BLOCK_K"])})
@triton.jit
def _tiled_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  alpha, beta,
                  PRECISION: tl.constexpr, HAS_BETA: tl.constexpr,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)

    # Rows/columns past the edge wrap around (wrapped_range: % M, % N) instead of being masked:
    # the loads stay unpredicated along M and N, and the wrapped values only feed C elements
    # that are never stored. Only K needs a mask, and only when K is not a multiple of BLOCK_K.
    offs_am = wrapped_range(pid_m, BLOCK_M, M)
    offs_bn = wrapped_range(pid_n, BLOCK_N, N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc = mac(acc, a_ptr, b_ptr, offs_am, offs_bn, 0, K, stride_am, stride_ak, stride_bk,
              stride_bn, PRECISION, BLOCK_K, EVEN_K)

    store_c(acc, c_ptr, pid_m * BLOCK_M + tl.arange(0, BLOCK_M), pid_n * BLOCK_N + tl.arange(0, BLOCK_N),
            M, N, stride_cm, stride_cn, alpha, beta, HAS_BETA)


CHOOSER = ConfigChooser(_tiled_kernel, TUNE_KEY)


class _Plan:
    """One problem's launch: operand workspaces allocated once; the config resolved in the first
    launch (and reported in ``config``)."""

    def __init__(self, A, B, C, alpha, beta, precision, options=None):
        self.M, self.K = A.shape
        self.N = B.shape[1]
        self.C, self.alpha, self.beta, self.precision = C, float(alpha), float(beta), precision
        mode, mode_by, self.user_config, self.autotune = read_options(options, precision, self.N)
        self.ops = ops.make_operands(A, B, mode)
        self.tile = None
        self.config = {"operands": mode, "operands_chosen_by": mode_by}

    def _args(self, C) -> tuple:
        (sam, sak), (sbk, sbn) = self.ops.a_strides, self.ops.b_strides
        return (self.ops.a, self.ops.b, C, self.M, self.N, self.K, sam, sak, sbk, sbn,
                C.stride(0), C.stride(1), self.alpha, self.beta)

    def _constexprs(self) -> dict:
        return {"PRECISION": DOT_PRECISION[self.precision], "HAS_BETA": self.beta != 0}

    def launch(self):
        self.ops.fill()
        if self.tile is None:    # first launch: choose the config (autotuning on a scratch C)
            default = default_config(CONFIGS, DOT_PRECISION[self.precision], self.M, self.N, trim_to_output=True)
            self.tile, info = CHOOSER.resolve(self.C, self._args, self._constexprs(), default, self.user_config,
                                              self.autotune)
            self.config.update(info)
        CHOOSER.launch(self.C, self._args(self.C), self.tile, EVEN_K=even_k(self.K, self.tile.kwargs["BLOCK_K"]),
                       **self._constexprs())



def tiled_matmul(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, alpha: float = 1.0,
                 beta: float = 0.0, precision: str = "fp32", operands: Optional[str] = None,
                 config: Optional[str] = None) -> torch.Tensor:
    """C = alpha*A@B + beta*C in place (float32, any strides); returns C.

    ``operands`` / ``config`` are the kernel's options (see TILE_OPTIONS). A direct call
    allocates the operand workspaces each time; ``prepare`` (the benchmark path) does it once."""
    check_gemm_args("tiled_matmul", A, B, C, alpha, beta, precision, PRECISIONS)
    opts = {k: v for k, v in (("operands", operands), ("tile", config)) if v is not None}
    _Plan(A, B, C, alpha, beta, precision, opts).launch()
    return C


def _prepare(problem, inputs, options=None):
    A, B, C = inputs.A, inputs.B, inputs.C
    check_gemm_args("triton.tiled", A, B, C, problem.alpha, problem.beta, problem.precision, PRECISIONS)
    plan = _Plan(A, B, C, problem.alpha, problem.beta, problem.precision, options)

    def launch():
        plan.launch()
    launch.config = plan.config      # filled in by the first launch (the config is chosen then)
    launch.plan = plan
    return launch


# A Triton-only stage, the counterpart of CUDA's stages 02-09 (Triton's compiler does their steps):
# numbered after its group's first CUDA stage (coalesced, 2).
STAGE = declare_stage(Stage(2, "tiled", "tiled", "autotuned tiles, grouped launch order, software pipelining "
                                                 "(num_stages)"))

KERNEL = register(Kernel(
    name="triton.tiled", family="triton", stage=STAGE.name, precisions=PRECISIONS,
    prepare=_prepare, interpretable=True, options=tile_options(CONFIGS),
    idea="autotuned tiles, GROUP_M launch order, num_stages pipelining; tf32/tf32x3 read a K-major copy "
         "of B, fp32 an M-major copy of A for wide outputs",
    meta={"configs_per_precision": {p: len(v) for p, v in CONFIGS.items()},
          "autotune_key": ", ".join(TUNE_KEY),
          "autotune_cache": "triton.autotune(cache_results=True) under TRITON_CACHE_DIR",
          "operands": {"fp32": f"{ops.M_MAJOR_A} (N >= {M_MAJOR_A_MIN_N}) else {ops.AS_GIVEN}",
                       "tf32": ops.K_MAJOR_B, "tf32x3": ops.K_MAJOR_B}},
))
