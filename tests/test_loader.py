"""cuda_kernels/loader.py's CuPy backend without a GPU: a stand-in ``cupy`` module records what
would reach NVRTC."""
from __future__ import annotations

import sys
import types

import pytest

from cuda_kernels import loader
from cuda_kernels.registry import SPECS, expressions


@pytest.fixture
def nvrtc_calls(monkeypatch):
    calls = []

    class RawModule:
        def __init__(self, code, options, name_expressions):
            calls.append(list(name_expressions))

        def get_function(self, name):
            return types.SimpleNamespace(name=name)
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(RawModule=RawModule))
    return calls


def test_one_configuration_is_compiled_alone_and_once(nvrtc_calls):
    spec = next(s for s in SPECS if s.file == "11_stream_k.cu")
    assert len(expressions(spec.file)) > 2
    backend = loader.CupyBackend()
    a, b = spec.configs[0], spec.configs[1]
    assert backend.function(spec.file, a, expressions(spec.file)).name == a.expr
    assert backend.function(spec.file, a, expressions(spec.file)).name == a.expr     # cached in the process
    assert backend.function(spec.file, b, expressions(spec.file)).name == b.expr
    # each compile instantiates only the configuration launched, never the file's whole list
    assert nvrtc_calls == [[a.expr], [b.expr]]


def test_an_undeclared_configuration_is_refused(nvrtc_calls):
    spec = next(s for s in SPECS if s.file == "10_split_k.cu")
    with pytest.raises(KeyError, match="not among the expressions"):
        loader.CupyBackend().function(spec.file, spec.configs[0], ())
    assert nvrtc_calls == []
