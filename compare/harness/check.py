"""Is a kernel's output right? Two numbers against the float64 reference, one tolerance each.

* ``rel_err``: relative Frobenius error ||C - ref|| / ||ref||, the usual headline number.
* ``worst_err``: max over elements of |C - ref| / bound, with bound = |alpha|*|A||B| + |beta|*|C0|
  (float64). That is the classic componentwise error bound of a dot product (Higham, ch. 3): it
  says how large each element's rounding error may be given its own inputs, so a single wrong
  or unwritten element stands out even in a 8192x8192 output where it would barely move the
  Frobenius norm. NaN or Inf anywhere gives worst_err = inf.

Tolerances (u = unit roundoff of the format the products are formed in):

=========  ==================================================  ==================================
precision  rel_err limit                                       worst_err limit
=========  ==================================================  ==================================
fp32       min(1e-6 + 2 * 2**-23 * sqrt(K), 1.2e-4)            16 * 2**-24 * log2(2K)
tf32x3     same as fp32 (three TF32 passes recover fp32 products)
tf32       4e-3 + 2 * 2**-23 * sqrt(K)                         16 * 2**-11
=========  ==================================================  ==================================

Why those forms: with random data, accumulated rounding errors add like a random walk, so the
Frobenius error of an fp32 sum grows like u*sqrt(K) (a running sum: about 0.3 * 2**-24 * sqrt(K),
1e-5 at K = 131072, 4e-5 at K = 2**22); TF32 rounds each *input* to 10 mantissa bits, an error
of ~2**-11 per product that does not shrink as K grows, so its rel_err sits near 2e-4..5e-4 (about
0.6 * 2**-11 for standard normal inputs) at any K. The sqrt(K) term alone would cross that
(4.9e-4 at K = 2**22, where a one-pass TF32 result measured 3.3e-4 and passed as fp32), so the
fp32 limit stops growing at FP32_REL_CAP = 1.2e-4, under TF32's error by a factor of ~2.5, and K
is limited to MAX_K_FP32 = 2**22 for the fp32-class precisions (compare/harness/problem.py), where a
running fp32 sum still stays ~3x under the cap. That keeps "a TF32 result fails the fp32 check"
true at every K the tool accepts (tests/test_problem_and_check.py checks it at 2**22).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .problem import Problem

U32 = 2.0 ** -24       # fp32 unit roundoff
EPS32 = 2.0 ** -23
U_TF32 = 2.0 ** -11    # TF32 keeps 10 explicit mantissa bits
# The fp32 rel_err limit never exceeds this: TF32 input rounding gives ~3e-4 whatever K is.
FP32_REL_CAP = 1.2e-4


def tolerance(problem: Problem) -> tuple[float, float]:
    """(rel_err limit, worst_err limit) for this problem's precision and K."""
    K = problem.K
    if problem.precision == "tf32":
        return 4e-3 + 2 * EPS32 * math.sqrt(K), 16 * U_TF32
    return min(1e-6 + 2 * EPS32 * math.sqrt(K), FP32_REL_CAP), 16 * U32 * math.log2(2 * K)


@dataclass
class CheckResult:
    ok: bool
    rel_err: float
    worst_err: float
    rel_tol: float
    worst_tol: float
    message: str = ""


def errors(C: torch.Tensor, ref: torch.Tensor, bound: torch.Tensor) -> tuple[float, float]:
    """(relative Frobenius error, worst componentwise error) of C against ref."""
    diff = C.double() - ref
    finite = bool(torch.isfinite(diff).all())
    ref_norm = float(torch.linalg.vector_norm(ref))
    if not finite:
        return math.inf, math.inf
    rel = float(torch.linalg.vector_norm(diff)) / (ref_norm if ref_norm > 0 else 1.0)
    # bound is 0 only where the whole row of A or column of B is 0 and beta*C0 is 0; then any
    # nonzero output is wrong (tiny floor avoids 0/0).
    worst = float((diff.abs_() / bound.clamp_min(1e-300)).max())
    return rel, worst


def check(problem: Problem, C: torch.Tensor, ref: torch.Tensor, bound: torch.Tensor) -> CheckResult:
    rel_tol, worst_tol = tolerance(problem)
    rel, worst = errors(C, ref, bound)
    if math.isinf(rel):
        n_bad = int((~torch.isfinite(C)).sum())
        return CheckResult(False, rel, worst, rel_tol, worst_tol,
                           f"{n_bad} of {C.numel()} elements are NaN/Inf (unwritten, or C read with beta=0)")
    problems = []
    if rel > rel_tol:
        problems.append(f"relative error {rel:.2e} > {rel_tol:.1e}")
    if worst > worst_tol:
        problems.append(f"worst element error {worst:.2e} > {worst_tol:.1e} (x its rounding bound)")
    return CheckResult(not problems, rel, worst, rel_tol, worst_tol, "; ".join(problems))
