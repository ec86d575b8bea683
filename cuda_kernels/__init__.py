"""Handwritten CUDA kernels, one .cu file per optimization stage (registered in registry.py here).

Importing this package registers the kernels and needs neither a GPU nor CuPy: CuPy is imported
on the first compile (cuda_kernels.loader).
"""
from .registry import KERNELS, SPECS  # registers every CUDA kernel

__all__ = ["KERNELS", "SPECS"]
