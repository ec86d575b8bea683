"""Record asv results for past commits on a box that already has the stack (no network, no asv envs).

    python -m compare.ci.history --last 3                 # the last 3 commits of main
    python -m compare.ci.history --commits BASE HEAD      # given commits (CI: base and head)

For each commit, oldest first: check it out into a temporary git worktree, and run
``asv run --python=same --set-commit-hash <sha>`` on that worktree's own ``benchmarks/`` with
the worktree first on the import path (so the commit's own compare/, cuda_kernels/ and
triton_kernels/ are measured, not this checkout's). asv writes into a temporary results dir;
the new result file is then merged, point by point, into this checkout's results dir
(``.asv/results`` from asv.conf.json), never replacing what is recorded there:

  * a recorded number is never replaced by a failure, an n/a or an invalid value (a re-run on a
    box without a GPU, or a flaky run, can't erase a commit's numbers and so open the gate);
  * where both runs have a number, the recorded one stays unless --overwrite;
  * a point with no number recorded takes the new run's number; a benchmark not recorded yet is
    added; one whose version changed is replaced only with --overwrite.
Each kept or taken point is printed. A file is rewritten only when something changed, through
a temp file + os.replace, so re-running is idempotent. ``asv publish`` then shows real history.
Commits older than the asv suite (no benchmarks/) are skipped with a message.

asv itself must be importable (installed, or on PYTHONPATH, e.g. from the .whl folder: see
docs/asv.md). The benchmark processes get this process's PYTHONPATH through ASV_PYTHONPATH.
Without a GPU it stops up front (exit 2): asv would run and record every point as n/a
(--allow-no-gpu runs it anyway, to test this tool on a CPU box).
Exit status: 0 when asv ran for every commit that has a suite (benchmarks that failed inside a
run are recorded as failed: the gate reports them), 1 when an asv run itself errored or its
results could not be merged (e.g. the recorded file is unreadable: it is left as it is), 2 usage.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from typing import Optional

from . import asv_results
from ..harness.errors import UsageError

SETS = ("quick", "default", "full")


def _git(args: list[str], cwd: str) -> str:
    p = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if p.returncode != 0:
        raise UsageError(f"git {' '.join(args)}: {p.stderr.strip() or p.stdout.strip()}")
    return p.stdout.strip()


def repo_root(cwd: Optional[str] = None) -> str:
    return _git(["rev-parse", "--show-toplevel"], cwd or os.getcwd())


def resolve(root: str, rev: str) -> str:
    try:
        return _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], root)
    except UsageError:
        raise UsageError(f"unknown commit {rev!r}") from None


def last_commits(root: str, branch: str, n: int) -> list[str]:
    """The last ``n`` first-parent commits of ``branch``, oldest first."""
    out = _git(["rev-list", "--first-parent", f"--max-count={n}", resolve(root, branch)], root)
    return list(reversed(out.split()))


def load_conf(root: str) -> dict:
    path = os.path.join(root, "asv.conf.json")
    if not os.path.isfile(path):
        raise UsageError(f"{path} not found: run from the project's checkout")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def has_suite(root: str, sha: str, benchmark_dir: str) -> bool:
    p = subprocess.run(["git", "ls-tree", "--name-only", sha, f"{benchmark_dir.rstrip('/')}/"],
                       cwd=root, capture_output=True, text=True)
    return p.returncode == 0 and any(n.endswith(".py") for n in p.stdout.split())


def suite_note(root: str, shas: list, benchmark_dir: str) -> str:
    """One line: whether the commits measure one suite (the same benchmarks/ tree, so asv's
    history joins them) or which commit changes it."""
    if not shas:
        return "suite: none of these commits has one"
    trees = [_git(["rev-parse", f"{sha}:{benchmark_dir.rstrip('/')}"], root) for sha in shas]
    if len(set(trees)) == 1:
        return f"suite: one version of {benchmark_dir}/ (tree {trees[0][:8]}) in all {len(shas)} commit(s)"
    changes = [shas[i][:8] for i in range(1, len(shas)) if trees[i] != trees[i - 1]]
    return (f"suite: {benchmark_dir}/ changes at {', '.join(changes)}: a benchmark whose version or grid "
            "changed starts a new history there")


def default_machine() -> str:
    """asv's default machine name (the one `asv machine --yes` records)."""
    return platform.node()


def has_results(results_dir: str, machine: str, sha: str) -> bool:
    files, _ = asv_results.scan(os.path.join(results_dir, machine))
    return any(f.commit == sha for f in files)


def _load_json(path: str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def _union(old: list, new: list) -> list:
    """The old values in their order, then the new ones not among them."""
    return list(old) + [v for v in new if v not in old]


def merge_benchmarks(old_b: dict, new_b: dict, overwrite: bool = False) -> tuple[dict, list[str]]:
    """Merge two asv ``benchmarks.json`` descriptions of one suite: a benchmark's parameter lists
    become the union of both (asv publish shows a recorded point only where the description lists
    its parameters, so a description taken whole from one run hides every point another run
    recorded on a grid of its own). Of the other fields the new run's win. A benchmark whose
    ``version`` or ``param_names`` differ keeps the recorded description unless ``overwrite``
    (asv shows only the points of the described version: compare.ci.site names the hidden ones).
    Returns (merged, notes)."""
    merged = json.loads(json.dumps(old_b))
    notes = []
    for name, new in new_b.items():
        old = merged.get(name)
        if not isinstance(new, dict) or not isinstance(old, dict):
            merged[name] = new                     # the file's format "version", or a new benchmark
            continue
        if (old.get("version"), old.get("param_names")) != (new.get("version"), new.get("param_names")):
            what = (f"version {old.get('version')} -> {new.get('version')}" if old.get("version") != new.get("version")
                    else "param_names changed")
            if overwrite:
                merged[name] = new
                notes.append(f"benchmarks.json: replaced {name} ({what}; --overwrite)")
            else:
                notes.append(f"benchmarks.json: kept the recorded {name} ({what}): pass --overwrite to replace it")
            continue
        params = [_union(o, n) for o, n in zip(old.get("params") or [], new.get("params") or [])]
        merged[name] = {**old, **new, "params": params}
        if params != (new.get("params") or []):
            notes.append(f"benchmarks.json: {name}: parameters of both runs kept")
    return merged, notes


def record(new_dir: str, results_dir: str, machine: str, overwrite: bool = False) -> list[str]:
    """Merge what one asv run wrote under ``new_dir`` into ``results_dir`` (see the module doc).
    Returns the notes printed. Raises UsageError when a recorded file can't be read (it is left
    untouched)."""
    notes = []
    src_m, dst_m = os.path.join(new_dir, machine), os.path.join(results_dir, machine)
    if os.path.isfile(os.path.join(src_m, "machine.json")) and not os.path.isfile(os.path.join(dst_m, "machine.json")):
        asv_results.write_json_atomic(os.path.join(dst_m, "machine.json"), _load_json(os.path.join(src_m, "machine.json")))
    # benchmarks.json describes the suite (names, params, units), which asv publish needs; asv
    # rewrites it on every run. Merged by name and, per benchmark, as the union of the parameter
    # lists, so that every recorded point stays described.
    src_b, dst_b = os.path.join(new_dir, "benchmarks.json"), os.path.join(results_dir, "benchmarks.json")
    if os.path.isfile(src_b):
        new_b = _load_json(src_b)
        try:
            old_b = _load_json(dst_b) if os.path.isfile(dst_b) else {}
        except ValueError:
            raise UsageError(f"{dst_b} is not valid JSON: left as it is; fix or remove it") from None
        merged_b, bench_notes = merge_benchmarks(old_b, new_b, overwrite=overwrite)
        notes += bench_notes
        if merged_b != old_b:
            asv_results.write_json_atomic(dst_b, merged_b)
    for src in asv_results.result_paths(src_m):
        new = asv_results.load(src)
        dst = os.path.join(dst_m, os.path.basename(src))
        if not os.path.exists(dst):
            asv_results.write_json_atomic(dst, new.data)
            notes.append(f"recorded {os.path.basename(dst)}")
            continue
        old = asv_results.load(dst)      # UsageError naming dst: nothing is overwritten
        merged, point_notes, changed = asv_results.merge(old.data, new.data, overwrite=overwrite)
        notes += point_notes
        if changed:
            asv_results.write_json_atomic(dst, merged)
            notes.append(f"updated {os.path.basename(dst)}")
        else:
            notes.append(f"{os.path.basename(dst)} unchanged")
    return notes


def ensure_machine(machine: str) -> None:
    """Record ``machine`` in asv's machine file (~/.asv-machine.json) if it is not there yet, the
    way `asv machine --yes --machine NAME` does: asv run would otherwise ask on stdin."""
    from asv.machine import MachineCollection
    path = MachineCollection.get_machine_file_path()
    try:
        with open(path, encoding="utf-8") as f:
            if machine in json.load(f):
                return
    except (OSError, ValueError):
        pass
    subprocess.run([sys.executable, "-m", "asv", "machine", "--yes", "--machine", machine],
                   check=True, stdout=subprocess.DEVNULL)


def _pythonpath(*first: str) -> str:
    parts = list(first)
    for var in ("ASV_PYTHONPATH", "PYTHONPATH"):
        parts += [p for p in os.environ.get(var, "").split(os.pathsep) if p]
    seen, out = set(), []
    for p in parts:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return os.pathsep.join(out)


def asv_command(conf_path: str, sha: str, machine: Optional[str], bench: list[str],
                show_stderr: bool) -> list[str]:
    # --record-samples: the gate compares the two commits' full sample distributions (compare.ci.robust)
    cmd = [sys.executable, "-m", "asv", "--config", conf_path, "run", "--python=same", "--record-samples",
           "--set-commit-hash", sha]
    if machine:
        cmd += ["--machine", machine]
    for b in bench:
        cmd += ["--bench", b]
    if show_stderr:
        cmd.append("--show-stderr")
    return cmd


def run_commit(root: str, conf: dict, sha: str, *, results_dir: str, machine: str,
               bench: list[str], bench_set: Optional[str], show_stderr: bool, dry_run: bool,
               overwrite: bool = False) -> int:
    """asv for one commit from its own worktree, into a temporary results dir, then merged into
    ``results_dir``; returns asv's exit status (1 if the merge failed)."""
    tmp = tempfile.mkdtemp(prefix=f"gemm-history-{sha[:8]}-")
    wt = os.path.join(tmp, "src")
    try:
        conf_path = os.path.join(tmp, "asv.conf.json")
        c = dict(conf)
        new_results = os.path.join(tmp, "results")
        c.update(repo=root, benchmark_dir=os.path.join(wt, conf.get("benchmark_dir", "benchmarks")),
                 results_dir=new_results, html_dir=os.path.join(root, conf.get("html_dir", ".asv/html")),
                 env_dir=os.path.join(tmp, "env"))
        env = dict(os.environ)
        # asv's benchmark script puts ASV_PYTHONPATH first on sys.path (and drops PYTHONPATH
        # otherwise): the worktree first, then whatever made asv and the stack importable here.
        env["ASV_PYTHONPATH"] = _pythonpath(wt)
        env["PYTHONPATH"] = env["ASV_PYTHONPATH"]
        if bench_set:
            env["GEMM_BENCH_SET"] = bench_set
        cmd = asv_command(conf_path, sha, machine, bench, show_stderr)
        if dry_run:
            print(f"  would run (ASV_PYTHONPATH={env['ASV_PYTHONPATH']}): {' '.join(cmd)}")
            return 0
        _git(["worktree", "add", "--detach", "--force", wt, sha], root)
        with open(conf_path, "w", encoding="utf-8") as f:
            json.dump(c, f, indent=2)
        sys.stdout.flush()
        rc = subprocess.run(cmd, cwd=wt, env=env).returncode
        try:
            for note in record(new_results, results_dir, machine, overwrite=overwrite):
                print(f"  {note}")
        except UsageError as exc:
            print(f"error: {sha[:8]}: results not recorded: {exc}", file=sys.stderr)
            return 1
        return rc
    finally:
        if os.path.isdir(wt):
            subprocess.run(["git", "worktree", "remove", "--force", wt], cwd=root, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
        subprocess.run(["git", "worktree", "prune"], cwd=root, capture_output=True)


def _gpu_visible() -> bool:
    from ..harness.inputs import gpu_available
    return gpu_available()


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m compare.ci.history", description=__doc__.split("\n\n")[0])
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--last", type=int, metavar="N", help="the last N first-parent commits of --branch (default 3)")
    which.add_argument("--commits", nargs="+", metavar="REV", help="these commits (shas, prefixes or refs), in this order")
    ap.add_argument("--branch", default=None, help="branch for --last (default: the first of asv.conf.json's branches)")
    ap.add_argument("--bench", "-b", action="append", default=[], metavar="REGEX", help="passed to asv run --bench (repeatable)")
    ap.add_argument("--machine", default=None, help="asv machine name (default: this host's, as `asv machine --yes` records it)")
    ap.add_argument("--set", dest="bench_set", choices=SETS, default=None,
                    help="benchmark set (GEMM_BENCH_SET); default: the environment's, else 'default'")
    ap.add_argument("--quick", action="store_true", help="same as --set quick")
    ap.add_argument("--results-dir", default=None, help="default: asv.conf.json's results_dir in this checkout")
    ap.add_argument("--skip-existing", action="store_true", help="skip commits that already have results on this machine")
    ap.add_argument("--overwrite", action="store_true",
                    help="where the recorded and the new run both have a number, keep the new one (default: "
                         "the recorded); also replaces benchmarks whose version changed. A recorded number is "
                         "never replaced by a failure or n/a, even so")
    ap.add_argument("--allow-no-gpu", action="store_true",
                    help="run asv even without a GPU (every point is recorded as n/a): for testing this tool")
    ap.add_argument("--show-stderr", action="store_true", help="passed to asv run")
    ap.add_argument("--dry-run", action="store_true", help="print what would run")
    args = ap.parse_args(argv)
    try:
        root = repo_root()
        conf = load_conf(root)
        if args.commits:
            shas = [resolve(root, r) for r in args.commits]
        else:
            n = args.last if args.last is not None else 3
            if n < 1:
                raise UsageError("--last must be >= 1")
            branch = args.branch or (conf.get("branches") or ["main"])[0]
            shas = last_commits(root, branch, n)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.dry_run:
        try:
            import asv  # noqa: F401
        except ImportError:
            print("error: asv is not importable by this python: install it (docs/asv.md: the .whl folder)",
                  file=sys.stderr)
            return 2
        if not args.allow_no_gpu and not _gpu_visible():
            print("error: no CUDA GPU is visible (torch.cuda.is_available() is False): asv would record every "
                  "point as n/a; run this on the GPU box", file=sys.stderr)
            return 2
        ensure_machine(args.machine or default_machine())
    results_dir = os.path.abspath(args.results_dir or os.path.join(root, conf.get("results_dir", ".asv/results")))
    bench_set = "quick" if args.quick else args.bench_set
    machine = args.machine or default_machine()
    bdir = conf.get("benchmark_dir", "benchmarks")
    errors, done, skipped = [], [], []
    print(suite_note(root, [sha for sha in shas if has_suite(root, sha, bdir)], bdir))
    for sha in shas:
        short = sha[:8]
        subject = _git(["log", "-1", "--format=%s", sha], root)
        if not has_suite(root, sha, bdir):
            print(f"skip {short} {subject!r}: no {bdir}/ (older than the asv suite)")
            skipped.append(sha)
            continue
        if args.skip_existing and has_results(results_dir, machine, sha):
            print(f"skip {short} {subject!r}: results already recorded for machine {machine}")
            skipped.append(sha)
            continue
        print(f"=== {short} {subject!r}", flush=True)
        rc = run_commit(root, conf, sha, results_dir=results_dir, machine=machine, bench=args.bench,
                        bench_set=bench_set, show_stderr=args.show_stderr, dry_run=args.dry_run,
                        overwrite=args.overwrite)
        if rc == 2:
            print(f"note: {short}: some benchmarks failed (recorded as failed; `python -m compare.ci.gate` reports them)")
        elif rc != 0:
            print(f"error: asv run for {short} exited {rc}", file=sys.stderr)
            errors.append(sha)
            continue
        done.append(sha)
    print(f"history: {len(done)} commit(s) {'to record' if args.dry_run else 'recorded'}, {len(skipped)} skipped, "
          f"{len(errors)} failed; "
          f"results in {results_dir} (then: python -m asv publish)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
