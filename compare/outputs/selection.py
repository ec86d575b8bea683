"""The selection flags, once, for every front end (``python -m compare`` and its ``--profile``).

``add_flags`` declares --stage, --family, --kernel, --variant, --shape, --sweep, --shapes-file,
--precision, --opt, --alpha, --beta and --seed; ``select`` turns them into what runs (a
``Selection``: kernels, options, problems and the (kernel, problem) pairs), raising
``UsageError`` (exit 2) before any GPU work. The CLI, its --workers sweeps, the profiler and the
scripts under reproduce/ all select through ``select``; ``kernels`` / ``options`` /
``shape_texts`` / ``problems`` / ``pairs`` are its steps.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Optional, Sequence

from ..harness import registry, shapes
from ..harness.errors import UsageError
from ..harness.problem import PRECISIONS, Problem, ProblemError, parse_precisions, parse_shape, split_flags
from ..harness.registry import FAMILIES, GROUPS, STAGE_BY_NAME
from ..harness.shapes import GROUP_DEFAULTS, INTERPRET_DEFAULTS
from ..harness.variants import resolve

# compare.harness.runner imports torch (~1 s): select imports it when it runs, so that --help and
# --list, which build these flags, start without it.

# -o FILE without --format: the format its suffix names (anything else gets the table).
SUFFIX_FORMATS = {".json": "json", ".csv": "csv", ".md": "markdown", ".markdown": "markdown"}


def add_flags(p: argparse.ArgumentParser, *, default_shapes: str, variants: bool = True) -> None:
    """The selection flags on ``p``; ``default_shapes`` says in --shape's help what runs without it."""
    p.add_argument("--stage", default="all", metavar="STAGE",
                   help=f"a group ({', '.join(GROUPS)}), a stage name (--list shows the ladder), or all")
    p.add_argument("--shape", action="append", metavar="MxNxK",
                   help=f"problem shape, repeatable; one number means a cube (default: {default_shapes})")
    p.add_argument("--sweep", action="append", metavar="NAME",
                   help=f"a named shape set ({', '.join(shapes.SHAPE_SETS)}); repeatable or comma-separated; not with --shape")
    p.add_argument("--shapes-file", metavar="FILE",
                   help="shapes from a file (format: compare/harness/shapes.py); not with --shape")
    p.add_argument("--precision", action="append", metavar="P",
                   help=f"{' | '.join(PRECISIONS)}; repeatable (default fp32)")
    p.add_argument("--family", action="append", metavar="F",
                   help=f"{' | '.join(FAMILIES)}; repeatable or comma-separated (cuBLAS is always kept as the baseline)")
    p.add_argument("--kernel", action="append", metavar="NAME",
                   help="only these kernels (registry names; each must be in the --stage/--family selection); repeatable")
    p.add_argument("--opt", action="append", metavar="[KERNEL:]NAME=VALUE",
                   help="set a kernel option (repeatable); without KERNEL: for every selected kernel that declares "
                        "NAME (refused where NAME means different things to different selected kernels)")
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--beta", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0, help="input seed (default 0)")
    if variants:
        p.add_argument("--variant", action="append", metavar="KERNEL[:NAME=VALUE,...]",
                       help="run KERNEL with these options as a kernel of its own (rows labelled KERNEL[NAME=VALUE]); "
                            "repeatable; NAME=V1|V2 one variant per value, NAME=* every declared value, several "
                            "NAME=... the cross product; replaces --kernel")


def split(values: Optional[list]) -> list:
    return split_flags(values)


def kernels(args, *, interpret: bool = False) -> list:
    """--stage / --family / --kernel / --variant -> the kernels to run (cuBLAS always kept). A
    --kernel outside the stage and family selection is an error naming both."""
    families = split(args.family) or None
    try:
        selected = registry.select(args.stage, families)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if interpret and families and not any(k.interpretable for k in selected):
        raise UsageError(f"--interpret runs the Triton kernels only (the Triton interpreter on CPU tensors); "
                         f"--family {','.join(families)} selects none of them, so nothing would be checked")
    if args.kernel:
        names = split(args.kernel)
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
    if getattr(args, "variant", None):
        if args.kernel:
            raise UsageError("--variant names its kernels; drop --kernel")
        pairs = resolve(args.variant, {k.name: k for k in registry.kernels()})
        in_sel = {k.name for k in selected}
        outside = [k.name for k, _ in pairs if k.name not in in_sel]
        if outside:
            raise UsageError(f"--variant {outside[0]} is not in the --stage {args.stage} / --family selection; "
                             f"drop or widen them")
        selected = [k for k in selected if k.family == "cublas"] + [v for _, v in pairs]
    return selected


def options(args, selected: list) -> dict:
    """--opt [KERNEL:]NAME=VALUE -> {kernel name: parsed options}, checked before any GPU work."""
    given: dict = {}
    for text in args.opt or []:
        lhs, eq, value = text.partition("=")
        key = tuple(x.strip() for x in lhs.rpartition(":")[::2])
        if eq and key in given and given[key] != value.strip():
            raise UsageError(f"--opt {lhs.strip()} is given twice ({lhs.strip()}={given[key]} and "
                             f"{lhs.strip()}={value.strip()}): keep one")
        given[key] = value.strip()
    raw = registry.opt_flags(args.opt, selected)
    by_name = {k.name: k for k in selected}
    # parse_options raises UsageError naming the kernel, the option and what is wrong
    return {kname: by_name[kname].parse_options(opts) for kname, opts in raw.items()}


def is_sweep(args) -> bool:
    return bool(getattr(args, "sweep", None) or getattr(args, "shapes_file", None)
                or getattr(args, "distribution", None))


def shape_texts(args, defaults: list) -> list[str]:
    """--shape (not comma-split: "64,64,1024" is an error that says MxNxK), else --sweep /
    --shapes-file (in order, duplicates dropped), else ``defaults``."""
    if args.shape and is_sweep(args):
        raise UsageError(f"--shape and {' and '.join(_sweep_flags(args))} both set the shapes; use one")
    if args.shape:
        return list(args.shape)
    if is_sweep(args):
        return [shapes.shape_text(s) for s in shapes.sweep_shapes(args.sweep, args.shapes_file,
                                                                  getattr(args, "distribution", None),
                                                                  getattr(args, "interpret", False))]
    return list(defaults)


# --interpret: the Triton interpreter runs about 1e7 FLOP/s per kernel on one CPU core (the six Triton
# kernels at 512^3: 132 s; docs/findings.md), so 2*512^3 (2.7e8, ~20 s a kernel, well inside the
# 120 s --kernel-timeout) is the largest shape it is given; every loguniform/llm shape (>= 1e9,
# compare/harness/shapes.py MIN_FLOPS) is far past it.
INTERPRET_MAX_FLOPS = 2 * 512**3


def check_interpretable(args, texts: list[str]) -> None:
    """--interpret: every shape small enough for the interpreter (INTERPRET_MAX_FLOPS) and for this
    host's free memory (compare/harness/problem.py device_bytes: operands, output, float64
    reference), said before any work with the flag that brought the shape."""
    flag = shapes_flag(args)
    free = host_free_bytes()
    for t in texts:
        try:
            M, N, K = parse_shape(t)
            need = Problem(M, N, K).device_bytes()    # operands, output, float64 reference: on the host here
        except ProblemError as e:
            raise UsageError(str(e)) from None
        work = 2 * M * N * K
        if work > INTERPRET_MAX_FLOPS:
            raise UsageError(f"{flag}: {M}x{N}x{K} is {work:.2g} FLOPs, too big for --interpret (the Triton "
                             f"interpreter on the CPU takes shapes up to 2*M*N*K = {INTERPRET_MAX_FLOPS:.2g}, "
                             f"e.g. 512x512x512; a GPU-size shape would run past --kernel-timeout)")
        if free is not None and need > free:
            raise UsageError(f"{flag}: {M}x{N}x{K} needs {need / 2**30:.2f} GiB of host memory (inputs, output and "
                             f"float64 reference) and this host has {free / 2**30:.2f} GiB available")


def host_free_bytes():
    """MemAvailable of /proc/meminfo (None where there is none: the check is then skipped)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _sweep_flags(args) -> list[str]:
    """The sweep flags given (for a message that names them)."""
    return [flag for flag, attr in (("--sweep", "sweep"), ("--shapes-file", "shapes_file"),
                                    ("--distribution", "distribution")) if getattr(args, attr, None)]


def shapes_flag(args) -> str:
    """The flag that set this run's shapes (for a message)."""
    return "--shape" if args.shape else " ".join(_sweep_flags(args)) or "--interpret"


def problems(args, texts: list[str]) -> list:
    """Every shape text at every --precision, with --alpha/--beta/--seed."""
    out = []
    try:
        precisions = parse_precisions(args.precision)
        for t in texts:
            M, N, K = parse_shape(t)
            for pr in precisions:
                out.append(Problem(M, N, K, precision=pr, alpha=args.alpha, beta=args.beta, seed=args.seed))
    except ProblemError as e:
        raise UsageError(str(e)) from None
    return out


def default_shape_texts(args, selected: list, *, interpret: bool = False) -> list[str]:
    """The shapes of a run given no shape flag: --interpret's small ones, else the default shapes
    of every group the selected kernels (and --stage) belong to, in the ladder's group order."""
    if interpret:
        return list(INTERPRET_DEFAULTS)
    groups = {k.group for k in selected if k.family != "cublas"}
    if args.stage in STAGE_BY_NAME:    # the families are loaded: the kernels are selected
        groups.add(STAGE_BY_NAME[args.stage].group)
    defaults: list[str] = []
    for g in GROUPS:
        if g in groups or args.stage in (g, "all"):
            defaults += [t for t in GROUP_DEFAULTS[g] if t not in defaults]
    return defaults


def pairs(args, selected: list, problems_: list, *, interpret: bool = False) -> list:
    """Which kernel runs which problem. With the groups' default shapes, a kernel runs its own
    group's shapes (the naive stage is not run at 8192^3); cuBLAS runs all of them as the baseline."""
    if args.shape or interpret or is_sweep(args):
        return [(k, p) for p in problems_ for k in selected]
    group_shapes = {g: {parse_shape(t) for t in ts} for g, ts in GROUP_DEFAULTS.items()}
    return [(k, p) for p in problems_ for k in selected
            if k.family == "cublas" or (p.M, p.N, p.K) in group_shapes.get(k.group, set())]


@dataclass(frozen=True)
class Selection:
    """What the selection flags chose: ``kernels`` (cuBLAS kept as the baseline), ``options``
    ({kernel name: parsed options}), ``problems`` (every shape at every precision) and ``pairs``
    ((kernel, problem) in the order they run)."""
    kernels: list
    options: dict
    problems: list
    pairs: list


def select(args, *, interpret: bool = False, default_shapes: Optional[Sequence[str]] = None,
           baseline: bool = True) -> Selection:
    """The flags -> what runs, every check made before any GPU work (in this order: kernels,
    options, shapes). ``default_shapes``: the shapes when no shape flag is given (None: the
    groups' defaults, ``default_shape_texts``, each kernel on its own group's). ``baseline``
    (python -m compare): cuBLAS runs every problem as the baseline (``runner.baseline_pairs``).
    ``baseline=False`` (the profiler): cuBLAS only as --kernel names it, every pair a kernel can't
    take left out, and ``options`` empty (the profiler parses --opt over the kernels that remain,
    keeping the text for its child)."""
    from ..harness.runner import baseline_pairs
    chosen = kernels(args, interpret=interpret)
    if baseline:
        opts = options(args, chosen)
    else:
        opts = {}
        if args.kernel:
            names = split(args.kernel)
            chosen = [k for k in chosen if k.name in names]
    texts = shape_texts(args, default_shape_texts(args, chosen, interpret=interpret)
                        if default_shapes is None else list(default_shapes))
    probs = problems(args, texts)
    if baseline:
        run = baseline_pairs(pairs(args, chosen, probs, interpret=interpret))
    else:
        run = [(k, p) for p in probs for k in chosen if not k.why_not(p)]
    return Selection(chosen, opts, probs, run)
