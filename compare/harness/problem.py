"""What is being multiplied: C = alpha * A @ B + beta * C, row-major float32 storage.

A Problem is pure data and is validated when it is made, so a bad shape fails before anything
touches a GPU. Whether it fits a particular GPU is checked when its inputs are made
(:func:`compare.harness.inputs.make_inputs`), against that device's free memory.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

# fp32: IEEE FFMA-class products (Triton input_precision="ieee", cuBLAS with TF32 off).
# tf32: one tensor-core pass on TF32-rounded inputs (10-bit mantissa).
# tf32x3: split each input into big+small TF32 parts and do three passes; fp32-class accuracy.
PRECISIONS = ("fp32", "tf32", "tf32x3")
# Problem precision -> tl.dot input_precision, for every Triton kernel and plugin helper: stated
# every time, since tl.dot on fp32 operands defaults to TF32.
DOT_PRECISION = {"fp32": "ieee", "tf32": "tf32", "tf32x3": "tf32x3"}

# Indices inside the kernels are 32-bit; each matrix must have fewer than 2**31 elements.
MAX_ELEMENTS = 2**31 - 1

# Largest K whose fp32 check can still tell fp32 from TF32 (compare/harness/check.py): beyond it the
# rounding error of an fp32 running sum (~0.3 * 2**-24 * sqrt(K) relative) comes within a factor
# of about 3 of the error TF32 input rounding causes (~3e-4 at any K), so a TF32 result could pass
# as fp32 or a correct fp32 one fail. fp32 and tf32x3 problems are limited to it; tf32 is not.
MAX_K_FP32 = 2**22


class ProblemError(ValueError):
    """A problem that can't be run, with the reason in words."""


@dataclass(frozen=True)
class Problem:
    M: int
    N: int
    K: int
    precision: str = "fp32"
    alpha: float = 1.0
    beta: float = 0.0
    seed: int = 0

    def __post_init__(self):
        for dim in ("M", "N", "K"):
            v = getattr(self, dim)
            if isinstance(v, bool) or not isinstance(v, int):
                raise ProblemError(f"{dim} must be an integer, got {v!r}")
            if v < 1:
                raise ProblemError(f"{dim} must be >= 1, got {v}")
        for name, rows, cols in (("A", self.M, self.K), ("B", self.K, self.N), ("C", self.M, self.N)):
            if rows * cols > MAX_ELEMENTS:
                raise ProblemError(
                    f"{name} is {rows}x{cols} = {rows * cols} elements; the kernels index with 32-bit "
                    f"integers, so each matrix must hold at most {MAX_ELEMENTS} elements")
        if self.precision not in PRECISIONS:
            raise ProblemError(f"unknown precision {self.precision!r}; known: {', '.join(PRECISIONS)}")
        if self.precision != "tf32" and self.K > MAX_K_FP32:
            raise ProblemError(
                f"K = {self.K} is over {MAX_K_FP32} = 2**22, the largest K at which the {self.precision} "
                f"check can tell an fp32-accurate result from a TF32 one; use a smaller K or --precision tf32")
        for name in ("alpha", "beta"):
            v = getattr(self, name)
            if not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ProblemError(f"{name} must be a finite number, got {v!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ProblemError(f"seed must be a non-negative integer, got {self.seed!r}")

    @property
    def shape(self) -> str:
        return f"{self.M}x{self.N}x{self.K}"

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K

    def with_(self, **kw) -> "Problem":
        d = dict(M=self.M, N=self.N, K=self.K, precision=self.precision, alpha=self.alpha,
                 beta=self.beta, seed=self.seed)
        d.update(kw)
        return Problem(**d)

    def device_bytes(self) -> int:
        """GPU memory the harness holds for this problem: A, B, C0, C in fp32 and the float64
        reference plus its error-bound matrix (|alpha||A||B| + |beta||C0|)."""
        M, N, K = self.M, self.N, self.K
        fp32 = 4 * (M * K + K * N + 2 * M * N)
        fp64_ref = 8 * 2 * M * N
        # the float64 reference is computed from float64 copies of A and B
        fp64_tmp = 8 * (M * K + K * N)
        return fp32 + fp64_ref + fp64_tmp


_SHAPE_RE = re.compile(r"^\s*(\d+)\s*(?:[xX*]\s*(\d+)\s*[xX*]\s*(\d+))?\s*$")


def split_flags(values) -> list[str]:
    """Repeatable, comma-separable flag values (``--precision fp32,tf32 --precision tf32x3``)."""
    return [x.strip() for v in values or [] for x in v.split(",") if x.strip()]


def parse_precisions(values) -> list[str]:
    """``--precision`` values (default fp32); an unknown one is a ProblemError naming the valid ones."""
    precisions = split_flags(values) or ["fp32"]
    for pr in precisions:
        if pr not in PRECISIONS:
            raise ProblemError(f"unknown precision {pr!r}; valid: {', '.join(PRECISIONS)}")
    return precisions


def parse_shape(text: str) -> tuple[int, int, int]:
    """'4096' -> (4096, 4096, 4096); '256x256x131072' -> (256, 256, 131072).

    A comma is not a separator: '64,64,1024' once ran as two cubes (64 and 1024) without a word;
    it is an error that shows the MxNxK spelling instead."""
    if "," in text:
        parts = [t.strip() for t in text.split(",")]
        hint = f" (one shape: {'x'.join(parts)})" if len(parts) == 3 and all(t.isdigit() for t in parts) else ""
        raise ProblemError(f"malformed shape {text!r}: write one shape as MxNxK{hint}, or one number for a "
                           f"cube; repeat --shape for several shapes")
    m = _SHAPE_RE.match(text)
    if not m:
        raise ProblemError(f"malformed shape {text!r}: write MxNxK (e.g. 512x512x65536) or one number for a cube")
    if m.group(2) is None:
        n = int(m.group(1))
        dims = (n, n, n)
    else:
        dims = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if min(dims) < 1:
        raise ProblemError(f"malformed shape {text!r}: every dimension must be >= 1")
    return dims
