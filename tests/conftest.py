"""GPU tests carry the `gpu` marker and skip cleanly without one. Without a GPU, the Triton
kernels run under the interpreter: TRITON_INTERPRET must be set before triton_kernels is
imported (@triton.jit decides at decoration time), so it is set here, first.

Other skips (no nvcc, no libnvrtc, no asv, no g++ ...) are for a developer's box that lacks a
tool. CI must never pass by skipping: with GEMM_LADDER_NO_SKIPS=1 (.ci/run sets it) any skip
that is not a `gpu`-marked test is reported as a failure naming the missing tool."""
import os
import re

import pytest

try:
    import torch
    HAVE_GPU = torch.cuda.is_available()
except Exception:  # pragma: no cover
    HAVE_GPU = False

if not HAVE_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")

NO_SKIPS_VAR = "GEMM_LADDER_NO_SKIPS"
NO_SKIPS = os.environ.get(NO_SKIPS_VAR) == "1"


def pytest_collection_modifyitems(config, items):
    if HAVE_GPU:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_report_header(config):
    """The versions that decide what the Triton interpreter accepts, on top of every run's log."""
    lines = []
    try:
        import triton
        lines.append(f"gemm-ladder: torch {torch.__version__}, triton {triton.__version__}, "
                     f"GPU: {'yes' if HAVE_GPU else 'no (TRITON_INTERPRET=1)'}")
    except Exception as e:  # pragma: no cover - the tests that need triton report it themselves
        lines.append(f"gemm-ladder: triton not importable: {e}")
    if NO_SKIPS:
        lines.append(f"{NO_SKIPS_VAR}=1: a skipped test that is not marked gpu fails the run")
    return lines


def _skip_reason(longrepr) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _fail_skip(report, what: str) -> None:
    report.outcome = "failed"
    report.longrepr = (f"{what} was skipped, but {NO_SKIPS_VAR}=1 says every test that is not marked "
                       f"gpu must run here (install the missing tool): {_skip_reason(report.longrepr)}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if NO_SKIPS and report.skipped and not hasattr(report, "wasxfail") and "gpu" not in item.keywords:
        _fail_skip(report, item.nodeid)


_GPU_MODULE = re.compile(r"^pytestmark\s*=.*\bmark\.gpu\b", re.M)


def _is_gpu_module(collector) -> bool:
    """A module marked gpu as a whole (`pytestmark = pytest.mark.gpu`) that skipped itself at
    import: it cannot be inspected as an object any more, so its source says what it is."""
    path = getattr(collector, "path", None)
    if path is None or not str(path).endswith(".py"):
        return False
    try:
        return _GPU_MODULE.search(open(path, encoding="utf-8").read()) is not None
    except OSError:
        return False


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    # a module that skips itself at import (allow_module_level); GPU modules skip without a GPU
    if NO_SKIPS and report.skipped and not (not HAVE_GPU and _is_gpu_module(collector)):
        _fail_skip(report, collector.nodeid)
