"""On the CPU: a run reads at a glance (one line per row in 120 columns,
a closing kernel x shape summary, --list in 120 columns) and nothing is lost on the way in or out
(outputs proven writable before any work, numbers checked, --from-json filtered, progress said)."""
import json
import os
import subprocess
import sys

import pytest

from compare.cli import INTERPRET_SHAPES, main
from compare.harness import files, runner
from compare.harness.problem import parse_shape
from compare.harness.runner import Result, fill_pct_cublas
from compare.outputs import matrix, report

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WIDTH = 120


def _widest(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _run(*argv, env=None):
    e = dict(os.environ, TRITON_INTERPRET="1", **(env or {}))
    return subprocess.run([sys.executable, "-m", "compare", *argv], cwd=REPO, capture_output=True, text=True,
                          timeout=600, env=e)


@pytest.fixture
def no_run(monkeypatch):
    """Any measurement starting fails the test: usage errors come before GPU work."""
    def run(*a, **kw):
        raise AssertionError("work started before the usage error")
    monkeypatch.setattr(runner, "run", run)
    monkeypatch.setenv("TRITON_INTERPRET", os.environ.get("TRITON_INTERPRET", "1"))


def _rows(kernels, shapes, precision="fp32", bad=()):
    """Timed rows: cuBLAS plus ``kernels`` [(name, family, speed)] at ``shapes``; ``bad`` is a
    set of (kernel, shape) that FAILED."""
    rows = []
    for n, (M, N, K) in enumerate(shapes):
        for name, family, speed in [("cublas", "cublas", 1.0), *kernels]:
            shape = f"{M}x{N}x{K}"
            r = Result(kernel=name, family=family, stage="split_k", group="split_k", variant="", shape=shape,
                       M=M, N=N, K=K, precision=precision, alpha=1.0, beta=0.0, status="ok",
                       config={"tile": "128x128x16", "split_k": 8, "chosen_by": "heuristic"})
            if (name, shape) in bad:
                r.status, r.reason = "FAILED", "relative error 3.2e-02 > 1.0e-05 (the bound for fp32 at this K)"
            else:
                ms = (1 + n / 10) / speed if family != "cublas" else 1.0
                r.median_ms, r.iqr_ms, r.rel_err = ms, 0.002, 1e-7
                r.tflops = 2 * M * N * K / (ms * 1e-3) / 1e12
            rows.append(r)
    fill_pct_cublas(rows)
    return rows


SPLIT_K = [("cuda.10_split_k", "cuda", 0.94), ("cuda.10_split_k_atomic", "cuda", 0.70),
           ("triton.split_k", "triton", 0.72), ("triton.split_k_atomic", "triton", 0.89),
           ("cuda.11_stream_k", "cuda", 0.80), ("cuda.11_stream_k_atomic", "cuda", 0.82),
           ("triton.stream_k", "triton", 0.75), ("triton.stream_k_atomic", "triton", 0.72)]
SHAPES = [(256, 256, 131072), (512, 512, 65536), (1024, 1024, 16384)]
ENV = {"gpu": "NVIDIA H100 80GB HBM3", "sm_count": 132, "compute_capability": "9.0", "l2_bytes": 50 * 2**20,
       "memory_gib": 79.1, "sm_clock_mhz": 1980, "max_sm_clock_mhz": 1980, "fp32_peak_tflops": 66.9,
       "driver": "570.86.15", "cuda_runtime": "12.8", "torch": "2.7.0+cu128", "triton": "3.3.0",
       "cupy": "13.4.1", "python": "3.11.7 (main, Dec  4 2023, 18:10:11) [GCC 11.4.0] on a long build line"}


# ---------------------------------------------------------------- item 4: at a glance

def test_the_interpreted_split_k_run_fits_120_columns_piped_whatever_columns_says():
    p = _run("--interpret", "--stage", "split_k", env={"COLUMNS": "300"})
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert _widest(out) <= WIDTH, max(out.splitlines(), key=len)
    assert "summary: correctness check per kernel and shape" in out
    summary = out[out.index("summary:"):]
    for k in ("triton.split_k", "triton.split_k_atomic", "triton.stream_k", "triton.stream_k_atomic"):
        line = next(line for line in summary.splitlines() if line.split()[:1] == [k])
        assert line.split()[1:] == ["ok"] * len(INTERPRET_SHAPES), line
    assert "not run, needs a GPU" in summary and "cuda.10_split_k" in summary
    assert "config" not in out.split("summary:")[0].splitlines()[3]     # the header row has no config column
    # piped, not a terminal: plain progress lines on stderr, no bar
    assert "[1/" in p.stderr and "\x1b[" not in p.stderr


def test_table_file_and_summary_fit_120_columns_with_long_reasons(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    rows = _rows(SPLIT_K, SHAPES, bad={("triton.split_k_atomic", "1024x1024x16384")})
    path = tmp_path / "t.txt"
    with open(path, "w") as f:
        report.to_table(rows, ENV, f)
    text = path.read_text()
    assert _widest(text) <= WIDTH
    table_rows = [line for line in text.splitlines() if line.split()[:1] and line.split()[0] in dict(
        (k, 1) for k, _, _ in SPLIT_K)]
    assert len(table_rows) == len(SPLIT_K) * len(SHAPES), "a row took more than one line"
    assert "FAILED [1]" in text and "[1] relative error 3.2e-02" in text
    assert "tile=128x128x16" not in text
    # --show config puts it back, wrapped, under its own heading
    view = report.config_view(rows)
    assert _widest(view) <= WIDTH and "cuda.10_split_k 256x256x131072 fp32: tile=128x128x16 split_k=8" in view
    # a narrower COLUMNS narrows the table
    monkeypatch.setenv("COLUMNS", "100")
    assert report.table_width(None) == 100


def test_summary_matrix_marks_the_best_of_each_family_per_shape():
    rows = _rows(SPLIT_K, SHAPES, bad={("triton.split_k_atomic", "1024x1024x16384")})
    m = matrix.build(rows)
    assert m["value"] == "pct_cublas" and m["shapes"] == [f"{M}x{N}x{K}" for M, N, K in SHAPES]
    by = {r["kernel"]: r for r in m["rows"]}
    assert list(by)[0] == "cublas"
    # cuda.10_split_k is CUDA's fastest everywhere; triton.split_k_atomic Triton's until it fails
    assert [c["best"] for c in by["cuda.10_split_k"]["cells"]] == [True, True, True]
    assert [c["best"] for c in by["triton.split_k_atomic"]["cells"]] == [True, True, False]
    assert by["triton.split_k_atomic"]["cells"][2]["status"] == "FAILED"
    assert [c["best"] for c in by["triton.stream_k"]["cells"]] == [False, False, True]
    assert by["cuda.10_split_k"]["cells"][0]["pct_cublas"] == pytest.approx(94.0)

    text = matrix.render(rows)
    assert _widest(text) <= WIDTH
    line = {l.split()[0]: l.split()[1:] for l in text.splitlines()[1:] if l and not l.startswith(("kernel", "cells"))}
    assert line["cuda.10_split_k"] == ["94*", "85*", "78*", "86"]          # 94 / 1.1 / 1.2, then the geomean
    assert line["triton.split_k_atomic"][2] == "FAILED" and line["triton.split_k_atomic"][3].endswith("!")
    assert line["cublas"][:2] == ["(TFLOP/s)", f"{rows[0].tflops:.1f}"]
    md = matrix.render(rows, "markdown")
    assert "| cuda.10_split_k | **94** | **85** | **78** | 86 |" in md


def test_summary_of_many_shapes_is_cut_into_blocks_within_120_columns():
    shapes = [(n, n + 1, 3 * n) for n in range(1000, 1013)]
    rows = _rows(SPLIT_K, shapes)
    text = matrix.render(rows)
    assert _widest(text) <= WIDTH
    for M, N, K in shapes:
        assert f"{M}x{N}x{K}" in text
    assert text.count("\nkernel ") >= 2


def test_check_run_summary_shows_status_and_json_carries_the_matrix(tmp_path):
    rows = _rows(SPLIT_K[:2], SHAPES[:1], bad={("cuda.10_split_k_atomic", "256x256x131072")})
    for r in rows:
        r.median_ms = r.tflops = r.pct_cublas = None
    text = matrix.render(rows)
    assert "correctness check" in text and "FAILED" in text and "%" not in text.splitlines()[0]
    doc = json.loads(report.to_json(rows, {}, matrix=matrix.build(rows)))
    assert doc["matrix"]["value"] == "status"
    assert [r["kernel"] for r in doc["matrix"]["rows"]] == ["cublas", "cuda.10_split_k", "cuda.10_split_k_atomic"]


def test_list_fits_120_columns():
    p = _run("--list", env={"COLUMNS": "300"})
    assert p.returncode == 0 and _widest(p.stdout) <= WIDTH, max(p.stdout.splitlines(), key=len)
    assert "--opt triton.stream_k:tile=..." in p.stdout and "cuda.11_stream_k_atomic" in p.stdout


# ---------------------------------------------------------------- item 5: in and out

def test_unwritable_output_is_exit_2_before_any_work(no_run, capsys, tmp_path):
    assert main(["--interpret", "-o", "/proc/version"]) == 2
    err = capsys.readouterr().err
    assert "-o /proc/version can't be written" in err and "Traceback" not in err
    too_long = tmp_path / ("a" * 252 + ".json")                    # 257 bytes: no filesystem takes it
    assert main(["--interpret", "-o", str(too_long)]) == 2
    assert "over the 255" in capsys.readouterr().err
    assert main(["--interpret", "-o", "/dev/null"]) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


def test_a_legal_245_character_name_is_written(tmp_path):
    name = tmp_path / ("r" * 240 + ".json")                        # legal; ".name.XXXXXXXX.tmp.json" was not
    files.write_text_atomically(str(name), "{}")
    assert name.read_text() == "{}" and os.listdir(tmp_path) == [name.name]
    files.prove_writable(str(name))
    assert os.listdir(tmp_path) == [name.name]                      # the probe leaves nothing behind


def test_long_plot_and_output_names_work_end_to_end(tmp_path):
    rows = _rows(SPLIT_K[:2], SHAPES[:2])
    src = tmp_path / "r.json"
    src.write_text(report.to_json(rows, ENV))
    out, plot = tmp_path / ("o" * 240 + ".md"), tmp_path / ("p" * 240 + ".png")
    assert main(["--from-json", str(src), "-o", str(out), "--plot", str(plot)]) == 0
    assert "### Summary" in out.read_text() and plot.stat().st_size > 5000


@pytest.mark.parametrize("argv, msg", [
    (["--budget", "-1"], "--budget: -1 must be a finite number of seconds > 0"),
    (["--budget", "nan"], "--budget: nan must be"),
    (["--budget", "inf"], "--budget: inf must be"),
    (["--budget", "0"], "--budget: 0 must be"),
    (["--budget", "abc"], "'abc' is not a number of seconds"),
    (["--target-noise", "nan"], "--target-noise: nan must be a fraction between 0 and 1"),
    (["--target-noise", "0"], "--target-noise: 0 must be"),
    (["--target-noise", "-0.01"], "--target-noise: -0.01 must be"),
    (["--target-noise", "1"], "--target-noise: 1 must be"),
])
def test_bad_budget_and_noise_exit_2_before_any_work(no_run, capsys, argv, msg):
    with pytest.raises(SystemExit) as exc:
        main(["--interpret", *argv])
    assert exc.value.code == 2
    assert msg in capsys.readouterr().err


def _recorded(tmp_path):
    rows = (_rows(SPLIT_K[:3], SHAPES[:2]) + _rows(SPLIT_K[:1], SHAPES[:1], precision="tf32"))
    path = tmp_path / "r.json"
    path.write_text(report.to_json(rows, ENV))
    return path


@pytest.mark.parametrize("flags, expect", [
    (["--shape", "512x512x65536"], {("cublas", "512x512x65536", "fp32"), ("cuda.10_split_k", "512x512x65536", "fp32"),
                                    ("cuda.10_split_k_atomic", "512x512x65536", "fp32"),
                                    ("triton.split_k", "512x512x65536", "fp32")}),
    (["--precision", "tf32"], {("cublas", "256x256x131072", "tf32"), ("cuda.10_split_k", "256x256x131072", "tf32")}),
    (["--kernel", "triton.split_k", "--shape", "256x256x131072"],
     {("cublas", "256x256x131072", "fp32"), ("triton.split_k", "256x256x131072", "fp32")}),
    (["--family", "triton", "--precision", "fp32"],
     {("cublas", s, "fp32") for s in ("256x256x131072", "512x512x65536")}
     | {("triton.split_k", s, "fp32") for s in ("256x256x131072", "512x512x65536")}),
    (["--stage", "stream_k"], None),                                 # selects none of the recorded kernels
    (["--shape", "64"], None),
])
def test_from_json_is_filtered_by_the_selection_flags(tmp_path, capsys, flags, expect):
    src = _recorded(tmp_path)
    out = tmp_path / "out.json"
    rc = main(["--from-json", str(src), *flags, "-o", str(out)])
    if expect is None:
        assert rc == 2 and not out.exists()
        err = capsys.readouterr().err
        assert "no recorded row matches" in err and "Traceback" not in err
        return
    assert rc == 0
    got = {(r["kernel"], r["shape"], r["precision"]) for r in json.loads(out.read_text())["results"]}
    assert got == expect


def test_piped_progress_is_plain_lines_and_quiet_still_names_each_shape(capsys, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", os.environ.get("TRITON_INTERPRET", "1"))
    argv = ["--interpret", "--kernel", "triton.naive_blocked", "--shape", "8", "--shape", "9x8x7"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "[1/4] cublas 8x8x8 fp32" in err and "[4/4] triton.naive_blocked 9x8x7 fp32" in err
    assert main([*argv, "-q"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err == ["running 8x8x8 fp32 (2 kernels)", "running 9x8x7 fp32 (2 kernels)"]


def test_interpret_defaults_split_the_split_k_kernels(tmp_path):
    """Each interpret default exercises its kernels' reason to exist: one long-K shape makes
    both split-K kernels split (their split path ran) and stream-K spread K over programs."""
    assert any(K >= 16 * max(M, N) for M, N, K in map(parse_shape, INTERPRET_SHAPES))
    out = tmp_path / "r.json"
    p = _run("--interpret", "--stage", "split_k", "--family", "triton", "-q", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert [line for line in p.stderr.splitlines() if line.startswith("running")] == \
        [f"running {parse_shape_text(s)} fp32 (5 kernels)" for s in INTERPRET_SHAPES]
    rows = json.loads(out.read_text())["results"]
    splits = {(r["kernel"], r["shape"]): r["config"].get("split_k") for r in rows if "split_k" in r["kernel"]}
    for kernel in ("triton.split_k", "triton.split_k_atomic"):
        assert max(v for (k, _), v in splits.items() if k == kernel) > 1, splits
    sk = [r for r in rows if r["kernel"] == "triton.stream_k" and r["config"].get("decomposition") == "hybrid"]
    assert sk and max(r["config"]["grid"] for r in sk) > 1
    assert all(r["status"] == "ok" for r in rows if r["family"] == "triton")


def parse_shape_text(text: str) -> str:
    M, N, K = parse_shape(text)
    return f"{M}x{N}x{K}"


def test_the_widest_rows_stay_one_line_each(tmp_path):
    """Three precisions (the prec column stays), the longest kernel name and shape, throttled
    rows and reasons: every row is one line; what does not fit (% peak) leaves for the JSON."""
    rows = []
    for prec in ("fp32", "tf32", "tf32x3"):
        rows += _rows([("cuda.07_bank_conflict_free", "cuda", 0.5), ("triton.stream_k_atomic", "triton", 0.9)],
                      [(3001, 2999, 3003)], precision=prec)
    for r in rows:
        r.throttled, r.pct_peak, r.median_ms, r.iqr_ms = True, 123.0, 12.3456, 0.0123
    rows[4].status, rows[4].reason, rows[4].median_ms = "unsupported", "needs N % 4 == 0 for float4 loads", None
    path = tmp_path / "t.txt"
    with open(path, "w") as f:
        report.to_table(rows, ENV, f)
    text = path.read_text()
    assert _widest(text) <= WIDTH
    body = [line for line in text.splitlines() if line.startswith(("cublas ", "cuda.", "triton."))]
    assert len(body) == len(rows) and all(" T" in line for line in body)
    assert "unsupported [1]" in text and "[1] needs N % 4 == 0" in text and "T: the GPU throttled" in text
