"""Sweeps on Dask: one task per shape, over every GPU of a host (--workers) or a running cluster
(--cluster), streamed to a JSONL checkpoint that --resume continues.

The unit of work is one shape: every selected kernel and precision of that shape *and* its
cuBLAS baseline run in one task, through ``compare.harness.runner.run``, on one worker and so one
GPU, so a row's % of cuBLAS never compares two GPUs. Each row records the GPU's name and UUID, the
worker's address and the attempt that measured it.

Faults: a task whose worker dies (a crash, a kill, the out-of-memory killer) is started once more
on whichever worker is free (``attempts`` = 2 on its rows); a second death makes it error rows. The
embedded clusters run their scheduler with ``allowed-failures`` 0 and ``worker-saturation`` 1.0
(compare/outputs/dask_cluster.py), so the scheduler itself never retries (this module counts the
attempts). Every shape is submitted at the start as a Dask *data producer* task, which the
scheduler keeps queued and hands to a worker only as a thread frees: the worker never waits a
round trip through this process for its next shape, and a dying worker takes only the one shape
it was running with it. A shape whose rows show a sticky CUDA error (the context is dead after
one) is kept and its worker restarted by its nanny; until then that process measures nothing (a
shape it is handed comes straight back and is sent again, without counting an attempt; a hundred
times back makes it error rows). ``--time-limit``: the workers start no shape after the deadline
(wall-clock time), and those shapes stay unmeasured for --resume.

The checkpoint is the one every run writes (compare/harness/checkpoint.py), a whole shape at a
time: its rows, then its done line, fsynced.
"""
from __future__ import annotations

import functools
import multiprocessing
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Optional

from ..harness import gpuinfo, registry, runner
from ..harness.checkpoint import Checkpoint, group_by_shape, kept_shapes, measured, path_for
from ..harness.errors import UsageError
from ..harness.precompile import compile_ahead
from ..harness.runner import ERROR, FAULT, Result, blank_row
from ..harness.variants import from_wire, wire_name
from ..harness.cuda_faults import leave_at_exit_without_teardown
from ..harness.worker import sticky_cuda_error as names_sticky_error
from .dask_cluster import (EarlyCluster, close_quickly, dashboard, gpu_identity, local_cluster, max_interpret_workers,
                           join, local_gpus, probe_scheduler, stop_profiler, wait_until_ready, worker_environment)
from .progress import Progress
from .report import row_from_dict

# dask and distributed are optional (a sweep without them is refused with INSTALL_LINE): imported
# where used.

INSTALL_LINE = 'pip install -e ".[dist]"'


def require_dask() -> None:
    """The Dask packages are an optional extra: without them, exit 2 naming the install line."""
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"--workers/--cluster run the sweep on Dask, which is not installed ({exc}); "
                         f"install the extra: {INSTALL_LINE}") from None


def sticky_cuda_error(rows) -> Optional[str]:
    """The first row's reason that names a sticky CUDA error, else None (one place to swap in a
    shared classifier)."""
    for r in rows:
        if r.status in (ERROR, FAULT) and names_sticky_error(r.reason or ""):
            return f"{r.kernel} {r.shape} {r.precision}: {r.reason}"
    return None


# ---- the task -----------------------------------------------------------------------------------

@dataclass
class ShapeJob:
    """Everything a worker needs to measure one shape (plain data: it travels by pickle)."""
    index: int
    shape: str
    pairs: list                    # [(kernel name, Problem)] in the one-process sweep's order
    options: dict                  # kernel name -> parsed options
    skipped: dict                  # kernel name -> why it is skipped (e.g. not interpretable)
    timing: bool
    interpret: bool
    measure_kw: dict
    attempt: int = 1
    # Python files imported on the worker before the kernels are looked up: kernels registered by
    # them become selectable (the fault tests' kernel that kills its own process).
    plugins: tuple = field(default_factory=tuple)
    # Wall-clock time (time.time()) after which the worker starts no measurement (--time-limit).
    deadline: Optional[float] = None
    bounces: int = 0     # times a worker with a dead CUDA context handed it back unmeasured


def load_plugins(specs) -> None:
    """The run's --plugin modules, imported on the worker by the registry's one loader."""
    registry.load_plugins(list(specs))


# Set in a worker process whose CUDA context a sticky error killed: it measures nothing more.
# A shape it is handed before the sweep has its nanny replace it goes straight back (not
# started) and the sweep sends it again; MAX_BOUNCES only ends a loop where that worker can be
# neither restarted nor retired (a slow restart on a busy host bounces a shape several times).
_DEAD_CONTEXT: Optional[str] = None
DEAD_CONTEXT = "dead CUDA context"
MAX_BOUNCES = 100


def measure_shape(job: ShapeJob) -> dict:
    """Runs on a worker: the shape's rows (runner.run), stamped with GPU, worker and attempt; or
    ``not_started`` and why: the time limit passed, or this process's CUDA context is dead."""
    global _DEAD_CONTEXT
    if job.deadline is not None and time.time() > job.deadline:
        return {"index": job.index, "not_started": "time limit"}
    if _DEAD_CONTEXT:
        return {"index": job.index, "not_started": DEAD_CONTEXT}
    if job.interpret:
        os.environ["TRITON_INTERPRET"] = "1"    # before any Triton kernel module is imported
    load_plugins(job.plugins)
    _quiet_worker()
    wait_until_ready()
    pairs = [(from_wire(wire), p) for wire, p in job.pairs]
    t0 = time.perf_counter()
    rows = runner.run(pairs, timing=job.timing, device="cpu" if job.interpret else None,
                      skip=lambda k: job.skipped.get(k.name), options=job.options, measure_kw=job.measure_kw)
    wall = time.perf_counter() - t0
    name, uuid = gpu_identity(job.interpret)
    try:
        from distributed import get_worker
        address, label = get_worker().address, str(get_worker().name)
    except Exception:
        address = label = None
    for r in rows:
        r.gpu_name, r.gpu_uuid, r.worker, r.attempts = name, uuid, address, job.attempt
        r.times_ms = []
    sticky = sticky_cuda_error(rows)
    if sticky:
        _DEAD_CONTEXT = sticky
        if multiprocessing.parent_process() is not None:   # a nanny's child, not the program itself
            leave_at_exit_without_teardown()
    return {"index": job.index, "shape": job.shape, "rows": rows, "wall_s": wall, "worker": address,
            "label": label, "pid": os.getpid(), "env": worker_environment(job.interpret), "sticky": sticky}


@functools.lru_cache(maxsize=None)
def _quiet_worker() -> bool:
    """Once per worker process, before its first shape: no statistical profiler sampling the
    measuring thread (the embedded clusters start without one; a --cluster worker may not)."""
    try:
        from distributed import get_worker
        worker = get_worker()
    except Exception:       # not on a Dask worker (a test calling measure_shape directly)
        return False
    return stop_profiler(worker)


def died_rows(job: ShapeJob, why: str) -> list[Result]:
    """Error rows for a shape whose task could not finish (its worker died twice, or it raised)."""
    out = []
    for wire, p in job.pairs:
        r = blank_row(from_wire(wire), p, ERROR, why[:300])
        r.attempts = job.attempt
        out.append(r)
    return out


# ---- the sweep ----------------------------------------------------------------------------------

def run_sweep(pairs, *, selection: dict, skipped: dict, options: dict, timing: bool, interpret: bool,
              measure_kw: dict, workers: Optional[int] = None, cluster: Optional[str] = None,
              checkpoint: Optional[str] = None, resume: bool = False, quiet: bool = False,
              time_limit: Optional[float] = None, plugins: tuple = (),
              early: Optional[EarlyCluster] = None, compile_jobs: Optional[int] = 0,
              kernel_timeout: float = 120.0) -> tuple[list[Result], dict]:
    """The sweep of ``pairs`` (runner order, baseline pairs included) on Dask; returns (rows in the
    sweep's shape order, environment). Everything that can make it exit 2 is checked before a
    cluster starts. ``time_limit``: seconds after which no new shape is started (the ones running
    finish), counted from this call (compile-ahead and the cluster's start included); the result
    then holds the finished shapes only, and --resume continues. ``early``: a
    cluster started ahead (:func:`start_early`), used when it is the one this sweep needs.
    ``compile_jobs``: on a local GPU cluster, compile the shapes' kernels ahead in this many helper
    processes on this host before the first shape is sent (None: one per spare core, 0: none;
    compare/harness/precompile.py): the workers then find every compile on disk instead of
    compiling one after another as they measure."""
    require_dask()
    t_begin = time.perf_counter()        # the time limit counts from here: compile-ahead included
    by_shape = group_by_shape(pairs)
    kept = _kept(checkpoint, resume, selection, by_shape)
    gpus = local_gpus(workers) if cluster is None and not interpret else []
    n = workers or (2 if interpret else len(gpus))
    todo = [s for s in by_shape if s not in kept]
    jobs = {s: ShapeJob(i, s, [(wire_name(k), p) for k, p in by_shape[s]], options, skipped, timing, interpret,
                        measure_kw, plugins=tuple(os.path.abspath(p) if os.path.isfile(p) else p for p in plugins))
            for i, s in enumerate(by_shape) if s not in kept}

    ahead = None
    if cluster is None and not interpret and compile_jobs != 0 and todo:
        ahead = compile_ahead([kp for s in todo for kp in by_shape[s]], None, options=options,
                              skip=lambda k: skipped.get(k.name), jobs=compile_jobs, plugins=plugins,
                              kernel_timeout=kernel_timeout, say=lambda m: print(m, file=sys.stderr, flush=True))

    tally = _Tally()
    started = time.perf_counter()
    if time_limit is not None:     # the workers read wall-clock time: same host, or clocks in sync
        deadline = time.time() + time_limit - (time.perf_counter() - t_begin)
        for job in jobs.values():
            job.deadline = deadline
    ready, measured = _on_dask(jobs, todo, tally, cluster=cluster, early=early, n=n, interpret=interpret, gpus=gpus,
                               checkpoint=checkpoint, selection=selection, kept=kept, shapes=list(by_shape), quiet=quiet)
    results = []
    for s in by_shape:
        results += kept[s][0] if s in kept else tally.fresh.get(s, [])
    env = _sweep_env(tally.envs, interpret)
    unfinished = [s for s in by_shape if s not in kept and s not in tally.fresh]   # unstarted, or cut short
    if unfinished:
        print(f"time limit ({time_limit} s): {len(unfinished)} of {len(by_shape)} shapes not started; the output "
              f"holds the finished ones" + (f"; --resume {checkpoint} continues" if checkpoint else ""), file=sys.stderr)
    fresh = tally.fresh
    env["distributed"] = {"shapes": len(by_shape), "resumed": len(by_shape) - len(todo), "measured": len(fresh),
                          "unfinished": len(unfinished),
                          "gpus": sorted({f"{r.gpu_name} {r.gpu_uuid}" for rows in fresh.values() for r in rows
                                          if r.gpu_name}),
                          "retried": tally.retried, "restarted": tally.restarted,
                          "workers": n if cluster is None else cluster,
                          "wall_s": round(time.perf_counter() - started, 1), "checkpoint": checkpoint,
                          # where the wall time went: waiting for the cluster, the shapes, closing it
                          "start_s": round(ready - started, 2) if ready else None,
                          "shapes_s": round(measured - ready, 2) if ready and measured else None,
                          "close_s": round(time.perf_counter() - measured, 2) if measured else None,
                          "compile_ahead": ahead}
    print(f"distributed sweep: {len(by_shape)} shapes, {env['distributed']['resumed']} resumed from the checkpoint, "
          f"{len(fresh)} measured, {len(tally.retried)} retried, in {env['distributed']['wall_s']} s", file=sys.stderr)
    return results, env


def _on_dask(jobs: dict, todo: list, tally: _Tally, *, cluster: Optional[str], early: Optional[EarlyCluster],
             n: int, interpret: bool, gpus: list, checkpoint: Optional[str], selection: dict, kept: dict,
             shapes: list, quiet: bool):
    """The shapes of ``todo`` measured on the cluster (joined, or started here and closed after),
    streamed to the checkpoint (opened once the cluster is up, closed whatever happens); returns
    when the cluster was ready and when the last shape came back (None if it never got there)."""
    from distributed import Client
    ready = measured = None
    cl = client = ckpt = None
    try:
        # A finished checkpoint (no shape to do): no cluster to start, nor to tear down half-started
        # (a Dask close racing its own start printed CommClosedError tracebacks).
        if todo and cluster:
            client = join(cluster)
        elif todo:
            cl = (early.take(n, interpret, gpus) if early else None) or local_cluster(n, interpret, gpus)
            client = Client(cl)
        if client is not None:
            link = client.dashboard_link if dashboard() or cluster else None
            print(f"dask: {len(client.nthreads())} workers at {client.scheduler.address}; "
                  f"dashboard: {link or 'not served (needs bokeh)'}", file=sys.stderr, flush=True)
        ckpt = Checkpoint(checkpoint, selection, kept, shapes=shapes) if checkpoint else None
        progress = Progress(len(shapes), quiet, done=len(shapes) - len(todo), bar=False)
        ready = time.perf_counter()
        _collect(client, jobs, todo, ckpt, progress, tally)
        measured = time.perf_counter()
    finally:
        if ckpt:
            ckpt.close()
        if client is not None:
            client.close()
        if cl is not None:
            close_quickly(cl)
    return ready, measured


def _kept(checkpoint: Optional[str], resume: bool, selection: dict, by_shape: dict) -> dict:
    """{shape: (rows, done line)} the checkpoint finished (--resume), rows as Results."""
    kept = kept_shapes(checkpoint, resume, selection, list(by_shape)) if checkpoint else {}
    return {s: ([row_from_dict(d) for d in rows], done) for s, (rows, done) in kept.items()}


def _sweep_env(envs: list, interpret: bool) -> dict:
    """The first worker's environment; with none (everything came from the checkpoint), this
    process's view."""
    if envs:
        return dict(envs[0])
    env = gpuinfo.environment().as_dict()
    if interpret:
        env["gpu"] = gpu_identity(True)[0]
    return env


@dataclass
class _Tally:
    """What the shapes' tasks came back with, as the sweep collects them."""
    fresh: dict = field(default_factory=dict)       # shape -> its rows, measured (or errored) now
    envs: list = field(default_factory=list)        # each measuring worker's environment
    retried: list = field(default_factory=list)     # shapes started again after their worker died
    restarted: list = field(default_factory=list)   # workers restarted after a sticky CUDA error


# _outcome's answer for a shape that goes to the scheduler again
AGAIN = "again"


def _collect(client, jobs: dict, todo: list, ckpt: Optional[Checkpoint], progress: Progress, tally: _Tally) -> None:
    """Every shape of ``todo`` to the scheduler, then each result as it comes: its rows kept (in
    ``tally``, the checkpoint and the progress line), or the shape sent again."""
    from distributed import as_completed
    pending = as_completed() if todo else []
    sends = iter(range(1, 1 << 30))
    # Every shape goes to the scheduler now, in order; it keeps them queued and hands a worker
    # its next one the moment it finishes one (no round trip through this process in between),
    # one per worker thread, so a worker that dies takes only the shape it was measuring.
    for s in todo:
        pending.add(_submit(client, jobs[s], next(sends)))
    restarting: set = set()
    by_index = {j.index: j for j in jobs.values()}
    for fut in pending:
        job = by_index[int(str(fut.key).split("-")[1])]     # keys: shape-<index>-...
        exc = fut.exception() if fut.status == "error" else None
        res = fut.result() if exc is None else {}
        # Let go of the result at once: a result Dask still holds for this client, on a worker
        # that is then restarted, is computed again elsewhere, and a shape that killed a CUDA
        # context would kill a second worker's unseen (every shape sent to it bounced after).
        fut.release()
        outcome = _outcome(client, job, res, exc, restarting, tally)
        if outcome == AGAIN:
            pending.add(_submit(client, job, next(sends), first=True))
        elif outcome is not None:
            rows, who, note, meta = outcome
            tally.fresh[job.shape] = rows
            if ckpt:
                ckpt.add(job.shape, rows, **meta)
            progress.finished(job.shape, who, note)


def _outcome(client, job: ShapeJob, res: dict, exc, restarting: set, tally: _Tally):
    """One finished task: (rows, worker to name, progress note, checkpoint fields); AGAIN where
    the shape is to be sent again; None where it stays unmeasured (the time limit, for --resume)."""
    from distributed.scheduler import KilledWorker
    if res.get("not_started") == "time limit":          # left for --resume
        return None
    if res.get("not_started") == DEAD_CONTEXT and job.bounces < MAX_BOUNCES:
        job.bounces += 1                 # handed to a worker awaiting replacement: again
        return AGAIN
    if res.get("not_started") == DEAD_CONTEXT:
        why = "only workers with a dead CUDA context took it"
        return died_rows(job, why), None, f" (error rows: {why})", {"worker": None, "attempts": job.attempt}
    if exc is None:
        worker, label = res["worker"], res["label"]
        tally.envs.append(res["env"])
        note = ""
        if res["sticky"]:
            note = " (sticky CUDA error: worker restarted)"
            restarting.add(worker)
            tally.restarted += [worker] if _restart(client, worker, res["sticky"]) else []
        meta = {"wall_s": round(res["wall_s"], 3), "worker": worker, "name": label, "pid": res["pid"],
                "attempts": job.attempt}
        return res["rows"], label or worker, note, meta
    if isinstance(exc, KilledWorker) and _last_worker(exc) in restarting:
        # the restart of a worker with a dead CUDA context ended this shape's task: not its doing
        return AGAIN
    if isinstance(exc, KilledWorker) and job.attempt == 1:
        job.attempt = 2
        tally.retried.append(job.shape)
        print(f"worker died measuring {job.shape}: starting it once more", file=sys.stderr, flush=True)
        return AGAIN
    why = ("its worker died twice measuring this shape" if isinstance(exc, KilledWorker)
           else f"the shape's task raised {type(exc).__name__}: {exc}")
    return died_rows(job, why), None, f" (error rows: {why})", {"worker": None, "attempts": job.attempt}


def _submit(client, job: ShapeJob, send: int, first: bool = False):
    """The shape's task, marked as a data producer: with worker-saturation 1.0 the scheduler
    queues it and sends it to a worker only when that worker's thread is free (a task Dask does
    not take for root-like would go to a worker's own queue at once, and die with it). ``first``:
    ahead of the queue (a retry)."""
    key = f"shape-{job.index}-attempt{job.attempt}-{os.getpid()}-{send}"
    try:
        from dask._task_spec import Task
        task = Task(key, measure_shape, job, _data_producer=True)
    except (ImportError, TypeError):   # a Dask before data producers: root-like by group size
        return client.submit(measure_shape, job, key=key, pure=False, priority=1 if first else 0)
    return client.get({key: task}, key, sync=False, priority=1 if first else 0)


def _restart(client, worker: Optional[str], why: str) -> bool:
    """Replace a worker whose CUDA context is dead (its nanny starts a fresh process); one that
    can't be (no nanny) is retired, so that no more shapes go to it."""
    print(f"sticky CUDA error on {worker} ({why}); restarting it", file=sys.stderr)
    try:
        n = len(client.nthreads())
        client.restart_workers([worker])
        client.wait_for_workers(n, timeout=120)     # so the next shapes see every worker again
        return True
    except Exception as exc:   # a worker without a nanny (--cluster with --no-nanny) can't be restarted
        print(f"warning: could not restart {worker}: {exc}; retiring it", file=sys.stderr)
        try:
            client.retire_workers([worker], close_workers=True)
        except Exception:
            pass
        return False


def _last_worker(exc) -> Optional[str]:
    last = getattr(exc, "last_worker", None)
    return getattr(last, "address", last)


# ---- the CLI's entry --------------------------------------------------------------------------

def check_flags(args, is_sweep: bool) -> None:
    """--workers/--cluster/--time-limit, before anything else runs (exit 2 on a bad one): called
    before the early cluster starts and again by the CLI's main path (cheap, no cluster). The
    checkpoint's flags are every run's (compare/outputs/targets.py)."""
    if args.cluster is not None and not args.cluster.strip():
        raise UsageError('--cluster "": give the scheduler\'s address, e.g. --cluster tcp://host:8786')
    if args.workers is None and args.cluster is None:
        if args.time_limit is not None:
            raise UsageError("--time-limit belongs to a distributed sweep: add --workers N (or --cluster)")
        return
    if getattr(args, "in_process", False):
        raise UsageError("--in-process runs the kernels in this process and --workers/--cluster on Dask "
                         "workers: use one")
    require_dask()
    if args.workers is not None and args.cluster:
        raise UsageError("--workers starts a local cluster and --cluster joins one: use one")
    if args.workers is not None and args.workers < 0:
        raise UsageError(f"--workers {args.workers}: must be >= 1 (0: one per GPU)")
    if args.workers and args.interpret and args.workers > max_interpret_workers():
        raise UsageError(f"--workers {args.workers} --interpret: this host has {os.cpu_count()} CPU cores and an "
                         f"interpreter worker is one single-threaded process; at most {max_interpret_workers()}")
    if not is_sweep:
        raise UsageError("--workers/--cluster run a sweep: add --sweep, --shapes-file or --distribution")
    if args.time_limit is not None and not args.time_limit > 0:      # NaN too
        raise UsageError(f"--time-limit {args.time_limit}: must be > 0 seconds")
    if args.cluster:
        probe_scheduler(args.cluster)


def run_from_cli(args, pairs, skip, options: dict) -> tuple[list[Result], dict]:
    """``python -m compare ... --workers N | --cluster ADDRESS``: the selection the CLI made, run here."""
    skipped = {k.name: why for k, _ in pairs if (why := skip(k))}
    checkpoint = path_for(args)
    if checkpoint is None:
        print("note: no checkpoint (no -o, --checkpoint or --resume): a stopped sweep keeps nothing", file=sys.stderr)
    return run_sweep(pairs, selection=measured(args, pairs), skipped=skipped, options=options,
                     timing=not (args.check or args.interpret), interpret=args.interpret,
                     measure_kw={"budget_s": args.budget, "target_noise": args.target_noise},
                     workers=args.workers or None, cluster=args.cluster, checkpoint=checkpoint,
                     resume=bool(args.resume), quiet=args.quiet, time_limit=args.time_limit,
                     plugins=tuple(args.plugin or ()), early=getattr(args, "early_cluster", None),
                     compile_jobs=args.compile_jobs, kernel_timeout=args.kernel_timeout)
