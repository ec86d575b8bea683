"""The measurement engine on the CPU: its statistics, and its sampling loop against a simulated
GPU with a fake clock (the real GPU is exercised in test_gpu_timing.py and test_gpu_foundation.py).

The simulated GPU is one in-order stream: every host action (enqueueing, dispatching a launch)
advances a host clock; every GPU op starts when it has been enqueued and the stream is free. A
start event enqueued on an idle stream therefore completes at once, and the launch behind it
is counted with its host dispatch time: the fault the hold exists to remove.
"""
import math
import random

import pytest

from compare.harness import batch_time, timing
from compare.harness.errors import UsageError
from compare.harness.timing import measure, noise_of


def test_noise_shrinks_with_samples_and_ignores_one_outlier():
    rng = random.Random(0)
    few = [1.0 + rng.gauss(0, 0.01) for _ in range(10)]
    many = [1.0 + rng.gauss(0, 0.01) for _ in range(1000)]
    m_few, n_few = noise_of(few)
    m_many, n_many = noise_of(many)
    assert n_many < n_few / 5
    assert abs(m_many - 1.0) < 0.002
    # relative SE of the median for sigma=1%: 1.2533 * 0.01 / sqrt(1000) ~ 4e-4
    assert 2e-4 < n_many < 8e-4
    spiked = many[:-1] + [50.0]
    assert math.isclose(noise_of(spiked)[1], n_many, rel_tol=0.05)


def test_noise_needs_four_samples():
    assert noise_of([1.0, 1.0, 1.0])[1] == math.inf


def test_noise_of_by_hand():
    # quartiles of 1..8 (exclusive method): 2.25 and 6.75, IQR 4.5, median 4.5
    med, noise = noise_of([float(x) for x in range(8, 0, -1)])
    assert med == 4.5
    assert math.isclose(noise, 1.2533 * (4.5 / 1.349) / math.sqrt(8) / 4.5, rel_tol=1e-12)
    assert math.isclose(noise, 0.32848, rel_tol=1e-4)


class FakeEvent:
    t = None


class FakeGPU:
    """The methods of compare.harness.timing.TorchGPU on a fake clock (seconds)."""

    def __init__(self, flush_s=30e-6, record_s=2e-6, enqueue_s=1e-6, hold_scale=1.0):
        self.host = 0.0          # host clock
        self.free = 0.0          # when the stream's queued work is done
        self.flush_s, self.record_s, self.enqueue_s, self.hold_scale = flush_s, record_s, enqueue_s, hold_scale
        self.holds, self.flushes, self.captured = [], 0, 0
        self.sampling_started = None

    def host_work(self, seconds):
        self.host += seconds

    def enqueue(self, seconds):
        self.free = max(self.host, self.free) + seconds
        return self.free

    def now(self):
        return self.host

    def synchronize(self):
        self.host = max(self.host, self.free)

    def flush_l2(self):
        self.flushes += 1
        self.host_work(self.enqueue_s)
        self.enqueue(self.flush_s)

    def new_event(self):
        return FakeEvent()

    def record(self, event):
        self.host_work(self.record_s)
        event.t = self.enqueue(0.0)

    def completed(self, event):
        return event.t <= self.host

    def elapsed_s(self, start, end):
        return end.t - start.t

    def calibrate_hold(self):
        self.sampling_started = self.host

    def hold(self, seconds):
        self.holds.append(seconds)
        self.host_work(self.enqueue_s)
        self.enqueue(seconds * self.hold_scale)   # hold_scale < 1: a badly calibrated spin

    def capture(self, launch):
        self.captured += 1
        return FakeLaunch(self, launch.kernel_s, dispatch_s=3e-6)

    def capture_many(self, launch, n):
        """One graph of n launches: the host enqueues it once (3 us), the GPU runs n kernels
        back to back. A launch that syncs can't be captured (as torch raises)."""
        if launch.syncs:
            raise RuntimeError("operation not permitted when stream is capturing")
        self.captured += 1
        self.batch_n = n
        return FakeLaunch(self, launch.kernel_s * n, dispatch_s=3e-6)


class FakeLaunch:
    """A kernel of ``kernel_s`` (times 1 + ``jitter`` * N(0,1)) that the host takes ``dispatch_s``
    to enqueue; ``hiccups`` {call number: extra host seconds} (the OS taking the CPU away);
    ``syncs``: the launch waits for the GPU before returning (can never be held)."""

    def __init__(self, gpu, kernel_s, dispatch_s=50e-6, jitter=0.0, hiccups=None, syncs=False, seed=0):
        self.gpu, self.kernel_s, self.dispatch_s, self.jitter = gpu, kernel_s, dispatch_s, jitter
        self.hiccups, self.syncs = dict(hiccups or {}), syncs
        self.rng = random.Random(seed)
        self.calls = 0

    def __call__(self):
        self.calls += 1
        self.gpu.host_work(self.dispatch_s + self.hiccups.get(self.calls, 0.0))
        self.gpu.enqueue(self.kernel_s * (1 + self.jitter * self.rng.gauss(0, 1)))
        if self.syncs:
            self.gpu.synchronize()


def _run(gpu, launch, **kw):
    kw.setdefault("warmup_s", 0.0)      # two warm-up launches: calls 1 and 2
    return measure(launch, gpu=gpu, **kw)


def test_hold_times_the_kernel_not_its_dispatch():
    # 10 us kernel, 50 us host dispatch: unheld events see the dispatch; the hold removes it.
    gpu = FakeGPU()
    m_events = _run(gpu, FakeLaunch(gpu, 10e-6), method="events", max_samples=20, target_noise=0)
    assert m_events.method == "events" and m_events.hold_us is None
    assert m_events.median_s > 2 * 10e-6       # part of the dispatch counted (the fault being fixed)

    gpu = FakeGPU()
    m = _run(gpu, FakeLaunch(gpu, 10e-6), min_samples=20, max_samples=20)
    assert m.method == "events+hold" and m.hold_failures == 0 and m.samples == 20
    assert m.median_s == pytest.approx(10e-6, rel=1e-9) and m.max_s == pytest.approx(10e-6, rel=1e-9)
    assert m.dispatch_us == pytest.approx(50.0)
    # first hold: floor + 3 x dispatch, one per sample, after an L2 flush per sample
    assert m.hold_us == pytest.approx(1e6 * (timing.HOLD_FLOOR_S + timing.HOLD_FACTOR * 50e-6))
    assert len(gpu.holds) == 20 and gpu.flushes == 20


def test_a_failed_hold_is_discarded_and_the_next_one_longer():
    gpu = FakeGPU()
    # call 5 (the 3rd sample) stalls 1 ms on the host: its hold runs out before it is enqueued
    launch = FakeLaunch(gpu, 10e-6, hiccups={5: 1e-3})
    m = _run(gpu, launch, min_samples=12, max_samples=12)
    first = timing.HOLD_FLOOR_S + timing.HOLD_FACTOR * 50e-6
    assert m.hold_failures == 1 and m.method == "events+hold"
    assert m.samples == 12 and launch.calls == 2 + 13      # the failed sample was made up
    assert gpu.holds[:3] == [first, first, first] and gpu.holds[3] == pytest.approx(2 * first)
    assert m.hold_us == pytest.approx(1e6 * 2 * first)
    assert all(t == pytest.approx(10e-6, rel=1e-9) for t in m.times_s)   # the stalled one is not there


def test_a_short_spin_grows_until_it_holds():
    # the spin lasts a twentieth of what was asked (say, a clock far above the calibration's)
    gpu = FakeGPU(hold_scale=0.05)
    m = _run(gpu, FakeLaunch(gpu, 10e-6), min_samples=10, max_samples=10)
    assert m.method == "events+hold" and m.hold_failures >= 1 and m.samples == 10
    assert m.median_s == pytest.approx(10e-6, rel=1e-9)


def test_a_launch_that_waits_for_the_gpu_gives_up_holding_and_says_so():
    gpu = FakeGPU()
    launch = FakeLaunch(gpu, 10e-6, syncs=True)
    m = _run(gpu, launch, min_samples=5, max_samples=5, target_noise=0)
    assert m.method == "events (hold gave up)" and m.hold_us is None and m.samples == 5
    first = gpu.holds[0]
    assert gpu.holds == [first * 2 ** i for i in range(len(gpu.holds))]
    assert gpu.holds[-1] <= timing.HOLD_MAX_S < gpu.holds[-1] * 2
    assert m.hold_failures == len(gpu.holds)


def test_stops_at_the_target_noise():
    gpu = FakeGPU()
    m = _run(gpu, FakeLaunch(gpu, 100e-6, jitter=0.01), target_noise=0.003, max_samples=2000, budget_s=10.0)
    assert m.noise <= 0.003
    # sigma 1% -> about (1.2533 * 0.01 / 0.003)^2 ~ 17 samples; batches at most double
    assert 10 <= m.samples <= 80
    assert m.median_s == pytest.approx(100e-6, rel=0.01)


def test_stops_at_the_budget():
    gpu = FakeGPU()
    m = _run(gpu, FakeLaunch(gpu, 100e-6, jitter=0.3), target_noise=1e-9, max_samples=100000, budget_s=0.05)
    assert m.noise > 1e-9 and m.samples < 100000
    spent = gpu.host - gpu.sampling_started
    assert 0.05 <= spent < 0.05 * 1.5
    # each sample is GPU-bound at flush + hold + kernel
    per_sample = gpu.flush_s + m.hold_us * 1e-6 + 100e-6
    assert m.samples == pytest.approx(spent / per_sample, rel=0.1)


def test_respects_max_samples():
    gpu = FakeGPU()
    m = _run(gpu, FakeLaunch(gpu, 100e-6, jitter=0.05), target_noise=0, max_samples=37, budget_s=100.0)
    assert m.samples == 37 == len(m.times_s)


def test_slow_kernel_gets_a_few_samples_not_min_samples():
    gpu = FakeGPU()
    m = _run(gpu, FakeLaunch(gpu, 1.0), min_samples=10, budget_s=2.0)
    assert m.samples == 3 and m.median_s == pytest.approx(1.0)


def test_graph_method_times_the_captured_replay():
    gpu = FakeGPU()
    launch = FakeLaunch(gpu, 10e-6)
    m = _run(gpu, launch, method="graph", max_samples=10, target_noise=0)
    assert gpu.captured == 1 and launch.calls == 0          # only the replay ran
    assert m.method == "graph+hold" and m.dispatch_us == pytest.approx(3.0)
    assert m.median_s == pytest.approx(10e-6, rel=1e-9)


@pytest.mark.parametrize("kw", [{"method": "cudagraph"}, {"min_samples": 0}, {"max_samples": 0}])
def test_bad_arguments_are_refused_before_any_gpu_work(kw):
    gpu = FakeGPU()
    launch = FakeLaunch(gpu, 10e-6)
    with pytest.raises(UsageError):
        _run(gpu, launch, **kw)
    assert launch.calls == 0 and gpu.host == 0.0


def test_measurement_says_how_it_was_taken():
    gpu = FakeGPU()
    d = _run(gpu, FakeLaunch(gpu, 10e-6), max_samples=10, target_noise=0).as_dict()
    assert {"method", "hold_us", "hold_failures", "dispatch_us"} <= set(d) and "times_s" not in d


# ---------------------------------------------------------------------------- batch time


def test_batch_time_is_the_gpu_time_per_launch_not_the_launch_path():
    # a 16 us kernel behind a 40 us Python launch path: back-to-back launches from the host would
    # read ~40 us each; one graph of n launches reads the kernel's 16 us.
    gpu = FakeGPU()
    launch = FakeLaunch(gpu, 16e-6, dispatch_s=40e-6)
    host_loop = gpu.host
    for _ in range(50):
        launch()
    gpu.synchronize()
    assert (gpu.host - host_loop) / 50 >= 40e-6          # what a host loop would measure
    b = batch_time.measure_batch(launch, 16e-6, gpu=gpu)
    assert b.per_launch_s == pytest.approx(16e-6, rel=1e-9)
    assert b.n == math.ceil(batch_time.BATCH_TARGET_S / 16e-6) == gpu.batch_n and b.method == f"graph x{b.n}"
    assert len(b.times_s) == b.reps == batch_time.BATCH_REPS


def test_batch_size_is_bounded():
    gpu = FakeGPU()
    assert batch_time.measure_batch(FakeLaunch(gpu, 1e-9), 1e-9, gpu=gpu).n == batch_time.BATCH_MAX_N
    gpu = FakeGPU()
    assert batch_time.measure_batch(FakeLaunch(gpu, 0.5), 0.5, gpu=gpu).n == 1


def test_batch_of_an_uncapturable_launch_is_na_with_the_reason():
    gpu = FakeGPU()
    b = batch_time.measure_batch(FakeLaunch(gpu, 10e-6, syncs=True), 10e-6, gpu=gpu)
    assert b.per_launch_s is None and b.method.startswith("n/a: not capturable") and "capturing" in b.method
    assert batch_time.measure_batch(FakeLaunch(gpu, 10e-6), None, gpu=gpu).method.startswith("n/a")


def test_runner_rows_carry_cold_batch_and_host_times(monkeypatch):
    from compare.harness import runner

    gpu = FakeGPU()
    launch = FakeLaunch(gpu, 20e-6, dispatch_s=30e-6)
    r = runner._base(type("K", (), {"name": "k", "family": "triton", "stage": "s", "group": "g",
                                    "variant": ""})(),
                     runner.Problem(64, 64, 64), runner.OK)
    problem = runner.Problem(64, 64, 64)
    monkeypatch.setattr(runner.gpuinfo, "environment", lambda: type("E", (), {"fp32_peak_tflops": None})())
    inputs = type("I", (), {"reset_c": staticmethod(lambda: None)})()
    runner._measure_into(r, problem, inputs, launch, {"gpu": gpu, "warmup_s": 0.0, "max_samples": 10})
    runner._batch_into(r, launch, {"gpu": gpu})
    assert r.median_ms == pytest.approx(0.02, rel=1e-6) and r.batch_ms == pytest.approx(0.02, rel=1e-6)
    assert r.batch_method.startswith("graph x") and r.host_launch_us == pytest.approx(30.0)
    cub = runner.Result(**{**r.__dict__, "kernel": "cublas", "family": "cublas"})
    cub.batch_ms, cub.tflops = 0.01, r.tflops * 2
    runner.fill_pct_cublas([cub, r])
    assert r.pct_cublas == pytest.approx(50.0) and r.pct_cublas_batch == pytest.approx(50.0)
    # a launch that can't be captured keeps its cold time and says why it has no batch time
    r2 = runner.Result(**r.__dict__)
    runner._batch_into(r2, FakeLaunch(gpu, 20e-6, syncs=True), {"gpu": gpu})
    assert r2.batch_ms is None and r2.batch_method.startswith("n/a") and r2.median_ms


# ---------------------------------------------------------------------------- planted slowdown


@pytest.mark.parametrize("fraction", [0.03, 0.10])
def test_plant_slows_the_timed_launch_by_the_asked_fraction(fraction):
    gpu = FakeGPU()
    m0 = _run(gpu, FakeLaunch(gpu, 100e-6), max_samples=20, target_noise=0)
    gpu = FakeGPU()
    m = _run(gpu, FakeLaunch(gpu, 100e-6), max_samples=20, target_noise=0, plant=timing.Plant(fraction))
    assert m.median_s / m0.median_s - 1 == pytest.approx(fraction, rel=0.02)
    assert m.planted["fraction"] == fraction and m.planted["achieved"] == pytest.approx(fraction, rel=0.02)
    assert m0.planted is None


def test_plant_is_corrected_for_a_spin_that_runs_short():
    # a spin that lasts half of what is asked: the fitted length is twice the asked one
    gpu = FakeGPU(hold_scale=0.5)
    m = _run(gpu, FakeLaunch(gpu, 100e-6), max_samples=20, target_noise=0, plant=timing.Plant(0.03))
    assert m.planted["achieved"] == pytest.approx(0.03, rel=0.02)
    assert m.planted["spin_us"] == pytest.approx(2 * 3.0, rel=0.02)


def test_plant_is_corrected_for_the_spins_own_launch_cost():
    # every spin costs 2 us more than its length (its launch): a 3% plant of a 100 us kernel is
    # a 1 us spin, not 3 us
    class SpinWithLaunchCost(FakeGPU):
        def hold(self, seconds):
            self.holds.append(seconds)
            self.host_work(self.enqueue_s)
            self.enqueue(seconds + (2e-6 if self.sampling_started is not None and seconds < 1e-5 else 0.0))
    gpu = SpinWithLaunchCost()
    m = _run(gpu, FakeLaunch(gpu, 100e-6), max_samples=20, target_noise=0, plant=timing.Plant(0.03))
    assert m.planted["achieved"] == pytest.approx(0.03, rel=0.02)
    assert m.planted["spin_us"] == pytest.approx(1.0, rel=0.05)


@pytest.mark.parametrize("plant", [0.03, timing.Plant.__new__(timing.Plant)])
def test_plant_only_as_a_plant_object_with_a_held_method(plant):
    gpu = FakeGPU()
    with pytest.raises((UsageError, AttributeError)):
        _run(gpu, FakeLaunch(gpu, 10e-6), plant=plant, method="events" if not isinstance(plant, float) else "hold")
    for bad in (0, -0.1, 2.0, float("nan")):
        with pytest.raises(UsageError):
            timing.Plant(bad)


def test_back_to_back_measurements_share_one_warm_up():
    # 1 ms kernel, 50 ms warm-up: the first measurement warms up for 50 ms; one started right
    # after it (the next row of a sweep) runs two warm-up launches, its GPU never having idled.
    gpu = FakeGPU()
    first = FakeLaunch(gpu, 1e-3)
    m1 = measure(first, gpu=gpu, warmup_s=0.05, min_samples=10, max_samples=10)
    assert m1.warmup_s >= 0.05 and first.calls - 10 >= 45
    second = FakeLaunch(gpu, 1e-3)
    m2 = measure(second, gpu=gpu, warmup_s=0.05, min_samples=10, max_samples=10)
    assert second.calls == 2 + 10 and m2.warmup_s < 0.01
    # after an idle gap of WARM_GAP_S the clocks may have dropped: the full warm-up again
    gpu.host_work(timing.WARM_GAP_S)
    third = FakeLaunch(gpu, 1e-3)
    m3 = measure(third, gpu=gpu, warmup_s=0.05, min_samples=10, max_samples=10)
    assert m3.warmup_s >= 0.05 and third.calls - 10 >= 45


def test_warm_up_credit_is_per_gpu_clock():
    # another GPU object (its own clock) gets no credit from this one's measurement
    gpu = FakeGPU()
    measure(FakeLaunch(gpu, 1e-3), gpu=gpu, warmup_s=0.05, min_samples=10, max_samples=10)
    other = FakeGPU()
    launch = FakeLaunch(other, 1e-3)
    m = measure(launch, gpu=other, warmup_s=0.05, min_samples=10, max_samples=10)
    assert m.warmup_s >= 0.05 and launch.calls - 10 >= 45


def test_short_measurements_add_up_to_the_warm_up():
    # credit is the unbroken stretch's GPU work: a 1 ms batch alone does not waive 50 ms
    gpu = FakeGPU()
    timing.was_busy(gpu, gpu.now(), 0.001)
    launch = FakeLaunch(gpu, 1e-3)
    m = measure(launch, gpu=gpu, warmup_s=0.05, min_samples=10, max_samples=10)
    assert m.warmup_s >= 0.049 - 1e-9 and launch.calls - 10 >= 44


def test_the_time_is_the_median_a_slow_sample_does_not_move_it():
    """GPU samples are skewed slow (a preempted or clock-dipped launch): the row's time is their
    median. By hand: 1, 1.5, 2, 3, 100 -> 2 (their mean, 21.5, would be the outlier's); an even
    count takes the middle two's mean: 1, 2, 3, 50 -> 2.5."""
    assert noise_of([2.0, 1.0, 3.0, 100.0, 1.5])[0] == 2.0
    assert noise_of([3.0, 50.0, 1.0, 2.0])[0] == 2.5
