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
import sys
import textwrap
from typing import Optional

from .harness import checkpoint, registry, worker
from .harness.errors import UsageError
# The shape catalogue (every default and named set) is compare/harness/shapes.py.
from .harness.shapes import INTERPRET_DEFAULTS as INTERPRET_SHAPES
from .outputs import selection   # the flags -> (kernel, problem) pairs
from .outputs import targets   # -o / --plot / --from-json: checked before any GPU work

# Imported inside the functions that need them: the outputs that import torch (local, render,
# report, distributed) and cuda_kernels, so that --help and --list start without them and the
# isolation worker starts before torch loads here (_start_worker_early); the modules of one flag
# (listing, dask_cluster, profile: 5-14 ms more on --help).

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
    "no row within --kernel-timeout a HUNG row; either way a fresh worker runs the next kernel.",
    "checkpoints: every run streams its rows, as they finish, to a checkpoint (--checkpoint FILE; default -o FILE "
    "+ .checkpoint.jsonl, which a run on one host deletes once FILE is written); an interrupted run keeps it, "
    "--resume FILE measures only the shapes it lacks (exit 2 if a flag that changes what is measured differs) and "
    "--from-json FILE renders its rows.",
    "exit codes: 0 every kernel that ran is ok; 1 some kernel FAILED its correctness check, errored (raised, ran "
    "out of memory), faulted (FAULT) or hung (HUNG); 2 the run could not start (bad arguments or files, no GPU, "
    "a shape that does not fit) or would check nothing (every selected kernel unsupported or skipped on every "
    "shape); 130 interrupted by Ctrl-C (the finished rows are kept in the checkpoint; an existing -o FILE is "
    "never replaced by them). Exit 2 is decided before any GPU work.",
])


class _EpilogFormatter(argparse.RawDescriptionHelpFormatter):
    """The description and epilog as paragraphs (one a line), each wrapped to the help's width."""

    def _fill_text(self, text, width, indent):
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
    # what the default table leaves out (it keeps one row to a 120-column line), on request
    p.add_argument("--show", action="append", choices=("config",), default=[],
                   help="config: also print each row's resolved configuration (always in the JSON/CSV)")
    # Isolation and watchdog: compare/harness/worker.py.
    p.add_argument("--in-process", action="store_true",
                   help="run the kernels in this process, not in a worker process (for a debugger or profiler; "
                        "a sticky CUDA error then fails every later kernel, and there is no --kernel-timeout)")
    p.add_argument("--kernel-timeout", type=_seconds, default=worker.DEFAULT_KERNEL_TIMEOUT_S, metavar="SECONDS",
                   help=f"a kernel x shape with no result after this long (compile + check + timing) is HUNG, "
                        f"its worker killed and replaced (default {worker.DEFAULT_KERNEL_TIMEOUT_S:g})")
    p.add_argument("--compile-jobs", type=_count, default=None, metavar="N",
                   help="before timing, compile the kernels not yet in the compile caches on the worker and N "
                        "helper processes (default: one per spare CPU core, at most 8; 0: compile as they run); "
                        "with --workers, on N helpers before the first shape goes to the cluster")
    # Scale-out sweeps on Dask and generated shape distributions (compare/outputs/distributed.py).
    p.add_argument("--distribution", action="append", metavar="NAME[:COUNT[:SEED]]",
                   help="a generated shape corpus (a sweep; compare/harness/shapes.py): loguniform, llm, "
                        "interpret_tiny (--interpret only); COUNT shapes (default 100) drawn with SEED (default 0)")
    p.add_argument("--workers", type=int, nargs="?", const=0, default=None, metavar="N",
                   help="run the sweep on an embedded Dask cluster: one worker per GPU (N default: every "
                        "visible GPU; with --interpret, N CPU workers, default 2). Needs the extra: pip install -e \".[dist]\"")
    p.add_argument("--cluster", metavar="ADDRESS", help="run the sweep on a running Dask scheduler (tcp://host:8786)")
    p.add_argument("--checkpoint", metavar="FILE.jsonl",
                   help="stream the rows here as they finish (default: -o FILE + .checkpoint.jsonl); an existing "
                        "FILE is continued only by --resume")
    p.add_argument("--resume", metavar="FILE.jsonl",
                   help="keep the shapes checkpoint FILE finished, measure the rest, append to FILE (a missing FILE "
                        "starts it; other flags for what is measured: exit 2)")
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
        print("interrupted before the results were written" + _kept_note(args), file=sys.stderr)
        return 130
    finally:
        worker.close_for_run(args)
        if getattr(args, "early_cluster", None):
            args.early_cluster.close()


def _kept_note(args) -> str:
    """Where the rows a run finished before Ctrl-C are: its checkpoint, if it wrote one."""
    path = None if args.from_json or args.list or args.resources else checkpoint.path_for(args)
    return f"; the finished rows are in {path} (--resume {path} continues)" if path and os.path.exists(path) else ""


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
    from .outputs import render
    return render.report(results, env, args)


def _run(args) -> int:
    """The selection measured (or checked): here, in the isolation worker (compare/outputs/local.py),
    or on Dask (--workers, --cluster: compare/outputs/distributed.py); rendered, with the run's
    exit status."""
    from .outputs import local, render
    dask_sweep = args.workers is not None or args.cluster
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
        return render.report(*run_from_cli(args, pairs, skip, options), args)
    return local.run(args, chosen, skip)
