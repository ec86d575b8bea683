"""compare/ci/tile_fill.py: the share of a kernel's padded tile grid a shape uses, and % of cuBLAS
grouped by it (the reading behind docs/findings.md's tile-fill lesson)."""
from __future__ import annotations

import csv

import pytest

from compare.ci import tile_fill
from compare.families import decompose


def test_fill_is_the_real_share_of_the_padded_grid():
    assert decompose.tile_fill(256, 256, 128, 128) == 1.0
    assert decompose.tile_fill(129, 128, 128, 128) == pytest.approx(129 / 256)
    assert decompose.tile_fill(170, 300, 128, 256) == pytest.approx((170 * 300) / (256 * 512))
    assert tile_fill.tile_of("128x256x32s4") == (128, 256) and tile_fill.tile_of("64x128x16") == (64, 128)
    assert tile_fill.tile_of(None) is None and tile_fill.tile_of("") is None


def _csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["M", "N", "kernel", "precision", "tile", "pct_cublas"])
        w.writeheader()
        w.writerows(rows)


def test_rows_are_grouped_by_kernel_precision_and_fill(tmp_path, capsys):
    path = tmp_path / "rows.csv"
    _csv(path, [
        {"M": 256, "N": 256, "kernel": "k", "precision": "fp32", "tile": "128x128x16", "pct_cublas": 120},
        {"M": 512, "N": 128, "kernel": "k", "precision": "fp32", "tile": "128x128x16", "pct_cublas": 80},
        {"M": 129, "N": 128, "kernel": "k", "precision": "fp32", "tile": "128x128x16", "pct_cublas": 50},
        {"M": 129, "N": 128, "kernel": "cublas", "precision": "fp32", "tile": "", "pct_cublas": 100},
        {"M": 129, "N": 128, "kernel": "k", "precision": "tf32", "tile": "", "pct_cublas": 70},   # no tile: left out
    ])
    got = tile_fill.table(tile_fill.read_rows(str(path)))
    assert [(k, p, round(b, 1), n, round(g, 3), w) for k, p, b, n, g, w in got] == [
        ("k", "fp32", 0.5, 1, 50.0, 50.0), ("k", "fp32", 1.0, 2, round((120 * 80) ** 0.5, 3), 80.0)]
    assert tile_fill.main([str(path), "--precision", "fp32"]) == 0
    assert "| k | fp32 | 1.0-1.0 | 2 |" in capsys.readouterr().out
    assert tile_fill.main([str(path), "--kernel", "nothing"]) == 2      # no row: an error, not an empty table
