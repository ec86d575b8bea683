"""reproduce/skinny_tile_probe.py on runs made up here."""
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reproduce"))
import skinny_tile_probe  # noqa: E402


def _row(tile, shape, ms, sol, k_group, precision="fp32"):
    return {"kernel": f"triton.stream_k[skinny_tile={tile}]", "shape": shape, "precision": precision,
            "status": "ok", "median_ms": ms, "pct_sol": sol, "config": {"k_group": k_group}}


def _write(path, rows, gz=False):
    doc = json.dumps({"results": rows + [{"kernel": "cublas", "shape": r["shape"], "precision": r["precision"],
                                          "status": "ok", "median_ms": 1.0, "pct_sol": 1.0} for r in rows]})
    if gz:
        with gzip.open(path, "wt") as f:
            f.write(doc)
    else:
        Path(path).write_text(doc)


def test_best_round_ratios_split_by_load_width(tmp_path, capsys):
    # 1000x8x4096 (16-byte loads): base best of (2.0, 1.0) = 1.0, the variant 0.5: 2.00x.
    # 1000x8x4097 (4-byte loads): base 1.0, variant best of (4.0, 2.0) = 2.0: 0.50x.
    _write(tmp_path / "r-1.json", [_row("32x64/4", "1000x8x4096", 2.0, 40.0, 4), _row("16x64/4", "1000x8x4096", 0.5, 80.0, 4),
                                   _row("32x64/4", "1000x8x4097", 1.0, 50.0, 1), _row("16x64/4", "1000x8x4097", 4.0, 12.5, 1)])
    _write(tmp_path / "r-2.json.gz", [_row("32x64/4", "1000x8x4096", 1.0, 80.0, 4),
                                      _row("16x64/4", "1000x8x4097", 2.0, 25.0, 1)], gz=True)
    files = [str(tmp_path / "r-1.json"), str(tmp_path / "r-2.json.gz")]
    assert skinny_tile_probe.main(["[skinny_tile=32x64/4]"] + files) == 0
    out = capsys.readouterr().out
    assert "| 1000x8x4096 | 16-byte | 80.0% SOL, 2.00x | 80.0% SOL, 1.00x |" in out
    assert "| 1000x8x4097 | 4-byte | 25.0% SOL, 0.50x | 50.0% SOL, 1.00x |" in out
    assert "A 16-byte loads, [skinny_tile=16x64/4]: geomean 2.000x, min 2.000, max 2.000 (1 rows)" in out
    assert "A 4-byte loads, [skinny_tile=16x64/4]: geomean 0.500x" in out
    # --max-k keeps the shapes with K <= 4096 only.
    assert skinny_tile_probe.main(["[skinny_tile=32x64/4]", "--max-k", "4096"] + files) == 0
    out = capsys.readouterr().out
    assert "1000x8x4097" not in out and "1000x8x4096" in out


def test_tag_by_file_labels_each_tree(tmp_path, capsys):
    _write(tmp_path / "fold0-1.json", [_row("32x64/4", "64x3x999", 1.0, 50.0, 1)])
    _write(tmp_path / "fold1-1.json", [_row("32x64/4", "64x3x999", 0.8, 62.5, 1)])
    files = [str(tmp_path / "fold0-1.json"), str(tmp_path / "fold1-1.json")]
    assert skinny_tile_probe.main(["[skinny_tile=32x64/4]:fold0", "--tag-by-file"] + files) == 0
    assert "[skinny_tile=32x64/4]:fold1: geomean 1.250x" in capsys.readouterr().out


def test_bad_input_exits_2(tmp_path):
    _write(tmp_path / "r-1.json", [_row("32x64/4", "64x3x999", 1.0, 50.0, 1),
                                   _row("32x64/4", "64x3x999", 3.0, 50.0, 1, precision="tf32x3")])
    f = str(tmp_path / "r-1.json")
    assert skinny_tile_probe.main(["[skinny_tile=32x64/4]", str(tmp_path / "missing.json")]) == 2
    assert skinny_tile_probe.main(["[skinny_tile=8x8/4]", f, "--precision", "fp32"]) == 2
    # Two precisions of the same shape and label and none named: refused, not the faster one silently.
    assert skinny_tile_probe.main(["[skinny_tile=32x64/4]", f]) == 2
    assert skinny_tile_probe.main(["[skinny_tile=32x64/4]", f, "--precision", "tf32x3"]) == 0
