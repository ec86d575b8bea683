"""The asv suite: thin classes generated from compare.harness.registry (see benchmarks/gemm.py, docs/asv.md)."""
