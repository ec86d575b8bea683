"""Bad input on the CPU: exit 2 before any work (before a Dask cluster starts), one line naming
the flag or file at fault, no traceback, and nothing a finished run wrote is ever replaced."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from compare import cli
from compare.cli import main
from compare.harness import checkpoint, runner
from compare.harness.errors import UsageError
from compare.harness.runner import Result
from compare.outputs import dask_cluster, report, selection
from compare.outputs import distributed as dist

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SWEEP = ["--interpret", "--distribution", "interpret_tiny:3:0", "--kernel", "triton.stream_k", "-q"]


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    # -q still names each shape as it starts (compare/outputs/progress.py)
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("running ")]
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0]


@pytest.fixture
def no_work(monkeypatch):
    """Any measurement, worker process or Dask cluster starting fails the test."""
    def refuse(*a, **kw):
        raise AssertionError("work started before the usage error")
    from compare.harness import worker
    monkeypatch.setattr(runner, "run", refuse)
    monkeypatch.setattr(worker, "start_for_run", refuse)
    monkeypatch.setattr(dask_cluster, "EarlyCluster", refuse)
    monkeypatch.setattr(dist, "local_cluster", refuse)
    import distributed
    monkeypatch.setattr(distributed, "Client", refuse)
    monkeypatch.setenv("TRITON_INTERPRET", os.environ.get("TRITON_INTERPRET", "1"))


# ---------------------------------------------------------------- arguments from a file

def test_an_arg_file_that_is_not_text_is_one_line(no_work, tmp_path, capsys):
    f = tmp_path / "binary.bin"
    f.write_bytes(bytes([0x89, 0xA2, 0xFF, 0x00, 0x10]) * 40)
    assert main([f"@{f}"]) == 2
    line = _one_line(capsys)
    assert str(f) in line and "not a text file" in line


def test_an_arg_file_that_includes_itself_is_one_line(no_work, tmp_path, capsys):
    f = tmp_path / "loop.args"
    f.write_text(f"--interpret\n@{f}\n")
    assert main([f"@{f}"]) == 2
    assert "includes itself" in _one_line(capsys)


# ---------------------------------------------------------------- distributed sweeps

@pytest.mark.parametrize("flag", ["--checkpoint", "--resume"])
@pytest.mark.parametrize("path, says", [
    ("/proc/ck.jsonl", "can't be written"),                   # a folder that refuses files, even to root
    ("/no/such/dir/ck.jsonl", "directory does not exist"),
])
def test_a_checkpoint_that_cant_be_written_is_refused_before_the_cluster(no_work, capsys, flag, path, says):
    assert main(SWEEP + ["--workers", "2", flag, path]) == 2
    line = _one_line(capsys)
    assert flag in line and path in line and says in line


@pytest.mark.parametrize("address, says", [
    ("", "give the scheduler's address"),
    ("   ", "give the scheduler's address"),
    ("not-an-address", "not a scheduler address"),
    ("tcp://127.0.0.1:99999", "not 1..65535"),
])
def test_a_bad_cluster_address_is_refused(no_work, capsys, address, says):
    assert main(SWEEP + ["--cluster", address]) == 2
    assert says in _one_line(capsys)


def test_a_refused_scheduler_port_fails_at_once_without_dask_retrying(no_work, capsys, monkeypatch):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()                          # nothing listens there now: a connect is refused
    timeouts = []
    connect = socket.create_connection

    def spy(addr, timeout=None, *a, **kw):
        timeouts.append(timeout)
        return connect(addr, timeout, *a, **kw)
    monkeypatch.setattr(socket, "create_connection", spy)
    assert main(SWEEP + ["--cluster", f"tcp://127.0.0.1:{port}"]) == 2
    line = _one_line(capsys)
    assert f"127.0.0.1:{port}" in line and "cannot reach the scheduler" in line
    # one connect, with a short timeout (Dask's own Client(timeout="30s") retries for 30 s)
    assert timeouts == [dask_cluster.CONNECT_TIMEOUT_S] and dask_cluster.CONNECT_TIMEOUT_S <= 5


def test_in_process_with_workers_is_refused(no_work, capsys):
    assert main(SWEEP + ["--workers", "2", "--in-process"]) == 2
    assert "--in-process" in _one_line(capsys)


def test_too_many_interpreter_workers_are_refused_before_the_cluster(no_work, capsys):
    assert main(SWEEP + ["--workers", "100000"]) == 2
    line = _one_line(capsys)
    assert "--workers 100000" in line and f"at most {max(2, os.cpu_count() or 1)}" in line


def _finished_checkpoint(path, argv) -> int:
    """A checkpoint holding every shape of the sweep ``argv`` asks for, as the sweep writes it."""
    args = cli.build_parser().parse_args(argv)
    os.environ["TRITON_INTERPRET"] = "1"
    pairs = selection.select(args, interpret=args.interpret).pairs
    kept = {}
    for shape, group in checkpoint.group_by_shape(pairs).items():
        rows = [runner.blank_row(k, p, runner.OK) for k, p in group]
        kept[shape] = (rows, {"done": shape, "rows": len(rows), "worker": "tcp://w", "attempts": 1})
    checkpoint.Checkpoint(str(path), checkpoint.measured(args, pairs), kept).close()
    return len(pairs)


def test_resuming_a_finished_checkpoint_starts_no_cluster(no_work, tmp_path, capsys, monkeypatch):
    ck, out = tmp_path / "ck.jsonl", tmp_path / "r.json"
    argv = SWEEP + ["--workers", "2", "--resume", str(ck), "-o", str(out)]
    n = _finished_checkpoint(ck, argv)
    monkeypatch.setattr(runner, "run", lambda *a, **kw: [])    # the sweep calls nothing to measure
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and "CommClosedError" not in err, err
    doc = json.loads(out.read_text())
    assert len(doc["results"]) == n and doc["environment"]["distributed"]["measured"] == 0


def _checkpoint_lines(tmp_path):
    sel = {"kernels": ["k"], "mode": "check"}
    path = tmp_path / "ck.jsonl"
    ck = checkpoint.Checkpoint(str(path), sel, {})
    row = Result(kernel="k", family="triton", stage="s", group="g", variant="", shape="8x8x8", M=8, N=8, K=8,
                 precision="fp32", alpha=1.0, beta=0.0, status="ok")
    for s in ("1x1x1", "2x2x2"):
        ck.add(s, [row], worker="w", attempts=1)
    ck.close()
    return path, sel, path.read_text().splitlines(keepends=True)


def test_a_checkpoint_with_a_garbage_line_is_refused_not_rewritten(tmp_path):
    path, sel, lines = _checkpoint_lines(tmp_path)
    text = "".join(lines[:2] + ["this is no JSON\n"] + lines[2:])
    path.write_text(text)
    with pytest.raises(UsageError, match="line 3 is not a checkpoint line"):
        checkpoint.resume(str(path), sel)
    path.write_text("".join(lines[:2] + ['[1, 2]\n'] + lines[2:]))   # JSON, but no checkpoint line
    with pytest.raises(UsageError, match="line 3"):
        checkpoint.resume(str(path), sel)
    # a last line cut mid-write is still the one allowed loss
    path.write_text("".join(lines) + '{"shape": "3x3')
    assert sorted(checkpoint.resume(str(path), sel)) == ["1x1x1", "2x2x2"]


def test_a_checkpoint_of_a_future_version_is_refused(tmp_path):
    path, sel, lines = _checkpoint_lines(tmp_path)
    head = json.loads(lines[0])
    head["version"] = 2
    path.write_text(json.dumps(head) + "\n" + "".join(lines[1:]))
    with pytest.raises(UsageError, match="version 2"):
        checkpoint.resume(str(path), sel)


# ---------------------------------------------------------------- --from-json

def _row(**kw) -> Result:
    base = dict(kernel="triton.stream_k", family="triton", stage="stream_k", group="split_k", variant="",
                shape="64x64x64", M=64, N=64, K=64, precision="fp32", alpha=1.0, beta=0.0, status="ok")
    base.update(kw)
    return Result(**base)


def _timed(kernel="triton.stream_k", family="triton") -> Result:
    return _row(kernel=kernel, family=family, median_ms=0.5, iqr_ms=0.02, min_ms=0.48, samples=30,
                tflops=2 * 64**3 / 0.5e-3 / 1e12, rel_err=1e-7, batch_ms=0.25, batch_method="graph x20",
                host_launch_us=3.5, pct_cublas=80.0, pct_cublas_batch=90.0, hold_us=12.0, config={"split_k": 4})


def _json_file(path, rows):
    path.write_text(json.dumps({"environment": {}, "results": rows}))
    return str(path)


@pytest.mark.parametrize("fmt", ["table", "markdown"])
def test_from_json_median_without_iqr_renders(no_work, tmp_path, capsys, fmt):
    """A row with a time but no spread (a file from before rows carried one, or edited): its
    median alone, no ±."""
    d = _timed().as_dict()
    d["iqr_ms"] = None
    assert main(["--from-json", _json_file(tmp_path / "r.json", [d]), "--format", fmt]) == 0
    out, err = capsys.readouterr()
    row = next(ln for ln in out.splitlines() if "triton.stream_k" in ln)
    assert "Traceback" not in err and " 0.5 " in row and "±" not in row, out


def test_from_json_unknown_status_is_named_unknown(no_work, tmp_path, capsys):
    d = _timed().as_dict()
    d["status"] = "SLOWISH"
    assert main(["--from-json", _json_file(tmp_path / "r.json", [d])]) == 2
    line = _one_line(capsys)
    assert "'SLOWISH'" in line and "does not write" in line and "unsupported" not in line.split("(")[0]


@pytest.mark.parametrize("config", ["tile=128", "[1, 2]", "7"])
def test_from_json_csv_config_that_is_no_object_is_one_line(no_work, tmp_path, capsys, config):
    import csv
    import io
    rows = list(csv.DictReader(io.StringIO(report.to_csv([_timed()]))))
    rows[0]["config"] = config
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    (tmp_path / "r.csv").write_text(buf.getvalue())
    assert main(["--from-json", str(tmp_path / "r.csv")]) == 2
    line = _one_line(capsys)
    assert "result 0" in line and "config" in line and "object" in line and "Expecting value" not in line


def test_from_json_reads_a_csv_with_a_byte_order_mark_and_writes_numbers(no_work, tmp_path, capsys):
    rows = [_timed("cublas", "cublas"), _timed()]
    # as a spreadsheet saves it: UTF-8 with a byte-order mark before "kernel"
    (tmp_path / "r.csv").write_bytes(b"\xef\xbb\xbf" + report.to_csv(rows).encode())
    out = tmp_path / "back.json"
    assert main(["--from-json", str(tmp_path / "r.csv"), "--format", "json", "-o", str(out)]) == 0
    back = json.loads(out.read_text())["results"]
    assert [r["kernel"] for r in back] == ["cublas", "triton.stream_k"]
    for r in back:
        # every number as a number: what the rows were made with, not the CSV's text
        assert r["batch_ms"] == 0.25 and r["host_launch_us"] == 3.5 and r["pct_cublas_batch"] == 90.0
        assert r["median_ms"] == 0.5 and r["iqr_ms"] == 0.02 and r["samples"] == 30 and r["hold_us"] == 12.0
        assert r["M"] == 64 and r["alpha"] == 1.0 and r["config"] == {"split_k": 4}
    numeric = {k for k, v in back[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert {"batch_ms", "host_launch_us", "pct_cublas_batch", "tflops", "min_ms"} <= numeric


# ---------------------------------------------------------------- Ctrl-C with -o

@pytest.fixture
def ctrl_c_on_the_second_kernel(monkeypatch):
    """runner.run as the CLI calls it, with Ctrl-C arriving as the second kernel starts; no
    kernel really runs (each finished one is a blank ok row)."""
    real = runner.run
    calls = []

    def execute(k, p, **kw):
        calls.append(k.name)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return runner.blank_row(k, p, runner.OK)

    def run(pairs, **kw):
        kw["execute"] = execute
        return real(pairs, **kw)
    monkeypatch.setattr(runner, "run", run)
    monkeypatch.setenv("TRITON_INTERPRET", os.environ.get("TRITON_INTERPRET", "1"))
    return calls


INTERRUPTED_RUN = ["--interpret", "--in-process", "-q", "--kernel", "triton.stream_k",
                   "--shape", "8x8x8", "--shape", "16x8x8", "--shape", "24x8x8"]


@pytest.mark.parametrize("suffix", [".json", ".csv", ".txt"])
def test_ctrl_c_never_replaces_a_finished_output(ctrl_c_on_the_second_kernel, tmp_path, capsys, suffix):
    out = tmp_path / f"r{suffix}"
    out.write_text("the finished run's results\n")
    assert main(INTERRUPTED_RUN + ["-o", str(out)]) == 130
    assert out.read_text() == "the finished run's results\n"
    partial = str(out) + ".checkpoint.jsonl"
    kept = [row for _, row in checkpoint.read(partial).rows]
    # cuBLAS (skipped under --interpret) 8x8x8, stream-K 8x8x8, cuBLAS 16x8x8; Ctrl-C in stream-K 16x8x8
    assert [(r["kernel"], r["shape"]) for r in kept] == [("cublas", "8x8x8"), ("triton.stream_k", "8x8x8"),
                                                          ("cublas", "16x8x8")]
    line = _one_line(capsys)
    assert line.startswith("interrupted: 3 of 6 rows finished") and f"kept in {partial}" in line
    assert f"{out} left as it was" in line


def test_ctrl_c_writes_a_new_json_output_marked_interrupted(ctrl_c_on_the_second_kernel, tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(INTERRUPTED_RUN + ["-o", str(out)]) == 130
    doc = json.loads(out.read_text())
    assert len(doc["results"]) == 3 and doc["environment"]["interrupted"].startswith("3 of 6 rows finished")
    line = _one_line(capsys)
    assert f"kept in {out}.checkpoint.jsonl" in line and f"written to {out} marked interrupted" in line


def test_ctrl_c_writes_a_new_table_marked_and_no_csv(ctrl_c_on_the_second_kernel, tmp_path, capsys):
    out = tmp_path / "r.txt"
    assert main(INTERRUPTED_RUN + ["-o", str(out)]) == 130
    assert out.read_text().startswith("INTERRUPTED (Ctrl-C): 3 of 6 rows finished")
    capsys.readouterr()
    ctrl_c_on_the_second_kernel.clear()
    csv_out = tmp_path / "r.csv"
    assert main(INTERRUPTED_RUN + ["-o", str(csv_out)]) == 130
    assert not csv_out.exists() and os.path.exists(str(csv_out) + ".checkpoint.jsonl")
    assert f"{csv_out} not written" in _one_line(capsys)


# ---------------------------------------------------------------- the gate

def test_the_gate_refuses_one_commit_as_base_and_head(capsys):
    from compare.ci import gate
    mdir = os.path.join(REPO, "tests", "fixtures", "asv")
    machine = next(d for d in os.listdir(mdir) if os.path.isfile(os.path.join(mdir, d, "machine.json")))
    sha = next(json.load(open(os.path.join(mdir, machine, f)))["commit_hash"]
               for f in sorted(os.listdir(os.path.join(mdir, machine))) if f not in gate.SKIP_FILES)
    assert gate.main(["--results-dir", mdir, "--base", sha[:8], "--head", sha]) == 2
    out = capsys.readouterr()
    assert "same commit" in out.err and sha[:12] in out.err and "GATE" not in out.out


# ---------------------------------------------------------------- --interpret sized to the host

def test_gpu_size_distribution_under_interpret_is_refused(no_work, capsys):
    assert main(["--interpret", "--in-process", "--distribution", "loguniform:3"]) == 2
    line = _one_line(capsys)
    # every loguniform shape is >= 1e9 FLOPs (shapes.MIN_FLOPS); the interpreter takes <= 2*512^3
    assert line.startswith("error: --distribution: ") and "too big for --interpret" in line
    assert f"{2 * 512**3:.2g}" in line


def test_gpu_size_sweep_on_interpreter_workers_is_refused_before_the_cluster(no_work, capsys):
    assert main(["--interpret", "--sweep", "square", "--workers", "2"]) == 2
    assert "--sweep: " in _one_line(capsys)


def test_the_largest_interpreter_shape_is_accepted_one_more_is_not(no_work, capsys):
    selection.check_interpretable(cli.build_parser().parse_args(["--shape", "512"]), ["512x512x512"])
    with pytest.raises(UsageError, match="513x512x512 is 2.7e"):
        selection.check_interpretable(cli.build_parser().parse_args(["--shape", "513x512x512"]), ["513x512x512"])


def test_a_shape_over_the_hosts_memory_is_refused_under_interpret(no_work, capsys, monkeypatch):
    monkeypatch.setattr(selection, "host_free_bytes", lambda: 100 * 2**20)       # 100 MiB free
    M, N, K = 4096, 4096, 2                      # 6.7e7 FLOPs: within the interpreter's limit
    assert main(["--interpret", "--in-process", "--shape", f"{M}x{N}x{K}"]) == 2
    line = _one_line(capsys)
    # A, B, C0, C in fp32, the float64 reference and bound, float64 copies of A and B: 0.38 GiB
    need = 4 * (M * K + K * N + 2 * M * N) + 8 * 2 * M * N + 8 * (M * K + K * N)
    assert f"needs {need / 2**30:.2f} GiB of host memory" in line and "--shape" in line


# ---------------------------------------------------------------- plugins and options

def test_a_plugin_that_calls_sys_exit_is_one_line_exit_2(no_work, tmp_path, capsys):
    plugin = tmp_path / "quits.py"
    plugin.write_text("import sys\n\nsys.exit(3)\n")
    assert main(["--interpret", "--in-process", "--plugin", str(plugin)]) == 2
    line = _one_line(capsys)
    assert f"--plugin {plugin}" in line and "sys.exit(3)" in line and "(line 3)" in line


def test_a_repeated_opt_with_two_values_is_refused(no_work, capsys):
    assert main(["--interpret", "--in-process", "--stage", "split_k", "--opt", "split_k=4", "--opt", "split_k=8"]) == 2
    line = _one_line(capsys)
    assert "--opt split_k is given twice" in line and "split_k=4" in line and "split_k=8" in line


def test_an_unknown_opt_names_a_few_options_and_points_to_list(no_work, capsys):
    assert main(["--interpret", "--in-process", "--opt", "nosuch=1"]) == 2
    line = _one_line(capsys)
    assert "no selected kernel has an option 'nosuch'" in line and "--list" in line and len(line) < 200, line


# ---------------------------------------------------------------- messages name the right flag

def test_distribution_with_shape_names_distribution(no_work, capsys):
    assert main(["--interpret", "--in-process", "--shape", "8", "--distribution", "interpret_tiny:3"]) == 2
    line = _one_line(capsys)
    assert "--shape and --distribution" in line and "--sweep" not in line


def test_a_negative_count_is_said_as_negative(no_work, capsys):
    assert main(["--interpret", "--in-process", "--distribution", "interpret_tiny:-3"]) == 2
    line = _one_line(capsys)
    assert "COUNT must be at least 1, got -3" in line and "whole number" not in line


# ---------------------------------------------------------------- width

@pytest.mark.parametrize("columns", [60, 80, 300])
def test_list_honours_columns_up_to_120(monkeypatch, columns):
    import io

    from compare.outputs import listing
    monkeypatch.setenv("COLUMNS", str(columns))
    buf = io.StringIO()
    listing.print_list(buf)
    lines = buf.getvalue().splitlines()
    assert max(len(ln) for ln in lines) <= min(columns, 120), max(lines, key=len)
    assert any("--opt triton.stream_k:" in ln for ln in lines)


def test_help_epilog_is_wrapped_to_the_terminal_not_before(monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    narrow = cli.build_parser().format_help()
    epilog = narrow[narrow.index("\noptions: --opt"):].splitlines()[1:]
    assert epilog and max(len(ln) for ln in epilog) <= 60
    monkeypatch.setenv("COLUMNS", "2000")
    wide = cli.build_parser().format_help()
    # each topic one line on a wide terminal (the text used to be broken at ~97 columns)
    exit_line = next(ln for ln in wide.splitlines() if ln.startswith("exit codes:"))
    assert exit_line.endswith("Exit 2 is decided before any GPU work."), exit_line


def test_help_runs_as_a_command():
    p = subprocess.run([sys.executable, "-m", "compare", "--help"], cwd=REPO, capture_output=True, text=True,
                       env=dict(os.environ, COLUMNS="70"), timeout=300)
    assert p.returncode == 0 and "exit codes:" in p.stdout


def test_a_damaged_checkpoint_is_refused_before_the_cluster_starts(no_work, tmp_path, capsys):
    path, _, lines = _checkpoint_lines(tmp_path)
    path.write_text("".join(lines[:2] + ["garbage\n"] + lines[2:]))
    assert main(SWEEP + ["--workers", "2", "--resume", str(path)]) == 2
    assert "line 3 is not a checkpoint line" in _one_line(capsys)
    # an existing checkpoint without --resume: refused (never overwritten), before the cluster too
    assert main(SWEEP + ["--workers", "2", "--checkpoint", str(path)]) == 2
    assert f"--resume {path}" in _one_line(capsys)


def test_from_json_reads_a_gzipped_run_and_names_a_broken_one(no_work, tmp_path, capsys):
    """results/ commits its runs gzipped: --from-json reads them as they are; a truncated .gz is
    one line naming the file, not a traceback."""
    import gzip
    rows = [_timed("cublas", "cublas").as_dict(), _timed().as_dict()]
    with gzip.open(tmp_path / "r.json.gz", "wt") as f:
        json.dump({"environment": {}, "results": rows}, f)
    out = tmp_path / "back.json"
    assert main(["--from-json", str(tmp_path / "r.json.gz"), "--format", "json", "-o", str(out)]) == 0
    assert [r["kernel"] for r in json.loads(out.read_text())["results"]] == ["cublas", "triton.stream_k"]
    capsys.readouterr()
    (tmp_path / "cut.json.gz").write_bytes((tmp_path / "r.json.gz").read_bytes()[:40])
    assert main(["--from-json", str(tmp_path / "cut.json.gz")]) == 2
    line = _one_line(capsys)
    assert "cut.json.gz" in line and "Traceback" not in line
