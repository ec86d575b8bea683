"""compare.history end to end on CPU: a throwaway git repo made from this checkout, with a first
commit older than the asv suite; asv runs each later commit from its own worktree into the
repo's .asv/results (every point n/a without a GPU), and the gate compares the two commits."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

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


def _history(repo, env, *args):
    return subprocess.run([sys.executable, "-m", "compare.history", *args], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=900)


def test_dry_run_skips_commits_without_suite(repo):
    path, env, shas = repo
    p = _history(path, env, "--last", "3", "--dry-run")
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"skip {shas[0][:8]}" in p.stdout and "older than the asv suite" in p.stdout
    assert p.stdout.count("would run") == 2
    assert f"--set-commit-hash {shas[1]}" in p.stdout and f"--set-commit-hash {shas[2]}" in p.stdout
    assert _history(path, env, "--commits", "no-such-rev", "--dry-run").returncode == 2


def test_history_records_each_commit_and_gate_reads_them(repo):
    pytest.importorskip("asv")
    path, env, shas = repo
    for v in ("GEMM_BENCH_SET", "GEMM_BENCH_QUICK", "GEMM_BENCH_PRECISIONS"):
        env.pop(v, None)
    p = _history(path, env, "--last", "3", "--quick", "--bench", r"gemm\.Naive\.", "--machine", "cpu-test")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "older than the asv suite" in p.stdout
    files = [f for f in glob.glob(str(path / ".asv" / "results" / "cpu-test" / "*.json"))
             if not f.endswith("machine.json")]
    recorded = {json.load(open(f))["commit_hash"] for f in files}
    assert recorded == {shas[1], shas[2]}
    data = json.load(open(files[0]))
    assert list(data["results"]) == ["gemm.Naive.track_time"]
    assert not _git(path, "worktree", "list").count("gemm-history")     # worktrees removed
    # no GPU: every point is n/a on both sides, which passes the gate
    g = subprocess.run([sys.executable, "-m", "compare.gate", "--base", shas[1][:7], "--head", "HEAD"],
                       cwd=path, env=env, capture_output=True, text=True)
    assert g.returncode == 0, g.stdout + g.stderr
    # a second pass with --skip-existing runs nothing
    p = _history(path, env, "--last", "2", "--skip-existing", "--machine", "cpu-test")
    assert p.returncode == 0 and p.stdout.count("results already recorded") == 2, p.stdout
