"""reproduce/b_bulk_summary.py on rows whose ratios are worked out by hand."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "reproduce"))
import b_bulk_summary  # noqa: E402


def _row(kernel, shape, ms, pct, tile="64x128x32s8.regb.bulk"):
    return {"kernel": kernel, "shape": shape, "precision": "tf32", "status": "ok", "median_ms": ms,
            "pct_cublas": pct, "config": {"tile": tile}}


def test_default_against_the_previous_rule(tmp_path):
    k = "cuda.13_wgmma_tma"
    rows = [
        # M = 17 <= TM 64, N = 45 >= 32: the previous rule took cp_async (4.0 ms); default 1.0 ms -> 4.00.
        _row(k, "17x45x1000", 1.0, 100.0), _row(f"{k}[b_unaligned=cp_async]", "17x45x1000", 4.0, 25.0),
        _row(f"{k}[b_unaligned=pad]", "17x45x1000", 2.0, 50.0), _row(f"{k}[b_unaligned=bulk]", "17x45x1000", 1.0, 100.0),
        # M = 300 > TM 64: pad (1.0 ms) against a default of 2.0 ms -> 0.50; cp_async ignored.
        _row(k, "300x45x1000", 2.0, 40.0), _row(f"{k}[b_unaligned=cp_async]", "300x45x1000", 0.5, 160.0),
        _row(f"{k}[b_unaligned=pad]", "300x45x1000", 1.0, 80.0),
        # N = 13 < 32: pad even though M <= TM; a 256-row tile.
        _row(k, "200x13x1000", 1.0, 90.0, "256x128x32s4.regb.bulk"),
        _row(f"{k}[b_unaligned=pad]", "200x13x1000", 1.0, 90.0),
        _row("cublas", "17x45x1000", 1.0, 100.0),
        {**_row(k, "9x9x9", 1.0, 1.0), "status": "FAILED"},
    ]
    p = tmp_path / "run.json"
    p.write_text(json.dumps({"results": rows}))
    text = "\n".join(b_bulk_summary.summarize(str(p)))
    assert "| 17x45x1000 | 64x128x32s8.regb.bulk | 100.0 | 100.0 | 25.0 | 50.0 | cp_async | 4.00 |" in text
    assert "| 300x45x1000 | 64x128x32s8.regb.bulk | 40.0 | - | 160.0 | 80.0 | pad | 0.50 |" in text
    assert "| 200x13x1000 | 256x128x32s4.regb.bulk | 90.0 | - | - | 90.0 | pad | 1.00 |" in text
    assert "9x9x9" not in text
    # Ratios 4.0, 0.5, 1.0: geomean 2^(1/3) (log2 4 + log2 0.5 + 0 = 1): 1.260.
    assert "tf32, 3 shapes: previous / default time geomean 1.260, min 0.50, max 4.00" in text
    # % of cuBLAS: default (100, 40, 90) -> (360000)^(1/3) = 71.1; previous (25, 80, 90) -> 180000^(1/3) = 56.5.
    assert "% of cuBLAS geomean 71.1 (default) against 56.5 (previous rule), worst 40.0 against 25.0" in text


def test_runs_as_a_script(tmp_path):
    p = tmp_path / "run.json"
    p.write_text(json.dumps({"results": []}))
    out = subprocess.run([sys.executable, str(ROOT / "reproduce" / "b_bulk_summary.py"), str(p)],
                         capture_output=True, text=True, check=True).stdout
    assert out.startswith(f"## {p}")
