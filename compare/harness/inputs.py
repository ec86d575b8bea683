"""Inputs are made once per problem and shared by every family.

They are torch tensors on the GPU. Triton takes them as they are; CuPy sees the same memory
through DLPack (zero copy, same pointer: tests/test_gpu_foundation.py checks it). The float64
reference and the per-element error bound are computed once, from those exact fp32 values.

C0 is the starting value of C, identical for every kernel; ``reset_c()`` copies it back into C
before every checked or timed run, so beta != 0 always means the same thing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch

from .problem import Problem, ProblemError

# Keep the inputs of the last problem only: they can be GiBs.
_cache: dict = {}


class NoGPUError(RuntimeError):
    pass


def gpu_available() -> bool:
    try:
        return torch.cuda.is_available() and torch.cuda.device_count() > 0
    except Exception:
        return False


def require_gpu() -> None:
    if not gpu_available():
        raise NoGPUError("no CUDA GPU is visible to torch (torch.cuda.is_available() is False)")


@dataclass
class Inputs:
    problem: Problem
    A: torch.Tensor
    B: torch.Tensor
    C0: torch.Tensor
    C: torch.Tensor
    ref: Optional[torch.Tensor]     # float64 alpha*A@B + beta*C0 (None: operands_only)
    bound: Optional[torch.Tensor]   # float64 |alpha|*|A|@|B| + |beta|*|C0|, the scale of each element's rounding error
    _cupy: dict = field(default_factory=dict, repr=False)

    @property
    def device(self) -> torch.device:
        return self.A.device

    def reset_c(self, poison: bool = False) -> None:
        """C back to C0; with ``poison`` and beta == 0, C is all NaN instead: BLAS says C is not
        read when beta == 0, so a kernel that reads it, or leaves an element unwritten, shows NaN."""
        if poison and self.problem.beta == 0:
            self.C.fill_(float("nan"))
        else:
            self.C.copy_(self.C0)

    def cupy(self, name: str):
        """The CuPy view of A, B or C: same device memory, no copy."""
        if name not in self._cupy:
            import cupy
            self._cupy[name] = cupy.from_dlpack(getattr(self, name))
        return self._cupy[name]


def _key(p: Problem, device: str):
    return (p.M, p.N, p.K, p.alpha, p.beta, p.seed, device)


def check_fits(problem: Problem, device: torch.device) -> None:
    if device.type != "cuda":
        return
    free, total = torch.cuda.mem_get_info(device)
    need = problem.device_bytes()
    if need > free:
        raise ProblemError(
            f"{problem.shape} needs {need / 2**30:.2f} GiB of GPU memory (inputs, output and float64 "
            f"reference) but {torch.cuda.get_device_name(device)} has {free / 2**30:.2f} GiB free "
            f"of {total / 2**30:.2f} GiB")


def make_inputs(problem: Problem, device: Optional[str] = None, operands_only: bool = False) -> Inputs:
    """Seeded inputs for ``problem`` on ``device`` ('cuda' by default; 'cpu' for the interpreter).

    The precision is not part of the data: fp32, tf32 and tf32x3 rows of one shape and seed see
    bit-identical A, B and C0. ``operands_only``: no float64 reference (``ref`` and ``bound``
    None) and no caching, for a compile that checks nothing (compare/harness/precompile.py).
    """
    if device is None:
        require_gpu()
        device = "cuda"
    dev = torch.device(device)
    key = _key(problem, str(dev))
    hit = _cache.get(key)
    if hit is not None:
        hit.problem = problem
        return hit
    if not operands_only:
        _cache.clear()
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        check_fits(problem, dev)

    M, N, K = problem.M, problem.N, problem.K
    gen = torch.Generator(device=dev).manual_seed(problem.seed)
    # Standard normal entries: no zeros, no structure a kernel could exploit, and products whose
    # sums stay O(sqrt(K)), far from overflow at any K we accept.
    A = torch.randn((M, K), generator=gen, device=dev, dtype=torch.float32)
    B = torch.randn((K, N), generator=gen, device=dev, dtype=torch.float32)
    C0 = torch.randn((M, N), generator=gen, device=dev, dtype=torch.float32)
    C = C0.clone()
    if operands_only:
        return Inputs(problem, A, B, C0, C, None, None)

    with torch.no_grad():
        A64, B64 = A.double(), B.double()
        ref = torch.mm(A64, B64).mul_(problem.alpha)
        bound = torch.mm(A64.abs_(), B64.abs_()).mul_(abs(problem.alpha))
        del A64, B64
        if problem.beta != 0:
            ref.add_(C0.double(), alpha=problem.beta)
            bound.add_(C0.double().abs_(), alpha=abs(problem.beta))
    inputs = Inputs(problem, A, B, C0, C, ref, bound)
    _cache[key] = inputs
    return inputs


def clear_cache() -> None:
    _cache.clear()
