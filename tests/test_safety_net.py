"""Tests that each catch one bug the rest of the CPU suite let through.

Each bug below was planted by hand in a clone and survived every other CPU test; each test
here fails with its bug planted (the commit that added this file says how that was checked):

a. the float64 reference built from the fp32 product (the check then reports error 0);
b. no NaN poisoning of C before the checked launch (a kernel that reads C at beta = 0, or
   leaves C unwritten, passes);
c. the engine's median replaced by the mean, and its noise measure likewise (the fake GPU's
   samples were all equal, so mean == median);
d. the L2 flush turned off by default;
e. the Triton fp32 path compiled with ``input_precision="tf32"`` (the interpreter ignores the
   precision, so the compiled code for sm_90 is read, without a GPU).

Later rounds plant their bugs with ``python .ci/plant-bugs`` (the list and the command are there):

f. cuBLAS's fp32 baseline run with torch's fp32 matmul precision "tf32" (TF32 tensor cores):
   only the GPU tests saw it, and every fp32 % of cuBLAS would read about 7x too low;
g. a tf32x3 row looking for a cuBLAS tf32x3 baseline (cuBLAS has none; it is compared with
   cuBLAS fp32, the same accuracy class): every tf32x3 row lost its % of cuBLAS;
h. the summary's geomean column computed as an arithmetic mean (50% and 200% read 125, not 100);
i. C0 drawn as zeros: at beta != 0 a kernel that never reads C passed the check;
j. tf32x3 compiled with ``input_precision="tf32"``: one TF32 pass labelled tf32x3 (the
   interpreter ignores the precision; the compiled TTIR below says it);
k. output files written in place instead of through a temporary that replaces them: a run
   stopped mid-write left a half-written file over the last good one.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from compare.harness import registry, timing
from compare.harness.check import check
from compare.harness.inputs import clear_cache, make_inputs
from compare.harness.problem import Problem
from compare.harness.registry import Kernel
from compare.harness.runner import FAILED, OK, run_kernel
from compare.harness.timing import measure, noise_of
from test_timing_stats import FakeGPU, FakeLaunch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --- a. the float64 reference ----------------------------------------------------------------

@pytest.mark.parametrize("alpha, beta", [(1.0, 0.0), (1.5, 0.5)])
def test_reference_is_the_float64_product_of_the_fp32_inputs(alpha, beta):
    """ref and bound equal NumPy's float64 arithmetic on the same fp32 values, and an honest fp32
    result is measurably off ref (a reference made from the fp32 product would give it error 0)."""
    p = Problem(48, 40, 2048, alpha=alpha, beta=beta, seed=5)
    clear_cache()
    inp = make_inputs(p, device="cpu")
    A, B, C0 = (t.numpy().astype(np.float64) for t in (inp.A, inp.B, inp.C0))
    want = alpha * (A @ B) + beta * C0
    want_bound = abs(alpha) * (np.abs(A) @ np.abs(B)) + abs(beta) * np.abs(C0)
    assert inp.ref.dtype == inp.bound.dtype == torch.float64
    # float64 rounding of a 2048-term sum: ~1e-16 relative; fp32 products would be ~1e-7 off
    assert np.linalg.norm(inp.ref.numpy() - want) / np.linalg.norm(want) < 1e-13
    assert np.linalg.norm(inp.bound.numpy() - want_bound) / np.linalg.norm(want_bound) < 1e-13
    fp32 = alpha * (inp.A @ inp.B) + beta * inp.C0
    r = check(p, fp32, inp.ref, inp.bound)
    assert r.ok and 1e-9 < r.rel_err < 1e-5 and r.worst_err > 0, r


def test_a_torch_fp32_kernel_through_the_pipeline_reports_its_rounding_error():
    """cuBLAS's CPU stand-in (torch addmm in fp32) through run_kernel: ok, with a nonzero error."""
    r = run_kernel(registry.get("cublas"), Problem(64, 56, 1024, seed=3), timing=False, device="cpu")
    assert r.status == OK and r.rel_err > 1e-9 and r.worst_err > 0, r


# --- b. NaN poisoning of C before the checked launch ------------------------------------------

def _toy(name: str, body) -> Kernel:
    """A pure-torch kernel for the pipeline on CPU; ``body(call number, problem, inputs)`` is one launch."""
    def prepare(problem, inputs, options):
        calls = [0]

        def launch():
            calls[0] += 1
            body(calls[0], problem, inputs)
        launch.config = {"toy": name}
        return launch
    return Kernel(name=f"toy.{name}", family="triton", stage="naive_blocked", precisions=("fp32",), prepare=prepare)


def _full(problem, inputs):
    return problem.alpha * (inputs.A @ inputs.B)


def _honest(n, problem, inputs):
    inputs.C.copy_(_full(problem, inputs) + problem.beta * inputs.C if problem.beta else _full(problem, inputs))


def _reads_c(n, problem, inputs):
    # BLAS says C is not read when beta == 0; 0 * C0 is 0, but 0 * NaN is NaN
    inputs.C.copy_(_full(problem, inputs) + problem.beta * inputs.C)


def _first_launch_only(n, problem, inputs):
    if n == 1:           # prepare's launch writes the right answer; the checked launch writes nothing
        _honest(n, problem, inputs)


def _top_half_after_first(n, problem, inputs):
    rows = problem.M if n == 1 else problem.M // 2
    inputs.C[:rows].copy_(_full(problem, inputs)[:rows])


def test_honest_toy_kernel_passes_the_pipeline():
    r = run_kernel(_toy("honest", _honest), Problem(40, 24, 64, seed=1), timing=False, device="cpu")
    assert r.status == OK and r.config == {"toy": "honest"}, r


@pytest.mark.parametrize("body", [_reads_c, _first_launch_only, _top_half_after_first], ids=lambda f: f.__name__)
def test_kernel_that_reads_or_leaves_c_fails_at_beta_zero(body):
    """The checked launch sees C all NaN at beta = 0: a kernel that reads C then, or leaves any
    element unwritten, is FAILED for NaN. Without the poison, _reads_c passes (C holds C0 and
    0 * C0 = 0); without any reset, the other two pass on prepare's correct first launch."""
    r = run_kernel(_toy(body.__name__, body), Problem(40, 24, 64, seed=1), timing=False, device="cpu")
    assert r.status == FAILED and "NaN" in r.reason, r
    assert math.isinf(r.rel_err)


# --- c. median and IQR, not mean and standard deviation ---------------------------------------

# Sixteen skewed kernel times (us): the median 11.5 and IQR 2.5 (exclusive quartiles: 10.25 at
# rank 4.25, 12.75 at rank 12.75) are far from the mean 47.375 and the standard deviation ~104.
SKEWED_US = [10, 12, 400, 10, 11, 13, 10, 12, 11, 200, 10, 12, 11, 13, 11, 12]
MEDIAN_US, IQR_US = 11.5, 2.5
NOISE = 1.2533 * (IQR_US / 1.349) / math.sqrt(16) / MEDIAN_US


class _SequenceLaunch(FakeLaunch):
    """Two warm-up launches of 10 us, then the kernel times of ``SKEWED_US`` in order."""

    def __call__(self):
        k = self.calls - 2      # calls so far, before super() counts this one
        self.kernel_s = 10e-6 if k < 0 else SKEWED_US[k % len(SKEWED_US)] * 1e-6
        super().__call__()


def test_noise_of_skewed_samples_by_hand():
    med, noise = noise_of([t * 1e-6 for t in SKEWED_US])
    assert med == pytest.approx(MEDIAN_US * 1e-6, rel=1e-12)
    assert noise == pytest.approx(NOISE, rel=1e-9)


def test_engine_reports_median_and_iqr_of_skewed_samples():
    gpu = FakeGPU()
    launch = _SequenceLaunch(gpu, 10e-6)
    m = measure(launch, gpu=gpu, warmup_s=0.0, min_samples=16, max_samples=16, target_noise=0)
    assert m.samples == 16 and m.hold_failures == 0
    assert sorted(round(t * 1e6, 6) for t in m.times_s) == sorted(SKEWED_US)
    assert m.median_s == pytest.approx(MEDIAN_US * 1e-6, rel=1e-9)
    assert m.iqr_s == pytest.approx(IQR_US * 1e-6, rel=1e-9)
    assert m.noise == pytest.approx(NOISE, rel=1e-9)
    assert m.min_s == pytest.approx(10e-6) and m.max_s == pytest.approx(400e-6)


def test_runner_row_carries_the_engines_median(monkeypatch):
    """run_kernel's timed row: median_ms / iqr_ms / noise are the engine's, tflops from the median."""
    def fake_measure(launch, *, before=None, **kw):
        gpu = FakeGPU()
        return measure(_SequenceLaunch(gpu, 10e-6), gpu=gpu, warmup_s=0.0, min_samples=16, max_samples=16,
                       target_noise=0)
    monkeypatch.setattr(timing, "measure", fake_measure)
    p = Problem(40, 24, 64, seed=1)
    r = run_kernel(_toy("honest", _honest), p, timing=True, device="cpu")
    assert r.status == OK, r
    assert r.median_ms == pytest.approx(MEDIAN_US * 1e-3, rel=1e-9)
    assert r.iqr_ms == pytest.approx(IQR_US * 1e-3, rel=1e-9)
    assert r.noise == pytest.approx(NOISE, rel=1e-9)
    assert r.tflops == pytest.approx(p.flops / (MEDIAN_US * 1e-6) / 1e12, rel=1e-9)


# --- d. the L2 flush is on by default ---------------------------------------------------------

def test_measure_flushes_l2_before_every_sample_by_default(monkeypatch):
    made = []

    class RecordingGPU(FakeGPU):
        def __init__(self, flush):          # no default: the engine must say whether it flushes
            super().__init__()
            self.flush_on = flush
            made.append(self)

        def flush_l2(self):
            if self.flush_on:
                super().flush_l2()

    class Launch:
        calls = 0

        def __call__(self):
            Launch.calls += 1
            gpu = made[0]
            gpu.host_work(50e-6)
            gpu.enqueue(10e-6)

    monkeypatch.setattr(timing, "TorchGPU", RecordingGPU)
    m = measure(Launch(), warmup_s=0.0, min_samples=12, max_samples=12)
    assert len(made) == 1 and made[0].flush_on is True
    assert m.samples == 12 and made[0].flushes == 12


def test_torch_gpu_flush_reads_its_buffer_by_default(monkeypatch):
    """TorchGPU() (what measure builds) reads all of its L2-sized buffer on every flush_l2 and
    writes none of it; TorchGPU(flush=False) touches nothing."""
    buf, sink = torch.ones(1024), torch.zeros(())
    monkeypatch.setattr(timing, "l2_flush_buffer", lambda: (buf, sink))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda *a, **k: object())
    gpu = timing.TorchGPU()
    gpu.flush_l2()
    assert int(sink) == 1024 and int(buf.sum()) == 1024
    sink.zero_()
    timing.TorchGPU(flush=False).flush_l2()
    assert int(sink) == 0


# --- e. the Triton fp32 path compiles to IEEE fp32, not TF32 ----------------------------------

# Runs without TRITON_INTERPRET (only real @triton.jit functions compile): every Triton kernel
# the registry declares runs its own prepare() and launch() on CPU tensors with JITFunction.run
# recording each launch instead of running it (interpret knob on, so the argument checks take
# CPU tensors); each recorded launch is then compiled for sm_90 and its PTX searched for TF32
# tensor-core instructions.
_PROBE = r'''
import json, re, sys
import torch
from triton import knobs
from triton.runtime.jit import JITFunction
from triton.runtime.autotuner import Autotuner
from compare.harness import registry
from compare.harness.inputs import make_inputs
from compare.harness.problem import Problem

kernels = [k for k in registry.kernels() if k.family == "triton"]
knobs.runtime.interpret = True           # after import: the kernels stay JITFunctions
launched = []

def record(self, *args, grid, warmup, **kwargs):
    warps, stages = kwargs.pop("num_warps", 4), kwargs.pop("num_stages", 3)
    named = dict(zip(self.arg_names, args), **kwargs)
    ce = {p.name: named.pop(p.name) for p in self.params if p.is_constexpr and p.name in named}
    launched.append((self, named, ce, warps, stages))

def autotune_first(self, *args, grid=None, **kwargs):
    self.best_config = self.configs[0]
    return self.fn.run(*args, grid=grid, warmup=False, **kwargs, **self.configs[0].all_kwargs())

JITFunction.run = record
Autotuner.run = autotune_first

from triton_kernels._common import compile_sm90   # the one CPU-side sm_90 compile

out = {}
for k in kernels:
    for prec in ("fp32", "tf32", "tf32x3"):
        if prec not in k.precisions:
            continue
        p = Problem(256, 256, 256, precision=prec)
        launched.clear()
        opts = k.parse_options({"sms": "132"} if any(o.name == "sms" for o in k.options) else {})
        k.prepare(p, make_inputs(p, "cpu"), opts)()
        rows = []
        for fn, args, ce, warps, stages in launched:
            c = compile_sm90(fn, args, ce, warps, stages)
            ttgir, ptx = c.asm["ttgir"], c.asm["ptx"]
            rows.append({"fn": fn.__name__, "dot": bool(re.search(r"tt\.dot|warp_group_dot", ttgir)),
                         "tf32_mma": len(re.findall(r"\b(?:wgmma|mma)[\w.]*\.tf32", ptx)),
                         "tf32_any": len(re.findall(r"tf32", ptx)), "fma": len(re.findall(r"\bfma\.rn\.f32", ptx)),
                         "dot_precision": sorted(set(re.findall(r"inputPrecision = (\w+)", c.asm["ttir"])))})
        out[f"{k.name} {prec}"] = rows
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def compiled_dots():
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")      # the JIT's default; silences the 3.9 warning
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _triton_kernels(precision):
    return [k.name for k in registry.kernels() if k.family == "triton" and precision in k.precisions]


def test_fp32_triton_kernels_compile_to_ffma_not_tf32(compiled_dots):
    names = _triton_kernels("fp32")
    assert {"triton.naive_blocked", "triton.tiled", "triton.split_k", "triton.stream_k"} <= set(names)
    for name in names:
        rows = compiled_dots[f"{name} fp32"]
        dots = [r for r in rows if r["dot"]]
        assert dots, f"{name} fp32 launched no kernel with a tl.dot: {rows}"
        for r in rows:
            assert r["tf32_any"] == 0, f"{name} fp32: {r['fn']} has TF32 in its sm_90 PTX: {r}"
        assert all(r["fma"] > 0 for r in dots), f"{name} fp32: a dot kernel without FFMA: {dots}"


def test_tf32_triton_kernels_do_use_tf32_tensor_cores(compiled_dots):
    names = _triton_kernels("tf32")
    assert names
    for name in names:
        dots = [r for r in compiled_dots[f"{name} tf32"] if r["dot"]]
        assert dots and all(r["tf32_mma"] > 0 for r in dots), f"{name} tf32: {dots}"


# --- f. cuBLAS's precision --------------------------------------------------------------------

@pytest.mark.parametrize("tf32", [False, True])
def test_cublas_rows_set_torchs_fp32_matmul_precision_and_put_it_back(tf32):
    """fp32 rows call cuBLAS with TF32 off ("ieee"), tf32 rows with it on; torch's setting is
    restored after (a flag left on would turn every later fp32 baseline into TF32)."""
    from compare.families.cublas import matmul_precision
    m = torch.backends.cuda.matmul
    name = "fp32_precision" if hasattr(m, "fp32_precision") else "allow_tf32"
    before = getattr(m, name)
    with matmul_precision(tf32):
        assert getattr(m, name) in (("tf32", True) if tf32 else ("ieee", False))
    assert getattr(m, name) == before


# --- g. which cuBLAS row a row is compared with ----------------------------------------------

def test_each_precision_is_compared_with_its_cublas_row():
    """fp32 and tf32 with cuBLAS in the same mode; tf32x3 (three TF32 products, fp32-class
    accuracy) with cuBLAS fp32, since cuBLAS has no 3xTF32 mode."""
    from compare.harness.runner import Result, fill_pct_cublas

    def row(kernel, family, precision, tflops):
        return Result(kernel=kernel, family=family, stage="s", group="tiled", variant="", shape="64x64x64",
                      M=64, N=64, K=64, precision=precision, alpha=1.0, beta=0.0, status=OK, tflops=tflops)
    rows = [row("cublas", "cublas", "fp32", 50.0), row("cublas", "cublas", "tf32", 400.0),
            row("k", "cuda", "fp32", 25.0), row("k", "cuda", "tf32", 200.0), row("k", "cuda", "tf32x3", 100.0)]
    fill_pct_cublas(rows)
    assert [r.pct_cublas for r in rows[2:]] == [pytest.approx(50.0), pytest.approx(50.0), pytest.approx(200.0)]


# --- h. the summary's geomean ----------------------------------------------------------------

def test_summary_geomean_is_the_geometric_mean_of_the_ratios():
    """Half cuBLAS's speed at one shape and twice at another is 100% overall, not 125%."""
    from compare.harness.runner import Result, fill_pct_cublas
    from compare.outputs import matrix

    def row(kernel, family, n, tflops):
        return Result(kernel=kernel, family=family, stage="s", group="tiled", variant="", shape=f"{n}x{n}x{n}",
                      M=n, N=n, K=n, precision="fp32", alpha=1.0, beta=0.0, status=OK, tflops=tflops)
    rows = [row("cublas", "cublas", 64, 40.0), row("cublas", "cublas", 128, 40.0),
            row("cuda.k", "cuda", 64, 20.0), row("cuda.k", "cuda", 128, 80.0)]
    fill_pct_cublas(rows)
    lines = matrix.render(rows, "table").splitlines()
    header = next(ln for ln in lines if "geomean" in ln).split()
    cells = next(ln for ln in lines if ln.startswith("cuda.k")).split()
    assert header[-1] == "geomean" and cells[-1] == "100", lines


# --- i. C's starting values --------------------------------------------------------------------

def test_c0_is_random_so_a_kernel_that_ignores_beta_fails():
    p = Problem(64, 48, 32, alpha=1.0, beta=0.5, seed=1)
    inp = make_inputs(p, device="cpu")
    assert (inp.C0 != 0).all()
    assert check(p, (inp.A.double() @ inp.B.double() + 0.5 * inp.C0.double()).float(), inp.ref, inp.bound).ok
    assert not check(p, (inp.A.double() @ inp.B.double()).float(), inp.ref, inp.bound).ok


# --- j. tf32x3 is three passes ------------------------------------------------------------------

def test_tensor_precisions_compile_to_their_own_dot_precision(compiled_dots):
    """Every tl.dot of a tf32 build says tf32 and of a tf32x3 build says tf32x3 in its TTIR."""
    for prec in ("tf32", "tf32x3"):
        names = _triton_kernels(prec)
        assert names, prec
        for name in names:
            dots = [r for r in compiled_dots[f"{name} {prec}"] if r["dot"]]
            assert dots and all(r["dot_precision"] == [prec] for r in dots), f"{name} {prec}: {dots}"


# --- k. atomic writes -------------------------------------------------------------------------

def test_a_write_stopped_midway_leaves_the_old_file_whole(tmp_path):
    from compare.harness.files import write_atomically, write_text_atomically
    path = tmp_path / "results.json"
    write_text_atomically(str(path), "old")

    def half(tmp):
        with open(tmp, "w") as f:
            f.write("half")
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        write_atomically(str(path), half)
    assert path.read_text() == "old" and os.listdir(tmp_path) == ["results.json"]


def test_a_result_file_gets_the_mode_any_new_file_would(tmp_path):
    """The temporary file behind an atomic write is made 0600 (mkstemp); the result must not keep
    that: under umask 022 a new file is 0644 (others, e.g. a CI uploader, can read it), under 027
    0640."""
    import stat
    from compare.harness.files import write_text_atomically
    old = os.umask(0o022)
    try:
        write_text_atomically(str(tmp_path / "a.json"), "{}")
        os.umask(0o027)
        write_text_atomically(str(tmp_path / "b.json"), "{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "a.json").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(tmp_path / "b.json").st_mode) == 0o640


def test_every_planted_bug_still_applies():
    """Each bug of .ci/plant-bugs is one textual edit; when the code it edits changes, the edit
    finds nothing and the bug is STALE (four were, unnoticed, until this test): each bug's text
    must occur exactly once in its file, and its edit must change that text."""
    import runpy
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bugs = runpy.run_path(os.path.join(root, ".ci", "plant-bugs"), run_name="plant_bugs_catalog")["BUGS"]
    assert len(bugs) > 100
    stale = []
    for bug in bugs:
        with open(os.path.join(root, bug.file)) as f:
            count = f.read().count(bug.old)
        if count != 1 or bug.old == bug.new:
            stale.append(f"{bug.name}: {bug.file} holds its text {count} times")
    assert not stale, "\n".join(stale)
    assert len({b.name for b in bugs}) == len(bugs), "two planted bugs share a name"
