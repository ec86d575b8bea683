"""python -m compare: every family's kernels for a stage, on identical inputs, next to cuBLAS.

Exit codes: 0 every kernel that ran is ok; 1 some kernel FAILED its correctness check, errored
(raised, ran out of memory), faulted (FAULT: a sticky CUDA error or a crashed worker) or hung
(HUNG: no result within --kernel-timeout); 2 the run could not start (bad arguments or files, no
GPU, a shape that does not fit) or would check nothing (every selected kernel unsupported or
skipped on every shape); 130 interrupted (Ctrl-C): the rows finished so far are rendered and
kept. Everything that makes a run exit 2 is found before any GPU work.
"""
from __future__ import annotations

import argparse
import math
import os
import shlex
import sys
import time

from typing import Optional

from .harness.errors import UsageError
from .harness.files import write_atomically
from .outputs import selection   # the flags -> (kernel, problem) pairs
from .outputs import targets   # -o / --plot / --from-json: checked before any GPU work
# The shape catalogue (every default and named set) is compare/harness/shapes.py.
from .harness.shapes import INTERPRET_DEFAULTS as INTERPRET_SHAPES

# One paragraph a line: _EpilogFormatter wraps each to the terminal's width (COLUMNS), hanging
# its continuation lines by two columns.
EPILOG = "\n".join([
    "options: --opt [KERNEL:]NAME=VALUE sets one of a kernel's declared options (--list shows them); without "
    "KERNEL: it applies to every selected kernel that declares NAME (refused where their declarations differ: "
    "name the kernel). Every result row records the configuration that ran (the config field of JSON/CSV; "
    "--show config prints it).",
    "sweeps: --sweep NAME (named shape sets) or --shapes-file FILE (a list of shapes) run every selected kernel "
    "on every shape and end the output with a per-kernel summary (geomean / worst / best % of cuBLAS); with "
    "--plot, the sweep plot.",
    "-o FILE without --format writes the format its suffix names (.json, .csv, .md; else the table).",
    "variants: --variant KERNEL[:NAME=VALUE,...] runs KERNEL with those options as a kernel of its own (rows and "
    "summary labelled KERNEL[NAME=VALUE,...]); NAME=V1|V2 gives one variant per value, NAME=* one per value the "
    "option declares, several NAME=... the cross product.",
    "@FILE reads arguments from FILE, one per line (# comments), e.g. results/**/*.args.",
    "isolation: kernels run in a worker process; a kernel that poisons the CUDA context (illegal address, trap, "
    "...) or kills the worker is a FAULT row with a compute-sanitizer command that reproduces it, one that gives "
    "no row within --kernel-timeout a HUNG row; either way a fresh worker runs the next kernel. With -o FILE, "
    "rows stream to FILE.partial.jsonl as they finish (deleted once FILE is written; kept when the run is "
    "interrupted or dies).",
    "exit codes: 0 every kernel that ran is ok; 1 some kernel FAILED its correctness check, errored (raised, ran "
    "out of memory), faulted (FAULT) or hung (HUNG); 2 the run could not start (bad arguments or files, no GPU, "
    "a shape that does not fit) or would check nothing (every selected kernel unsupported or skipped on every "
    "shape); 130 interrupted by Ctrl-C (the finished rows are kept in FILE.partial.jsonl; an existing -o FILE "
    "is never replaced by them). Exit 2 is decided before any GPU work.",
])


class _EpilogFormatter(argparse.RawDescriptionHelpFormatter):
    """The description and epilog as paragraphs (one a line), each wrapped to the help's width."""

    def _fill_text(self, text, width, indent):
        import textwrap
        return "\n".join(textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent + "  ",
                                        break_on_hyphens=False, break_long_words=False) if line else ""
                         for line in text.splitlines())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m compare",
        description="Compare GEMM kernels (handwritten CUDA stages, Triton, cuBLAS) on identical inputs.",
        epilog=EPILOG, formatter_class=_EpilogFormatter, fromfile_prefix_chars="@")
    p.convert_arg_line_to_args = _arg_file_line
    selection.add_flags(p, default_shapes="the group's shapes")
    p.add_argument("--list", action="store_true", help="print the stage ladder and the registered kernels, then exit")
    p.add_argument("--profile", action="store_true",
                   help="Nsight Compute counters (coalescing, bank conflicts, FMA/tensor pipe, occupancy, "
                        "DRAM traffic) beside each kernel's time: runs python -m compare.outputs.profile with these flags")
    p.add_argument("--resources", action="store_true",
                   help="registers, shared memory and spills of every CUDA kernel configuration (needs nvcc)")
    p.add_argument("--arch", default="sm_90", help="with --resources: target architecture (default sm_90)")
    p.add_argument("--check", action="store_true", help="correctness only, no timing")
    p.add_argument("--interpret", action="store_true",
                   help="no GPU needed: run the Triton kernels under TRITON_INTERPRET=1 on CPU tensors, correctness only")
    p.add_argument("--format", choices=("table", "csv", "json", "markdown"), default=None,
                   help="default: from the -o suffix (.json, .csv, .md), else table")
    p.add_argument("--output", "-o", metavar="FILE", help="write the formatted results here instead of stdout")
    p.add_argument("--plot", metavar="FILE.png|.svg", help="also draw TFLOP/s vs size and the %%-of-cuBLAS staircase")
    p.add_argument("--from-json", metavar="FILE", action="append",
                   help="do not measure: load results written by --format json and render/plot them; "
                        "repeatable (e.g. one file per shape set of a sweep: the rows are concatenated)")
    p.add_argument("--budget", type=_seconds, default=1.0, help="seconds of sampling per kernel and shape at most (default 1.0)")
    p.add_argument("--target-noise", type=_fraction, default=0.005,
                   help="stop sampling when the median's relative standard error is below this (default 0.005)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    # a kernel of your own (compare/harness/plugins.py, docs/design.md "Your own kernel")
    p.add_argument("--plugin", action="append", metavar="MODULE_OR_PATH",
                   help="import a file that registers kernels of your own (a module name importable from the "
                        "current directory, or a path to a .py file); repeatable. Installed plugins (entry point "
                        "group gemm_ladder.kernels) load without it")
    # issue 23, a run that reads at a glance: what the default table leaves out, on request
    p.add_argument("--show", action="append", choices=("config",), default=[],
                   help="config: also print each row's resolved configuration (always in the JSON/CSV)")
    # Isolation and watchdog (issue 24): compare/harness/worker.py.
    from .harness.worker import DEFAULT_KERNEL_TIMEOUT_S
    p.add_argument("--in-process", action="store_true",
                   help="run the kernels in this process, not in a worker process (for a debugger or profiler; "
                        "a sticky CUDA error then fails every later kernel, and there is no --kernel-timeout)")
    p.add_argument("--kernel-timeout", type=_seconds, default=DEFAULT_KERNEL_TIMEOUT_S, metavar="SECONDS",
                   help=f"a kernel x shape with no result after this long (compile + check + timing) is HUNG, "
                        f"its worker killed and replaced (default {DEFAULT_KERNEL_TIMEOUT_S:g})")
    p.add_argument("--compile-jobs", type=_count, default=None, metavar="N",
                   help="before timing, compile the kernels not yet in the compile caches on the worker and N "
                        "helper processes (default: one per spare CPU core, at most 8; 0: compile as they run); "
                        "with --workers, on N helpers before the first shape goes to the cluster")
    # Scale-out sweeps on Dask and generated shape distributions (compare/outputs/distributed.py, issue 26).
    p.add_argument("--distribution", action="append", metavar="NAME[:COUNT[:SEED]]",
                   help="a generated shape corpus (a sweep; compare/harness/shapes.py): loguniform, llm, "
                        "interpret_tiny (--interpret only); COUNT shapes (default 100) drawn with SEED (default 0)")
    p.add_argument("--workers", type=int, nargs="?", const=0, default=None, metavar="N",
                   help="run the sweep on an embedded Dask cluster: one worker per GPU (N default: every "
                        "visible GPU; with --interpret, N CPU workers, default 2). Needs the extra: pip install -e \".[dist]\"")
    p.add_argument("--cluster", metavar="ADDRESS", help="run the sweep on a running Dask scheduler (tcp://host:8786)")
    p.add_argument("--checkpoint", metavar="FILE.jsonl",
                   help="distributed sweeps: stream rows here per finished shape (default: -o FILE + .checkpoint.jsonl)")
    p.add_argument("--resume", metavar="FILE.jsonl",
                   help="distributed sweeps: keep the shapes FILE finished, measure the rest, append to FILE "
                        "(a missing FILE starts it)")
    p.add_argument("--time-limit", type=float, metavar="SECONDS",
                   help="distributed sweeps: start no shape SECONDS after the sweep began (compile-ahead and the "
                        "cluster's start count); the output holds the finished shapes and --resume continues")
    return p


def _seconds(text: str) -> float:
    """--budget, --kernel-timeout: a finite number of seconds > 0 (a NaN budget used to reach
    int() in the engine)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(x) and x > 0):
        raise argparse.ArgumentTypeError(f"{text} must be a finite number of seconds > 0, e.g. 1.0")
    return x


def _count(text: str) -> int:
    """--compile-jobs: a whole number >= 0."""
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return int(text)


def _fraction(text: str) -> float:
    """--target-noise: a relative standard error strictly between 0 and 1."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not (0 < x < 1):   # NaN fails this too
        raise argparse.ArgumentTypeError(f"{text} must be a fraction between 0 and 1, e.g. 0.005 (0.5%)")
    return x


def _expand_arg_files(argv: list, _open: tuple = ()) -> list:
    """@FILE arguments replaced by the file's arguments, so --profile inside a file is seen and
    the recorded command is the full one. A missing file is left for argparse to report; one that
    is not UTF-8 text, or that includes itself, is a UsageError."""
    out = []
    for a in argv:
        if a.startswith("@") and os.path.isfile(a[1:]):
            path = os.path.realpath(a[1:])
            if path in _open:
                raise UsageError(f"{a}: the file includes itself (through {' -> '.join(_open)})")
            try:
                with open(a[1:], encoding="utf-8") as f:
                    lines = f.read().splitlines()
            except UnicodeDecodeError as exc:
                raise UsageError(f"{a}: not a text file of arguments (byte {exc.object[exc.start]:#04x} at offset "
                                 f"{exc.start} is not UTF-8); an @FILE holds one argument per line") from None
            except OSError as exc:
                raise UsageError(f"{a}: can't read it ({exc.strerror or exc})") from None
            out += _expand_arg_files([x for line in lines for x in _arg_file_line(line)], _open + (path,))
        else:
            out.append(a)
    return out


def _arg_file_line(line: str) -> list[str]:
    """@FILE: one argument per line; blank lines and lines starting with # are skipped."""
    line = line.strip()
    return [] if not line or line.startswith("#") else [line]


def _check_something_runs(pairs, skip, selected) -> None:
    """A run whose every row would be unsupported or skipped proves nothing: say so before any
    GPU work. cuBLAS alone counts only when it is all that was selected."""
    wanted = [k for k in selected if k.family != "cublas"] or selected
    wanted_names = {k.name for k in wanted}
    reasons = []
    for k, p in pairs:
        if k.name not in wanted_names:
            continue
        why = (skip(k) if skip else None) or k.why_not(p)
        if not why:
            return
        reasons.append(f"{k.name} {p.shape} {p.precision}: {why}")
    distinct = list(dict.fromkeys(reasons))
    shown = "; ".join(distinct[:4])
    more = f" (and {len(distinct) - 4} more)" if len(distinct) > 4 else ""
    raise UsageError(f"nothing to check: every selected kernel is unsupported or skipped on every shape "
                     f"({shown or 'no kernel selected'}{more})")


def print_list(file=None) -> None:
    """--list: the stage ladder and the kernels (compare.outputs.listing)."""
    from .outputs.listing import print_list as show
    show(file)


def _progress(enabled: bool, total: int, pairs=()):
    """What the run says on stderr while it runs (compare.outputs.progress): a bar on a terminal,
    plain lines when piped, one line per shape under -q."""
    from .outputs.progress import Progress, per_shape_counts
    return Progress(total, quiet=not enabled, per_shape=per_shape_counts(pairs))


def _emit(text: str, args) -> None:
    if args.output:
        def write(tmp):
            with open(tmp, "w") as f:
                f.write(text)
        write_atomically(args.output, write)
    else:
        sys.stdout.write(text)


def command_line(argv: list) -> str:
    """The command that reproduces this run (recorded in the JSON), whatever script started it."""
    return shlex.join(["python", "-m", "compare", *argv])


def render(results, env, args, summary=None) -> None:
    """Results in args.format to -o or stdout, closed by a summary: a sweep's per-kernel summary,
    else the kernel x shape matrix (compare.outputs.matrix). json: "summary"/"matrix" fields;
    csv: the summary on stderr, so the file stays one table."""
    import io
    from .outputs import matrix, report
    if getattr(args, "keep_output", False):    # interrupted: -o FILE is not replaced (_interrupted)
        return
    mark = f"INTERRUPTED (Ctrl-C): {env['interrupted']}\n" if env and env.get("interrupted") else ""
    width = report.table_width(None if args.output else sys.stdout)
    md = args.format == "markdown"
    if summary is not None:
        from .outputs import sweep
        text_summary = sweep.render_summary(summary, "markdown" if md else "table")
    else:
        text_summary = matrix.render(results, "markdown" if md else "table", width) or None
    shown = report.config_view(results, width) if "config" in (args.show or []) else ""
    if args.format == "json":
        text = report.to_json(results, env, command_line(args.argv), summary=summary,
                              matrix=matrix.build(results))
    elif args.format == "csv":
        text = report.to_csv(results)
        if text_summary:
            sys.stderr.write(text_summary if text_summary.endswith("\n") else text_summary + "\n")
    elif md:
        text = mark + report.to_markdown(results, env)
        if text_summary:
            text += "\n" + text_summary
    elif args.output:
        buf = io.StringIO()
        report.to_table(results, env, buf)
        text = buf.getvalue() + ("\n" + shown if shown else "") + (("\n" + text_summary) if text_summary else "")
        text = mark + text
    else:
        sys.stdout.write(mark)
        report.to_table(results, env, sys.stdout)
        text = ("\n" + shown if shown else "") + (("\n" + text_summary) if text_summary else "")
    if text and text_summary and not text.endswith("\n"):
        text += "\n"
    _emit(text, args)


def draw(results, env, args) -> bool:
    """--plot; False (with a message, not a traceback) when the run has nothing to draw."""
    if not any(r.status == "ok" and r.tflops for r in results):
        print(f"error: --plot {args.plot} not written: no row has status ok and a time "
              f"(every kernel FAILED, errored or was not run)", file=sys.stderr)
        return False
    if selection.is_sweep(args):
        from .outputs.plot import default_title
        from .outputs.sweep import plot_sweep
        title = default_title([r for r in results if r.status == "ok" and r.tflops], env.get("gpu", ""))
        write_atomically(args.plot, lambda tmp: plot_sweep(results, tmp, title=title, env=env))
    else:
        from .outputs.plot import plot
        write_atomically(args.plot, lambda tmp: plot(results, tmp, gpu=env.get("gpu", ""), env=env))
    print(f"plot written to {args.plot}", file=sys.stderr)
    return True


def verdict(results) -> int:
    """The exit status of a finished (or loaded) run; see the module docstring."""
    from .harness import runner
    return runner.exit_status(results)


def main(argv: Optional[list] = None) -> int:
    try:
        argv = _expand_arg_files(sys.argv[1:] if argv is None else list(argv))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if "--profile" in argv:
        # Nsight Compute counters beside each time: its own entry point with the same selection flags.
        from .outputs.profile import main as profile_main
        return profile_main([a for a in argv if a != "--profile"])
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = argv
    try:
        _start_worker_early(args)
        return _main(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted before the results were written", file=sys.stderr)
        return 130
    finally:
        from .harness.worker import close_for_run
        close_for_run(args)
        if getattr(args, "early_cluster", None):
            args.early_cluster.close()


def _start_worker_early(args) -> None:
    """The worker process that will run the kernels starts before this process imports torch,
    Triton and the families, so the two imports overlap instead of adding up (a run that
    measures nothing starts none; a --workers sweep starts its local Dask cluster instead)."""
    if args.list or args.resources or args.from_json:
        return
    if args.workers is not None:
        # Everything that makes a sweep exit 2 and needs no kernel is said before its cluster starts.
        from .outputs.dask_cluster import start_early
        from .outputs.distributed import check_flags
        targets.validate(args)
        check_flags(args, selection.is_sweep(args))
        if args.interpret:
            selection.check_interpretable(args, selection.shape_texts(args, INTERPRET_SHAPES))
        args.early_cluster = start_early(args)
    elif not (args.in_process or args.cluster is not None):
        from .harness import worker
        worker.start_for_run(args)


def _main(args) -> int:
    if args.interpret:
        # Must happen before any Triton kernel module is imported: @triton.jit picks the
        # interpreter at decoration time.
        os.environ["TRITON_INTERPRET"] = "1"
    if not (args.list or args.resources):
        # Paths and the sweep's flags before the families load (torch, Triton: seconds): a
        # refused --cluster port or an unwritable -o is said at once.
        targets.validate(args)
        from .outputs.distributed import check_flags
        check_flags(args, selection.is_sweep(args))
    from .harness import registry
    registry.load_plugins(args.plugin)   # --plugin: after TRITON_INTERPRET is set, before --list and the selection

    if args.list:
        print_list()
        return 0
    if args.resources:
        from cuda_kernels import resources
        return resources.main(["--arch", args.arch])
    if args.from_json:
        return _report_files(args)
    return _run(args)


def _report_files(args) -> int:
    """--from-json FILE...: the recorded rows, filtered and rendered as a run's would be."""
    from .outputs import report
    results, env = [], None
    for path in args.from_json:   # every file is read (and refused) before anything is rendered
        rows, file_env = report.load(path)
        results.extend(rows)
        env = env if env is not None else file_env
    results = targets.filter_loaded(results, args)
    if args.plot and not any(r.status == "ok" and r.tflops for r in results):
        raise UsageError(f"--plot: nothing to plot in {', '.join(args.from_json)}: no row has status ok and a time "
                         f"(a --check or --interpret run?)")
    return _report(results, env, args)


def _run(args) -> int:
    """The selection measured (or checked): here, in the isolation worker, or on Dask (--workers,
    --cluster); rendered, with the run's exit status."""
    from .harness import worker as _worker
    # A Dask sweep's workers are its processes: no isolation worker of its own.
    dask_sweep = args.workers is not None or args.cluster
    pool = getattr(args, "worker", None)      # started by _start_worker_early
    chosen = selection.select(args, interpret=args.interpret)
    selected, options, problems, pairs = chosen.kernels, chosen.options, chosen.problems, chosen.pairs
    if args.interpret:
        selection.check_interpretable(args, list(dict.fromkeys(p.shape for p in problems)))

    def skip(k):
        if args.interpret and not k.interpretable:
            return "needs a GPU (--interpret runs the Triton kernels only)"
        return None

    _check_something_runs(pairs, skip, selected)
    if dask_sweep:
        from .outputs.distributed import run_from_cli
        return _report(*run_from_cli(args, pairs, skip, options), args)

    device, timing = _ready_device(args, pool, selected, problems)
    ahead = None
    if pool and not args.interpret:
        from .harness.precompile import compile_ahead
        ahead = compile_ahead(pairs, pool, options=options, skip=skip, jobs=args.compile_jobs,
                              plugins=args.plugin or (), kernel_timeout=args.kernel_timeout,
                              say=lambda s: print(s, file=sys.stderr, flush=True))
    ckpt = _worker.checkpoint_for_run(args)
    if timing:   # this GPU's peaks, for every row's % SOL: measured once, then read from the cache
        from cuda_kernels.probes.peaks import ensure as measured_peaks
        measured_peaks(say=lambda s: print(s, file=sys.stderr, flush=True))

    t_run = time.perf_counter()
    results, interrupted = _measure(args, pairs, pool, ckpt, skip=skip, options=options, timing=timing, device=device)
    from .harness import gpuinfo
    env = gpuinfo.environment().as_dict()
    if interrupted:
        env["interrupted"] = f"{len(results)} of {len(pairs)} rows finished; the rest were not run"
    if args.interpret:
        env["gpu"] = "none (Triton interpreter on CPU)"
    if ahead:
        env["compile_ahead"] = ahead
    env["run_s"] = round(time.perf_counter() - t_run, 2)     # the pairs, after compile-ahead
    code = _report(results, env, args, judge=not interrupted)
    if ckpt and not interrupted:
        ckpt.finish()
    return interrupted or code


def _ready_device(args, pool, selected, problems) -> tuple:
    """(device, timing) for runner.run, once the run can start: a GPU there is and every shape
    fits it (said with the limit named, before any kernel runs); the worker told what runs."""
    from .harness import worker as _worker
    from .harness.inputs import gpu_available
    from .harness.problem import ProblemError
    if args.interpret:
        device, timing = "cpu", False
    else:
        if not gpu_available():
            raise UsageError("no CUDA GPU found (torch.cuda.is_available() is False). "
                             "To check the Triton kernels on the CPU, add --interpret.")
        device, timing = None, not args.check
        # Fail early, with the limit named, for a shape that can't fit.
        from .harness.inputs import check_fits
        if pool:
            _worker.ready_for_run(pool, args, selected, problems)
        else:
            import torch
            for p in problems:
                try:
                    check_fits(p, torch.device("cuda"))
                except ProblemError as e:
                    raise UsageError(str(e)) from None
    if pool and args.interpret:
        _worker.ready_for_run(pool, args, selected, [])
    return device, timing


def _measure(args, pairs, pool, ckpt, *, skip, options, timing, device) -> tuple:
    """runner.run over the pairs, with the progress line; (rows, None) or, after Ctrl-C, (the
    rows finished, 130) once _interrupted has said where they went."""
    from .harness import runner
    prog = _progress(not args.quiet, len(pairs), pairs)

    def progress(k, p):
        if prog:
            prog.update(k, p)

    interrupted = None
    try:
        results = runner.run(pairs, timing=timing, device=device, skip=skip, progress=progress, options=options,
                             measure_kw={"budget_s": args.budget, "target_noise": args.target_noise},
                             execute=pool.run_kernel if pool else None, on_row=ckpt.add if ckpt else None)
    except runner.Interrupted as stop:
        results, interrupted = stop.results, stop
    finally:
        if prog:
            prog.stop()
    if interrupted:   # said after the progress bar is gone
        interrupted = _interrupted(pool, ckpt, args, len(results), len(pairs))
    return results, interrupted


def _interrupted(pool, ckpt, args, done: int, total: int) -> int:
    """Ctrl-C: stop the worker, keep the checkpoint, and never let the partial rows replace a
    finished -o FILE: an existing FILE is left as it was, a new one is written marked interrupted
    (JSON: environment.interrupted; table and markdown: a first line), a CSV one not at all (no
    place to say it). One line says where the rows went; the exit status is 130."""
    if pool is not None:
        pool._kill()
    where = []
    if ckpt is not None:
        ckpt.close()
        if ckpt.rows:
            where.append(f"kept in {ckpt.path}")
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


def _report(results, env: dict, args, judge: bool = True) -> int:
    """Render (with the sweep summary when shapes came from a set or file), plot, exit code:
    the same for a measured run and a recorded one (an interrupted one: no exit code, ``judge``
    False)."""
    summary = None
    if selection.is_sweep(args) or getattr(args, "variant", None):
        from .outputs import sweep
        summary = sweep.summarize(results)
    render(results, env, args, summary)
    if args.plot and not getattr(args, "keep_plot", False):
        draw(results, env, args)
    return verdict(results) if judge else 0
