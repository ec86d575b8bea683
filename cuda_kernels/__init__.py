"""Handwritten CUDA kernels, one .cu file per optimization stage (registered in registry.py here)."""
