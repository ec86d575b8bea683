"""reproduce/a_split_summary.py on a hand-made run: the per-shape ratios, each side of the rule,
the rule's pick and the faster-of-two, worked out by hand."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reproduce"))
import a_split_summary as S  # noqa: E402


def _row(kernel, M, N, K, ms, status="ok"):
    return {"kernel": kernel, "shape": f"{M}x{N}x{K}", "M": M, "N": N, "K": K, "median_ms": ms, "status": status}


def test_a_split_summary_by_hand(tmp_path, capsys):
    smem, copy = S.SMEM, S.COPY
    doc = {"results": [
        _row(smem, 10, 100, 10, 1.0), _row(copy, 10, 100, 10, 2.0),      # smem 2x faster, rule picks smem
        _row(smem, 10, 200, 10, 2.0), _row(copy, 10, 200, 10, 1.0),      # smem 2x slower, rule picks smem
        _row(smem, 10, 1000, 10, 1.0), _row(copy, 10, 1000, 10, 0.8),    # copy faster, rule picks copy
        _row(smem, 10, 50, 10, 1.0), _row(copy, 10, 50, 10, 9.0, status="FAILED"),   # not both ok: left out
        _row("cublas", 10, 100, 10, 0.1),
    ]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "s.md"
    S.main([str(path), "--out", str(out)])
    text = out.read_text()
    # N <= 384: ratios 2.0 and 0.5 -> geomean 1.000, one slower, worst 0.5 at 10x200x10, best 2.0.
    assert "| run | N <= 384 (rule: smem) | 2 | 1.000 | 1 | 0.500 (10x200x10) | 2.000 (10x100x10) |" in text
    # N > 384: 0.8 / 1.0 = 0.8.
    assert "| run | N > 384 (rule: copy) | 1 | 0.800 | 1 | 0.800 (10x1000x10) | 0.800 (10x1000x10) |" in text
    # Rule: 2.0, 0.5, 1.0 (copy kept) -> 1.000; faster of two: 2.0, 1.0, 1.0 -> 2^(1/3) = 1.260.
    assert "| 3 | 1.000 (1.260) |" in text
    assert text == capsys.readouterr().out
