"""Triton's own cache key, computed once per Triton install instead of once per process.

Every process that launches a Triton kernel asks ``triton.runtime.cache.triton_key()`` before its
first launch: a SHA-256 over Triton's compiler sources and its ~100 MB ``libtriton`` shared
library. On the H100 box that was 0.42 s of a 5.5 s warm main command
(results/h100/main-command/warm-profile.txt), paid again by every worker, compile-ahead helper,
asv process and Dask worker. The key only changes when those files change, so this module keeps
it in a small file in Triton's cache directory, named by the files' paths, sizes and modification
times, and hands Triton that value: the same string ``triton_key()`` returns (a test checks),
and a new install or an edited Triton source names another file, so the key is computed again.

Triton does the same itself for the processes of its compile warm-up pool (it assigns
``triton.runtime.cache.triton_key = lambda: key`` in each). Anything unexpected (another Triton
layout, a read-only cache) leaves Triton's function in place: the cost is the 0.4 s, never a
wrong key.
"""
from __future__ import annotations

import hashlib
import os
import sys
from typing import Callable, Optional

# Modules that hold a reference to triton_key of their own (``from .cache import triton_key``).
_HOLDERS = ("triton.runtime.cache", "triton.runtime.autotuner", "triton.runtime.jit", "triton.compiler.compiler")


def _inputs(cache_module) -> list[str]:
    """The files triton_key() reads: cache.py, the compiler and backends packages, libtriton."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(cache_module.__file__)))
    files = [os.path.abspath(cache_module.__file__)]
    for sub in ("compiler", "backends"):
        for d, dirs, names in os.walk(os.path.join(root, sub)):
            dirs.sort()
            files += [os.path.join(d, n) for n in sorted(names) if n.endswith(".py")]
    lib = os.path.join(root, "_C")
    files += sorted(os.path.join(lib, n) for n in os.listdir(lib) if n.startswith("libtriton."))
    return files


def stat_digest(files: list[str]) -> str:
    h = hashlib.sha256()
    for f in files:
        st = os.stat(f)
        h.update(f"{f}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:32]


def key_file() -> str:
    """In Triton's cache directory (cleared with it), named by the stat digest of its inputs."""
    import triton.runtime.cache as cache

    from compare.harness.precompile import triton_cache_dir
    return os.path.join(triton_cache_dir(), "gemm-ladder-triton-key", stat_digest(_inputs(cache)))


def reuse() -> Optional[str]:
    """Install the stored key (computing and storing it on a miss); returns it, None when left alone."""
    try:
        import triton.runtime.cache as cache
        original: Callable[[], str] = cache.triton_key
        if getattr(original, "stored_key", None):
            return original.stored_key
        path = key_file()
        try:
            with open(path, encoding="utf-8") as f:
                key = f.read().strip()
        except OSError:
            key = ""
        if not key:
            key = original()
            _store(path, key)

        def stored():
            return key
        stored.stored_key = key
        for name in _HOLDERS:
            mod = sys.modules.get(name)
            if mod is not None and getattr(mod, "triton_key", None) is original:
                setattr(mod, "triton_key", stored)
        return key
    except Exception:
        return None


def _store(path: str, key: str) -> None:
    from compare.harness.files import write_atomically
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)

        def write(tmp):
            with open(tmp, "w", encoding="utf-8") as f:
                f.write(key)
        write_atomically(path, write)
    except OSError:      # a read-only cache: the next process computes it again
        pass
