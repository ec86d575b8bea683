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

from compare.harness import timing
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
