"""The timing engine on a real GPU: it times the GPU work of a launch, not its Python dispatch.

The reference is ``triton.testing.do_bench_cudagraph``: n launches captured back to back in one
CUDA graph, replayed; per-launch time = replay time / n. No Python runs between those launches,
so dispatch can't be in it. It doesn't flush L2 between launches, so the engine is compared with
``flush=False`` (and no ``before`` hook: every problem here has beta = 0, C is rewritten).

Tolerance: |engine - reference| <= 5% of the reference + 5 us.
* The absolute term is the GPU-side cost of ONE isolated launch, which the engine keeps and the
  reference hides. The engine brackets a single launch with events after a spin: the GPU drains
  the spin, records the start, then processes the launch. The graph replays launches back to
  back, and the GPU sets up each kernel while the one before is still running. Measured on an
  H100 (torch 2.11): a one-element add took 4.06 us in the engine against 1.16 us per launch
  in the graph (test_fixed_per_launch_overhead_is_small bounds it); cuBLAS fp32 256^3 10.3 us
  against 6.6 us. It is the same few us for every family, so it is no dispatch skew, but it is
  why a few % is out of reach for a 5-10 us kernel.
* The relative term: two separate measurements of the same kernel still differ by the clock
  and power state of the moment. Same H100 run: cuBLAS 4096^3 2671 vs 2661 us (0.4%),
  triton.tiled 4096^3 3062 vs 3059 us (0.1%), triton.tiled 256^3 30.4 vs 28.2 us (2.2 us).
The fault this guards against, dispatch in the sample, was 24 us (triton.tiled 256^3 on an
H100: 44.6 us engine vs 20.7 us graph, tuned config): far outside it.

``python tests/test_gpu_timing.py`` prints the table: unheld events (the old engine), hold,
graph+hold, the reference, and the default engine (hold + L2 flush).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

if __name__ == "__main__":   # run as a script: put the repository root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

pytestmark = pytest.mark.gpu

if not torch.cuda.is_available():
    pytest.skip("needs an NVIDIA GPU (torch.cuda.is_available() is False)", allow_module_level=True)

from triton.testing import do_bench_cudagraph  # noqa: E402

from compare.harness import registry  # noqa: E402
from compare.harness.inputs import make_inputs  # noqa: E402
from compare.harness.problem import Problem  # noqa: E402
from compare.harness.runner import checked_run, prepare  # noqa: E402
from compare.harness.timing import measure  # noqa: E402

REL_TOL = 0.05
LAUNCH_COST_S = 5e-6
CASES = [("cublas", 256), ("cublas", 4096), ("triton.tiled", 256), ("triton.tiled", 4096)]


def _launch(name: str, n: int):
    """A checked fp32 launch of ``name`` at n^3 (cuBLAS fp32 runs with TF32 off). Triton's
    autotuning is off: any config serves to compare two ways of timing it, and it keeps the
    4096^3 case from tuning for minutes."""
    kernel = registry.get(name)
    problem = Problem(n, n, n, precision="fp32")
    options = {}
    if any(o.name == "autotune" for o in getattr(kernel, "options", ())):
        options = kernel.parse_options({"autotune": "off"})
    inputs = make_inputs(problem, "cuda")
    launch, _ = prepare(kernel, problem, inputs, options)
    res = checked_run(problem, inputs, launch)
    assert res.ok, f"{name} {n}^3: {res.message}"
    return launch


def graph_reference_s(launch) -> float:
    return do_bench_cudagraph(launch, rep=50, return_mode="median") / 1e3


def _close(engine_s: float, reference_s: float) -> bool:
    return abs(engine_s - reference_s) <= REL_TOL * reference_s + LAUNCH_COST_S


def _us(s):
    return f"{s * 1e6:.2f} us"


@pytest.fixture(scope="module")
def launches():
    made = {}

    def get(name, n):
        if (name, n) not in made:
            made[name, n] = _launch(name, n)
        return made[name, n]
    return get


@pytest.mark.parametrize("name,n", CASES, ids=[f"{k}-{n}" for k, n in CASES])
def test_engine_matches_graph_replay(launches, name, n):
    launch = launches(name, n)
    ref = graph_reference_s(launch)
    m = measure(launch, flush=False)
    print(f"\n{name} {n}^3: engine {_us(m.median_s)} ({m.method}, hold {m.hold_us or 0:.0f} us, "
          f"{m.hold_failures} failed, dispatch {m.dispatch_us:.1f} us) vs graph {_us(ref)}")
    assert m.method == "events+hold"
    assert m.hold_failures <= max(3, m.samples // 20), "the hold kept failing: samples were retried"
    assert _close(m.median_s, ref), f"engine {_us(m.median_s)} vs graph replay {_us(ref)}"


@pytest.mark.parametrize("name,n", [("cublas", 256), ("triton.tiled", 256)], ids=["cublas-256", "triton.tiled-256"])
def test_graph_method_matches_hold(launches, name, n):
    launch = launches(name, n)
    held = measure(launch, flush=False)
    graphed = measure(launch, flush=False, method="graph")
    print(f"\n{name} {n}^3: graph+hold {_us(graphed.median_s)} (dispatch {graphed.dispatch_us:.1f} us) vs "
          f"hold {_us(held.median_s)} (dispatch {held.dispatch_us:.1f} us)")
    assert graphed.method == "graph+hold"
    assert _close(graphed.median_s, held.median_s), f"graph {_us(graphed.median_s)} vs hold {_us(held.median_s)}"


def test_fixed_per_launch_overhead_is_small():
    """A one-element add: almost nothing but the per-launch cost. The engine's excess over the
    back-to-back graph is the fixed cost of an isolated launch (2.9 us on an H100); the
    absolute term of the tolerance stands for it, so it must stay under it."""
    x = torch.zeros(1, device="cuda")

    def launch():
        x.add_(1.0)
    ref = graph_reference_s(launch)
    m = measure(launch, flush=False)
    print(f"\none-element add: engine {_us(m.median_s)} vs graph {_us(ref)}")
    assert m.method == "events+hold"
    assert m.median_s - ref <= LAUNCH_COST_S, f"engine {_us(m.median_s)} vs graph replay {_us(ref)}"


def test_a_launch_that_syncs_gives_up_holding_and_says_so():
    x = torch.zeros(1, device="cuda")

    def launch():
        x.add_(1.0)
        torch.cuda.synchronize()
    m = measure(launch, flush=False, min_samples=5, max_samples=5)
    assert m.method == "events (hold gave up)" and m.hold_failures >= 1 and m.samples == 5


def _table(shapes=(256, 512, 1024, 4096), names=("cublas", "triton.tiled"), budget_s=0.5):
    print(f"{'kernel':14} {'n':>5} {'dispatch':>9} {'events':>10} {'hold':>10} {'graph':>10} "
          f"{'reference':>10} {'hold/ref':>8} {'flushed':>10} {'hold_us':>8} {'fails':>5}")
    for name in names:
        for n in shapes:
            launch = _launch(name, n)
            ev = measure(launch, flush=False, method="events", budget_s=budget_s)
            ho = measure(launch, flush=False, budget_s=budget_s)
            gr = measure(launch, flush=False, method="graph", budget_s=budget_s)
            ref = graph_reference_s(launch)
            fl = measure(launch, budget_s=budget_s)
            print(f"{name:14} {n:5d} {ho.dispatch_us:8.1f}u {ev.median_s * 1e6:9.2f}u {ho.median_s * 1e6:9.2f}u "
                  f"{gr.median_s * 1e6:9.2f}u {ref * 1e6:9.2f}u {ho.median_s / ref:8.3f} "
                  f"{fl.median_s * 1e6:9.2f}u {ho.hold_us or 0:8.0f} {ho.hold_failures + gr.hold_failures:5d}",
                  flush=True)


if __name__ == "__main__":
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    _table()
