"""Compile ahead, in parallel, before anything is timed.

A cold run is compile-bound: NVRTC (the CUDA stages) and Triton's pipeline run one kernel after
another in the one worker process, and on an H100 they were most of the main command's 49 s cold
(results/h100/main-command/). Both compilers keep what they make on disk (Triton's cache, CuPy's
kernel cache), keyed by source, options and target. So before the first row, the run's worker and
a few helper workers (the same process, ``compare.harness.worker``) share out the run's pairs and
*prepare* each one: compile, choose the configuration, launch once, on operands without the
float64 reference. Every helper is gone before the first sample is taken, so nothing they do
overlaps a timing, and the worker then finds every compile on disk.

A prepare that fails, faults or hangs here is only a compile not done ahead: the helper is
replaced, and the pair is measured (and its trouble reported) by the worker as usual.

Which pairs are compiled is remembered by marker files in Triton's cache directory (cleared with
it), keyed by the pair, the kernels' sources and the versions: a run whose pairs are all marked
starts no helper, so a warm run pays nothing. A marker outlives a cleared CuPy cache; the worst
that does is a compile in the worker, as without this module.
"""
from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from typing import Callable, Optional

# Helpers beyond this many gain little (a run rarely has more distinct compiles than this in
# flight at once) and each holds a CUDA context (~0.5 GiB of GPU memory).
MAX_HELPERS = 8
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_SOURCE_DIRS = ("cuda_kernels", "triton_kernels", os.path.join("compare", "families"))


def sources_digest(extra_files=()) -> str:
    """A digest of every file a kernel's compile can depend on: the families' sources, the
    plugin files, and the compilers' and torch's versions."""
    h = hashlib.sha256()
    paths = []
    for d in _SOURCE_DIRS:
        for root, dirs, files in os.walk(os.path.join(_ROOT, d)):
            dirs[:] = sorted(x for x in dirs if not x.startswith((".", "__")))
            paths += [os.path.join(root, f) for f in sorted(files) if f.endswith((".py", ".cu", ".cuh", ".h"))]
    paths += [p for p in extra_files if os.path.isfile(p)]
    for p in paths:
        h.update(os.path.relpath(p, _ROOT).encode())
        with open(p, "rb") as f:
            h.update(f.read())
    for mod in ("torch", "triton"):
        h.update(str(getattr(sys.modules.get(mod), "__version__", None)).encode())
    h.update(os.environ.get("CUDA_VISIBLE_DEVICES", "").encode())
    return h.hexdigest()


def triton_cache_dir() -> str:
    """Triton's cache directory (where its compiled kernels go)."""
    try:
        import triton
        return triton.knobs.cache.dir
    except Exception:   # a Triton without knobs: its documented default
        return os.environ.get("TRITON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".triton", "cache")


def marker_dir() -> str:
    """Inside Triton's cache directory, so that clearing the cache clears the markers."""
    return os.path.join(triton_cache_dir(), "gemm-ladder-compiled")


def pair_key(wire, problem, options: Optional[dict], digest: str) -> str:
    """What a compile depends on: the kernel (and a variant's fixed options), the shape, the
    precision and alpha/beta (kernels specialise on beta == 0), the options, the sources."""
    text = repr((wire, problem.M, problem.N, problem.K, problem.precision, problem.alpha, problem.beta,
                 sorted((options or {}).items(), key=lambda kv: kv[0]), digest))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def helper_count(jobs: Optional[int], cold: int, with_worker: bool = True) -> int:
    """Helper processes for ``cold`` uncompiled pairs: ``jobs`` when given (0: compile in the
    worker only), else one per spare CPU core up to MAX_HELPERS; never more than the pairs the
    worker (``with_worker``: the run's own takes a share) can't take itself."""
    if jobs is None:
        jobs = min(MAX_HELPERS, max(0, (os.cpu_count() or 1) - 2))
    return max(0, min(jobs, cold - (1 if with_worker else 0)))


def compile_ahead(pairs, worker, *, options: dict, skip: Callable, jobs: Optional[int] = None, plugins=(),
                  kernel_timeout: float, interpret: bool = False,
                  say: Callable[[str], None] = lambda s: None) -> Optional[dict]:
    """Prepare every pair not yet marked compiled, on ``worker`` (the run's, already started) and
    helper workers; returns what happened (for the run's environment) or None when nothing was cold.
    ``worker`` None: helpers only (a sweep on a local Dask cluster, whose workers then find the
    compiles on disk; with ``jobs`` 0 nothing is compiled ahead there).
    ``interpret``: CPU workers and tensors (the tests' way to run this without a GPU)."""
    from .variants import wire_name
    from .worker import Worker, WorkerStartError
    digest = sources_digest([p for p in plugins if isinstance(p, str)])
    todo, seen = [], set()
    marks = marker_dir()
    for k, p in pairs:
        if k.name == "cublas" or skip(k) or k.why_not(p):     # cuBLAS: nothing of ours to compile
            continue
        opts = options.get(k.name)
        key = pair_key(wire_name(k), p, opts, digest)
        if key in seen or os.path.exists(os.path.join(marks, key)):
            continue
        seen.add(key)
        todo.append((k, p, opts, key))
    helpers = helper_count(jobs, len(todo), worker is not None)
    if not helpers:      # the worker alone would compile them one by one anyway, as it measures
        return None
    say(f"running compile-ahead: {len(todo)} kernel x shape pairs not compiled yet, on "
        f"{'the worker and ' if worker is not None else ''}{helpers} helper process{'es' if helpers != 1 else ''}")
    t0 = time.perf_counter()
    helper_workers = [Worker(plugins=plugins, kernel_timeout=kernel_timeout, interpret=interpret).start()
                      for _ in range(helpers)]
    crew = ([worker] if worker is not None else []) + helper_workers
    lock = threading.Lock()
    queue = list(todo)
    done, failed = [], []
    stop = threading.Event()

    def drain(w):
        while not stop.is_set():
            with lock:
                if not queue:
                    return
                k, p, opts, key = queue.pop(0)
            try:
                kind, *rest = w.prepare(k, p, opts, "cpu" if interpret else None)
            except WorkerStartError as exc:
                failed.append((k.name, p.shape, f"worker could not start: {exc}"))
                return
            if kind == "ok":
                done.append(key)
                _mark(marks, key)
            else:
                failed.append((k.name, p.shape, kind if not rest else f"{kind}: {rest[0]}"))

    threads = [threading.Thread(target=drain, args=(w,), daemon=True, name=f"compile-ahead-{i}")
               for i, w in enumerate(crew)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.2)
    finally:
        stop.set()
        for w in helper_workers:
            w.close()
    wall = time.perf_counter() - t0
    say(f"running compile-ahead: {len(done)} of {len(todo)} pairs compiled in {wall:.1f} s"
        + (f"; left to the worker: {len(failed)}" if failed else ""))
    return {"pairs": len(todo), "compiled": len(done), "helpers": helpers, "wall_s": round(wall, 2),
            "not_compiled": [f"{n} {s}: {why}"[:200] for n, s, why in failed]}


def _mark(folder: str, key: str) -> None:
    try:
        os.makedirs(folder, exist_ok=True)
        open(os.path.join(folder, key), "w").close()
    except OSError:   # a read-only cache: the next run compiles ahead again, nothing worse
        pass
