"""GPU tests carry the `gpu` marker and skip cleanly without one. Without a GPU, the Triton
kernels run under the interpreter: TRITON_INTERPRET must be set before triton_kernels is
imported (@triton.jit decides at decoration time), so it is set here, first."""
import os

import pytest

try:
    import torch
    HAVE_GPU = torch.cuda.is_available()
except Exception:  # pragma: no cover
    HAVE_GPU = False

if not HAVE_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_collection_modifyitems(config, items):
    if HAVE_GPU:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
