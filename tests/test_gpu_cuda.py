"""The CUDA stages on a GPU: every stage on odd shapes against the float64 reference (through
compare.harness.runner.check_kernel, which NaN-poisons C when beta == 0), every tile option, the
deterministic split-K / stream-K kernels bit-identical run to run with their atomic variants as
the negative control, launches on torch's current stream at call time and inside a CUDA graph
capture. Skips cleanly without a GPU or without CuPy."""
import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():  # pragma: no cover - collection on CPU machines
    pytest.skip("needs an NVIDIA GPU (torch.cuda.is_available() is False)", allow_module_level=True)
cupy = pytest.importorskip("cupy", reason="CuPy is not installed (pip install -e .[cuda13] or .[cuda12])")

import cuda_kernels  # noqa: E402
from compare.harness.check import check  # noqa: E402
from compare.harness.inputs import make_inputs  # noqa: E402
from compare.harness.problem import Problem  # noqa: E402
from compare.harness.runner import check_kernel  # noqa: E402
from cuda_kernels.registry import STREAM_K_TILES, TF32_TILES, TILES_09, TILES_10  # noqa: E402

KERNELS = {k.name: k for k in cuda_kernels.KERNELS}
FLOAT4_ONLY = ("vectorized", "bank_conflict_free")
AB = [(1.0, 0.0), (0.5, -1.5), (-2.0, 0.0), (1.0, 1.0)]

# Every value of (1, 7, 33, 127, 255, 1000, 1023, 4097) appears in every position; 4097 never
# in all three at once. The last four have N % 4 == 0 and K % 4 == 0 (float4 paths, stages 06/07).
SHAPES = [
    (1, 7, 33),
    (7, 33, 127),
    (33, 127, 255),
    (127, 255, 1000),
    (255, 1000, 1023),
    (1000, 1023, 4097),
    (1023, 4097, 1),
    (4097, 1, 7),
    (4097, 255, 1),
    (33, 4097, 1023),
    (1023, 1, 4097),
    (7, 1023, 255),
    (1, 1000, 1000),
    (4097, 1000, 1000),
    (127, 4, 4),
    (1000, 1000, 1000),
]


def _check_all_stages(p):
    failures = []
    for name, k in KERNELS.items():  # kernels inside: the float64 reference is made once per shape
        if p.precision not in k.precisions:
            continue  # the tensor-core stages (tf32, tf32x3) have their own tests below
        why = k.why_not(p)
        if why:
            # Unsupported must be said, in words, and only by the float4-only stages.
            assert k.stage in FLOAT4_ONLY, f"{name} refused {p.shape}: {why}"
            assert "N % 4 == 0 and K % 4 == 0" in why
            continue
        res = check_kernel(k, p)
        if not res.ok:
            failures.append(f"{name} {p.shape} alpha={p.alpha} beta={p.beta}: {res.message}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("i", range(len(SHAPES)), ids=lambda i: "x".join(map(str, SHAPES[i])))
def test_every_stage_on_odd_shapes(i):
    alpha, beta = AB[i % len(AB)]
    _check_all_stages(Problem(*SHAPES[i], alpha=alpha, beta=beta, seed=i))


@pytest.mark.parametrize("alpha, beta", AB)
@pytest.mark.parametrize("shape", [(255, 1000, 1023), (1000, 1000, 1000)], ids=lambda s: "x".join(map(str, s)))
def test_every_alpha_beta_combination(shape, alpha, beta):
    _check_all_stages(Problem(*shape, alpha=alpha, beta=beta))


def _runs(name, p, n, options=None):
    """n launches of one prepared kernel from the same C0: the distinct results (as bytes)."""
    k = KERNELS[name]
    inputs = make_inputs(p)
    launch = k.prepare(p, inputs, k.parse_options(options or {}))
    seen = {}
    for _ in range(n):
        inputs.reset_c()
        launch()
        torch.cuda.synchronize()
        seen.setdefault(inputs.C.cpu().numpy().tobytes(), inputs.C.clone())
    return seen, launch


# (deterministic kernel, its atomic variant, shape, options): shapes with many pieces per tile.
DETERMINISM = [
    ("cuda.10_split_k", "cuda.10_split_k_atomic", (256, 256, 131072), {}),
    ("cuda.10_split_k", "cuda.10_split_k_atomic", (255, 127, 4097), {}),
    ("cuda.11_stream_k", "cuda.11_stream_k_atomic", (256, 256, 131072), {}),
    ("cuda.11_stream_k", "cuda.11_stream_k_atomic", (1000, 1000, 1000), {}),
    ("cuda.11_stream_k", "cuda.11_stream_k_atomic", (3000, 5000, 2000), {"mode": "hybrid"}),
]


@pytest.mark.parametrize("det, atomic, shape, options", DETERMINISM, ids=lambda v: "x".join(map(str, v))
                         if isinstance(v, tuple) else str(v))
def test_deterministic_variant_is_bit_identical_and_atomic_is_not(det, atomic, shape, options, record_property):
    """The deterministic kernel gives one result in 5 runs. The atomic variant of the same plan is
    the control that this test could see a difference: at 256x256x131072 dozens of pieces land
    on every C element in hardware order, so 20 runs give more than one result. Where atomics
    happen to agree (few pieces per element), the count is recorded, not asserted."""
    p = Problem(*shape, alpha=0.5, beta=-1.5)
    seen, launch = _runs(det, p, 5, options)
    assert len(seen) == 1, f"{det} {shape}: {len(seen)} different results in 5 runs ({launch.config})"
    pieces = launch.config.get("split_k") or launch.config.get("sk_blocks")
    assert pieces and pieces > 1, f"{det} {shape} should split the work ({launch.config})"
    assert check_kernel(KERNELS[det], p, options=KERNELS[det].parse_options(options)).ok
    atomic_seen, _ = _runs(atomic, p, 20, options)
    record_property("atomic_distinct_results_in_20", len(atomic_seen))
    if shape == (256, 256, 131072):
        assert len(atomic_seen) > 1, (f"{atomic} gave one result in 20 runs at {shape}: the negative control "
                                      f"cannot show nondeterminism, so the deterministic test proves nothing")


def test_launches_go_to_torchs_current_stream_at_call_time():
    """prepare() on the default stream, launch on a side stream: the reset of C queued on the side
    stream must come before the kernel, the check after it."""
    p = Problem(1000, 1000, 4096, alpha=1.0, beta=1.0)
    inputs = make_inputs(p)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    for name in ("cuda.09_double_buffered", "cuda.10_split_k", "cuda.11_stream_k"):
        launch = KERNELS[name].prepare(p, inputs, {})
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            inputs.C.fill_(float("nan"))
            inputs.reset_c()
            launch()
        side.synchronize()
        res = check(p, inputs.C, inputs.ref, inputs.bound)
        assert res.ok, f"{name}: {res.message}"


def _replayed_from_a_graph(p, inputs, launch):
    """The check of C after ``launch`` is captured in a CUDA graph and replayed: C is poisoned and
    reset outside the graph, so only the replay can make it right."""
    inputs.reset_c()
    launch()  # warm-up outside the capture (lazy compile, allocations)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        launch()
    inputs.C.fill_(float("nan"))
    inputs.reset_c()
    torch.cuda.synchronize()
    graph.replay()
    torch.cuda.synchronize()
    return check(p, inputs.C, inputs.ref, inputs.bound)


@pytest.mark.parametrize("name", ["cuda.08_warptile", "cuda.10_split_k", "cuda.11_stream_k", "cuda.11_stream_k_atomic"])
def test_launch_is_captured_by_a_cuda_graph(name):
    """A CUDA graph captured around launch() replays the kernel: C is reset outside the graph,
    and only the replay can make it right."""
    p = Problem(1000, 1000, 1000, alpha=1.0, beta=0.5)
    inputs = make_inputs(p)
    launch = KERNELS[name].prepare(p, inputs, {})
    res = _replayed_from_a_graph(p, inputs, launch)
    assert res.ok, f"{name} replayed from a graph: {res.message}"


@pytest.mark.parametrize("name, tile", [("cuda.09_double_buffered", t) for t in TILES_09]
                         + [("cuda.10_split_k", t) for t in TILES_10]
                         + [("cuda.11_stream_k", t) for t in STREAM_K_TILES])
def test_every_tile_option(name, tile):
    k = KERNELS[name]
    for shape in [(1023, 1000, 4097), (256, 256, 65536 + 3)]:
        res = check_kernel(k, Problem(*shape, alpha=-2.0, beta=0.0), options=k.parse_options({"tile": tile}))
        assert res.ok, f"{name} {tile} {shape}: {res.message}"


@pytest.mark.parametrize("mode", ["dp", "sk", "hybrid"])
@pytest.mark.parametrize("shape", [(3000, 5000, 2000), (4097, 4097, 1023), (33, 4097, 1023)], ids=lambda s: "x".join(map(str, s)))
def test_stream_k_every_mode(shape, mode):
    for name in ("cuda.11_stream_k", "cuda.11_stream_k_atomic"):
        k = KERNELS[name]
        res = check_kernel(k, Problem(*shape, alpha=0.5, beta=-1.5), options=k.parse_options({"mode": mode}))
        assert res.ok, f"{name} {mode} {shape}: {res.message}"


# ---- stage 12: TF32 tensor cores (mma.sync), precisions tf32 and tf32x3 --------------------------
TF32 = "cuda.12_tf32_mma"
# Not multiples of 4, 8 or 16 in any position (scalar path), then float4 paths with M and K
# tails (N, K multiples of 4, not of 8 or 16), a single row / column, K = 1.
TF32_SHAPES = [
    (1, 7, 33), (7, 33, 127), (33, 127, 255), (127, 255, 1001), (257, 129, 67), (1000, 1003, 997),
    (4097, 1, 7), (1023, 4097, 1), (1, 1000, 1000), (129, 1000, 4), (1001, 1004, 1012), (255, 132, 4100),
]


@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
@pytest.mark.parametrize("i", range(len(TF32_SHAPES)), ids=lambda i: "x".join(map(str, TF32_SHAPES[i])))
def test_tf32_mma_on_odd_shapes(i, precision):
    alpha, beta = AB[i % len(AB)]
    p = Problem(*TF32_SHAPES[i], alpha=alpha, beta=beta, seed=i, precision=precision)
    res = check_kernel(KERNELS[TF32], p)
    assert res.ok, f"{TF32} {p.shape} {precision} alpha={alpha} beta={beta}: {res.message}"


@pytest.mark.parametrize("tile, precision", [(t, pr) for t, v in TF32_TILES.items() for pr in v[-1]])
@pytest.mark.parametrize("shape", [(255, 1000, 1023), (1000, 1000, 1000)], ids=lambda s: "x".join(map(str, s)))
def test_tf32_mma_every_tile(shape, tile, precision):
    p = Problem(*shape, alpha=0.5, beta=-1.5, precision=precision)
    res = check_kernel(KERNELS[TF32], p, options={"tile": tile})
    assert res.ok, f"{TF32} tile={tile} {shape} {precision}: {res.message}"


def test_tf32x3_is_fp32_class_and_tf32_is_not():
    """The split really runs: the 3xTF32 path's error is far under one TF32 pass's (~3e-4 on
    random data) and within fp32's; the tf32 path is as inaccurate as TF32 rounding makes it
    (a kernel that silently computed in fp32 would pass a tf32 check too)."""
    errs = {pr: check_kernel(KERNELS[TF32], Problem(1000, 1003, 997, precision=pr, seed=3)).rel_err
            for pr in ("tf32", "tf32x3")}
    assert errs["tf32x3"] < 5e-7 < 1e-5 < errs["tf32"], errs


def test_tf32_mma_refuses_a_tile_without_the_precision():
    from compare.harness.errors import UsageError
    p = Problem(256, 256, 256, precision="tf32x3")
    with pytest.raises(UsageError, match="has no tf32x3 configuration"):
        KERNELS[TF32].prepare(p, make_inputs(p), {"tile": "128x128x32"})


def test_tf32_mma_launch_config_names_the_path():
    k = KERNELS[TF32]
    for pr, want in (("tf32", "TF32"), ("tf32x3", "3xTF32")):
        p = Problem(256, 256, 256, precision=pr)
        launch = k.prepare(p, make_inputs(p), {})
        assert launch.config["precision_path"].startswith(want) and launch.config["smem_bytes"] > 48 * 1024


def _c_after(launch, inputs):
    """C after one run of ``launch`` from the inputs' C0 (a copy)."""
    inputs.reset_c()
    launch()
    torch.cuda.synchronize()
    return inputs.C.clone()


# ---- stage 13: wgmma + TMA (sm_90a), precisions tf32 and tf32x3 ---------------------------------
WGMMA = "cuda.13_wgmma_tma"
IS_SM90 = torch.cuda.get_device_capability() == (9, 0)
needs_sm90 = pytest.mark.skipif(not IS_SM90, reason="stage 13 needs compute capability 9.0 (wgmma)")
# TF32_SHAPES plus tiles past one 128x256 block in both directions, K past several pipeline
# rounds with a K % 32 tail, and an A whose K % 4 == 0 (read by TMA as given, no copy).
WGMMA_SHAPES = TF32_SHAPES + [(257, 513, 1031), (300, 260, 4096)]


@needs_sm90
@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
@pytest.mark.parametrize("i", range(len(WGMMA_SHAPES)), ids=lambda i: "x".join(map(str, WGMMA_SHAPES[i])))
def test_wgmma_tma_on_odd_shapes(i, precision):
    """The wgmma launch (path=tile: single rows and N <= 8 included, which auto hands to stage 11)."""
    alpha, beta = AB[i % len(AB)]
    p = Problem(*WGMMA_SHAPES[i], alpha=alpha, beta=beta, seed=i, precision=precision)
    res = check_kernel(KERNELS[WGMMA], p, options={"path": "tile"})
    assert res.ok, f"{WGMMA} {p.shape} {precision} alpha={alpha} beta={beta}: {res.message}"


@needs_sm90
def test_wgmma_tf32x3_is_fp32_class_and_tf32_is_not():
    errs = {pr: check_kernel(KERNELS[WGMMA], Problem(1000, 1003, 997, precision=pr, seed=3)).rel_err
            for pr in ("tf32", "tf32x3")}
    assert errs["tf32x3"] < 5e-7 < 1e-5 < errs["tf32"], errs


@needs_sm90
def test_wgmma_launch_config_names_the_operand_paths():
    k = KERNELS[WGMMA]
    # tf32x3 on the swap path splits A in shared memory (no copy where K % 4 == 0); the copy path splits it by a copy.
    for shape, pr, b_copied, a_copied in (((256, 256, 256), "tf32", False, False), ((256, 255, 256), "tf32", True, False),
                                          ((256, 256, 255), "tf32", False, True), ((256, 256, 256), "tf32x3", False, False),
                                          ((256, 255, 256), "tf32x3", True, True)):
        p = Problem(*shape, precision=pr)
        cfg = k.prepare(p, make_inputs(p), {"b_transpose": "copy"} if b_copied else {}).config
        assert cfg["b_transpose"].startswith("B copied to K-major B^T") == b_copied, cfg
        assert cfg["a_operand"].startswith("copied") == a_copied, cfg
        assert cfg["precision_path"].startswith("3xTF32" if pr == "tf32x3" else "TF32"), cfg
        if b_copied:
            assert cfg["tile"] == ("128x256x32s4" if pr == "tf32" else "128x128x32s3.x3"), cfg
        else:
            # 256^3 tf32x3: 4 tiles, the stream-K build (.sk)
            assert cfg["tile"].removesuffix(".sk").endswith(".regb.x3.asplit" if pr == "tf32x3" else ".regb"), cfg


@needs_sm90
@pytest.mark.parametrize("shape", [(255, 1000, 1023), (1001, 1004, 1012), (300, 260, 4096)],
                         ids=lambda s: "x".join(map(str, s)))
def test_wgmma_tf32_copy_path_where_registers_is_the_default(shape):
    """The K-major copy path (b_transpose=copy) stays right where swap is the default."""
    p = Problem(*shape, alpha=0.5, beta=-1.5, precision="tf32")
    res = check_kernel(KERNELS[WGMMA], p, options={"b_transpose": "copy"})
    assert res.ok, res.message
    assert "copied" in KERNELS[WGMMA].prepare(p, make_inputs(p), {"b_transpose": "copy"}).config["b_transpose"]


@needs_sm90
@pytest.mark.parametrize("b_unaligned", ["bulk", "cp_async", "pad"])
@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
def test_wgmma_register_path_reads_unaligned_b_rows(precision, b_unaligned):
    """N % 4 != 0 (TMA can't read B's rows): b_unaligned=cp_async has the producer warpgroup load
    them with cp.async (N = 1..7 leaves most of the 128-column tile's chunks unloaded; N % 4 = 1, 2,
    3 put the rows k = 0..3 at words (0, 1, 2, 3), (0, 2, 0, 2), (0, 3, 2, 1); K % 32 != 0 zero-fills
    the last tile's rows; the long K splits), b_unaligned=bulk copies 32 whole rows per K tile
    (N <= 128 only: the last tile's 0-3 floats past its 16-byte bytes and its rows past K written
    by the producer warpgroup; several rows of tiles; N = 127, the widest), or b_unaligned=pad copies
    them padded first."""
    want = {"bulk": "B's rows loaded as stored, one bulk copy", "cp_async": "B's rows loaded as stored by the "
            "producer warpgroup", "pad": "B's rows padded"}[b_unaligned]
    shapes = ((64, 63, 64), (130, 1003, 997), (5, 7, 3001), (1, 1, 77), (300, 45, 20011), (17, 45, 200_003),
              (130, 1002, 997), (5, 2, 20011), (33, 29, 60_001), (70, 127, 1001), (700, 3, 999), (1, 125, 35))
    for shape in shapes:
        if b_unaligned == "bulk" and shape[1] > 128:
            continue   # refused in words: test_wgmma_bulk_b_refuses_n_over_128
        p = Problem(*shape, alpha=0.5, beta=-1.5, precision=precision, seed=sum(shape))
        opts = {"b_unaligned": b_unaligned}
        res = check_kernel(KERNELS[WGMMA], p, options=opts)
        assert res.ok, (shape, res.message)
        if precision == "tf32x3":
            assert res.rel_err < 5e-7, (shape, res.rel_err)
        cfg = KERNELS[WGMMA].prepare(p, make_inputs(p), opts).config
        assert cfg["b_transpose"].startswith(want) and ".regb" in cfg["tile"], cfg


@needs_sm90
@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
def test_wgmma_register_path_on_a_misaligned_b(precision):
    """B 4 bytes past a 16-byte boundary (TMA, the cp.async build's 16-byte chunks and the bulk
    copy can't take its address), N % 4 == 0 and != 0, b_unaligned=cp_async or bulk asked for: its
    rows are padded by a copy, and C is right."""
    for shape, how in (((300, 260, 1001), "cp_async"), ((300, 261, 1001), "cp_async"), ((300, 61, 1001), "bulk")):
        _right_from_a_misaligned_base(Problem(*shape, alpha=0.5, beta=-1.5, seed=7, precision=precision), "B",
                                      {"b_unaligned": how}, kernel=WGMMA,
                                      config=("b_transpose", "B's rows padded"))


@pytest.mark.skipif(IS_SM90, reason="the refusal is for GPUs without wgmma")
def test_wgmma_refuses_other_gpus_in_words():
    why = KERNELS[WGMMA].why_not(Problem(256, 256, 256, precision="tf32"))
    assert why and "compute capability 9.0" in why and "no wgmma" in why, why


# Split-K shapes: a tiny output with a long K (the model splits it over the SMs), K with a 32-tail
# and an odd chunk count, rows that are not 16-byte multiples (copied operands), beta != 0.
WGMMA_SPLIT_SHAPES = [((64, 64, 100_000), None), ((1, 1, 4099), None), ((5, 300, 70_001), 7),
                      ((257, 513, 1031), 3), ((128, 100, 20_000), None), ((1000, 1003, 997), 2)]


@needs_sm90
@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
@pytest.mark.parametrize("i", range(len(WGMMA_SPLIT_SHAPES)),
                         ids=lambda i: "x".join(map(str, WGMMA_SPLIT_SHAPES[i][0])))
def test_wgmma_split_k_on_odd_shapes_and_bit_identical(i, precision):
    """Split-K (chosen by the model or forced) right against float64 for alpha / beta pairs, and
    the fixed-order reduction gives the same bits on a second run."""
    shape, split_k = WGMMA_SPLIT_SHAPES[i]
    alpha, beta = AB[(i + 1) % len(AB)]
    p = Problem(*shape, alpha=alpha, beta=beta, seed=i, precision=precision)
    opts = {"split_k": split_k} if split_k else {"path": "tile"}   # 1x1x4099: tile, not stage 11's stream
    res = check_kernel(KERNELS[WGMMA], p, options=opts)
    assert res.ok, f"{WGMMA} {p.shape} {precision} split_k={split_k}: {res.message}"
    inputs = make_inputs(p)
    launch = KERNELS[WGMMA].prepare(p, inputs, opts)
    assert launch.config["split_k"] > 1, launch.config
    assert torch.equal(_c_after(launch, inputs), _c_after(launch, inputs))


@needs_sm90
@pytest.mark.parametrize("shape, options", [
    ((40, 24, 50_000), {}),                   # one column tile, 3 of B's 4 boxes past N
    ((13, 40, 30_000), {}),                   # 2 boxes past N
    ((130, 1100, 997), {}),                   # three rows of tiles; the last column tile's fourth box past N
    ((9, 100, 4096), {"mode": "sk"}),         # stream-K blocks over tiles with a box past N
])
def test_wgmma_64_row_tf32_tile_skips_b_boxes_past_n(shape, options):
    """tf32's 64-row tile loads only B's boxes with a column inside N (the stage's other boxes
    left stale): right against float64 for alpha / beta != (1, 0), and the same bits on a second
    run."""
    options = {"tile": "64x128x32s8.regb", **options}
    p = Problem(*shape, alpha=1.5, beta=-0.5, seed=sum(shape), precision="tf32")
    res = check_kernel(KERNELS[WGMMA], p, options=options)
    assert res.ok, f"{WGMMA} {p.shape} {options}: {res.message}"
    inputs = make_inputs(p)
    launch = KERNELS[WGMMA].prepare(p, inputs, options)
    assert launch.config["tile"].startswith("64x128x32s8.regb") and launch.config["path"] == "tile", launch.config
    assert torch.equal(_c_after(launch, inputs), _c_after(launch, inputs))


@needs_sm90
@pytest.mark.parametrize("label", [c.label for s in cuda_kernels.registry.SPECS if s.stage == "wgmma_tma"
                                   for c in s.configs if c.kernel == "sgemm_wgmma_regb"
                                   and not c.label.endswith((".cpasync", ".bulk", ".sk")) and ".asplit" not in c.label])
def test_wgmma_every_register_path_tile_on_odd_shapes(label):
    """Each register-operand tile forced on rows that end mid-tile, K with a 32-tail, K % 4 != 0
    (A copied), beta != 0, N % 4 != 0 (B's rows by cp.async, or by a bulk copy where N <= 128) and
    split-K shapes; tf32x3 tiles must
    stay fp32-class."""
    precision = "tf32x3" if label.endswith(".x3") else "tf32"
    for i, (shape, split_k) in enumerate([((1, 4, 33), 1), ((65, 260, 1031), 1), ((300, 516, 4100), 1),
                                          ((129, 132, 1001), 1), ((7, 128, 9000), 3), ((33, 131, 1001), 1),
                                          ((9, 45, 20000), 3)]):
        alpha, beta = AB[i % len(AB)]
        p = Problem(*shape, alpha=alpha, beta=beta, seed=40 + i, precision=precision)
        for a_split in (("smem", "copy") if precision == "tf32x3" else (None,)):
            opts = {"tile": label, "split_k": split_k, **({"a_split": a_split} if a_split else {})}
            res = check_kernel(KERNELS[WGMMA], p, options=opts)
            assert res.ok, f"{label} {p.shape} alpha={alpha} beta={beta} a_split={a_split}: {res.message}"
            if precision == "tf32x3":
                assert res.rel_err < 5e-7, (label, p.shape, a_split, res.rel_err)


# Stream-K shapes (mode forced): below one wave (sk), one to two waves (hybrid: all tiles stream-K
# then), more waves (hybrid: the last partial wave + one wave stream-K, the rest data-parallel); M,
# N, K tails, K % 4 != 0 (A copied or padded), N % 4 != 0 (B by cp.async or a bulk copy), N <= 384
# (tf32x3's A split in shared memory), a forced block count.
WGMMA_SK_SHAPES = [((300, 1000, 2000), {"mode": "sk"}), ((129, 131, 4100), {"mode": "sk"}),
                   ((1001, 1003, 997), {"mode": "hybrid"}), ((2000, 3000, 1000), {"mode": "hybrid"}),
                   ((70, 127, 9001), {"mode": "sk"}), ((300, 1000, 2000), {"grid": 7}),
                   ((1733, 588, 1347), {})]   # the default: stream-K for tf32x3 (70 tiles of 128 x 128), not tf32


@needs_sm90
@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
@pytest.mark.parametrize("i", range(len(WGMMA_SK_SHAPES)), ids=lambda i: "x".join(map(str, WGMMA_SK_SHAPES[i][0])))
def test_wgmma_stream_k_on_odd_shapes_and_bit_identical(i, precision):
    """Stream-K blocks covering the end of one tile, whole tiles and the start of another, their
    partials summed in block order by the fixup: right against float64 (tf32x3 fp32-class) for
    alpha / beta pairs, the same bits on a second run."""
    shape, opts = WGMMA_SK_SHAPES[i]
    alpha, beta = AB[(i + 1) % len(AB)]
    p = Problem(*shape, alpha=alpha, beta=beta, seed=60 + i, precision=precision)
    res = check_kernel(KERNELS[WGMMA], p, options=opts)
    assert res.ok, f"{WGMMA} {p.shape} {precision} {opts}: {res.message}"
    if precision == "tf32x3":
        assert res.rel_err < 5e-7, (shape, res.rel_err)
    inputs = make_inputs(p)
    launch = KERNELS[WGMMA].prepare(p, inputs, opts)
    cfg = launch.config
    if not opts and precision == "tf32":
        assert cfg["mode"] == "dp", cfg
    else:
        assert cfg["mode"] in ("sk", "hybrid") and cfg["sk_tiles"] > 0, cfg
        assert cfg["reduction"].startswith("stream-K"), cfg
    if "grid" in opts:
        assert cfg["sk_blocks"] == opts["grid"], cfg
    assert torch.equal(_c_after(launch, inputs), _c_after(launch, inputs))


def _c_of(p, inputs, options):
    launch = KERNELS[WGMMA].prepare(p, inputs, options)
    return _c_after(launch, inputs), launch.config


@needs_sm90
@pytest.mark.parametrize("shape, options", [
    ((256, 256, 256), {}), ((300, 260, 4096), {}), ((257, 513, 1031), {}),             # B by TMA; K % 4 != 0
    ((300, 61, 997), {}), ((130, 1003, 997), {"b_unaligned": "cp_async"}),              # B by bulk copy, cp.async
    ((130, 1002, 1000), {"b_unaligned": "pad"}), ((48, 48, 65_537), {}),                # B padded; long K, split
    ((7, 128, 9000), {"split_k": 3, "tile": "128x128x32s4.regb.x3"}), ((1, 5, 77), {"path": "tile"}),
], ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else None)
def test_wgmma_a_split_in_shared_memory_gives_the_copys_bits(shape, options):
    """tf32x3's A split by the producer warpgroup in shared memory (a_split=smem, the default)
    computes big = tf32(x) and small = tf32(x - big) as the split copy does, so C is the same bits
    as a_split=copy's, whatever B's load (TMA, bulk, cp.async, padded), K % 4 (A's rows padded
    first) or split-K; and right against float64 to fp32 class."""
    p = Problem(*shape, alpha=0.5, beta=-1.5, seed=sum(shape), precision="tf32x3")
    options = {**options, "a_split": "smem"}   # the default only where N <= 384
    res = check_kernel(KERNELS[WGMMA], p, options=options)
    assert res.ok and res.rel_err < 5e-7, (res.message, res.rel_err)
    inputs = make_inputs(p)
    smem, cfg = _c_of(p, inputs, options)
    copy, cfg_copy = _c_of(p, inputs, {**options, "a_split": "copy"})
    assert ".asplit" in cfg["tile"] and ".asplit" not in cfg_copy["tile"], (cfg, cfg_copy)
    assert "shared memory" in cfg["a_operand"] and cfg_copy["a_operand"].startswith("copied"), (cfg, cfg_copy)
    assert cfg["a_operand"].startswith("rows padded") == (shape[2] % 4 != 0), cfg
    assert torch.equal(smem, copy)


@needs_sm90
def test_wgmma_a_split_on_a_misaligned_a():
    """A 4 bytes past a 16-byte boundary (TMA can't read it as given): its rows are padded by a
    copy, then split in shared memory, and C is right."""
    _right_from_a_misaligned_base(Problem(300, 260, 1000, alpha=0.5, beta=-1.5, seed=9, precision="tf32x3"), "A", {},  # N <= 384
                                  kernel=WGMMA, config=("a_operand", "rows padded to 1000 floats"))


@needs_sm90
def test_wgmma_tf32x3_narrow_products_take_stage_11s_tile_plan():
    """tf32x3 with 9 <= N <= 64 goes to stage 11's tile plan (fp32 FFMA): right to fp32 class on odd
    shapes, beta != 0, K % 4 != 0; its config names the path and why; N = 65, M = 64 and tf32 stay on wgmma."""
    for shape in ((3074, 25, 6893), (300, 64, 999), (257, 9, 1001), (1000, 33, 4097)):
        p = Problem(*shape, alpha=0.5, beta=-1.5, seed=sum(shape), precision="tf32x3")
        res = check_kernel(KERNELS[WGMMA], p)
        assert res.ok and res.rel_err < 5e-7, (shape, res.message, res.rel_err)
        cfg = KERNELS[WGMMA].prepare(p, make_inputs(p), {}).config
        assert cfg["path"] == "ffma" and cfg["precision_path"].startswith("fp32 FFMA on stage 11's tile plan"), cfg
    for shape, precision in (((300, 65, 999), "tf32x3"), ((64, 25, 999), "tf32x3"), ((300, 25, 999), "tf32")):
        p = Problem(*shape, precision=precision)
        assert KERNELS[WGMMA].prepare(p, make_inputs(p), {}).config["path"] == "tile"


@needs_sm90
@pytest.mark.parametrize("precision", ["tf32", "tf32x3"])
def test_wgmma_streams_take_the_bandwidth_paths(precision):
    """Single rows and N <= 8 go to stage 11's gemv / skinny_n paths (fp32 FFMA: tf32x3 stays fp32
    class), right on odd shapes, beta != 0, split K ranges; the config names the path and why."""
    for shape, path in (((1, 4097, 1000), "gemv"), ((1, 127, 100_003), "gemv"), ((65536, 1, 4095), "skinny_n"),
                        ((1023, 3, 255), "skinny_n"), ((127, 5, 100_003), "skinny_n"), ((1, 8, 4096), "skinny_n")):
        p = Problem(*shape, alpha=0.5, beta=-1.5, seed=sum(shape), precision=precision)
        res = check_kernel(KERNELS[WGMMA], p)
        assert res.ok, (shape, res.message)
        if precision == "tf32x3":
            assert res.rel_err < 5e-7, (shape, res.rel_err)
        cfg = KERNELS[WGMMA].prepare(p, make_inputs(p), {}).config
        assert cfg["path"] == path and cfg["precision_path"].startswith("fp32 FFMA"), cfg
# ---- stage 11's bandwidth-bound paths: one row (gemv) and N <= 8 (skinny_n) ---------------------
SK = "cuda.11_stream_k"
# (shape, options, path): M = 1 with N in {1, 3, 5, 127, 1000, 4097, 65536}, N in 1..8 with odd M,
# K odd, short and long (long K with few output blocks: split over the SMs).
SKINNY_SHAPES = [
    ((1, 1, 100003), {}, "skinny_n"),
    ((1, 3, 1000), {}, "skinny_n"),
    ((1, 5, 7), {"path": "gemv"}, "gemv"),
    ((1, 127, 4097), {}, "gemv"),
    ((1, 1000, 1023), {}, "gemv"),
    ((1, 4097, 100003), {}, "gemv"),
    ((1, 65536, 1024), {}, "gemv"),
    ((1, 1000, 4097), {"k_splits": "33"}, "gemv"),
    ((7, 1, 4097), {}, "skinny_n"),
    ((33, 2, 1000), {}, "skinny_n"),
    ((1023, 3, 255), {}, "skinny_n"),
    ((4097, 4, 1024), {}, "skinny_n"),
    ((127, 5, 100003), {}, "skinny_n"),
    ((100003, 6, 33), {}, "skinny_n"),
    ((255, 7, 4097), {"k_splits": "9"}, "skinny_n"),
    ((4096, 8, 4096), {}, "skinny_n"),
    ((1001, 8, 1000), {}, "skinny_n"),
    # K <= 256 takes the resident build by default (1023x3x255, 100003x6x33 above): the chunked build there
    ((1023, 3, 255), {"skinny_b": "chunked"}, "skinny_n"),
    ((100003, 6, 33), {"skinny_b": "chunked"}, "skinny_n"),
]


@pytest.mark.parametrize("i", range(len(SKINNY_SHAPES)), ids=lambda i: "x".join(map(str, SKINNY_SHAPES[i][0])))
def test_skinny_paths_on_odd_shapes(i):
    """Against the float64 reference (C NaN-poisoned where beta == 0), the path the rule names,
    and the same bits in 3 runs (the K ranges' partials are summed in a fixed order)."""
    shape, opts, path = SKINNY_SHAPES[i]
    config = _right_and_the_same_bits_in_3_runs(shape, opts, i)
    assert config["path"] == path, config


def _right_and_the_same_bits_in_3_runs(shape, opts, i) -> dict:
    """Stage 11 on ``shape`` with ``opts`` against the float64 reference, then 3 launches giving
    the same bits; the launch's config."""
    alpha, beta = AB[i % len(AB)]
    k = KERNELS[SK]
    p = Problem(*shape, alpha=alpha, beta=beta, seed=i)
    res = check_kernel(k, p, options=k.parse_options(opts))
    assert res.ok, f"{SK} {shape} {opts} alpha={alpha} beta={beta}: {res.message}"
    seen, launch = _runs(SK, p, 3, opts)
    assert len(seen) == 1, f"{SK} {shape}: {len(seen)} different results in 3 runs ({launch.config})"
    return launch.config


def test_skinny_paths_split_k_where_the_output_is_small():
    """Few output blocks and a long K: the K split the model promises, and the sum of the ranges
    is right."""
    k = KERNELS[SK]
    for shape in ((1, 4097, 100003), (127, 5, 100003)):
        p = Problem(*shape, alpha=0.5, beta=-1.5)
        cfg = k.prepare(p, make_inputs(p), {}).config
        assert cfg["k_splits"] > 1 and cfg["grid"][1] == cfg["k_splits"], cfg
        assert check_kernel(k, p).ok


@pytest.mark.parametrize("shape, operand", [((1, 1000, 1000), "B"), ((1001, 8, 1000), "A")],
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else v)
def test_skinny_paths_on_a_misaligned_base(shape, operand):
    """The streamed operand 4 bytes past a 16-byte boundary (a view into a larger buffer), its rows
    a multiple of 4 floats: the scalar build runs (a 16-byte load there would fault) and is right."""
    _right_from_a_misaligned_base(Problem(*shape, alpha=0.5, beta=-1.5, seed=7), operand, {})


def _right_from_a_misaligned_base(p, operand, options, kernel=SK, config=("operands", "scalar")):
    """``kernel`` (stage 11 by default) with ``operand`` (A or B) moved 4 bytes past a 16-byte
    boundary (a view into a larger buffer): its config's ``config[0]`` starts with ``config[1]``
    (stage 11: the scalar build runs), and C passes the float64 check."""
    from compare.harness.inputs import Inputs
    base = make_inputs(p)
    x = getattr(base, operand)
    buf = torch.empty(x.numel() + 1, device="cuda", dtype=torch.float32)
    moved = buf[1:].view(x.shape)
    moved.copy_(x)
    fields = {n: getattr(base, n) for n in ("A", "B", "C0", "ref", "bound")}
    fields[operand] = moved
    inputs = Inputs(p, fields["A"], fields["B"], fields["C0"], base.C0.clone(), fields["ref"], fields["bound"])
    launch = KERNELS[kernel].prepare(p, inputs, KERNELS[kernel].parse_options(options))
    inputs.reset_c()
    launch()
    torch.cuda.synchronize()
    assert str(launch.config[config[0]]).startswith(config[1]), launch.config
    res = check(p, inputs.C, inputs.ref, inputs.bound)
    assert res.ok, res.message


@pytest.mark.parametrize("shape", [(1, 4097, 100003), (127, 5, 100003)], ids=lambda s: "x".join(map(str, s)))
def test_skinny_paths_are_captured_by_a_cuda_graph(shape):
    """Both launches (the split product and the range sum) replay from a graph."""
    p = Problem(*shape, alpha=1.0, beta=0.5)
    inputs = make_inputs(p)
    launch = KERNELS[SK].prepare(p, inputs, {})
    assert launch.config["k_splits"] > 1
    res = _replayed_from_a_graph(p, inputs, launch)
    assert res.ok, res.message


# ---- skinny_n's short-K build (skinny_b=resident: B resident in shared memory, persistent blocks) --
RESIDENT = {"skinny_b": "resident"}
# Every N of skinny_n; K at 1, odd, the lane counts' edges (4 lanes up to 128, 8 up to 256: the
# bound) and a multiple of 4 (float4); M odd, from one row to more row groups than the grid has
# blocks (100003 rows: 1563-3126 groups for 264 blocks on an H100), and the short-K shapes.
SHORT_K_SHAPES = [
    (1, 1, 1), (7, 2, 3), (1023, 3, 128), (100003, 4, 129), (4097, 5, 255), (100003, 6, 256),
    (33, 7, 100), (100003, 8, 4), (131071, 8, 256), (1000003, 2, 100), (255, 1, 200), (65537, 3, 33),
]


@pytest.mark.parametrize("i", range(len(SHORT_K_SHAPES)), ids=lambda i: "x".join(map(str, SHORT_K_SHAPES[i])))
def test_skinny_short_on_odd_shapes(i):
    """skinny_b=resident against the float64 reference (C NaN-poisoned where beta == 0) and the
    same bits in 3 runs (each output's lane partials added in a fixed order)."""
    config = _right_and_the_same_bits_in_3_runs(SHORT_K_SHAPES[i], RESIDENT, i)
    assert (config["path"], config["skinny_b"]) == ("skinny_n", "resident"), config


def test_skinny_short_on_a_misaligned_base():
    """A 4 bytes past a 16-byte boundary, K % 4 == 0: the scalar build runs, and is right."""
    _right_from_a_misaligned_base(Problem(10001, 8, 256, alpha=0.5, beta=-1.5, seed=7), "A", RESIDENT)


def test_skinny_short_is_captured_by_a_cuda_graph():
    p = Problem(100003, 8, 256, alpha=1.0, beta=0.5)
    inputs = make_inputs(p)
    launch = KERNELS[SK].prepare(p, inputs, KERNELS[SK].parse_options(RESIDENT))
    res = _replayed_from_a_graph(p, inputs, launch)
    assert res.ok, res.message
