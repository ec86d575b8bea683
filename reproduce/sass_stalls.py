"""Where a kernel's warps stall, per SASS instruction, from Nsight Compute's source page:

    ncu -k regex:KERNEL -c 1 --section WarpStateStats --section SourceCounters --page source \\
        --print-source sass --csv python -m compare ... > RUN.csv        (gzip it if you like)
    python reproduce/sass_stalls.py RUN.csv[.gz] [RUN2.csv ...] [--top N]

Per file: the share of all warp stall samples by reason and by opcode, then the N instructions
with the most samples and their main reasons (each over a fifth of that instruction's samples).
Exit status: 0; 2 when a file has no source table (the ncu command lacked --page source --csv).
"""
from __future__ import annotations

import collections
import csv
import io
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository's compare package
from compare.harness.files import open_text  # noqa: E402

SAMPLES = "Warp Stall Sampling (All Samples)"


def read_rows(path: str) -> list[dict]:
    """The source table's rows (ncu prints its own log lines above the CSV header)."""
    with open_text(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith('"Address"')), None)
    if start is None:
        return []
    return list(csv.DictReader(io.StringIO("\n".join(lines[start:]))))


def _int(text) -> int:
    try:
        return int(float(text))
    except (TypeError, ValueError):
        return 0


def opcode(source: str) -> str:
    """The instruction's opcode without its modifiers or predicate: '@P0 BRA x' -> 'BRA'."""
    words = source.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def summary(rows: list[dict], top: int = 10) -> list[str]:
    reasons = [k for k in rows[0] if k.startswith("stall_") and "Not Issued" not in k]
    total = sum(_int(r.get(SAMPLES)) for r in rows) or 1
    by_reason: collections.Counter = collections.Counter()
    by_op: collections.Counter = collections.Counter()
    for r in rows:
        by_op[opcode(r["Source"])] += _int(r.get(SAMPLES))
        for k in reasons:
            by_reason[k[len("stall_"):]] += _int(r.get(k))
    out = [f"samples {total}, instructions {len(rows)}",
           "by reason: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in by_reason.most_common(8)),
           "by opcode: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in by_op.most_common(8))]
    for r in sorted(rows, key=lambda r: -_int(r.get(SAMPLES)))[:top]:
        s = _int(r.get(SAMPLES))
        main = ", ".join(f"{k[len('stall_'):]} {_int(r[k])}" for k in reasons if s and _int(r.get(k)) > 0.2 * s)
        out.append(f"  {100 * s / total:5.1f}%  {r['Source'].strip()[:64]:64s}  {main}")
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    top = 10
    if "--top" in argv:
        i = argv.index("--top")
        top = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    status = 0
    for path in argv:
        rows = read_rows(path)
        print(f"== {path}")
        if not rows:
            print("no source table (run ncu with --page source --print-source sass --csv)")
            status = 2
            continue
        print("\n".join(summary(rows, top)))
    return status


if __name__ == "__main__":
    sys.exit(main())
