"""One asv site for every machine whose results are committed (results/<gpu>/asv/<machine>/).

    python -m compare.ci.site                       # every results/*/asv/ -> .asv/site-results -> .asv/html
    python -m compare.ci.site --results results/h200/asv --results results/h100/asv -o /tmp/html

asv keeps results per machine (a folder with its machine.json) and draws each machine as its own
series in one site, so the H200's and the H100's histories sit side by side and are never mixed:
the gate (compare.ci.gate) compares two commits on one machine only. This tool merges the given
results folders into one (history.record: point by point, a recorded number is never replaced,
benchmarks.json merged by benchmark name), then runs ``asv publish`` on it with a copy of
asv.conf.json whose results_dir and html_dir point there. Exit 2 when there is nothing to publish
or asv is missing; asv's own exit status otherwise.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
from typing import Optional

from ..harness.errors import UsageError
from . import asv_results, history


def default_sources(root: str) -> list[str]:
    return sorted(d for d in glob.glob(os.path.join(root, "results", "*", "asv")) if os.path.isdir(d))


def merge_sources(sources: list[str], results_dir: str) -> dict[str, list[str]]:
    """Every machine of every source folder into ``results_dir``; returns {machine: [sources]}."""
    seen: dict[str, list[str]] = {}
    for src in sources:
        machines = asv_results.machines(src)          # UsageError for a folder that does not exist
        if not machines:
            raise UsageError(f"{src}: no asv results (no <machine>/machine.json under it)")
        for m in machines:
            history.record(src, results_dir, m)
            seen.setdefault(m, []).append(src)
    if not os.path.isfile(os.path.join(results_dir, "benchmarks.json")):
        raise UsageError(f"none of {', '.join(sources)} has a benchmarks.json (asv publish needs the suite's description)")
    return seen


def publish(root: str, results_dir: str, html_dir: str) -> int:
    """``asv publish`` of ``results_dir`` into ``html_dir`` with this checkout's asv.conf.json."""
    try:
        import asv  # noqa: F401
    except ImportError:
        raise UsageError("asv is not installed: pip install -e \".[asv]\"") from None
    with open(os.path.join(root, "asv.conf.json")) as f:
        conf = json.load(f)
    conf.update(repo=root, results_dir=os.path.abspath(results_dir), html_dir=os.path.abspath(html_dir))
    with tempfile.TemporaryDirectory() as tmp:
        conf_path = os.path.join(tmp, "asv.conf.json")
        with open(conf_path, "w") as f:
            json.dump(conf, f)
        return subprocess.call([sys.executable, "-m", "asv", "publish", "--config", conf_path], cwd=root)


def main(argv: Optional[list[str]] = None) -> int:
    root = history.repo_root()
    ap = argparse.ArgumentParser(prog="python -m compare.ci.site", description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", action="append", metavar="DIR",
                    help="an asv results folder with <machine>/ subfolders; repeatable (default: every results/*/asv)")
    ap.add_argument("--merged", default=os.path.join(root, ".asv", "site-results"),
                    help="where the merged results go (default .asv/site-results)")
    ap.add_argument("-o", "--html", default=os.path.join(root, ".asv", "html"), help="the site (default .asv/html)")
    args = ap.parse_args(argv)
    try:
        sources = args.results or default_sources(root)
        if not sources:
            raise UsageError(f"no results/*/asv folders under {root}")
        os.makedirs(args.merged, exist_ok=True)
        seen = merge_sources(sources, args.merged)
        for m, srcs in seen.items():
            print(f"machine {m}: {', '.join(srcs)}")
        return publish(root, args.merged, args.html)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
