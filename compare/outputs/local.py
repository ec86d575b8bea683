"""A run on this host (a plain run and ``--variant``; a Dask sweep is compare/outputs/distributed.py):
the pairs measured one after another in the isolation worker (or in this process, --in-process),
each row streamed to the checkpoint (compare/harness/checkpoint.py) as it finishes, progress on
stderr (compare/outputs/progress.py), then rendered (compare/outputs/render.py).

``--resume FILE`` takes the shapes FILE finished and measures the rest; a changed selection is
refused (exit 2) before any GPU work. Ctrl-C (exit 130) keeps every finished row in the
checkpoint and never lets the partial rows replace a finished ``-o FILE``.
"""
from __future__ import annotations

import os
import sys
import time

import torch

from ..harness import checkpoint, gpuinfo, inputs, runner
from ..harness import worker as isolation
from ..harness.errors import UsageError
from ..harness.precompile import compile_ahead
from ..harness.problem import ProblemError
from . import render
from .progress import Progress, per_shape_counts
from .report import row_from_dict


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run(args, chosen, skip) -> int:
    """The selection ``chosen`` (compare/outputs/selection.py) measured or checked, rendered;
    the run's exit status (130 after Ctrl-C)."""
    pool = getattr(args, "worker", None)      # started by the CLI before it imported torch
    pairs = chosen.pairs
    path = checkpoint.path_for(args)
    measured = checkpoint.measured(args, pairs)
    shapes = list(checkpoint.group_by_shape(pairs))
    kept = checkpoint.kept_shapes(path, bool(args.resume), measured, shapes) if path else {}
    todo = [(k, p) for k, p in pairs if p.shape not in kept]
    device, timing, ahead = None, not (args.check or args.interpret), None
    if todo:
        device, timing = ready_device(args, pool, chosen.kernels, [p for p in chosen.problems if p.shape not in kept])
    if todo and pool and not args.interpret:
        ahead = compile_ahead(todo, pool, options=chosen.options, skip=skip, jobs=args.compile_jobs,
                              plugins=args.plugin or (), kernel_timeout=args.kernel_timeout, say=say)
    ckpt = None
    if path:
        expect = {s: len(group) for s, group in checkpoint.group_by_shape(todo).items()}
        ckpt = checkpoint.Checkpoint(path, measured, kept, shapes=shapes, expect=expect)
    if todo and timing:   # this GPU's peaks, for every row's % SOL: measured once, then read from the cache
        # imported here: importing cuda_kernels registers its kernels (the registry loads the families)
        from cuda_kernels.probes.peaks import ensure as measured_peaks
        measured_peaks(say=say)

    t_run = time.perf_counter()
    fresh, interrupted = measure(args, todo, pool, ckpt, skip=skip, options=chosen.options, timing=timing,
                                 device=device, done=len(pairs) - len(todo))
    results = merged(shapes, kept, fresh, timing) if kept else fresh
    if interrupted:
        interrupted = stopped(pool, ckpt, args, len(results), len(pairs))
    env = gpuinfo.environment().as_dict()
    if interrupted:
        env["interrupted"] = f"{len(results)} of {len(pairs)} rows finished; the rest were not run"
    if args.interpret:
        env["gpu"] = "none (Triton interpreter on CPU)"
    if ahead:
        env["compile_ahead"] = ahead
    if kept:
        env["resumed"] = {"checkpoint": path, "shapes": sum(s in kept for s in shapes)}
    env["run_s"] = round(time.perf_counter() - t_run, 2)     # the pairs, after compile-ahead
    code = render.report(results, env, args, judge=not interrupted)
    if ckpt and not interrupted:
        ckpt.close()
        if checkpoint.is_default(args):    # -o FILE holds every row now
            ckpt.remove()
    return interrupted or code


def ready_device(args, pool, selected, problems) -> tuple:
    """(device, timing) for runner.run, once the run can start: a GPU there is and every shape
    fits it (said with the limit named, before any kernel runs); the worker told what runs."""
    if args.interpret:
        device, timing = "cpu", False
    else:
        if not inputs.gpu_available():
            raise UsageError("no CUDA GPU found (torch.cuda.is_available() is False). "
                             "To check the Triton kernels on the CPU, add --interpret.")
        device, timing = None, not args.check
        # Fail early, with the limit named, for a shape that can't fit.
        if pool:
            isolation.ready_for_run(pool, args, selected, problems)
        else:
            for p in problems:
                try:
                    inputs.check_fits(p, torch.device("cuda"))
                except ProblemError as e:
                    raise UsageError(str(e)) from None
    if pool and args.interpret:
        isolation.ready_for_run(pool, args, selected, [])
    return device, timing


def measure(args, pairs, pool, ckpt, *, skip, options, timing, device, done: int = 0) -> tuple:
    """runner.run over the pairs, with the progress line (``done`` pairs came from the
    checkpoint); (rows, None), or after Ctrl-C (the rows finished, True)."""
    prog = Progress(done + len(pairs), quiet=args.quiet, per_shape=per_shape_counts(pairs), done=done)
    interrupted = None
    try:
        results = runner.run(pairs, timing=timing, device=device, skip=skip, progress=prog.starting,
                             options=options, measure_kw={"budget_s": args.budget, "target_noise": args.target_noise},
                             execute=pool.run_kernel if pool else None, on_row=ckpt.add_row if ckpt else None)
    except runner.Interrupted as stop:
        results, interrupted = stop.results, True
    finally:
        prog.stop()
    return results, interrupted


def merged(shapes: list, kept: dict, fresh: list, timing: bool) -> list:
    """A resumed run's rows: each shape's from the checkpoint or measured now, in the run's shape
    order, with % of cuBLAS and % SOL filled over the whole (a kept row's cuBLAS row is kept too)."""
    by_shape: dict = {}
    for r in fresh:
        by_shape.setdefault(r.shape, []).append(r)
    rows = []
    for s in shapes:
        rows += [row_from_dict(d) for d in kept[s][0]] if s in kept else by_shape.get(s, [])
    runner.fill_pct_cublas(rows)
    runner.fill_sol(rows, timing)
    return rows


def stopped(pool, ckpt, args, done: int, total: int) -> int:
    """Ctrl-C: stop the worker, keep the checkpoint, and never let the partial rows replace a
    finished -o FILE: an existing FILE is left as it was, a new one is written marked interrupted
    (JSON: environment.interrupted; table and markdown: a first line), a CSV one not at all (no
    place to say it). One line, said after the progress bar is gone, tells where the rows went;
    the exit status is 130."""
    if pool is not None:
        pool._kill()
    where = []
    if ckpt is not None:
        ckpt.close()
        if ckpt.rows or ckpt.kept_rows:
            where.append(f"kept in {ckpt.path} (--resume {ckpt.path} measures the rest)")
        else:
            ckpt.remove()    # it holds no row: nothing to resume, and it would refuse the next run
    if args.output:
        if os.path.exists(args.output):
            args.keep_output = True
            where.append(f"{args.output} left as it was (a partial run never replaces it)")
        elif args.format == "csv":
            args.keep_output = True
            where.append(f"{args.output} not written (a CSV file can't be marked partial)")
        else:
            where.append(f"written to {args.output} marked interrupted")
    if args.plot:
        args.keep_plot = True
        where.append(f"--plot {args.plot} not drawn")
    print(f"interrupted: {done} of {total} rows finished" + "".join(f"; {w}" for w in where), file=sys.stderr)
    return 130
