"""reproduce/plan_diff.py: the rows of the named sets whose triton.stream_k plan differs between
two trees. A tree against itself moves none; a copy with one rule switched off moves exactly the
rows that rule decides (written out here), and names the key that changed."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(tree):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run([sys.executable, os.path.join(ROOT, "reproduce", "plan_diff.py"), str(tree)],
                          capture_output=True, text=True, timeout=600, env=env)


def test_plan_diff_finds_exactly_the_rows_a_rule_moves(tmp_path):
    for d in ("compare", "triton_kernels", "cuda_kernels"):
        shutil.copytree(os.path.join(ROOT, d), tmp_path / d, ignore=shutil.ignore_patterns("__pycache__"))
    same = _run(tmp_path)
    assert same.returncode == 0, same.stderr[-2000:]
    assert same.stdout.splitlines()[-1].startswith("0 of ")
    # Switch off the swapped product for tiny outputs in the copy: its tf32 rows come back as
    # "load" there, so each reads "swap" here -> in the diff, "load -> swap"; its tf32x3 rows
    # (x3_tiny_swap, at most 64 x 64) go back to fp32's plan there -> "ffma -> in_loop".
    path = tmp_path / "triton_kernels" / "stream_k_heuristic.py"
    text = path.read_text()
    assert "TINY_SWAP_MAX_N = 64" in text
    path.write_text(text.replace("TINY_SWAP_MAX_N = 64", "TINY_SWAP_MAX_N = 0"))
    moved = _run(tmp_path)
    assert moved.returncode == 0, moved.stderr[-2000:]
    lines = moved.stdout.splitlines()
    rows = {line.split(" ")[0] for line in lines[:-1]}
    want = {f"{s}|tf32" for s in ("long_k|64x64x1048576", "asv_skinny|48x64x65536", "heldout_tiny_out|32x32x524288",
                                  "heldout_tiny_out|16x48x655360", "heldout_tiny_out|48x48x262144",
                                  "heldout_tiny_out|40x24x540000")}
    # and the small sets' tiny outputs of at most 64 columns (50x80x200000 has 80)
    want |= {"tune_small|64x64x131072|tf32", "tune_small|60x60x100000|tf32", "tune_small|128x32x200000|tf32",
             "heldout_small|64x64x65536|tf32", "heldout_small|64x32x400000|tf32"}
    x3 = {f"{s}|tf32x3" for s in ("long_k|64x64x1048576", "asv_skinny|48x64x65536", "heldout_tiny_out|32x32x524288",
                                  "heldout_tiny_out|16x48x655360", "heldout_tiny_out|48x48x262144",
                                  "heldout_tiny_out|40x24x540000", "heldout_small|64x64x65536",
                                  "heldout_small|64x32x400000", "tune_small|64x64x131072", "tune_small|60x60x100000")}
    want |= x3
    assert rows == want, sorted(rows ^ want)
    for line in lines[:-1]:
        assert ("tf32x3_split: ffma -> in_loop" if line.split(" ")[0] in x3 else "b_transpose: load -> swap") in line, line
    assert lines[-1].startswith(f"{len(want)} of ")
    bad = _run(tmp_path / "nowhere")
    assert bad.returncode == 2
