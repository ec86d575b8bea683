"""Isolation (compare/harness/worker.py), the watchdog, streamed rows and Ctrl-C, on the CPU.

The misbehaving kernels live in tests/fixtures/faulty_kernels.py and are imported by the worker
process only (``plugins=``): the pytest process builds unregistered Kernel objects with the same
names, which is all the parent side of a worker uses.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from compare.harness import runner, worker
from compare.harness import checkpoint
from compare.harness.problem import Problem
from compare.harness.registry import Kernel

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAULTY = os.path.join(REPO, "tests", "fixtures", "faulty_kernels.py")
PLUGIN_CLI = os.path.join(REPO, "tests", "fixtures", "plugin_cli.py")
P = Problem(16, 8, 24)


def _k(name: str) -> Kernel:
    return Kernel(name=name, family="triton", stage="naive_blocked", precisions=("fp32",), prepare=None,
                  interpretable=True)


def _run(names, **kw):
    kw.setdefault("kernel_timeout", 60)
    with worker.Worker(plugins=[FAULTY], **kw) as w:
        rows = runner.run([(_k(n), P) for n in names], timing=False, device="cpu", execute=w.run_kernel)
        return rows, w.restarts


# ------------------------------------------------------------------ classifier, command, flag
@pytest.mark.parametrize("message, kind", [
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "illegal memory access"),
    ("CUDADriverError: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered", "illegal memory access"),
    ("RuntimeError: Triton Error [CUDA]: misaligned address", "misaligned address"),
    ("CUDADriverError: CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure", "unspecified launch failure"),
    ("RuntimeError: CUDA error: unspecified launch failure", "unspecified launch failure"),
    ("CUDADriverError: CUDA_ERROR_ILLEGAL_INSTRUCTION: an illegal instruction was encountered", "illegal instruction"),
    ("RuntimeError: CUDA error: device-side assert triggered", "device-side assert"),
    ("CUDADriverError: CUDA_ERROR_INVALID_ADDRESS_SPACE: operation not supported on global/shared address space",
     "invalid address space"),
    ("CUDADriverError: CUDA_ERROR_INVALID_PC: invalid program counter", "invalid program counter"),
])
def test_sticky_errors_are_recognised(message, kind):
    assert kind in worker.sticky_cuda_error(message)


@pytest.mark.parametrize("message", [
    "out of GPU memory: OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "CompileException: error: identifier \"foo\" is undefined",
    "ValueError: tile 7 does not divide 128",
    "CUDADriverError: CUDA_ERROR_INVALID_VALUE: invalid argument",
    "",
])
def test_other_errors_are_not_sticky(message):
    assert worker.sticky_cuda_error(message) is None


def test_reproduce_command_names_the_pair_and_its_options():
    p = Problem(1024, 512, 256, precision="tf32", beta=0.5, seed=3)
    cmd = worker.reproduce_command("cuda.05_blocktile_2d", p, {"tile": "128x128x8"})
    assert cmd == ("compute-sanitizer --tool memcheck python -m compare --kernel cuda.05_blocktile_2d "
                   "--shape 1024x512x256 --precision tf32 --check --beta 0.5 --seed 3 "
                   "--opt cuda.05_blocktile_2d:tile=128x128x8")
    interp = worker.reproduce_command("triton.tiled", P, plugins=["my.kernels"], interpret=True)
    assert interp == ("python -m compare --interpret --plugin my.kernels --kernel triton.tiled --shape 16x8x24 "
                      "--precision fp32 --check")


@pytest.mark.parametrize("text", ["0", "-1", "nan", "inf", "abc", ""])
def test_kernel_timeout_must_be_positive_and_finite(text, capsys):
    from compare.cli import main
    with pytest.raises(SystemExit) as e:
        main(["--interpret", "--kernel-timeout", text])
    assert e.value.code == 2
    assert "--kernel-timeout" in capsys.readouterr().err


def test_fault_and_hung_rows_are_bad():
    rows = [runner.blank_row(_k("a"), P, runner.OK), runner.blank_row(_k("b"), P, runner.FAULT, "x")]
    assert runner.any_bad(rows) and runner.exit_status(rows) == 1
    rows[1].status = runner.HUNG
    assert runner.exit_status(rows) == 1
    rows[1].status = runner.OK
    assert runner.exit_status(rows) == 0


# ------------------------------------------------------------------ the worker
def test_sticky_fault_costs_one_row_and_the_next_kernel_runs_in_a_fresh_worker():
    rows, restarts = _run(["test.healthy", "test.sticky_fault", "test.healthy"])
    assert [r.status for r in rows] == ["ok", "FAULT", "ok"], [r.status_text for r in rows]
    fault = rows[1].reason
    assert fault.startswith("illegal memory access (RuntimeError: CUDA error: an illegal memory access")
    assert ("reproduce: compute-sanitizer --tool memcheck python -m compare --plugin " + FAULTY) in fault
    assert "--kernel test.sticky_fault --shape 16x8x24 --precision fp32 --check" in fault
    assert "Traceback" not in fault
    assert rows[0].config["pid"] != rows[2].config["pid"] and restarts == 1


def test_without_a_restart_the_fault_poisons_the_next_kernel():
    """What the restart prevents (the fixture's poisoning is real in one process)."""
    from compare.harness.inputs import make_inputs
    import importlib.util
    spec = importlib.util.spec_from_file_location("faulty_probe", FAULTY)
    mod = importlib.util.module_from_spec(spec)
    # executing the module would register its kernels here; use its functions unregistered
    src = open(FAULTY).read().split("for _name, _prep in")[0]
    exec(compile(src, FAULTY, "exec"), mod.__dict__)
    inputs = make_inputs(P, "cpu")
    with pytest.raises(RuntimeError):
        mod._sticky(P, inputs)()
    with pytest.raises(RuntimeError, match="INVALID_ADDRESS_SPACE"):
        mod._healthy(P, inputs)()


NOISE = ("Exception ignored", "Traceback", "CUDA_ERROR", "CUDADriverError")


def _quiet(err: str) -> bool:
    return not any(n in err for n in NOISE)


def test_a_dead_context_s_teardown_prints_nothing(capfd):
    """A trap's row is FAULT and nothing else reaches the terminal: the finalizers that raise on the
    dead context (one during the failed request, the cached ones at exit) print nothing."""
    capfd.readouterr()
    rows, restarts = _run(["test.healthy", "test.trap_teardown", "test.healthy"])
    err = capfd.readouterr().err      # the worker writes to this process's stderr (fd 2)
    assert [r.status for r in rows] == ["ok", "FAULT", "ok"], [r.status_text for r in rows]
    assert rows[1].reason.startswith("unspecified launch failure (trap or kernel exception) (CUDADriverError: ")
    assert restarts == 1 and _quiet(err), err


def test_a_worker_with_a_dead_context_leaves_by_itself_before_any_teardown(capfd):
    """It does not wait to be killed: the parent's SIGKILL races a teardown that EOF on the socket
    starts, and lost it in 2 of 3 GPU runs of tests/test_gpu_faults.py."""
    capfd.readouterr()
    w = worker.Worker(plugins=[FAULTY], kernel_timeout=60)
    try:
        w.wait_ready()
        proc = w._proc
        kind, reply = w._request(("run", "test.trap_teardown", P, None, False, "cpu", None, False,
                                  ("test.trap_teardown", None)), 60)
        assert kind == "answer" and worker.dead_context(reply), reply
        assert proc.wait(timeout=30) == 0       # gone, with the socket still open at this end
    finally:
        w.close()
    err = capfd.readouterr().err
    assert _quiet(err), err


def test_compile_ahead_helpers_with_a_dead_context_print_nothing(capfd, tmp_path, monkeypatch):
    """The helpers of compare/harness/precompile.py are workers too: a prepare that traps is a
    compile not done ahead, and nothing on the terminal."""
    from compare.harness import precompile
    monkeypatch.setattr(precompile, "marker_dir", lambda: str(tmp_path))
    pairs = [(_k("test.trap_teardown"), Problem(8, 8, 8 * i)) for i in range(1, 4)]
    capfd.readouterr()
    with worker.Worker(plugins=[FAULTY], interpret=True) as w:
        got = precompile.compile_ahead(pairs, w, options={}, skip=lambda k: None, jobs=2, plugins=[FAULTY],
                                       kernel_timeout=60, interpret=True)
    assert got["compiled"] == 0 and len(got["not_compiled"]) == 3, got
    assert all("CUDA_ERROR_LAUNCH_FAILED" in why for why in got["not_compiled"]), got
    err = capfd.readouterr().err
    assert _quiet(err), err


def test_a_failed_request_with_a_dead_context_is_a_fault_and_a_fresh_worker():
    """A request that fails as a whole (not a row) with a sticky error: the worker has left, so
    the parent must not send it the next pair."""
    assert worker.dead_context(("error", "CUDADriverError: CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure"))
    assert worker.dead_context(("row", {"status": "error", "reason": "RuntimeError: CUDA error: misaligned address"}))
    assert not worker.dead_context(("row", {"status": "FAILED", "reason": "misaligned address"}))
    assert not worker.dead_context(("error", "the worker process has no kernel 'x'"))
    assert not worker.dead_context(("prepared", 1.0)) and not worker.dead_context(("fits", [None]))


_FINALIZERS = """
import sys
from compare.harness.worker import quiet_dead_context_teardown
{setup}
class E(RuntimeError):
    pass
class M:
    # raises from its finalizer as Cython reports it: sys.excepthook, then sys.unraisablehook
    def __init__(self, msg):
        self.msg, self.sys, self.E = msg, sys, E
    def __del__(self):
        err = self.E(self.msg)
        try:
            raise err
        except self.E:
            self.sys.excepthook(type(err), err, err.__traceback__)
        raise err
M("CUDA_ERROR_LAUNCH_FAILED: unspecified launch failure")
kept = [M("CUDA error: an illegal memory access was encountered")]   # freed at exit
M("a finalizer's own bug")
"""


@pytest.mark.parametrize("setup", ["quiet_dead_context_teardown()",
                                   "from compare.outputs.dask_cluster import dask_setup, _GPU_READY\n"
                                   "_GPU_READY.start = lambda: None\ndask_setup(None)"])
def test_only_sticky_cuda_errors_in_finalizers_are_silenced(setup):
    """The worker's hooks and a Dask worker's (installed by its preload, dask_setup): a sticky
    CUDA error in a finalizer, now or at exit, prints nothing; any other error prints as before."""
    p = subprocess.run([sys.executable, "-c", _FINALIZERS.format(setup=setup)], cwd=REPO, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "CUDA" not in p.stderr and "illegal memory access" not in p.stderr, p.stderr
    assert p.stderr.count("a finalizer's own bug") == 2 and "Exception ignored in" in p.stderr, p.stderr


def test_in_process_a_dead_context_s_teardown_prints_nothing(tmp_path):
    """--in-process: the run's own process saw the sticky error (the runner installs the hooks)."""
    out = tmp_path / "r.json"
    p = _cli(["--in-process", "--stage", "naive_blocked", "--shape", "16x8x24", "-q", "-o", str(out),
              "--kernel", "test.trap_teardown"])
    stdout, stderr = p.communicate(timeout=300)
    assert p.returncode == 1, stderr
    assert [r["status"] for r in json.load(open(out))["results"] if r["kernel"] == "test.trap_teardown"] == ["error"]
    assert _quiet(stderr), stderr


@pytest.mark.parametrize("name, why", [("test.exit", "exit code 3"), ("test.segfault", "killed by SIGSEGV")])
def test_a_worker_that_dies_is_a_fault_row_and_is_replaced(name, why):
    rows, restarts = _run([name, "test.healthy"])
    assert [r.status for r in rows] == ["FAULT", "ok"], [r.status_text for r in rows]
    assert f"worker process died ({why})" in rows[0].reason and "--kernel " + name in rows[0].reason
    assert restarts == 1


def test_hang_is_hung_within_the_timeout_and_the_run_goes_on():
    with worker.Worker(plugins=[FAULTY], kernel_timeout=3) as w:
        w.wait_ready()
        t0 = time.monotonic()
        rows = runner.run([(_k("test.hang"), P), (_k("test.healthy"), P)], timing=False, device="cpu",
                          execute=w.run_kernel)
        hung_s = time.monotonic() - t0
    assert [r.status for r in rows] == ["HUNG", "ok"], [r.status_text for r in rows]
    assert "no result within --kernel-timeout 3 s" in rows[0].reason
    assert "python -m compare" in rows[0].reason and "compute-sanitizer" not in rows[0].reason
    assert hung_s < 60   # 3 s of watchdog + one fresh worker's imports


def test_a_plugin_that_does_not_import_is_a_start_error():
    w = worker.Worker(plugins=["no_such_module_for_gemm_ladder"])
    with pytest.raises(worker.WorkerStartError, match="no_such_module_for_gemm_ladder"):
        w.wait_ready()
    w.close()


# ------------------------------------------------------------------ checkpoint
def _rows(path) -> list:
    """The row dicts of the checkpoint at ``path`` (every whole row line)."""
    return [row for _, row in checkpoint.read(str(path)).rows]


def test_checkpoint_streams_rows_and_drops_a_cut_off_last_line(tmp_path):
    path = checkpoint.path_beside(str(tmp_path / "out.json"))
    assert path == str(tmp_path / "out.json.checkpoint.jsonl")
    ck = checkpoint.Checkpoint(path, {"kernels": ["a", "b"]}, {}, shapes=[P.shape], expect={P.shape: 2})
    rows = [runner.blank_row(_k("a"), P, runner.OK), runner.blank_row(_k("b"), P, runner.HUNG, "slow")]
    ck.add_row(rows[0])
    assert [d["kernel"] for d in _rows(path)] == ["a"]   # on disk before the run ends
    assert checkpoint.read(path).done == {}               # its shape is not finished yet
    ck.add_row(rows[1])
    ck.close()
    text = open(path).read()
    got = checkpoint.parse(text + '{"shape": "16x8x24", "row": {"kernel": "c", "fam', "test")
    assert [d["status"] for _, d in got.rows] == ["ok", "HUNG"] and list(got.done) == [P.shape]
    from compare.outputs import report
    loaded, _ = report.load(path)
    assert [(r.kernel, r.status, r.reason) for r in loaded] == [("a", "ok", ""), ("b", "HUNG", "slow")]
    ck.remove()
    assert not os.path.exists(path)


# ------------------------------------------------------------------ the command line
def _cli(args, **kw):
    """python -m compare --interpret --plugin tests/fixtures/faulty_kernels.py ARGS, in a subprocess."""
    return subprocess.Popen([sys.executable, PLUGIN_CLI, "--interpret", "--plugin", FAULTY, *args], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def test_cli_fault_and_hang_cost_their_rows_exit_1_no_traceback(tmp_path):
    out = tmp_path / "r.json"
    p = _cli(["--stage", "naive_blocked", "--shape", "16x8x24", "--kernel-timeout", "5", "-q", "-o", str(out),
              "--kernel", "test.healthy,test.sticky_fault,test.trap_teardown,test.hang,test.slow"])
    stdout, stderr = p.communicate(timeout=300)
    assert p.returncode == 1, stderr
    assert _quiet(stderr), stderr
    rows = {r["kernel"]: r for r in json.load(open(out))["results"]}
    assert rows["test.healthy"]["status"] == "ok" and rows["test.slow"]["status"] == "ok"
    assert rows["test.sticky_fault"]["status"] == "FAULT" and "illegal memory access" in rows["test.sticky_fault"]["reason"]
    assert rows["test.hang"]["status"] == "HUNG" and "--kernel-timeout 5 s" in rows["test.hang"]["reason"]
    assert rows["test.trap_teardown"]["status"] == "FAULT"
    assert not os.path.exists(str(out) + ".checkpoint.jsonl")   # the run completed: -o holds every row


def test_sigint_keeps_finished_rows_prints_one_line_exits_130(tmp_path):
    out = tmp_path / "r.json"
    ck = str(out) + ".checkpoint.jsonl"
    kernels = ",".join(["test.slow"] * 1 + ["test.healthy"])
    # The CLI gets Ctrl-C's default disposition whatever started pytest: a shell running it in the
    # background (`cmd &`) ignores SIGINT, the child inherits that, and Python then installs no
    # KeyboardInterrupt handler (the run finished all shapes and exited 0).
    p = _cli(["--stage", "naive_blocked", "--shape", "16x8x24", "--shape", "8x8x8", "--shape", "24x8x8",
              "--shape", "32x8x8", "-q", "-o", str(out), "--kernel", kernels],
             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and p.poll() is None:
        if os.path.exists(ck) and len(_rows(ck)) >= 2:
            break
        time.sleep(0.05)
    assert p.poll() is None, p.communicate()
    p.send_signal(signal.SIGINT)
    stdout, stderr = p.communicate(timeout=60)
    assert p.returncode == 130, stderr
    # -q still names each shape as it starts (compare/outputs/progress.py); Ctrl-C adds one line
    lines = [ln for ln in stderr.splitlines() if ln.strip() and not ln.startswith("running ")]
    assert len(lines) == 1 and lines[0].startswith("interrupted: ") and ck in lines[0], stderr
    kept = _rows(ck)
    written = json.load(open(out))["results"]
    assert len(kept) >= 2 and [r["kernel"] for r in written] == [r["kernel"] for r in kept]
    assert len(written) < 12 and all(r["status"] in ("ok", "skipped") for r in written)
    assert any(r["status"] == "ok" for r in written)


def test_ctrl_c_in_process_keeps_the_rows_finished_before_it():
    calls = []

    def execute(k, p, **kw):
        calls.append(k.name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return runner.blank_row(k, p, runner.OK)
    with pytest.raises(runner.Interrupted) as e:
        runner.run([(_k("a"), P), (_k("b"), P), (_k("c"), P)], execute=execute)
    assert [r.kernel for r in e.value.results] == ["a"] and calls == ["a", "b"]
    assert isinstance(e.value, KeyboardInterrupt)


def test_in_process_flag_runs_without_a_worker(monkeypatch, tmp_path, capsys):
    from compare.cli import main

    def no_worker(args):
        raise AssertionError("--in-process started a worker")
    monkeypatch.setattr(worker, "start_for_run", no_worker)
    out = tmp_path / "r.json"
    assert main(["--interpret", "--in-process", "--stage", "naive_blocked", "--shape", "8x8x8", "-q",
                 "-o", str(out)]) == 0
    rows = json.load(open(out))["results"]
    assert [r["status"] for r in rows if r["kernel"] == "triton.naive_blocked"] == ["ok"]
    assert not os.path.exists(str(out) + ".checkpoint.jsonl")


def test_a_kernel_the_worker_does_not_know_is_an_error_row_not_a_crash():
    with worker.Worker() as w:      # no plugin: the test kernels do not exist in the worker
        rows = runner.run([(_k("test.healthy"), P)], timing=False, device="cpu", execute=w.run_kernel)
        assert w.restarts == 0
    assert rows[0].status == "error" and "has no kernel 'test.healthy'" in rows[0].reason
    assert "--plugin" in rows[0].reason
