"""What every CUDA stage's launch is made of (cuda_kernels/launch.py and wgmma_launch.py): the
compiled function of a configuration, CuPy views of the operands, the GEMM's argument tuple, a
zero-argument launch of ordered steps on torch's current stream, the config a row reports, and
the arch check of an arch-specific stage.
"""
from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from . import loader
from .heuristics import cdiv
from .registry import Config, StageSpec, expressions


def function(spec: StageSpec, cfg: Config):
    if spec.arch:
        return loader.backend().function(spec.file, cfg, expressions(spec.file), arch=spec.arch)
    return loader.backend().function(spec.file, cfg, expressions(spec.file))


def aligned_rows(problem) -> bool:
    return problem.N % 4 == 0 and problem.K % 4 == 0


def tiles(problem, cfg: Config) -> int:
    bm, bn = cfg.tile
    return cdiv(problem.M, bm) * cdiv(problem.N, bn)


def chosen_by(opts: dict) -> str:
    if not opts:
        return "heuristic"
    return f"user ({', '.join(sorted(opts))}), heuristic (the rest)"


def with_config(launch, config: dict):
    launch.config = config
    return launch


def operands(problem, inputs, vec_needed: bool):
    """CuPy views of A, B, C and whether their base addresses allow 16-byte accesses."""
    A, B, C = inputs.cupy("A"), inputs.cupy("B"), inputs.cupy("C")
    be = loader.backend()
    aligned = all(be.address(x) % 16 == 0 for x in (A, B, C))
    if vec_needed and not aligned:
        raise ValueError("float4 path needs 16-byte aligned A, B and C; got a base address that is not")
    return A, B, C, aligned


def gemm_args(problem, A, B, C):
    return (np.int32(problem.M), np.int32(problem.N), np.int32(problem.K), np.float32(problem.alpha),
            A, B, np.float32(problem.beta), C)


def launcher(*steps):
    """A zero-argument launch of (function, grid, block, args[, dynamic shared bytes]) steps, in
    order, each on torch's current stream as of the call (looked up per call: a CUDA graph
    capture or a side stream that is current when the launch runs gets the work)."""
    def launch():
        stream = loader.backend().stream()
        for fn, grid, block, args, *smem in steps:
            if smem and smem[0]:
                fn(grid, block, args, shared_mem=smem[0], stream=stream)
            else:
                fn(grid, block, args, stream=stream)
    launch.steps = steps   # for probes that time each step (reproduce/probe_launch_steps.py)
    return launch


def geometry(cfg: Config, grid) -> dict:
    bm, bn = cfg.tile
    return {"BM": bm, "BN": bn, "BK": cfg.bk, "threads": cfg.threads, "grid": list(grid)}


# compute capability (major, minor) each arch-specific target runs on.
ARCH_CC = {"sm_90a": (9, 0)}


def needs_arch(spec: StageSpec) -> Callable:
    """supports() of an arch-specific stage: None on a device of that compute capability, else why."""
    want = ARCH_CC[spec.arch]

    def supports(problem) -> Optional[str]:
        cc_of = getattr(loader.backend(), "compute_capability", None)
        cc = cc_of() if cc_of else None
        need = f"needs compute capability {want[0]}.{want[1]} ({spec.arch}: wgmma, setmaxnreg and TMA)"
        if cc is None:
            return f"{need}; no CUDA device here"
        if tuple(cc) != want:
            return f"{need}; this GPU is sm_{cc[0]}{cc[1]}, which has no wgmma"
        return None
    return supports
