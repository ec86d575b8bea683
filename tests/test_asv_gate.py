"""compare.ci.gate on asv 0.6 result files.

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
import re
import statistics
import subprocess
import sys

import pytest

from compare.ci import gate, robust

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
    assert f"SLOW (> x{robust.DEFAULT_FACTOR:g})" in out and "1.500" in out and "GATE FAILED: 1 of" in out


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
    _set(h, p, _get(h, p) * (1 + (robust.DEFAULT_FACTOR - 1) / 2))
    rd = _write_results(tmp_path, h)
    assert _gate(rd) == 0
    assert _gate(rd, "--factor", str(1 + (robust.DEFAULT_FACTOR - 1) / 4)) == 1


def test_faster_passes(tmp_path, capsys):
    h = _head_copy()
    p = POINTS[-1]
    _set(h, p, _get(h, p) * 0.8)
    rd = _write_results(tmp_path, h)
    assert _gate(rd) == 0
    assert "FAST" in capsys.readouterr().out


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


def _with_second_benchmark(data: dict) -> dict:
    """A copy with every benchmark duplicated under another name, so that one benchmark can be
    changed while something else is still compared."""
    d = copy.deepcopy(data)
    for name in list(d["results"]):
        d["results"][name + "_twin"] = copy.deepcopy(d["results"][name])
    return d


def test_changed_version_is_not_compared(tmp_path, capsys):
    b = _with_second_benchmark(BASE)
    h = _with_second_benchmark(_head_copy())
    p = POINTS[0]
    _set(h, p, _get(h, p) * 3)
    h["results"][p[0]][I_VER] = "changed-on-purpose"
    rd = _write_results(tmp_path, h, base=b)
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
    cmd = [sys.executable, "-m", "compare.ci.gate", "--results-dir", FIXTURES,
           "--base", BASE["commit_hash"][:8], "--head", head["commit_hash"][:8]]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert p.returncode in (0, 1), p.stderr
    assert "slowdown" in p.stdout
    h = _head_copy()
    _set(h, POINTS[0], _get(h, POINTS[0]) * 1.5)
    rd = _write_results(tmp_path, h)
    p = subprocess.run([sys.executable, "-m", "compare.ci.gate", "--results-dir", rd,
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
        assert v.value is None or isinstance(v.value, float)


# ---------------------------------------------------------------------------- holes that exited 0

@pytest.mark.parametrize("bad", [math.inf, -math.inf, 0.0, -1e-4])
def test_head_without_a_valid_number_fails(tmp_path, capsys, bad):
    """+-inf, 0 or a negative time on head where base had a number: not 'faster', not 'n/a'."""
    h = _head_copy()
    _set(h, POINTS[0], bad)
    rd = _write_results(tmp_path, h)
    assert _gate(rd) == 1
    out = capsys.readouterr().out
    assert "INVALID on head" in out and "GATE FAILED: 1 of" in out


def test_changed_version_does_not_hide_an_all_failing_head(tmp_path, capsys):
    b = _with_second_benchmark(BASE)
    h = _with_second_benchmark(_head_copy())
    name = POINTS[0][0]
    h["results"][name][I_RES] = None
    h["results"][name][I_VER] = "changed-on-purpose"
    rd = _write_results(tmp_path, h, base=b)
    assert _gate(rd) == 1
    assert "ALL FAILING on head" in capsys.readouterr().out


def _all(data: dict, value) -> dict:
    d = copy.deepcopy(data)
    for name, row in d["results"].items():
        if isinstance(row[I_RES], list):
            row[I_RES] = [value] * len(row[I_RES])
    return d


def test_nothing_compared_fails(tmp_path, capsys):
    """A box without a GPU records n/a everywhere, on both commits: that proves nothing."""
    b = _all(BASE, float("nan"))
    h = _all(_head_copy(), float("nan"))
    rd = _write_results(tmp_path, h, base=b)
    assert _gate(rd) == 1
    out = capsys.readouterr().out
    assert "nothing was compared" in out and "gate passed" not in out


def test_every_benchmark_redefined_is_nothing_compared(tmp_path, capsys):
    h = _head_copy()
    for row in h["results"].values():
        row[I_VER] = "changed-on-purpose"
    rd = _write_results(tmp_path, h)
    assert _gate(rd) == 1
    assert "nothing was compared" in capsys.readouterr().out


def _corrupt_variants():
    no_params = _head_copy()
    for row in no_params["results"].values():
        del row[I_PAR:]
    text_value = _head_copy()
    _set(text_value, POINTS[0], "fast")
    short_grid = _head_copy()
    name = POINTS[0][0]
    short_grid["results"][name][I_RES] = short_grid["results"][name][I_RES][:-1]
    return {"no params": json.dumps(no_params), "a text value": json.dumps(text_value),
            "grid/result mismatch": json.dumps(short_grid), "not JSON": "{not json"}


@pytest.mark.parametrize("what", list(_corrupt_variants()))
def test_unreadable_head_file_is_a_usage_error(tmp_path, capsys, what):
    rd = _write_results(tmp_path, _head_copy())
    path = os.path.join(rd, MACHINE, f"{HEAD_SHA[:8]}-{BASE['env_name']}.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write(_corrupt_variants()[what])
    assert _gate(rd) == 2
    err = capsys.readouterr().err
    assert path in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_unrelated_corrupt_file_is_skipped_with_a_warning(tmp_path, capsys):
    rd = _write_results(tmp_path, _head_copy())
    junk = os.path.join(rd, MACHINE, f"{'abcdef01' * 5}"[:8] + "-junk.json")
    with open(junk, "w", encoding="utf-8") as f:
        f.write("{truncated")
    assert _gate(rd) == 0
    cap = capsys.readouterr()
    assert "warning: skipped" in cap.err and junk in cap.err
    assert "gate passed" in cap.out


# ---------------------------------------------------------------------------- noise and % of cuBLAS

I_CI_A, I_CI_B = COLS.index("stats_ci_99_a"), COLS.index("stats_ci_99_b")


def _with_ci(data: dict, rel: float) -> dict:
    """Give every numbered point a 99% interval of +-rel around its value (as asv records it)."""
    d = copy.deepcopy(data)
    for name, row in d["results"].items():
        res = row[I_RES]
        if not isinstance(res, list):
            continue
        while len(row) <= I_CI_B:
            row.append(None)
        row[I_CI_A] = [v * (1 - rel) if isinstance(v, float) else None for v in res]
        row[I_CI_B] = [v * (1 + rel) if isinstance(v, float) else None for v in res]
    return d


def _slowed(data: dict, factor: float) -> dict:
    h = copy.deepcopy(data)
    h["commit_hash"] = HEAD_SHA
    _set(h, POINTS[0], _get(h, POINTS[0]) * factor)
    return h


def test_slow_needs_separated_intervals(tmp_path, capsys):
    b = _with_ci(BASE, 0.01)
    rd = _write_results(tmp_path, _with_ci(_slowed(BASE, 1.5), 0.01), base=b)
    assert _gate(rd) == 1
    assert f"SLOW (> x{robust.DEFAULT_FACTOR:g})" in capsys.readouterr().out


def test_overlapping_intervals_are_ambiguous_not_slow(tmp_path, capsys):
    b = _with_ci(BASE, 0.08)
    rd = _write_results(tmp_path, _with_ci(_slowed(BASE, 1.15), 0.08), base=b)
    assert _gate(rd, "--factor", "1.10") == 1
    out = capsys.readouterr().out
    assert "AMBIGUOUS" in out and "intervals overlap" in out and "SLOW (" not in out


def test_noise_above_threshold_is_ambiguous(tmp_path, capsys):
    b = _with_ci(BASE, 0.2)
    rd = _write_results(tmp_path, _with_ci(_slowed(BASE, 1.0), 0.2), base=b)
    assert _gate(rd) == 1
    assert "AMBIGUOUS (noise" in capsys.readouterr().out


def test_within_noise_is_same_and_passes(tmp_path, capsys):
    b = _with_ci(BASE, 0.01)
    rd = _write_results(tmp_path, _with_ci(_slowed(BASE, 1.005), 0.01), base=b)
    assert _gate(rd) == 0
    out = capsys.readouterr().out
    assert "SAME" in out and "gate passed: 5 of 5 points compared" in out


def _as_pct(data: dict) -> dict:
    """The same grid as a % of cuBLAS benchmark (higher is better)."""
    d = copy.deepcopy(data)
    d["results"] = {n.replace("track_time", "track_pct_cublas"): [
        [100 * 1e-4 / v if isinstance(v, float) else v for v in row[I_RES]], *row[1:]]
        for n, row in d["results"].items()}
    return d


def test_pct_cublas_is_higher_is_better(tmp_path, capsys):
    b = _as_pct(BASE)
    name = next(iter(b["results"]))
    h = copy.deepcopy(b)
    h["commit_hash"] = HEAD_SHA
    h["results"][name][I_RES][0] /= 1.5            # head reaches 2/3 of base's % of cuBLAS
    rd = _write_results(tmp_path, h, base=b)
    assert _gate(rd) == 1
    out = capsys.readouterr().out
    assert "SLOW" in out and "1.500" in out and "%" in out
    h["results"][name][I_RES][0] *= 1.5 * 1.5     # now 1.5x base's %: better
    rd = _write_results(tmp_path / "up", h, base=b)
    assert _gate(rd) == 0
    assert "FAST" in capsys.readouterr().out


def test_gbps_is_higher_is_better(tmp_path, capsys):
    """An achieved bandwidth (benchmarks/gemm.py Skinny*Gbps, ``track_gbps``): a drop is SLOW, a
    rise FAST, and the table prints GB/s, not a time or a %."""
    b = copy.deepcopy(BASE)
    b["results"] = {n.replace("track_time", "track_gbps"): [
        [4e6 / v / 1e9 if isinstance(v, float) else v for v in row[I_RES]], *row[1:]]
        for n, row in BASE["results"].items()}
    name = next(iter(b["results"]))
    h = copy.deepcopy(b)
    h["commit_hash"] = HEAD_SHA
    h["results"][name][I_RES][0] /= 1.5            # head moves 2/3 of base's bytes per second
    assert _gate(_write_results(tmp_path, h, base=b)) == 1
    out = capsys.readouterr().out
    slow = next(line for line in out.splitlines() if "SLOW" in line)
    assert "1.500" in slow and slow.count(" GB/s") == 2 and "%" not in slow, slow
    h["results"][name][I_RES][0] *= 1.5 * 1.5     # now 1.5x base's: better
    assert _gate(_write_results(tmp_path / "up", h, base=b)) == 0
    assert "FAST" in capsys.readouterr().out


def test_bench_filter_gates_on_pct_alone(tmp_path, capsys):
    """--bench pct_cublas: a slower time (slower machine) is ignored, the % of cuBLAS is gated."""
    b = copy.deepcopy(BASE)
    b["results"].update(_as_pct(BASE)["results"])
    h = copy.deepcopy(b)
    h["commit_hash"] = HEAD_SHA
    _set(h, POINTS[0], _get(h, POINTS[0]) * 2)           # the time doubled, the % held
    rd = _write_results(tmp_path, h, base=b)
    assert _gate(rd) == 1
    assert _gate(rd, "--bench", "pct_cublas") == 0
    assert "track_time" not in capsys.readouterr().out.split("GATE FAILED")[-1]
    assert _gate(rd, "--bench", "(") == 2


def _point_params(point):
    """The parameter texts of a (benchmark, index) point, as the gate's rows carry them."""
    from compare.ci.asv_results import points_of
    keys = [k for k in points_of(BASE) if k[0] == point[0]]
    return keys[point[1]][1]


def test_a_faulted_or_hung_point_is_failing_and_names_the_kernel_and_why(tmp_path, capsys):
    """benchmarks/gemm.py leaves a note for a point whose kernel faulted or hung; the gate's
    FAILING row (not LOST, not MISSING) names the kernel and the reason. Numbers stay numbers."""
    from compare.ci import failure_notes
    h = _head_copy()
    _set(h, POINTS[0], None)
    rd = _write_results(tmp_path, h)
    name, params = POINTS[0][0], _point_params(POINTS[0])
    failure_notes.add(rd, HEAD_SHA, name, params, params[0], "FAULT",
                      "illegal memory access (RuntimeError: CUDA error: an illegal memory access was encountered)")
    # a note of another commit or another point explains nothing here
    failure_notes.add(rd, "0123456789" * 4, name, params, params[0], "HUNG", "elsewhere")
    failure_notes.add(rd, HEAD_SHA, name, ["nope"], "x", "HUNG", "not this point")
    assert _gate(rd) == 1
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "FAILING on head" in line)
    assert f"FAILING on head: {params[0]} FAULT: illegal memory access" in row
    assert "LOST" not in out and "MISSING" not in out and "elsewhere" not in out and "not this point" not in out
    assert "1 failing" in out
    # the other points still compare as numbers
    assert out.count("SAME") == len(POINTS) - 1


def test_a_point_failing_without_a_note_is_still_failing(tmp_path, capsys):
    h = _head_copy()
    _set(h, POINTS[0], None)
    rd = _write_results(tmp_path, h)
    os.makedirs(os.path.join(rd, "failures"))          # the notes folder is not a machine
    assert _gate(rd) == 1
    assert "FAILING on head" in capsys.readouterr().out


# ---------------------------------------------------------------------------- sample distributions
# compare.ci.robust: the verdict from both sides' raw samples (asv run --record-samples).

import random  # noqa: E402


def _dist(center, rel_noise, n=200, seed=0):
    """GPU-like times: a normal core of rel_noise, plus a slow tail (5% of samples 2-10% slower)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        x = center * (1 + rel_noise * rng.gauss(0, 1))
        if rng.random() < 0.05:
            x *= 1 + rng.uniform(0.02, 0.10)
        out.append(x)
    return out


def test_a_3pct_shift_with_0_3pct_noise_is_slow():
    v = robust.compare_samples(_dist(1e-4, 0.003, seed=1), _dist(1.03e-4, 0.003, seed=2))
    assert v.word == "SLOW" and v.slowdown == pytest.approx(1.03, abs=0.003)
    # and the mirror image is FAST
    assert robust.compare_samples(_dist(1.03e-4, 0.003, seed=1), _dist(1e-4, 0.003, seed=2)).word == "FAST"


@pytest.mark.parametrize("seed", range(5))
def test_equal_distributions_are_same(seed):
    v = robust.compare_samples(_dist(1e-4, 0.003, seed=seed), _dist(1e-4, 0.003, seed=100 + seed))
    assert v.word == "SAME" and abs(v.slowdown - 1) < 0.005


def test_overlapping_wide_distributions_are_ambiguous():
    # 4% apart but 5% noise: past the factor, yet the sample ranges overlap
    v = robust.compare_samples(_dist(1e-4, 0.05, seed=3), _dist(1.04e-4, 0.05, seed=4))
    assert v.word == "AMBIGUOUS" and "overlap" in v.why
    # equal but so noisy (few samples) that a 2% change could hide: ambiguous, not SAME
    few = _dist(1e-4, 0.05, n=12, seed=5)
    v = robust.compare_samples(few, list(reversed(few)))
    assert v.slowdown == 1 and v.word == "AMBIGUOUS" and "noise" in v.why


def test_a_shift_inside_the_factor_is_same_even_when_the_ranges_are_apart():
    # 1% apart with 0.1% noise: a real difference, but below what the gate is asked to see
    v = robust.compare_samples(_dist(1e-4, 0.001, seed=7), _dist(1.01e-4, 0.001, seed=8))
    assert v.word == "SAME"
    assert robust.compare_samples(_dist(1e-4, 0.001, seed=7), _dist(1.01e-4, 0.001, seed=8), factor=1.005).word == "SLOW"


def test_too_few_samples_give_no_distribution_verdict():
    assert robust.compare_samples([1.0, 1.0, 1.0], _dist(1.0, 0.01)) is None
    with pytest.raises(ValueError):
        robust.compare_samples(_dist(1.0, 0.01), _dist(1.0, 0.01), factor=1.0)


def _with_samples(data: dict, point, samples) -> dict:
    """Record ``samples`` for one point (and its median as the value, as asv does)."""
    d = copy.deepcopy(data)
    name, j = point
    row = d["results"][name]
    i_s = COLS.index("samples")
    while len(row) <= i_s:
        row.append(None)
    if not isinstance(row[i_s], list):
        row[i_s] = [None] * len(row[I_RES])
    row[i_s][j] = samples
    row[I_RES][j] = statistics.median(samples)
    return d


def test_gate_uses_recorded_samples(tmp_path, capsys):
    p = POINTS[0]
    base = _with_samples(BASE, p, _dist(1e-4, 0.003, seed=1))
    head = _with_samples(_head_copy(), p, _dist(1.03e-4, 0.003, seed=2))
    rd = _write_results(tmp_path, head, base=base)
    assert _gate(rd) == 1
    out = capsys.readouterr().out
    assert "SLOW (> x1.02, head's fastest sample" in out
    # A/A: same distribution, other seed -> SAME, passes
    head = _with_samples(_head_copy(), p, _dist(1e-4, 0.003, seed=9))
    rd2 = _write_results(tmp_path / "aa", head, base=base)
    assert _gate(rd2) == 0


def test_gate_ignores_samples_that_are_not_the_values_own(tmp_path, capsys):
    # a value edited after the run (stale samples): the summary statistics decide, not the samples
    p = POINTS[0]
    base = _with_samples(BASE, p, _dist(1e-4, 0.003, seed=1))
    head = _with_samples(_head_copy(), p, _dist(1e-4, 0.003, seed=2))
    _set(head, p, 2e-4)
    rd = _write_results(tmp_path, head, base=base)
    assert _gate(rd) == 1
    assert "SLOW (> x1.02)" in capsys.readouterr().out


def test_gate_compares_pct_of_cublas_samples_higher_is_better(tmp_path, capsys):
    """% of cuBLAS points with samples: a 3% lower % (a 3% slower kernel against the same
    process's cuBLAS) is SLOW, a 3% higher one FAST."""
    pct_name = "gemm.SplitKPctCublas.track_pct_cublas"
    base, head = copy.deepcopy(BASE), _head_copy()
    for d, center, seed in ((base, 80.0, 1), (head, 80.0 / 1.03, 2)):
        d["results"][pct_name] = [None] * len(COLS)
        row = d["results"][pct_name]
        row[I_PAR] = [["'triton.split_k'"], ["'fp32'"]]
        row[I_VER] = "1"
        # from time-like samples, as the suite makes them: pct_i = pct x median / t_i
        row[COLS.index("samples")] = [[center / x for x in _dist(1.0, 0.003, seed=seed)]]
        row[I_RES] = [statistics.median(row[COLS.index("samples")][0])]
    rd = _write_results(tmp_path, head, base=base)
    assert _gate(rd, "--bench", "PctCublas") == 1
    out = capsys.readouterr().out
    assert "SLOW (> x1.02" in out and "1.030" in out
    rd2 = _write_results(tmp_path / "fast", dict(base, commit_hash=HEAD_SHA), base=dict(head, commit_hash=BASE["commit_hash"]))
    assert _gate(rd2, "--bench", "PctCublas") == 0
    assert "FAST" in capsys.readouterr().out


# .ci/gpu's confirm round: the gate names what to re-measure (--suspects), history pools the
# re-measured samples (asv_results.merge append=True), and the gate judges the pooled samples.
def _point(data: dict, point):
    """asv_results' Point for (benchmark, index) ``point`` of ``data``."""
    import itertools
    from compare.ci import asv_results
    name, j = point
    combo = list(itertools.product(*data["results"][name][I_PAR]))[j]
    return asv_results.points_of(data)[(name, tuple(asv_results._param_text(x) for x in combo))]


def test_suspects_name_only_benchmarks_with_a_slow_or_ambiguous_point(tmp_path):
    p = POINTS[0]
    base = _with_samples(BASE, p, _dist(1e-4, 0.003, seed=1))
    head = _with_samples(_head_copy(), p, _dist(1.03e-4, 0.003, seed=2))
    rd = _write_results(tmp_path, head, base=base)
    out = tmp_path / "suspects.txt"
    assert _gate(rd, "--suspects", str(out)) == 1
    regex = out.read_text().strip()
    assert out.read_text() == regex + "\n"
    # an asv --bench regex that selects it: asv matches NAME(PARAM, ...) for a parameterized one
    assert re.search(regex, p[0] + "('cublas', '512x512x512', 'fp32')") and re.search(regex, p[0])
    assert not re.search(regex, p[0] + "Twin('cublas')") and not re.search(regex, "x" + p[0])
    # a gate that passes writes an empty file
    same = _with_samples(_head_copy(), p, _dist(1e-4, 0.003, seed=9))
    rd2 = _write_results(tmp_path / "aa", same, base=base)
    assert _gate(rd2, "--suspects", str(out)) == 0 and out.read_text() == ""



def _aa_runs(tmp_path, p, head_first: float, confirms):
    """Results of a first run where head's point is ``head_first`` x base's (samples recorded,
    tight), and one results dir per confirm round with (base x, head x) of the point."""
    def pair(bx, hx, seed):
        b = _with_samples(BASE, p, _dist(1e-4 * bx, 0.002, seed=seed))
        h = _with_samples(_head_copy(), p, _dist(1e-4 * hx, 0.002, seed=seed + 50))
        return b, h
    b, h = pair(1.0, head_first, 1)
    rd = _write_results(tmp_path / "first", h, base=b)
    dirs = []
    for i, (bx, hx) in enumerate(confirms):
        cb, ch = pair(bx, hx, 10 + i)
        dirs += ["--confirm-dir", _write_results(tmp_path / f"confirm{i}", ch, base=cb)]
    return rd, dirs


def test_a_run_to_run_shift_re_measured_is_same_and_passes(tmp_path, capsys):
    """A/A on the H100: one head run 3.5% slower than its base run (tight samples: SLOW on its
    own); re-measured, head is not slower in every pairing of runs: SAME, the gate passes."""
    p = POINTS[0]
    rd, dirs = _aa_runs(tmp_path, p, 1.035, [(1.03, 1.0)])
    assert _gate(rd) == 1
    capsys.readouterr()
    assert _gate(rd, *dirs) == 0
    out = capsys.readouterr().out
    assert "SAME re-measured" in out and "not in every pairing" in out and "differ by up to 3.5%" in out


def test_a_real_slowdown_re_measured_stays_slow(tmp_path, capsys):
    p = POINTS[0]
    rd, dirs = _aa_runs(tmp_path, p, 1.035, [(1.0, 1.03), (1.005, 1.034)])
    assert _gate(rd, *dirs) == 1
    out = capsys.readouterr().out
    assert "SLOW re-measured: every pairing of 3 base x 3 head runs slower than x1.02" in out


def test_a_confirm_dir_without_the_commits_is_a_usage_error(tmp_path, capsys):
    p = POINTS[0]
    rd, _ = _aa_runs(tmp_path, p, 1.035, [])
    (tmp_path / "empty").mkdir()
    assert _gate(rd, "--confirm-dir", str(tmp_path / "empty")) == 2
    assert "--confirm-dir" in capsys.readouterr().err


def test_judge_runs():
    assert robust.judge_runs([1.0, 1.003], [1.031, 1.029]).word == "SLOW"
    assert robust.judge_runs([1.031, 1.029], [1.0, 1.003]).word == "FAST"
    v = robust.judge_runs([1.0, 1.035], [1.03, 0.99])
    assert v.word == "SAME" and abs(v.noise - (1.03 / 0.99 - 1)) < 1e-9
    with pytest.raises(ValueError):
        robust.judge_runs([], [1.0])


def test_judge_runs_needs_every_pairing_not_most():
    """Three base runs at 1.0, head runs at 1.03, 1.03 and 0.99: six of nine pairings are slower
    than x1.02, three are faster (0.99): not SLOW. Only when every head run is over 1.02 x every
    base run (1.021 / 1.0 and up) is it SLOW."""
    v = robust.judge_runs([1.0, 1.0, 1.0], [1.03, 1.03, 0.99])
    assert v.word == "SAME" and "not in every pairing" in v.why
    assert robust.judge_runs([1.0, 1.0, 1.0], [1.03, 1.03, 1.021]).word == "SLOW"


@pytest.mark.parametrize("noisy", ["head", "base"])
def test_one_noisy_side_is_enough_for_ambiguous(tmp_path, capsys, noisy):
    """The noise of a comparison is its noisier side's: base's 99% interval +-0.5% and head's
    +-20% (or the reverse) at the same value is AMBIGUOUS (noise 20.0% > 2.0%), not SAME on the
    strength of the quiet side."""
    quiet, loud = _with_ci(BASE, 0.005), _with_ci(_slowed(BASE, 1.0), 0.2)
    if noisy == "base":
        quiet, loud = _with_ci(_slowed(BASE, 1.0), 0.005), _with_ci(BASE, 0.2)
        rd = _write_results(tmp_path, quiet, base=loud)
    else:
        rd = _write_results(tmp_path, loud, base=quiet)
    assert _gate(rd) == 1
    assert "AMBIGUOUS (noise 20.0% > 2.0%)" in capsys.readouterr().out
