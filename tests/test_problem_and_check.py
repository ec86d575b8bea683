"""Problem validation and the correctness check, on the CPU."""
import math

import pytest
import torch

from compare.harness.check import FP32_REL_CAP, check, errors, tolerance
from compare.harness.inputs import clear_cache, make_inputs
from compare.harness.problem import MAX_ELEMENTS, MAX_K_FP32, Problem, ProblemError, parse_shape


@pytest.mark.parametrize("kw, msg", [
    (dict(M=0, N=4, K=4), "M must be >= 1"),
    (dict(M=4, N=-1, K=4), "N must be >= 1"),
    (dict(M=4, N=4, K=2.5), "K must be an integer"),
    (dict(M=4, N=4, K=True), "K must be an integer"),
    (dict(M=4, N=4, K=4, precision="fp16"), "unknown precision 'fp16'"),
    (dict(M=4, N=4, K=4, alpha=float("nan")), "alpha must be a finite number"),
    (dict(M=2**16, N=4, K=2**16), "32-bit"),
])
def test_problem_rejects_bad_input(kw, msg):
    with pytest.raises(ProblemError, match=msg):
        Problem(**kw)


def test_problem_limit_is_per_matrix():
    Problem(1, 1, MAX_ELEMENTS, precision="tf32")  # A is 1 x (2**31-1): allowed
    with pytest.raises(ProblemError, match="at most 2147483647"):
        Problem(2, 1, MAX_ELEMENTS, precision="tf32")


@pytest.mark.parametrize("precision", ["fp32", "tf32x3"])
def test_fp32_class_k_is_limited_to_where_the_check_can_tell_tf32_apart(precision):
    Problem(8, 8, MAX_K_FP32, precision=precision)
    with pytest.raises(ProblemError, match=r"K = 4194305 is over 4194304 .* tell an fp32-accurate result from a TF32"):
        Problem(8, 8, MAX_K_FP32 + 1, precision=precision)
    Problem(8, 8, MAX_K_FP32 + 1, precision="tf32")  # tf32 has no such limit


@pytest.mark.parametrize("text, dims", [("4096", (4096,) * 3), ("256x256x131072", (256, 256, 131072)),
                                        (" 7X33x127 ", (7, 33, 127))])
def test_parse_shape(text, dims):
    assert parse_shape(text) == dims


@pytest.mark.parametrize("text", ["", "12x", "axbxc", "1x2", "0", "4x0x4", "-4", "64,64", "64,64,1024"])
def test_parse_shape_errors(text):
    with pytest.raises(ProblemError, match="malformed shape"):
        parse_shape(text)


def test_comma_shape_is_an_error_that_shows_the_x_spelling():
    # "64,64,1024" used to parse as one shape here and as two cubes on the command line
    with pytest.raises(ProblemError, match=r"one shape: 64x64x1024"):
        parse_shape("64,64,1024")


def _tf32(x: torch.Tensor) -> torch.Tensor:
    """Round-to-nearest onto TF32's 10-bit mantissa (what the tensor cores do to each input)."""
    i = x.contiguous().view(torch.int32)
    i = (i + 0x1000) & ~0x1FFF
    return i.view(torch.float32)


def _cpu_inputs(M, N, K, **kw):
    return make_inputs(Problem(M, N, K, **kw), device="cpu")


def test_inputs_are_seeded_and_shared_across_precisions():
    a = _cpu_inputs(33, 17, 65, seed=3)
    A1 = a.A.clone()
    b = make_inputs(Problem(33, 17, 65, precision="tf32", seed=3), device="cpu")
    assert torch.equal(A1, b.A)            # same data for every precision
    c = _cpu_inputs(33, 17, 65, seed=4)
    assert not torch.equal(A1, c.A)        # a new seed draws new data
    assert (c.A != 0).all()                # never zeros


def test_fp32_result_passes_and_tf32_result_fails_fp32_check():
    p = Problem(96, 80, 4096, precision="fp32", alpha=1.5, beta=0.5, seed=1)
    inp = make_inputs(p, device="cpu")
    fp32 = (p.alpha * (inp.A @ inp.B) + p.beta * inp.C0)
    assert check(p, fp32, inp.ref, inp.bound).ok
    tf32 = (p.alpha * (_tf32(inp.A).double() @ _tf32(inp.B).double()) + p.beta * inp.C0.double()).float()
    r = check(p, tf32, inp.ref, inp.bound)
    assert not r.ok and r.rel_err > 1e-4, r
    # ...and the same TF32 output passes the tf32 tolerance
    assert check(p.with_(precision="tf32"), tf32, inp.ref, inp.bound).ok


def test_tf32_check_fails_a_result_one_percent_off():
    """The tf32 limit (4e-3 at this K) sits ~10x above TF32's own error and under 1%: a tf32
    kernel 1% off (noise, or a scale applied twice) fails, the TF32-rounded product passes. Only
    the relative check can see it: 1% of an element is well inside its componentwise bound."""
    p = Problem(96, 80, 4096, precision="tf32", seed=5)
    inp = make_inputs(p, device="cpu")
    tf32 = (_tf32(inp.A).double() @ _tf32(inp.B).double()).float()
    assert check(p, tf32, inp.ref, inp.bound).ok
    g = torch.Generator().manual_seed(0)
    r = check(p, tf32 * (1 + 0.01 * torch.randn(tf32.shape, generator=g)), inp.ref, inp.bound)
    assert not r.ok and "relative error" in r.message and "worst" not in r.message, r
    assert not check(p, tf32 * 1.01, inp.ref, inp.bound).ok


@pytest.mark.parametrize("K", [1, 4096, 131072, 2**20, MAX_K_FP32])
def test_fp32_tolerance_sits_below_tf32_error_at_every_K(K):
    rel_fp32, _ = tolerance(Problem(8, 8, K))
    assert rel_fp32 <= FP32_REL_CAP < 1.5e-4  # TF32 products err by ~2e-4..5e-4 whatever K is
    rel_tf32, _ = tolerance(Problem(8, 8, K, precision="tf32"))
    assert rel_tf32 > 1e-3


def test_one_unwritten_element_fails():
    p = Problem(128, 96, 64, seed=2)
    inp = make_inputs(p, device="cpu")
    out = (inp.A.double() @ inp.B.double()).float()
    assert check(p, out, inp.ref, inp.bound).ok
    out[77, 5] = float("nan")
    r = check(p, out, inp.ref, inp.bound)
    assert not r.ok and "1 of 12288 elements are NaN" in r.message
    # an element left at its old value (beta != 0, C not written) fails on the componentwise check
    p2 = Problem(256, 256, 64, beta=1.0, seed=2)
    inp2 = make_inputs(p2, device="cpu")
    out2 = (inp2.A.double() @ inp2.B.double() + inp2.C0.double()).float()
    assert check(p2, out2, inp2.ref, inp2.bound).ok
    out2[3, 4] = inp2.C0[3, 4]
    r2 = check(p2, out2, inp2.ref, inp2.bound)
    assert not r2.ok and "worst element" in r2.message
    assert r2.rel_err < tolerance(p2.with_(precision="tf32"))[0]  # the Frobenius norm alone would miss it


def test_reset_c_poisons_only_when_beta_is_zero():
    inp = _cpu_inputs(5, 6, 7)
    inp.reset_c(poison=True)
    assert torch.isnan(inp.C).all()
    inp2 = _cpu_inputs(5, 6, 7, beta=2.0)
    inp2.C.zero_()
    inp2.reset_c(poison=True)
    assert torch.equal(inp2.C, inp2.C0)


def test_errors_inf_on_nan():
    ref = torch.ones(2, 2, dtype=torch.float64)
    out = torch.ones(2, 2)
    out[0, 0] = float("inf")
    assert errors(out, ref, ref) == (math.inf, math.inf)


def test_tf32_result_fails_and_fp32_running_sum_passes_fp32_check_at_the_largest_K():
    """At K = 2**22 the uncapped sqrt(K) limit (4.9e-4) let a one-pass TF32 result (3.3e-4) pass
    as fp32. With the cap it fails, while the least accurate honest fp32 result, a plain running
    sum in fp32 (what one thread's accumulator does), still passes."""
    import numpy as np
    p = Problem(8, 8, MAX_K_FP32, seed=7)
    clear_cache()
    inp = make_inputs(p, device="cpu")
    try:
        tf32 = (_tf32(inp.A).double() @ _tf32(inp.B).double()).float()
        r = check(p, tf32, inp.ref, inp.bound)
        assert not r.ok and "relative error" in r.message, r
        assert check(p.with_(precision="tf32"), tf32, inp.ref, inp.bound).ok
        A, B = inp.A.numpy(), inp.B.numpy()
        running = np.empty((p.M, p.N), dtype=np.float32)
        for i in range(p.M):
            # np.cumsum accumulates in order, in float32: the worst-case sequential fp32 sum
            running[i] = np.cumsum(A[i, :, None] * B, axis=0, dtype=np.float32)[-1]
        r32 = check(p, torch.from_numpy(running), inp.ref, inp.bound)
        assert r32.ok, r32
        assert r32.rel_err < FP32_REL_CAP / 2   # and with room to spare
    finally:
        clear_cache()


def test_tf32x3_is_checked_as_fp32_not_as_tf32():
    """tf32x3 promises fp32-class accuracy (three TF32 passes), so its limits are fp32's; at K = 4096
    by hand: rel 1e-6 + 2 * 2**-23 * 64 = 1.6259e-5, worst 16 * 2**-24 * log2(8192) = 208 * 2**-24.
    A kernel that runs one TF32 pass under the tf32x3 label must fail."""
    rel, worst = tolerance(Problem(8, 8, 4096, precision="tf32x3"))
    assert rel == pytest.approx(1e-6 + 2 * 64 / 2**23, rel=1e-12)
    assert worst == pytest.approx(208 / 2**24, rel=1e-12)
    p = Problem(96, 80, 4096, precision="tf32x3", seed=1)
    inp = make_inputs(p, device="cpu")
    one_pass = (_tf32(inp.A).double() @ _tf32(inp.B).double()).float()
    r = check(p, one_pass, inp.ref, inp.bound)
    assert not r.ok and "relative error" in r.message, r
    assert check(p, (inp.A.double() @ inp.B.double()).float(), inp.ref, inp.bound).ok


def test_error_bound_takes_the_magnitude_of_a_negative_beta():
    """bound = |alpha| |A||B| + |beta| |C0|: with beta = -1.5 the C0 term adds 1.5 |C0|, never
    subtracts it (a signed beta makes the bound of some elements negative, clamped to ~0, and a
    right result FAILS on its last-bit rounding)."""
    p = Problem(40, 24, 300, alpha=0.5, beta=-1.5, seed=6)
    clear_cache()
    inp = make_inputs(p, device="cpu")
    A, B, C0 = inp.A.double(), inp.B.double(), inp.C0.double()
    want = 0.5 * (A.abs() @ B.abs()) + 1.5 * C0.abs()
    assert torch.allclose(inp.bound, want, rtol=1e-12, atol=0)
    out = (0.5 * (inp.A @ inp.B) - 1.5 * inp.C0)       # fp32 all through
    assert check(p, out, inp.ref, inp.bound).ok


def test_inputs_of_another_beta_are_not_taken_from_the_cache():
    """Same shape and seed, beta 0 then 1: the second reference must hold + C0 (a cache keyed
    without beta hands back the beta = 0 reference, and a right beta = 1 result FAILS)."""
    clear_cache()
    p0 = Problem(16, 12, 40, seed=9)
    r0 = make_inputs(p0, device="cpu").ref.clone()
    p1 = p0.with_(beta=1.0)
    inp = make_inputs(p1, device="cpu")
    want = inp.A.double() @ inp.B.double() + inp.C0.double()
    assert torch.allclose(inp.ref, want, rtol=1e-12, atol=0)
    assert not torch.allclose(inp.ref, r0)
    assert check(p1, (inp.A @ inp.B + inp.C0), inp.ref, inp.bound).ok
    clear_cache()
