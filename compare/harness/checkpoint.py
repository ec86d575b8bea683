"""The one checkpoint format: every run's rows stream to a JSONL file as they finish, so Ctrl-C, a
time limit or a crash keeps them, and ``--resume FILE`` measures only what FILE lacks.

A plain run, ``--variant`` and a Dask sweep (``--workers``, ``--cluster``) write the same file:
``--checkpoint FILE``, ``--resume FILE``, else ``-o FILE`` + ``.checkpoint.jsonl``. One JSON
object a line:

* a header, ``{"kind": "gemm-ladder checkpoint", "version": 1, "selection": {...}, "shapes": [...]}``:
  what the rows measured (:func:`measured`: kernels, precisions, options, alpha, beta, seed,
  mode, timing budget, noise target) and the run's shapes;
* per row, ``{"shape": S, "row": {...}}`` (``Result.as_dict()``), flushed as it finishes;
* per shape, once all its rows are written, ``{"done": S, "rows": n, ...}`` (fsynced; a sweep adds
  the worker and its wall time).

The unit of resume is the shape: a row's % of cuBLAS compares it with the cuBLAS row of its own
shape, measured in the same run. Reading back, a shape counts as finished only with its done
line and all its rows, so a file cut at any byte loses at most the shape being written; a last
line cut mid-write is dropped, and any other line that is not a checkpoint line, or a header of
another kind or version, is refused with one line (never rewritten). ``--from-json FILE`` renders
every whole row line, finished shape or not.

A plain run deletes the checkpoint beside ``-o FILE`` once FILE holds every row; a sweep keeps its
own (resuming it again measures nothing), and a file named by ``--checkpoint``/``--resume`` is kept.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Optional

from . import registry
from .errors import UsageError
from .files import write_atomically
from .options import renamed_selection

KIND = "gemm-ladder checkpoint"
# Sweeps wrote version 1 under this kind before plain runs shared the format: the same lines.
SWEEP_KIND = "gemm-ladder sweep checkpoint"
VERSION = 1
SUFFIX = ".checkpoint.jsonl"


def path_beside(output: str) -> str:
    return output + SUFFIX


def path_for(args) -> Optional[str]:
    """The run's checkpoint: --resume, --checkpoint, else beside -o FILE, else none."""
    output = getattr(args, "output", None)
    return args.resume or args.checkpoint or (path_beside(output) if output else None)


def is_default(args) -> bool:
    """The checkpoint is the one beside -o FILE (no --checkpoint/--resume named it)."""
    return not (args.resume or args.checkpoint)


def measured(args, pairs) -> dict:
    """What a checkpoint's rows depend on: a --resume with any other value is refused."""
    from .problem import parse_precisions
    return {"kernels": list(dict.fromkeys(k.name for k, _ in pairs)),
            "precisions": parse_precisions(args.precision), "options": args.opt or [],
            "alpha": args.alpha, "beta": args.beta, "seed": args.seed,
            "mode": "interpret" if args.interpret else "check" if args.check else "timing",
            "budget_s": args.budget, "target_noise": args.target_noise}


def group_by_shape(pairs) -> dict:
    """{shape text: [(kernel, problem)]}, shapes in the run's order, pairs in runner order."""
    out: dict = {}
    for k, p in pairs:
        out.setdefault(p.shape, []).append((k, p))
    return out


def _normalized(selection: dict) -> dict:
    return json.loads(json.dumps(selection, default=str, sort_keys=True))


def _as_dict(row) -> dict:
    return row if isinstance(row, dict) else row.as_dict()


@dataclass
class Contents:
    """A checkpoint read back: its header, every whole row line (file order) and the finished shapes."""
    header: dict
    rows: list = field(default_factory=list)          # [(shape, row dict)]
    done: dict = field(default_factory=dict)          # shape -> its done line (all its rows present)

    def finished(self) -> dict:
        """{shape: ([row dicts], done line)} of the shapes the file finished."""
        per: dict = {}
        for shape, row in self.rows:
            per.setdefault(shape, []).append(row)
        return {s: (per[s], line) for s, line in self.done.items()}


def is_checkpoint(text: str) -> bool:
    """``text`` starts with a checkpoint's header (of any version)."""
    try:
        head = json.loads(text.split("\n", 1)[0])
    except json.JSONDecodeError:
        return False
    return isinstance(head, dict) and head.get("kind") in (KIND, SWEEP_KIND)


def parse(text: str, where: str) -> Contents:
    """The checkpoint in ``text``; ``where`` ("--resume FILE") begins every UsageError's line."""
    lines = text.split("\n")
    if not is_checkpoint(text):
        raise UsageError(f"{where}: not a checkpoint (its first line is no {KIND!r} header)")
    head = json.loads(lines[0])
    if head.get("version") != VERSION:
        raise UsageError(f"{where}: checkpoint version {head.get('version')!r}, and this suite reads "
                         f"version {VERSION} only (written by another version of gemm-ladder?)")
    out = Contents(head)
    counts: dict = {}
    last = max((i for i, line in enumerate(lines) if line.strip()), default=0)
    for i, line in enumerate(lines[1:], start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            if i == last:
                continue                 # the line being written when the run was stopped
            obj = None
        if not isinstance(obj, dict) or not ("row" in obj and "shape" in obj or "done" in obj):
            # resuming would rewrite the file without it: refused instead, the file left as it is
            raise UsageError(f"{where}: line {i + 1} is not a checkpoint line ({line[:40]!r}); "
                             f"the file was edited or damaged: fix or remove that line")
        if "row" in obj:
            out.rows.append((obj["shape"], obj["row"]))
            counts[obj["shape"]] = counts.get(obj["shape"], 0) + 1
        elif counts.get(obj["done"]) == obj.get("rows"):
            out.done[obj["done"]] = obj
    return out


def read(path: str, flag: str = "--resume") -> Contents:
    """The checkpoint at ``path`` (UsageError naming ``flag`` and the file when it can't be read or
    is no checkpoint)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{flag} {path}: cannot read it: {exc}") from None
    return parse(text, f"{flag} {path}")


def refuse_changes(path: str, contents: Contents, selection: dict) -> None:
    """A UsageError naming every field of ``selection`` that differs from the file's header."""
    want, have = _normalized(selection), contents.header.get("selection") or {}
    # a file from before an option was renamed: its flags as spelled now
    have = renamed_selection(have, registry.options_of)
    diff = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
    if diff:
        shown = "; ".join(f"{k}: file {have.get(k)!r}, now {want.get(k)!r}" for k in diff)
        raise UsageError(f"--resume {path} was made with other selection flags ({shown}); "
                         f"rerun with the same flags or start a new checkpoint")


def resume(path: str, selection: dict) -> dict:
    """--resume: {shape: ([row dicts], done line)} of the shapes the file finished; a UsageError
    when it was made with a different selection or is no checkpoint."""
    contents = read(path)
    refuse_changes(path, contents, selection)
    return contents.finished()


def kept_shapes(path: str, resuming: bool, selection: dict, shapes) -> dict:
    """The shapes a run takes from its checkpoint: with --resume, the ones the file finished
    ({shape: ([row dicts], done line)}, said on stderr); a new checkpoint none, and an existing
    file without --resume is refused (never overwritten)."""
    if resuming and os.path.exists(path):
        kept = resume(path, selection)
        print(f"resume: {len(kept)} finished shapes in {path} ({sum(s in kept for s in shapes)} of this "
              f"run's {len(shapes)})", file=sys.stderr)
        return kept
    if os.path.exists(path):
        raise UsageError(f"checkpoint {path} exists: continue it with --resume {path}, or remove it")
    return {}


def finished_shapes(path: str) -> set:
    """The shapes ``path`` finished, read without the selection (empty for a file that can't be
    read or is no checkpoint: whoever resumes it says why)."""
    try:
        return set(read(path).done)
    except UsageError:
        return set()


class Checkpoint:
    """Writes the file: the header and the ``kept`` shapes at once (atomically: a resumed file
    loses its unfinished shape's lines), then rows as they come. ``expect``: {shape: number of
    rows} of a run that adds one row at a time (:meth:`add_row`), so each shape's done line is
    written after its last row; a sweep adds a whole shape at a time (:meth:`add`)."""

    def __init__(self, path: str, selection: dict, kept: dict, shapes=(), expect: Optional[dict] = None):
        self.path = path
        self.rows = 0                        # rows written by this run
        self.kept_rows = sum(len(rows) for rows, _ in kept.values())
        self._expect = dict(expect or {})
        self._left = dict(self._expect)

        def write(tmp):
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(json.dumps({"kind": KIND, "version": VERSION, "selection": _normalized(selection),
                                    "shapes": list(shapes)}) + "\n")
                for shape, (rows, done) in kept.items():
                    f.write(self._lines(shape, rows) + json.dumps(done) + "\n")
        write_atomically(path, write)
        self._file = open(path, "a", encoding="utf-8")

    @staticmethod
    def _lines(shape: str, rows) -> str:
        return "".join(json.dumps({"shape": shape, "row": _as_dict(r)}, default=str) + "\n" for r in rows)

    def _sync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def add_row(self, row) -> None:
        """One finished row, flushed to the OS (it survives this process); its shape's done line
        after its last row."""
        self._file.write(self._lines(row.shape, [row]))
        self.rows += 1
        left = self._left.get(row.shape)
        if left is None:
            self._file.flush()
            return
        self._left[row.shape] = left - 1
        if left == 1:
            self._file.write(json.dumps({"done": row.shape, "rows": self._expect[row.shape]}) + "\n")
            self._sync()
        else:
            self._file.flush()

    def add(self, shape: str, rows, **done) -> None:
        """A whole shape: its rows and its done line (``done`` adds fields to it), fsynced."""
        self._file.write(self._lines(shape, rows) + json.dumps({"done": shape, "rows": len(rows), **done}) + "\n")
        self.rows += len(rows)
        self._sync()

    def close(self) -> None:
        """Stop writing; the file stays (an interrupted run, or a sweep's)."""
        if not self._file.closed:
            self._file.close()

    def remove(self) -> None:
        """The run's output holds every row: the checkpoint is redundant."""
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
