"""reproduce/tf32_small_summary.py on rows written here: each % of cuBLAS worked out by hand
(tf32 against cuBLAS tf32, tf32x3 against cuBLAS fp32), the classes by their conditions, and
a row that is not ok turns the exit status to 1."""
from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "reproduce", "tf32_small_summary.py")


def _row(kernel, shape, precision, ms, status="ok", **config):
    M, N, K = map(int, shape.split("x"))
    return {"kernel": kernel, "shape": shape, "M": M, "N": N, "K": K, "precision": precision,
            "median_ms": ms, "status": status, "config": config}


def _write(path, kernel_ms, status="ok"):
    rows = []
    for shape in ("768x768x768", "64x64x65536"):
        rows += [_row("cublas", shape, "tf32", 0.010), _row("cublas", shape, "fp32", 0.030),
                 _row("triton.stream_k", shape, "tf32", kernel_ms, status, decomposition="ws", tile="128x128x32",
                      k_splits=1, grid=36),
                 _row("triton.stream_k", shape, "tf32x3", 0.024)]
    path.write_text(json.dumps({"results": rows}))


def _run(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True, text=True, timeout=120)


def test_ab_summary_by_hand(tmp_path):
    _write(tmp_path / "prev-1.json", 0.020)     # tf32: 0.010 / 0.020 = 50% of cuBLAS tf32
    _write(tmp_path / "prev-2.json", 0.025)     # 40%: the A/A spread is (50 - 40) / 45 = 22.2%
    _write(tmp_path / "new-1.json", 0.0125)     # 80%
    _write(tmp_path / "new-2.json", 0.0125)
    out = _run("ab", tmp_path)
    assert out.returncode == 0, out.stderr
    assert "| 768x768x768 | small and mid | 45.0 | 80.0 | 1.78 | 22.2% | ws 128x128x32 ranges 1 grid 36 |" in out.stdout
    assert "| 64x64x65536 | tiny outputs | 45.0 | 80.0 |" in out.stdout
    # tf32x3 against cuBLAS fp32: 0.030 / 0.024 = 125%, the same in both trees
    assert "| 768x768x768 | small and mid | 125.0 | 125.0 | 1.00 | 0.0% |" in out.stdout
    assert "- tiny outputs (1 shapes): prev geomean 45.0%, worst 45.0%; new geomean 80.0%, worst 80.0%" in out.stdout


def test_not_ok_rows_and_bad_input(tmp_path):
    _write(tmp_path / "prev-1.json", 0.020)
    _write(tmp_path / "new-1.json", 0.020, status="FAILED")
    out = _run("ab", tmp_path)
    assert out.returncode == 1 and "rows not ok" in out.stdout
    assert _run("ab", tmp_path / "none").returncode == 2
    assert _run("variants", tmp_path / "new-1.json", "fp16").returncode == 2


def test_ab_summary_reads_gzipped_runs(tmp_path):
    """An A/B committed as prev-N.json.gz / new-N.json.gz (results/ keeps runs gzipped) reads as
    the plain files do: 50% -> 80% of cuBLAS tf32, worked out by hand as above."""
    import gzip
    for name, ms in (("prev-1", 0.020), ("new-1", 0.0125)):
        _write(tmp_path / f"{name}.json", ms)
        raw = (tmp_path / f"{name}.json").read_bytes()
        (tmp_path / f"{name}.json").unlink()
        (tmp_path / f"{name}.json.gz").write_bytes(gzip.compress(raw))
    out = _run("ab", tmp_path)
    assert out.returncode == 0, out.stderr
    assert "- tiny outputs (1 shapes): prev geomean 50.0%, worst 50.0%; new geomean 80.0%, worst 80.0%" in out.stdout
