"""Outputs: rows in, files out. Tables and csv/json/markdown (report), plots (plot), shape-set
summaries (sweep), Nsight Compute counters beside the engine's times (profile), and option
comparisons (variants, when present). Modules here may import compare.harness and
compare.families (and third-party libraries), never compare.ci or compare.cli.
"""
