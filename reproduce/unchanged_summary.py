"""Judge reproduce/measure-unchanged's runs: is every (shape set, kernel, precision) group's
% of cuBLAS after the change within the A/A spread of the runs before and after it?

    python reproduce/unchanged_summary.py OUTDIR [OUTDIR ...]   (one OUTDIR per GPU)

Per group: A/A = the geomean over its rows of run 2 / run 1 of one tree (each tree, each GPU);
A/B = the geomean of after-N / before-N (each round, each GPU). A group is "within" when the mean
of its A/B ratios is no further from 1 than the largest A/A ratio is; a row that timed before and
not after is a regression whatever its numbers. Prints a markdown table; exit 1 when a group is
slower than its spread or a row stopped timing.
"""
import glob
import json
import math
import os
import sys

from compare.harness.shapes import SHAPE_SETS, shape_text

SETS = ("square", "odd", "llm", "skinny", "long_k", "heldout", "heldout_m1", "heldout_tiny_out",
        "heldout_llm_k8k", "heldout_llm_pad", "heldout_skinny")


def load(path):
    doc = json.load(open(path))
    rows = {(r["shape"], r["kernel"], r["precision"]): r for r in doc["results"] if r["kernel"] != "cublas"}
    return doc, rows


def pct(row):
    return row["pct_cublas"] if row.get("status") == "ok" and row.get("pct_cublas") else None


def log_ratio(new, old, keys):
    logs = [math.log(pct(new[k]) / pct(old[k])) for k in keys if k in new and k in old and pct(new[k]) and pct(old[k])]
    return sum(logs) / len(logs) if logs else None


def main(dirs):
    runs = []  # (dir, tree, round, rows)
    env = None
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*-*.json"))):
            tree, rnd = os.path.basename(path)[:-5].split("-")
            doc, rows = load(path)
            env = env or doc["environment"]
            runs.append((d, tree, int(rnd), rows))
    members = {s: {shape_text(x) for x in SHAPE_SETS[s]} for s in SETS}
    groups = {}
    for rows in (r[3] for r in runs):
        for (shape, kernel, prec) in rows:
            for s in SETS:
                if shape in members[s]:
                    groups.setdefault((s, kernel, prec), set()).add((shape, kernel, prec))
    print(f"GPU: {env.get('gpu')}; torch {env.get('torch')}, triton {env.get('triton')}; "
          f"{len(dirs)} GPU(s), {len(runs)} runs\n")
    print("| set | kernel | precision | rows | A/A spread | A/B (after/before) | verdict |")
    print("|---|---|---|---:|---:|---:|---|")
    bad = 0
    lost = []
    for d, tree, rnd, rows in runs:
        if tree != "after":
            continue
        before = next((r[3] for r in runs if r[0] == d and r[1] == "before" and r[2] == rnd), {})
        lost += [k for k in before if pct(before[k]) and not pct(rows.get(k, {}))]
    for key in sorted(groups):
        keys = groups[key]
        aa, ab = [], []
        for d in dirs:
            by = {(t, n): rows for dd, t, n, rows in runs if dd == d}
            for t in ("before", "after"):
                if (t, 1) in by and (t, 2) in by:
                    aa.append(log_ratio(by[(t, 2)], by[(t, 1)], keys))
            for (t, n), rows in by.items():
                if t == "after" and ("before", n) in by:
                    ab.append(log_ratio(rows, by[("before", n)], keys))
        aa = [x for x in aa if x is not None]
        ab = [x for x in ab if x is not None]
        if not ab:
            continue
        spread = max((abs(x) for x in aa), default=0.0)
        mean_ab = sum(ab) / len(ab)
        if abs(mean_ab) <= spread:
            verdict = "within"
        elif mean_ab > 0:
            verdict = "faster"
        else:
            verdict, bad = "SLOWER", bad + 1
        print(f"| {key[0]} | {key[1]} | {key[2]} | {len(keys)} | ±{100 * (math.exp(spread) - 1):.1f}% "
              f"| {100 * (math.exp(mean_ab) - 1):+.1f}% | {verdict} |")
    print(f"\n{bad} group(s) slower than their A/A spread; {len(lost)} row(s) timed before and not after"
          + (f": {sorted(set(lost))[:10]}" if lost else ""))
    # Rows reduced for the results folder carry config_sha1 (the configuration with renamed
    # spellings read as today's): the same kernel configuration ran before and after.
    same = differ = 0
    for d, tree, rnd, rows in runs:
        if tree != "after":
            continue
        before = next((r[3] for r in runs if r[0] == d and r[1] == "before" and r[2] == rnd), {})
        for k, row in rows.items():
            if "config_sha1" in row and k in before:
                same += row["config_sha1"] == before[k].get("config_sha1")
                differ += row["config_sha1"] != before[k].get("config_sha1")
    if same or differ:
        print(f"configurations: {same} row pairs ran the same configuration before and after, {differ} differ")
    return 1 if bad or lost else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python reproduce/unchanged_summary.py OUTDIR [OUTDIR ...]")
    sys.exit(main(sys.argv[1:]))
