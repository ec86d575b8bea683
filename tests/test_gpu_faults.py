"""On a GPU: a kernel that faults or hangs costs its own row, not the run.

The faulty kernels are test-only (tests/fixtures/faulty_cuda_kernels.py: an out-of-bounds store,
``asm("trap;")``, a spin), plugged in from outside the package; the suite's own kernels are not
edited. Each case runs the real command line in a subprocess next to a clean run of the same
selection and asserts: the run finishes, every other kernel's row has the clean run's status,
the faulty row is FAULT or HUNG with its reason, exit code 1, and nothing else on stderr: no
traceback, no "Exception ignored in" (a dead context's teardown: CuPy's Module.__dealloc__
raising CUDA_ERROR_LAUNCH_FAILED; compare/harness/worker.py). Timing-dependent, so run it many
times in a row to call it fixed (the final report of the change gives the loop).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.gpu

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLUGIN = os.path.join(REPO, "tests", "fixtures", "faulty_cuda_kernels.py")
PLUGIN_CLI = os.path.join(REPO, "tests", "fixtures", "plugin_cli.py")
# Long enough for a cold Triton autotune of a 1024^3 tile (the timeout covers compile + check).
# CUDA stages only (NVRTC compiles in seconds, no Triton autotune): 20 s is ample for a healthy pair.
TIMEOUT_S = "20"


def _compare(args, out, plugin: bool = True, timeout: float = 1200, env=None):
    cmd = [sys.executable, PLUGIN_CLI, *(["--plugin", PLUGIN] if plugin else []), *args, "-q", "-o", str(out)]
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)
    rows = json.load(open(out))["results"] if os.path.exists(out) else []
    return p, rows


def _assert_quiet(stderr: str) -> None:
    """Nothing a user would read as a crash: a fault is its row (and, on Dask, one line saying the
    worker is restarted), never a traceback or an exception from a finalizer."""
    for noise in ("Traceback", "Exception ignored", "Error in sys.excepthook"):
        assert noise not in stderr, stderr


def _statuses(rows):
    return {(r["kernel"], r["shape"], r["precision"]): r["status"] for r in rows}


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The healthy tiled CUDA ladder (+ cuBLAS) at 1024^3 and at a sweep of three shapes, no plugin."""
    d = tmp_path_factory.mktemp("clean")
    runs = {}
    for name, shapes in (("one", ["1024"]), ("sweep", ["512", "1024", "777x513x259"])):
        args = ["--stage", "tiled", "--family", "cuda", "--check", *[a for s in shapes for a in ("--shape", s)]]
        p, rows = _compare(args, d / f"{name}.json", plugin=False)
        assert p.returncode == 0, p.stderr
        runs[name] = (args, rows)
    return runs


@pytest.mark.parametrize("kernel, status, why", [
    ("test.cuda_oob", "FAULT", "illegal memory access"),
    ("test.cuda_trap", "FAULT", "unspecified launch failure"),
    ("test.cuda_spin", "HUNG", f"no result within --kernel-timeout {TIMEOUT_S} s"),
])
def test_a_faulty_kernel_costs_only_its_row(clean, tmp_path, kernel, status, why):
    args, clean_rows = clean["one"]
    names = sorted({r["kernel"] for r in clean_rows})
    p, rows = _compare([*args, "--kernel-timeout", TIMEOUT_S, "--kernel", ",".join([*names, kernel])],
                       tmp_path / "r.json")
    assert p.returncode == 1, p.stderr
    _assert_quiet(p.stderr)
    got = _statuses(rows)
    faulty = [r for r in rows if r["kernel"] == kernel]
    assert len(faulty) == 1 and faulty[0]["status"] == status and why in faulty[0]["reason"], faulty
    if status == "FAULT":
        assert f"compute-sanitizer --tool memcheck python -m compare --plugin {PLUGIN} --kernel {kernel}" \
               in faulty[0]["reason"]
    del got[(kernel, faulty[0]["shape"], faulty[0]["precision"])]
    assert got == _statuses(clean_rows)
    # the kernels after the fault in ladder order (stages 06-09) ran in a fresh context
    assert all(got[(n, "1024x1024x1024", "fp32")] == "ok" for n in names if n.startswith("cuda.0") and n > "cuda.05")


def test_a_sweep_goes_on_past_the_fault(clean, tmp_path):
    args, clean_rows = clean["sweep"]
    names = sorted({r["kernel"] for r in clean_rows})
    p, rows = _compare([*args, "--kernel", ",".join([*names, "test.cuda_trap"])], tmp_path / "r.json")
    assert p.returncode == 1, p.stderr
    _assert_quiet(p.stderr)
    faulty = [r for r in rows if r["kernel"] == "test.cuda_trap"]
    assert [r["status"] for r in faulty] == ["FAULT"] * 3, faulty
    assert {k: v for k, v in _statuses(rows).items() if k[0] != "test.cuda_trap"} == _statuses(clean_rows)


def test_compile_ahead_helpers_that_trap_print_nothing(clean, tmp_path):
    """The trap met first by compile-ahead's helper processes (--compile-jobs 2, a fresh Triton
    cache so every pair is cold), then by the worker: one FAULT row per shape, nothing else."""
    args, clean_rows = clean["sweep"]
    names = sorted({r["kernel"] for r in clean_rows})
    p, rows = _compare([*args, "--compile-jobs", "2", "--kernel", ",".join([*names, "test.cuda_trap"])],
                       tmp_path / "r.json", env=dict(os.environ, TRITON_CACHE_DIR=str(tmp_path / "triton-cache")))
    assert p.returncode == 1, p.stderr
    _assert_quiet(p.stderr)
    assert [r["status"] for r in rows if r["kernel"] == "test.cuda_trap"] == ["FAULT"] * 3, rows


def test_a_dask_sweep_that_traps_prints_nothing_but_the_restart(clean, tmp_path):
    """--workers 1: the trap kills the Dask worker's context; its nanny restarts it, and that
    teardown prints no finalizer's exception (compare/outputs/dask_cluster.py's dask_setup)."""
    pytest.importorskip("distributed", reason='the Dask extra: pip install -e ".[dist]"')
    _, clean_rows = clean["sweep"]
    names = sorted({r["kernel"] for r in clean_rows})
    shapes = tmp_path / "shapes.txt"
    shapes.write_text("512\n1024\n777x513x259\n")
    p, rows = _compare(["--stage", "tiled", "--family", "cuda", "--check", "--shapes-file", str(shapes),
                        "--workers", "1", "--kernel", ",".join([*names, "test.cuda_trap"])], tmp_path / "r.json")
    assert p.returncode == 1, p.stderr
    _assert_quiet(p.stderr)
    faulty = [r for r in rows if r["kernel"] == "test.cuda_trap"]
    assert len(faulty) == 3 and all(r["status"] in ("error", "FAULT") and "unspecified launch failure" in r["reason"]
                                    for r in faulty), faulty


def test_sigint_keeps_finished_rows_on_the_gpu(tmp_path):
    from compare.harness import checkpoint

    def read_rows(path):
        return [row for _, row in checkpoint.read(path).rows]
    out = tmp_path / "r.json"
    ck = str(out) + ".checkpoint.jsonl"
    # stderr to a file: what the run printed before the signal (compile-ahead's and the first
    # run's peak measurement's progress, once per GPU) is read apart from what the signal made
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "w") as err:
        p = subprocess.Popen([sys.executable, "-m", "compare", "--stage", "tiled", "--shape", "2048", "--shape", "4096",
                              "-q", "-o", str(out)], cwd=REPO, stdout=subprocess.PIPE, stderr=err, text=True)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and p.poll() is None:
            if os.path.exists(ck) and len(read_rows(ck)) >= 3:
                break
            time.sleep(0.1)
        assert p.poll() is None, (p.communicate(), err_path.read_text())
        before = os.path.getsize(err_path)
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=120)
    stderr = err_path.read_text()
    after = open(err_path, "rb").read()[before:].decode()
    assert p.returncode == 130, stderr
    # one line (a library's own "warning:" lines, e.g. a throttled GPU, are not the CLI's)
    # -q still names each shape as it starts ("running ...")
    lines = [ln for ln in after.splitlines() if ln.strip() and not ln.startswith(("warning:", "running "))]
    assert len(lines) == 1 and lines[0].startswith("interrupted: ") and "Traceback" not in stderr, stderr
    kept = read_rows(ck)
    written = json.load(open(out))["results"]
    assert len(kept) >= 3 and [r["kernel"] for r in written] == [r["kernel"] for r in kept]
    assert any(r["status"] == "ok" and r["median_ms"] for r in written)
