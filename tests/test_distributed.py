"""Sweeps on Dask (compare/outputs/distributed.py), CPU only: a local cluster of 2 CPU worker
processes running the Triton kernels under the interpreter on the interpret_tiny distribution.

Each cluster start spawns two worker processes that import torch and triton: the module runs
three of them (the sweep, its resume, the killed worker), about a minute on two slow cores."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("distributed", reason='the Dask extra: pip install -e ".[dist]"')

from compare import cli  # noqa: E402
from compare.harness import checkpoint, registry, runner  # noqa: E402
from compare.harness.problem import Problem  # noqa: E402
from compare.harness.runner import Result  # noqa: E402
from compare.outputs import dask_cluster  # noqa: E402
from compare.outputs import distributed as dist  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N_SHAPES = 6
SWEEP = ["--interpret", "--distribution", f"interpret_tiny:{N_SHAPES}:0", "--kernel", "triton.stream_k", "-q"]



def _doc(path):
    with open(path) as f:
        return json.load(f)


def _keys(rows):
    return [(r["kernel"], r["shape"], r["precision"], r["status"]) for r in rows]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The same sweep in one process and on 2 workers."""
    d = tmp_path_factory.mktemp("dist")
    assert cli.main(SWEEP + ["--format", "json", "-o", str(d / "one.json")]) == 0
    assert cli.main(SWEEP + ["--workers", "2", "--format", "json", "-o", str(d / "dist.json")]) == 0
    return d


def test_distributed_sweep_gives_the_one_process_rows(runs):
    one, many = _doc(runs / "one.json"), _doc(runs / "dist.json")
    assert _keys(many["results"]) == _keys(one["results"])          # same rows, same order
    assert len({r["shape"] for r in many["results"]}) == N_SHAPES
    assert all(r["status"] == "ok" for r in many["results"] if r["kernel"] == "triton.stream_k")
    assert [(e["kernel"], e["n_ok"]) for e in many["summary"]] == [(e["kernel"], e["n_ok"]) for e in one["summary"]]
    for r in many["results"]:
        assert r["worker"].startswith("tcp://") and r["attempts"] == 1 and r["gpu_name"], r
    assert len({r["worker"] for r in many["results"]}) == 2                # both workers took shapes
    assert all(r["worker"] is None and r["attempts"] is None for r in one["results"])
    info = many["environment"]["distributed"]
    assert (info["shapes"], info["measured"], info["resumed"], info["retried"]) == (N_SHAPES, N_SHAPES, 0, [])
    # The checkpoint holds every shape once, each closed by its done line.
    lines = [json.loads(x) for x in open(runs / "dist.json.checkpoint.jsonl")]
    assert lines[0]["kind"] == checkpoint.KIND
    assert lines[0]["shapes"] == list(dict.fromkeys(r["shape"] for r in one["results"]))
    assert sorted(x["done"] for x in lines if "done" in x) == sorted({r["shape"] for r in one["results"]})


def test_resume_measures_only_what_the_checkpoint_lacks(runs, tmp_path):
    full = (runs / "dist.json.checkpoint.jsonl").read_text()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(full[: int(len(full) * 0.55)])                    # stopped mid-line
    finished = sum(1 for x in cut.read_text().splitlines() if x.startswith('{"done"') and x.endswith("}"))
    assert 0 < finished < N_SHAPES
    out = tmp_path / "resumed.json"
    assert cli.main(SWEEP + ["--workers", "2", "--resume", str(cut), "--format", "json", "-o", str(out)]) == 0
    doc = _doc(out)
    info = doc["environment"]["distributed"]
    assert info["resumed"] == finished and info["measured"] == N_SHAPES - finished   # nothing measured twice
    assert _keys(doc["results"]) == _keys(_doc(runs / "dist.json")["results"])
    done = [json.loads(x)["done"] for x in cut.read_text().splitlines() if x.startswith('{"done"')]
    assert sorted(done) == sorted(set(done)) and len(done) == N_SHAPES
    # Resuming the finished file measures nothing.
    again = tmp_path / "again.json"
    assert cli.main(SWEEP + ["--workers", "2", "--resume", str(cut), "--format", "json", "-o", str(again)]) == 0
    again_doc = _doc(again)
    assert again_doc["environment"]["distributed"]["measured"] == 0
    assert again_doc["environment"]["gpu"] and _keys(again_doc["results"]) == _keys(doc["results"])


def test_resume_refuses_a_checkpoint_of_other_flags(runs, tmp_path, capsys):
    src = runs / "dist.json.checkpoint.jsonl"
    rc = cli.main(SWEEP + ["--workers", "2", "--precision", "tf32", "--resume", str(src), "-o", str(tmp_path / "x.json")])
    assert rc == 2 and "other selection flags" in capsys.readouterr().err
    # Without --resume, an existing checkpoint is never overwritten.
    rc = cli.main(SWEEP + ["--workers", "2", "--checkpoint", str(src)])
    assert rc == 2 and "--resume" in capsys.readouterr().err


KILL_PLUGIN = '''
import os
from compare.harness import registry

def _prepare(problem, inputs, options):
    # Kills its worker process the first time it meets TARGET (the marker file says it did).
    if problem.shape == {target!r} and not os.path.exists({marker!r}):
        open({marker!r}, "w").close()
        os._exit(17)
    return registry.get("triton.stream_k").prepare(problem, inputs, options)

registry.register(registry.Kernel(name="triton.test_kill_once", family="triton",
                                  stage=registry.get("triton.stream_k").stage, precisions=("fp32",),
                                  prepare=_prepare, interpretable=True))
'''


def test_a_killed_worker_loses_no_shape_and_measures_none_twice(tmp_path):
    from compare.harness.shapes import distribution
    shapes = distribution("interpret_tiny", N_SHAPES, 1)
    target = "x".join(map(str, shapes[3]))
    plugin = tmp_path / "kill_once.py"
    plugin.write_text(KILL_PLUGIN.format(target=target, marker=str(tmp_path / "killed")))
    dist.load_plugins([str(plugin)])
    try:
        kernels = [registry.get("cublas"), registry.get("triton.test_kill_once")]
        pairs = runner.baseline_pairs([(k, Problem(*s)) for s in shapes for k in kernels])
        rows, env = dist.run_sweep(pairs, selection={"test": 1}, skipped={"cublas": "needs a GPU"}, options={},
                                   timing=False, interpret=True, measure_kw={}, workers=2,
                                   checkpoint=str(tmp_path / "ck.jsonl"), quiet=True, plugins=(str(plugin),))
    finally:
        registry._REGISTRY.pop("triton.test_kill_once", None)
    assert (tmp_path / "killed").exists()                              # a worker did die
    mine = [r for r in rows if r.kernel == "triton.test_kill_once"]
    assert sorted(r.shape for r in mine) == sorted("x".join(map(str, s)) for s in shapes)   # each once
    assert all(r.status == "ok" for r in mine), [r.status_text for r in mine]
    assert {r.shape: r.attempts for r in rows if r.attempts == 2} == {target: 2}
    assert env["distributed"]["retried"] == [target] and env["distributed"]["measured"] == N_SHAPES


def test_without_dask_workers_exits_2_with_the_install_line():
    code = ("import sys; sys.modules['distributed'] = None; from compare.cli import main; "
            f"sys.exit(main({SWEEP + ['--workers', '2']!r}))")
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TRITON_INTERPRET": "1"})
    assert p.returncode == 2, p.stderr
    assert 'pip install -e ".[dist]"' in p.stderr and "dask:" not in p.stderr


@pytest.mark.parametrize("argv, says", [
    (["--interpret", "--kernel", "triton.stream_k", "--workers", "2"], "run a sweep"),
    (SWEEP + ["--workers", "2", "--cluster", "tcp://127.0.0.1:1"], "use one"),
    (SWEEP + ["--workers", "2", "--resume", "x.jsonl", "--checkpoint", "y.jsonl"], "use one"),
    (SWEEP + ["--time-limit", "5"], "add --workers"),
    (SWEEP + ["--workers", "2", "--time-limit", "0"], "> 0"),
])
def test_bad_distributed_flags_exit_2(argv, says, capsys):
    assert cli.main(argv) == 2
    assert says in capsys.readouterr().err


def _row(status="ok", reason="", shape="8x8x8"):
    return Result(kernel="k", family="triton", stage="s", group="g", variant="", shape=shape, M=8, N=8, K=8,
                  precision="fp32", alpha=1.0, beta=0.0, status=status, reason=reason)


@pytest.mark.parametrize("reason, sticky", [
    ("RuntimeError: CUDA error: an illegal memory access was encountered", True),
    ("CUDARuntimeError: cudaErrorLaunchFailure: unspecified launch failure", True),
    ("CUDA_ERROR_MISALIGNED_ADDRESS: misaligned address", True),
    ("RuntimeError: device-side trap", True),
    ("out of GPU memory: OutOfMemoryError: CUDA out of memory", False),
    ("ValueError: trapezoid", False),
])
def test_sticky_cuda_errors_are_recognised(reason, sticky):
    assert (dist.sticky_cuda_error([_row(), _row("error", reason)]) is not None) == sticky
    assert dist.sticky_cuda_error([_row("FAILED", reason)]) is None     # only errors, never a wrong result


def test_checkpoint_cut_at_any_byte_keeps_only_whole_shapes(tmp_path):
    path = tmp_path / "ck.jsonl"
    sel = {"kernels": ["k"], "mode": "check"}
    ck = checkpoint.Checkpoint(str(path), sel, {})
    for s in ("1x1x1", "2x2x2", "3x3x3"):
        ck.add(s, [_row(shape=s), _row("FAILED", "wrong", shape=s)], worker="w", attempts=1)
    ck.close()
    text = path.read_text()
    header_end = text.index("\n") + 1
    seen = set()
    for cut in range(header_end, len(text) + 1):
        path.write_text(text[:cut])
        got = checkpoint.resume(str(path), sel)
        for s, (rows, done) in got.items():
            assert [r["status"] for r in rows] == ["ok", "FAILED"] and done["rows"] == 2
        seen.add(len(got))
    assert seen == {0, 1, 2, 3}


def test_time_limit_starts_no_shape_after_it(tmp_path, capsys):
    out = tmp_path / "t.json"
    rc = cli.main(SWEEP + ["--workers", "2", "--time-limit", "1e-9", "--format", "json", "-o", str(out)])
    err = capsys.readouterr().err
    assert f"{N_SHAPES} of {N_SHAPES} shapes not started" in err and "--resume" in err
    assert rc == 2                      # nothing was checked: the README's exit code for that
    lines = (tmp_path / "t.json.checkpoint.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["kind"] == checkpoint.KIND


STICKY_PLUGIN = '''
from compare.harness import registry

def _prepare(problem, inputs, options):
    if problem.shape == {target!r}:
        with open({runs!r}, "a") as f:
            f.write("x")
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    return registry.get("triton.stream_k").prepare(problem, inputs, options)

registry.register(registry.Kernel(name="triton.test_sticky", family="triton",
                                  stage=registry.get("triton.stream_k").stage, precisions=("fp32",),
                                  prepare=_prepare, interpretable=True))
'''


def test_a_sticky_cuda_error_keeps_the_rows_and_replaces_the_worker(tmp_path, capsys):
    from compare.harness.shapes import distribution
    shapes = distribution("interpret_tiny", 6, 2)
    target = "x".join(map(str, shapes[0]))
    plugin = tmp_path / "sticky.py"
    runs = tmp_path / "target-runs"
    plugin.write_text(STICKY_PLUGIN.format(target=target, runs=str(runs)))
    dist.load_plugins([str(plugin)])
    try:
        kernels = [registry.get("triton.test_sticky")]
        pairs = [(k, Problem(*s)) for s in shapes for k in kernels]
        rows, env = dist.run_sweep(pairs, selection={"test": 2}, skipped={}, options={}, timing=False,
                                   interpret=True, measure_kw={}, workers=2, checkpoint=str(tmp_path / "ck.jsonl"),
                                   quiet=True, plugins=(str(plugin),))
    finally:
        registry._REGISTRY.pop("triton.test_sticky", None)
    err = capsys.readouterr().err
    assert "sticky CUDA error" in err
    by_shape = {r.shape: r for r in rows}
    assert len(rows) == len(by_shape) == 6                                    # kept once, not retried
    assert by_shape[target].status == "error" and by_shape[target].attempts == 1
    # run once: a result the sweep still held when its worker restarted was computed again by
    # Dask elsewhere, killing a second worker's context unseen (its shapes then all bounced)
    assert runs.read_text() == "x"
    assert all(r.status == "ok" for s, r in by_shape.items() if s != target)
    # The worker that hit it was a fresh process for any shape it measured afterwards.
    done = [json.loads(x) for x in (tmp_path / "ck.jsonl").read_text().splitlines()[1:] if x.startswith('{"done"')]
    hit = next(d for d in done if d["done"] == target)
    assert env["distributed"]["restarted"] == [hit["worker"]]
    later = [d for d in done[done.index(hit) + 1:] if d["name"] == hit["name"]]
    assert all(d["pid"] != hit["pid"] for d in later)    # whatever it measured next, a new process did


def _visible_devices():
    return os.environ.get("CUDA_VISIBLE_DEVICES")


def test_gpu_workers_are_each_pinned_to_one_gpu(monkeypatch):
    """Without dask-cuda, --workers starts one nanny per GPU that sets CUDA_VISIBLE_DEVICES for its
    worker (checked on CPU: the variable is all a worker's CUDA would see)."""
    from distributed import Client
    monkeypatch.setitem(sys.modules, "dask_cuda", None)        # the fallback path, even where it is installed
    cluster = dist.local_cluster(2, interpret=False, gpus=["3", "5", "6"])
    try:
        with Client(cluster) as client:
            seen = client.run(_visible_devices)
            names = {w["name"] for w in client.scheduler_info()["workers"].values()}
    finally:
        cluster.close()
    assert sorted(seen.values()) == ["3", "5"] and names == {"gpu3", "gpu5"}


def test_the_cluster_started_early_is_the_one_the_sweep_uses(tmp_path, monkeypatch):
    """--workers starts its cluster while the CLI imports and selects (EarlyCluster), with every
    worker preloading the registry; the sweep takes that cluster instead of starting a second."""
    import threading
    started = []
    real = dask_cluster.local_cluster

    def counting(n, interpret, gpus):
        started.append((threading.current_thread().name, n))
        return real(n, interpret, gpus)
    monkeypatch.setattr(dask_cluster, "local_cluster", counting)
    assert cli.main(SWEEP + ["--workers", "2", "--format", "json", "-o", str(tmp_path / "r.json")]) == 0
    assert started == [("early-dask-cluster", 2)]


def test_an_early_cluster_of_another_shape_is_closed_not_used(monkeypatch):
    closed = []

    class Fake:
        def close(self):
            closed.append(self)
    monkeypatch.setattr(dask_cluster, "local_cluster", lambda n, interpret, gpus: Fake())
    early = dask_cluster.EarlyCluster(2, True, [])
    assert early.take(3, True, []) is None and len(closed) == 1      # asked for 3 workers: not this one
    same = dask_cluster.EarlyCluster(2, True, [])
    got = same.take(2, True, [])
    assert isinstance(got, Fake) and len(closed) == 1
    same.close()                                                      # taken: closing it is the sweep's job
    assert len(closed) == 1


def test_the_early_clusters_scheduler_never_retries_and_queues_shapes():
    # The scheduler reads allowed-failures and worker-saturation when it starts; the early cluster
    # starts it in a thread, before the sweep: its settings must be the sweep's, not Dask's
    # defaults (3 silent retries of a task whose worker died; a second task per thread).
    from distributed import Client
    early = dask_cluster.EarlyCluster(1, True, [])
    cl = early.take(1, True, [])
    try:
        with Client(cl) as client:
            got = client.run_on_scheduler(lambda dask_scheduler: (dask_scheduler.allowed_failures,
                                                                   dask_scheduler.WORKER_SATURATION))
            assert got == (0, 1.0)
            # and its workers run no statistical profiler (it samples the measuring thread)
            assert not any(client.run(lambda dask_worker: "profile" in dask_worker.periodic_callbacks).values())
            # shapes wait at the scheduler, not in a worker's own queue (where a death takes them too)
            from compare.harness.variants import wire_name
            k = registry.get("triton.stream_k")
            jobs = [dist.ShapeJob(i, p.shape, [(wire_name(k), p)], {}, {}, False, True, {})
                    for i, p in enumerate(Problem(64 + i, 48, 96) for i in range(3))]
            futures = [dist._submit(client, job, 1) for job in jobs]
            deadline, states = time.time() + 30, []
            while len(states) < 3 and time.time() < deadline:     # the graphs reach the scheduler
                states = client.run_on_scheduler(lambda dask_scheduler: sorted(
                    ts.state for ts in dask_scheduler.tasks.values() if ts.state != "memory"))
            assert states.count("processing") <= 1 and states.count("queued") >= 1, states
            assert [r["rows"][0].status for r in client.gather(futures)] == ["ok"] * 3
    finally:
        cl.close()


def test_a_cluster_workers_profiler_is_stopped_before_it_measures():
    # a --cluster worker started with Dask's defaults samples the measuring thread every 10 ms
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cl, \
            Client(cl) as client:
        running = lambda dask_worker: dask_worker.periodic_callbacks["profile"].is_running()  # noqa: E731
        assert all(client.run(running).values())
        stop = lambda dask_worker: dask_cluster.stop_profiler(dask_worker)  # noqa: E731
        assert all(client.run(stop).values())
        deadline = time.time() + 5
        while any(client.run(running).values()) and time.time() < deadline:
            time.sleep(0.05)
        assert not any(client.run(running).values())
        assert not any(client.run(stop).values())     # nothing left to stop


def test_a_worker_starts_no_shape_after_the_deadline():
    job = dist.ShapeJob(0, "8x8x8", [], {}, {}, False, True, {}, deadline=time.time() - 1)
    assert dist.measure_shape(job) == {"index": 0, "not_started": "time limit"}


def test_a_finished_cluster_is_closed_by_killing_its_workers():
    cl = dask_cluster.local_cluster(1, True, [])
    procs = [n.process.process for n in cl.workers.values()]
    assert procs and all(p.is_alive() for p in procs)
    dask_cluster.close_quickly(cl)
    assert cl.status.name == "closed"
    assert all(p.exitcode == -9 for p in procs)     # killed, not torn down


def test_a_process_with_a_dead_cuda_context_hands_its_shapes_back(monkeypatch):
    # after a sticky error the worker measures nothing more: a shape it is handed before its
    # restart comes straight back unmeasured, for the sweep to send again
    monkeypatch.setattr(dist, "_DEAD_CONTEXT", "cuda.x 8x8x8 fp32: illegal memory access")
    got = dist.measure_shape(dist.ShapeJob(3, "8x8x8", [], {}, {}, False, True, {}))
    assert got == {"index": 3, "not_started": dist.DEAD_CONTEXT}


def test_a_shape_waits_for_the_gpu_warm_up_before_it_measures(monkeypatch):
    # The preload's warm-up thread (CUDA context, cuBLAS handle, ...) must be done before the
    # task's first launch: a measurement beside it would time the warm-up too.
    import threading
    release, order = threading.Event(), []

    def slow_warm_up():
        release.wait(5)
        order.append("warm-up done")

    once = dask_cluster._Once(slow_warm_up)
    monkeypatch.setattr(dask_cluster, "_GPU_READY", once)
    once.start()
    once.start()                                  # a second preload call starts nothing more
    monkeypatch.setattr(dist, "load_plugins", lambda specs: order.append("task started"))
    real_run = runner.run
    monkeypatch.setattr(runner, "run", lambda *a, **k: order.append("measured") or real_run([], **k))
    t = threading.Thread(target=dist.measure_shape, args=(dist.ShapeJob(0, "8x8x8", [], {}, {}, False, True, {}),))
    t.start()
    time.sleep(0.3)
    assert order == ["task started"]              # held at the warm-up
    release.set()
    t.join(10)
    assert order == ["task started", "warm-up done", "measured"]


def test_the_gpu_warm_up_does_nothing_on_an_interpreter_worker(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    import torch
    asked = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: asked.append("CUDA") or True)
    monkeypatch.setattr(torch, "ones", lambda *a, **k: asked.append("tensor"))
    dask_cluster._ready_gpu()
    assert asked == []                            # returned before any CUDA call
    monkeypatch.delenv("TRITON_INTERPRET")
    dask_cluster._ready_gpu()                     # a GPU worker: it does ask (and meets the fakes)
    assert asked[:2] == ["CUDA", "tensor"]


def test_the_early_cluster_returns_once_its_workers_are_spawned():
    # The CLI goes on to import torch right after starting the early cluster; the scheduler and
    # nannies start in Python in a thread of this process, so the CLI waits until the worker
    # processes exist (their imports are the run's longest chain) before competing for the GIL.
    import multiprocessing
    before = len(multiprocessing.active_children())
    early = dask_cluster.EarlyCluster(1, True, [])
    try:
        assert len(multiprocessing.active_children()) - before >= 1
    finally:
        early.close()


def test_a_worker_whose_context_died_will_leave_without_teardown(monkeypatch):
    # The nanny's restart ends the process through Python's exit, where CuPy's module unload on the
    # dead context raised TypeError (no CUDA error named, so the quiet hooks let it print): after a
    # sticky error the worker must register the exit that skips the teardown.
    left = []
    monkeypatch.setattr(dist, "leave_at_exit_without_teardown", lambda: left.append(True))
    monkeypatch.setattr(dist, "_DEAD_CONTEXT", None)
    monkeypatch.setattr(dist, "load_plugins", lambda specs: None)
    k = registry.get("cuda.01_naive")
    trap = runner.blank_row(k, Problem(8, 8, 8), runner.ERROR, "CUDA error: unspecified launch failure")
    healthy = runner.blank_row(k, Problem(8, 8, 8), runner.ERROR, "out of memory")
    monkeypatch.setattr(runner, "run", lambda *a, **kw: [healthy])
    dist.measure_shape(dist.ShapeJob(0, "8x8x8", [], {}, {}, False, True, {}))
    assert left == [] and dist._DEAD_CONTEXT is None        # a usable context: nothing registered
    monkeypatch.setattr(runner, "run", lambda *a, **kw: [trap])
    got = dist.measure_shape(dist.ShapeJob(1, "8x8x8", [], {}, {}, False, True, {}))
    # this test's own process (an in-process cluster's worker would be the program itself): its
    # exit status must stay its own, so nothing is registered
    assert got["sticky"] and left == []
    monkeypatch.setattr(dist, "_DEAD_CONTEXT", None)
    monkeypatch.setattr(dist.multiprocessing, "parent_process", lambda: object())   # a nanny's child
    got = dist.measure_shape(dist.ShapeJob(2, "8x8x8", [], {}, {}, False, True, {}))
    assert got["sticky"] and left == [True]


_TEARDOWN_RAISES = """
import sys
from compare.harness.cuda_faults import quiet_dead_context_teardown, leave_at_exit_without_teardown
quiet_dead_context_teardown()
{leave}
class Module:
    # as CuPy's Module at interpreter exit: its unload finds the module's globals cleared
    def __del__(self):
        raise TypeError("'NoneType' object is not callable")
kept = Module()          # freed when the interpreter clears this module's globals
print("measured", flush=True)
sys.stderr.write("last line\\n")
"""


@pytest.mark.parametrize("leave", [False, True])
def test_leaving_at_exit_skips_the_teardown_the_hooks_cannot_quiet(leave):
    code = _TEARDOWN_RAISES.format(leave="leave_at_exit_without_teardown()" if leave else "")
    p = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout == "measured\n", (p.stdout, p.stderr)
    if leave:
        assert p.stderr == "last line\n", p.stderr          # output flushed, no finalizer ran
    else:
        assert "Exception ignored" in p.stderr, p.stderr    # what the Dask worker printed without it


def test_a_restarted_worker_keeps_its_nanny_however_long_the_restart_takes(monkeypatch):
    """After a worker leaves the scheduler, Dask's cluster closes its nanny for good when no worker
    of that name is back within distributed.deploy.lost-worker-timeout (15 s by default). The sweep
    restarts a worker after each sticky CUDA error, and on an H100 that check fell inside a later
    restart: the nanny was closed under the new worker and the sweep waited 120 s for it. Here the
    timeout is 50 ms before the cluster starts, shorter than any restart: the worker must still come
    back, twice."""
    import dask
    from distributed import Client
    monkeypatch.setitem(sys.modules, "dask_cuda", None)
    dask.config.set({"distributed.deploy.lost-worker-timeout": "50ms"})
    cluster = dist.local_cluster(1, interpret=False, gpus=["0"])
    try:
        with Client(cluster) as client:
            client.wait_for_workers(1, timeout=60)
            for _ in range(2):
                client.restart_workers(list(client.scheduler_info()["workers"]), timeout=60)
                client.wait_for_workers(1, timeout=60)
                time.sleep(0.2)     # past the 50 ms, had the cluster kept it
            assert list(cluster.workers) == ["gpu0"] and len(client.scheduler_info()["workers"]) == 1
    finally:
        cluster.close()
        dask.config.set({"distributed.deploy.lost-worker-timeout": "15s"})
