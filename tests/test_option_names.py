"""One name per concept across families (compare/harness/options.py RENAMED, docs/design.md "Option
names"): an old spelling given with --opt or --variant is refused naming the new one (exit 2, one
line), and saved rows and checkpoints written with old names are read with the new ones."""
from __future__ import annotations

import json

import pytest

from compare import cli
from compare.harness import checkpoint, registry, runner
from compare.harness.errors import UsageError
from compare.outputs import report


@pytest.mark.parametrize("argv, old, new", [
    (["--kernel", "cuda.13_wgmma_tma", "--opt", "b_operand=copy"], "b_operand", "b_transpose"),
    (["--kernel", "cuda.13_wgmma_tma", "--opt", "cuda.13_wgmma_tma:b_operand=copy"], "b_operand", "b_transpose"),
    (["--kernel", "cuda.13_wgmma_tma", "--opt", "b_operand=registers"], "b_operand=registers", "b_transpose=swap"),
    (["--kernel", "cuda.13_wgmma_tma", "--opt", "b_transpose=registers"], "b_transpose=registers",
     "b_transpose=swap"),
    (["--kernel", "triton.tiled", "--opt", "operands=direct"], "operands=direct", "operands=as_given"),
    (["--kernel", "triton.split_k", "--opt", "triton.split_k:operands=k_major"], "operands=k_major",
     "operands=k_major_b"),
    (["--family", "triton", "--opt", "operands=direct"], "operands=direct", "operands=as_given"),
    (["--variant", "cuda.13_wgmma_tma:b_operand=*"], "b_operand", "b_transpose"),
    (["--variant", "triton.tiled:operands=k_major|direct"], "operands=k_major", "operands=k_major_b"),
    (["--kernel", "triton.stream_k", "--opt", "mode=sk"], "mode=sk", "mode=hybrid"),
    (["--kernel", "triton.tiled", "--opt", "config=128x128x32/8/3"], "config", "tile"),
    (["--kernel", "triton.stream_k", "--opt", "triton.stream_k:sk=dp"], "sk", "mode"),
    (["--kernel", "cuda.11_stream_k", "--opt", "sk_grid=6"], "sk_grid", "grid"),
])
def test_an_old_spelling_is_refused_in_one_line_naming_the_new_one(argv, old, new, capsys):
    assert cli.main(argv + ["--shape", "64"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"`{old}` was renamed to `{new}`" in err[0], err


def test_a_value_is_renamed_only_where_the_kernel_lost_it():
    """triton.stream_k's operands=direct (copy only where 16-byte loads are impossible) is its own
    value, not triton.tiled's old direct (never copy, now as_given); so is CUDA's mode=sk."""
    assert registry.get("triton.stream_k").parse_options({"operands": "direct"}) == {"operands": "direct"}
    assert registry.get("triton.tiled").parse_options({"operands": "as_given"}) == {"operands": "as_given"}
    assert registry.get("cuda.13_wgmma_tma").parse_options({"b_transpose": "swap"}) == {"b_transpose": "swap"}
    # CUDA's mode=sk (every tile stream-K) is its own; triton.stream_k's old sk was the hybrid
    assert registry.get("cuda.11_stream_k").parse_options({"mode": "sk"}) == {"mode": "sk"}
    assert registry.get("triton.stream_k").parse_options({"mode": "hybrid"}) == {"mode": "hybrid"}
    with pytest.raises(UsageError, match="`operands=direct` was renamed to `operands=as_given`"):
        registry.get("triton.tiled").parse_options({"operands": "direct"})


def test_the_renamed_table_points_at_declared_names_and_no_kernel_declares_an_old_one():
    declared = {(o.name, c) for k in registry.kernels() for o in k.options for c in ("", *o.choices)}
    names = {n for n, _ in declared}
    for old, new in registry.RENAMED.items():
        name, _, value = new.partition("=")
        assert (name, value) in declared, f"{old} -> {new}: no kernel declares {new}"
        if "=" not in old:
            assert old not in names, f"{old} is declared again"


def test_b_transpose_means_one_thing_to_both_families():
    """B's path to the tensor cores: swap (C^T = B^T A^T, B^T the register operand) and copy (a
    K-major copy of B) are values of the one option b_transpose in CUDA stage 13 and Triton."""
    cuda = next(o for o in registry.get("cuda.13_wgmma_tma").options if o.name == "b_transpose")
    triton = next(o for o in registry.get("triton.stream_k").options if o.name == "b_transpose")
    assert set(cuda.choices) == {"swap", "copy"} and set(cuda.choices) <= set(triton.choices)


def _row(config):
    return runner.Result(kernel="cuda.13_wgmma_tma", family="cuda", stage="wgmma_tma", group="tiled", variant="",
                         shape="64x64x64", M=64, N=64, K=64, precision="tf32", alpha=1.0, beta=0.0, status="ok",
                         median_ms=1.0, tflops=1.0, config=config)


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_from_json_reads_old_config_keys_under_the_new_names(tmp_path, fmt):
    old = {"tile": "256x128x32s4.regb", "b_operand": "B read by TMA as stored", "split_k": 1}
    path = tmp_path / f"old.{fmt}"
    path.write_text(report.to_json([_row(old)], {"gpu": "test"}) if fmt == "json" else report.to_csv([_row(old)]))
    out = tmp_path / "new.json"
    assert cli.main(["--from-json", str(path), "-o", str(out)]) == 0
    config = json.loads(out.read_text())["results"][0]["config"]
    assert config == {"tile": "256x128x32s4.regb", "b_transpose": "B read by TMA as stored", "split_k": 1}


def test_a_checkpoint_written_with_old_option_names_resumes_with_the_new_ones(tmp_path):
    """A sweep checkpoint's header records the --opt texts and the variant labels; a --resume
    spelled as now (b_transpose=swap) matches a file written as b_operand=registers."""
    old = {"kernels": ["cuda.13_wgmma_tma[b_operand=registers]", "triton.tiled"],
           "options": ["cuda.13_wgmma_tma:b_operand=copy", "operands=direct"], "mode": "check"}
    new = {"kernels": ["cuda.13_wgmma_tma[b_transpose=swap]", "triton.tiled"],
           "options": ["cuda.13_wgmma_tma:b_transpose=copy", "operands=as_given"], "mode": "check"}
    path = tmp_path / "ck.jsonl"
    ck = checkpoint.Checkpoint(str(path), old, {})
    ck.add("64x64x64", [_row({"b_operand": "B copied"})], worker="w", attempts=1)
    ck.close()
    got = checkpoint.resume(str(path), new)
    assert list(got) == ["64x64x64"]
    assert report.row_from_dict(got["64x64x64"][0][0]).config == {"b_transpose": "B copied"}
    with pytest.raises(UsageError, match="other selection flags"):     # a real difference still refuses
        checkpoint.resume(str(path), dict(new, options=["cuda.13_wgmma_tma:b_transpose=swap"]))
