"""compare.gate on asv 0.6 result files.

Every case is derived from ONE result file of tests/fixtures/asv (the oldest, by its "date"):
the head file is a copy of it with a new commit hash and one change. Real result files from a
GPU run can replace the fixture (a <machine>/ folder with machine.json and two result files)
and these tests stay valid.
"""
from __future__ import annotations

import copy
import glob
import json
import math
import os
import subprocess
import sys

import pytest

from compare import gate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "asv")
HEAD_SHA = "feedface" * 5


def _fixture_files():
    machines = [d for d in sorted(os.listdir(FIXTURES)) if os.path.isfile(os.path.join(FIXTURES, d, "machine.json"))]
    assert len(machines) == 1, f"expected one <machine>/machine.json in {FIXTURES}, found {machines}"
    mdir = os.path.join(FIXTURES, machines[0])
    files = [f for f in glob.glob(os.path.join(mdir, "*.json")) if os.path.basename(f) not in gate.SKIP_FILES]
    files.sort(key=lambda f: json.load(open(f, encoding="utf-8"))["date"])
    assert len(files) >= 2, "fixture needs result files for a base and a head commit"
    return machines[0], mdir, files


MACHINE, MACHINE_DIR, FILES = _fixture_files()


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


BASE = _load(FILES[0])
COLS = BASE["result_columns"]
I_RES, I_PAR, I_VER = COLS.index("result"), COLS.index("params"), COLS.index("version")


def _numbered_points(data):
    """(benchmark, index) of every point with a finite value, in file order."""
    out = []
    for name, row in data["results"].items():
        res = row[I_RES] if I_RES < len(row) else None
        if isinstance(res, list):
            out += [(name, j) for j, v in enumerate(res) if isinstance(v, (int, float)) and math.isfinite(v)]
    return out


POINTS = _numbered_points(BASE)


def _write_results(tmp_path, head: dict, base: dict = BASE) -> str:
    rd = tmp_path / "results"
    md = rd / MACHINE
    md.mkdir(parents=True)
    with open(os.path.join(MACHINE_DIR, "machine.json"), encoding="utf-8") as f:
        (md / "machine.json").write_text(f.read())
    env = base["env_name"]
    (md / f"{base['commit_hash'][:8]}-{env}.json").write_text(json.dumps(base))
    (md / f"{head['commit_hash'][:8]}-{head['env_name']}.json").write_text(json.dumps(head))
    return str(rd)


def _head_copy() -> dict:
    h = copy.deepcopy(BASE)
    h["commit_hash"] = HEAD_SHA
    h["date"] = BASE["date"] + 1000
    return h


def _set(data, point, value):
    name, j = point
    data["results"][name][I_RES][j] = value


def _get(data, point):
    name, j = point
    return data["results"][name][I_RES][j]


def _gate(rd, *extra, base=None, head=HEAD_SHA):
    return gate.main(["--results-dir", rd, "--base", base or BASE["commit_hash"], "--head", head, *extra])


def test_fixture_has_numbers_and_grid():
    assert POINTS, "the base fixture needs at least one measured point"
    for name, row in BASE["results"].items():
        params = row[I_PAR]
        res = row[I_RES]
        if isinstance(res, list) and params:
            assert len(res) == math.prod(len(p) for p in params), name


def test_identical_passes(tmp_path, capsys):
    rd = _write_results(tmp_path, _head_copy())
    assert _gate(rd) == 0
    out = capsys.readouterr().out
    assert "benchmark" in out and "verdict" in out and "gate passed" in out


def test_one_point_1_5x_slower_fails(tmp_path, capsys):
    h = _head_copy()
    p = POINTS[len(POINTS) // 2]
    _set(h, p, _get(h, p) * 1.5)
    rd = _write_results(tmp_path, h)
    assert _gate(rd) == 1
    out = capsys.readouterr().out
    assert "SLOWER" in out and "1.500" in out and "GATE FAILED: 1 of" in out


def test_factor_flag_is_honored(tmp_path):
    h = _head_copy()
    p = POINTS[0]
    _set(h, p, _get(h, p) * 1.5)
    rd = _write_results(tmp_path, h)
    assert _gate(rd, "--factor", "1.6") == 0
    assert _gate(rd, "--factor", "1.4") == 1
    assert _gate(rd, "--factor", "0.9") == 2          # a factor that can't mean "slower"


def test_small_slowdown_within_default_factor_passes(tmp_path):
    h = _head_copy()
    p = POINTS[0]
    _set(h, p, _get(h, p) * 1.05)
    rd = _write_results(tmp_path, h)
    assert _gate(rd) == 0
    assert _gate(rd, "--factor", "1.04") == 1


def test_faster_passes(tmp_path, capsys):
    h = _head_copy()
    p = POINTS[-1]
    _set(h, p, _get(h, p) * 0.8)
    rd = _write_results(tmp_path, h)
    assert _gate(rd) == 0
    assert "faster" in capsys.readouterr().out


def test_newly_failing_point_fails(tmp_path, capsys):
    h = _head_copy()
    _set(h, POINTS[0], None)
    rd = _write_results(tmp_path, h)
    assert _gate(rd) == 1
    assert "FAILING on head" in capsys.readouterr().out


def test_whole_benchmark_failing_fails(tmp_path):
    h = _head_copy()
    name = POINTS[0][0]
    h["results"][name][I_RES] = None          # how asv stores a benchmark whose points all failed
    rd = _write_results(tmp_path, h)
    assert _gate(rd) == 1


def test_point_turned_na_fails(tmp_path, capsys):
    h = _head_copy()
    _set(h, POINTS[0], float("nan"))
    rd = _write_results(tmp_path, h)
    assert _gate(rd) == 1
    assert "LOST" in capsys.readouterr().out


def test_deleted_benchmark_is_missing(tmp_path, capsys):
    h = _head_copy()
    del h["results"][POINTS[0][0]]
    rd = _write_results(tmp_path, h)
    assert _gate(rd) == 1
    assert "MISSING on head" in capsys.readouterr().out


def test_na_on_both_sides_passes(tmp_path, capsys):
    b = copy.deepcopy(BASE)
    _set(b, POINTS[0], float("nan"))
    h = copy.deepcopy(b)
    h["commit_hash"] = HEAD_SHA
    rd = _write_results(tmp_path, h, base=b)
    assert _gate(rd) == 0
    assert "n/a" in capsys.readouterr().out


def test_new_benchmark_on_head_passes(tmp_path, capsys):
    h = _head_copy()
    name = POINTS[0][0]
    h["results"][name + "_new"] = copy.deepcopy(h["results"][name])
    rd = _write_results(tmp_path, h)
    assert _gate(rd) == 0
    assert "new" in capsys.readouterr().out


def test_changed_version_is_not_compared(tmp_path, capsys):
    h = _head_copy()
    p = POINTS[0]
    _set(h, p, _get(h, p) * 3)
    h["results"][p[0]][I_VER] = "changed-on-purpose"
    rd = _write_results(tmp_path, h)
    assert _gate(rd) == 0
    assert "not comparable" in capsys.readouterr().out


def test_short_prefixes_and_usage_errors(tmp_path):
    rd = _write_results(tmp_path, _head_copy())
    assert _gate(rd, base=BASE["commit_hash"][:4], head=HEAD_SHA[:5]) == 0
    assert _gate(rd, base="0123456789abcdef") == 2               # unknown commit
    assert _gate(rd, "--machine", "no-such-machine") == 2
    assert _gate(str(tmp_path / "nowhere")) == 2                  # no results dir
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _gate(str(empty)) == 2                                 # no results at all
    assert gate.main(["--results-dir", rd, "--base", BASE["commit_hash"]]) == 2   # --head missing


def test_real_fixture_pair_and_cli_exit_codes(tmp_path):
    """The fixture's own base and head through the command line; then a derived failure."""
    head = _load(FILES[-1])
    cmd = [sys.executable, "-m", "compare.gate", "--results-dir", FIXTURES,
           "--base", BASE["commit_hash"][:8], "--head", head["commit_hash"][:8]]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    assert "ratio" in p.stdout
    h = _head_copy()
    _set(h, POINTS[0], _get(h, POINTS[0]) * 1.5)
    rd = _write_results(tmp_path, h)
    p = subprocess.run([sys.executable, "-m", "compare.gate", "--results-dir", rd,
                        "--base", BASE["commit_hash"][:8], "--head", HEAD_SHA[:8]],
                       cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 1, p.stdout + p.stderr


def test_points_parsing_matches_grid():
    pts = gate.points_of(BASE)
    n = 0
    for name, row in BASE["results"].items():
        params = row[I_PAR] if I_PAR < len(row) else []
        n += math.prod(len(p) for p in params) if params else 1
    assert len(pts) == n
    for (name, params), v in pts.items():
        assert all("'" not in p for p in params)
        assert v is None or isinstance(v, float)
