"""Probes: measurements of what the GPU itself allows, beside the ladder. A probe is not a stage:
nothing here is registered with compare.harness.registry, and no probe is timed by the suite's
runner. Each module is a command (``python -m cuda_kernels.probes.NAME``) with its own .cu file
in this folder.
"""
