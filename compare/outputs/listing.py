"""--list: the stage ladder and every kernel with its options, each line within LIST_WIDTH
columns (ideas and option help wrap under their own column), whatever the terminal."""
from __future__ import annotations

import sys
import textwrap
from typing import Optional

from ..harness.registry import STAGES, kernels

LIST_WIDTH = 120


def print_list(file=None) -> None:
    """The stage ladder and the kernels, every line within LIST_WIDTH columns (ideas and option
    help wrap under their own column)."""
    file = file or sys.stdout

    def out(head: str, text: str, indent: Optional[int] = None) -> None:
        indent = len(head) if indent is None else indent
        lines = textwrap.wrap(text, LIST_WIDTH, initial_indent=head, subsequent_indent=" " * indent,
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
    print("\nkernels (name, family, stage, precisions; then what it does and its --opt options):", file=file)
    for k in ks:
        extra = f" ({k.variant})" if k.variant else ""
        print(f"  {k.name:<27} {k.family:<7} {k.stage:<19} {','.join(k.precisions)}", file=file)
        out("      ", k.idea + extra)
        for o in k.options:
            out(f"      --opt {k.name}:{o.name}=...  ", o.help, indent=10)
