"""reproduce/tree_variants_summary.py and reproduce/skinny_order_summary.py on runs made up here."""
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reproduce"))
import skinny_order_summary  # noqa: E402
import tree_variants_summary  # noqa: E402


def _run(path, tflops, sol, kernel="cuda.11_stream_k", gz=False):
    doc = {"matrix": {"shapes": ["64x8x4096", "128x5x999"], "rows": [
        {"kernel": "cublas", "cells": [{"tflops": 1.0, "pct_sol": 10.0}] * 2},
        {"kernel": kernel, "cells": [{"tflops": t, "pct_sol": s} for t, s in zip(tflops, sol)]}]}}
    if gz:
        with gzip.open(str(path) + ".gz", "wt") as f:
            json.dump(doc, f)
    else:
        path.write_text(json.dumps(doc))


def test_variants_against_the_first_best_round_each(tmp_path, capsys):
    # base: best of rounds (10, 20); v: (20, 10), one round gzipped. Ratios 2.0 and 0.5: geomean 1.
    _run(tmp_path / "base-1.json", [10.0, 20.0], [40.0, 50.0])
    _run(tmp_path / "base-2.json", [8.0, 20.0], [32.0, 50.0])
    _run(tmp_path / "v-1.json", [20.0, 10.0], [80.0, 25.0], gz=True)
    _run(tmp_path / "v-2.json", [20.0, 10.0], [80.0, 25.0])
    assert tree_variants_summary.main([str(tmp_path), "base v"]) == 0
    out = capsys.readouterr().out
    assert "v geomean vs base 1.000 min 0.500 max 2.000; A/A min 1.000" in out
    assert "base geomean vs base 1.000 min 1.000 max 1.000; A/A min 0.800" in out
    assert "  2.000  80.0%sol" in out


def test_variants_over_the_listed_shapes_only(tmp_path, capsys):
    # Ratios 2.0 (64x8x4096) and 0.5 (128x5x999); listing the first keeps 2.0 alone.
    _run(tmp_path / "base-1.json", [10.0, 20.0], [40.0, 50.0])
    _run(tmp_path / "v-1.json", [20.0, 10.0], [80.0, 25.0])
    (tmp_path / "only.txt").write_text("# one shape\n64x8x4096\n")
    args = [str(tmp_path), "base v", "--rounds", "1", "--shapes-file", str(tmp_path / "only.txt")]
    assert tree_variants_summary.main(args) == 0
    out = capsys.readouterr().out
    assert "v geomean vs base 2.000 min 2.000 max 2.000" in out and "128x5x999" not in out
    (tmp_path / "none.txt").write_text("8x8x8\n")
    assert tree_variants_summary.main(args[:-1] + [str(tmp_path / "none.txt")]) == 2


def test_variants_bad_input_exits_2(tmp_path):
    _run(tmp_path / "base-1.json", [10.0, 20.0], [40.0, 50.0])
    assert tree_variants_summary.main([str(tmp_path), "base missing"]) == 2
    _run(tmp_path / "w-1.json", [10.0, None], [40.0, None])
    assert tree_variants_summary.main([str(tmp_path), "base w"]) == 2
    assert tree_variants_summary.main([str(tmp_path), "base", "--kernel", "triton.stream_k"]) == 2


def test_variants_of_one_precision_where_a_run_holds_two(tmp_path, capsys):
    # Each run holds tf32 (base 10, v 20) and tf32x3 (base 10, v 5) rows of one kernel.
    for name, t32, x3 in (("base", 10.0, 10.0), ("v", 20.0, 5.0)):
        rows = [{"kernel": "cuda.13_wgmma_tma", "precision": p, "cells": [{"tflops": t, "pct_sol": 50.0}] * 2}
                for p, t in (("tf32", t32), ("tf32x3", x3))]
        (tmp_path / f"{name}-1.json").write_text(json.dumps({"matrix": {"shapes": ["64x8x4096", "128x5x999"],
                                                                       "rows": rows}}))
    args = [str(tmp_path), "base v", "--kernel", "cuda.13_wgmma_tma", "--rounds", "1"]
    assert tree_variants_summary.main(args) == 2   # two precisions and none named: not the first row's silently
    assert tree_variants_summary.main(args + ["--precision", "tf32x3"]) == 0
    assert "v geomean vs base 0.500 min 0.500 max 0.500" in capsys.readouterr().out
    assert tree_variants_summary.main(args + ["--precision", "tf32"]) == 0
    assert "v geomean vs base 2.000" in capsys.readouterr().out


def test_order_summary_reads_gzipped_runs(tmp_path, capsys):
    rows = [{"kernel": f"triton.stream_k[skinny_order={o}]", "shape": "10856x7x20648", "status": "ok",
             "median_ms": ms, "config": {"k_splits": 2}} for o, ms in (("in_order", 0.4), ("rotated", 0.2))]
    with gzip.open(tmp_path / "run.json.gz", "wt") as f:
        json.dump({"results": rows}, f)
    assert skinny_order_summary.main([str(tmp_path / "run.json.gz")]) == 0
    assert "| 10856x7x20648 | 2 | 400.0 | 200.0 | 2.00 |" in capsys.readouterr().out


def test_order_summary_takes_each_orders_best_round_and_groups_k_splits_by_n(tmp_path, capsys):
    def run(name, times):   # times: {(shape, order): ms}; K split 2 except 1000x8x256
        rows = [{"kernel": f"triton.stream_k[skinny_order={o}]", "shape": s, "status": "ok", "median_ms": ms,
                 "config": {"k_splits": 1 if s == "1000x8x256" else 2}} for (s, o), ms in times.items()]
        (tmp_path / name).write_text(json.dumps({"results": rows}))
    run("a.json", {("500x7x9000", "in_order"): 0.30, ("500x7x9000", "rotated"): 0.25,
                   ("600x7x9000", "in_order"): 0.40, ("600x7x9000", "rotated"): 0.10,
                   ("700x6x9000", "in_order"): 0.20, ("700x6x9000", "rotated"): 0.25,
                   ("1000x8x256", "in_order"): 0.10, ("1000x8x256", "rotated"): 0.10})
    run("b.json", {("500x7x9000", "in_order"): 0.20, ("500x7x9000", "rotated"): 0.40,
                   ("600x7x9000", "in_order"): 0.50, ("600x7x9000", "rotated"): 0.20,
                   ("700x6x9000", "in_order"): 0.20, ("700x6x9000", "rotated"): 0.25,
                   ("1000x8x256", "in_order"): 0.10, ("1000x8x256", "rotated"): 0.10})
    assert skinny_order_summary.main([str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 0
    out = capsys.readouterr().out
    # best rounds: 500x7: 200 / 250 = 0.80; 600x7: 400 / 100 = 4.00 -> N = 7 geomean sqrt(3.2)
    assert "| 500x7x9000 | 2 | 200.0 | 250.0 | 0.80 |" in out
    assert "| 600x7x9000 | 2 | 400.0 | 100.0 | 4.00 |" in out
    assert "| K split, N = 7 | 2 | 1.789 | 0.80 (500x7x9000) | 4.00 (600x7x9000) |" in out
    assert "| K split, N = 6 | 1 | 0.800 |" in out
    assert "| one K range | 1 | 1.000 |" in out
    assert "N = 8" not in out
