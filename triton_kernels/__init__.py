"""Triton kernels: naive_blocked, tiled, split_k (each module registers itself)."""
