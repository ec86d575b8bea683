"""reproduce/ab_rows_summary.py on two rounds per tree whose ratios are worked out by hand."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reproduce"))
import ab_rows_summary  # noqa: E402

K = "cuda.13_wgmma_tma"


def _write(d, name, rows):
    (d / f"{name}.json").write_text(json.dumps({"results": [
        {"kernel": K, "shape": s, "precision": "tf32", "status": st, "median_ms": ms, "pct_cublas": pct,
         "config": {"tile": tile, "split_k": 1}} for s, ms, pct, tile, st in rows]
        + [{"kernel": "cublas", "shape": "1x1x1", "precision": "tf32", "status": "ok", "median_ms": 1.0,
            "pct_cublas": 100.0, "config": {}}]}))


def test_ratios_spread_and_percent(tmp_path):
    # Shape a: prev best 2.0 ms (rounds 2.0, 3.0), new best 1.0 (1.0, 1.1): 2.000 (the slowest
    # rounds would give 3.0 / 1.1 = 2.727).
    # Shape b: prev best 1.0 (1.0, 1.0), new best 2.0 (2.0, 2.0): 0.500. Geomean sqrt(2 * 0.5) = 1.0.
    _write(tmp_path, "prev-1", [("a", 2.0, 50.0, "64", "ok"), ("b", 1.0, 90.0, "128", "ok")])
    _write(tmp_path, "prev-2", [("a", 3.0, 45.0, "64", "ok"), ("b", 1.0, 90.0, "128", "ok")])
    _write(tmp_path, "new-1", [("a", 1.0, 100.0, "128", "ok"), ("b", 2.0, 45.0, "256", "ok")])
    _write(tmp_path, "new-2", [("a", 1.1, 95.0, "128", "ok"), ("b", 2.0, 45.0, "256", "ok"),
                               ("c", 1.0, 1.0, "64", "FAILED")])
    text = "\n".join(ab_rows_summary.summarize(str(tmp_path), K))
    assert "2 rows, 2 + 2 rounds" in text
    assert "geomean 1.0000, min 0.500, max 2.000; 1 rows > 3% slower, 1 > 3% faster" in text
    # A/A prev: 2.0/3.0 = 0.667, 1.0 -> geomean sqrt(0.667) = 0.8165; new: 1.0/1.1, 1.0 -> sqrt(0.909) = 0.9535.
    assert "- A/A prev (round 1 / round 2): geomean 0.8165, range 0.667 .. 1.000" in text
    assert "- A/A new (round 1 / round 2): geomean 0.9535, range 0.909 .. 1.000" in text
    # % of cuBLAS: prev best (50, 90) -> sqrt(4500) = 67.1, worst 50; new (100, 45) -> sqrt(4500) = 67.1, worst 45.
    assert "prev geomean 67.1, worst 50.0; new 67.1, worst 45.0" in text
    lines = text.splitlines()
    assert lines.index("| b | tf32 | 128 split 1 | 256 split 1 | 90.0 | 45.0 | 0.500 |") < \
        lines.index("| a | tf32 | 64 split 1 | 128 split 1 | 50.0 | 100.0 | 2.000 |")
    assert "| c |" not in text


def test_shapes_file_and_precision_filters(tmp_path):
    """--shapes-file keeps the listed shapes, --precision one precision: each alone and both."""
    def write(name, rows):
        (tmp_path / f"{name}.json").write_text(json.dumps({"results": [
            {"kernel": K, "shape": s, "precision": p, "status": "ok", "median_ms": ms, "pct_cublas": 100.0 / ms,
             "config": {"tile": "64"}} for s, p, ms in rows]}))
    # prev / new: a tf32 2.0, a fp32 0.5, b tf32 4.0.
    write("prev-1", [("1x2x3", "tf32", 2.0), ("1x2x3", "fp32", 1.0), ("4x5x6", "tf32", 4.0)])
    write("new-1", [("1x2x3", "tf32", 1.0), ("1x2x3", "fp32", 2.0), ("4x5x6", "tf32", 1.0)])
    listed = tmp_path / "shapes.txt"
    listed.write_text("# one shape\n1x2x3\n")
    only = {"1x2x3"}
    text = "\n".join(ab_rows_summary.summarize(str(tmp_path), K, only))
    assert "2 rows, 1 + 1 rounds, listed shapes only" in text and "geomean 1.0000" in text, text  # sqrt(2 * 0.5)
    text = "\n".join(ab_rows_summary.summarize(str(tmp_path), K, precision="tf32"))
    assert "2 rows, 1 + 1 rounds, tf32 only" in text and "geomean 2.8284" in text, text        # sqrt(2 * 4)
    text = "\n".join(ab_rows_summary.summarize(str(tmp_path), K, only, "fp32"))
    assert "1 rows" in text and "geomean 0.5000" in text, text
    assert "no " in "\n".join(ab_rows_summary.summarize(str(tmp_path), K, {"9x9x9"}))
    import subprocess
    script = Path(__file__).resolve().parents[1] / "reproduce" / "ab_rows_summary.py"
    out = subprocess.run([sys.executable, str(script), str(tmp_path), K, "--shapes-file", str(listed),
                          "--precision", "tf32"], capture_output=True, text=True)
    assert out.returncode == 0 and "1 rows, 1 + 1 rounds, listed shapes only, tf32 only" in out.stdout, out


def test_gzipped_runs_read_as_plain_ones(tmp_path):
    import gzip
    _write(tmp_path, "prev-1", [("a", 2.0, 50.0, "64", "ok")])
    _write(tmp_path, "new-1", [("a", 1.0, 100.0, "128", "ok")])
    for name in ("prev-1", "new-1"):
        p = tmp_path / f"{name}.json"
        with gzip.open(str(p) + ".gz", "wt") as f:
            f.write(p.read_text())
        p.unlink()
    text = "\n".join(ab_rows_summary.summarize(str(tmp_path), K))
    assert "1 rows, 1 + 1 rounds" in text and "geomean 2.0000" in text, text


def test_measure_ab_fails_when_a_run_fails(tmp_path):
    """A run that exits non-zero (here a bad --shape, refused before any GPU work) leaves nothing to
    compare: measure-ab says so and exits 1, not 0 (an A/B of nothing once read as PASS)."""
    import subprocess
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.run(["bash", str(root / "reproduce" / "measure-ab"), str(root), str(tmp_path / "ab"),
                           "--shape", "0x5x5", "--kernel", "cublas"], capture_output=True, text=True,
                          env={**__import__("os").environ, "ROUNDS": "1", "PYTHON": sys.executable}, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "a run exited non-zero" in proc.stderr
    assert (tmp_path / "ab" / "runs.txt").read_text().count("exit 2") == 2


def test_measure_ab_alternates_which_tree_runs_first(tmp_path):
    """ABBA: round 1 runs prev then new, round 2 new then prev, so a drift that favours a round's
    second run lands on both trees (a fixed order read 1.038x on rows a change left alone)."""
    import subprocess
    root = Path(__file__).resolve().parents[1]
    subprocess.run(["bash", str(root / "reproduce" / "measure-ab"), str(root), str(tmp_path / "ab"),
                    "--shape", "0x5x5", "--kernel", "cublas"], capture_output=True, text=True,
                   env={**__import__("os").environ, "ROUNDS": "3", "PYTHON": sys.executable}, timeout=600)
    runs = [line.split()[0] for line in (tmp_path / "ab" / "runs.txt").read_text().splitlines()]
    assert runs == ["prev-1", "new-1", "new-2", "prev-2", "prev-3", "new-3"], runs


def test_the_bandwidth_paths_k_ranges_read_as_the_split(tmp_path):
    # stage 11's gemv / skinny_n name their K ranges k_splits, not split_k
    for name, splits in (("prev-1", 1), ("new-1", 3)):
        (tmp_path / f"{name}.json").write_text(json.dumps({"results": [
            {"kernel": "cuda.11_stream_k", "shape": "a", "precision": "fp32", "status": "ok", "median_ms": 1.0,
             "pct_cublas": 100.0, "config": {"tile": "16x8", "k_splits": splits}}]}))
    text = "\n".join(ab_rows_summary.summarize(str(tmp_path), "cuda.11_stream_k"))
    assert "| a | fp32 | 16x8 split 1 | 16x8 split 3 |" in text
