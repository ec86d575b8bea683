"""Kernels run in a worker process, so a kernel that faults or hangs costs its own row, not the run.

A CUDA fault (illegal address, misaligned address, ``trap``, an illegal instruction) is *sticky*
(compare/harness/cuda_faults.py): it poisons the process's CUDA context, and every later launch in
that process fails too. So the
parent of a run never touches the GPU; one persistent child process (``python -m
compare.harness.worker``, started once per run) imports torch and the registry once, keeps each
problem's inputs cached as :func:`compare.harness.runner.run` does, and runs every pair through
:func:`compare.harness.runner.run_kernel`, the one pipeline. The parent reads back the rows and:

* an "error" row whose message shows a sticky CUDA error (:func:`sticky_cuda_error`) becomes a
  FAULT row (what happened and the compute-sanitizer command that reproduces it); the worker is
  killed and a fresh one runs the next pair;
* a worker that dies (a segfault, an ``exit``) gives a FAULT row and a fresh worker;
* no row within ``kernel_timeout`` seconds (compile + check + timing of the pair) gives a HUNG
  row: the worker's process group is killed (SIGKILL) and replaced.

A worker whose reply shows a sticky CUDA error (:func:`dead_context`) leaves by itself right after
sending it, with ``os._exit``: a dead context's teardown raises from finalizers (CuPy's
``Module.__dealloc__`` unloading a module gets the same CUDA_ERROR_LAUNCH_FAILED as the kernel did),
and Python would print each as "Exception ignored in ..." with a traceback on the user's terminal.
Finalizers that run before that (during the failing request) are silenced by
:func:`quiet_dead_context_teardown`, which only drops sticky CUDA errors.

The worker runs in its own session, so the terminal's Ctrl-C reaches the parent only: the parent
keeps the rows finished so far and kills the worker. A worker whose parent is gone exits.

Protocol (pickled tuples over a socket pair): parent -> worker ``("run", kernel name, problem,
options, timing, device, measure_kw, batch, wire)``, ``("fits", problems)``, ``("prepare", wire,
problem, options, device)`` (compile and launch once, no check: compare/harness/precompile.py); worker ->
parent ``("ready",)`` or ``("startup_error", text)`` once, then ``("row", fields)`` / ``("fits",
messages)`` / ``("prepared", seconds)`` per request, or ``("error", text)`` when the request itself
failed (an unknown kernel, a row that can't be sent, a prepare that raised).

The runner, the inputs and torch (1.7 s to import the runner) are imported where first used: the
parent starts its worker before paying for them, and the worker process imports them inside
``serve`` so that a failure reaches the parent as its startup error.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from multiprocessing.connection import Connection
from typing import Optional

from . import plugins, registry
from .cuda_faults import dead_context, quiet_dead_context_teardown, reproduce_command
from .cuda_faults import sticky_cuda_error  # noqa: F401  (read as worker.sticky_cuda_error by callers)
from .errors import UsageError
from .problem import ProblemError
from .registry import opt_flags
from .variants import from_wire, wire_name

# A pair's compile + autotune + check + sampling: cold Triton autotuning at 8192^3 takes tens of
# seconds; two minutes without a row is a kernel that does not return.
DEFAULT_KERNEL_TIMEOUT_S = 120.0
# torch + triton + cupy imports and the families' registration on a cold file cache.
STARTUP_TIMEOUT_S = 300.0


def _leave_now(code: int = 0) -> None:
    """Exit without Python's teardown (no finalizer touches the dead context), output flushed."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    os._exit(code)


class WorkerStartError(RuntimeError):
    """The worker process could not import torch, the registry or a plugin."""


class Worker:
    """One worker process at a time, replaced after a fault or a hang. ``run_kernel`` has the
    signature of :func:`compare.harness.runner.run_kernel` (pass it as ``runner.run(execute=)``).

    ``plugins``: modules (names or paths of .py files) the worker imports at startup, so that
    kernels they register exist in it. ``opt_texts``: {kernel: {option: text}} as the user wrote
    them, for the reproduce command of a FAULT row."""

    def __init__(self, *, plugins=(), interpret: bool = False,
                 kernel_timeout: float = DEFAULT_KERNEL_TIMEOUT_S, opt_texts: Optional[dict] = None,
                 startup_timeout: float = STARTUP_TIMEOUT_S):
        self.plugins = list(plugins or ())
        self.interpret = interpret
        self.kernel_timeout = float(kernel_timeout)
        self.startup_timeout = float(startup_timeout)
        self.opt_texts = opt_texts or {}
        self.restarts = 0
        self._proc: Optional[subprocess.Popen] = None
        self._conn: Optional[Connection] = None
        self._ready = False
        self._broken: Optional[str] = None

    # ------------------------------------------------------------------ process
    def start(self) -> "Worker":
        """Start the process (returns at once; its imports overlap whatever the caller does next)."""
        if self._proc is not None:
            return self
        parent_end, child_end = socket.socketpair()
        env = dict(os.environ)
        # The worker imports the same compare package as this process, wherever it was started.
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
        if self.interpret:
            env["TRITON_INTERPRET"] = "1"
        cmd = [sys.executable, "-m", "compare.harness.worker", "--fd", str(child_end.fileno())]
        for plugin in self.plugins:
            cmd += ["--plugin", plugin]
        if self.interpret:
            cmd.append("--interpret")
        try:
            self._proc = subprocess.Popen(cmd, pass_fds=(child_end.fileno(),), env=env, stdin=subprocess.DEVNULL,
                                          start_new_session=True)
        finally:
            child_end.close()
        self._conn = Connection(parent_end.detach())
        self._ready = False
        return self

    def wait_ready(self) -> None:
        """Block until the worker has imported everything; WorkerStartError says why it could not."""
        self.start()
        if self._ready:
            return
        deadline = time.monotonic() + self.startup_timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill()
                raise WorkerStartError(f"the worker process did not start within {self.startup_timeout:g} s")
            if self._conn.poll(min(left, 0.5)):
                try:
                    msg = self._conn.recv()
                except (EOFError, OSError):
                    code = self._reap()
                    raise WorkerStartError(f"the worker process exited while starting ({_exit_text(code)})") from None
                if msg[0] == "ready":
                    self._ready = True
                    return
                self._kill()
                raise WorkerStartError(str(msg[1]))

    def close(self) -> None:
        """End the worker now. It holds nothing to save (rows come back as they finish), and a
        graceful exit would spend a second on CUDA and CuPy teardown at the end of every run."""
        self._kill()

    def __enter__(self) -> "Worker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def _kill(self) -> None:
        proc, conn = self._proc, self._conn
        self._proc, self._conn, self._ready = None, None, False
        if conn is not None:
            conn.close()
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)   # the worker and anything it started
            except (ProcessLookupError, PermissionError):
                proc.kill()
        proc.wait()

    def _reap(self) -> Optional[int]:
        proc = self._proc
        code = None
        if proc is not None:
            try:
                code = proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self._kill()
        return code

    def _replace(self) -> None:
        self._kill()
        self.restarts += 1
        self.start()

    # ------------------------------------------------------------------ requests
    def _request(self, msg: tuple, timeout: float):
        """Send ``msg`` and wait for the answer: ("answer", value), ("died", exit code) or ("hung",)."""
        self.wait_ready()
        try:
            self._conn.send(msg)
        except OSError:
            return "died", self._reap()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill()
                return ("hung",)
            if self._conn.poll(min(left, 0.5)):
                try:
                    return "answer", self._conn.recv()
                except (EOFError, OSError):
                    return "died", self._reap()

    def check_fits(self, problems: list) -> None:
        """UsageError naming the first problem that does not fit the GPU's free memory (asked of
        the worker: the parent never makes a CUDA context)."""
        kind, *rest = self._request(("fits", list(problems)), self.startup_timeout)
        if kind != "answer":
            raise UsageError("the worker process died while checking GPU memory")
        if rest[0][0] == "error":
            raise UsageError(f"checking GPU memory in the worker process failed: {rest[0][1]}")
        for text in rest[0][1]:
            if text:
                raise UsageError(text)

    def prepare(self, kernel, problem, options: Optional[dict] = None, device: Optional[str] = None) -> tuple:
        """Compile ``kernel`` for ``problem`` and launch it once, checking nothing: ("ok", seconds),
        ("error", text), ("died", exit code) or ("hung",). A worker that died, hung or hit a sticky
        CUDA error is left stopped: the caller decides whether to start it again."""
        kind, *rest = self._request(("prepare", wire_name(kernel), problem, options, device),
                                     self.kernel_timeout)
        if kind != "answer":
            return (kind, *rest)
        if rest[0][0] == "prepared":
            return "ok", rest[0][1]
        if dead_context(rest[0]):
            self._kill()      # it has left already (serve); this reaps it
        return "error", rest[0][1]

    def run_kernel(self, kernel, problem, *, timing: bool = True, device: Optional[str] = None,
                   measure_kw: Optional[dict] = None, options: Optional[dict] = None, batch: bool = True):
        from . import runner
        if self._broken:
            return runner.blank_row(kernel, problem, runner.ERROR, self._broken)
        try:
            kind, *rest = self._request(("run", kernel.name, problem, options, timing, device, measure_kw, batch,
                                         wire_name(kernel)),
                                        self.kernel_timeout)
        except WorkerStartError as exc:
            self._broken = f"worker process could not start: {exc}"[:300]
            return runner.blank_row(kernel, problem, runner.ERROR, self._broken)
        repro = reproduce_command(kernel.name, problem, self.opt_texts.get(kernel.name), self.plugins,
                                  self.interpret)
        if kind == "hung":
            self.restarts += 1
            self.start()
            plain = reproduce_command(kernel.name, problem, self.opt_texts.get(kernel.name), self.plugins,
                                      self.interpret, sanitizer=False)
            return runner.blank_row(kernel, problem, runner.HUNG,
                                    f"no result within --kernel-timeout {self.kernel_timeout:g} s (compile + check "
                                    f"+ timing); worker killed and replaced; reproduce: {plain}")
        if kind == "died":
            self.restarts += 1
            self.start()
            return runner.blank_row(kernel, problem, runner.FAULT,
                                    f"worker process died ({_exit_text(rest[0])}); replaced; reproduce: {repro}")
        sticky = dead_context(rest[0])
        if rest[0][0] == "error":
            row = runner.blank_row(kernel, problem, runner.ERROR, rest[0][1])
        else:
            row = runner.Result(**rest[0][1])
        if sticky:      # the worker has left already (serve): a fresh one runs the next pair
            self._replace()
            row.status = runner.FAULT
            row.reason = f"{sticky} ({row.reason}); worker replaced; reproduce: {repro}"
        return row


def _exit_text(code: Optional[int]) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


# ---------------------------------------------------------------------- python -m compare's glue
def start_for_run(args) -> Worker:
    """Start the run's worker now (``args.worker``); :func:`close_for_run` ends it however the run ends."""
    args.worker = Worker(plugins=getattr(args, "plugin", None) or [], interpret=args.interpret,
                         kernel_timeout=args.kernel_timeout).start()
    return args.worker


def ready_for_run(pool: Worker, args, selected: list, problems: list) -> None:
    """Wait for the worker's imports, then ask it whether every problem fits the GPU (UsageError,
    exit 2, before any kernel runs)."""
    pool.opt_texts = opt_flags(getattr(args, "opt", None), selected)
    try:
        pool.wait_ready()
    except WorkerStartError as exc:
        raise UsageError(f"the worker process could not start: {exc}") from None
    if problems:
        pool.check_fits(problems)


def close_for_run(args) -> None:
    pool = getattr(args, "worker", None)
    if pool is not None:
        pool.close()
        args.worker = None


# ---------------------------------------------------------------------- the worker process
def import_plugin(spec: str):
    """Import a plugin module by name or by the path of a .py file (the registry's one loader)."""
    return plugins.import_plugin(spec)


def _exit_with_parent() -> None:
    """A worker whose parent died (SIGKILL, a crash) exits instead of holding the GPU."""
    parent = os.getppid()

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)
    threading.Thread(target=watch, daemon=True, name="parent-watch").start()


def serve(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compare.harness.worker")
    ap.add_argument("--fd", type=int, required=True)
    ap.add_argument("--plugin", action="append", default=[])
    ap.add_argument("--interpret", action="store_true")
    args = ap.parse_args(argv)
    if args.interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    conn = Connection(args.fd)
    # A kernel's prints go to stderr: the parent's stdout carries the results table.
    os.dup2(2, 1)
    _exit_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's to handle
    quiet_dead_context_teardown()
    try:
        from . import runner
        from .inputs import check_fits
        with contextlib.redirect_stderr(io.StringIO()):   # the parent has said what failed to load
            registry.kernels()
        registry.load_plugins(args.plugin)
    except BaseException as exc:
        conn.send(("startup_error", f"{type(exc).__name__}: {exc}"))
        return 1
    conn.send(("ready",))
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return 0
        if msg[0] == "exit":
            return 0
        try:
            reply = _answer(runner, check_fits, msg)
            conn.send(reply)
        except Exception as exc:   # a row that can't be sent, say: the parent makes it an error row
            reply = ("error", f"{type(exc).__name__}: {exc}"[:300])
            conn.send(reply)
        if dead_context(reply):    # the parent replaces this process: leave before any teardown
            _leave_now()


def _answer(runner, check_fits, msg) -> tuple:
    if msg[0] == "fits":
        return "fits", [_fits_message(check_fits, p) for p in msg[1]]
    if msg[0] == "prepare":
        return _prepare(runner, *msg[1:])
    _, name, problem, options, timing, device, measure_kw, batch, wire = msg
    try:
        kernel = from_wire(wire)     # a --variant is rebuilt from its base kernel
    except KeyError:
        return "error", (f"the worker process has no kernel {name!r} (registered by a module it did "
                         f"not import? pass that module with --plugin)")
    r = runner.run_kernel(kernel, problem, timing=timing, device=device, measure_kw=measure_kw,
                          options=options, batch=batch)
    return "row", asdict(r)


def _prepare(runner, wire, problem, options, device) -> tuple:
    from .inputs import make_inputs
    try:
        kernel = from_wire(wire)
        why = kernel.why_not(problem)
        if why:
            return "error", f"unsupported: {why}"
        inputs = make_inputs(problem, device, operands_only=True)
        return "prepared", runner.prepare(kernel, problem, inputs, options)[1]
    except Exception as exc:
        return "error", f"{type(exc).__name__}: {exc}"[:300]


def _fits_message(check_fits, problem) -> Optional[str]:
    import torch
    try:
        check_fits(problem, torch.device("cuda"))
    except ProblemError as exc:
        return str(exc)
    return None


if __name__ == "__main__":
    sys.exit(serve())
