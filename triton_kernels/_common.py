"""What every Triton module shares: argument checks, the interpreter switch, the SM count.

Nothing here is a GEMM idea of its own; each idea lives in its own module (naive_blocked.py,
tiled.py, split_k.py). _gemm.py holds what the tile GEMMs share (tile loop, launch order,
config choice, options); _operands.py prepares their operands.
"""
from __future__ import annotations

import math
import os
from typing import Iterable

import torch

# Indices inside the kernels are 32-bit (compare.harness.problem.MAX_ELEMENTS says the same).
MAX_OFFSET = 2**31 - 1


def interpreting() -> bool:
    """True when Triton runs kernels in its NumPy interpreter (TRITON_INTERPRET=1).

    Triton 3.6 decides this when ``@triton.jit`` decorates a function (it returns an
    ``InterpretedFunction`` instead of a ``JITFunction``), so the variable has to be set before
    ``triton_kernels`` is imported; reading the same knob here keeps the two decisions equal.
    """
    try:
        from triton import knobs
        return bool(knobs.runtime.interpret)
    except Exception:  # pragma: no cover - older Triton
        return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def _fix_interpreter_scalar_index() -> None:
    """Let the interpreter run ``range()`` over runtime scalars with NumPy >= 2.4.

    Triton 3.6's interpreter holds a scalar argument as a 1-element array and implements
    ``tensor.__index__`` as ``int(array)``; NumPy 2.4 (installed here) raises TypeError for
    ``int()`` of a 1-d array, so ``for k in range(0, K, BLOCK_K)`` fails under TRITON_INTERPRET=1.
    This wraps the interpreter's per-launch patching to use ``array.item()`` (same result, and
    still an error for a block). Applied only when interpreting and only if NumPy needs it; the
    compiled (GPU) path never sees it.
    """
    import numpy as np
    try:
        int(np.ones(1, dtype=np.int32))
        return
    except TypeError:
        pass
    from triton.runtime import interpreter as interp
    orig = getattr(interp, "_patch_lang_tensor", None)
    if orig is None or getattr(orig, "_gemm_ladder_fix", False):
        return

    def _patch_lang_tensor(tensor, scope):
        orig(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.item()))

    _patch_lang_tensor._gemm_ladder_fix = True
    interp._patch_lang_tensor = _patch_lang_tensor


if interpreting():
    _fix_interpreter_scalar_index()


# ---------------------------------------------------------------------------------------------
# Argument checks: every public function goes through check_gemm_args before any launch.


def check_gemm_args(name: str, A, B, C, alpha, beta, precision: str,
                    precisions: Iterable[str]) -> tuple[int, int, int]:
    """Validate C = alpha*A@B + beta*C operands; return (M, N, K) or raise ValueError naming
    the problem. Arbitrary strides are accepted (the kernels take strides); what is refused is
    what would make the result wrong: an output that overlaps itself or an input."""
    precisions = tuple(precisions)
    if precision not in precisions:
        raise ValueError(f"{name}: precision {precision!r} is not supported; choose one of {', '.join(precisions)}")
    for nm, t in (("A", A), ("B", B), ("C", C)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name}: {nm} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype != torch.float32:
            raise ValueError(f"{name}: {nm} must be float32, got {t.dtype}")
        if t.dim() != 2:
            raise ValueError(f"{name}: {nm} must be 2-D, got {t.dim()}-D with shape {tuple(t.shape)}")
    M, K = A.shape
    K2, N = B.shape
    if K2 != K:
        raise ValueError(f"{name}: inner dimensions differ: A is {M}x{K} but B is {K2}x{N}")
    if tuple(C.shape) != (M, N):
        raise ValueError(f"{name}: C must be {M}x{N} (rows of A x columns of B), got {tuple(C.shape)}")
    if min(M, N, K) < 1:
        raise ValueError(f"{name}: every dimension must be >= 1, got M={M} N={N} K={K}")
    devs = {A.device, B.device, C.device}
    if len(devs) != 1:
        raise ValueError(f"{name}: A, B and C must be on one device, got A on {A.device}, "
                         f"B on {B.device}, C on {C.device}")
    dev = A.device
    if interpreting():
        if dev.type != "cpu":
            raise ValueError(f"{name}: TRITON_INTERPRET=1 runs kernels on CPU tensors; got tensors on {dev}")
    elif dev.type != "cuda":
        raise ValueError(f"{name}: tensors are on {dev}; Triton kernels need CUDA tensors "
                         f"(or TRITON_INTERPRET=1, set before importing triton_kernels, for CPU tensors)")
    for nm, t in (("A", A), ("B", B), ("C", C)):
        if any(s < 0 for s in t.stride()):
            raise ValueError(f"{name}: {nm} has a negative stride {t.stride()}")
        last = sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
        if last > MAX_OFFSET:
            raise ValueError(f"{name}: {nm} spans {last + 1} elements; the kernels index with 32-bit "
                             f"integers (at most {MAX_OFFSET + 1})")
    # C is written in place by many programs: two C elements in one address would race.
    for n, s in zip(C.shape, C.stride()):
        if n > 1 and s == 0:
            raise ValueError(f"{name}: C has a zero stride {C.stride()} (an expanded view); it is written "
                             f"in place, so every element needs its own memory")
    rs, cs = C.stride()
    if M > 1 and N > 1 and not (rs >= N * cs or cs >= M * rs):
        raise ValueError(f"{name}: C's strides {C.stride()} make its elements overlap")
    for nm, t in (("A", A), ("B", B)):
        if _overlaps(t, C):
            raise ValueError(f"{name}: C shares memory with {nm}; C is written in place while {nm} "
                             f"is still being read, so pass a separate output")
    for nm, v in (("alpha", alpha), ("beta", beta)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{name}: {nm} must be a finite Python number, got {v!r}")
    return M, N, K


def _span(t: torch.Tensor) -> tuple[int, int]:
    start = t.data_ptr()
    last = sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
    return start, start + (last + 1) * t.element_size()


def _overlaps(a: torch.Tensor, b: torch.Tensor) -> bool:
    (a0, a1), (b0, b1) = _span(a), _span(b)
    return a0 < b1 and b0 < a1


def sm_count(device: torch.device) -> int:
    """Streaming multiprocessors of the GPU (132 on an H100 SXM); 132 under the interpreter so
    CPU tests exercise the same split-count arithmetic as the H100."""
    if device.type != "cuda":
        return 132
    return torch.cuda.get_device_properties(device).multi_processor_count


# An H100's L2: what plans assume under the interpreter (and where torch doesn't report it), so
# CPU tests plan as the H100 does.
DEFAULT_L2_BYTES = 50 * 2**20


def l2_bytes(device: torch.device) -> int:
    """The GPU's L2 cache in bytes (DEFAULT_L2_BYTES without a GPU)."""
    if device.type != "cuda":
        return DEFAULT_L2_BYTES
    return int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or DEFAULT_L2_BYTES)


def compile_sm90(fn, args: dict, constexprs: dict, num_warps: int, num_stages: int):
    """Compile jitted ``fn`` for sm_90 as the JIT would for these argument values (same
    specialisation: pointers and ints divisible by 16 get tt.divisibility=16, ints equal to 1
    become constants, except the parameters the kernel marks ``do_not_specialize``), without a
    GPU. Returns the CompiledKernel (``.asm["ptx"]``)."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend, GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler import compile as triton_compile
    sig, attrs, consts = {}, {}, {}
    for i, name in enumerate(fn.arg_names):
        if name in constexprs:
            sig[name], consts[name] = "constexpr", constexprs[name]
            continue
        specialise = not getattr(fn.params[i], "do_not_specialize", False)
        ty, attr = native_specialize_impl(BaseBackend, args[name], False, specialise, True)
        sig[name] = ty
        if ty == "constexpr":
            consts[name] = args[name]
        if isinstance(attr, str) and attr:
            attrs[(i,)] = BaseBackend.parse_attr(attr)
    return triton_compile(ASTSource(fn, sig, consts, attrs), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": num_warps, "num_stages": num_stages})


# Checks shared by the tile texts every Triton kernel's options take (BMxBNxBK/warps/stages and
# the GEMV / skinny variants): tl.dot needs block dimensions >= 16 and tl.arange powers of two.
def check_block(name: str, v: int, hi: int | None = None) -> None:
    if v < 16 or v & (v - 1) or (hi is not None and v > hi):
        raise ValueError(f"{name}={v} must be a power of two " + (f"in 16..{hi}" if hi else ">= 16"))


def check_warps(warps: int) -> None:
    if warps not in (1, 2, 4, 8, 16):
        raise ValueError(f"warps={warps} must be 1, 2, 4, 8 or 16")


def check_stages(stages: int) -> None:
    if not 1 <= stages <= 8:
        raise ValueError(f"stages={stages} must be 1..8")
