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
from cuda_kernels import heuristics
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
    assert cfg["tile"] == heuristics.stream_k_tile(p.M, p.N, p.K, small_gpu.sm_count())
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
    t = heuristics.stream_k_tile
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
    # A matrix times 9-127 vectors (M > 64): 128x32 up to 32 columns; 33-64: 64x64 unless 128-row
    # tiles x K-iterations of 16 reach 96 x 132 = 12672; 65-127: 64x128.
    assert t(1200, 30, 895) == "128x32x16"
    assert t(1200, 59, 895) == "64x64x16"                  # 10 x 56 = 560
    assert t(13550, 41, 15980) == "128x64x16"              # 106 x 999 = 105894
    assert t(3409, 38, 14834) == "128x64x16"               # 27 x 928 = 25056
    assert t(3409, 38, 7000) == "64x64x16"                 # 27 x 438 = 11826
    assert t(24057, 99, 1178) == t(1000, 127, 10**5) == "64x128x16"
    assert t(1000, 128, 1000) == "64x128x16" and t(20000, 128, 1000) == "128x128x16"  # 128 columns: as before


def test_pads_many_rows():
    p = heuristics.pads_many_rows
    assert p(300, 0.1) and p(320, 0.1) and p(272, 0.1) and p(448, 0.1) and p(130, 0.1) and p(830, 0.07)
    assert not p(830, 0.1) and not p(960, 0.07) and not p(4097, 0.05) and not p(128, 0) and not p(200, 0)


def test_stream_k_heuristic_on_the_headline_shapes():
    def plan(M, N, K):
        bm, bn, bk, _, _, bps = registry.STREAM_K_TILES[heuristics.stream_k_tile(M, N, K)]
        return decompose.stream_k_plan(decompose.cdiv(M, bm) * decompose.cdiv(N, bn), decompose.cdiv(K, bk), 132, bps)
    assert plan(1000, 1000, 1000).mode == "sk"           # 64 tiles on 264 slots
    assert plan(3000, 5000, 2000).mode == "hybrid"       # 960 tiles = 3.64 waves of 264
    assert plan(4096, 4096, 4096).mode == "dp"           # 1024 tiles = 3.88 waves: 97% full
    assert plan(2048, 2048, 2048).mode == "dp"           # 256 tiles: one wave, 97% full
    assert plan(8, 8, 8).mode == "dp"                    # one iteration
    with pytest.raises(ValueError, match="mode must be one of dp, sk, hybrid"):
        decompose.stream_k_plan(4, 4, 132, 2, mode="magic")


def test_split_plan():
    s, chunk = heuristics.split_plan(256, 256, 131072, sm_count=132, bk=16)
    assert s >= 32 and chunk % 16 == 0 and (s - 1) * chunk < 131072 <= s * chunk
    s, chunk = heuristics.split_plan(512, 512, 65536, sm_count=132, bk=16)
    assert s >= 8 and chunk >= 256
    assert heuristics.split_plan(4096, 4096, 4096, sm_count=132, bk=16) == (1, 4096)
    assert heuristics.split_plan(8192, 8192, 8192, sm_count=132, bk=16)[0] == 1
    assert heuristics.split_plan(256, 256, 200, sm_count=132, bk=16)[0] == 1  # K too short to split
    s, chunk = heuristics.split_plan(255, 127, 1000, sm_count=132, bk=16, splits=7)
    assert chunk % 16 == 0 and (s - 1) * chunk < 1000 <= s * chunk and s <= 7


@pytest.mark.parametrize("name, raw, msg", [
    ("cuda.09_double_buffered", {"tile": "64x64x8"}, "must be one of 128x128x16, 128x128x8, 128x128x8s3, "),
    ("cuda.10_split_k", {"split_k": "0"}, "must be >= 1"),
    ("cuda.10_split_k", {"tile": "128x256x8"}, "must be one of 128x128x16, 128x128x8, 128x128x8s3"),
    ("cuda.11_stream_k", {"mode": "fast"}, "must be one of dp, sk, hybrid"),
    ("cuda.11_stream_k", {"grid": "x"}, "must be an integer"),
    ("cuda.11_stream_k", {"sk_grid": "6"}, "`sk_grid` was renamed to `grid`"),
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


# ---- stage 11's bandwidth-bound paths: one row (gemv_row) and N <= 8 (skinny_n) -------------------

# (shape, options, path expected, K ranges expected (None: any)). M = 1 with N in {1, 3, 5, 127, 1000},
# N in 1..8 with odd M; K odd, short (< one step) and long enough to split; forced splits whose last
# range is short; both alignments (place: "start" puts each buffer on a page, "end" flush against its
# guard: aligned only when its size is a multiple of 4 floats).
SKINNY_CASES = [
    ((1, 127, 333), {}, "gemv", 1),
    ((1, 1000, 1001), {}, "gemv", None),           # float4 (N % 4 == 0) on "start", scalar on "end"
    ((1, 1000, 7), {}, "gemv", 1),                 # K shorter than one step of 32 rows
    ((1, 131, 3333), {}, "gemv", None),            # one column block: K split over the 2 SMs' slots
    ((1, 1000, 997), {"k_splits": "7"}, "gemv", 7),
    ((1, 1, 1001), {"path": "gemv"}, "gemv", None),
    ((1, 3, 999), {"path": "gemv", "k_splits": "4"}, "gemv", 4),
    ((1, 5, 65), {"path": "gemv"}, "gemv", 1),
    ((1, 1, 1001), {}, "skinny_n", None),
    ((1, 3, 5), {}, "skinny_n", 1),
    ((1, 3, 1001), {"k_splits": "3"}, "skinny_n", 2),  # 1001 over ranges of a multiple of 256: 512 + 489
    ((1, 5, 1001), {"k_splits": "3"}, "skinny_n", 2),  # N > 4 (chunks of 64): ranges still multiples of 256
    ((300, 8, 2000), {"k_splits": "3"}, "skinny_n", 3),  # 128-row blocks, 768 + 768 + 464
    ((7, 1, 257), {}, "skinny_n", None),
    ((33, 2, 1023), {"k_splits": "4"}, "skinny_n", 4),
    ((65, 3, 255), {}, "skinny_n", 1),
    ((31, 4, 516), {}, "skinny_n", None),           # K % 4 == 0: float4 rows of A where A is aligned
    ((17, 5, 1111), {"k_splits": "5"}, "skinny_n", 5),
    ((129, 6, 33), {}, "skinny_n", 1),
    ((9, 7, 2049), {}, "skinny_n", None),
    ((47, 8, 1000), {"k_splits": "2"}, "skinny_n", 2),
    ((101, 8, 1), {}, "skinny_n", 1),               # K = 1
    ((261, 7, 300), {}, "skinny_n", None),          # N > 4, float4: 2 blocks of 128 rows and 5 rows
    ((131, 6, 301), {}, "skinny_n", None),          # N > 4, scalar: 2 blocks of 64 rows and 3 rows
    ((1, 127, 3333), {"k_splits": "40"}, "gemv", 35),   # >= 17 ranges: 32 lanes per output sum them
    ((9, 3, 5000), {"k_splits": "20"}, "skinny_n", 20),
    # K <= 256 takes the resident build by default (the cases above with K <= 256 and no k_splits):
    # the chunked build there, named
    ((65, 3, 255), {"skinny_b": "chunked"}, "skinny_n", 1),
    ((101, 8, 1), {"skinny_b": "chunked"}, "skinny_n", 1),
    ((129, 6, 36), {"skinny_b": "chunked"}, "skinny_n", 1),
]


def _expected_operands(path, shape, place):
    """float4 where the streamed operand's rows are 16-byte aligned: N % 4 == 0 for B (gemv) or
    K % 4 == 0 for A (skinny_n), and its buffer starts on a 16-byte boundary ("start": a page;
    "end": its size is a multiple of 4 floats)."""
    M, N, K = shape
    rows, size = (N, K * N) if path == "gemv" else (K, M * K)
    return "float4" if rows % 4 == 0 and (place == "start" or size % 4 == 0) else "scalar"


@needs_cxx
@pytest.mark.parametrize("case", range(len(SKINNY_CASES)), ids=lambda i: "x".join(map(str, SKINNY_CASES[i][0])))
def test_skinny_paths_on_odd_shapes(small_gpu, case):
    """Each path against the float64 reference, beta != 0 on most cases and C NaN-poisoned where
    beta == 0; the path, its operand loads and the K split are what the rule and the options say."""
    shape, opts, path, splits = SKINNY_CASES[case]
    alpha, beta = [(0.5, -1.5), (1.0, 1.0), (-2.0, 0.0), (1.5, 0.25)][case % 4]
    p = Problem(*shape, alpha=alpha, beta=beta, seed=case)
    for place in ("start", "end"):
        be = EmuBackend(sm_count=2, place=place)
        be._libs = small_gpu._libs
        res, _, launch = run(be, KERNELS["cuda.11_stream_k"], p, options=opts, place=place)
        cfg = launch.config
        assert res.ok, f"{shape} {opts} ({place}): {res.message} ({cfg})"
        assert cfg["path"] == path and cfg["operands"] == _expected_operands(path, shape, place), cfg
        # the config says which loads stream the big operand
        assert (" 16-byte loads " in cfg["streamed"]) == (cfg["operands"] == "float4"), cfg
        if splits is not None:
            assert cfg["k_splits"] == splits, cfg
        assert cfg["grid"][1] == cfg["k_splits"] and (cfg["k_splits"] - 1) * cfg["k_per_split"] < p.K
        assert cfg["k_per_split"] * cfg["k_splits"] >= p.K
        if cfg.get("skinny_b") == "chunked":   # N > 4's 64- and 128-row blocks read 8 lanes a row, the rest 32
            assert cfg["lanes_per_row"] == (8 if cfg["tile"].split("x")[0] in ("64", "128") else 32), cfg
        assert cfg["fixup"].startswith("none") == (cfg["k_splits"] == 1)
        assert ("(32 lanes per output)" in cfg["fixup"]) == (cfg["k_splits"] >= 17), cfg
        assert cfg["chosen_by"] == ("heuristic" if not opts else f"user ({', '.join(sorted(opts))}), heuristic (the rest)")


def _shifted(g: GuardedArray) -> GuardedArray:
    """The same values at an address 4 bytes past a 16-byte boundary (a sub-view's base)."""
    m = GuardedArray(g.n + 1, place="start")
    m.array[1:] = g.array
    s = GuardedArray.__new__(GuardedArray)
    s.__dict__.update(m.__dict__, address=m.address + 4, n=g.n, array=m.array[1:])
    return s


@needs_cxx
@pytest.mark.parametrize("shape, operand", [((1, 1000, 333), "B"), ((33, 5, 1000), "A"), ((9, 8, 516), "A")])
def test_skinny_paths_fall_back_to_scalar_loads_on_a_misaligned_base(small_gpu, shape, operand):
    """Rows a multiple of 4 floats long but the streamed operand's base 4 bytes past a 16-byte
    boundary (a view into a larger buffer): the scalar build, never a misaligned 16-byte load (which
    the emulator reports); with the aligned base, the float4 build."""
    k = KERNELS["cuda.11_stream_k"]
    p = Problem(*shape, alpha=0.5, beta=-1.5)
    inputs = make_inputs(p, device="cpu")
    for shift, want in ((False, "float4"), (True, "scalar")):
        ei = EmuInputs(inputs, place="start")
        if shift:
            ei._arrays[operand] = _shifted(ei._arrays[operand])
        with loader.use_backend(small_gpu):
            launch = k.prepare(p, ei, {})
            ei.reset_c()
            launch()
        assert launch.config["operands"] == want, launch.config
        res = check(p, ei.c_tensor(), inputs.ref, inputs.bound)
        assert res.ok, f"{shape} {operand} shifted={shift}: {res.message}"


def test_stream_k_path_rule():
    """N <= 8 streams A whatever M is (M = 1 included); one row with N > 8 streams B; the rest tile."""
    path = heuristics.stream_k_path
    assert [path(1, n, 4096) for n in (1, 3, 5, 8)] == ["skinny_n"] * 4
    assert [path(1, n, 4096) for n in (9, 127, 1000, 65536)] == ["gemv"] * 4
    assert [path(m, 8, 4096) for m in (2, 33, 4096, 10**6)] == ["skinny_n"] * 4
    assert path(2, 9, 4096) == path(4096, 4096, 4096) == path(1000, 9, 10**6) == "tile"
    assert heuristics.PATH_RULE.startswith("N <= 8: skinny_n (its resident build where K <= 256); else M == 1: gemv")


def test_wgmma_path_rule():
    """Stage 13's path: stage 11's rule first (N <= 8 skinny_n, one row gemv); then tf32x3 with
    N <= 64 and M >= 65 on stage 11's tile plan (ffma); tf32, N = 65 or M <= 64: the wgmma tile."""
    path = heuristics.wgmma_path
    assert path(4096, 8, 4096, "tf32x3") == "skinny_n" and path(1, 30, 4096, "tf32x3") == "gemv"
    assert [path(m, n, 999, "tf32x3") for m, n in ((65, 9), (65, 64), (3074, 25), (10**5, 64))] == ["ffma"] * 4
    assert [path(m, n, 999, "tf32x3") for m, n in ((64, 25), (65, 65), (2, 64), (4096, 4096))] == ["tile"] * 4
    assert path(3074, 25, 999, "tf32") == "tile"
    assert heuristics.WGMMA_PATH_RULE.startswith(heuristics.PATH_RULE + "; tf32x3 with N <= 64 and M >= 65")


def test_skinny_split_model_by_hand():
    """decompose.skinny_split, the figures worked out here (3 TB/s, 3 us a launch, SMs x
    blocks_per_sm blocks fill the bandwidth)."""
    sk = decompose.skinny_split
    # One row, 4096 x 4096 (B: 64 MiB): 32 column blocks on 132 SMs x 4 = 528 slots. 17 ranges
    # would round to 256 rows each = 16 ranges: 512 blocks, 97% of the slots.
    assert sk(32, 4096, k_align=32, sms=132, stream_bytes=4 * 4096 * 4096, partial_bytes=4 * 4096,
              cost=decompose.SkinnyCost(blocks_per_sm=4)) == (16, 256)
    # 64 rows, K = 2^20, 4 columns (A: 256 MiB): 2 row blocks on 132 x 2 = 264 slots; at most
    # 132 ranges, ceil(2^20 / 132) = 7944 rounds up to 8192 (a multiple of 256): 128 ranges.
    assert sk(2, 2**20, k_align=256, sms=132, stream_bytes=4 * 64 * 2**20, partial_bytes=4 * 64 * 4,
              cost=decompose.SkinnyCost(blocks_per_sm=2)) == (128, 8192)
    # 256 row blocks already fill 97% of 264 slots: a split's second launch (3 us) costs more than
    # the 3% it could gain on 64 MiB (22.4 us).
    assert sk(256, 4096, k_align=256, sms=132, stream_bytes=4 * 4096 * 4096, partial_bytes=4 * 4096 * 8,
              cost=decompose.SkinnyCost(blocks_per_sm=2)) == (1, 4096)
    # Past one wave (stage 11's skinny_n cost: tail 0.7, one chunk a range, up to 4 waves):
    # 283 blocks on 264 slots, chunks of 256, A and B 99,433,632 bytes, partials 144,480 (4515x8x5496
    # in blocks of 16 rows).
    #   S=1: 22 chunks, 1.072 waves: fill 1 - 0.7 (1 - 1.072/2) = 0.675, x(1 + 1/22): 51.3 us
    #   S=2: 11 chunks, 2.144 waves: fill 0.800, x(1 + 1/11), + 2 partials, + 3 us: 48.4 us
    #   S=3:  8 chunks, 3.216 waves: fill 0.863, x1.125, + 3 partials, + 3 us: 46.6 us (best)
    #   S=4:  6 chunks, 4.288 waves: fill 0.900, x1.167, + 4 partials, + 3 us: 46.4 us, not 1% better
    #   (4 waves of 264 slots need at most 4 ranges: the search stops there).
    tail = decompose.SkinnyCost(blocks_per_sm=2, tail_weight=0.7, range_fill_chunks=1.0, max_waves=4.0)
    assert sk(283, 5496, k_align=256, sms=132, stream_bytes=4 * (4515 * 5496 + 5496 * 8),
              partial_bytes=4 * 4515 * 8, cost=tail) == (3, 2048)
    t1 = decompose.skinny_seconds(283, 5496, 1, k_align=256, sms=132, stream_bytes=4 * (4515 * 5496 + 5496 * 8),
                                  partial_bytes=4 * 4515 * 8, cost=tail)
    assert t1[1:] == (1, 5632) and abs(t1[0] - 51.34e-6) < 0.05e-6
    # Stage 11's plan for 9045x4x5496 on 132 SMs: 283 blocks of 32 rows, chunks of 256, twice the
    # bytes (198,933,216; S=1 102.7 us, S=2 ~93.6, S=3 ~89.7, S=4 ~89.4: not 1% better): the same choice
    assert heuristics.skinny_plan("skinny_n", 9045, 4, 5496, 132) == (283, 3, 2048)
    # The same shape under the one-wave model (no tail, search up to one wave): one range.
    assert sk(283, 5496, k_align=256, sms=132, stream_bytes=4 * (4515 * 5496 + 5496 * 8),
              partial_bytes=4 * 4515 * 8, cost=decompose.SkinnyCost(blocks_per_sm=2)) == (1, 5632)
    # Forced: 3 ranges of K = 1000 in multiples of 256 are 2 of 512.
    assert sk(1, 1000, k_align=256, sms=132, stream_bytes=1, partial_bytes=1, splits=3) == (2, 512)
    with pytest.raises(ValueError, match="empty problem"):
        sk(0, 10, k_align=32, sms=132, stream_bytes=1, partial_bytes=1)


def test_skinny_build_by_hand():
    """N > 4 runs blocks of 128 rows (64 scalar) unless they would sit idle: M below a block's rows,
    or row blocks x K's ranges of 256 below half of 132 SMs x 2 slots (132)."""
    build = heuristics.skinny_build
    assert build(4224, 8, 1024, True, 132) == "skinny_n8.vec"               # 33 blocks x 4 ranges = 132
    assert build(4224, 8, 768, True, 132) == "skinny_n8.few_rows.vec"       # 33 x 3 = 99
    assert build(2807, 8, 384, True, 132) == "skinny_n8.few_rows.vec"       # 22 x 2 = 44
    assert build(424, 5, 9296, True, 132) == "skinny_n8.vec"                # 4 x 37 = 148
    assert build(100, 8, 10**6, True, 132) == "skinny_n8.few_rows.vec"      # M < 128
    assert build(100, 8, 10**6, False, 132) == "skinny_n8.scalar"           # 64-row blocks: 2 x 3907
    assert build(60, 8, 10**6, False, 132) == "skinny_n8.few_rows.scalar"   # M < 64
    assert build(4224, 8, 768, True, 66) == "skinny_n8.vec"                 # 99 >= 66: fewer SMs
    assert build(40, 4, 384, True, 132) == "skinny_n4.vec"                  # N <= 4: one build
    assert build(40, 1, 384, False, 132) == "skinny_n1.scalar"


def test_skinny_plan_is_a_function_of_the_shape_and_the_sm_count():
    plan = heuristics.skinny_plan
    assert plan("gemv", 1, 4096, 4096, 132) == (32, 16, 256)
    assert plan("gemv", 1, 131072, 4096, 132) == (1024, 1, 4096)     # 1024 column blocks: no split
    assert plan("skinny_n", 64, 4, 2**20, 132) == (2, 128, 8192)
    assert plan("skinny_n", 33792, 8, 4096, 132) == (264, 1, 4096)   # N > 4: blocks of 128 rows, one wave
    assert plan("skinny_n", 16896, 8, 4095, 132) == (264, 1, 4096)   # ... 64 in the scalar build (K % 4 != 0)
    assert plan("skinny_n", 16896, 8, 4096, 132, vec=False) == (264, 1, 4096)  # (A misaligned: scalar)
    assert plan("skinny_n", 100, 8, 4096, 132)[0] == 7               # M < 128: the 16-row few_rows build
    assert plan("skinny_n", 4096, 4, 4096, 132)[0] == 128            # N <= 4: blocks of 32 rows
    assert plan("skinny_n", 4096, 8, 4096, 132, splits=3) == (32, 3, 1536)  # 1366 up to a multiple of 256
    assert plan("gemv", 1, 4096, 4096, 66) == (32, 9, 480)            # 264 slots: ceil(264 / 32) ranges
    with pytest.raises(ValueError, match="no bandwidth-bound path"):
        plan("tile", 8, 8, 8, 132)


@pytest.mark.parametrize("shape, raw, msg", [
    ((8, 1000, 100), {"path": "gemv"}, "path=gemv multiplies a single row; this problem has M=8"),
    ((8, 9, 100), {"path": "skinny_n"}, "path=skinny_n takes N <= 8; this problem has N=9"),
    ((1, 1000, 100), {"path": "gemv", "tile": "32x128x16"}, "tile set the tile path's plan; path=gemv has none"),
    ((8, 4, 100), {"path": "skinny_n", "mode": "sk", "grid": "4"}, "mode, grid set the tile path's plan"),
    ((100, 100, 100), {"k_splits": "2"}, "k_splits sets the K split of the gemv / skinny_n paths; this problem "
                                         "takes the tile path"),
    ((1, 1000, 100), {"k_splits": "2", "tile": "32x128x16"}, "takes the tile path"),
    ((1, 1000, 100), {"path": "tile", "k_splits": "2"}, "not path=tile's"),
    # skinny_b: skinny_n's build
    ((1000, 8, 257), {"skinny_b": "resident"}, "skinny_b=resident holds all of B in shared memory and takes "
                                               "K <= 256; this problem has K=257"),
    ((1000, 9, 100), {"skinny_b": "resident"}, "skinny_b chooses the skinny_n path's build (N <= 8); this "
                                               "problem (N=9) takes the tile path"),
    ((1, 9, 100), {"skinny_b": "chunked"}, "this problem (N=9) takes the gemv path"),
    ((100, 8, 100), {"skinny_b": "resident", "path": "tile"}, "(N=8) takes the tile path"),
    ((100, 8, 100), {"skinny_b": "resident", "tile": "32x64x16"}, "(N=8) takes the tile path"),
    ((100, 8, 100), {"skinny_b": "resident", "k_splits": "2"}, "skinny_b=resident has no K split (K <= 256 is "
                                                               "one range); k_splits set"),
])
def test_skinny_path_options_refused_in_words(shape, raw, msg):
    """Before anything is compiled or launched (the backend here has no device at all)."""
    k = KERNELS["cuda.11_stream_k"]
    with loader.use_backend(object()):
        with pytest.raises(UsageError, match=re.escape(msg)):
            k.prepare(Problem(*shape), None, k.parse_options(raw))


def test_path_option_is_declared_on_the_deterministic_kernel_only():
    k, atomic = KERNELS["cuda.11_stream_k"], KERNELS["cuda.11_stream_k_atomic"]
    opt = {o.name: o for o in k.options}
    assert opt["path"].choices == ("auto", "tile", "gemv", "skinny_n") and "k_splits" in opt
    assert not {"path", "k_splits"} & {o.name for o in atomic.options}
    with pytest.raises(UsageError, match="must be one of auto, tile, gemv, skinny_n"):
        k.parse_options({"path": "fast"})
    with pytest.raises(UsageError, match="must be >= 1"):
        k.parse_options({"k_splits": "0"})


@needs_cxx
def test_tile_path_still_takes_skinny_shapes_when_asked(small_gpu):
    """path=tile (and any of the tile plan's options) runs the stream-K tile kernel on a skinny
    shape: the reference for what the new paths replace."""
    k = KERNELS["cuda.11_stream_k"]
    for shape, opts in (((1, 300, 77), {"path": "tile"}), ((33, 5, 100), {"mode": "sk"}), ((1, 7, 9), {"tile": "32x64x16"})):
        res, _, launch = run(small_gpu, k, Problem(*shape, alpha=0.5, beta=-1.5), options=opts)
        assert res.ok, res.message
        assert launch.config["path"] == "tile" and "mode" in launch.config, launch.config


# ---- skinny_n's short-K build (skinny_short, skinny_b=resident: B resident, persistent blocks) -----

# K: one element, odd, a multiple of 4, the lane counts' edges (4 lanes cover 128, 8 lanes 256: the
# bound) and the odd ones just past / below them. M: tails of the 64- and 32-row groups, one row, and
# more groups than the 2 SMs x 2 blocks: 300 rows (5 groups of 64 at K = 4, 10 of 32 at K = 256: the
# float4 builds' next-group loads and both reduction buffers), 129 rows at K = 129 (5 groups of 32,
# scalar).
SHORT_K = (1, 3, 4, 100, 128, 129, 255, 256)
SHORT_M = (67, 1, 300, 131, 65, 129, 33, 300)


@needs_cxx
@pytest.mark.parametrize("N", range(1, 9))
def test_skinny_short_on_odd_shapes(small_gpu, N):
    """skinny_b=resident against the float64 reference for every N of skinny_n and K up to its
    bound, beta != 0 on most (C NaN-poisoned where beta == 0), both alignments, run twice with the
    same bits; lanes, groups, grid and operands as worked out here."""
    k = KERNELS["cuda.11_stream_k"]
    for i, (K, M) in enumerate(zip(SHORT_K, SHORT_M)):
        alpha, beta = AB[(i + N) % len(AB)]
        place = ("start", "end")[(i + N) % 2]
        p = Problem(M, N, K, alpha=alpha, beta=beta, seed=10 * N + i)
        be = EmuBackend(sm_count=2, place=place)
        be._libs = small_gpu._libs
        res, outs, launch = run(be, k, p, runs=2, options={"skinny_b": "resident"}, place=place)
        cfg = launch.config
        assert res.ok, f"{p.M}x{N}x{K} ({place}): {res.message} ({cfg})"
        assert np.array_equal(np.asarray(outs[0]).view(np.uint32), np.asarray(outs[1]).view(np.uint32)), cfg
        lanes = 4 if K <= 128 else 8          # 8 slots of 4 k's per lane: 4 lanes cover 128, 8 cover 256
        rows = 256 // lanes
        groups = -(-M // rows)
        aligned = K % 4 == 0 and (place == "start" or (M * K) % 4 == 0)
        assert (cfg["path"], cfg["skinny_b"], cfg["lanes_per_row"], cfg["row_groups"]) == \
            ("skinny_n", "resident", lanes, groups), cfg
        assert cfg["grid"] == [min(groups, 2 * 2), 1, 1] and cfg["k_splits"] == 1, cfg
        nb = next(b for b in (1, 2, 4, 8) if b >= N)
        assert cfg["tile"] == f"{rows}x{nb}" and cfg["operands"] == ("float4" if aligned else "scalar"), cfg
        assert (" 16-byte loads " in cfg["streamed"]) == aligned, cfg
        assert cfg["chosen_by"] == "user (skinny_b), heuristic (the rest)"


@needs_cxx
def test_skinny_short_falls_back_to_scalar_loads_on_a_misaligned_base(small_gpu):
    """K % 4 == 0 but A's base 4 bytes past a 16-byte boundary: the scalar build, never a
    misaligned 16-byte load (the emulator reports one); aligned: the float4 build."""
    k = KERNELS["cuda.11_stream_k"]
    p = Problem(67, 3, 100, alpha=0.5, beta=-1.5)
    inputs = make_inputs(p, device="cpu")
    for shift, want in ((False, "float4"), (True, "scalar")):
        ei = EmuInputs(inputs, place="start")
        if shift:
            ei._arrays["A"] = _shifted(ei._arrays["A"])
        with loader.use_backend(small_gpu):
            launch = k.prepare(p, ei, k.parse_options({"skinny_b": "resident"}))
            ei.reset_c()
            launch()
        assert launch.config["operands"] == want, launch.config
        res = check(p, ei.c_tensor(), inputs.ref, inputs.bound)
        assert res.ok, f"shifted={shift}: {res.message}"


@needs_cxx
def test_skinny_b_default_build_follows_k(small_gpu):
    """path=auto on N <= 8 runs skinny_n's resident build up to K = 256 and the chunked build from
    K = 257 (or where k_splits is set), and says which; naming the build gives the same launch;
    the gemv and tile paths name no skinny_n build."""
    k = KERNELS["cuda.11_stream_k"]
    for K, opts, want in ((256, {}, "resident"), (257, {}, "chunked"), (100, {"k_splits": 1}, "chunked")):
        p = Problem(33, 5, K, alpha=0.5, beta=-1.5)
        configs = []
        for named in ({}, {"skinny_b": want}):
            res, _, launch = run(small_gpu, k, p, options={**opts, **named})
            assert res.ok, res.message
            configs.append(launch.config)
        assert configs[0]["skinny_b"] == configs[1]["skinny_b"] == want, (K, opts)
        assert configs[0]["grid"] == configs[1]["grid"] and configs[0]["tile"] == configs[1]["tile"]
    # N = 5, M = 33 < 128: NB = 8's few_rows build, 8 warps x 2 rows
    assert configs[0]["tile"] == "16x8"
    with loader.use_backend(small_gpu):
        for shape in ((1, 127, 33), (40, 40, 40)):
            cfg = k.prepare(Problem(*shape), EmuInputs(make_inputs(Problem(*shape), device="cpu")), {}).config
            assert "skinny_b" not in cfg, cfg


def test_skinny_short_plan_by_hand():
    """4 lanes (64 rows a group) up to K = 128, 8 lanes (32 rows) up to 256; the grid: the groups,
    at most 2 blocks per SM."""
    plan = heuristics.skinny_short_plan
    assert plan(131072, 8, 256, 132) == (8, 32, 264)        # 4096 groups of 32 rows over 132 x 2 blocks
    assert plan(1000000, 2, 100, 132) == (4, 64, 264)       # 15625 groups of 64
    assert plan(200, 4, 128, 132) == (4, 64, 4)             # 4 groups: 4 blocks
    assert plan(200, 4, 129, 132) == (8, 32, 7)             # 7 groups
    assert plan(1, 1, 1, 132) == (4, 64, 1)
    for K in (0, 257):
        with pytest.raises(ValueError, match="1 <= K <= 256"):
            plan(8, 8, K, 132)


def test_skinny_b_is_declared_on_the_deterministic_kernel_only():
    k, atomic = KERNELS["cuda.11_stream_k"], KERNELS["cuda.11_stream_k_atomic"]
    assert {o.name: o for o in k.options}["skinny_b"].choices == ("chunked", "resident")
    assert "skinny_b" not in {o.name for o in atomic.options}
    with pytest.raises(UsageError, match="must be one of chunked, resident"):
        k.parse_options({"skinny_b": "fast"})
    # the A/B line reproduce/measure-skinny-short runs: one variant per build, labelled as its rows are
    from compare.harness import registry as harness_registry, variants
    known = {x.name: x for x in harness_registry.kernels()}
    got = [v.name for _, v in variants.resolve(["cuda.11_stream_k:skinny_b=chunked|resident"], known)]
    assert got == ["cuda.11_stream_k[skinny_b=chunked]", "cuda.11_stream_k[skinny_b=resident]"]
