"""The command line the per-run table summaries share: each RUN.json[.gz] read, its rows of the
table (``rows_of(name, doc)``, name = the file's base name before the first dot) under one header,
printed, and with ``--out OUT.md`` also written atomically."""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from compare.harness.files import open_text, write_text_atomically  # noqa: E402


def main(argv: list, header: list, rows_of) -> None:
    out_path = None
    if "--out" in argv:
        i = argv.index("--out")
        out_path = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    lines = list(header)
    for path in argv:
        with open_text(path) as f:
            doc = json.load(f)
        lines += rows_of(os.path.basename(path).split(".")[0], doc)
    text = "\n".join(lines) + "\n"
    if out_path:
        write_text_atomically(out_path, text)
    print(text, end="")
