"""reproduce/measure-skinny's judging of rows measured before (--from-json), on runs made up here."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHAPE = "1024x8x1024"   # a member of heldout_skinny
# 4 * (M*K + K*N + M*N) bytes, beta = 0
BYTES = 4 * (1024 * 1024 + 1024 * 8 + 1024 * 8)


def _row(kernel, ms, config=None):
    return {"kernel": kernel, "shape": SHAPE, "M": 1024, "N": 8, "K": 1024, "precision": "fp32", "beta": 0.0,
            "status": "ok", "median_ms": ms, "config": config or {}}


def _run(tmp_path, *files):
    args = [a for f in files for a in ("--from-json", str(f))]
    return subprocess.run([sys.executable, str(ROOT / "reproduce" / "measure-skinny"), str(tmp_path / "out"), *args,
                           "--copy-gbs", "4000"], capture_output=True, text=True, cwd=ROOT)


def test_each_kernel_against_the_cublas_of_its_own_file(tmp_path):
    # file 1: cuBLAS 0.020 ms, stage 11 0.010 ms (200%); file 2: cuBLAS 0.040 ms, Triton 0.020 ms (200% of
    # its own run's cuBLAS, 100% of file 1's) and a stage 11 row of 0.5 ms that file 1's shadows.
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text(json.dumps({"results": [
        _row("cublas", 0.020), _row("cuda.11_stream_k[path=auto]", 0.010, {"path": "skinny_n", "k_splits": 4})]}))
    two.write_text(json.dumps({"results": [
        _row("cublas", 0.040), _row("triton.stream_k", 0.020, {"decomposition": "skinny", "k_splits": 2}),
        _row("cuda.11_stream_k[path=auto]", 0.5, {"path": "skinny_n"})]}))
    res = _run(tmp_path, one, two)
    assert res.returncode in (0, 1), res.stderr
    report = (tmp_path / "out" / "report.md").read_text()
    gbs = BYTES / 0.010e-3 / 1e9          # 426 GB/s, 10.6% of 4000
    stage11 = [l for l in report.splitlines() if l.startswith(f"| {SHAPE} | cuda.11_stream_k[path=auto]")]
    assert len(stage11) == 1 and f"| {gbs:.0f} |" in stage11[0] and "| 200.0 | 10.6 |" in stage11[0], stage11
    triton = [l for l in report.splitlines() if l.startswith(f"| {SHAPE} | triton.stream_k")]
    assert len(triton) == 1 and "| 200.0 |" in triton[0], triton
    assert f"| {SHAPE} | cublas (file 1) |" in report and f"| {SHAPE} | cublas (file 2) |" in report
    assert "triton.stream_k N <= 8: geomean 200.0% of cuBLAS" in report


def test_one_file_keeps_its_plain_cublas_rows(tmp_path):
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"results": [_row("cublas", 0.020), _row("triton.stream_k", 0.040,
                                                                        {"decomposition": "skinny"})]}))
    res = _run(tmp_path, one)
    assert res.returncode == 1, res.stderr          # 50% of cuBLAS fails the criteria
    report = (tmp_path / "out" / "report.md").read_text()
    assert f"| {SHAPE} | cublas |" in report and "| 50.0 |" in report


def test_a_missing_or_cublas_less_file_exits_2(tmp_path):
    assert _run(tmp_path, tmp_path / "missing.json").returncode == 2
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps({"results": [_row("triton.stream_k", 0.02)]}))
    res = _run(tmp_path, bare)
    assert res.returncode == 2 and "no fp32 cuBLAS rows" in res.stderr
