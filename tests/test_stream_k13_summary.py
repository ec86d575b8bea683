"""reproduce/stream_k13_summary.py on a hand-made run: the rule's moved rows and stream-K forced
everywhere, ratios worked out by hand."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reproduce"))
import stream_k13_summary as S  # noqa: E402


def _row(kernel, shape, ms, mode="dp", precision="tf32x3", status="ok"):
    return {"kernel": kernel, "shape": shape, "precision": precision, "median_ms": ms, "status": status,
            "config": {"mode": mode}}


def test_stream_k13_summary_by_hand(tmp_path):
    d, dp, hy = S.DEFAULT, S.DP, S.HYBRID
    doc = {"results": [
        # a: the default took stream-K, 2x faster than dp; hybrid forced the same plan
        _row(d, "a", 1.0, "sk"), _row(dp, "a", 2.0), _row(hy, "a", 1.0, "sk"),
        # b: the default took stream-K, slower: dp 0.8 / default 1.0
        _row(d, "b", 1.0, "hybrid"), _row(dp, "b", 0.8), _row(hy, "b", 1.0, "hybrid"),
        # c: the default stayed dp; forced hybrid 4x slower
        _row(d, "c", 1.0), _row(dp, "c", 1.0), _row(hy, "c", 4.0, "sk"),
        _row(d, "e", 1.0, "sk", precision="tf32"), _row(dp, "e", 3.0, precision="tf32", status="FAILED"),
        _row("cublas", "a", 0.5),
    ]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "s.md"
    S.main([str(path), "--out", str(out)])
    text = out.read_text()
    # Moved: a 2.0, b 0.8 -> geomean sqrt(1.6) = 1.265, one slower, worst 0.8 (b), best 2.0 (a).
    assert ("| run | tf32x3 | default's stream-K rows: dp time / default time | 2 | 1.265 | 1 | 0.800 (b) | "
            "2.000 (a) |") in text
    # Forced: a 2.0, b 0.8, c 0.25 -> (0.4)^(1/3) = 0.737, two slower, worst 0.25 (c).
    assert ("| run | tf32x3 | stream-K forced (mode=hybrid), every shape: dp time / hybrid time | 3 | 0.737 | 2 | "
            "0.250 (c) | 2.000 (a) |") in text
    assert "| tf32 |" not in text   # its only dp row failed: nothing to compare
