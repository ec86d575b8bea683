"""--list: the stage ladder and every kernel with its options, each line within LIST_WIDTH
columns, or the terminal's (COLUMNS) when narrower: ideas and option help wrap under their own
column, or under a short indent when the columns before them leave too little room."""
from __future__ import annotations

import sys
import textwrap
from typing import Optional

from ..harness.registry import STAGES, kernels

LIST_WIDTH = 120
# Text wrapped after a head column gets at least this many columns, else it starts on a line of
# its own under a 6-column indent (a 60-column terminal: the ladder's head columns are 65 wide).
_MIN_TEXT = 24


def list_width(file) -> int:
    """LIST_WIDTH, or the terminal's width (COLUMNS when not a terminal) when narrower; 40 at least."""
    from .report import table_width
    return min(LIST_WIDTH, table_width(file))


def print_list(file=None) -> None:
    """The stage ladder and the kernels, every line within :func:`list_width` columns."""
    file = file or sys.stdout
    width = list_width(file)

    def out(head: str, text: str, indent: Optional[int] = None) -> None:
        indent = len(head) if indent is None else indent
        if width - max(len(head), indent) < _MIN_TEXT:
            lines = textwrap.wrap(head, width, subsequent_indent=" " * 5) if head.strip() else []
            lines += textwrap.wrap(text, width, initial_indent=" " * 6, subsequent_indent=" " * 6,
                                   break_on_hyphens=False)
        else:
            lines = textwrap.wrap(text, width, initial_indent=head, subsequent_indent=" " * indent,
                                  break_on_hyphens=False) or [head]
        for line in lines:
            print(line.rstrip(), file=file)

    ks = kernels()
    out(f"{'#':>3}  {'stage':<19} {'group':<8} {'families':<12} {'precisions':<17} ", "idea")
    out(f"{'':>3}  {'cublas':<19} {'(all)':<8} {'cublas':<12} {'fp32,tf32':<17} ", "the baseline of every group")
    for s in STAGES:
        mine = [k for k in ks if k.stage == s.name]
        fams = sorted({k.family for k in mine})
        precs = sorted({p for k in mine for p in k.precisions}, key=["fp32", "tf32", "tf32x3"].index)
        out(f"{s.number:>3}  {s.name:<19} {s.group:<8} {','.join(fams) or '-':<12} {','.join(precs) or '-':<17} ", s.idea)
    print(file=file)
    out("", "kernels (name, family, stage, precisions; then what it does and its --opt options):", indent=0)
    for k in ks:
        extra = f" ({k.variant})" if k.variant else ""
        out("  ", f"{k.name:<27} {k.family:<7} {k.stage:<19} {','.join(k.precisions)}", indent=4)
        out("      ", k.idea + extra)
        for o in k.options:
            out(f"      --opt {k.name}:{o.name}={o.placeholder}  ", o.help, indent=10)
