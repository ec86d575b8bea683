"""Kernel families that live inside compare/: cuBLAS's kernel declaration (cublas, the baseline of
every comparison) and the split-K / stream-K arithmetic the CUDA and Triton families share
(decompose). The other families are the top-level packages cuda_kernels/ and triton_kernels/.
Modules here may import compare.harness (and third-party libraries) only, never compare.outputs,
compare.ci or compare.cli.
"""
