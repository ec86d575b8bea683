"""reproduce/rule_moves.py: the rows a change of stage 13's tile rule moves, old tree against this one."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _tree(tmp_path, patch=None):
    """A copy of this tree's cuda_kernels and compare packages, ``patch`` applied to heuristics.py."""
    prev = tmp_path / "prev"
    for pkg in ("cuda_kernels", "compare"):
        shutil.copytree(ROOT / pkg, prev / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    if patch:
        h = prev / "cuda_kernels" / "heuristics.py"
        h.write_text(patch(h.read_text()))
    return prev


def _run(prev, out, *args):
    return subprocess.run([sys.executable, str(ROOT / "reproduce" / "rule_moves.py"), str(prev), *args,
                           "-o", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_the_same_rule_moves_nothing(tmp_path):
    proc = _run(_tree(tmp_path), tmp_path / "moved.txt", "--precision", "tf32", "--distribution", "loguniform:20:5")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("0 of 20 rows moved")
    assert (tmp_path / "moved.txt").read_text() == ""


def test_an_old_rule_without_b_load_costs_moves_the_unaligned_short_m_rows(tmp_path):
    # The old tree: no cost for how a tile reads B (as before dd8db6e).
    prev = _tree(tmp_path, lambda t: t.replace("    if N % 4 == 0:\n        return 0.0, 1.0",
                                               "    if True:\n        return 0.0, 1.0"))
    proc = _run(prev, tmp_path / "moved.txt", "--precision", "tf32", "--distribution", "loguniform:150:31337")
    assert proc.returncode == 0, proc.stderr
    moved = (tmp_path / "moved.txt").read_text().split()
    # Every moved shape is one the tile's B load decides: N % 4 != 0; written as MxNxK for --shapes-file.
    assert moved and all(int(s.split("x")[1]) % 4 for s in moved), moved
    from compare.harness.shapes import load_shapes_file
    assert len(load_shapes_file(str(tmp_path / "moved.txt"))) == len(moved)


def test_bad_input_is_refused_with_exit_2(tmp_path):
    proc = _run(tmp_path, tmp_path / "moved.txt", "--sweep", "heldout")
    assert proc.returncode == 2 and "not a source tree" in proc.stderr
    proc = _run(_tree(tmp_path), tmp_path / "moved.txt", "--sweep", "no_such_set")
    assert proc.returncode == 2 and "rule_moves:" in proc.stderr


def test_skinny_split_rule_moves_the_rows_whose_k_ranges_change(tmp_path):
    # The old tree: skinny_n's one-wave K split (as before the tail model). 9045x4x5496 (283 blocks of
    # 32 rows, 1.07 waves) goes from one K range to three; 1x4096x4096 is gemv's, whose cost did not change.
    prev = _tree(tmp_path, lambda t: t.replace("SkinnyCost(blocks_per_sm=2, tail_weight=0.7, range_fill_chunks=1.0, "
                                               "max_waves=4.0)", "SkinnyCost(blocks_per_sm=2)"))
    shapes = tmp_path / "shapes.txt"
    shapes.write_text("9045x4x5496\n1x4096x4096\n131072x8x256\n")
    proc = _run(prev, tmp_path / "moved.txt", "--rule", "skinny_split", "--shapes-file", str(shapes))
    assert proc.returncode == 0, proc.stderr
    assert "9045x4x5496 fp32: [1, 5632] -> [3, 2048] (K ranges, K per range)" in proc.stdout
    assert proc.stdout.strip().endswith("1 of 3 rows moved")
    assert (tmp_path / "moved.txt").read_text() == "9045x4x5496\n"
    proc = _run(prev, tmp_path / "moved.txt", "--rule", "skinny_split")
    assert proc.returncode == 2 and "no shapes" in proc.stderr
