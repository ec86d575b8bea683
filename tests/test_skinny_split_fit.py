"""reproduce/skinny_split_fit.py on a forced-split run made up here."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reproduce"))
import skinny_split_fit  # noqa: E402


def test_scores_the_measured_split_at_each_pick(tmp_path, capsys):
    # 4515x8x5496 in the 16-row blocks the run's config names (283 blocks): stage 11's cost picks 3 K
    # ranges (tests/test_cuda_emulated.py works it by hand), the one-wave model 1. cuBLAS 1.0 ms; 1 range 2.0 ms (50%), 3 ranges 1.0 ms (100%).
    rows = [{"kernel": "cublas", "shape": "4515x8x5496", "status": "ok", "median_ms": 1.0, "config": {}}]
    rows += [{"kernel": f"cuda.11_stream_k[k_splits={s}]", "shape": "4515x8x5496", "status": "ok", "median_ms": ms,
              "config": {"k_splits": s, "tile": "16x8"}} for s, ms in ((1, 2.0), (3, 1.0))]
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"results": rows}))
    assert skinny_split_fit.measured(str(path)) == {"4515x8x5496": {1: 50.0, 3: 100.0}}
    assert skinny_split_fit.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "one-wave model (no tail): geomean 50.0, worst 50.0" in out
    assert "heuristics.SKINNY_COST: geomean 100.0, worst 100.0" in out
    assert "best timed split per shape: geomean 100.0, worst 100.0" in out


def test_bad_input_exits_2(tmp_path):
    assert skinny_split_fit.main([str(tmp_path / "missing.json")]) == 2
    (tmp_path / "empty.json").write_text(json.dumps({"results": []}))
    assert skinny_split_fit.main([str(tmp_path / "empty.json")]) == 2


def test_blocks_follow_the_measured_build():
    """The K split is scored with the blocks the run measured (its config's tile), not this tree's:
    4515x8x5496 in 16-row blocks is 283 blocks (3 ranges), in this tree's 128-row blocks 36
    (6 ranges of 1024, 216 blocks: 0.82 of 264 slots)."""
    from cuda_kernels import heuristics
    every = set(range(1, 30))
    assert skinny_split_fit.pick("4515x8x5496", heuristics.SKINNY_COST, every, rows=16) == 3
    assert skinny_split_fit.pick("4515x8x5496", heuristics.SKINNY_COST, every) == 6
