"""Foundation on a real GPU: shared memory across families, cuBLAS precision modes, the engine."""
import os
import subprocess
import sys

import pytest
import torch

from compare.harness import registry
from compare.harness.inputs import make_inputs
from compare.harness.problem import Problem, ProblemError
from compare.harness.runner import check_kernel, run_kernel

pytestmark = pytest.mark.gpu
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_cupy_and_torch_see_the_same_memory():
    cupy = pytest.importorskip("cupy")
    inp = make_inputs(Problem(64, 48, 32, seed=5))
    for name in ("A", "B", "C"):
        t = getattr(inp, name)
        c = inp.cupy(name)
        assert c.data.ptr == t.data_ptr(), name
        assert c.shape == tuple(t.shape) and c.dtype == cupy.float32
    # a write through CuPy is visible to torch: same bytes, not a copy
    inp.cupy("C")[0, 0] = 123.0
    assert float(inp.C[0, 0]) == 123.0


def test_cublas_fp32_has_tf32_off_and_tf32_row_is_tensor_core():
    k = registry.get("cublas")
    p = Problem(1024, 1024, 2048, seed=11)
    fp32 = check_kernel(k, p)
    assert fp32.ok and fp32.rel_err < 1e-5, fp32
    tf32 = check_kernel(k, p.with_(precision="tf32"))
    assert tf32.ok and tf32.rel_err > 1e-4, tf32  # passes its own tolerance...
    inp = make_inputs(p)
    from compare.harness.check import check
    assert not check(p, inp.C, inp.ref, inp.bound).ok  # ...and fails the fp32 one


@pytest.mark.parametrize("alpha, beta", [(1.0, 0.0), (0.5, -1.5), (-2.0, 0.0), (1.0, 1.0)])
def test_cublas_alpha_beta(alpha, beta):
    r = check_kernel(registry.get("cublas"), Problem(257, 129, 300, alpha=alpha, beta=beta, seed=3))
    assert r.ok, r


def test_a_wrong_kernel_is_failed_and_never_timed():
    def prepare_wrong(problem, inputs, options=None):
        def launch():
            inputs.C.copy_(inputs.A[:, : inputs.C.shape[1]] * 0 + 1)
        return launch
    bad = registry.Kernel(name="test.wrong", family="cuda", stage="naive", precisions=("fp32",), prepare=prepare_wrong)
    r = run_kernel(bad, Problem(64, 64, 64))
    assert r.status == "FAILED" and r.median_ms is None and r.samples is None

    def prepare_skips_one(problem, inputs, options=None):
        def launch():
            inputs.C.copy_(inputs.A @ inputs.B)
            inputs.C[-1, -1] = float("nan")
        return launch
    r = run_kernel(registry.Kernel(name="test.hole", family="cuda", stage="naive", precisions=("fp32",),
                                   prepare=prepare_skips_one), Problem(64, 64, 64))
    assert r.status == "FAILED" and "NaN" in r.reason and r.median_ms is None


def test_cublas_row_records_its_config():
    p = Problem(256, 256, 256)
    r = run_kernel(registry.get("cublas"), p, timing=False)
    assert r.status == "ok" and r.config == {"library": "cuBLAS", "tf32": False, "torch": torch.__version__}
    r = run_kernel(registry.get("cublas"), p.with_(precision="tf32"), timing=False)
    assert r.status == "ok" and r.config["tf32"] is True


def test_out_of_memory_is_an_error_row_and_the_next_kernel_still_runs():
    def prepare_hog(problem, inputs, options=None):
        free, _ = torch.cuda.mem_get_info()
        hog = torch.empty(free + 2**30, dtype=torch.uint8, device="cuda")  # more than is free
        return lambda: hog
    hog = registry.Kernel(name="test.hog", family="cuda", stage="naive", precisions=("fp32",), prepare=prepare_hog)
    r = run_kernel(hog, Problem(128, 128, 128))
    assert r.status == "error" and r.reason.startswith("out of GPU memory"), r.status_text
    ok = run_kernel(registry.get("cublas"), Problem(128, 128, 128), timing=False)
    assert ok.status == "ok"


def test_measurement_engine_reports_its_statistics():
    r = run_kernel(registry.get("cublas"), Problem(2048, 2048, 2048), measure_kw={"budget_s": 0.5})
    assert r.status == "ok"
    assert r.samples >= 10 and r.median_ms > 0 and r.min_ms <= r.median_ms and r.iqr_ms >= 0
    assert r.noise < 0.05 and r.prepare_s > 0 and 1 < r.tflops < 200
    assert r.sm_clock_mhz is None or r.sm_clock_mhz > 100


def test_problem_too_big_for_the_gpu_names_the_limit(monkeypatch):
    from compare.harness import inputs as inputs_mod
    inputs_mod.clear_cache()
    # Pretend only 1 GiB is free: a real GPU of 141 GB can't be overfilled by a problem whose
    # matrices stay 32-bit indexable, but the check must still name the limit.
    monkeypatch.setattr(inputs_mod.torch.cuda, "mem_get_info", lambda *a: (2**30, 80 * 2**30))
    with pytest.raises(ProblemError, match=r"needs 3\.00 GiB .* has 1\.00 GiB free of 80\.00 GiB"):
        make_inputs(Problem(8192, 8192, 8192 + 1))


def test_cli_split_k_end_to_end_every_family_ok(tmp_path):
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "compare", "--stage", "split_k", "--format", "json", "-o", str(out),
                        "--budget", "0.3"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    from compare.outputs import report
    rows, env = report.load(str(out))
    assert env["gpu"] and env["fp32_peak_tflops"] > 0
    fams = {r.family for r in rows if r.status == "ok"}
    assert fams == {"cublas", "cuda", "triton"}, [(r.kernel, r.status_text) for r in rows]
    assert all(r.status == "ok" for r in rows), [(r.kernel, r.status_text) for r in rows]
    assert all(r.config["library"] == "cuBLAS" for r in rows if r.family == "cublas")
    import json
    assert json.loads(out.read_text())["command"].startswith("python -m compare --stage split_k")
