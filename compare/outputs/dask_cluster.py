"""The local Dask clusters of ``--workers`` sweeps (compare/outputs/distributed.py runs the sweep).

Light on purpose: nothing here imports torch at module level, so the CLI can start a cluster
(:func:`start_early`) before it imports torch itself, and every worker imports this module as
its Dask preload (:func:`dask_setup`).
"""
from __future__ import annotations

import functools
import importlib.util
import logging
import multiprocessing
import os
import signal
import socket
import threading
import time
from typing import Optional

from ..harness import registry
from ..harness.checkpoint import finished_shapes
from ..harness.cuda_faults import quiet_dead_context_teardown
from ..harness.errors import UsageError
from .selection import is_sweep, shape_texts

# Imported where used: dask, distributed, dask_cuda and pynvml (optional: a sweep without them is
# refused with the install line), torch, Triton and CuPy (the worker's, not the CLI's), and
# gpuinfo and timing (11 ms more before the early cluster starts).


# ---- clusters -----------------------------------------------------------------------------------

def _pinned_gpus() -> Optional[list[str]]:
    """CUDA_VISIBLE_DEVICES as a list, None when it is not set."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    return None if env is None else [d.strip() for d in env.split(",") if d.strip()]


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES entries (its own list when set)."""
    pinned = _pinned_gpus()
    if pinned is not None:
        return pinned
    import torch
    return [str(i) for i in range(torch.cuda.device_count())]


def dashboard() -> Optional[str]:
    return ":0" if importlib.util.find_spec("bokeh") else None


# Imported by every worker as it starts (Dask's preload): torch, Triton, CuPy and the kernel
# registry load while the cluster comes up, not in the first shape's task.
PRELOAD = __name__


# The scheduler of an embedded cluster: it never retries a task whose worker died (the sweep
# counts attempts itself) and sends a worker one queued shape per thread. Its workers run no
# statistical profiler: Dask's samples the measuring thread's stack every 10 ms, taking the GIL
# from the thread that launches the timed kernels (on the H100, 300 shapes on one worker: 28
# held launches lost against 3 in one process, and 1.12x the one-process time per shape). Read
# when the scheduler and each nanny start (a nanny hands its config to its worker), so set
# around their creation (the early cluster starts them in a thread).
SCHEDULER_CONFIG = {"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0,
                    "distributed.worker.profile.enabled": False}


# How long a local cluster waits, after a worker left the scheduler, before it closes that worker's
# nanny for good when no worker of the same name has come back (Dask's default is 15 s). The sweep
# restarts a worker after every sticky CUDA error, and the check runs whenever its delay is up:
# at 15 s it fell inside a later restart's ~5 s gap in 1 of 1 runs of the Dask fault test on an
# H100 (restarts ~7 s apart), and the sweep then waited 120 s for a worker that was never coming
# (docs/findings.md, "A dead context's teardown"). A nanny restarts its worker; the cluster never
# has to. Read when the removal happens, so it is set for the process, not around the start.
LOST_WORKER_TIMEOUT = "24h"


def local_cluster(n: int, interpret: bool, gpus: list):
    """n single-threaded worker processes, each under a nanny that restarts it when it dies:
    CPU workers under --interpret; else one per GPU, pinned through CUDA_VISIBLE_DEVICES."""
    import dask
    dask.config.set({"distributed.deploy.lost-worker-timeout": LOST_WORKER_TIMEOUT})
    with dask.config.set(SCHEDULER_CONFIG):
        return _local_cluster(n, interpret, gpus)


def stop_profiler(worker) -> bool:
    """Stop a worker's statistical profiler if it runs (a ``--cluster`` worker started with Dask's
    defaults; see SCHEDULER_CONFIG for why): True when there was one to stop."""
    running = [pc for name, pc in worker.periodic_callbacks.items()
               if name in ("profile", "profile-cycle") and pc.is_running()]
    for pc in running:
        worker.loop.add_callback(pc.stop)    # the callbacks belong to the worker's event loop
    return bool(running)


def _local_cluster(n: int, interpret: bool, gpus: list):
    from distributed import LocalCluster, Nanny, Scheduler, SpecCluster
    quiet = logging.ERROR
    if interpret:
        return LocalCluster(n_workers=n, threads_per_worker=1, processes=True, memory_limit=0,
                            dashboard_address=dashboard(), silence_logs=quiet, env={"TRITON_INTERPRET": "1"},
                            preload=[PRELOAD])
    try:
        from dask_cuda import LocalCUDACluster
    except ImportError:
        LocalCUDACluster = None
    if LocalCUDACluster is not None:
        # device_memory_limit=0: no spilling of Dask data to host (a task holds its tensors itself).
        return LocalCUDACluster(n_workers=n, CUDA_VISIBLE_DEVICES=",".join(gpus[:n]), threads_per_worker=1,
                                memory_limit=0, device_memory_limit=0, dashboard_address=dashboard(),
                                silence_logs=quiet, preload=[PRELOAD])
    workers = {f"gpu{d}": {"cls": Nanny, "options": {"nthreads": 1, "memory_limit": 0, "preload": [PRELOAD],
                                                     "env": {"CUDA_VISIBLE_DEVICES": d}}}
               for d in gpus[:n]}
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": dashboard(), "port": 0}}
    return SpecCluster(workers=workers, scheduler=scheduler, silence_logs=quiet)


def local_gpus(workers: Optional[int]) -> list:
    """--workers on this host's GPUs: the visible ones, at least one and no fewer than --workers."""
    from ..harness.inputs import gpu_available
    if not gpu_available():
        raise UsageError("--workers: no CUDA GPU found (torch.cuda.is_available() is False); "
                         "add --interpret to run the Triton kernels on CPU workers")
    gpus = visible_gpus()
    if workers and workers > len(gpus):
        raise UsageError(f"--workers {workers}: only {len(gpus)} GPU(s) visible; one worker per GPU")
    return gpus


def join(cluster: str):
    """A client of the running scheduler at ``cluster`` (--cluster)."""
    from distributed import Client
    try:
        return Client(cluster, timeout="30s")
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"--cluster {cluster}: cannot reach the scheduler ({exc})") from None


def close_quickly(cluster) -> None:
    """Close a local cluster whose work is done, killing its worker processes first (as the
    one-process run kills its worker): they hold nothing to save once every shape's rows are
    back, and a graceful close spends ~0.6 s on each worker's teardown of torch, CUDA and CuPy
    (0.83 s of a 100-shape sweep on the H100 box, results/h100/dist-workers1/)."""
    for nanny in list(getattr(cluster, "workers", {}).values()):
        pid = getattr(getattr(getattr(nanny, "process", None), "process", None), "pid", None)
        if pid:
            try:
                os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
            except OSError:      # already gone
                pass
    cluster.close()


class EarlyCluster:
    """The local cluster of a ``--workers`` sweep, started in a thread as soon as the flags are
    parsed: its worker processes start (and preload) while this process imports and selects, so
    the sweep does not wait for them afterwards. ``take`` hands it to the sweep when the sweep
    wants the same cluster; otherwise it is closed and the sweep starts its own."""

    def __init__(self, n: int, interpret: bool, gpus: list, spawn_wait_s: float = 3.0):
        self.spec = (n, interpret, tuple(gpus[:n]))
        self._cluster = self._error = None
        before = len(multiprocessing.active_children())
        self._thread = threading.Thread(target=self._start, daemon=True, name="early-dask-cluster")
        self._thread.start()
        # Hold this thread until the worker processes exist: the scheduler and nannies start in
        # Python, sharing the GIL with whatever this thread does next (the CLI imports torch and
        # the registry), and every millisecond they lose delays the workers' own imports, the
        # longest chain of a --workers run (H100: the sweep waited 0.31 s for its cluster after
        # the selection with this wait, 0.87-1.48 s without; results/h100/dist-workers1-best/).
        deadline = time.monotonic() + spawn_wait_s
        while (len(multiprocessing.active_children()) - before < n and self._thread.is_alive()
               and time.monotonic() < deadline):
            time.sleep(0.005)

    def _start(self) -> None:
        try:
            self._cluster = local_cluster(self.spec[0], self.spec[1], list(self.spec[2]))
        except BaseException as exc:    # said by the sweep when it starts its own
            self._error = exc

    def take(self, n: int, interpret: bool, gpus: list):
        """The running cluster when it is the one asked for, else None (and this one closed)."""
        self._thread.join()
        cluster, self._cluster = self._cluster, None
        if cluster is not None and self.spec != (n, interpret, tuple(gpus[:n])):
            cluster.close()
            cluster = None
        return cluster

    def close(self) -> None:
        """Close the cluster unless a sweep took it (closing it is then the sweep's job)."""
        cluster = self.take(self.spec[0], self.spec[1], list(self.spec[2]))
        if cluster is not None:
            cluster.close()


def start_early(args) -> Optional[EarlyCluster]:
    """The CLI's early start for ``--workers`` (None when it can't tell the GPUs without CUDA, or
    when anything about the flags is off: the sweep then checks and says so, as always)."""
    if args.workers is None or args.cluster or args.workers < 0 or not is_sweep(args):
        return None
    if args.resume and resume_is_finished(args):
        return None     # nothing left to measure: a cluster started only to be closed at once
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        return None
    if args.interpret:
        return EarlyCluster(args.workers or 2, True, [])
    gpus = _gpus_without_cuda()
    if not gpus or args.workers > len(gpus):
        return None
    return EarlyCluster(args.workers or len(gpus), False, gpus)


def resume_is_finished(args) -> bool:
    """``--resume FILE`` already holds a done line for every shape of this sweep (read without
    torch: the shape list and the file's done lines); whether its selection matches is the
    sweep's to check."""
    try:
        wanted = set(shape_texts(args, []))
    except UsageError:
        return False
    return bool(wanted) and wanted <= finished_shapes(args.resume)


def _gpus_without_cuda() -> list:
    """visible_gpus() without a CUDA context or a torch import: NVML's count under no
    CUDA_VISIBLE_DEVICES."""
    pinned = _pinned_gpus()
    if pinned is not None:
        return pinned
    try:
        import pynvml
        pynvml.nvmlInit()
        return [str(i) for i in range(pynvml.nvmlDeviceGetCount())]
    except Exception:
        return []


def dask_setup(worker) -> None:
    """Dask's preload hook, run in every worker as it starts: torch, Triton, CuPy and the kernel
    registry load while the cluster comes up, not in the first shape's task, and a thread
    readies the GPU (:func:`_ready_gpu`) meanwhile and while the worker registers. Never fails
    the worker: a registry that can't load is reported by the task itself.

    A worker whose CUDA context a sticky error killed is restarted by its nanny, and its teardown
    runs Python's finalizers on that dead context (CuPy's Module.__dealloc__ raising
    CUDA_ERROR_LAUNCH_FAILED, printed on the sweep's terminal): those errors print nothing
    (:func:`compare.harness.cuda_faults.quiet_dead_context_teardown`; the shape's rows said it)."""
    quiet_dead_context_teardown()
    _GPU_READY.start()      # first: its CUDA context forms while this thread imports the registry
    try:
        registry.kernels()
    except Exception:
        pass


def _ready_gpu() -> None:
    """The one-time costs of a worker's first shape, paid before it: the CUDA context, cuBLAS's
    handle, Triton's driver, CuPy's device, the timing engine's L2-flush buffer and the worker's
    environment record (NVML). On the H100 the first shape's task took ~1 s more than the next
    ones without this (results/h100/dist-workers1-best/). No kernel of the suite runs here, and
    nothing on a CPU (--interpret) worker."""
    try:
        import torch
        if os.environ.get("TRITON_INTERPRET") == "1" or not torch.cuda.is_available():
            return
        a = torch.ones(64, 64, device="cuda")
        (a @ a).sum().item()
        import triton
        triton.runtime.driver.active.get_current_device()
        try:
            import cupy
            cupy.zeros(1).sum()
        except ImportError:
            pass
        from compare.harness import timing
        timing.l2_flush_buffer()
        gpu_identity(False)
        worker_environment(False)
    except Exception:      # the first shape meets whatever failed here, and reports it
        pass


# ---- what a worker process reports about itself (asked once per process, not per shape) ------

@functools.lru_cache(maxsize=None)
def gpu_identity(interpret: bool) -> tuple[str, Optional[str]]:
    """(name, UUID) of the GPU this process measures on (the worker's only visible one; asked
    once per worker process, not per shape)."""
    if interpret:
        return "none (Triton interpreter on CPU)", None
    import torch

    from compare.harness.gpuinfo import gpu_uuid
    index = torch.cuda.current_device()
    return torch.cuda.get_device_name(index), gpu_uuid(index)


@functools.lru_cache(maxsize=None)
def worker_environment(interpret: bool) -> dict:
    """The worker's versions, GPU and clock, read as it measures its first shape (the sweep's
    output shows one worker's; NVML's clock and temperature reads are not repeated per shape)."""
    from compare.harness import gpuinfo
    env = gpuinfo.environment().as_dict()
    if interpret:
        env["gpu"] = gpu_identity(True)[0]
    return env


class _Once:
    """A thread started at most once; ``wait`` joins it (a no-op when it never started)."""

    def __init__(self, target):
        self._lock = threading.Lock()
        self._target, self._thread = target, None

    def start(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._target, daemon=True, name="ready-gpu")
                self._thread.start()

    def wait(self) -> None:
        with self._lock:
            thread = self._thread
        if thread is not None:
            thread.join()


_GPU_READY = _Once(_ready_gpu)


def wait_until_ready() -> None:
    """Called by a shape's task before it measures: the GPU warm-up thread must not run beside
    a measurement."""
    _GPU_READY.wait()


# ---- checks before a cluster starts ------------------------------------------------------------

# A scheduler that does not answer a TCP connect within this is taken to be unreachable: a
# refused port answers at once, and a scheduler on a busy host still accepts within a second.
CONNECT_TIMEOUT_S = 5.0


def max_interpret_workers() -> int:
    """--interpret --workers N: one single-threaded interpreter process per CPU core at most (a
    worker past that only waits for a core, and each holds its own torch and Triton, ~0.5 GiB)."""
    return max(2, os.cpu_count() or 1)


def probe_scheduler(address: str) -> None:
    """``--cluster ADDRESS``: a well-formed address whose host answers a TCP connect within
    CONNECT_TIMEOUT_S (a refused port fails at once; Dask's own connect retries for its whole
    timeout). Schemes other than tcp/tls are left to Dask."""
    from distributed.comm.addressing import parse_address, parse_host_port
    try:
        scheme, loc = parse_address(address.strip())
        if scheme not in ("tcp", "tls"):
            return
        host, port = parse_host_port(loc)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--cluster {address}: not a scheduler address ({exc}); e.g. tcp://host:8786") from None
    if not (0 < int(port) < 65536):
        raise UsageError(f"--cluster {address}: port {port} is not 1..65535")
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except socket.gaierror as exc:
        raise UsageError(f"--cluster {address}: unknown host {host!r} ({exc.strerror or exc})") from None
    except (socket.timeout, TimeoutError):
        raise UsageError(f"--cluster {address}: no answer from {host}:{port} "
                         f"within {CONNECT_TIMEOUT_S:g} s") from None
    except OSError as exc:
        raise UsageError(f"--cluster {address}: cannot reach the scheduler ({exc.strerror or exc})") from None
