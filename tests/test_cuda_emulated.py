"""The CUDA stages *run* on a machine without a GPU: the CPU emulator (cuda_kernels/emulator:
one fiber per CUDA thread, barrier-ordered, guard pages on both sides of every buffer) executes
each kernel's real source through its real prepare/launch code, on odd shapes, and the output
is checked against the framework's float64 reference with the framework's tolerance.

What this proves: indexing, tails, predicates, barrier placement, double-buffer hazards, the
beta == 0 rule (C is NaN-poisoned), float4 alignment, grid sizes, split-K and stream-K plans,
the reductions and fixups, options and launch.config. What it can't: speed, races the GPU's
asynchronous copies could lose, and run-to-run determinism (the emulator is deterministic even
for the atomic variants: that claim is tested on the GPU, tests/test_gpu_cuda.py)."""
import os
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import cuda_kernels
from compare.families import decompose
from compare.harness.check import check
from compare.harness.errors import UsageError
from compare.harness.inputs import make_inputs
from compare.harness.problem import Problem
from cuda_kernels import launch as cuda_launch
from cuda_kernels import loader, registry
from cuda_kernels.emulator import EmuBackend, EmuInputs, EmulatorError, GuardedArray, compiler

needs_cxx = pytest.mark.skipif(compiler() is None, reason="no C++ compiler (g++) for the CPU emulator")

# Stage 12's warp-collective tensor-core instructions are beyond the emulator (the spec's
# not_emulated says why; test_stages_the_emulator_cannot_run_say_why checks it is said).
_NOT_EMULATED = {s.name for s in registry.SPECS if s.not_emulated}
KERNELS = {k.name: k for k in cuda_kernels.KERNELS if k.name not in _NOT_EMULATED}
AB = [(1.0, 0.0), (0.5, -1.5), (-2.0, 0.0), (1.0, 1.0)]
HERE = os.path.dirname(os.path.abspath(__file__))
CUDA_DIR = os.path.dirname(os.path.abspath(cuda_kernels.__file__))

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
    if compiler() is None:
        pytest.skip("no C++ compiler (g++) for the CPU emulator")
    be = EmuBackend()
    files = sorted({s.file for s in registry.SPECS if not s.not_emulated})
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:  # g++ runs in parallel
        list(ex.map(lambda f: be.build(f, registry.expressions(f)), files))
    return be


def run(backend, kernel, problem, runs=1, options=None, place="end"):
    """prepare + launch on the emulator; returns (CheckResult, [C after each run], launch)."""
    inputs = make_inputs(problem, device="cpu")
    ei = EmuInputs(inputs, place=place)
    outs = []
    with loader.use_backend(backend):
        launch = kernel.prepare(problem, ei, kernel.parse_options(options or {}))
        for _ in range(runs):
            ei.reset_c(poison=True)
            launch()
            outs.append(ei.c_tensor())
    return check(problem, outs[-1], inputs.ref, inputs.bound), outs, launch


@needs_cxx
@pytest.mark.parametrize("name", list(KERNELS))
def test_stage_on_odd_shapes(backend, name):
    k = KERNELS[name]
    ran = 0
    for i, (M, N, K) in enumerate(SHAPES):
        alpha, beta = AB[i % len(AB)]
        p = Problem(M, N, K, alpha=alpha, beta=beta, seed=i)
        why = k.why_not(p)
        if why:
            assert k.stage in ("vectorized", "bank_conflict_free") and "N % 4 == 0 and K % 4 == 0" in why
            continue
        # Alternate which end of each buffer touches its guard page: both over- and underruns fault.
        place = ("end", "start")[i % 2]
        res, _, launch = run(backend, k, p, place=place)
        assert res.ok, f"{name} {p.shape} alpha={alpha} beta={beta} ({place}): {res.message}"
        cfg = launch.config
        assert {"tile", "threads", "grid", "chosen_by", "BM", "BN", "BK"} <= set(cfg), cfg
        ran += 1
    assert ran >= 3


TILE_CASES = ([("cuda.09_double_buffered", t) for t in registry.TILES_09]
              + [("cuda.10_split_k", t) for t in registry.TILES_10]
              + [(n, t) for n in ("cuda.11_stream_k", "cuda.11_stream_k_atomic") for t in registry.STREAM_K_TILES])


@needs_cxx
@pytest.mark.parametrize("name,tile", TILE_CASES)
def test_every_tile_option(backend, name, tile):
    k = KERNELS[name]
    extra = {"split_k": "3"} if k.stage == "split_k" else {}
    # (260, 516, 40): float4 path, interior tiles next to partial ones in M and N.
    for i, (M, N, K) in enumerate([(129, 260, 100), (200, 68, 264), (65, 129, 47), (260, 516, 40)]):
        alpha, beta = AB[i % len(AB)]
        res, _, launch = run(backend, k, Problem(M, N, K, alpha=alpha, beta=beta), options={"tile": tile, **extra},
                             place=("end", "start")[i % 2])
        assert res.ok, f"{name} {tile} {M}x{N}x{K}: {res.message}"
        assert launch.config["tile"] == tile and launch.config["chosen_by"].startswith("user")


@needs_cxx
@pytest.mark.parametrize("splits", [2, 5, 64])
@pytest.mark.parametrize("shape", [(7, 33, 1000), (130, 128, 1024), (64, 4, 515)])
def test_split_k_forced_counts(backend, splits, shape):
    """Workspace slices, chunk edges, the float4 and scalar reductions, alpha/beta once."""
    for j, name in enumerate(["cuda.10_split_k", "cuda.10_split_k_atomic"]):
        alpha, beta = AB[(splits + j) % len(AB)]
        res, _, launch = run(backend, KERNELS[name], Problem(*shape, alpha=alpha, beta=beta),
                             options={"split_k": str(splits)})
        assert res.ok, f"{name} splits={splits} {shape}: {res.message}"
        assert 1 <= launch.config["split_k"] <= splits
        assert launch.config["split_k"] > 1 or shape[2] <= 16


@pytest.fixture(scope="module")
def small_gpu(backend):
    """The emulator pretending to have 2 SMs: real hybrid plans (stream-K and data-parallel
    tiles in one grid) at shapes small enough to emulate."""
    be = EmuBackend(sm_count=2, place="start")
    be._libs = backend._libs  # same compiled libraries
    return be


# (shape, options, plan mode expected): 2 SMs x 2 blocks of 128x128 = 4 slots.
STREAM_K_CASES = [
    ((260, 516, 70), {}, "hybrid"),                          # 15 tiles: 7 stream-K, 8 data-parallel
    ((260, 516, 70), {"mode": "sk", "grid": "6"}, "sk"),  # 5 iters/tile, 75 over 6 blocks: odd cuts
    ((255, 127, 333), {"mode": "sk", "grid": "5"}, "sk"),  # scalar path, K tail inside a split tile
    ((300, 40, 61), {}, None),                               # N <= 64: the 128x64 tile
    ((33, 2200, 100), {}, "hybrid"),                         # M <= 64: the 64x128 tile, 18 tiles on 8 slots
    ((129, 130, 17), {"mode": "sk", "grid": "3"}, "sk"),  # two iterations per tile, one of one k
    ((7, 9, 3), {"mode": "sk"}, "sk"),                       # one iteration: nothing to split
    ((256, 256, 64), {"mode": "dp"}, "dp"),
    ((20, 300, 200), {"mode": "sk", "grid": "7"}, "sk"),  # M <= 32: the 32x128 tile (2 warps)
    ((300, 20, 203), {"mode": "sk", "grid": "9"}, "sk"),  # N <= 32: the 128x32 tile, scalar path
    ((50, 60, 1000), {"mode": "sk", "grid": "5"}, "sk"),  # M, N <= 64: the 64x64 tile; 5 partials on 8 fixup lanes
    ((100, 120, 501), {}, "sk"),                             # one 128x128 tile < 2 SMs: the 64x128 tile
    ((70, 100, 2000), {"mode": "sk", "grid": "40"}, "sk"),  # ~21 partials per tile: the 8-lane fixup, odd counts
]


@needs_cxx
@pytest.mark.parametrize("name", ["cuda.11_stream_k", "cuda.11_stream_k_atomic"])
@pytest.mark.parametrize("case", range(len(STREAM_K_CASES)))
def test_stream_k_plans(small_gpu, name, case):
    shape, opts, mode = STREAM_K_CASES[case]
    alpha, beta = AB[case % len(AB)]
    p = Problem(*shape, alpha=alpha, beta=beta, seed=case)
    res, _, launch = run(small_gpu, KERNELS[name], p, options=opts, place=("end", "start")[case % 2])
    cfg = launch.config
    assert res.ok, f"{name} {shape} {opts}: {res.message} ({cfg})"
    if mode:
        assert cfg["mode"] == mode, cfg
    if "grid" in opts and cfg["sk_tiles"]:
        assert cfg["sk_blocks"] == min(int(opts["grid"]), cfg["sk_tiles"] * cfg["iters_per_tile"])
    assert cfg["tile"] == cuda_launch.stream_k_tile(p.M, p.N, p.K, small_gpu.sm_count())
    assert cfg["grid"][0] == cfg["sk_blocks"] + cfg["tiles"] - cfg["sk_tiles"]
    if cfg["mode"] == "hybrid":
        assert 0 < cfg["sk_tiles"] < cfg["tiles"]


@needs_cxx
def test_stream_k_fixup_lanes_follow_the_partial_count(small_gpu):
    """Few tiles of many partials get the 8-lane fixup, many tiles of few partials the 1-lane one;
    both sum to the float64 reference (the 8-lane one is the case list's 70x100x2000)."""
    k = KERNELS["cuda.11_stream_k"]
    for shape, opts, lanes in (((70, 100, 2000), {"mode": "sk", "grid": "40"}, 8),
                               ((260, 516, 70), {"mode": "sk", "grid": "6"}, 1)):
        res, _, launch = run(small_gpu, k, Problem(*shape), options=opts)
        assert res.ok, res.message
        assert f"({lanes} lane" in launch.config["fixup"], launch.config


def test_stream_k_plan_covers_every_iteration_once():
    for tiles, ipt, sms, bps, kw in [(15, 5, 2, 2, {}), (960, 125, 132, 2, {}), (64, 63, 132, 2, {}),
                                      (7, 3, 4, 2, {"mode": "sk", "sk_blocks": 5}), (1089, 257, 132, 2, {})]:
        p = decompose.stream_k_plan(tiles, ipt, sms, bps, **kw)
        total = p.sk_tiles * ipt
        ranges = [p.block_range(b) for b in range(p.sk_blocks)]
        assert sum(e - s for s, e in ranges) == total
        assert all(r[1] == n[0] for r, n in zip(ranges, ranges[1:]))
        assert (ranges[0][0] if ranges else 0) == 0 and (ranges[-1][1] if ranges else 0) == total
        assert max((e - s for s, e in ranges), default=0) - min((e - s for s, e in ranges), default=0) <= 1
        assert p.grid == p.sk_blocks + tiles - p.sk_tiles
        if p.mode == "hybrid":  # the data-parallel tiles fill whole waves
            assert (tiles - p.sk_tiles) % p.slots == 0 and p.slots <= p.sk_tiles < 2 * p.slots


def test_stream_k_tile_heuristic():
    """Few 128x128 tiles: 64-row tiles, unless K is long and 64 rows pad no less than 128."""
    t = cuda_launch.stream_k_tile
    assert t(1000, 1000, 1000) == "64x128x16"            # 64 tiles < 132 SMs
    assert t(1024, 1024, 16384) == "128x128x16"          # long K, no padding saved
    assert t(257, 255, 65537) == "64x128x16"             # long K, 320 rows padded instead of 384
    assert t(4096, 4096, 4096) == "128x128x16"           # a full wave of 128x128 tiles
    assert t(50, 60, 10**6) == "64x64x16" and t(20, 4096, 64) == "32x128x16"
    assert t(16, 48, 655360) == t(32, 64, 10**5) == "32x64x16"    # tiny outputs: no 128-wide tile
    assert t(32, 65, 10**5) == "32x128x16"
    # A wave or more of 128x128 tiles that leave > 5% of their rows empty: 64-row tiles.
    assert t(300, 8192, 28672) == t(448, 4096, 14336) == t(960, 8192, 8192) == "64x128x16"  # 22 / 12.5 / 6.25%
    assert t(4097, 4095, 255) == t(768, 5120, 13824) == "128x128x16"    # 1.5% / 0% empty
    assert t(200, 16384, 8192) == "128x128x16"                            # 64-row tiles pad 256 too


def test_pads_many_rows():
    p = cuda_launch.pads_many_rows
    assert p(300, 0.1) and p(320, 0.1) and p(272, 0.1) and p(448, 0.1) and p(130, 0.1) and p(830, 0.07)
    assert not p(830, 0.1) and not p(960, 0.07) and not p(4097, 0.05) and not p(128, 0) and not p(200, 0)


def test_stream_k_heuristic_on_the_headline_shapes():
    def plan(M, N, K):
        bm, bn, bk, _, _, bps = registry.STREAM_K_TILES[cuda_launch.stream_k_tile(M, N, K)]
        return decompose.stream_k_plan(decompose.cdiv(M, bm) * decompose.cdiv(N, bn), decompose.cdiv(K, bk), 132, bps)
    assert plan(1000, 1000, 1000).mode == "sk"           # 64 tiles on 264 slots
    assert plan(3000, 5000, 2000).mode == "hybrid"       # 960 tiles = 3.64 waves of 264
    assert plan(4096, 4096, 4096).mode == "dp"           # 1024 tiles = 3.88 waves: 97% full
    assert plan(2048, 2048, 2048).mode == "dp"           # 256 tiles: one wave, 97% full
    assert plan(8, 8, 8).mode == "dp"                    # one iteration
    with pytest.raises(ValueError, match="mode must be one of dp, sk, hybrid"):
        decompose.stream_k_plan(4, 4, 132, 2, mode="magic")


def test_split_plan():
    s, chunk = cuda_launch.split_plan(256, 256, 131072, sm_count=132, bk=16)
    assert s >= 32 and chunk % 16 == 0 and (s - 1) * chunk < 131072 <= s * chunk
    s, chunk = cuda_launch.split_plan(512, 512, 65536, sm_count=132, bk=16)
    assert s >= 8 and chunk >= 256
    assert cuda_launch.split_plan(4096, 4096, 4096, sm_count=132, bk=16) == (1, 4096)
    assert cuda_launch.split_plan(8192, 8192, 8192, sm_count=132, bk=16)[0] == 1
    assert cuda_launch.split_plan(256, 256, 200, sm_count=132, bk=16)[0] == 1  # K too short to split
    s, chunk = cuda_launch.split_plan(255, 127, 1000, sm_count=132, bk=16, splits=7)
    assert chunk % 16 == 0 and (s - 1) * chunk < 1000 <= s * chunk and s <= 7


@pytest.mark.parametrize("name, raw, msg", [
    ("cuda.09_double_buffered", {"tile": "64x64x8"}, "must be one of 128x128x16, 128x128x8, 128x128x8s3, "),
    ("cuda.10_split_k", {"split_k": "0"}, "must be >= 1"),
    ("cuda.10_split_k", {"tile": "128x256x8"}, "must be one of 128x128x16, 128x128x8, 128x128x8s3"),
    ("cuda.11_stream_k", {"mode": "fast"}, "must be one of dp, sk, hybrid"),
    ("cuda.11_stream_k", {"grid": "x"}, "must be an integer"),
    ("cuda.11_stream_k", {"sk_grid": "6"}, "'sk_grid' was renamed: use grid"),
    ("cuda.08_warptile", {"tile": "128x128x8"}, "has no option 'tile'"),
])
def test_options_are_checked(name, raw, msg):
    with pytest.raises(UsageError, match=re.escape(msg)):
        KERNELS[name].parse_options(raw)


def test_no_environment_variable_changes_a_kernel():
    """Knobs are options: the only environment reads under cuda_kernels/ pick tools (the
    emulator's C++ compiler, nvcc's CUDA_HOME), never what a kernel does."""
    allowed = {"CXX", "CUDA_HOME", "CUDA_PATH"}
    bad = []
    for root, _, files in os.walk(CUDA_DIR):
        for f in files:
            if not f.endswith(".py"):
                continue
            text = open(os.path.join(root, f), encoding="utf-8").read()
            for m in re.finditer(r"os\.(?:environ|getenv)", text):
                lit = re.match(r"os\.(?:environ(?:\.get)?[\[(]|getenv\()\s*['\"]([A-Za-z0-9_]+)['\"]", text[m.start():])
                if not lit or lit.group(1) not in allowed:
                    bad.append(f"{f}: {text[m.start():m.start() + 50]!r}")
    assert not bad, "environment reads that are not tool lookups:\n" + "\n".join(bad)


class _StreamCountingBackend:
    """Wraps a backend and counts stream() calls: the launch, not prepare, must ask for it."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0

    def stream(self):
        self.calls += 1
        return self.inner.stream()

    def __getattr__(self, name):
        return getattr(self.inner, name)


@needs_cxx
@pytest.mark.parametrize("name", ["cuda.01_naive", "cuda.09_double_buffered", "cuda.10_split_k",
                                  "cuda.11_stream_k_atomic"])
def test_launch_takes_the_stream_at_call_time(backend, name):
    be = _StreamCountingBackend(backend)
    p = Problem(130, 70, 600)
    ei = EmuInputs(make_inputs(p, device="cpu"))
    with loader.use_backend(be):
        launch = KERNELS[name].prepare(p, ei, KERNELS[name].parse_options({}))
        assert be.calls == 0, "prepare took a stream: launches would go to a stream that may not be current"
        launch()
        launch()
        assert be.calls == 2


@needs_cxx
def test_emulator_reports_out_of_bounds(backend):
    """The upper guard page works: a launch over a grid larger than the matrix faults cleanly."""
    spec = registry.SPECS[0]
    fn = backend.function(spec.file, spec.configs[0], registry.expressions(spec.file))
    A, B, C = GuardedArray(4), GuardedArray(4), GuardedArray(4)
    # Tell the kernel M=N=K=64 while the buffers hold 4 floats: the first read past them faults.
    args = (np.int32(64), np.int32(64), np.int32(64), np.float32(1), A, B, np.float32(0), C)
    with pytest.raises(EmulatorError, match="invalid memory access"):
        fn((4, 1, 1), spec.configs[0].block, args)


def _below_kernel(backend):
    """A 'kernel' that accesses x[-1]: split_k_reduce reads ws[t] and writes C[t]; passing
    the arrays shifted by one element below their start makes it touch element -1."""
    spec = next(s for s in registry.SPECS if s.name == "cuda.10_split_k")
    cfg = spec.config("reduce.scalar")
    return backend.function(spec.file, cfg, registry.expressions(spec.file)), cfg


@needs_cxx
def test_emulator_reports_reads_below_the_start(backend):
    fn, cfg = _below_kernel(backend)
    ws, C = GuardedArray(8, place="start"), GuardedArray(8, place="start")
    ws.array[:] = 1.0
    below = GuardedArray.__new__(GuardedArray)  # same buffer, address one float lower
    below.__dict__.update(ws.__dict__, address=ws.address - 4)
    with pytest.raises(EmulatorError, match="invalid memory access"):
        fn((1, 1, 1), cfg.block, (np.int32(8), np.int32(1), np.float32(1), below, np.float32(0), C))


@needs_cxx
def test_emulator_reports_writes_below_the_start_in_the_slack(backend):
    """With the buffer flush against its upper guard, a write just below its start lands in the
    slack: the canary check after the launch reports it."""
    fn, cfg = _below_kernel(backend)
    ws, C = GuardedArray(8), GuardedArray(7)  # 7 floats: 4 bytes of slack below C
    ws.array[:] = 1.0
    C.array[:] = 0.0
    below = GuardedArray.__new__(GuardedArray)
    below.__dict__.update(C.__dict__, address=C.address - 4)
    with pytest.raises(EmulatorError, match="write below the start of a 7-element buffer"):
        fn((1, 1, 1), cfg.block, (np.int32(8), np.int32(1), np.float32(1), ws, np.float32(0), below))


def test_stages_the_emulator_cannot_run_say_why():
    """Exactly the tensor-core stages are left out, and their specs say why in words (mma.sync and
    ldmatrix are warp collectives; wgmma, TMA and mbarriers are asynchronous hardware the fiber
    model doesn't have); every other stage runs above."""
    left_out = {s.name: s.not_emulated for s in registry.SPECS if s.not_emulated}
    assert set(left_out) == {"cuda.12_tf32_mma", "cuda.13_wgmma_tma"}
    assert "warp-collective" in left_out["cuda.12_tf32_mma"]
    assert "wgmma" in left_out["cuda.13_wgmma_tma"] and "TMA" in left_out["cuda.13_wgmma_tma"]
    k12 = next(k for k in cuda_kernels.KERNELS if k.name == "cuda.12_tf32_mma")
    assert k12.meta["emulated"].startswith("no: mma.sync")  # --list shows it
