"""reproduce/skinny_short_summary.py (the table reproduce/measure-skinny-short prints for the lead):
figures worked out by hand from fake rows, and the exit status that makes the GPU batch self-checking."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "reproduce", "skinny_short_summary.py")


def _row(kernel, ms, status="ok", shape=(4096, 8, 4096)):
    M, N, K = shape
    return {"kernel": kernel, "shape": f"{M}x{N}x{K}", "M": M, "N": N, "K": K, "precision": "fp32",
            "beta": 0.0, "status": status, "reason": "" if status == "ok" else "wrong", "median_ms": ms}


def _run(tmp_path, rows, *args):
    p = tmp_path / "ab.json"
    p.write_text(json.dumps({"results": rows}))
    return subprocess.run([sys.executable, SCRIPT, str(p), *args], capture_output=True, text=True)


def test_table_figures_by_hand(tmp_path):
    # cuBLAS 0.1 ms, chunked 0.125 ms (80.0%), resident 0.08 ms (125.0%): resident 1.5625 -> 1.56x faster.
    # Bytes: 4 * (4096*4096 + 4096*8 + 4096*8) = 67371008; over 0.125 ms = 539.0 GB/s = 18.0% of a 3000 GB/s
    # copy, over 0.08 ms = 842.1 GB/s = 28.1% (M*K = 16.8M >= 16M: no "(small)" mark).
    rows = [_row("cublas", 0.1), _row("cuda.11_stream_k[skinny_b=chunked]", 0.125),
            _row("cuda.11_stream_k[skinny_b=resident]", 0.08)]
    p = _run(tmp_path, rows, "--copy-gbs", "3000")
    assert p.returncode == 0, p.stdout + p.stderr
    line = next(l for l in p.stdout.splitlines() if l.startswith("| 4096x8x4096"))
    assert [c.strip() for c in line.strip("|").split("|")] == \
        ["4096x8x4096", "100.0", "125.0", "80.0", "80.0", "125.0", "1.56x", "18.0", "28.1"]
    assert "PASS" in p.stdout


def test_a_failed_or_missing_build_fails_the_run(tmp_path):
    rows = [_row("cublas", 0.1), _row("cuda.11_stream_k[skinny_b=chunked]", 0.125),
            _row("cuda.11_stream_k[skinny_b=resident]", None, status="FAILED")]
    p = _run(tmp_path, rows)
    assert p.returncode == 1 and "FAIL 4096x8x4096 skinny_b=resident: FAILED: wrong" in p.stdout, p.stdout
    p = _run(tmp_path, rows[:2])
    assert p.returncode == 1 and "skinny_b=resident: missing" in p.stdout, p.stdout


def test_bad_input_exits_2(tmp_path):
    p = tmp_path / "x.json"
    p.write_text("not json")
    r = subprocess.run([sys.executable, SCRIPT, str(p)], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1
