"""Writing result files so that a failure never destroys what was there.

Every file the suite writes (tables, JSON, CSV, plots, asv results) goes through
:func:`write_atomically`: the content is written to a temporary file in the same folder and
renamed over the target, so an interrupted or failed write leaves the old file intact and never a
truncated one (a rename within one filesystem is atomic).
"""
from __future__ import annotations

import errno
import glob
import gzip
import os
import tempfile
from typing import Callable


# The temporary file's name: a dot, at most this much of the target's name, a random part and
# the target's suffix (when short: matplotlib reads the format from it). 1 + 40 + 1 + 8 + ".tmp"
# + 16 stays far below NAME_MAX (255 bytes on Linux), however long the target's own name is.
_STEM_CHARS = 40
_SUFFIX_CHARS = 16


def _temp_name_parts(path: str) -> tuple[str, str, str]:
    """(folder, prefix, suffix) of the temporary file that stands in for ``path``."""
    parent = os.path.dirname(os.path.abspath(path))
    suffix = os.path.splitext(path)[1]
    if len(suffix.encode()) > _SUFFIX_CHARS:
        suffix = ""
    stem = os.path.basename(path).encode()[:_STEM_CHARS].decode(errors="ignore")
    return parent, f".{stem}.", f".tmp{suffix}"


def prove_writable(path: str) -> None:
    """Create (and remove) the temporary file :func:`write_atomically` will use for ``path``, so
    a target that can't be written fails now, before any work, not after it. Raises OSError
    (e.g. a folder that refuses files, such as /proc; a name over NAME_MAX)."""
    parent, prefix, suffix = _temp_name_parts(path)
    try:
        limit = os.pathconf(parent, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):   # no pathconf (Windows) or no such folder
        limit = 255
    name = os.path.basename(path).encode()
    if len(name) > limit:
        raise OSError(errno.ENAMETOOLONG, f"file name is {len(name)} bytes, over the {limit} this filesystem allows")
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=prefix, suffix=suffix)
    os.close(fd)
    os.unlink(tmp)


def write_atomically(path: str, write: Callable[[str], None]) -> None:
    """``write(tmp_path)`` fills a temporary file next to ``path``, which then replaces ``path``.
    The temporary name keeps ``path``'s suffix (matplotlib picks its format from it) and stays
    short whatever ``path``'s length (:data:`_STEM_CHARS`)."""
    parent, prefix, suffix = _temp_name_parts(path)
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=prefix, suffix=suffix)
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


def open_text(path: str, **kwargs):
    """``path`` opened to read text; a name ending in .gz through gzip (the runs committed under
    results/ are gzipped JSON). ``kwargs``: open's (encoding, newline, errors)."""
    if path.endswith(".gz"):
        return gzip.open(path, "rt", **kwargs)
    return open(path, **kwargs)


def run_files(outdir: str, name: str) -> list[str]:
    """The runs reproduce/measure-ab (and its kind) wrote for ``name`` in ``outdir``:
    NAME-*.json and, as committed under results/, NAME-*.json.gz, sorted."""
    return sorted(glob.glob(os.path.join(outdir, f"{name}-*.json")) + glob.glob(os.path.join(outdir, f"{name}-*.json.gz")))
