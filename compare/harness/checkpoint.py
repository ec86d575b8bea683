"""Rows stream to a JSONL checkpoint as they finish, so Ctrl-C, a timeout or a crash keeps them.

``python -m compare -o FILE`` appends each finished row (``Result.as_dict()``, one JSON object a
line, flushed) to ``FILE.partial.jsonl``. When the run completes and FILE has been written (atomically,
compare/harness/files.py), the checkpoint is deleted: FILE holds every row. When it does not complete
(Ctrl-C, a crash, a CI job killed at its time limit) the checkpoint stays, holding every row that
finished; ``python -m compare --from-json FILE.partial.jsonl`` renders it.
"""
from __future__ import annotations

import json
import os
from typing import Optional

SUFFIX = ".partial.jsonl"


def path_beside(output: str) -> str:
    return output + SUFFIX


class Checkpoint:
    def __init__(self, path: str):
        self.path = path
        self._file = None
        self.rows = 0

    @classmethod
    def beside(cls, output: Optional[str]) -> Optional["Checkpoint"]:
        """The checkpoint of a run writing ``output`` (None without -o: nothing to put it beside)."""
        return cls(path_beside(output)) if output else None

    def add(self, row) -> None:
        """Append one finished row (a Result) and flush it to the OS, so it survives this process."""
        if self._file is None:
            self._file = open(self.path, "w", encoding="utf-8")   # a previous run's checkpoint is replaced
        self._file.write(json.dumps(row.as_dict()) + "\n")
        self._file.flush()
        self.rows += 1

    def close(self) -> None:
        """Stop writing; the file stays (an interrupted run)."""
        if self._file is not None:
            self._file.close()
            self._file = None

    def finish(self) -> None:
        """The run completed and its output file is written: the checkpoint is redundant."""
        self.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def read_rows(text: str) -> list:
    """The rows of a checkpoint's text; a last line cut off mid-write (the process died) is dropped."""
    rows = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            raise
    return rows
