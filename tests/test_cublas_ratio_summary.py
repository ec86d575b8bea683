"""reproduce/cublas_ratio_summary.py on hand-made runs: each kernel's % of its own run's cuBLAS
(tf32 against cuBLAS tf32, fp32 and tf32x3 against cuBLAS fp32) and stage 13's path rule's pick
between its tile and ffma variants, worked out by hand."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reproduce"))
import cublas_ratio_summary as S  # noqa: E402

K13 = "cuda.13_wgmma_tma"


def _row(kernel, M, N, K, precision, ms, status="ok"):
    return {"kernel": kernel, "shape": f"{M}x{N}x{K}", "M": M, "N": N, "K": K, "precision": precision,
            "median_ms": ms, "status": status}


def _write(tmp_path, name, rows):
    path = tmp_path / name
    path.write_text(json.dumps({"results": rows}))
    return str(path)


def test_ratios_and_the_path_rule_by_hand(tmp_path, capsys):
    a = _write(tmp_path, "a.json", [
        # 1000x32x1000: the rule picks ffma (tf32x3, N <= 64, M >= 65); cuBLAS fp32 2.0 ms.
        _row("cublas", 1000, 32, 1000, "fp32", 2.0), _row("cublas", 1000, 32, 1000, "tf32", 1.0),
        _row(f"{K13}[path=tile]", 1000, 32, 1000, "tf32x3", 4.0), _row(f"{K13}[path=ffma]", 1000, 32, 1000, "tf32x3", 1.0),
        _row(f"{K13}[path=tile]", 1000, 32, 1000, "tf32", 0.5),          # tf32: against cuBLAS tf32, tile kept
        # 64x32x1000: M = 64, the rule keeps the tile; cuBLAS fp32 1.0 ms.
        _row("cublas", 64, 32, 1000, "fp32", 1.0),
        _row(f"{K13}[path=tile]", 64, 32, 1000, "tf32x3", 2.0), _row(f"{K13}[path=ffma]", 64, 32, 1000, "tf32x3", 0.5),
        _row(f"{K13}[path=ffma]", 64, 40, 1000, "tf32x3", 0.5, status="FAILED"),   # never timed: left out
    ])
    b = _write(tmp_path, "b.json", [   # another run: its own cuBLAS
        _row("cublas", 1000, 32, 1000, "fp32", 8.0), _row("cuda.11_stream_k", 1000, 32, 1000, "fp32", 4.0),
    ])
    t = S.ratios([a, b], rule=K13)
    assert t[(f"{K13}[path=tile]", "tf32x3")] == {"1000x32x1000": 0.5, "64x32x1000": 0.5}
    assert t[(f"{K13}[path=ffma]", "tf32x3")] == {"1000x32x1000": 2.0, "64x32x1000": 2.0}
    assert t[(f"{K13}[path=tile]", "tf32")] == {"1000x32x1000": 2.0}
    assert t[(f"{K13} by its path rule", "tf32x3")] == {"1000x32x1000": 2.0, "64x32x1000": 0.5}
    assert t[(f"{K13} by its path rule", "tf32")] == {"1000x32x1000": 2.0}   # tf32 keeps the tensor cores
    assert t[("cuda.11_stream_k", "fp32")] == {"1000x32x1000": 2.0}   # 8.0 / 4.0, b's cuBLAS
    assert S.main([a, b, "--rule", K13]) == 0
    out = capsys.readouterr().out
    # The rule's rows: 2.0 and 0.5 -> geomean 100.0%, worst 50.0% at 64x32x1000, one under 100%.
    assert (f"- {K13} by its path rule tf32x3: 2 shapes, geomean 100.0% of cuBLAS, worst 50.0% (64x32x1000), "
            "1 under 100%") in out
    # Columns: stage 11 fp32, the rule in tf32 (tile kept), in tf32x3, ffma tf32x3, tile tf32, tile tf32x3.
    assert "| 64x32x1000 | - | - | 50.0 | 200.0 | - | 50.0 |" in out
    assert "| 1000x32x1000 | 200.0 | 200.0 | 200.0 | 200.0 | 200.0 | 50.0 |" in out


def test_bad_input_exits_2(tmp_path, capsys):
    missing = _write(tmp_path, "m.json", [_row(f"{K13}[path=tile]", 1000, 32, 1000, "tf32x3", 4.0),
                                          _row("cublas", 1000, 32, 1000, "fp32", 2.0)])
    assert S.main([missing, "--rule", K13]) == 2      # the rule picks ffma: no [path=ffma] row
    assert "no cuda.13_wgmma_tma[path=ffma] row" in capsys.readouterr().err
    no_base = _write(tmp_path, "n.json", [_row("x", 1, 2, 3, "tf32", 1.0)])
    assert S.main([no_base]) == 2 and "no cuBLAS tf32 row for 1x2x3" in capsys.readouterr().err
    assert S.main([str(tmp_path / "absent.json")]) == 2
