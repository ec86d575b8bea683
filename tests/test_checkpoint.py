"""The one checkpoint (compare/harness/checkpoint.py) on a run on one host: a plain run and
--variant stream their rows to it, --resume measures only the shapes it lacks and refuses a
change of what is measured, --from-json reads it; and the one progress reporter's lines.

No kernel really runs: runner.run is the real one, its ``execute`` a stand-in that returns an ok
row (and raises KeyboardInterrupt where a test says), so each test takes a fraction of a second."""
from __future__ import annotations

import io
import json
import os
import types

import pytest

from compare.cli import main
from compare.harness import checkpoint, runner
from compare.harness.problem import Problem
from compare.harness.runner import Result
from compare.outputs.progress import Progress

RUN = ["--interpret", "--in-process", "--kernel", "triton.stream_k",
       "--shape", "8x8x8", "--shape", "16x8x8", "--shape", "24x8x8"]
# cuBLAS is skipped under --interpret (no execute call): the calls are stream-K's, one a shape
ROWS = [(k, s) for s in ("8x8x8", "16x8x8", "24x8x8") for k in ("cublas", "triton.stream_k")]


@pytest.fixture
def kernels(monkeypatch):
    """runner.run as the CLI calls it, with a stand-in ``execute``: ``calls`` records each pair it
    ran ("name shape"); ``stop_at`` (a call number, 1-based) raises Ctrl-C there."""
    real = runner.run
    state = types.SimpleNamespace(calls=[], stop_at=None)

    def execute(k, p, **kw):
        state.calls.append(f"{k.name} {p.shape}")
        if state.stop_at == len(state.calls):
            raise KeyboardInterrupt
        return runner.blank_row(k, p, runner.OK)

    def run(pairs, **kw):
        kw["execute"] = execute
        return real(pairs, **kw)
    monkeypatch.setattr(runner, "run", run)
    monkeypatch.setenv("TRITON_INTERPRET", os.environ.get("TRITON_INTERPRET", "1"))
    return state


def _interrupted_run(kernels, tmp_path, extra=()):
    """RUN -o r.json, Ctrl-C as stream-K starts its second shape: shape 8x8x8 finished, 16x8x8's
    cuBLAS row written without its done line."""
    out = tmp_path / "r.json"
    kernels.stop_at = 2
    assert main(RUN + list(extra) + ["-q", "-o", str(out)]) == 130
    kernels.calls.clear()
    kernels.stop_at = None
    return out, str(out) + ".checkpoint.jsonl"


def _err_lines(capsys) -> list:
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    return [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("running ")]


def test_a_plain_run_resumes_where_ctrl_c_stopped_it(kernels, tmp_path, capsys):
    out, ck = _interrupted_run(kernels, tmp_path)
    got = checkpoint.read(ck)
    assert got.header["kind"] == "gemm-ladder checkpoint" and got.header["shapes"] == ["8x8x8", "16x8x8", "24x8x8"]
    assert got.header["selection"]["seed"] == 0 and got.header["selection"]["mode"] == "interpret"
    assert [(r["kernel"], s) for s, r in got.rows] == ROWS[:3] and list(got.done) == ["8x8x8"]
    assert f"kept in {ck} (--resume {ck}" in _err_lines(capsys)[0]

    # the same command again would replace what was measured: refused, nothing run
    assert main(RUN + ["-q", "-o", str(out)]) == 2
    assert f"--resume {ck}" in _err_lines(capsys)[0] and kernels.calls == []

    assert main(RUN + ["-o", str(out), "--resume", ck]) == 0
    assert kernels.calls == ["triton.stream_k 16x8x8", "triton.stream_k 24x8x8"]     # 8x8x8 not again
    doc = json.loads(out.read_text())
    assert [(r["kernel"], r["shape"]) for r in doc["results"]] == ROWS and "interrupted" not in doc["environment"]
    assert doc["environment"]["resumed"] == {"checkpoint": ck, "shapes": 1}
    # the one progress reporter counts the resumed rows: the run starts at the 3rd of 6
    assert [ln.split("]")[0] for ln in _err_lines(capsys) if ln.startswith("[")] == ["[3/6", "[4/6", "[5/6", "[6/6"]
    # the file named by --resume stays, each shape once with its done line (16x8x8's cut rows dropped)
    got = checkpoint.read(ck)
    assert [(r["kernel"], s) for s, r in got.rows] == ROWS and list(got.done) == ["8x8x8", "16x8x8", "24x8x8"]


@pytest.mark.parametrize("flag, field", [(["--seed", "1"], "seed"), (["--beta", "0.5"], "beta"),
                                         (["--precision", "tf32"], "precisions"), (["--budget", "3"], "budget_s")])
def test_a_plain_resume_refuses_a_change_of_what_is_measured(kernels, tmp_path, capsys, flag, field):
    _, ck = _interrupted_run(kernels, tmp_path)
    capsys.readouterr()
    before = open(ck).read()
    assert main(RUN + flag + ["-q", "--resume", ck]) == 2
    (line,) = _err_lines(capsys)
    assert f"other selection flags ({field}: file " in line, line
    assert kernels.calls == [] and open(ck).read() == before       # nothing run, the file untouched


def test_a_variant_run_resumes_and_refuses_another_variant(kernels, tmp_path, capsys):
    variant = ["--variant", "triton.stream_k:grid=2|3"]
    run = [a for a in RUN if a not in ("--kernel", "triton.stream_k")]
    out = tmp_path / "v.json"
    kernels.stop_at = 3      # grid=2 and grid=3 on 8x8x8, then Ctrl-C on 16x8x8
    assert main(run + variant + ["-q", "-o", str(out)]) == 130
    ck = str(out) + ".checkpoint.jsonl"
    assert list(checkpoint.read(ck).done) == ["8x8x8"]
    kernels.calls.clear()
    kernels.stop_at = None
    assert main(run + ["--variant", "triton.stream_k:grid=2|4", "-q", "--resume", ck]) == 2
    assert "kernels: file " in _err_lines(capsys)[-1] and kernels.calls == []
    assert main(run + variant + ["-q", "-o", str(out), "--resume", ck]) == 0
    assert sorted(kernels.calls) == sorted(f"triton.stream_k[grid={g}] {s}" for g in (2, 3) for s in ("16x8x8", "24x8x8"))
    rows = json.loads(out.read_text())["results"]
    assert len(rows) == 9 and {r["shape"] for r in rows} == {"8x8x8", "16x8x8", "24x8x8"}


def test_a_plain_run_that_completes_removes_its_checkpoint_and_a_named_one_stays(kernels, tmp_path):
    out = tmp_path / "r.json"
    assert main(RUN + ["-q", "-o", str(out)]) == 0
    assert not os.path.exists(str(out) + ".checkpoint.jsonl")      # -o FILE holds every row
    named = tmp_path / "named.jsonl"
    assert main(RUN + ["-q", "--checkpoint", str(named)]) == 0
    assert list(checkpoint.read(str(named)).done) == ["8x8x8", "16x8x8", "24x8x8"]


def _row(kernel, shape, tflops, status="ok") -> Result:
    M, N, K = (int(x) for x in shape.split("x"))
    return Result(kernel=kernel, family="cublas" if kernel == "cublas" else "triton", stage="s", group="g",
                  variant="", shape=shape, M=M, N=N, K=K, precision="fp32", alpha=1.0, beta=0.0, status=status,
                  tflops=tflops, median_ms=2 * M * N * K / (tflops * 1e9))


def test_from_json_reads_a_partial_checkpoint_with_its_percent_of_cublas(tmp_path, capsys):
    """The rows a run on one host checkpointed (written before the run knew any % of cuBLAS),
    the unfinished shape's included, rendered like a results file; 1.5 of cuBLAS's 2.0 TFLOP/s is 75%."""
    path = str(tmp_path / "ck.jsonl")
    ck = checkpoint.Checkpoint(path, {"kernels": ["cublas", "k"]}, {}, shapes=["64x64x64", "128x64x64"],
                               expect={"64x64x64": 2, "128x64x64": 2})
    for r in (_row("cublas", "64x64x64", 2.0), _row("k", "64x64x64", 1.5), _row("cublas", "128x64x64", 4.0)):
        ck.add_row(r)
    ck.close()
    out = tmp_path / "back.json"
    assert main(["--from-json", path, "--format", "json", "-o", str(out)]) == 0
    rows = json.loads(out.read_text())["results"]
    assert [(r["kernel"], r["shape"]) for r in rows] == [("cublas", "64x64x64"), ("k", "64x64x64"),
                                                         ("cublas", "128x64x64")]
    assert rows[1]["pct_cublas"] == pytest.approx(75.0)


@pytest.mark.parametrize("edit, says", [
    (lambda lines: lines[:1] + ["garbage\n"] + lines[1:], "line 2 is not a checkpoint line"),
    (lambda lines: [lines[0].replace('"version": 1', '"version": 7')] + lines[1:], "checkpoint version 7"),
    (lambda lines: lines[1:], "not a checkpoint"),
])
def test_from_json_refuses_a_damaged_or_future_checkpoint_with_one_line(tmp_path, capsys, edit, says):
    path = tmp_path / "ck.jsonl"
    ck = checkpoint.Checkpoint(str(path), {"kernels": ["k"]}, {}, expect={"64x64x64": 1})
    ck.add_row(_row("k", "64x64x64", 1.0))
    ck.close()
    path.write_text("".join(edit(path.read_text().splitlines(keepends=True))))
    assert main(["--from-json", str(path)]) == 2
    (line,) = _err_lines(capsys)
    assert f"--from-json {path}" in line and says in line


def test_a_sweep_checkpoint_of_the_old_kind_still_reads():
    text = (json.dumps({"kind": "gemm-ladder sweep checkpoint", "version": 1, "selection": {"seed": 0}}) + "\n"
            + json.dumps({"shape": "8x8x8", "row": {"kernel": "k"}}) + "\n"
            + json.dumps({"done": "8x8x8", "rows": 1, "worker": "w"}) + "\n")
    assert checkpoint.parse(text, "test").finished() == {"8x8x8": ([{"kernel": "k"}], {"done": "8x8x8", "rows": 1,
                                                                                          "worker": "w"})}


def test_checkpoint_flags_with_from_json_are_refused(tmp_path, capsys):
    assert main(["--from-json", str(tmp_path / "x.json"), "--resume", str(tmp_path / "ck.jsonl")]) == 2
    assert "give the checkpoint to --from-json" in _err_lines(capsys)[0]


def test_the_progress_lines_of_both_run_paths():
    """One reporter: a pair starting (one process) and a shape finishing (a sweep), counted
    from the units a resumed checkpoint already held."""
    buf = io.StringIO()
    prog = Progress(4, quiet=False, file=buf, done=1)
    k = types.SimpleNamespace(name="triton.stream_k")
    prog.starting(k, Problem(8, 8, 8))
    prog.finished("16x8x8", "gpu1", " (sticky CUDA error: worker restarted)")
    prog.finished("24x8x8", "gpu0")
    lines = buf.getvalue().splitlines()
    assert lines[0] == "[2/4] triton.stream_k 8x8x8 fp32"
    assert lines[1].startswith("[3/4] 16x8x8 on gpu1 (sticky CUDA error: worker restarted); shapes per worker gpu1:1; ETA ")
    assert lines[2].startswith("[4/4] 24x8x8 on gpu0; shapes per worker gpu0:1 gpu1:1; ETA 0m00s")
    quiet = io.StringIO()
    Progress(4, quiet=True, file=quiet).finished("8x8x8", "gpu0")
    assert quiet.getvalue() == ""
