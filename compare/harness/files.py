"""Writing result files so that a failure never destroys what was there.

Every file the suite writes (tables, JSON, CSV, plots, asv results) goes through
:func:`write_atomically`: the content is written to a temporary file in the same folder and
renamed over the target, so an interrupted or failed write leaves the old file intact and never a
truncated one (a rename within one filesystem is atomic).
"""
from __future__ import annotations

import os
import tempfile
from typing import Callable


def write_atomically(path: str, write: Callable[[str], None]) -> None:
    """``write(tmp_path)`` fills a temporary file next to ``path``, which then replaces ``path``.
    The temporary name keeps ``path``'s suffix (matplotlib picks its format from it)."""
    parent = os.path.dirname(os.path.abspath(path))
    suffix = os.path.splitext(path)[1]
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{os.path.basename(path)}.", suffix=f".tmp{suffix}")
    os.close(fd)
    try:
        write(tmp)
        # mkstemp makes the file private (0600); a result file gets the mode any new file would.
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text_atomically(path: str, text: str) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "w") as f:
            f.write(text)
    write_atomically(path, write)
