"""Triton kernels: naive_blocked, tiled, split_k, stream_k (each module registers itself).

Set TRITON_INTERPRET=1 *before* importing this package to run them on CPU tensors: Triton 3.6
decides interpreter vs. compiler when ``@triton.jit`` decorates each kernel.
"""
# The ladder is the CUDA stages in order, then the Triton-only ones (which borrow their numbers and
# groups): declared first whichever family a program imports first.
import cuda_kernels  # noqa: F401

from . import _triton_key
from . import naive_blocked, split_k, stream_k, tiled  # noqa: F401  (each registers its kernels)
from ._common import interpreting

if not interpreting():
    _triton_key.reuse()     # Triton's cache key from disk: 0.4 s less per process (_triton_key.py)
