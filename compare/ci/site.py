"""One asv site for every machine whose results are committed (results/<gpu>/asv/<machine>/).

    python -m compare.ci.site                       # every results/*/asv/ -> .asv/site-results -> .asv/html
    python -m compare.ci.site --results results/h200/asv --results results/h100/asv -o /tmp/html

asv keeps results per machine (a folder with its machine.json) and draws each machine as its own
series in one site, so the H200's and the H100's histories sit side by side and are never mixed:
the gate (compare.ci.gate) compares two commits on one machine only. This tool merges the given
results folders into one (history.record: point by point, a recorded number is never replaced,
benchmarks.json merged by benchmark name, each parameter list as the union of all), then runs
``asv publish`` on it with a copy of asv.conf.json whose results_dir and html_dir point there.
What it adds to asv publish (docs/asv.md, "Viewing the committed history"):

  * every recorded number is drawn: one asv would drop (a commit off main's first-parent history,
    a benchmark not described at its version or parameters) is named, with why, before anything
    is published (exit 2; --skip-unshowable publishes the rest), and the graphs' numbers are
    counted against the recorded ones afterwards (exit 1 if they differ);
  * the regressions page the right way up for % of cuBLAS (higher is better);
  * ladder.html (compare.ci.ladder), a page per commit, y axes from 0, 16 default curves;
  * no network: asv's CDN scripts replaced by site_assets/vendor/.

Exit 0 published with every number drawn; 1 asv publish failed or left numbers out; 2 nothing to
publish, a number that can't be shown, asv missing, or an asv whose page this tool can't adapt.
"""
from __future__ import annotations

import argparse
import glob
import html
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from typing import Optional

from ..harness.errors import UsageError
from . import asv_results, history, ladder


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
    bpath = os.path.join(results_dir, "benchmarks.json")
    if not os.path.isfile(bpath):
        raise UsageError(f"none of {', '.join(sources)} has a benchmarks.json (asv publish needs the suite's description)")
    with open(bpath, encoding="utf-8") as f:
        described = json.load(f)
    for name, b in described.items():       # results recorded before the suite named its benchmarks
        if isinstance(b, dict) and not b.get("pretty_name"):
            b["pretty_name"] = asv_results.pretty_name(name)
    asv_results.write_json_atomic(bpath, described)
    return seen


def _branch_commits(root: str, branches: list) -> dict:
    """{sha: branch} of the first-parent history of each branch (what asv publish draws)."""
    out = {}
    for b in branches:
        p = subprocess.run(["git", "rev-list", "--first-parent", b, "--"], cwd=root, capture_output=True, text=True)
        for sha in p.stdout.split() if p.returncode == 0 else []:
            out.setdefault(sha, b)
    return out


def _in_git(root: str, sha: str) -> bool:
    return subprocess.run(["git", "cat-file", "-e", f"{sha}^{{commit}}"], cwd=root,
                          capture_output=True).returncode == 0


def recorded_numbers(results_dir: str) -> dict:
    """{machine: [(commit, benchmark, version, raw params tuple, value)]} of every number recorded
    (asv_results.is_number) under ``results_dir``; raw params are asv's repr() strings."""
    out = {}
    for m in asv_results.machines(results_dir):
        rows = out.setdefault(m, [])
        for path in asv_results.result_paths(os.path.join(results_dir, m)):
            rf = asv_results.load(path)
            cols = rf.data["result_columns"]
            for name, row in rf.data["results"].items():
                params = asv_results.column(row, cols, "params") or []
                combos = list(itertools.product(*params)) if params else [()]
                values = asv_results.per_point(asv_results.column(row, cols, "result"), len(combos), name)
                version = asv_results.column(row, cols, "version")
                for combo, v in zip(combos, values):
                    if asv_results.is_number(v if not isinstance(v, int) or isinstance(v, bool) else float(v)):
                        rows.append((rf.commit, name, version, tuple(combo), v))
    return out


def unshowable(root: str, results_dir: str, branches: list) -> list[str]:
    """One line per (machine, commit, reason) for the recorded numbers that ``asv publish`` would
    leave out without a word: a commit that is not on a configured branch's first-parent history,
    a benchmark that benchmarks.json does not describe, or describes at another version or without
    the point's parameters. Empty when every number will be drawn."""
    with open(os.path.join(results_dir, "benchmarks.json"), encoding="utf-8") as f:
        described = json.load(f)
    on_branch = _branch_commits(root, branches)
    reasons: dict = {}
    for m, rows in recorded_numbers(results_dir).items():
        for commit, name, version, combo, _v in rows:
            b = described.get(name)
            if commit not in on_branch:
                why = (f"commit not on the first-parent history of {', '.join(branches)}" if _in_git(root, commit)
                       else "commit not in this clone's git history")
            elif not isinstance(b, dict):
                why = f"{name} is not in benchmarks.json"
            elif version is not None and str(b.get("version")) != str(version):
                why = f"{name} recorded at version {version}, benchmarks.json describes version {b.get('version')}"
            elif any(c not in (b.get("params") or [])[k] for k, c in enumerate(combo)) or \
                    len(combo) != len(b.get("params") or []):
                why = f"{name}: its parameters are not all listed in benchmarks.json"
            else:
                continue
            key = (m, commit[:8], why)
            n, example = reasons.get(key, (0, combo))
            reasons[key] = (n + 1, example)
    return [f"machine {m}, commit {c}: {n} recorded number(s) can't be shown: {why}"
            + (f" (e.g. {', '.join(ex)})" if "parameters" in why else "")
            for (m, c, why), (n, ex) in sorted(reasons.items())]


def graph_numbers(html_dir: str) -> dict:
    """{machine: how many numbers the published graphs hold} (summary graphs left out: they are
    geometric means over a benchmark's points, not points)."""
    out: dict = {}
    for dirpath, _dirs, files in os.walk(os.path.join(html_dir, "graphs")):
        parts = os.path.relpath(dirpath, html_dir).split(os.sep)
        machine = next((p[len("machine-"):] for p in parts if p.startswith("machine-")), None)
        if machine is None:
            continue
        for fn in files:
            if not fn.endswith(".json") or fn == "summary.json":
                continue
            with open(os.path.join(dirpath, fn), encoding="utf-8") as f:
                series = json.load(f)
            for _rev, v in series:
                vals = v if isinstance(v, list) else [v]
                out[machine] = out.get(machine, 0) + sum(
                    1 for x in vals if isinstance(x, (int, float)) and not isinstance(x, bool)
                    and asv_results.is_number(float(x)))
    return out


MERGED_MARK = ".compare-ci-site"


def prepare_merged(path: str) -> None:
    """An empty folder for the merged results, made afresh on every run (a machine left over from
    an earlier run would be published too); one that holds anything this tool did not make is
    refused, never emptied."""
    if os.path.isdir(path) and os.listdir(path):
        if not os.path.isfile(os.path.join(path, MERGED_MARK)):
            raise UsageError(f"--merged {path} is not empty and was not made by compare.ci.site: "
                             "name a new folder")
        shutil.rmtree(path)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, MERGED_MARK), "w", encoding="utf-8") as f:
        f.write("made by python -m compare.ci.site; emptied by its next run\n")


ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site_assets")
# asv 0.6's index.html loads these from CDNs (the address as it writes it) -> the copy under
# site_assets/vendor (its README says where each is from).
VENDOR = {
    "https://code.jquery.com/jquery-3.3.1.min.js": "jquery-3.3.1.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.min.js": "jquery.flot-0.8.3.js",
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.time.min.js": "jquery.flot.time-0.8.3.js",
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.selection.min.js": "jquery.flot.selection-0.8.3.js",
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.categories.min.js": "jquery.flot.categories-0.8.3.js",
    "https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js": "jquery.flot.orderBars-1.0.0.js",
    "https://cdnjs.cloudflare.com/ajax/libs/stupidtable/1.0.1/stupidtable.min.js": "stupidtable-1.0.1.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/blueimp-md5/2.19.0/js/md5.min.js": "md5-2.19.0.min.js",
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js": "bootstrap-3.1.1.min.js",
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css": "bootstrap-3.1.1.min.css",
}
HIGHER_RE = "\\.(" + "|".join(asv_results.HIGHER_IS_BETTER_PREFIXES) + ")"   # a JS regex on a benchmark name
# (file, asv's text, ours): each asv text must occur exactly once, else the site is refused (an asv
# whose scripts changed would otherwise be published half-patched).
JS_PATCHES = [
    # asv ticks the first 8 curves of a graph: a ladder group has 9-10 kernels, and its best
    # stages (the last ones) were left out. 16 shows every kernel of one shape.
    ("graphdisplay.js", "var max_curves = 8;", "var max_curves = 16;  /* compare.ci.site: every kernel of a group */"),
    # A linear y axis from 0 (asv: from the data's minimum, so a 1% dip fills the plot); the
    # zoom, log and reference buttons keep asv's own scaling.
    ("graphdisplay.js",
     "        min /= reference;\n        max /= reference;\n",
     "        if (!log_scale && !zoom_y_axis && !reference_scale && min > 0) {\n"
     "            min = 0;  /* compare.ci.site: the axis starts at 0 */\n        }\n"
     "        min /= reference;\n        max /= reference;\n"),
    # The list's "recent change" colours a rise red: right for a time, upside down for a % of cuBLAS.
    ("summarylist.js", "                if (change > 5) {",
     "                var worse = /" + HIGHER_RE + "/.test(row.name) ? -change : change;"
     "  /* compare.ci.site: % of cuBLAS is higher-is-better */\n                if (worse > 5) {"),
    ("summarylist.js", "                else if (change < -5) {", "                else if (worse < -5) {"),
]


def _asv_publish_direction_aware(conf_path: str) -> int:
    """``asv publish`` with its regression detection the right way up for higher-is-better
    benchmarks (asv 0.6 has no notion of it: a benchmark's rise is its regression). A % of cuBLAS
    series is handed to asv's own detector as 1/value (a drop of % is a rise of 1/%, with the same
    relative size), and the values it reports are turned back. Runs in its own process."""
    from asv.main import main as asv_main
    from asv.plugins.regressions import Regressions

    original = Regressions._process_regression.__func__

    def process(cls, regressions, revision_to_hash, repo, all_params, graph_data, graph):
        j, entry_name, steps, threshold = graph_data
        if not asv_results.higher_is_better(entry_name.split("(", 1)[0]):
            return original(cls, regressions, revision_to_hash, repo, all_params, graph_data, graph)
        if any(not (v > 0) for _l, _r, v, _m, _e in steps):
            return None                             # no reciprocal: nothing is judged
        flipped = [(left, right, 1.0 / v, 1.0 / v, err / (v * v)) for left, right, v, _m, err in steps]
        n = len(regressions)
        original(cls, regressions, revision_to_hash, repo, all_params, (j, entry_name, flipped, threshold), graph)
        for reg in regressions[n:]:
            reg[4], reg[5] = 1.0 / reg[4], 1.0 / reg[5]
            reg[6] = [(a, b, 1.0 / v1, 1.0 / v2) for a, b, v1, v2 in reg[6]]
        return None

    Regressions._process_regression = classmethod(process)
    sys.argv = ["asv", "publish", "--config", conf_path]
    try:
        asv_main()
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def offline(html_dir: str) -> None:
    """Point index.html at the vendored copies of its scripts and apply JS_PATCHES. Raises
    UsageError naming what asv loads from the network that no copy stands for."""
    vendor = os.path.join(html_dir, "vendor")
    os.makedirs(vendor, exist_ok=True)
    for fn in sorted(os.listdir(os.path.join(ASSETS, "vendor"))):
        if fn.endswith((".js", ".css")):
            shutil.copy(os.path.join(ASSETS, "vendor", fn), os.path.join(vendor, fn))
    index = os.path.join(html_dir, "index.html")
    with open(index, encoding="utf-8") as f:
        text = f.read()
    for url, local in VENDOR.items():
        esc = re.escape(url)
        text = re.sub(r'<script[^>]*\ssrc="' + esc + r'"[^>]*>\s*</script>',
                      f'<script src="vendor/{local}"></script>', text)
        text = re.sub(r'<link[^>]*\shref="' + esc + r'"[^>]*>', f'<link rel="stylesheet" href="vendor/{local}">', text)
    remote = re.findall(r'<(?:script|link)[^>]*\s(?:src|href)="(https?://[^"]+)"', text)
    if remote:
        raise UsageError(f"asv's index.html loads {remote[0]} from the network and compare/ci/site_assets/vendor "
                         "has no copy of it (another asv version?)")
    nav = '<li id="nav-li-summarylist">'
    if nav not in text:
        raise UsageError("asv's index.html has no navigation bar where the ladder page's link goes")
    text = text.replace(nav, '<li><a href="ladder.html"><b>Ladder over time</b></a></li>\n\t' + nav, 1)
    asv_results.write_text_atomically(index, text)
    for fn, old, new in JS_PATCHES:
        path = os.path.join(html_dir, fn)
        with open(path, encoding="utf-8") as f:
            js = f.read()
        if js.count(old) != 1:
            raise UsageError(f"{fn} of this asv version has no {old.strip()!r} to patch (asv 0.6.x expected)")
        asv_results.write_text_atomically(path, js.replace(old, new))


def commit_pages(root: str, html_dir: str, shas: list) -> None:
    """commits/<sha>/index.html for each commit the site shows (asv.conf.json's show_commit_url is
    "commits/"): the commit's message and changed files, so a point's link leads somewhere offline."""
    for sha in shas:
        p = subprocess.run(["git", "show", "--stat", "--format=fuller", "--no-color", sha], cwd=root,
                           capture_output=True, text=True)
        body = p.stdout if p.returncode == 0 else f"{sha}: not in this clone's git history"
        page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{sha[:8]}</title></head><body>"
                f"<p><a href='../../index.html'>asv site</a> &middot; <a href='../../ladder.html'>ladder over time</a></p>"
                f"<pre>{html.escape(body)}</pre></body></html>\n")
        os.makedirs(os.path.join(html_dir, "commits", sha), exist_ok=True)
        asv_results.write_text_atomically(os.path.join(html_dir, "commits", sha, "index.html"), page)


def publish(root: str, results_dir: str, html_dir: str) -> int:
    """``asv publish`` of ``results_dir`` into ``html_dir`` with this checkout's asv.conf.json (its
    regressions the right way up for % of cuBLAS), then made to work offline, with the ladder
    page and a page per commit."""
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
        rc = subprocess.call([sys.executable, "-m", "compare.ci.site", "--asv-publish", conf_path], cwd=root)
    if rc != 0:
        return rc
    offline(html_dir)
    with open(os.path.join(html_dir, "index.json"), encoding="utf-8") as f:
        index = json.load(f)
    commit_pages(root, html_dir, sorted(index["revision_to_hash"].values()))
    ladder.write(root, results_dir, html_dir, index, conf.get("branches") or ["main"])
    return 0


def main(argv: Optional[list[str]] = None) -> int:
    try:
        root = history.repo_root()
    except UsageError as e:
        print(f"error: {e}: run from the project's git checkout", file=sys.stderr)
        return 2
    ap = argparse.ArgumentParser(prog="python -m compare.ci.site", description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", action="append", metavar="DIR",
                    help="an asv results folder with <machine>/ subfolders; repeatable (default: every results/*/asv)")
    ap.add_argument("--merged", default=os.path.join(root, ".asv", "site-results"),
                    help="where the merged results go (default .asv/site-results)")
    ap.add_argument("-o", "--html", default=os.path.join(root, ".asv", "html"), help="the site (default .asv/html)")
    ap.add_argument("--skip-unshowable", action="store_true",
                    help="publish even when some recorded numbers can't be shown (each is still named, as a "
                         "warning); default: exit 2 naming them, before publishing")
    ap.add_argument("--asv-publish", metavar="CONF", help=argparse.SUPPRESS)   # the child process of publish()
    args = ap.parse_args(argv)
    if args.asv_publish:
        return _asv_publish_direction_aware(args.asv_publish)
    try:
        sources = args.results or default_sources(root)
        if not sources:
            raise UsageError(f"no results/*/asv folders under {root}")
        prepare_merged(args.merged)
        seen = merge_sources(sources, args.merged)
        for m, srcs in seen.items():
            print(f"machine {m}: {', '.join(srcs)}")
        branches = history.load_conf(root).get("branches") or ["main"]
        hidden = unshowable(root, args.merged, branches)
        for line in hidden:
            print(f"{'warning' if args.skip_unshowable else 'error'}: {line}", file=sys.stderr)
        if hidden and not args.skip_unshowable:
            raise UsageError(f"{len(hidden)} group(s) of recorded numbers can't be shown (above); "
                             "--skip-unshowable publishes the rest")
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        rc = publish(root, args.merged, args.html)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if rc != 0:
        return 1
    want = {m: len(rows) for m, rows in recorded_numbers(args.merged).items()}
    drawn = graph_numbers(args.html)
    for m in sorted(want):
        print(f"machine {m}: {drawn.get(m, 0)} of {want[m]} recorded numbers on the site's graphs")
    if not hidden and any(drawn.get(m, 0) != n for m, n in want.items()):
        print("error: asv publish left recorded numbers out for a reason this check does not know",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
