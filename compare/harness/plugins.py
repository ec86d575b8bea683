"""Kernels of your own: importing the files that declare them.

A plugin is a Python module that registers kernels with the registry's own API
(``compare.harness.registry.register(Kernel(...))``, or the helpers of
``compare.families.plugin``), exactly as a family module does. Two ways in, both opt-in:

* ``python -m compare --plugin MODULE_OR_PATH`` (repeatable): a dotted module name importable
  from the current directory, or a path to a ``.py`` file;
* an installed distribution's entry point in the group ``gemm_ladder.kernels`` (its value names
  the module), loaded with the families wherever the registry loads them: the CLI, the asv suite
  (benchmarks/gemm.py), the profiler.

This module only imports; :func:`compare.harness.registry.load_plugins` and the registry's family
loading call it and keep track of what each plugin registered.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from types import ModuleType

from .errors import UsageError

ENTRY_POINT_GROUP = "gemm_ladder.kernels"


def is_path(spec: str) -> bool:
    """A file path (ends in .py or names a directory), not a dotted module name."""
    return spec.endswith(".py") or os.sep in spec or (os.altsep is not None and os.altsep in spec)


def _module_name(path: str) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    tag = hashlib.sha1(path.encode()).hexdigest()[:8]
    return f"gemm_ladder_plugin_{stem.replace('-', '_')}_{tag}"


def import_plugin(spec: str) -> ModuleType:
    """Import one plugin, a module name or a path; a UsageError on one line names the plugin and
    what went wrong (missing file, import error, a declaration the registry refused)."""
    if is_path(spec):
        path = os.path.abspath(spec)
        if not os.path.isfile(path):
            raise UsageError(f"--plugin {spec}: no such file")
        name = _module_name(path)
        if name in sys.modules:
            return sys.modules[name]
        loader_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(loader_spec)
        sys.modules[name] = module          # dataclasses and @triton.jit look their module up
        try:
            loader_spec.loader.exec_module(module)
        except SystemExit as exc:
            del sys.modules[name]
            raise UsageError(f"--plugin {spec}: {_exit_line(exc)}") from None
        except Exception as exc:
            del sys.modules[name]
            raise UsageError(f"--plugin {spec}: {_first_line(exc)}") from exc
        return module
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)                # "importable from the current directory"
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as exc:
        if exc.name and spec.split(".")[0] == exc.name.split(".")[0]:
            raise UsageError(f"--plugin {spec}: no module named {exc.name!r} (give a module importable from "
                             f"the current directory or a path to a .py file)") from exc
        raise UsageError(f"--plugin {spec} ({_file_of(spec)}): {_first_line(exc)}") from exc
    except SystemExit as exc:
        raise UsageError(f"--plugin {spec} ({_file_of(spec)}): {_exit_line(exc)}") from None
    except Exception as exc:
        raise UsageError(f"--plugin {spec} ({_file_of(spec)}): {_first_line(exc)}") from exc


def _exit_line(exc: SystemExit) -> str:
    """A plugin that calls sys.exit() while it is imported: said as the plugin's fault (the run
    exits 2, not with the plugin's own code and no word)."""
    return f"called sys.exit({exc.code!r}) while being imported{_where(exc)}; a plugin only registers kernels"


def entry_points() -> list:
    """The installed plugins: entry points of ``ENTRY_POINT_GROUP``, sorted by name."""
    from importlib.metadata import entry_points as _eps
    return sorted(_eps(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def _file_of(spec: str) -> str:
    try:
        found = importlib.util.find_spec(spec)
    except Exception:
        found = None
    return getattr(found, "origin", None) or spec


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}{_where(exc)}"


def _where(exc: BaseException) -> str:
    """The " (line N)" of the plugin's own line that raised, when it is in the plugin."""
    where = ""
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_globals.get("__name__", "").startswith("gemm_ladder_plugin_"):
            where = f" (line {tb.tb_lineno})"
        tb = tb.tb_next
    return where
