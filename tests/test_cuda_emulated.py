"""The CUDA stages *run* on a machine without a GPU: the CPU emulator (cuda_kernels/emulator:
one fiber per CUDA thread, barrier-ordered, guard pages behind every matrix) executes each
kernel's real source through its real prepare/launch code, on odd shapes, and the output is
checked against the framework's float64 reference with the framework's tolerance.

What this proves: indexing, tails, predicates, barrier placement, double-buffer hazards, the
beta == 0 rule (C is NaN-poisoned), float4 alignment, grid sizes, split-K plans and the
reduction. What it can't: speed, and races the GPU's asynchronous copies could lose."""
import os
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

import cuda_kernels
from compare.check import check
from compare.inputs import make_inputs
from compare.problem import Problem
from cuda_kernels import loader, registry
from cuda_kernels.emulator import EmuBackend, EmuInputs, EmulatorError, compiler

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C++ compiler (g++) for the CPU emulator")

KERNELS = {k.name: k for k in cuda_kernels.KERNELS}
AB = [(1.0, 0.0), (0.5, -1.5), (-2.0, 0.0), (1.0, 1.0)]

# Odd shapes from the GPU test's dimension set, kept small enough to emulate quickly; each
# line lists why it is there.
SHAPES = [
    (1, 1, 1),          # one element
    (7, 33, 127),       # nothing aligned, one partial tile in every dimension
    (33, 7, 1),         # K = 1: a single, mostly empty K step
    (127, 255, 33),     # partial tiles, scalar paths
    (255, 1, 1000),     # one column, long K
    (1000, 127, 7),     # many tile rows, short K
    (4097, 7, 33),      # one row past a tile boundary
    (33, 1023, 8),      # K aligned, N not
    (130, 256, 36),     # N, K aligned: float4 paths with M and K tails
    (256, 132, 1000),   # float4 paths, full tiles in M, partial in N
    (1, 4, 8),          # float4 paths, a single row
    (129, 1000, 4),     # float4 paths, one K step, many tile columns
]


@pytest.fixture(scope="module")
def backend():
    be = EmuBackend()
    files = sorted({s.file for s in registry.SPECS})
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:  # g++ runs in parallel
        list(ex.map(be.build, files))
    return be


def run(backend, kernel, problem, runs=1):
    """prepare + launch on the emulator; returns (CheckResult, [C after each run], launch)."""
    inputs = make_inputs(problem, device="cpu")
    ei = EmuInputs(inputs)
    outs = []
    with loader.use_backend(backend):
        launch = kernel.prepare(problem, ei)
        for _ in range(runs):
            ei.reset_c(poison=True)
            launch()
            outs.append(ei.c_tensor())
    return check(problem, outs[-1], inputs.ref, inputs.bound), outs, launch


@pytest.mark.parametrize("name", list(KERNELS))
def test_stage_on_odd_shapes(backend, name, monkeypatch):
    monkeypatch.delenv("CUDA_SPLIT_K", raising=False)
    k = KERNELS[name]
    ran = 0
    for i, (M, N, K) in enumerate(SHAPES):
        alpha, beta = AB[i % len(AB)]
        p = Problem(M, N, K, alpha=alpha, beta=beta, seed=i)
        why = k.why_not(p)
        if why:
            assert k.stage in ("vectorized", "bank_conflict_free") and "N % 4 == 0 and K % 4 == 0" in why
            continue
        res, _, _ = run(backend, k, p)
        assert res.ok, f"{name} {p.shape} alpha={alpha} beta={beta}: {res.message}"
        ran += 1
    assert ran >= 3


@pytest.mark.parametrize("name,tile",
                         [("cuda.09_double_buffered", t) for t in registry.TILES_09]
                         + [(n, t) for n in ("cuda.10_split_k", "cuda.10_split_k_atomic") for t in registry.TILES_10])
def test_both_tiles_of_the_pipelined_stages(backend, name, tile, monkeypatch):
    monkeypatch.setenv("CUDA_TILE_09", tile)
    monkeypatch.setenv("CUDA_TILE_10", tile)
    monkeypatch.setenv("CUDA_SPLIT_K", "3")
    # (260, 516, 40): float4 path, interior 128x256 tiles next to partial ones in M and N.
    for i, (M, N, K) in enumerate([(129, 260, 100), (200, 68, 264), (65, 129, 47), (260, 516, 40)]):
        alpha, beta = AB[i % len(AB)]
        res, _, _ = run(backend, KERNELS[name], Problem(M, N, K, alpha=alpha, beta=beta))
        assert res.ok, f"{name} {tile} {M}x{N}x{K}: {res.message}"


@pytest.mark.parametrize("splits", [2, 5, 64])
@pytest.mark.parametrize("shape", [(7, 33, 1000), (130, 128, 1024), (64, 4, 515)])
def test_split_k_forced_counts(backend, splits, shape, monkeypatch):
    """Workspace slices, chunk edges, the float4 and scalar reductions, alpha/beta once."""
    monkeypatch.setenv("CUDA_SPLIT_K", str(splits))
    for j, name in enumerate(["cuda.10_split_k", "cuda.10_split_k_atomic"]):
        alpha, beta = AB[(splits + j) % len(AB)]
        res, _, launch = run(backend, KERNELS[name], Problem(*shape, alpha=alpha, beta=beta))
        assert res.ok, f"{name} splits={splits} {shape}: {res.message}"
        assert 1 <= launch.splits <= splits
        assert launch.splits > 1 or shape[2] <= 16


def test_split_k_is_bit_identical_run_to_run(backend, monkeypatch):
    monkeypatch.delenv("CUDA_SPLIT_K", raising=False)
    p = Problem(255, 127, 4097, alpha=0.5, beta=-1.5)
    res, outs, launch = run(backend, KERNELS["cuda.10_split_k"], p, runs=2)
    assert res.ok, res.message
    assert launch.splits > 1, "the plan should split a 2x1-tile problem with K=4097"
    assert torch.equal(outs[0], outs[1])


def test_emulator_reports_out_of_bounds(backend):
    """The guard pages work: a launch over a grid larger than the matrix faults cleanly."""
    spec = registry.SPECS[0]
    fn = backend.function(spec.file, spec.configs[0])
    import numpy as np
    from cuda_kernels.emulator import GuardedArray
    A, B, C = GuardedArray(4), GuardedArray(4), GuardedArray(4)
    # Tell the kernel M=N=K=64 while the buffers hold 4 floats: the first read past them faults.
    args = (np.int32(64), np.int32(64), np.int32(64), np.float32(1), A, B, np.float32(0), C)
    with pytest.raises(EmulatorError, match="invalid memory access"):
        fn((4, 1, 1), spec.configs[0].block, args)
