"""reproduce/variant_rows_summary.py on two files whose ratios are worked out by hand."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reproduce"))
import variant_rows_summary  # noqa: E402

BASE, VAR = "triton.stream_k", "triton.stream_k[grid=132]"
SA, SB = "10x10x1000", "20x20x2000"


def _write(path, rows):
    path.write_text(json.dumps({"results": [
        {"kernel": k, "shape": s, "precision": p, "status": st, "median_ms": ms,
         "config": {"tile": "64x64x32", "tiles": tiles, "iters_per_tile": iters, "sms": 132}}
        for k, s, p, ms, st, tiles, iters in rows]}))


def test_best_over_files_ratios_and_k_tiles(tmp_path, capsys):
    # SA (fp32): base best 2.0 (2.0, 3.0), variant best 1.0 (1.0, 1.5): 2.000.
    # SB (fp32): base 1.0, variant best 4.0 (4.0, 5.0): 0.250. Geomean sqrt(2 x 0.25) = 0.707.
    # A FAILED variant row and a tf32 row are not counted; SA's K-tiles at one an SM: 2 x 3168 / 132 = 48.0.
    _write(tmp_path / "r1.json", [(BASE, SA, "fp32", 2.0, "ok", 2, 3168), (VAR, SA, "fp32", 1.5, "ok", 2, 3168),
                                  (BASE, SB, "fp32", 1.0, "ok", 1, 1320), (VAR, SB, "fp32", 5.0, "ok", 1, 1320),
                                  (BASE, "30x30x3000", "fp32", 1.0, "ok", 1, 132), (VAR, "30x30x3000", "fp32", 0.5, "FAILED", 1, 132),
                                  (BASE, SA, "tf32", 1.0, "ok", 1, 132), (VAR, SA, "tf32", 0.5, "ok", 1, 132)])
    _write(tmp_path / "r2.json", [(BASE, SA, "fp32", 3.0, "ok", 2, 3168), (VAR, SA, "fp32", 1.0, "ok", 2, 3168),
                                  (BASE, SB, "fp32", 1.5, "ok", 1, 1320), (VAR, SB, "fp32", 4.0, "ok", 1, 1320)])
    files = [str(tmp_path / "r1.json"), str(tmp_path / "r2.json")]
    assert variant_rows_summary.main(files + ["--variant", VAR, "--precision", "fp32"]) == 0
    text = capsys.readouterr().out
    assert "2 rows, 2 files" in text and "geomean 0.707, min 0.250, max 2.000" in text
    assert "1 rows > 3% slower, 1 > 3% faster" in text
    assert f"| {SA} | fp32 | 64x64x32 | 2 | 48.0 | 2.000 |" in text and f"| {SB} | fp32 | 64x64x32 | 1 | 10.0 | 0.250 |" in text
    # Rows sorted by tiles, then K-tiles: SB (1 tile) before SA (2).
    assert text.index(f"| {SB} |") < text.index(f"| {SA} |")
    # A shapes file keeps only its shapes.
    (tmp_path / "only.txt").write_text(f"# one\n{SA}\n")
    assert variant_rows_summary.main(files + ["--variant", VAR, "--precision", "fp32", "--shapes-file",
                                              str(tmp_path / "only.txt")]) == 0
    assert "1 rows, 2 files, listed shapes only" in capsys.readouterr().out


def test_bad_input_exits_2(tmp_path, capsys):
    _write(tmp_path / "r1.json", [(BASE, SA, "fp32", 2.0, "ok", 1, 132)])
    assert variant_rows_summary.main([str(tmp_path / "r1.json"), "--variant", VAR]) == 2
    assert "no shape has timed rows of both" in capsys.readouterr().err
    assert variant_rows_summary.main([str(tmp_path / "missing.json"), "--variant", VAR]) == 2
