"""Handwritten CUDA kernels, one .cu file per optimization stage (declared in registry.py,
registered and launched by launch.py).

Importing this package registers the kernels and needs neither a GPU nor CuPy: CuPy is imported
on the first compile (cuda_kernels.loader).
"""
from .launch import KERNELS  # registers every CUDA kernel
from .registry import SPECS

__all__ = ["KERNELS", "SPECS"]
