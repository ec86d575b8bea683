"""Sticky CUDA errors: what a fault looks like in a message, and what a process whose context one
of them killed does about it.

A CUDA fault (illegal address, misaligned address, ``trap``, an illegal instruction) is *sticky*:
it poisons the process's CUDA context, and every later launch in that process fails too.
``sticky_cuda_error`` recognises one in a row's message (the worker, the runner in-process, the
asv suite and the Dask sweep all read it here); ``dead_context`` reads it off a worker's reply so
that both ends of compare/harness/worker.py agree; ``quiet_dead_context_teardown`` keeps a dead
context's teardown off the terminal (``leave_at_exit_without_teardown``: a process that goes on
after the fault skips that teardown altogether); ``reproduce_command`` is the command a FAULT row quotes.
"""
from __future__ import annotations

import atexit
import os
import re
import shlex
import sys
from typing import Optional

from .status import ERROR

# Messages of the CUDA errors that leave the context unusable (CUDA driver API names, runtime API
# texts as torch, CuPy and Triton print them). Anything else (out of memory, a bad argument, a
# compile error) leaves the context usable and stays an "error" row.
_STICKY = (
    ("illegal memory access", r"illegal memory access|CUDA_ERROR_ILLEGAL_ADDRESS|cudaErrorIllegalAddress"),
    ("misaligned address", r"misaligned address|CUDA_ERROR_MISALIGNED_ADDRESS|cudaErrorMisalignedAddress"),
    ("unspecified launch failure (trap or kernel exception)",
     r"unspecified launch failure|CUDA_ERROR_LAUNCH_FAILED|cudaErrorLaunchFailure|\btrap\b"),
    ("illegal instruction", r"illegal instruction|CUDA_ERROR_ILLEGAL_INSTRUCTION|cudaErrorIllegalInstruction"),
    ("device-side assert", r"device-side assert|CUDA_ERROR_ASSERT|cudaErrorAssert"),
    ("invalid program counter", r"invalid program counter|CUDA_ERROR_INVALID_PC|cudaErrorInvalidPc"),
    ("hardware stack error", r"hardware stack error|CUDA_ERROR_HARDWARE_STACK_ERROR|cudaErrorHardwareStackError"),
    ("invalid address space", r"CUDA_ERROR_INVALID_ADDRESS_SPACE|cudaErrorInvalidAddressSpace|"
                              r"not supported on global/shared address space"),
    ("launch timed out", r"CUDA_ERROR_LAUNCH_TIMEOUT|cudaErrorLaunchTimeout|launch timed out and was terminated"),
    ("uncorrectable ECC error", r"CUDA_ERROR_ECC_UNCORRECTABLE|uncorrectable ECC error"),
    ("context destroyed", r"CUDA_ERROR_CONTEXT_IS_DESTROYED|context is destroyed"),
)
_STICKY_RE = [(name, re.compile(rx, re.I)) for name, rx in _STICKY]


def sticky_cuda_error(message: str) -> Optional[str]:
    """The kind of sticky CUDA error ``message`` reports (e.g. "illegal memory access"), or None
    for any other message."""
    for name, rx in _STICKY_RE:
        if rx.search(message or ""):
            return name
    return None


def dead_context(reply: tuple) -> Optional[str]:
    """The sticky CUDA error a worker's reply shows (a row or a failed request), else None. Read by
    both ends, so they agree: the worker leaves after sending such a reply, the parent replaces it."""
    if reply[0] == "row":
        fields = reply[1]
        return sticky_cuda_error(fields.get("reason") or "") if fields.get("status") == ERROR else None
    if reply[0] == "error":
        return sticky_cuda_error(reply[1])
    return None


def quiet_dead_context_teardown() -> None:
    """From now on, in this process, an exception that names a sticky CUDA error and reaches
    Python's last-resort hooks prints nothing; every other one prints as before. Installed by the
    worker, by Dask's workers (compare/outputs/dask_cluster.py) and by the runner once it has seen
    a sticky error (an ``--in-process`` run).

    Why both hooks: a finalizer that raises goes to ``sys.unraisablehook`` ("Exception ignored
    in: ..."), and a Cython ``__dealloc__`` (CuPy's Module) first prints the full traceback through
    ``sys.excepthook`` (Cython's unraisable_tracebacks). The hooks are closures over what they use,
    so they still work while the interpreter clears module globals at exit."""
    if getattr(sys.unraisablehook, "_dead_context_quiet", False):
        return
    patterns, previous_unraisable, previous_except = [rx for _, rx in _STICKY_RE], sys.unraisablehook, sys.excepthook

    def is_dead(exc) -> bool:
        text = f"{type(exc).__name__}: {exc}"
        return exc is not None and any(rx.search(text) for rx in patterns)

    def unraisable(info):
        if not is_dead(info.exc_value):
            previous_unraisable(info)

    def excepthook(exc_type, exc, tb):
        if not is_dead(exc):
            previous_except(exc_type, exc, tb)
    unraisable._dead_context_quiet = excepthook._dead_context_quiet = True
    sys.unraisablehook, sys.excepthook = unraisable, excepthook



def leave_at_exit_without_teardown() -> None:
    """When this process exits, it leaves with ``os._exit(0)`` as Python's exit begins (output
    flushed): no finalizer touches the dead CUDA context. For a process that must go on after a
    sticky error and exits later on someone else's word: a Dask worker, whose nanny stops it for
    the restart. The hooks of :func:`quiet_dead_context_teardown` can't cover that exit: by the
    time CuPy's modules are unloaded the interpreter has cleared their globals, and the unload
    raises ``TypeError: 'NoneType' object is not callable``, naming no CUDA error (seen on 4 H200s
    in 3 of 3 runs of the Dask fault test; docs/findings.md, "A dead context's teardown").
    atexit runs its callbacks last-registered first and before the modules are cleared; the exit
    status is 0 because the restart, not the process, decides what happens next."""
    if getattr(leave_at_exit_without_teardown, "registered", False):
        return
    leave_at_exit_without_teardown.registered = True

    def leave() -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(0)
    atexit.register(leave)


def reproduce_command(kernel: str, problem, opt_texts: Optional[dict] = None, plugins=(),
                      interpret: bool = False, sanitizer: bool = True) -> str:
    """The command that runs this one pair again, under compute-sanitizer's memcheck (which names
    the faulting access) unless ``sanitizer`` is False or the run was on the interpreter."""
    cmd = ["python", "-m", "compare"]
    if interpret:
        cmd.append("--interpret")
    for plugin in plugins or ():
        cmd += ["--plugin", plugin]
    cmd += ["--kernel", kernel, "--shape", f"{problem.M}x{problem.N}x{problem.K}",
            "--precision", problem.precision, "--check"]
    if problem.alpha != 1.0:
        cmd += ["--alpha", repr(problem.alpha)]
    if problem.beta != 0.0:
        cmd += ["--beta", repr(problem.beta)]
    if problem.seed != 0:
        cmd += ["--seed", str(problem.seed)]
    for name, text in sorted((opt_texts or {}).items()):
        cmd += ["--opt", f"{kernel}:{name}={text}"]
    if sanitizer and not interpret:
        cmd = ["compute-sanitizer", "--tool", "memcheck", *cmd]
    return shlex.join(cmd)

