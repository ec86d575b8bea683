"""python -m compare.outputs.variants: which of a kernel's options wins, on your shapes.

A sweep (``python -m compare --sweep``) runs each kernel as its heuristic configures it. This
command runs the same kernel several times over the same shapes, once per *variant* (a set of
its declared options, the ones ``--list`` shows and ``--opt`` takes), next to cuBLAS measured
in the same process, and prints the geometric mean / worst / best % of cuBLAS per variant:

    python -m compare.outputs.variants --sweep long_k --precision fp32 \\
        --variant triton.stream_k --variant triton.stream_k:grid=264 \\
        --variant "triton.stream_k:tile=64x128x32/4/3,grid=396" -o variants.json

``KERNEL`` alone is the kernel's default (its heuristic); ``KERNEL:NAME=VALUE[,NAME=VALUE]``
sets options. Every row goes through ``compare.harness.runner.run_kernel`` (checked against the float64
reference on a NaN-poisoned C before it is timed; a wrong variant is FAILED, never timed), and
its ``kernel`` column is the variant's label, its ``config`` what the kernel resolved. A row is
reproduced by ``python -m compare --kernel KERNEL --opt NAME=VALUE ... --shape MxNxK``.

Exit status as ``python -m compare``: 0 all rows ok, 1 a row FAILED or errored, 2 bad arguments,
no GPU, or nothing checked. Output is written atomically.
"""
from __future__ import annotations

import argparse
import shlex
import sys
from typing import Optional

from ..harness.errors import UsageError


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    """``KERNEL[:NAME=VALUE[,NAME=VALUE...]]`` -> (kernel name, raw options)."""
    name, _, rest = text.strip().partition(":")
    if not name:
        raise UsageError(f"--variant {text!r}: no kernel name (KERNEL[:NAME=VALUE,...])")
    raw: dict[str, str] = {}
    for item in (x.strip() for x in rest.split(",") if x.strip()):
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            raise UsageError(f"--variant {text!r}: {item!r} is not NAME=VALUE")
        if key.strip() in raw:
            raise UsageError(f"--variant {text!r}: option {key.strip()!r} given twice")
        raw[key.strip()] = value.strip()
    return name, raw


def label(name: str, raw: dict[str, str]) -> str:
    return name if not raw else name + "[" + ",".join(f"{k}={v}" for k, v in raw.items()) + "]"


def resolve(texts: list[str]):
    """Each --variant -> (label, Kernel, parsed options); unknown kernels and bad options are
    usage errors naming the variant, raised before any GPU work."""
    from ..harness import registry
    out, seen = [], set()
    for text in texts:
        name, raw = parse_variant(text)
        try:
            kernel = registry.get(name)
        except (KeyError, ValueError):
            known = ", ".join(k.name for k in registry.kernels())
            raise UsageError(f"--variant {text!r}: unknown kernel {name!r}; known: {known}") from None
        if kernel.family == "cublas":
            raise UsageError("--variant: cuBLAS is the baseline of every shape already")
        try:
            parsed = kernel.parse_options(raw)
        except (UsageError, ValueError) as e:
            raise UsageError(f"--variant {text!r}: {e}") from None
        lab = label(name, raw)
        if lab in seen:
            raise UsageError(f"--variant {text!r} given twice")
        seen.add(lab)
        out.append((lab, kernel, parsed))
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m compare.outputs.variants", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--variant", action="append", required=True, metavar="KERNEL[:NAME=VALUE,...]",
                   help="repeatable; KERNEL alone is its default configuration")
    p.add_argument("--shape", action="append", metavar="MxNxK", help="repeatable")
    p.add_argument("--sweep", action="append", metavar="SET", help="named shape sets (compare/harness/shapes.py), repeatable")
    p.add_argument("--shapes-file", metavar="FILE", help="shapes from a file (format: compare/harness/shapes.py)")
    p.add_argument("--precision", action="append", metavar="P", help="fp32 | tf32 | tf32x3 (default fp32), repeatable")
    p.add_argument("--alpha", type=float, default=1.0)
    p.add_argument("--beta", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budget", type=float, default=0.5, help="seconds of sampling per row at most (default 0.5)")
    p.add_argument("--format", choices=("table", "json", "markdown"), default=None,
                   help="default: table, or json when -o ends in .json")
    p.add_argument("--output", "-o", metavar="FILE")
    return p


def _shapes(args) -> list[tuple[int, int, int]]:
    from ..harness import shapes
    from ..harness.problem import ProblemError, parse_shape
    out: list = []
    try:
        for t in args.shape or []:
            out.append(parse_shape(t))
    except ProblemError as e:
        raise UsageError(str(e)) from None
    if args.sweep or args.shapes_file:
        out += shapes.sweep_shapes(args.sweep, args.shapes_file)
    uniq = list(dict.fromkeys(tuple(s) for s in out))
    if not uniq:
        raise UsageError("no shapes: give --shape, --sweep or --shapes-file")
    return uniq


def run(args) -> int:
    from ..harness import registry, runner
    from . import report, sweep
    from ..harness.files import write_text_atomically
    from ..harness.problem import Problem, ProblemError, parse_precisions

    variants = resolve(args.variant)
    shapes = _shapes(args)
    fmt = args.format or ("json" if (args.output or "").endswith(".json") else "table")
    try:
        precisions = parse_precisions(args.precision)
        problems = [Problem(M, N, K, precision=pr, alpha=args.alpha, beta=args.beta, seed=args.seed)
                    for (M, N, K) in shapes for pr in precisions]
    except ProblemError as e:
        raise UsageError(str(e)) from None
    from ..harness.inputs import gpu_available
    if not gpu_available():
        raise UsageError("no CUDA GPU found (torch.cuda.is_available() is False)")

    cublas = registry.get("cublas")
    measure_kw = {"budget_s": args.budget}
    results = []
    done_baselines = set()
    for p in problems:
        base = runner.baseline_problem(p)
        if base not in done_baselines:
            done_baselines.add(base)
            results.append(runner.run_kernel(cublas, base, measure_kw=measure_kw))
        for lab, kernel, parsed in variants:
            if p.precision not in kernel.precisions:
                continue
            r = runner.run_kernel(kernel, p, measure_kw=measure_kw, options=parsed)
            r.kernel = lab
            results.append(r)
            print(f"{lab:60s} {p.shape:>22s} {p.precision:6s} {r.status:8s} "
                  f"{'' if r.median_ms is None else f'{r.median_ms:.4f} ms'}", file=sys.stderr, flush=True)
    runner.fill_pct_cublas(results)
    summary = sweep.summarize(results)
    from ..harness import gpuinfo
    env = gpuinfo.environment().as_dict()
    command = "python -m compare.outputs.variants " + " ".join(shlex.quote(a) for a in args.argv)
    if fmt == "json":
        text = report.to_json(results, env, command=command, summary=summary)
    elif fmt == "markdown":
        text = report.to_markdown(results, env) + "\n" + sweep.render_summary(summary, "markdown")
    else:
        text = sweep.render_summary(summary, "table")
    if args.output:
        write_text_atomically(args.output, text)
        print(sweep.render_summary(summary, "table"))
    else:
        print(text)
    return runner.exit_status(results)


def main(argv: Optional[list] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        return run(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
