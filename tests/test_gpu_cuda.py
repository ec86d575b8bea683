"""The CUDA stages on a GPU: every stage on odd shapes against the float64 reference (through
compare.runner.check_kernel, which NaN-poisons C when beta == 0), split-K bit-identical run to
run, launches on torch's current stream. Skips cleanly without a GPU or without CuPy."""
import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():  # pragma: no cover - collection on CPU machines
    pytest.skip("needs an NVIDIA GPU (torch.cuda.is_available() is False)", allow_module_level=True)
cupy = pytest.importorskip("cupy", reason="CuPy is not installed (pip install -e .[cuda13] or .[cuda12])")

import cuda_kernels  # noqa: E402
from compare.check import check  # noqa: E402
from compare.inputs import make_inputs  # noqa: E402
from compare.problem import Problem  # noqa: E402
from compare.runner import check_kernel  # noqa: E402
from cuda_kernels.registry import TILES_09, TILES_10  # noqa: E402

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


@pytest.mark.parametrize("shape", [(256, 256, 8192), (255, 127, 4097), (512, 512, 65536)],
                         ids=lambda s: "x".join(map(str, s)))
def test_split_k_is_bit_identical_run_to_run(shape, monkeypatch):
    monkeypatch.delenv("CUDA_SPLIT_K", raising=False)
    k = KERNELS["cuda.10_split_k"]
    p = Problem(*shape, alpha=0.5, beta=-1.5)
    inputs = make_inputs(p)
    launch = k.prepare(p, inputs)
    assert launch.splits > 1, f"{p.shape} should be split (tiles are few, K is long)"
    results = []
    for _ in range(2):
        inputs.reset_c()
        torch.cuda.synchronize()
        launch()
        torch.cuda.synchronize()
        results.append(inputs.C.clone())
    assert torch.equal(results[0], results[1])
    assert check_kernel(k, p).ok


def test_launches_go_to_torchs_current_stream():
    """prepare() binds the launch to torch's current stream (here a side stream): the reset of C
    queued on that stream must come before the kernel, the check after it."""
    p = Problem(1000, 1000, 4096, alpha=1.0, beta=1.0)
    inputs = make_inputs(p)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    for name in ("cuda.09_double_buffered", "cuda.10_split_k"):
        with torch.cuda.stream(side):
            launch = KERNELS[name].prepare(p, inputs)
            inputs.C.fill_(float("nan"))
            inputs.reset_c()
            launch()
        side.synchronize()
        res = check(p, inputs.C, inputs.ref, inputs.bound)
        assert res.ok, f"{name}: {res.message}"


@pytest.mark.parametrize("name, tile", [("cuda.09_double_buffered", t) for t in TILES_09]
                         + [("cuda.10_split_k", t) for t in TILES_10])
def test_every_pipeline_tile(name, tile, monkeypatch):
    monkeypatch.setenv("CUDA_TILE_09", tile)
    monkeypatch.setenv("CUDA_TILE_10", tile)
    for shape in [(1023, 1000, 4097), (256, 256, 65536 + 3)]:
        res = check_kernel(KERNELS[name], Problem(*shape, alpha=-2.0, beta=0.0))
        assert res.ok, f"{name} {tile} {shape}: {res.message}"
