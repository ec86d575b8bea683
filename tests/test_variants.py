"""python -m compare.outputs.variants: bad variants are usage errors named before any GPU work,
and a variant's label and parsed options are what the kernel's declared options make of it."""
import pytest

from compare.harness.errors import UsageError
from compare.outputs import variants


def test_parse_variant():
    assert variants.parse_variant("triton.stream_k") == ("triton.stream_k", {})
    assert variants.parse_variant(" triton.stream_k:grid=264, tile=64x128x32/4/3 ") == (
        "triton.stream_k", {"grid": "264", "tile": "64x128x32/4/3"})
    for bad, why in ((":grid=2", "no kernel name"), ("triton.stream_k:grid", "not NAME=VALUE"),
                     ("triton.stream_k:grid=", "not NAME=VALUE"), ("triton.stream_k:grid=1,grid=2", "given twice")):
        with pytest.raises(UsageError, match=why):
            variants.parse_variant(bad)


def test_resolve_parses_options_with_the_kernels_declaration():
    (lab, kernel, parsed), = variants.resolve(["cuda.11_stream_k:tile=64x64x16,sk_grid=132"])
    assert lab == "cuda.11_stream_k[tile=64x64x16,sk_grid=132]" and kernel.name == "cuda.11_stream_k"
    assert parsed == {"tile": "64x64x16", "sk_grid": 132}


@pytest.mark.parametrize("texts, why", [
    (["triton.nope"], "unknown kernel 'triton.nope'"),
    (["cublas"], "baseline"),
    (["triton.stream_k:grid=2x"], "bad value '2x' for option 'grid'"),
    (["triton.stream_k:warp=4"], "has no option 'warp'"),
    (["triton.stream_k:grid=5", "triton.stream_k:grid=5"], "given twice"),
])
def test_bad_variants(texts, why):
    with pytest.raises(UsageError, match=why):
        variants.resolve(texts)


def test_cli_refuses_before_any_gpu_work(capsys):
    # A bad option is reported (exit 2) before the GPU check: the message names the option.
    assert variants.main(["--variant", "triton.stream_k:grid=0", "--shape", "64x64x64"]) == 2
    assert "option 'grid'" in capsys.readouterr().err
    assert variants.main(["--variant", "triton.stream_k", "--shape", "64x64"]) == 2
    assert "64x64" in capsys.readouterr().err
    assert variants.main(["--variant", "triton.stream_k"]) == 2
    assert "no shapes" in capsys.readouterr().err
