"""reproduce/regb_tile_moves.py: the rows a change of stage 13's tile rule moves, old tree against this one."""
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
    return subprocess.run([sys.executable, str(ROOT / "reproduce" / "regb_tile_moves.py"), str(prev), *args,
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
    assert proc.returncode == 2 and "regb_tile_moves:" in proc.stderr
