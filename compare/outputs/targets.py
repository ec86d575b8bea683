"""Where a run's results go and what a recorded run keeps: -o, --plot, --from-json and the
checkpoint (--checkpoint, --resume) checked before any GPU work (a typo in a path never costs a
measurement), and --from-json's rows narrowed by the same selection flags a measured run takes."""
from __future__ import annotations

import os

from ..harness import checkpoint
from ..harness.errors import UsageError
from ..harness.files import prove_writable
from ..harness.problem import ProblemError, parse_precisions, parse_shape
from . import selection
from .selection import SUFFIX_FORMATS

# Imported where used: matplotlib (optional; --plot checks it is there) and report (torch).


def writable_target(path: str, what: str) -> None:
    """``path`` can be written: not a directory, its directory exists and is writable."""
    if os.path.isdir(path):
        raise UsageError(f"{what} {path} is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{what} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: directory {parent} is not writable")
    if os.path.exists(path) and not os.path.isfile(path):
        raise UsageError(f"{what} {path} is not a regular file (a device, pipe or socket); it would be "
                         f"replaced by one: redirect stdout instead")
    try:   # the very temporary file the result will be written through, created and removed
        prove_writable(path)
    except OSError as exc:
        raise UsageError(f"{what} {path} can't be written: creating a file in {parent} failed "
                         f"({exc.strerror or exc})") from None


def validate(args) -> None:
    """-o, --plot and --from-json are checked before anything runs, so a typo in a path never
    costs a GPU run's measurements."""
    if args.output:
        writable_target(args.output, "-o")
        suffix = os.path.splitext(args.output)[1].lower()
        implied = SUFFIX_FORMATS.get(suffix)
        if args.format is None:
            args.format = implied or "table"
        elif implied and implied != args.format:
            raise UsageError(f"--format {args.format} contradicts -o {args.output} (a {suffix} file holds "
                             f"{implied}); drop --format or change the suffix")
    args.format = args.format or "table"
    check_checkpoint(args)
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
        writable_target(args.plot, "--plot")
        if args.output and os.path.abspath(args.output) == os.path.abspath(args.plot):
            raise UsageError(f"-o and --plot name the same file {args.plot}")
        if args.check or args.interpret:
            raise UsageError(f"--plot draws times, and {'--check' if args.check else '--interpret'} "
                             f"measures none; drop one of them")


def check_checkpoint(args) -> None:
    """The run's checkpoint (compare/harness/checkpoint.py) can be read (--resume of an existing
    file: a checkpoint of ours) and written, appended to and replaced in its folder; an existing
    one is continued only by --resume, never overwritten. Said now, not after the work started."""
    if args.from_json:
        if args.resume or args.checkpoint:
            raise UsageError("--from-json renders recorded rows and --resume/--checkpoint measure: "
                             "give the checkpoint to --from-json")
        return
    if args.resume and args.checkpoint and os.path.abspath(args.resume) != os.path.abspath(args.checkpoint):
        raise UsageError("--resume FILE continues FILE; --checkpoint names another file: use one")
    for flag, path in (("--resume", args.resume), ("--checkpoint", args.checkpoint)):
        if not path:
            continue
        if os.path.isdir(path):
            raise UsageError(f"{flag} {path} is a directory")
        if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise UsageError(f"{flag} {path}: its directory does not exist")
        if os.path.exists(path) and not os.access(path, os.R_OK | os.W_OK):
            raise UsageError(f"{flag} {path}: the file can't be read and written (permissions)")
        writable_target(path, flag)
        if args.output and os.path.abspath(args.output) == os.path.abspath(path):
            raise UsageError(f"-o and {flag} name the same file {path}")
    path = checkpoint.path_for(args)
    if path and os.path.exists(path):
        if not args.resume:
            raise UsageError(f"checkpoint {path} exists: continue it with --resume {path}, or remove it")
        checkpoint.read(path)       # a file that is no checkpoint of ours: said before any work


def filter_loaded(results, args) -> list:
    """--from-json with --shape/--stage/--family/--kernel/--precision: the loaded rows they
    select (cuBLAS rows kept as the baseline); exit 2 when they select none."""
    asked = [f for f, on in (("--shape", args.shape), ("--precision", args.precision), ("--kernel", args.kernel),
                             ("--family", args.family), ("--stage", args.stage != "all")) if on]
    if not asked:
        return results
    try:
        shapes = {parse_shape(t) for t in args.shape} if args.shape else None
        precisions = set(parse_precisions(args.precision)) if args.precision else None
    except ProblemError as e:
        raise UsageError(str(e)) from None
    kernels = None
    if args.kernel or args.family or args.stage != "all":
        # the live registry's selection, as a run would make it; cuBLAS only where asked for by
        # name (else its rows stay as the baseline of the rows kept)
        kernels = {k.name for k in selection.kernels(args, interpret=args.interpret) if k.family != "cublas" or "cublas" in selection.split(args.kernel)}
    from . import report
    kept = report.filter_rows(results, shapes, precisions, kernels)
    if not any(r.family != "cublas" for r in kept) and any(r.family != "cublas" for r in results):
        raise UsageError(f"--from-json {', '.join(args.from_json)}: no recorded row matches {' '.join(asked)} "
                         f"(the files hold {', '.join(sorted({r.shape for r in results}))}; "
                         f"kernels {', '.join(sorted({r.kernel for r in results}))})")
    return kept
