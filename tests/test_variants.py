"""python -m compare --variant: bad variants are usage errors named before any GPU work, grids
expand to the cross product of the kernel's declared values, and variant rows go through the
same run (checks, summary, formats) as every other row."""
import json
import pathlib

import pytest

from compare import cli
from compare.harness import registry, variants
from compare.harness.errors import UsageError


def _known():
    return {k.name: k for k in registry.kernels()}


def _names(texts):
    return [v.name for _, v in variants.resolve(texts, _known())]


def test_parse():
    assert variants.parse("triton.stream_k") == ("triton.stream_k", [])
    assert variants.parse(" triton.stream_k:grid=264|396, tile=64x128x32/4/3 ") == (
        "triton.stream_k", [("grid", ["264", "396"]), ("tile", ["64x128x32/4/3"])])
    for bad, why in ((":grid=2", "no kernel name"), ("triton.stream_k:grid", "not NAME=VALUE"),
                     ("triton.stream_k:grid=", "not NAME=VALUE"), ("triton.stream_k:grid=1|", "not NAME=VALUE"),
                     ("triton.stream_k:grid=1,grid=2", "given twice"), ("triton.stream_k:grid=*|2", "already means")):
        with pytest.raises(UsageError, match=why):
            variants.parse(bad)


def test_resolve_parses_options_with_the_kernels_declaration():
    (kernel, v), = variants.resolve(["cuda.11_stream_k:tile=64x64x16,grid=132"], _known())
    assert kernel.name == "cuda.11_stream_k" and v.name == "cuda.11_stream_k[tile=64x64x16,grid=132]"
    # the fixed options are the variant: --opt can no longer set them
    assert {o.name for o in v.options} == {o.name for o in kernel.options} - {"tile", "grid"}
    assert v.stage == kernel.stage and v.family == kernel.family


def test_kernel_alone_is_the_registered_kernel():
    (kernel, v), = variants.resolve(["triton.stream_k"], _known())
    assert v is kernel


def test_grid_is_the_cross_product_in_order():
    assert _names(["cuda.10_split_k:split_k=1|2|4,tile=128x128x16"]) == [
        f"cuda.10_split_k[split_k={s},tile=128x128x16]" for s in (1, 2, 4)]
    names = _names(["triton.stream_k:mode=dp|hybrid,grid=132|264"])
    assert names == ["triton.stream_k[mode=dp,grid=132]", "triton.stream_k[mode=dp,grid=264]",
                     "triton.stream_k[mode=hybrid,grid=132]", "triton.stream_k[mode=hybrid,grid=264]"]


def test_star_expands_to_the_declared_values():
    """tile=* is the CUDA stage's compiled tiles (StageSpec.tiles, the option's choices) and a
    Triton kernel's autotune configs (its tile option's candidates); a Triton choice option's *
    is its declared choices."""
    from cuda_kernels import registry as cuda_registry
    k = registry.get("cuda.09_double_buffered")
    tile = next(o for o in k.options if o.name == "tile")
    tiles = registry.declared_choices(tile)
    assert tiles == tuple(cuda_registry.TILES_09) and len(tiles) > 2
    assert tile.kind == "choice" and tile.choices == tiles   # declared as data, once
    assert _names(["cuda.11_stream_k:mode=*"]) == [f"cuda.11_stream_k[mode={m}]" for m in ("dp", "sk", "hybrid")]
    assert _names(["cuda.09_double_buffered:tile=*"]) == [f"cuda.09_double_buffered[tile={t}]" for t in tiles]
    from triton_kernels import _gemm, tiled
    want = list(dict.fromkeys(_gemm.config_name(c) for cs in tiled.CONFIGS.values() for c in cs))
    assert _names(["triton.tiled:tile=*"]) == [f"triton.tiled[tile={t}]" for t in want] and len(want) > 6
    modes = _names(["triton.stream_k:operands=*"])
    from triton_kernels import stream_k
    assert modes == [f"triton.stream_k[operands={m}]" for m in stream_k.OPERAND_CHOICES]


@pytest.mark.parametrize("texts, why", [
    (["triton.nope"], "unknown kernel 'triton.nope'"),
    (["cublas"], "baseline"),
    (["triton.stream_k:grid=2x"], "bad value '2x' for option 'grid'"),
    (["triton.stream_k:warp=4"], "has no option 'warp'"),
    (["triton.stream_k:warp=*"], "has no option 'warp'"),
    (["triton.stream_k:grid=*"], "declares no list of values"),
    (["triton.stream_k:grid=5", "triton.stream_k:grid=5"], "given twice"),
    (["triton.stream_k:grid=5|5"], "given twice"),
])
def test_bad_variants(texts, why):
    with pytest.raises(UsageError, match=why):
        variants.resolve(texts, _known())


def test_cli_refuses_before_any_gpu_work(capsys):
    # A bad option is reported (exit 2) before the GPU check: the message names the option.
    assert cli.main(["--variant", "triton.stream_k:grid=0", "--shape", "64x64x64"]) == 2
    assert "option 'grid'" in capsys.readouterr().err
    assert cli.main(["--variant", "triton.stream_k", "--kernel", "triton.tiled"]) == 2
    assert "drop --kernel" in capsys.readouterr().err
    assert cli.main(["--variant", "cuda.11_stream_k", "--family", "triton"]) == 2
    assert "selection" in capsys.readouterr().err


def test_variant_rows_run_through_the_cli_with_an_argument_file(tmp_path, monkeypatch, capsys):
    """An @FILE of one argument per line (comments allowed) runs as the same command; every
    variant is checked (status ok), labelled, and summarised on its own line."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    args = tmp_path / "x.args"
    out = tmp_path / "v.json"
    args.write_text("# two split counts of split-K and the tiled kernel as it comes\n--interpret\n"
                    "--shapes-file\n" + str(tmp_path / "shapes.txt") + "\n"
                    "--variant\ntriton.split_k:split_k=1|2\n--variant\ntriton.tiled\n\n"
                    "--format\njson\n-o\n" + str(out) + "\n")
    (tmp_path / "shapes.txt").write_text("33x17x200\n")
    assert cli.main(["@" + str(args)]) == 0
    doc = json.loads(out.read_text())
    rows = {r["kernel"]: r for r in doc["results"] if r["family"] != "cublas"}
    assert set(rows) == {"triton.split_k[split_k=1]", "triton.split_k[split_k=2]", "triton.tiled"}
    assert all(r["status"] == "ok" for r in rows.values())
    assert rows["triton.split_k[split_k=2]"]["config"]["split_k"] == 2
    assert rows["triton.split_k[split_k=1]"]["config"]["split_k"] == 1
    assert [e["kernel"] for e in doc["summary"]] == ["triton.split_k[split_k=1]", "triton.split_k[split_k=2]",
                                                      "triton.tiled"]


RESULTS = pathlib.Path(__file__).resolve().parent.parent / "results"


def test_results_hold_data_and_argument_files_only():
    """results/ keeps measurements (gzipped JSON too: a large run's raw rows), argument files and
    READMEs: no script, nothing that imports the package (a results folder is reproduced by the
    CLI, not by code of its own)."""
    data = (".json", ".json.gz", ".jsonl", ".csv", ".csv.gz", ".png", ".svg", ".md", ".txt", ".log", ".args")
    files = [p for p in RESULTS.rglob("*") if p.is_file()]
    assert files, "results/ not found"
    code = [str(p) for p in files if not p.name.endswith(data)]
    assert not code, code
    for p in files:
        if p.suffix in (".args", ".md"):
            text = p.read_text()
            assert "import compare" not in text and "from compare" not in text, p


@pytest.fixture
def registry_as_it_was():
    """A --plugin in an argument file registers kernels and stages for the rest of the process:
    put the registry back after the test, so later tests see the ladder alone."""
    import sys
    live = (registry._REGISTRY, registry.STAGE_BY_NAME, registry._PLUGINS, registry._BY_MODULE)
    saved = [dict(d) for d in live]
    stages = list(registry.STAGES)
    yield
    for name in set(registry._BY_MODULE) - set(saved[3]):     # the plugin modules this test imported
        sys.modules.pop(name, None)
    for d, old in zip(live, saved):
        d.clear()
        d.update(old)
    registry.STAGES[:] = stages


@pytest.mark.parametrize("path", sorted(str(p.relative_to(RESULTS.parent)) for p in RESULTS.rglob("*.args")))
def test_every_results_argument_file_runs_up_to_the_gpu(path, monkeypatch, capsys, registry_as_it_was):
    """Each results/**/*.args is a valid command of today's CLI: everything before the GPU work
    (flags, kernels, options, shapes) is accepted; it stops only for want of a GPU (or ncu)."""
    import compare.harness.inputs as inputs
    monkeypatch.setattr(inputs, "gpu_available", lambda: False)
    monkeypatch.chdir(RESULTS.parent)
    monkeypatch.setenv("PATH", "/nonexistent")      # --profile runs: ncu is never found
    assert cli.main(["@" + path]) == 2
    err = capsys.readouterr().err
    # (a kernel written for one GPU generation, stage 13, says so before the GPU check)
    assert "no CUDA GPU found" in err or "ncu (Nsight Compute)" in err or "no CUDA device here" in err, err
