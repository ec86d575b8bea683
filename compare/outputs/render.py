"""A run's rows out: in the format asked for, to -o FILE (atomically) or stdout, closed by a
summary; --plot; and the run's exit status. The same for a measured run and a recorded one
(--from-json)."""
from __future__ import annotations

import io
import shlex
import sys

from ..harness import runner
from ..harness.files import write_atomically
from . import matrix, plot, selection, sweep
from . import report as rows


def emit(text: str, args) -> None:
    """``text`` to -o FILE (atomically) or stdout."""
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
    if getattr(args, "keep_output", False):    # interrupted: -o FILE is not replaced (compare/cli.py)
        return
    mark = f"INTERRUPTED (Ctrl-C): {env['interrupted']}\n" if env and env.get("interrupted") else ""
    width = rows.table_width(None if args.output else sys.stdout)
    md = args.format == "markdown"
    if summary is not None:
        text_summary = sweep.render_summary(summary, "markdown" if md else "table")
    else:
        text_summary = matrix.render(results, "markdown" if md else "table", width) or None
    shown = rows.config_view(results, width) if "config" in (args.show or []) else ""
    if args.format == "json":
        text = rows.to_json(results, env, command_line(args.argv), summary=summary, matrix=matrix.build(results))
    elif args.format == "csv":
        text = rows.to_csv(results)
        if text_summary:
            sys.stderr.write(text_summary if text_summary.endswith("\n") else text_summary + "\n")
    elif md:
        text = mark + rows.to_markdown(results, env)
        if text_summary:
            text += "\n" + text_summary
    elif args.output:
        buf = io.StringIO()
        rows.to_table(results, env, buf)
        text = buf.getvalue() + ("\n" + shown if shown else "") + (("\n" + text_summary) if text_summary else "")
        text = mark + text
    else:
        sys.stdout.write(mark)
        rows.to_table(results, env, sys.stdout)
        text = ("\n" + shown if shown else "") + (("\n" + text_summary) if text_summary else "")
    if text and text_summary and not text.endswith("\n"):
        text += "\n"
    emit(text, args)


def draw(results, env, args) -> bool:
    """--plot; False (with a message, not a traceback) when the run has nothing to draw."""
    if not any(r.status == "ok" and r.tflops for r in results):
        print(f"error: --plot {args.plot} not written: no row has status ok and a time "
              f"(every kernel FAILED, errored or was not run)", file=sys.stderr)
        return False
    if selection.is_sweep(args):
        title = plot.default_title([r for r in results if r.status == "ok" and r.tflops], env.get("gpu", ""))
        write_atomically(args.plot, lambda tmp: sweep.plot_sweep(results, tmp, title=title, env=env))
    else:
        write_atomically(args.plot, lambda tmp: plot.plot(results, tmp, gpu=env.get("gpu", ""), env=env))
    print(f"plot written to {args.plot}", file=sys.stderr)
    return True


def verdict(results) -> int:
    """The exit status of a finished (or loaded) run: compare/cli.py's docstring."""
    return runner.exit_status(results)


def report(results, env: dict, args, judge: bool = True) -> int:
    """Render (with the sweep summary when shapes came from a set or file), plot, exit code:
    the same for a measured run and a recorded one (an interrupted one: no exit code, ``judge``
    False)."""
    summary = None
    if selection.is_sweep(args) or getattr(args, "variant", None):
        summary = sweep.summarize(results)
    render(results, env, args, summary)
    if args.plot and not getattr(args, "keep_plot", False):
        draw(results, env, args)
    return verdict(results) if judge else 0
