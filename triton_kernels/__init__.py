"""Triton kernels: naive_blocked, tiled, split_k, stream_k (each module registers itself).

Set TRITON_INTERPRET=1 *before* importing this package to run them on CPU tensors: Triton 3.6
decides interpreter vs. compiler when ``@triton.jit`` decorates each kernel.
"""
from . import _triton_key
from . import naive_blocked, split_k, stream_k, tiled  # noqa: F401  (each registers its kernels)
from ._common import interpreting

if not interpreting():
    _triton_key.reuse()     # Triton's cache key from disk: 0.4 s less per process (_triton_key.py)
