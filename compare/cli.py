"""python -m compare: every family's kernels for a stage, on identical inputs, next to cuBLAS.

Exit codes: 0 every kernel that ran is ok; 1 some kernel FAILED its correctness check or errored
(raised, ran out of memory); 2 the run could not start (bad arguments or files, no GPU, a shape
that does not fit) or would check nothing (every selected kernel unsupported or skipped on every
shape). Everything that makes a run exit 2 is found before any GPU work.
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys

from typing import Optional

from .harness.errors import UsageError
from .harness.files import write_atomically

# Default shapes per group (the square and split-K shapes of the public anchors): naive stages are slow, so small cubes; the tiled
# ladder from 1024 to 8192 plus one odd size that exercises every tail path; split-K where K is
# far larger than M and N, so that M*N alone has too few tiles to fill the GPU.
DEFAULT_SHAPES = {
    "naive": ["256", "512", "1024"],
    "tiled": ["1024", "2048", "4096", "8192", "3001x2999x3003"],
    "split_k": ["256x256x131072", "512x512x65536", "1024x1024x16384"],
}
INTERPRET_SHAPES = ["77x65x300"]
# -o FILE without --format: the format its suffix names (anything else gets the table).
SUFFIX_FORMATS = {".json": "json", ".csv": "csv", ".md": "markdown", ".markdown": "markdown"}

EPILOG = """\
options: --opt [KERNEL:]NAME=VALUE sets one of a kernel's declared options (--list shows them);
  without KERNEL: it applies to every selected kernel that declares NAME. Every result row
  records the configuration that ran (the config column / field).
sweeps: --sweep NAME (named shape sets) or --shapes-file FILE (a list of shapes) run every
  selected kernel on every shape and end the output with a per-kernel summary (geomean / worst /
  best % of cuBLAS); with --plot, the sweep plot.
-o FILE without --format writes the format its suffix names (.json, .csv, .md; else the table).
exit codes: 0 every kernel that ran is ok; 1 some kernel FAILED its correctness check or errored
  (raised, ran out of memory); 2 the run could not start (bad arguments or files, no GPU, a shape
  that does not fit) or would check nothing (every selected kernel unsupported or skipped on every
  shape). Exit 2 is decided before any GPU work."""


def build_parser() -> argparse.ArgumentParser:
    from .harness.registry import GROUPS, FAMILIES, stage_choices
    from .harness.problem import PRECISIONS
    p = argparse.ArgumentParser(
        prog="python -m compare",
        description="Compare GEMM kernels (handwritten CUDA stages, Triton, cuBLAS) on identical inputs.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stage", default="all", metavar="STAGE",
                   help=f"a group ({', '.join(GROUPS)}), a stage name, or all; one of: {', '.join(stage_choices())}")
    p.add_argument("--shape", action="append", metavar="MxNxK",
                   help="problem shape, repeatable; one number means a cube (default: the group's shapes)")
    p.add_argument("--sweep", action="append", metavar="NAME",
                   help=f"a named shape set ({_shape_set_names()}); repeatable or comma-separated; not with --shape")
    p.add_argument("--shapes-file", metavar="FILE", help="shapes from a file (format: compare/harness/shapes.py); not with --shape")
    p.add_argument("--precision", action="append", metavar="P",
                   help=f"{' | '.join(PRECISIONS)}; repeatable (default fp32)")
    p.add_argument("--family", action="append", metavar="F",
                   help=f"{' | '.join(FAMILIES)}; repeatable or comma-separated (cuBLAS is always kept as the baseline)")
    p.add_argument("--kernel", action="append", metavar="NAME",
                   help="only these kernels (registry names; each must be in the --stage/--family selection); repeatable")
    p.add_argument("--opt", action="append", metavar="[KERNEL:]NAME=VALUE",
                   help="set a kernel option (repeatable); without KERNEL: for every selected kernel that declares NAME")
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--beta", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0, help="input seed (default 0)")
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
    p.add_argument("--budget", type=float, default=1.0, help="seconds of sampling per kernel and shape at most (default 1.0)")
    p.add_argument("--target-noise", type=float, default=0.005,
                   help="stop sampling when the median's relative standard error is below this (default 0.005)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
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
                   help="distributed sweeps: start no shape after SECONDS; the output holds the finished shapes "
                        "and --resume continues")
    return p


def _shape_set_names() -> str:
    try:
        from .harness.shapes import SHAPE_SETS
    except ImportError:
        return "see compare/harness/shapes.py"
    return ", ".join(SHAPE_SETS)


def _split(values: Optional[list]) -> list:
    from .harness.problem import split_flags
    return split_flags(values)


def _shape_texts(args, kernels) -> list[str]:
    """The shape strings this run uses: --shape, --sweep/--shapes-file, or the groups' defaults."""
    from .harness.registry import STAGE_BY_NAME
    if args.shape:
        return list(args.shape)   # not comma-split: "64,64,1024" is an error that says MxNxK
    if _is_sweep(args):
        return [f"{M}x{N}x{K}" for M, N, K in _sweep_shapes(args)]
    if args.interpret:
        return INTERPRET_SHAPES
    groups = {k.group for k in kernels if k.family != "cublas"}
    if args.stage in STAGE_BY_NAME:
        groups.add(STAGE_BY_NAME[args.stage].group)
    texts = []
    for g in ("naive", "tiled", "split_k"):
        if g in groups or args.stage in (g, "all"):
            texts += [t for t in DEFAULT_SHAPES[g] if t not in texts]
    return texts


def _is_sweep(args) -> bool:
    return bool(args.sweep or args.shapes_file or getattr(args, "distribution", None))


def _sweep_shapes(args) -> list[tuple]:
    """--sweep sets and --shapes-file shapes, in order, duplicates dropped."""
    from .harness import shapes
    return shapes.sweep_shapes(args.sweep, args.shapes_file, getattr(args, "distribution", None), args.interpret)


def _problems(args, kernels) -> list:
    from .harness.problem import Problem, ProblemError, parse_precisions, parse_shape
    problems = []
    try:
        precisions = parse_precisions(args.precision)
        for t in _shape_texts(args, kernels):
            M, N, K = parse_shape(t)
            for pr in precisions:
                problems.append(Problem(M, N, K, precision=pr, alpha=args.alpha, beta=args.beta, seed=args.seed))
    except ProblemError as e:
        raise UsageError(str(e)) from None
    return problems


def _pairs(args, kernels, problems):
    """Which kernel runs which problem. With default shapes, a kernel runs its own group's shapes
    (the naive stage is not run at 8192^3); cuBLAS runs all of them as the baseline."""
    from .harness.problem import parse_shape
    if args.shape or args.interpret or _is_sweep(args):
        return [(k, p) for p in problems for k in kernels]
    group_shapes = {g: {parse_shape(t) for t in ts} for g, ts in DEFAULT_SHAPES.items()}
    out = []
    for p in problems:
        for k in kernels:
            if k.family == "cublas" or (p.M, p.N, p.K) in group_shapes.get(k.group, set()):
                out.append((k, p))
    return out


def _select(args) -> list:
    """--stage / --family / --kernel -> the kernels to run. A --kernel outside the stage and family
    selection is an error naming both (it used to be dropped without a word)."""
    from .harness import registry
    families = _split(args.family) or None
    try:
        selected = registry.select(args.stage, families)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.interpret and families and "triton" not in families:
        raise UsageError(f"--interpret runs the Triton kernels only (the Triton interpreter on CPU tensors); "
                         f"--family {','.join(families)} selects none of them, so nothing would be checked")
    if args.kernel:
        names = _split(args.kernel)
        known = {k.name for k in registry.kernels()}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise UsageError(f"unknown kernel {unknown[0]!r}; known: {', '.join(sorted(known))}")
        in_sel = {k.name for k in selected}
        outside = [n for n in names if n not in in_sel]
        if outside:
            fam = f" --family {','.join(families)}" if families else ""
            raise UsageError(f"--kernel {outside[0]} is not in the selection of --stage {args.stage}{fam}; "
                             f"pick a --stage that shows it (e.g. --stage {registry.get(outside[0]).stage}) "
                             f"or drop --stage")
        selected = [k for k in selected if k.name in names or k.family == "cublas"]
    return selected


def _options(args, selected) -> dict:
    """--opt [KERNEL:]NAME=VALUE -> {kernel name: parsed options}, checked before any GPU work."""
    from .harness import registry
    raw = registry.opt_flags(args.opt, selected)
    by_name = {k.name: k for k in selected}
    # parse_options raises UsageError naming the kernel, the option and what is wrong
    return {kname: by_name[kname].parse_options(opts) for kname, opts in raw.items()}


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
    file = file or sys.stdout
    from .harness.registry import STAGES, kernels
    ks = kernels()
    print(f"{'#':>3}  {'stage':<19} {'group':<8} {'families':<16} {'precisions':<20} idea", file=file)
    print(f"{'':>3}  {'cublas':<19} {'(all)':<8} {'cublas':<16} {'fp32,tf32':<20} the baseline of every group", file=file)
    for s in STAGES:
        mine = [k for k in ks if k.stage == s.name]
        fams = sorted({k.family for k in mine})
        precs = sorted({p for k in mine for p in k.precisions}, key=["fp32", "tf32", "tf32x3"].index)
        print(f"{s.number:>3}  {s.name:<19} {s.group:<8} {','.join(fams) or '-':<16} {','.join(precs) or '-':<20} {s.idea}",
              file=file)
    print("\nkernels:", file=file)
    for k in ks:
        extra = f" ({k.variant})" if k.variant else ""
        print(f"  {k.name:<30} {k.family:<7} {k.stage:<19} {','.join(k.precisions):<18} {k.idea}{extra}", file=file)
        for o in k.options:
            print(f"  {'':<30}   --opt {k.name}:{o.name}=...  {o.help}", file=file)


def _progress(enabled: bool, total: int):
    """A rich progress bar on stderr, only when stderr is a terminal."""
    if not enabled or not sys.stderr.isatty():
        return None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    prog = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=Console(file=sys.stderr), transient=True)
    prog.start()
    prog.add_task("starting", total=total)
    return prog


def _writable_target(path: str, what: str) -> None:
    """``path`` can be written: not a directory, its directory exists and is writable."""
    if os.path.isdir(path):
        raise UsageError(f"{what} {path} is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{what} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: directory {parent} is not writable")


def _validate_files(args) -> None:
    """-o, --plot and --from-json are checked before anything runs, so a typo in a path never
    costs a GPU run's measurements."""
    if args.output:
        _writable_target(args.output, "-o")
        suffix = os.path.splitext(args.output)[1].lower()
        implied = SUFFIX_FORMATS.get(suffix)
        if args.format is None:
            args.format = implied or "table"
        elif implied and implied != args.format:
            raise UsageError(f"--format {args.format} contradicts -o {args.output} (a {suffix} file holds "
                             f"{implied}); drop --format or change the suffix")
    args.format = args.format or "table"
    if args.plot:
        try:
            import matplotlib  # noqa: F401
            from matplotlib.backend_bases import FigureCanvasBase
        except ImportError as exc:
            raise UsageError(f"--plot {args.plot}: matplotlib is not importable ({exc}); "
                             f"pip install matplotlib") from None
        suffix = os.path.splitext(args.plot)[1].lower().lstrip(".")
        kinds = FigureCanvasBase.get_supported_filetypes()
        if suffix not in kinds:
            raise UsageError(f"--plot {args.plot}: unknown image type {('.' + suffix) if suffix else '(no suffix)'}; "
                             f"use one of {', '.join('.' + k for k in sorted(kinds))}")
        _writable_target(args.plot, "--plot")
        if args.output and os.path.abspath(args.output) == os.path.abspath(args.plot):
            raise UsageError(f"-o and --plot name the same file {args.plot}")
        if args.check or args.interpret:
            raise UsageError(f"--plot draws times, and {'--check' if args.check else '--interpret'} "
                             f"measures none; drop one of them")


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
    """Results in args.format to -o or stdout; a sweep's summary table ends the output (json: a
    "summary" field; csv: on stderr, so the file stays one table)."""
    import io
    from .outputs import report
    text_summary = None
    if summary is not None:
        from .outputs import sweep
        text_summary = sweep.render_summary(summary, "markdown" if args.format == "markdown" else "table")
    if args.format == "json":
        text = report.to_json(results, env, command_line(args.argv), summary=summary)
    elif args.format == "csv":
        text = report.to_csv(results)
        if text_summary:
            sys.stderr.write(text_summary if text_summary.endswith("\n") else text_summary + "\n")
    elif args.format == "markdown":
        text = report.to_markdown(results, env)
        if text_summary:
            text += "\n" + text_summary
    elif args.output:
        buf = io.StringIO()
        report.to_table(results, env, buf)
        text = buf.getvalue() + (("\n" + text_summary) if text_summary else "")
    else:
        report.to_table(results, env, sys.stdout)
        text = ("\n" + text_summary) if text_summary else ""
    if text and text_summary and not text.endswith("\n"):
        text += "\n"
    _emit(text, args)


def draw(results, env, args) -> bool:
    """--plot; False (with a message, not a traceback) when the run has nothing to draw."""
    if not any(r.status == "ok" and r.tflops for r in results):
        print(f"error: --plot {args.plot} not written: no row has status ok and a time "
              f"(every kernel FAILED, errored or was not run)", file=sys.stderr)
        return False
    if _is_sweep(args):
        from .outputs.sweep import plot_sweep
        write_atomically(args.plot, lambda tmp: plot_sweep(results, tmp))
    else:
        from .outputs.plot import plot
        write_atomically(args.plot, lambda tmp: plot(results, tmp, gpu=env.get("gpu", "")))
    print(f"plot written to {args.plot}", file=sys.stderr)
    return True


def verdict(results) -> int:
    """The exit status of a finished (or loaded) run; see the module docstring."""
    from .harness import runner
    return runner.exit_status(results)


def main(argv: Optional[list] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--profile" in argv:
        # Nsight Compute counters beside each time: its own entry point with the same selection flags.
        from .outputs.profile import main as profile_main
        return profile_main([a for a in argv if a != "--profile"])
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = argv
    try:
        return _main(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def _main(args) -> int:
    if args.interpret:
        # Must happen before any Triton kernel module is imported: @triton.jit picks the
        # interpreter at decoration time.
        os.environ["TRITON_INTERPRET"] = "1"
    from .harness import registry, runner
    from .harness.problem import ProblemError

    if args.list:
        print_list()
        return 0
    if args.resources:
        from cuda_kernels import resources
        return resources.main(["--arch", args.arch])
    _validate_files(args)
    from .outputs.distributed import check_flags
    check_flags(args, _is_sweep(args))
    if args.from_json:
        from .outputs import report
        results, env = [], None
        for path in args.from_json:   # every file is read (and refused) before anything is rendered
            rows, file_env = report.load(path)
            results.extend(rows)
            env = env if env is not None else file_env
        if args.plot and not any(r.status == "ok" and r.tflops for r in results):
            raise UsageError(f"--plot: nothing to plot in {', '.join(args.from_json)}: no row has status ok and a time "
                             f"(a --check or --interpret run?)")
        return _report(results, env, args)

    if args.shape and _is_sweep(args):
        raise UsageError("--shape and --sweep/--shapes-file both set the shapes; use one")
    selected = _select(args)
    options = _options(args, selected)
    problems = _problems(args, selected)

    def skip(k):
        if args.interpret and not k.interpretable:
            return "needs a GPU (--interpret runs the Triton kernels only)"
        return None

    pairs = runner.baseline_pairs(_pairs(args, selected, problems))
    _check_something_runs(pairs, skip, selected)
    if args.workers is not None or args.cluster:
        from .outputs.distributed import run_from_cli
        return _report(*run_from_cli(args, pairs, skip, options), args)

    from .harness.inputs import gpu_available
    from .harness import gpuinfo
    if args.interpret:
        device, timing = "cpu", False
    else:
        if not gpu_available():
            raise UsageError("no CUDA GPU found (torch.cuda.is_available() is False). "
                             "To check the Triton kernels on the CPU, add --interpret.")
        device, timing = None, not args.check
        # Fail early, with the limit named, for a shape that can't fit.
        from .harness.inputs import check_fits
        import torch
        for p in problems:
            try:
                check_fits(p, torch.device("cuda"))
            except ProblemError as e:
                raise UsageError(str(e)) from None

    prog = _progress(not args.quiet, len(pairs))

    def progress(k, p):
        if prog:
            task = prog.task_ids[0]
            if prog.tasks[0].description != "starting":
                prog.advance(task)
            prog.update(task, description=f"{k.name} {p.shape} {p.precision}")

    try:
        results = runner.run(pairs, timing=timing, device=device, skip=skip, progress=progress, options=options,
                             measure_kw={"budget_s": args.budget, "target_noise": args.target_noise})
    finally:
        if prog:
            prog.stop()
    env = gpuinfo.environment().as_dict()
    if args.interpret:
        env["gpu"] = "none (Triton interpreter on CPU)"
    return _report(results, env, args)


def _report(results, env: dict, args) -> int:
    """Render (with the sweep summary when shapes came from a set or file), plot, exit code:
    the same for a measured run and a recorded one."""
    summary = None
    if _is_sweep(args):
        from .outputs import sweep
        summary = sweep.summarize(results)
    render(results, env, args, summary)
    if args.plot:
        draw(results, env, args)
    return verdict(results)
