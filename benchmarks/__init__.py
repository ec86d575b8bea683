"""The asv suite: thin classes generated from compare.registry (see benchmarks/gemm.py, docs/asv.md)."""
