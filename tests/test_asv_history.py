"""compare.ci.history end to end on CPU: a throwaway git repo made from this checkout, with a first
commit older than the asv suite; asv runs each later commit from its own worktree into the
repo's .asv/results (every point n/a without a GPU: the gate must FAIL on that), numbers put in
by hand survive a re-run; and the merge rules of compare.ci.asv_results on the real H200 fixture.
Also .ci/gpu on this machine (no GPU): it must fail up front, saying so."""
from __future__ import annotations

import copy
import glob
import json
import math
import os
import shutil
import subprocess
import sys

import pytest

from compare.ci import asv_results, history
from compare.harness.errors import UsageError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(cwd, *args, env=None):
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A copy of this checkout's files as three commits: no suite, suite, one more."""
    tmp = tmp_path_factory.mktemp("history")
    repo = tmp / "repo"
    repo.mkdir()
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    for f in files:
        if f.startswith((".asv/", "tests/fixtures/")) or "__pycache__" in f or not os.path.isfile(os.path.join(ROOT, f)):
            continue
        dst = repo / f
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(ROOT, f), dst)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", HOME=str(tmp))
    suite = tmp / "benchmarks"
    shutil.move(str(repo / "benchmarks"), suite)
    _git(repo, "init", "-q", "-b", "main", env=env)
    _git(repo, "add", "-A", env=env)
    _git(repo, "commit", "-qm", "before the suite", env=env)
    shutil.move(str(suite), repo / "benchmarks")
    _git(repo, "add", "-A", env=env)
    _git(repo, "commit", "-qm", "the suite", env=env)
    (repo / "NOTE.txt").write_text("one more commit\n")
    _git(repo, "add", "-A", env=env)
    _git(repo, "commit", "-qm", "one more", env=env)
    shas = _git(repo, "rev-list", "--reverse", "HEAD").split()
    return repo, env, shas


# These tests check the tool's bookkeeping, which a CPU box can run (asv records n/a everywhere).
NO_GPU = ("--allow-no-gpu",)


def _history(repo, env, *args):
    return subprocess.run([sys.executable, "-m", "compare.ci.history", *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=900)


def test_dry_run_skips_commits_without_suite(repo):
    path, env, shas = repo
    p = _history(path, env, "--last", "3", "--dry-run")
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"skip {shas[0][:8]}" in p.stdout and "older than the asv suite" in p.stdout
    assert p.stdout.count("would run") == 2
    assert "suite: one version of benchmarks/ (tree " in p.stdout and "in all 2 commit(s)" in p.stdout
    assert f"--set-commit-hash {shas[1]}" in p.stdout and f"--set-commit-hash {shas[2]}" in p.stdout
    assert _history(path, env, "--commits", "no-such-rev", "--dry-run").returncode == 2


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="checks the no-GPU path")
def test_history_without_a_gpu_stops_up_front_in_one_line(repo):
    """Without a GPU asv would exit 0 with every point n/a ("3 recorded, 0 failed"): refuse first."""
    pytest.importorskip("asv")
    path, env, shas = repo
    p = _history(path, env, "--last", "2", "--quick", "--machine", "cpu-test-nogpu")
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.count("\n") == 1 and "no CUDA GPU" in p.stderr and "n/a" in p.stderr, p.stderr
    assert "===" not in p.stdout and not (path / ".asv" / "results" / "cpu-test-nogpu").exists()


def test_history_records_each_commit_and_gate_reads_them(repo):
    pytest.importorskip("asv")
    path, env, shas = repo
    for v in ("GEMM_BENCH_SET", "GEMM_BENCH_QUICK", "GEMM_BENCH_PRECISIONS"):
        env.pop(v, None)
    p = _history(path, env, *NO_GPU, "--last", "3", "--quick", "--bench", r"gemm\.Naive\.", "--machine", "cpu-test")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "older than the asv suite" in p.stdout
    files = [f for f in glob.glob(str(path / ".asv" / "results" / "cpu-test" / "*.json"))
             if not f.endswith("machine.json")]
    recorded = {json.load(open(f))["commit_hash"] for f in files}
    assert recorded == {shas[1], shas[2]}
    data = json.load(open(files[0]))
    assert list(data["results"]) == ["gemm.Naive.track_time"]
    assert not _git(path, "worktree", "list").count("gemm-history")     # worktrees removed
    # no GPU: every point is n/a on both sides: nothing was compared, which must not pass
    g = subprocess.run([sys.executable, "-m", "compare.ci.gate", "--base", shas[1][:7], "--head", "HEAD"],
                       cwd=path, env=env, capture_output=True, text=True)
    assert g.returncode == 1, g.stdout + g.stderr
    assert "nothing was compared" in g.stdout and "gate passed" not in g.stdout
    c = subprocess.run([sys.executable, "-m", "compare.ci.asv_results", "count", "--commit", shas[2]],
                       cwd=path, env=env, capture_output=True, text=True)
    assert c.returncode == 1 and "hold no number" in c.stderr, c.stdout + c.stderr
    # a second pass with --skip-existing runs nothing
    p = _history(path, env, *NO_GPU, "--last", "2", "--skip-existing", "--machine", "cpu-test")
    assert p.returncode == 0 and p.stdout.count("results already recorded") == 2, p.stdout

    # Numbers recorded for both commits (as a GPU box would have), head 2x slower: the gate fails.
    by_commit = {json.load(open(f))["commit_hash"]: f for f in files}
    for sha, t in ((shas[1], 1e-4), (shas[2], 2e-4)):
        data = json.load(open(by_commit[sha]))
        row = data["results"]["gemm.Naive.track_time"]
        row[0] = [t] * len(row[0])
        with open(by_commit[sha], "w") as f:
            json.dump(data, f)
    before = {sha: open(by_commit[sha], "rb").read() for sha in shas[1:]}
    gate = [sys.executable, "-m", "compare.ci.gate", "--base", shas[1], "--head", shas[2]]
    g = subprocess.run(gate, cwd=path, env=env, capture_output=True, text=True)
    assert g.returncode == 1 and "SLOW" in g.stdout, g.stdout + g.stderr
    # Re-running on this box (n/a everywhere) keeps every recorded number: the files are not
    # rewritten at all, and the gate still fails.
    p = _history(path, env, *NO_GPU, "--commits", shas[1], shas[2], "--quick", "--bench", r"gemm\.Naive\.",
                 "--machine", "cpu-test")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "kept gemm.Naive.track_time" in p.stdout and "new run n/a" in p.stdout
    assert {sha: open(by_commit[sha], "rb").read() for sha in shas[1:]} == before
    g = subprocess.run(gate, cwd=path, env=env, capture_output=True, text=True)
    assert g.returncode == 1 and "SLOW" in g.stdout, g.stdout + g.stderr

    # The confirm round as .ci/gpu runs it: the gate names the suspect benchmark, asv re-measures
    # it (the regex must select a parameterized benchmark: asv matches NAME(PARAMS)) into a
    # results dir of its own, head first, and the gate judges over every run.
    sus = path / "suspects.txt"
    g = subprocess.run(gate + ["--suspects", str(sus)], cwd=path, env=env, capture_output=True, text=True)
    assert g.returncode == 1 and sus.read_text().split() == [r"^gemm\.Naive\.track_time(\(|$)"], sus.read_text()
    confirm = path.parent / "confirm1"
    benches = [a for r in sus.read_text().split() for a in ("--bench", r)]
    p = _history(path, env, *NO_GPU, "--commits", shas[2], shas[1], "--results-dir", str(confirm), "--quick",
                 "--machine", "cpu-test", *benches)
    assert p.returncode == 0, p.stdout + p.stderr
    cfiles = {json.load(open(f))["commit_hash"]: f for f in glob.glob(str(confirm / "cpu-test" / "*.json"))
              if not f.endswith("machine.json")}
    assert set(cfiles) == {shas[1], shas[2]}, p.stdout          # asv selected and ran the suspect

    def confirm_run(head_time):
        for sha, t in ((shas[1], 1e-4), (shas[2], head_time)):
            data = json.load(open(cfiles[sha]))
            row = data["results"]["gemm.Naive.track_time"]
            row[0] = [t] * len(row[0])
            with open(cfiles[sha], "w") as f:
                json.dump(data, f)
        return subprocess.run(gate + ["--confirm-dir", str(confirm)], cwd=path, env=env, capture_output=True,
                              text=True)
    g = confirm_run(1e-4)            # re-measured, head is as fast as base: the first shift was one run's
    assert g.returncode == 0 and "SAME re-measured" in g.stdout, g.stdout + g.stderr
    g = confirm_run(2e-4)            # slower again: confirmed
    assert g.returncode == 1 and "SLOW re-measured: every pairing of 2 base x 2 head runs" in g.stdout, g.stdout


# ---------------------------------------------------------------------------- merge rules

FIXTURE_DIR = os.path.join(ROOT, "tests", "fixtures", "asv", "h200")
FIXTURE = sorted((json.load(open(f)) for f in glob.glob(os.path.join(FIXTURE_DIR, "*.json"))
                  if not f.endswith("machine.json")), key=lambda d: d["date"])[0]
NAME = next(iter(FIXTURE["results"]))


def _values(data):
    return data["results"][NAME][0]


def _with_values(data, values):
    d = copy.deepcopy(data)
    d["results"][NAME][0] = values
    return d


def test_merge_never_replaces_a_number_with_na_or_failure():
    old = FIXTURE
    n = len(_values(old))
    for bad in ([math.nan] * n, None, [None] * n, [math.inf] * n, [0.0] * n):
        merged, notes, changed = asv_results.merge(old, _with_values(old, bad))
        assert _values(merged) == _values(old) and not changed
        assert len([x for x in notes if x.startswith("kept")]) == n


def test_merge_takes_numbers_where_none_were_recorded_and_keeps_old_numbers():
    n = len(_values(FIXTURE))
    old = _with_values(FIXTURE, [math.nan] + [None] + _values(FIXTURE)[2:])
    new = _with_values(FIXTURE, [1.0e-4, 2.0e-4] + [v * 2 for v in _values(FIXTURE)[2:]])
    merged, notes, changed = asv_results.merge(old, new)
    assert changed
    assert _values(merged) == [1.0e-4, 2.0e-4] + _values(FIXTURE)[2:]      # the rest: recorded kept
    assert sum(x.startswith("took") for x in notes) == 2
    assert sum("pass --overwrite" in x for x in notes) == n - 2
    merged, _, _ = asv_results.merge(old, new, overwrite=True)
    assert _values(merged) == _values(new)
    # idempotent: merging the same run again changes nothing
    again, _, changed = asv_results.merge(merged, new, overwrite=True)
    assert again == merged and not changed


def test_a_point_taken_into_the_history_carries_its_statistics_and_samples():
    """The point a re-run fills in brings its 99% interval, quartiles and raw samples along, and
    the points the record kept keep theirs: the gate (which reads them through points_of) judges
    a taken number on its own spread, never on another run's or on none."""
    cols = FIXTURE["result_columns"]
    n = len(_values(FIXTURE))

    def with_stats(data, result, stats, samples):
        d = copy.deepcopy(data)
        row = d["results"][NAME]
        row += [None] * (len(cols) - len(row))
        row[cols.index("result")] = result
        for c, vals in stats.items():
            row[cols.index(c)] = vals
        row[cols.index("samples")] = samples
        return d

    old_samples = [[1.0e-4, 1.1e-4, 1.2e-4] for _ in range(n)]
    old = with_stats(FIXTURE, [math.nan] + [1.1e-4] * (n - 1),
                     {"stats_ci_99_a": [None] + [1.0e-4] * (n - 1), "stats_ci_99_b": [None] + [1.2e-4] * (n - 1),
                      "stats_q_25": [None] + [1.05e-4] * (n - 1), "stats_q_75": [None] + [1.15e-4] * (n - 1)},
                     [None] + old_samples[1:])
    new = with_stats(FIXTURE, [2.0e-4] + [9.0e-4] * (n - 1),
                     {"stats_ci_99_a": [1.9e-4] + [8.0e-4] * (n - 1), "stats_ci_99_b": [2.1e-4] + [9.5e-4] * (n - 1),
                      "stats_q_25": [1.95e-4] + [8.5e-4] * (n - 1), "stats_q_75": [2.05e-4] + [9.2e-4] * (n - 1)},
                     [[1.9e-4, 2.0e-4, 2.1e-4]] + [[9.0e-4] * 3] * (n - 1))
    merged, _, changed = asv_results.merge(old, new)
    assert changed
    row = merged["results"][NAME]
    got = {c: row[cols.index(c)] for c in ("result", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75", "samples")}
    assert [v[0] for v in got.values()] == [2.0e-4, 1.9e-4, 2.1e-4, 1.95e-4, 2.05e-4, [1.9e-4, 2.0e-4, 2.1e-4]]
    assert [v[1] for v in got.values()] == [1.1e-4, 1.0e-4, 1.2e-4, 1.05e-4, 1.15e-4, [1.0e-4, 1.1e-4, 1.2e-4]]
    kernel = FIXTURE["results"][NAME][1][0][0].strip("'")
    pt = next(p for (b, params), p in asv_results.points_of(merged).items() if b == NAME and params[0] == kernel)
    assert (pt.value, pt.ci, pt.quartiles, pt.samples) == (2.0e-4, (1.9e-4, 2.1e-4), (1.95e-4, 2.05e-4),
                                                           (1.9e-4, 2.0e-4, 2.1e-4))


def test_merge_keeps_a_benchmark_whose_version_changed_unless_overwrite():
    new = copy.deepcopy(FIXTURE)
    new["results"][NAME][2] = "2"
    new["results"][NAME][0] = [v * 3 for v in _values(FIXTURE)]
    merged, notes, changed = asv_results.merge(FIXTURE, new)
    assert merged == FIXTURE and not changed and "version 1 -> 2" in notes[0]
    merged, _, changed = asv_results.merge(FIXTURE, new, overwrite=True)
    assert changed and merged["results"][NAME] == new["results"][NAME]


def _machine_dir(root, data):
    d = root / "h200"
    d.mkdir(parents=True)
    (d / "machine.json").write_text(json.dumps({"machine": "h200", "version": 1}))
    path = d / f"{data['commit_hash'][:8]}-{data['env_name']}.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_record_merges_into_results_dir_and_leaves_an_unreadable_record_alone(tmp_path):
    recorded = _machine_dir(tmp_path / "results", FIXTURE)
    _machine_dir(tmp_path / "new", _with_values(FIXTURE, [math.nan] * len(_values(FIXTURE))))
    (tmp_path / "new" / "benchmarks.json").write_text(json.dumps({NAME: {"unit": "seconds"}, "version": 2}))
    before = open(recorded, "rb").read()
    notes = history.record(str(tmp_path / "new"), str(tmp_path / "results"), "h200")
    assert open(recorded, "rb").read() == before
    assert any(x.startswith("kept") for x in notes) and any(x.endswith("unchanged") for x in notes)
    assert json.load(open(tmp_path / "results" / "benchmarks.json"))[NAME] == {"unit": "seconds"}
    with open(recorded, "w") as f:
        f.write("{broken")
    with pytest.raises(UsageError, match="can't read"):
        history.record(str(tmp_path / "new"), str(tmp_path / "results"), "h200")
    assert open(recorded).read() == "{broken"
    assert not [f for f in os.listdir(tmp_path / "results" / "h200") if f.startswith(".tmp")]


# ---------------------------------------------------------------------------- .ci/gpu without a GPU

def _ci_gpu(tmp_path, path_dirs, python):
    env = {k: v for k, v in os.environ.items() if k not in ("BASE", "HEAD", "PYTHON", "GEMM_BENCH_SET")}
    env["PATH"] = os.pathsep.join(path_dirs)
    env["PYTHON"] = python
    return subprocess.run(["bash", os.path.join(ROOT, ".ci", "gpu"), "--install", "none", "--quick"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def _bin_dir(tmp_path, with_nvidia_smi):
    """A PATH holding what .ci/gpu needs (bash, git, coreutils) and maybe a fake nvidia-smi."""
    d = tmp_path / ("bin-smi" if with_nvidia_smi else "bin")
    d.mkdir()
    for tool in ("bash", "git", "dirname", "cat", "grep", "sed", "env", "mktemp", "rm", "head", "tr"):
        where = shutil.which(tool)
        if where:
            os.symlink(where, d / tool)
    if with_nvidia_smi:
        smi = d / "nvidia-smi"
        smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-fake)'\n")
        smi.chmod(0o755)
    return str(d)


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="checks the no-GPU path")
def test_ci_gpu_fails_up_front_without_a_gpu(tmp_path):
    # A python without torch (like this machine's system python3) and no nvidia-smi.
    p = _ci_gpu(tmp_path, [_bin_dir(tmp_path, False)], shutil.which("python3") or sys.executable)
    assert p.returncode != 0
    assert "no GPU" in p.stderr, p.stdout + p.stderr
    assert "GPU CI passed" not in p.stdout and "=== GPU tests" not in p.stdout
    # nvidia-smi lists a GPU but torch (CPU build here) can't use it: also a failure, said so.
    p = _ci_gpu(tmp_path, [_bin_dir(tmp_path, True)], sys.executable)
    assert p.returncode != 0
    assert "torch.cuda.is_available() is False" in p.stderr, p.stdout + p.stderr


@pytest.mark.parametrize("value", ["x", "-1", "1.5", ""])
def test_ci_gpu_refuses_a_bad_confirm_count_before_anything(value):
    p = subprocess.run(["bash", os.path.join(ROOT, ".ci", "gpu"), "--confirm", value], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--confirm" in p.stderr and "=== GPU" not in p.stdout, p.stdout + p.stderr

