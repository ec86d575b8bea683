"""Triton stage 3, "split_k": split the K loop over more programs (counterpart of CUDA 10).

The idea
--------
A tile GEMM has one program per BLOCK_M x BLOCK_N tile of C. A 256x256 output is 4 tiles of
128x128: 4 busy SMs out of 132, each walking all of K = 131072 alone (a plain tutorial-style Triton kernel measured ~10x slower
than cuBLAS). Split-K cuts K into S chunks and launches tiles x S programs; program (t, s)
computes tile t's partial product over chunk s with the same loop as stage "tiled"
(_gemm.mac), and the partials are summed afterwards. Two ways to sum them:

* ``triton.split_k`` (variant "deterministic"): each program writes its partial to a workspace
  W[s] (S x M x N fp32, allocated once in ``prepare``); a second kernel adds W[0..S-1] in that
  fixed order and applies C = alpha*sum + beta*C. Same bits every run.
* ``triton.split_k_atomic`` (variant "atomic"): C is first scaled in place (C *= beta, or
  zeroed when beta == 0, which never reads C), then every program adds alpha*partial into C
  with ``tl.atomic_add``. No workspace and no second pass over S partials, but float addition
  is not associative and the atomics land in whatever order the hardware runs them: the
  result can differ in the last bits from run to run (labeled non-deterministic).

With S == 1 both variants become the plain tile GEMM with its usual epilogue.

Choosing S
----------
The ``split_k`` option (``--opt split_k=8``, or the keyword of the Python functions) fixes it;
otherwise a small cost model picks it from the SM count (torch's multi_processor_count: 132 on an H100)
and the number of 128x128 tiles: each program's time is proportional to its K chunk (plus a
fixed prologue/epilogue cost), programs run in waves of one per SM, so

    time(S) ~ ceil(tiles*S / SMs) * (ceil(K/S) + overhead)  (+ the reduction pass's traffic)

is minimised over S with each chunk >= 512 (a chunk must amortise the pipeline fill and the
partial's write-out). That naturally prefers S with tiles*S just under a multiple of the SM
count: 256x256x131072 -> S = 33 (132 programs, one wave); 512x512x65536 -> S = 8 (128
programs); 4096^3 -> S = 1. Chunks are multiples of 64 so every BLOCK_K divides them.

The tile config (BLOCK_M/N/K, warps, stages) is chosen like stage "tiled" (options tile= /
autotune=; autotuned on a scratch C, keyed on the shape, chunk, every stride, precision and
epilogue; cached on disk with cache_results=True) from a short list of tiles no larger than
128x128, so the split count's tile arithmetic holds. tf32 and tf32x3 read B through the same
K-major copy as "tiled" (_operands.py); fp32 reads A and B as given (an M-major copy of A cost
6 points at 256x256x131072). ``launch.config`` reports split, chunk, tile and who chose each.
"""
from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl

from compare.families import decompose
from compare.harness.errors import UsageError
from compare.harness.problem import DOT_PRECISION, PRECISIONS
from compare.harness.registry import Kernel, Option, register

from . import _operands as ops
from ._common import check_gemm_args, sm_count
from ._gemm import (ConfigChooser, tile_options, all_configs, candidates, cfg,
                    default_config, even_k, grouped_tile, mac, plan_prepare, read_options, wrapped_range)

MIN_CHUNK = 512          # smallest K chunk the heuristic gives one program
CHUNK_ALIGN = 64         # chunks are multiples of every BLOCK_K used
MAX_SPLIT = 4096
NOMINAL_TILE = (128, 128)

# Epilogue modes of the partial-product kernel.
DIRECT, WORKSPACE, ATOMIC = 0, 1, 2
EPILOGUE_NAMES = {DIRECT: "none (one split)", WORKSPACE: "workspace + fixed-order reduction",
                  ATOMIC: "atomic_add into C"}

CONFIGS = {
    "ieee": [
        cfg(128, 128, 32, 8, 3),
        # fastest at 256x256x131072 in results/h200/sweeps/triton-sweep.json (4 stages, 8 warps)
        cfg(128, 128, 32, 8, 4),
        cfg(128, 128, 16, 8, 4),
        cfg(64, 128, 32, 4, 4),
        cfg(128, 64, 32, 4, 4),
    ],
    "tf32": [
        cfg(128, 128, 32, 8, 4),
        cfg(128, 128, 64, 8, 3),
        cfg(128, 128, 32, 4, 4),
        cfg(64, 128, 32, 4, 4),
    ],
    "tf32x3": [
        cfg(128, 128, 32, 8, 3),
        cfg(64, 128, 32, 4, 4),
    ],
}
# Everything that makes a different kernel or a different best tile (see tiled.TUNE_KEY).
TUNE_KEY = ["M", "N", "K", "K_CHUNK", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
            "stride_cn", "PRECISION", "MODE", "HAS_BETA"]


def _prune(configs, named_args, **kwargs):
    mine = candidates(CONFIGS, kwargs["PRECISION"], named_args["M"], named_args["N"], trim_to_output=False)
    return [c for c in configs if c in mine] or mine


@triton.autotune(
    configs=all_configs(CONFIGS),
    key=TUNE_KEY,
    prune_configs_by={"early_config_prune": _prune},
    cache_results=True,
)
@triton.heuristics({"EVEN_K": lambda a: even_k(a["K"], a["BLOCK_K"], a["K_CHUNK"])})
@triton.jit
def _split_k_kernel(a_ptr, b_ptr, c_ptr, w_ptr, M, N, K, K_CHUNK,
                    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                    alpha, beta,
                    PRECISION: tl.constexpr, MODE: tl.constexpr, HAS_BETA: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    # Axis 0: the output tile, in the grouped order of stage "tiled". Axis 1: the K chunk.
    pid_m, pid_n = grouped_tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    pid_k = tl.program_id(1)

    offs_am = wrapped_range(pid_m, BLOCK_M, M)
    offs_bn = wrapped_range(pid_n, BLOCK_N, N)
    k_lo = pid_k * K_CHUNK
    k_hi = tl.minimum(K, k_lo + K_CHUNK)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc = mac(acc, a_ptr, b_ptr, offs_am, offs_bn, k_lo, k_hi, stride_am, stride_ak,
              stride_bk, stride_bn, PRECISION, BLOCK_K, EVEN_K)

    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn
    if MODE == 0:    # DIRECT: one split, the usual epilogue
        out = acc * alpha
        if HAS_BETA:
            out += beta * tl.load(c_ptrs, mask=c_mask, other=0.0)
        tl.store(c_ptrs, out, mask=c_mask)
    elif MODE == 1:  # WORKSPACE: raw partial to W[pid_k] (M x N, contiguous)
        w_ptrs = w_ptr + pid_k * M * N + offs_cm[:, None] * N + offs_cn[None, :]
        tl.store(w_ptrs, acc, mask=c_mask)
    else:            # ATOMIC: C was pre-scaled by beta; add alpha*partial
        tl.atomic_add(c_ptrs, acc * alpha, mask=c_mask, sem="relaxed")


@triton.jit
def _reduce_kernel(w_ptr, c_ptr, M, N, S, stride_cm, stride_cn, alpha, beta,
                   HAS_BETA: tl.constexpr, BLOCK: tl.constexpr):
    # C = alpha * (W[0] + W[1] + ... + W[S-1]) + beta * C, summed in that order for every
    # element: the same bits on every run. Flat, coalesced walk over the M*N elements.
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    MN = M * N
    mask = offs < MN
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    # Four partials are loaded before any is added, so their loads are in flight together; the
    # adds stay in index order (a masked-out partial adds an exact 0.0). A partial past S gets an
    # element limit of 0 (tl.where on scalars) rather than `mask & (s0 + 1 < S)`: Triton 3.9's
    # interpreter refuses a block mask and'ed with a scalar condition ("mask has unsupported
    # dtype"), and both forms compile to the same predicate.
    for s0 in range(0, S, 4):
        w0 = tl.load(w_ptr + s0 * MN + offs, mask=mask, other=0.0)
        w1 = tl.load(w_ptr + (s0 + 1) * MN + offs, mask=offs < tl.where(s0 + 1 < S, MN, 0), other=0.0)
        w2 = tl.load(w_ptr + (s0 + 2) * MN + offs, mask=offs < tl.where(s0 + 2 < S, MN, 0), other=0.0)
        w3 = tl.load(w_ptr + (s0 + 3) * MN + offs, mask=offs < tl.where(s0 + 3 < S, MN, 0), other=0.0)
        acc += w0
        acc += w1
        acc += w2
        acc += w3
    c_ptrs = c_ptr + (offs // N) * stride_cm + (offs % N) * stride_cn
    out = acc * alpha
    if HAS_BETA:
        out += beta * tl.load(c_ptrs, mask=mask, other=0.0)
    tl.store(c_ptrs, out, mask=mask)


CHOOSER = ConfigChooser(_split_k_kernel, TUNE_KEY)

# ---------------------------------------------------------------------------------------------


def choose_split(M: int, N: int, K: int, sms: int, deterministic: bool = True,
                 tile: tuple[int, int] = NOMINAL_TILE) -> tuple[int, int]:
    """(S, K_CHUNK) from the shared split-K model (compare/families/decompose.py) with this
    family's parameters (TRITON_SPLIT_COST, chunks >= MIN_CHUNK in multiples of CHUNK_ALIGN)."""
    p = decompose.choose_split(M, N, K, sms, tile=tile, chunk_align=CHUNK_ALIGN, min_chunk=MIN_CHUNK,
                               max_splits=MAX_SPLIT, max_workspace_bytes=1 << 62, deterministic=deterministic,
                               cost=decompose.TRITON_SPLIT_COST)
    return p.splits, p.chunk


def split_geometry(K: int, split: int) -> tuple[int, int]:
    """(S, K_CHUNK) for a requested split count: chunks rounded up to CHUNK_ALIGN, so S may come
    out smaller than asked (K=1023, 5 -> chunk 256, 4 splits)."""
    return decompose.split_geometry(K, split, CHUNK_ALIGN, round_unsplit=True)


def split_for(M: int, N: int, K: int, device: torch.device, deterministic: bool,
              split_k: Optional[int] = None) -> tuple[int, int]:
    """(S, K_CHUNK): the requested split, else the heuristic."""
    if split_k is None:
        return choose_split(M, N, K, sm_count(device), deterministic)
    if isinstance(split_k, bool) or not isinstance(split_k, int) or split_k < 1:
        raise UsageError(f"split_k must be a positive integer, got {split_k!r}")
    if split_k > MAX_SPLIT:
        raise UsageError(f"split_k={split_k} is more than {MAX_SPLIT} splits")
    return split_geometry(K, split_k)


class _Plan:
    """Everything one launch needs, allocated once; the tile config is resolved in the first
    launch and everything resolved is reported in ``config``."""

    def __init__(self, A, B, C, alpha, beta, precision, deterministic, options=None):
        options = options or {}
        self.M, self.K = A.shape
        self.N = B.shape[1]
        self.C, self.alpha, self.beta, self.precision = C, float(alpha), float(beta), precision
        self.deterministic = deterministic
        want = options.get("split_k")
        self.S, self.chunk = split_for(self.M, self.N, self.K, A.device, deterministic, want)
        # No N: split-K keeps A as given (the M-major copy didn't pay for narrow outputs).
        mode, mode_by, self.user_config, self.autotune = read_options(options, precision, None)
        self.ops = ops.make_operands(A, B, mode)
        if self.S == 1:
            self.mode = DIRECT
        else:
            self.mode = WORKSPACE if deterministic else ATOMIC
        self.W = None
        if self.mode == WORKSPACE:
            n = self.S * self.M * self.N
            if n > 2**31 - 1:
                raise UsageError(f"split-K workspace of {self.S} x {self.M} x {self.N} elements exceeds "
                                 f"32-bit indexing; use fewer splits")
            self.W = torch.empty(n, device=A.device, dtype=torch.float32)
        self.tile = None
        self.config = {"split_k": self.S, "k_chunk": self.chunk,
                       "split_chosen_by": "user" if want is not None else "heuristic",
                       "epilogue": EPILOGUE_NAMES[self.mode], "operands": mode, "operands_chosen_by": mode_by}

    def _args(self, C) -> tuple:
        o = self.ops
        (sam, sak), (sbk, sbn) = o.a_strides, o.b_strides
        w = self.W if self.W is not None else C
        return (o.a, o.b, C, w, self.M, self.N, self.K, self.chunk, sam, sak, sbk, sbn,
                C.stride(0), C.stride(1), self.alpha, self.beta)

    def _constexprs(self) -> dict:
        return {"PRECISION": DOT_PRECISION[self.precision], "MODE": self.mode, "HAS_BETA": self.beta != 0}

    def launch(self):
        C = self.C
        self.ops.fill()
        if self.tile is None:
            # First launch: choose the tile. The autotuner launches the kernel many times, so it
            # gets a scratch C (atomic mode adds into it) and the plan's workspace (rewritten by
            # every launch anyway).
            default = default_config(CONFIGS, DOT_PRECISION[self.precision], self.M, self.N, trim_to_output=False)
            self.tile, info = CHOOSER.resolve(C, self._args, self._constexprs(), default, self.user_config,
                                              self.autotune, grid_extra=(self.S,))
            self.config.update(info)
        if self.mode == ATOMIC:
            # C = beta*C first (never reading C when beta == 0), then the splits add into it.
            if self.beta == 0:
                C.zero_()
            elif self.beta != 1:
                C.mul_(self.beta)
        CHOOSER.launch(C, self._args(C), self.tile, grid_extra=(self.S,),
                       EVEN_K=even_k(self.K, self.tile.kwargs["BLOCK_K"], self.chunk), **self._constexprs())
        if self.mode == WORKSPACE:
            # Enough programs to reach every SM a few times over even for a 256x256 output.
            BLOCK = 1024 if self.M * self.N >= 1024 * 4 * sm_count(C.device) else 256
            grid = (triton.cdiv(self.M * self.N, BLOCK),)
            _reduce_kernel[grid](self.W, C, self.M, self.N, self.S, C.stride(0), C.stride(1),
                                 self.alpha, self.beta, HAS_BETA=self.beta != 0, BLOCK=BLOCK, num_warps=4)



def _matmul(name, A, B, C, alpha, beta, precision, deterministic, split_k, operands, config):
    check_gemm_args(name, A, B, C, alpha, beta, precision, PRECISIONS)
    opts = {k: v for k, v in (("split_k", split_k), ("operands", operands), ("tile", config)) if v is not None}
    _Plan(A, B, C, alpha, beta, precision, deterministic, opts).launch()
    return C


def split_k_matmul(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, alpha: float = 1.0,
                   beta: float = 0.0, precision: str = "fp32", split_k: Optional[int] = None,
                   operands: Optional[str] = None, config: Optional[str] = None) -> torch.Tensor:
    """Deterministic two-pass split-K: C = alpha*A@B + beta*C in place; returns C."""
    return _matmul("split_k_matmul", A, B, C, alpha, beta, precision, True, split_k, operands, config)


def split_k_atomic_matmul(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, alpha: float = 1.0,
                          beta: float = 0.0, precision: str = "fp32", split_k: Optional[int] = None,
                          operands: Optional[str] = None, config: Optional[str] = None) -> torch.Tensor:
    """Atomic split-K (non-deterministic in the last bits): C = alpha*A@B + beta*C; returns C."""
    return _matmul("split_k_atomic_matmul", A, B, C, alpha, beta, precision, False, split_k, operands, config)


SPLIT_OPTIONS = (Option.count("split_k", "number of K chunks (rounded so chunks are multiples of 64; default: a "
                                         "cost model on the SM count)", maximum=MAX_SPLIT),) + tile_options(CONFIGS)
_META = {"split": "cost model on SM count and 128x128 tiles (chunk >= 512); option split_k overrides",
         "configs_per_precision": {p: len(v) for p, v in CONFIGS.items()},
         "autotune_key": ", ".join(TUNE_KEY)}

KERNEL = register(Kernel(
    name="triton.split_k", family="triton", stage="split_k", variant="deterministic",
    precisions=PRECISIONS, prepare=plan_prepare("triton.split_k", _Plan, True), interpretable=True,
    options=SPLIT_OPTIONS,
    idea="K split over S programs per tile; partials to a workspace, then a fixed-order reduction "
         "applies alpha/beta (bit-identical run to run)",
    meta=_META,
))

KERNEL_ATOMIC = register(Kernel(
    name="triton.split_k_atomic", family="triton", stage="split_k", variant="atomic",
    precisions=PRECISIONS, prepare=plan_prepare("triton.split_k_atomic", _Plan, False), interpretable=True,
    options=SPLIT_OPTIONS,
    idea="K split over S programs per tile; C pre-scaled by beta, splits tl.atomic_add alpha*partial "
         "(non-deterministic summation order)",
    meta=_META,
))
