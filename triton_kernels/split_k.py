"""Triton stage 3, "split_k": split the K loop over more programs (counterpart of CUDA 10).

The idea
--------
A tile GEMM has one program per BLOCK_M x BLOCK_N tile of C. A 256x256 output is 4 tiles of
128x128: 4 busy SMs out of 132, each walking all of K = 131072 alone (ANCHORS.md: ~10x slower
than cuBLAS). Split-K cuts K into S chunks and launches tiles x S programs; program (t, s)
computes tile t's partial product over chunk s with the same loop as stage "tiled"
(tiled.mac_loop), and the partials are summed afterwards. Two ways to sum them:

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
Overridable with the ``split_k=`` keyword or the TRITON_SPLIT_K environment variable. Otherwise
a small cost model picks it from the SM count (torch's multi_processor_count: 132 on an H100)
and the number of 128x128 tiles: each program's time is proportional to its K chunk (plus a
fixed prologue/epilogue cost), programs run in waves of one per SM, so

    time(S) ~ ceil(tiles*S / SMs) * (ceil(K/S) + overhead)  (+ the reduction pass's traffic)

is minimised over S with each chunk >= 512 (a chunk must amortise the pipeline fill and the
partial's write-out). That naturally prefers S with tiles*S just under a multiple of the SM
count: 256x256x131072 -> S = 33 (132 programs, one wave); 512x512x65536 -> S = 8 (128
programs); 4096^3 -> S = 1. Chunks are multiples of 64 so every BLOCK_K divides them.

The tile config (BLOCK_M/N/K, warps, stages) is autotuned like stage "tiled" (keyed on
M, N, K, chunk, precision and variant; cached on disk with cache_results=True) from a short
list of tiles no larger than 128x128, so the split count's tile arithmetic holds. tf32 and
tf32x3 feed the tensor cores through the same operand preparation as "tiled" (_operands.py:
K-major B; tf32x3 pre-split into TF32 pairs).
"""
from __future__ import annotations

import time
from typing import Optional

import torch
import triton
import triton.language as tl

from compare.registry import Kernel, register

from . import _operands as ops
from ._common import ScratchTuner, autotune_limit, check_gemm_args, env_int, interpreting, sm_count
from .tiled import DOT_PRECISION, INTERPRET_CONFIG, _cfg, _smem_limit, mac, mac_loop, operand_mode, smem_bytes

PRECISIONS = ("fp32", "tf32", "tf32x3")
MIN_CHUNK = 512          # smallest K chunk the heuristic gives one program
CHUNK_ALIGN = 64         # chunks are multiples of every BLOCK_K used
MAX_SPLIT = 4096
NOMINAL_TILE = (128, 128)

# Epilogue modes of the partial-product kernel.
DIRECT, WORKSPACE, ATOMIC = 0, 1, 2

CONFIGS = {
    "ieee": [
        _cfg(128, 128, 32, 8, 3),
        # fastest at 256x256x131072 in results/h200/sweeps/triton-sweep.json (4 stages, 8 warps)
        _cfg(128, 128, 32, 8, 4),
        _cfg(128, 128, 16, 8, 4),
        _cfg(64, 128, 32, 4, 4),
        _cfg(128, 64, 32, 4, 4),
    ],
    "tf32": [
        _cfg(128, 128, 32, 8, 4),
        _cfg(128, 128, 64, 8, 3),
        _cfg(128, 128, 32, 4, 4),
        _cfg(64, 128, 32, 4, 4),
    ],
    "tf32x3+presplit": [
        _cfg(128, 128, 32, 8, 4),
        _cfg(128, 128, 64, 8, 3),
        _cfg(64, 128, 32, 4, 4),
    ],
    "tf32x3": [
        _cfg(128, 128, 32, 8, 3),
        _cfg(64, 128, 32, 4, 4),
    ],
}
_ALL_CONFIGS = list(dict.fromkeys(c for v in CONFIGS.values() for c in v))


def _prune(configs, named_args, **kwargs):
    presplit = bool(kwargs["PRESPLIT"])
    variant = kwargs["PRECISION"] + ("+presplit" if presplit else "")
    mine = set(CONFIGS[variant])
    limit = _smem_limit()
    keep = [c for c in configs if c in mine and smem_bytes(c) <= limit]
    return autotune_limit(keep or [CONFIGS[variant][-1]])


@triton.autotune(
    configs=[INTERPRET_CONFIG] if interpreting() else _ALL_CONFIGS,
    key=["M", "N", "K", "K_CHUNK", "PRECISION", "PRESPLIT", "MODE", "stride_am"],
    prune_configs_by={"early_config_prune": _prune},
    cache_results=True,
)
@triton.heuristics({"EVEN_K": lambda a: a["K"] % a["BLOCK_K"] == 0 and a["K_CHUNK"] % a["BLOCK_K"] == 0})
@triton.jit
def _split_k_kernel(a_ptr, b_ptr, a2_ptr, b2_ptr, c_ptr, w_ptr, M, N, K, K_CHUNK,
                    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                    alpha, beta,
                    PRECISION: tl.constexpr, PRESPLIT: tl.constexpr, MODE: tl.constexpr,
                    HAS_BETA: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    # Axis 0: the output tile, in the grouped order of stage "tiled". Axis 1: the K chunk.
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    k_lo = pid_k * K_CHUNK
    k_hi = tl.minimum(K, k_lo + K_CHUNK)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if PRESPLIT:   # 3xTF32 on pre-split operands: small*big + big*small + big*big
        acc = mac_loop(acc, a2_ptr, b_ptr, offs_am, offs_bn, k_lo, k_hi, stride_am, stride_ak,
                       stride_bk, stride_bn, "tf32", BLOCK_K, EVEN_K)
        acc = mac_loop(acc, a_ptr, b2_ptr, offs_am, offs_bn, k_lo, k_hi, stride_am, stride_ak,
                       stride_bk, stride_bn, "tf32", BLOCK_K, EVEN_K)
        acc = mac_loop(acc, a_ptr, b_ptr, offs_am, offs_bn, k_lo, k_hi, stride_am, stride_ak,
                       stride_bk, stride_bn, "tf32", BLOCK_K, EVEN_K)
    elif PRECISION == "ieee":
        acc = mac_loop(acc, a_ptr, b_ptr, offs_am, offs_bn, k_lo, k_hi, stride_am, stride_ak,
                       stride_bk, stride_bn, PRECISION, BLOCK_K, EVEN_K)
    else:
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
    # adds stay in index order (a masked-out partial adds an exact 0.0).
    for s0 in range(0, S, 4):
        w0 = tl.load(w_ptr + s0 * MN + offs, mask=mask, other=0.0)
        w1 = tl.load(w_ptr + (s0 + 1) * MN + offs, mask=mask & (s0 + 1 < S), other=0.0)
        w2 = tl.load(w_ptr + (s0 + 2) * MN + offs, mask=mask & (s0 + 2 < S), other=0.0)
        w3 = tl.load(w_ptr + (s0 + 3) * MN + offs, mask=mask & (s0 + 3 < S), other=0.0)
        acc += w0
        acc += w1
        acc += w2
        acc += w3
    c_ptrs = c_ptr + (offs // N) * stride_cm + (offs % N) * stride_cn
    out = acc * alpha
    if HAS_BETA:
        out += beta * tl.load(c_ptrs, mask=mask, other=0.0)
    tl.store(c_ptrs, out, mask=mask)


# ---------------------------------------------------------------------------------------------


def choose_split(M: int, N: int, K: int, sms: int, deterministic: bool = True,
                 tile: tuple[int, int] = NOMINAL_TILE) -> tuple[int, int]:
    """(S, K_CHUNK) from the cost model in the module docstring."""
    tiles = triton.cdiv(M, tile[0]) * triton.cdiv(N, tile[1])
    s_max = max(1, min(K // MIN_CHUNK, MAX_SPLIT))
    # Per-program fixed cost in K-steps (pipeline fill, partial write-out); the reduction pass
    # reads S partials per output: bytes converted to K-steps of one SM at FFMA speed (about
    # 84 ns per K-step for a 128x128 tile at 0.39 TFLOP/s per SM vs ~2.5 TB/s over 132 SMs).
    overhead = 128
    best = None
    for s in range(1, s_max + 1):
        chunk = _round_up(triton.cdiv(K, s), CHUNK_ALIGN)
        s_eff = triton.cdiv(K, chunk)
        cost = triton.cdiv(tiles * s_eff, sms) * (chunk + overhead)
        if deterministic and s_eff > 1:
            cost += (s_eff + 2) * M * N * 4 / 2.5e12 / 84e-9
        if best is None or cost < best[0]:
            best = (cost, s_eff, chunk)
    _, s, chunk = best
    return s, chunk


def _round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def split_for(M: int, N: int, K: int, device: torch.device, deterministic: bool,
              split_k: Optional[int] = None) -> tuple[int, int]:
    """(S, K_CHUNK): the keyword, else TRITON_SPLIT_K, else the heuristic."""
    want = split_k if split_k is not None else env_int("TRITON_SPLIT_K")
    if want is None:
        return choose_split(M, N, K, sm_count(device), deterministic)
    if isinstance(want, bool) or not isinstance(want, int) or want < 1:
        raise ValueError(f"split_k must be a positive integer, got {want!r}")
    if want > MAX_SPLIT:
        raise ValueError(f"split_k={want} is more than {MAX_SPLIT} splits")
    chunk = _round_up(triton.cdiv(K, want), CHUNK_ALIGN)
    return triton.cdiv(K, chunk), chunk


class _Plan:
    """Everything one launch needs, allocated once."""

    def __init__(self, A, B, C, alpha, beta, precision, deterministic, split_k=None, operands=None):
        self.M, self.K = A.shape
        self.N = B.shape[1]
        self.C, self.alpha, self.beta, self.precision = C, float(alpha), float(beta), precision
        self.deterministic = deterministic
        self.S, self.chunk = split_for(self.M, self.N, self.K, A.device, deterministic, split_k)
        self.ops = ops.make_operands(A, B, operand_mode(precision, operands))
        if self.S == 1:
            self.mode = DIRECT
        else:
            self.mode = WORKSPACE if deterministic else ATOMIC
        self.W = None
        if self.mode == WORKSPACE:
            n = self.S * self.M * self.N
            if n > 2**31 - 1:
                raise ValueError(f"split-K workspace of {self.S} x {self.M} x {self.N} elements exceeds "
                                 f"32-bit indexing; use fewer splits")
            self.W = torch.empty(n, device=A.device, dtype=torch.float32)
        self.key = (self.M, self.N, self.K, self.chunk, precision, self.ops.mode, self.mode)

    def _partials(self, C_out):
        o = self.ops
        (sam, sak), (sbk, sbn) = o.a_strides, o.b_strides
        M, N = self.M, self.N
        grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), self.S)
        w = self.W if self.W is not None else C_out
        _split_k_kernel[grid](o.a, o.b, o.a2, o.b2, C_out, w, M, N, self.K, self.chunk,
                              sam, sak, sbk, sbn, C_out.stride(0), C_out.stride(1),
                              self.alpha, self.beta,
                              PRECISION=DOT_PRECISION[self.precision], PRESPLIT=o.mode == ops.PRESPLIT,
                              MODE=self.mode, HAS_BETA=self.beta != 0)

    def launch(self):
        C = self.C
        self.ops.fill()
        if self.mode == ATOMIC:
            # C = beta*C first (never reading C when beta == 0), then the splits add into it.
            if self.beta == 0:
                C.zero_()
            elif self.beta != 1:
                C.mul_(self.beta)

        def first(scratch):
            t0 = time.perf_counter()
            self._partials(scratch)
            if scratch.is_cuda:
                torch.cuda.synchronize(scratch.device)
            TUNING[self.key] = time.perf_counter() - t0

        _tuner.ensure(self.key, C, first)
        self._partials(C)
        if self.mode == WORKSPACE:
            # Enough programs to reach every SM a few times over even for a 256x256 output.
            BLOCK = 1024 if self.M * self.N >= 1024 * 4 * sm_count(C.device) else 256
            grid = (triton.cdiv(self.M * self.N, BLOCK),)
            _reduce_kernel[grid](self.W, C, self.M, self.N, self.S, C.stride(0), C.stride(1),
                                 self.alpha, self.beta, HAS_BETA=self.beta != 0, BLOCK=BLOCK, num_warps=4)


_tuner = ScratchTuner()
# (M, N, K, chunk, precision, operand mode, epilogue mode) -> seconds of the first call (tuning).
TUNING: dict = {}


def _matmul(name, A, B, C, alpha, beta, precision, deterministic, split_k, operands):
    check_gemm_args(name, A, B, C, alpha, beta, precision, PRECISIONS)
    _Plan(A, B, C, alpha, beta, precision, deterministic, split_k, operands).launch()
    return C


def split_k_matmul(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, alpha: float = 1.0,
                   beta: float = 0.0, precision: str = "fp32", split_k: Optional[int] = None,
                   operands: Optional[str] = None) -> torch.Tensor:
    """Deterministic two-pass split-K: C = alpha*A@B + beta*C in place; returns C."""
    return _matmul("split_k_matmul", A, B, C, alpha, beta, precision, True, split_k, operands)


def split_k_atomic_matmul(A: torch.Tensor, B: torch.Tensor, C: torch.Tensor, alpha: float = 1.0,
                          beta: float = 0.0, precision: str = "fp32", split_k: Optional[int] = None,
                          operands: Optional[str] = None) -> torch.Tensor:
    """Atomic split-K (non-deterministic in the last bits): C = alpha*A@B + beta*C; returns C."""
    return _matmul("split_k_atomic_matmul", A, B, C, alpha, beta, precision, False, split_k, operands)


def best_config(plan_key) -> Optional[str]:
    """The tile config chosen for a ``_Plan.key`` in this process (None before its first call)."""
    if interpreting():
        return str(INTERPRET_CONFIG)
    M, N, K, chunk, precision, opmode, mode = plan_key
    want = (M, N, K, chunk, DOT_PRECISION[precision], opmode == ops.PRESPLIT, mode)
    for key, cfg in _split_k_kernel.cache.items():
        if tuple(key[:7]) == want:
            return str(cfg)
    return None


def _make_prepare(name: str, deterministic: bool):
    def _prepare(problem, inputs, options=None):
        A, B, C = inputs.A, inputs.B, inputs.C
        check_gemm_args(name, A, B, C, problem.alpha, problem.beta, problem.precision, PRECISIONS)
        plan = _Plan(A, B, C, problem.alpha, problem.beta, problem.precision, deterministic)

        def launch():
            plan.launch()
        launch.plan = plan           # inspectable: launch.plan.S, .chunk, .key
        return launch
    return _prepare


_META = {"split": "cost model on SM count and 128x128 tiles (chunk >= 512); TRITON_SPLIT_K overrides",
         "configs_per_precision": {p: len(v) for p, v in CONFIGS.items()}}

KERNEL = register(Kernel(
    name="triton.split_k", family="triton", stage="split_k", variant="deterministic",
    precisions=PRECISIONS, prepare=_make_prepare("triton.split_k", True), interpretable=True,
    idea="K split over S programs per tile; partials to a workspace, then a fixed-order reduction "
         "applies alpha/beta (bit-identical run to run)",
    meta=_META,
))

KERNEL_ATOMIC = register(Kernel(
    name="triton.split_k_atomic", family="triton", stage="split_k", variant="atomic",
    precisions=PRECISIONS, prepare=_make_prepare("triton.split_k_atomic", False), interpretable=True,
    idea="K split over S programs per tile; C pre-scaled by beta, splits tl.atomic_add alpha*partial "
         "(non-deterministic summation order)",
    meta=_META,
))
