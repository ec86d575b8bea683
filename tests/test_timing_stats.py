"""The measurement engine's statistics (the GPU part is exercised in test_gpu_foundation.py)."""
import math
import random

from compare.timing import noise_of


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
