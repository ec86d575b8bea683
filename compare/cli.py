"""python -m compare: every family's kernels for a stage, on identical inputs, next to cuBLAS.

Exit codes: 0 all rows ok / unsupported / skipped; 1 a kernel FAILED its correctness check;
2 the run could not start (bad arguments, no GPU, a shape that does not fit).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Optional

# Default shapes per group (ANCHORS.md's shapes): naive stages are slow, so small cubes; the tiled
# ladder from 1024 to 8192 plus one odd size that exercises every tail path; split-K where K is
# far larger than M and N, so that M*N alone has too few tiles to fill the GPU.
DEFAULT_SHAPES = {
    "naive": ["256", "512", "1024"],
    "tiled": ["1024", "2048", "4096", "8192", "3001x2999x3003"],
    "split_k": ["256x256x131072", "512x512x65536", "1024x1024x16384"],
}
INTERPRET_SHAPES = ["77x65x300"]


class UsageError(Exception):
    pass


def build_parser() -> argparse.ArgumentParser:
    from .registry import GROUPS, FAMILIES, stage_choices
    from .problem import PRECISIONS
    p = argparse.ArgumentParser(
        prog="python -m compare",
        description="Compare GEMM kernels (handwritten CUDA stages, Triton, cuBLAS) on identical inputs.",
        epilog="Exit codes: 0 ok, 1 a kernel FAILED its correctness check, 2 could not run.")
    p.add_argument("--stage", default="all", metavar="STAGE",
                   help=f"a group ({', '.join(GROUPS)}), a stage name, or all; one of: {', '.join(stage_choices())}")
    p.add_argument("--shape", action="append", metavar="MxNxK",
                   help="problem shape, repeatable; one number means a cube (default: the group's shapes)")
    p.add_argument("--precision", action="append", metavar="P",
                   help=f"{' | '.join(PRECISIONS)}; repeatable (default fp32)")
    p.add_argument("--family", action="append", metavar="F",
                   help=f"{' | '.join(FAMILIES)}; repeatable or comma-separated (cuBLAS is always kept as the baseline)")
    p.add_argument("--kernel", action="append", metavar="NAME", help="only these kernels (registry names); repeatable")
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--beta", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0, help="input seed (default 0)")
    p.add_argument("--list", action="store_true", help="print the stage ladder and the registered kernels, then exit")
    p.add_argument("--resources", action="store_true",
                   help="registers, shared memory and spills of every CUDA kernel configuration (needs nvcc)")
    p.add_argument("--arch", default="sm_90", help="with --resources: target architecture (default sm_90)")
    p.add_argument("--check", action="store_true", help="correctness only, no timing")
    p.add_argument("--interpret", action="store_true",
                   help="no GPU needed: run the Triton kernels under TRITON_INTERPRET=1 on CPU tensors, correctness only")
    p.add_argument("--format", choices=("table", "csv", "json", "markdown"), default="table")
    p.add_argument("--output", "-o", metavar="FILE", help="write the formatted results here instead of stdout")
    p.add_argument("--plot", metavar="FILE.png|.svg", help="also draw TFLOP/s vs size and the %%-of-cuBLAS staircase")
    p.add_argument("--from-json", metavar="FILE", help="do not measure: load results written by --format json and render/plot them")
    p.add_argument("--budget", type=float, default=1.0, help="seconds of sampling per kernel and shape at most (default 1.0)")
    p.add_argument("--target-noise", type=float, default=0.005,
                   help="stop sampling when the median's relative standard error is below this (default 0.005)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    return p


def _split(values: Optional[list]) -> list:
    out = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def _problems(args, kernels) -> list:
    from .problem import PRECISIONS, Problem, ProblemError, parse_shape
    from .registry import STAGE_BY_NAME
    precisions = _split(args.precision) or ["fp32"]
    for pr in precisions:
        if pr not in PRECISIONS:
            raise UsageError(f"unknown precision {pr!r}; valid: {', '.join(PRECISIONS)}")
    if args.shape:
        texts = _split(args.shape)
    elif args.interpret:
        texts = INTERPRET_SHAPES
    else:
        groups = {k.group for k in kernels if k.family != "cublas"}
        if args.stage in STAGE_BY_NAME:
            groups.add(STAGE_BY_NAME[args.stage].group)
        texts = []
        for g in ("naive", "tiled", "split_k"):
            if g in groups or args.stage in (g, "all"):
                texts += [t for t in DEFAULT_SHAPES[g] if t not in texts]
    problems = []
    try:
        for t in texts:
            M, N, K = parse_shape(t)
            for pr in precisions:
                problems.append(Problem(M, N, K, precision=pr, alpha=args.alpha, beta=args.beta, seed=args.seed))
    except ProblemError as e:
        raise UsageError(str(e)) from None
    return problems


def _pairs(args, kernels, problems):
    """Which kernel runs which problem. With default shapes, a kernel runs its own group's shapes
    (the naive stage is not run at 8192^3); cuBLAS runs all of them as the baseline."""
    from .problem import parse_shape
    if args.shape or args.interpret:
        return [(k, p) for p in problems for k in kernels]
    group_shapes = {g: {parse_shape(t) for t in ts} for g, ts in DEFAULT_SHAPES.items()}
    out = []
    for p in problems:
        for k in kernels:
            if k.family == "cublas" or (p.M, p.N, p.K) in group_shapes.get(k.group, set()):
                out.append((k, p))
    return out


def print_list(file=None) -> None:
    file = file or sys.stdout
    from .registry import STAGES, kernels
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


def _emit(text: str, args) -> None:
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


def render(results, env, args) -> None:
    from . import report
    if args.format == "json":
        _emit(report.to_json(results, env, sys.argv), args)
    elif args.format == "csv":
        _emit(report.to_csv(results), args)
    elif args.format == "markdown":
        _emit(report.to_markdown(results, env), args)
    elif args.output:
        with open(args.output, "w") as f:
            report.to_table(results, env, f)
    else:
        report.to_table(results, env, sys.stdout)
    if args.plot:
        from .plot import plot
        plot(results, args.plot, title=f"{env.get('gpu', '')}  {' '.join(sys.argv[1:])}")
        print(f"plot written to {args.plot}", file=sys.stderr)


def main(argv: Optional[list] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
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
    from . import registry, runner
    from .problem import ProblemError

    if args.list:
        print_list()
        return 0
    if args.resources:
        from cuda_kernels import resources
        return resources.main(["--arch", args.arch])
    if args.from_json:
        from . import report
        results, env = report.load(args.from_json)
        render(results, env, args)
        return 1 if runner.any_failed(results) else 0

    try:
        selected = registry.select(args.stage, _split(args.family) or None)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if args.kernel:
        names = set(_split(args.kernel))
        known = {k.name for k in registry.kernels()}
        unknown = names - known
        if unknown:
            raise UsageError(f"unknown kernel {sorted(unknown)[0]!r}; known: {', '.join(sorted(known))}")
        selected = [k for k in selected if k.name in names or k.family == "cublas"]
    problems = _problems(args, selected)

    from .inputs import gpu_available
    from . import gpuinfo
    if args.interpret:
        device, timing = "cpu", False
    else:
        if not gpu_available():
            raise UsageError("no CUDA GPU found (torch.cuda.is_available() is False). "
                             "To check the Triton kernels on the CPU, add --interpret.")
        device, timing = None, not args.check
        # Fail early, with the limit named, for a shape that can't fit.
        from .inputs import check_fits
        import torch
        for p in problems:
            try:
                check_fits(p, torch.device("cuda"))
            except ProblemError as e:
                raise UsageError(str(e)) from None

    pairs = runner.baseline_pairs(_pairs(args, selected, problems))
    prog = _progress(not args.quiet, len(pairs))

    def progress(k, p):
        if prog:
            task = prog.task_ids[0]
            if prog.tasks[0].description != "starting":
                prog.advance(task)
            prog.update(task, description=f"{k.name} {p.shape} {p.precision}")

    def skip(k):
        if args.interpret and not k.interpretable:
            return "needs a GPU (--interpret runs the Triton kernels only)"
        return None

    try:
        results = runner.run(pairs, timing=timing, device=device, skip=skip, progress=progress,
                             measure_kw={"budget_s": args.budget, "target_noise": args.target_noise})
    finally:
        if prog:
            prog.stop()
    env = gpuinfo.environment().as_dict()
    if args.interpret:
        env["gpu"] = "none (Triton interpreter on CPU)"
    render(results, env, args)
    return 1 if runner.any_failed(results) else 0
